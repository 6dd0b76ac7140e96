"""The scenario names every driver implements, in report order, with what each one checks.

The text here is the contract each driver follows (Java, Go, Node and Python alike) and is
quoted in docs/compat.md.
"""

from __future__ import annotations

SCENARIOS: dict[str, str] = {
    "produce-consume": (
        "3-partition topic; 30 keyed records (10 keys), acks=all; read back by assignment from "
        "the beginning: every record once, one partition per key, produce order kept per partition"
    ),
    "compression-gzip": "1-partition topic; 50 batched records with gzip; read back intact",
    "compression-snappy": "as compression-gzip with snappy",
    "compression-lz4": "as compression-gzip with lz4",
    "compression-zstd": "as compression-gzip with zstd",
    "headers-and-nulls": (
        "null key, null value (tombstone), empty key and value, repeated and empty header "
        "values (a null header value where the client can send one) survive the round trip"
    ),
    "large-message": (
        "topic with max.message.bytes=4194304; one 2 MiB record produced and fetched with the "
        "client's default fetch sizes (KIP-74: an oversized first batch is still returned)"
    ),
    "list-offsets": (
        "3 records with CreateTime T, T+1000, T+2000: earliest=0, latest=3, by time T+500 -> 1, "
        "by time T+1000 -> 1, by a time after the last record -> none"
    ),
    "admin-topics": (
        "create with 2 partitions and retention.ms; describe (partitions, leader); create again "
        "-> TOPIC_ALREADY_EXISTS; describe configs; alter a config; create-partitions to 4; "
        "decrease to 3 rejected (INVALID_PARTITIONS); delete and see it gone"
    ),
    "consumer-group": (
        "4 partitions; members A and B split them (2+2, disjoint); 40 records consumed once and "
        "committed; B leaves -> A owns all 4 and resumes at the commits; a new member after A "
        "closes resumes at A's commits"
    ),
    "idempotent-producer": (
        "enable.idempotence, acks=all: 100 records to one partition -> offsets 0..99 contiguous, "
        "no duplicates, in order"
    ),
    "transactions": (
        "commit 5, abort 5, commit 5 in one transactional producer: read_committed sees the 10 "
        "committed in order, read_uncommitted sees all 15"
    ),
    "consume-transform-produce": (
        "read 10 inputs in a group, write 10 outputs and the group's offsets in one committed "
        "transaction (committed offset 10, 10 outputs visible); a second transaction writes 5 "
        "more outputs (flushed) and offsets, then aborts: offset stays 10, read_committed still "
        "sees 10 outputs, the output log ends at 17 (10 + marker + 5 + marker)"
    ),
    "fencing": (
        "P1 begins a transaction and writes a record; P2 initialises the same transactional.id "
        "(aborting P1's transaction); P1's commit fails as fenced; P2 commits; read_committed "
        "sees only P2's record"
    ),
}

# Extra scenarios of the Java driver: Kafka's own command-line tools run by main class.
CLI_SCENARIOS: dict[str, str] = {
    "cli-topics": "TopicCommand --create/--describe/--alter --partitions/--list/--delete",
    "cli-console": (
        "ConsoleProducer then ConsoleConsumer --isolation-level read_committed --from-beginning"
    ),
    "cli-consumer-groups": "ConsumerGroupCommand --list/--describe/--reset-offsets",
    "cli-transactions": "TransactionsCommand list/describe on a committed transactional.id",
    "cli-perf": (
        "ProducerPerformance 20000 records, then ConsumerPerformance reads them; a transactional "
        "ProducerPerformance run (5000) read back by ConsoleConsumer --isolation-level read_committed"
    ),
    "cli-dump-log-segments": "DumpLogSegments --deep-iteration on the broker's own segment files",
}

