"""KIP-848 regex subscriptions with confluent-kafka (librdkafka >= 2.12, group.protocol=consumer):
a topic name starting with "^" is sent as SubscribedTopicRegex and resolved by the broker.

- The consumer subscribes to "^orders-.*" and reads the records of the matching topic, none of
  the others ("payments", "orders" itself: the match is a full match).
- A topic created after the subscription ("orders-us") is picked up by the coordinator's
  regex refresh (at a heartbeat more than 10 s after the last resolution) and its records are
  consumed; the group's description assigns it.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer
from it_support import TIMEOUT, Rec, StartBroker, admin, confluent_produce, create_topic

from compat_tests.probing import Conn
from odradek.wire._generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from odradek.wire._generated.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from odradek.wire._generated.metadata import MetadataRequest, MetadataResponse

OVERRIDES = {
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.session.timeout.ms": "6000",
    "offsets.topic.num.partitions": "3",
}


def _poll_until(c: Consumer, want: int, got: list[tuple[str, bytes]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        msg = c.poll(0.2)
        if msg is None:
            continue
        assert not msg.error(), msg.error()
        got.append((msg.topic(), msg.value()))


def test_regex_subscription_picks_up_a_topic_created_later(start_broker: StartBroker,
                                                           tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", OVERRIDES)
    bootstrap = broker.bootstrap
    for topic, partitions in (("orders-eu", 2), ("payments", 1), ("orders", 1)):
        create_topic(bootstrap, topic, partitions)
    confluent_produce(bootstrap, "orders-eu", [Rec(key=b"e%d" % i, value=b"eu%d" % i)
                                               for i in range(6)])
    confluent_produce(bootstrap, "payments", [Rec(key=b"p", value=b"pay")])
    confluent_produce(bootstrap, "orders", [Rec(key=b"o", value=b"plain")])
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "regex-group",
                  "group.protocol": "consumer", "auto.offset.reset": "earliest",
                  "fetch.wait.max.ms": 100})
    try:
        c.subscribe(["^orders-.*"])
        got: list[tuple[str, bytes]] = []
        _poll_until(c, 6, got, TIMEOUT)
        assert sorted(got) == sorted(("orders-eu", b"eu%d" % i) for i in range(6))

        create_topic(bootstrap, "orders-us", 1)
        confluent_produce(bootstrap, "orders-us", [Rec(key=b"u%d" % i, value=b"us%d" % i)
                                                   for i in range(3)])
        _poll_until(c, 9, got, 10 + TIMEOUT)
        assert sorted(v for t, v in got if t == "orders-us") == [b"us0", b"us1", b"us2"]
        assert {t for t, _ in got} == {"orders-eu", "orders-us"}

        client = admin(bootstrap)  # kept: a collected client abandons its requests
        group = client.describe_consumer_groups(
            ["regex-group"], request_timeout=TIMEOUT)["regex-group"].result(TIMEOUT)
        [member] = group.members
        assigned = {(tp.topic, tp.partition) for tp in member.assignment.topic_partitions}
        assert assigned == {("orders-eu", 0), ("orders-eu", 1), ("orders-us", 0)}
    finally:
        c.close()


def test_regex_resolves_only_topics_the_member_may_describe(start_broker: StartBroker,
                                                            tmp_path: Path) -> None:
    """With an authorizer, the topics a regex matches are kept only if the member may
    DESCRIBE them (Kafka 4.4, KAFKA-18813): "rx-denied" matches but an ACL denies it, so the
    group is assigned "rx-open" alone and reads none of the denied topic's records."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    broker = start_broker(tmp_path / "data", {
        **OVERRIDES,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true"})
    bootstrap = broker.bootstrap
    for topic in ("rx-open", "rx-denied"):
        create_topic(bootstrap, topic, 1)
        confluent_produce(bootstrap, topic, [Rec(key=b"k", value=topic.encode())])
    client = admin(bootstrap)
    deny = AclBinding(ResourceType.TOPIC, "rx-denied", ResourcePatternType.LITERAL,
                      "User:ANONYMOUS", "*", AclOperation.DESCRIBE, AclPermissionType.DENY)
    for f in client.create_acls([deny], request_timeout=10).values():
        f.result(10)
    # The member's own heartbeats: its assignment names topic ids, whatever the client
    # would then do with an id it cannot describe (librdkafka drops such topics itself).
    conn = Conn(int(bootstrap.rsplit(":", 1)[1]))
    try:
        meta = conn.call(3, 12, MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(
            name="rx-open")], allow_auto_topic_creation=False), MetadataResponse)
        open_id = meta.topics[0].topic_id
        # FindCoordinator makes Kafka create __consumer_offsets (a heartbeat does not)
        conn.retrying(lambda: conn.call(10, 4, FindCoordinatorRequest(
            key_type=0, coordinator_keys=["regex-acl-raw"]), FindCoordinatorResponse),
            lambda r: r.coordinators[0].error_code)
        member, epoch = uuid.uuid4().hex[:22], 0
        assigned: set[uuid.UUID] = set()
        deadline = time.monotonic() + TIMEOUT
        first = True
        while time.monotonic() < deadline:
            hb = conn.call(68, 1, ConsumerGroupHeartbeatRequest(
                group_id="regex-acl-raw", member_id=member, member_epoch=epoch,
                rebalance_timeout_ms=30000 if first else -1,
                subscribed_topic_names=[] if first else None,
                subscribed_topic_regex="rx-.*" if first else None,
                topic_partitions=[] if first else None), ConsumerGroupHeartbeatResponse)
            if first and hb.error_code in (14, 15, 16):  # the coordinator is still loading
                time.sleep(0.3)
                continue
            assert hb.error_code == 0, (hb.error_code, hb.error_message)
            first, epoch = False, hb.member_epoch
            if hb.assignment is not None:
                assigned = {t.topic_id for t in hb.assignment.topic_partitions}
                if assigned:
                    break
            time.sleep(0.3)
        time.sleep(1)  # a later resolution must not add the denied topic either
        hb = conn.call(68, 1, ConsumerGroupHeartbeatRequest(
            group_id="regex-acl-raw", member_id=member, member_epoch=epoch,
            rebalance_timeout_ms=-1, topic_partitions=None), ConsumerGroupHeartbeatResponse)
        if hb.assignment is not None:
            assigned = {t.topic_id for t in hb.assignment.topic_partitions}
        assert assigned == {open_id}
    finally:
        conn.close()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "regex-acl-group",
                  "group.protocol": "consumer", "auto.offset.reset": "earliest",
                  "fetch.wait.max.ms": 100})
    try:
        c.subscribe(["^rx-.*"])
        got: list[tuple[str, bytes]] = []
        _poll_until(c, 1, got, TIMEOUT)
        _poll_until(c, 2, got, 3)  # nothing more may come
        assert got == [("rx-open", b"rx-open")]
        assert {tp.topic for tp in c.assignment()} == {"rx-open"}
    finally:
        c.close()