# KIP-848 consumer groups (`group.protocol=consumer`), for the clients that speak it.
CONSUMER_PROTOCOL_SCENARIOS: dict[str, str] = {
    "consumer-protocol-group": (
        "group.protocol=consumer, 6 partitions: members A, B and C own 2+2+2 (disjoint, all 6); "
        "each round produces 30 records, read by their partition's owner and committed after "
        "every poll; round 2 after B unsubscribed (A and C own 3+3, B reads nothing), round 3 "
        "after B subscribed again (2+2+2, B reads again): all 90 records consumed exactly "
        "once, committed offsets 15 per partition (franz-go: B leaves by closing its client and "
        "rejoins as a new client; every member heartbeats with ConsumerGroupHeartbeat, none "
        "sends JoinGroup)"
    ),
    "consumer-protocol-regex": (
        "group.protocol=consumer, one member subscribed by a regular expression the broker "
        "resolves (SubscribedTopicRegex, RE2/J, matched against whole topic names) that "
        "matches topics T-m1 and T-m2 but neither T-n1 nor T-m2x (which only a partial match "
        "would take): before it joins, m1 (3 partitions) and n1 (2) exist and hold 10 records "
        "each; it owns m1's 3 partitions and reads its 10 records; then m2 (2 partitions) and "
        "m2x (2) are created and 10 more records go to each of m1, m2, n1 and m2x: the broker "
        "resolves the regex again (Kafka: at a heartbeat after a topic was created, at least "
        "10 s after the last resolution), the member owns m1's and m2's 5 partitions and "
        "reads the 30 records of m1 and m2 exactly once, committed after every poll "
        "(committed offsets = end offsets); it never owns, reads or commits a partition of "
        "n1 or m2x. Java: subscribe(SubscriptionPattern) with T-m[0-9]+ (the member learns "
        "its topics from the assignment's topic ids, by Metadata); confluent-kafka: the "
        "subscription ^T-m[0-9]+$ (librdkafka sends it to the broker as (^T-m[0-9]+$)); "
        "franz-go: kgo.ConsumeRegex with kgo.ServerSideBalancer (kgo sends the regex as "
        "SubscribedTopicRegex, wrapped in .*(?:...).*, and ConsumerGroupDescribe must show it)"
    ),
}

# Online migration of a classic group to the consumer protocol (confluent-kafka: librdkafka
# speaks both protocols, chosen per consumer by group.protocol).
MIGRATION_SCENARIOS: dict[str, str] = {
    "rolling-upgrade-to-consumer-protocol": (
        "6 partitions: classic members A and B (group.protocol=classic, range) own 3+3; each "
        "round produces 30 records, read by their partition's owner and committed after every "
        "poll; before round 2 A is replaced by a group.protocol=consumer member (the broker "
        "upgrades the group; classic B goes on inside it), before round 3 B is: the group is "
        "listed as CLASSIC, then CONSUMER; all 90 records consumed exactly once, committed "
        "offsets 15 per partition"
    ),
}

# Fetch sessions (KIP-227), for the clients that keep them (librdkafka, sarama and kafkajs do not).
FETCH_SESSION_SCENARIOS: dict[str, str] = {
    "idle-fetch-sessions": (
        "a 1000-partition topic holding no records; one consumer assigned all 1000 polls idle "
        "(fetch max wait 100 ms) for 4 s after its first fetch: in the client's own metrics over "
        "the last 2 s, at least 5 Fetch round trips, the largest request under 1000 bytes and "
        "the average response under 1000 bytes (a sessionless fetch of 1000 partitions takes "
        "over 20000 each way): the session carries the partition list once"
    ),
}

# Kafka's own applications on the Java clients: Kafka Streams (the kafka-streams jar of the
# driver's clients version) and the tools' transactional copier (4.4 tools).
# Broker-side settings seen through a client (Java drivers).
BROKER_SCENARIOS: dict[str, str] = {
    "topic-compression": (
        "a topic per compression.type (gzip, snappy, lz4, zstd, uncompressed); 50 records produced "
        "in two codecs other than the topic's (the broker recompresses on append, issue #10): read "
        "back intact, offsets 0..49"
    ),
}

# KIP-932 share groups: KafkaShareConsumer (kafka-clients 4.0+: the java-4.4 driver) and,
# for share-group-split, librdkafka's ShareConsumer (confluent-kafka 2.16, a preview) and
# franz-go's kgo.ShareGroup (1.22).
# share.auto.offset.reset is `latest`: each scenario first produces probe records until a
# member of the group got one, so its records come after the share-partition's start offset.
SHARE_SCENARIOS: dict[str, str] = {
    "share-group-split": (
        "three share consumers of one group on a 1-partition topic, implicit acknowledgement "
        "(Java: max.poll.records 20, commitSync after every poll; confluent-kafka: librdkafka's "
        "ShareConsumer, a preview in 2.16; franz-go: kgo.ShareGroup, 20 records per ShareFetch, "
        "strict): 300 records, each delivered to exactly one of "
        "them, all 300 delivered, nothing redelivered within 1.5 s after"
    ),
    "share-group-redelivery": (
        "20 records; a share consumer in another JVM, explicit acknowledgement, gets some of "
        "them in one poll, acknowledges none and is killed (SIGKILL); a new member of the group "
        "then gets all 20, those the dead one held with delivery count 2 (the others 1, or 2 "
        "if its client had fetched them): released when the dead connection closed, at the "
        "latest when their acquisition lock expires"
    ),
    "share-group-archive": (
        "explicit acknowledgement: a record REJECTed is delivered once; a record RELEASEd every "
        "time is delivered 5 times (group.share.delivery.count.limit) and then archived; an "
        "ACCEPTed one once; none is delivered again in the 1.5 s after"
    ),
    "cli-share-groups": (
        "kafka-share-groups.sh (ShareGroupCommand, 4.4 tools): --list names the group; "
        "--describe --members while a share consumer (client.id share-cli) reads 10 records "
        "shows it owning the topic's partition 0; after it closes, --describe shows partition "
        "0 with lag 0 and a start offset between the first record's offset and the log end "
        "(Kafka 4.4: the first offset of the last batch acknowledged, Odradek: the log end), "
        "and --describe --state the group Empty with 0 members; --reset-offsets --to-earliest "
        "--execute (AlterShareGroupOffsets), then --describe shows start offset 0 and every "
        "record as lag"
    ),
}

APP_SCENARIOS: dict[str, str] = {
    "streams-groups": (
        "streams-eos with group.protocol=streams (KIP-1071 streams groups: StreamsGroupHeartbeat, "
        "the broker creating the repartition and changelog topics): the same exact counts "
        "through the restart and the SIGKILL of the app's JVM"
    ),
    "streams-groups-failover": (
        "the streams-eos word count (group.protocol=streams) on two instances, each in its own "
        "JVM: StreamsGroupDescribe shows both Stable members owning active tasks, together "
        "each of the 6 tasks once; with input flowing, instance A is killed (SIGKILL): right "
        "after, the group still has both members (the dead one until its session times out, "
        "group.streams.session.timeout.ms 6 s), then B owns all 6 tasks; A restarted on its "
        "state dir (same process id) rejoins and the tasks are split between the two again; "
        "when the input stops, per word the read_committed output is exactly 1..n"
    ),
    "cli-streams-groups": (
        "kafka-streams-groups.sh (StreamsGroupCommand, 4.4 tools) on a running word count "
        "(client.id cli-streams): --list names the group; --describe --members --verbose shows "
        "the member with its process id, all the active tasks, target assignment and member "
        "epoch 3 (Kafka starts a new group at epoch 1: the join makes it 2, the internal "
        "topics appearing 3); --describe --state --verbose shows the group Stable, group and "
        "target assignment epoch 3, 1 member; --describe --offsets the input partitions with "
        "lag 0; after the app closes, --describe --state shows it Empty, --reset-offsets "
        "--to-earliest --all-input-topics --execute sets offset 0 on every input partition, and "
        "--delete removes the group (--list no longer names it)"
    ),
    "streams-eos": (
        "Kafka Streams, processing.guarantee=exactly_once_v2, record cache off: 600 records "
        "(keys r0..r599, 12 distinct word values) on a 3-partition input, counted by value "
        "(groupBy: a repartition topic; count: a changelog): per word the read_committed output "
        "is exactly 1, 2, ..., n and both internal topics exist; (restart) the app closes, its "
        "local state is wiped, 300 more records come and a new instance of the same "
        "application.id restores the counts from the changelog and resumes at the committed "
        "offsets: per word exactly 1..n+m; (crash) 3000 more records, the app in a child JVM "
        "on the same state dir is killed (SIGKILL) mid-stream with a transaction open, a new "
        "instance fences it and finishes: per word exactly 1..n+m+k (no repeat, no gap), the "
        "group's offsets at the input's end, the repartition topic purged (DeleteRecords)"
    ),
    "txn-copier": (
        "TransactionalMessageCopier (kafka-tools) with --enable-random-aborts, 50 records per "
        "transaction: in group mode with --use-group-metadata, 2 x 400 records copied, then "
        "2 x 100 more by a second run of the same group and transactional id; in assign mode "
        "(offsets sent by group id) over 4500 records of partition 0, a first copier with a 3 s "
        "transaction timeout killed (SIGKILL) with a transaction open, then a second one under "
        "another transactional id in the same group (its position waits for pending offsets the "
        "dead one sent; the output completes once the coordinator aborts its transaction). "
        "read_committed, each output partition holds exactly its input partition's values in "
        "order, and each group's committed offsets are at the input's end"
    ),
}

ALL_SCENARIOS: dict[str, str] = {
    **SCENARIOS, **CONSUMER_PROTOCOL_SCENARIOS, **MIGRATION_SCENARIOS, **FETCH_SESSION_SCENARIOS, **CLI_SCENARIOS,
    **BROKER_SCENARIOS,
    **SHARE_SCENARIOS,
    **APP_SCENARIOS,
}

# The security suite (`python -m compat_tests.run --suite security`, issue #13): one broker with
# PLAINTEXT (admin), SASL_PLAINTEXT, SSL (mTLS) and SASL_SSL listeners and the StandardAuthorizer
# (compat_tests/security_setup.py); each driver gets the listeners, certificates, users and token
# in `--security FILE`. User:mallory is denied everything on PREFIXED `denied-` topics, groups
# and transactional ids. Kept out of ALL_SCENARIOS: these rows need that broker.
SECURITY_SCENARIOS: dict[str, str] = {
    "sasl-scram-sha-512": (
        "SASL_SSL with SCRAM-SHA-512 as bob: create a 1-partition topic, produce 20 records, "
        "consume them in a consumer group (subscribe, commit): all 20"
    ),
    "sasl-plain": "as sasl-scram-sha-512 over SASL_PLAINTEXT with PLAIN as alice",
    "mtls": (
        "as sasl-scram-sha-512 over SSL with the client certificate (CN=alice, mapped by "
        "ssl.principal.mapping.rules), no SASL"
    ),
    "sasl-oauthbearer": (
        "as sasl-scram-sha-512 over SASL_PLAINTEXT with OAUTHBEARER, Kafka's default unsecured "
        "validation (the client's own unsecured token where it has one, else an unsecured JWS "
        "for sub=carol through its token provider)"
    ),
    "acl-denied-produce": (
        "as mallory (PLAIN) produce to denied-P-produce: the client reports a topic "
        "authorization error (TOPIC_AUTHORIZATION_FAILED) and the topic stays empty"
    ),
    "acl-denied-consume": (
        "as mallory consume denied-P-consume (1 record, produced as admin) by assignment: a "
        "topic authorization error, no record delivered"
    ),
    "acl-denied-group": (
        "as mallory consume an allowed topic in group denied-P-group: a group authorization "
        "error (GROUP_AUTHORIZATION_FAILED)"
    ),
    "acl-denied-txn": (
        "as mallory init a transactional producer with transactional.id denied-P-txn: "
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    ),
    "quota-throttle": (
        "as alice (PLAIN, SASL_PLAINTEXT) with client.id quota-throttled-<driver> "
        "(producer_byte_rate 20480 set by the runner) produce 400 KiB to a 1-partition topic: the client reports "
        "throttle_time_ms > 0 through its own interface, every record is acknowledged, and the "
        "rate over the run stays under 3 x the quota"
    ),
}

# `run.py --suite cluster`: failover rows on three brokers (Odradek --brokers 3, a three-node
# Apache Kafka KRaft cluster); the runner makes the faults when the driver asks
# (compat_tests/cluster_suite.py describes the phase protocol).
CLUSTER_SCENARIOS: dict[str, str] = {
    "failover-acks-all": (
        "RF=3, min.insync.replicas=2, 3 partitions: an idempotent acks=all producer sends 300 "
        "numbered records, and the runner kills the leader of one partition after the first 100: "
        "every acknowledged record is read back, none twice"
    ),
    "failover-not-enough-replicas": (
        "RF=3, min.insync.replicas=2: the runner kills both followers of a partition; an acks=all "
        "produce (no retries) fails with the client's NOT_ENOUGH_REPLICAS error, acks=1 succeeds"
    ),
    "failover-group-coordinator": (
        "a consumer group reads 60 records (committing after each) while the runner kills its "
        "group coordinator after 20: all 60 read, the group's committed offsets reach the end"
    ),
}
