"""ACLs end to end with confluent-kafka (issue #13): ACLs made with the AdminClient deny a
producer, a consumer, a group and a transactional id with the client's own error, and
survive kill -9. The clients are PLAINTEXT, so User:ANONYMOUS; allow.everyone.if.no.acl.found
lets the test admin act on resources no ACL names (the cluster), as it would on Kafka."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    NewPartitions,
    ResourcePatternType,
    ResourceType,
)
from it_support import StartBroker, admin, create_topic, topic_name

SETTINGS = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "true"}
ANON = "User:ANONYMOUS"
KAFKA = "kafka_it_server" in os.environ.get("ODRADEK_IT_SERVER_CMD", "")


def deny(rt: ResourceType, name: str, op: AclOperation) -> AclBinding:
    return AclBinding(rt, name, ResourcePatternType.LITERAL, ANON, "*", op,
                      AclPermissionType.DENY)


def allow(rt: ResourceType, name: str, op: AclOperation, principal: str = ANON,
          pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    return AclBinding(rt, name, pattern, principal, "*", op, AclPermissionType.ALLOW)


def add(bootstrap: str, *acls: AclBinding) -> None:
    client = admin(bootstrap)  # kept alive until the futures are done
    for f in client.create_acls(list(acls), request_timeout=10).values():
        f.result(10)


def test_denied_produce_consume_group_and_transactional_id(start_broker: StartBroker,
                                                           tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", SETTINGS)
    bs = broker.bootstrap
    topic, group = topic_name("acl"), topic_name("g")
    create_topic(bs, topic)
    add(bs, deny(ResourceType.TOPIC, topic, AclOperation.WRITE),
        deny(ResourceType.GROUP, group, AclOperation.READ),
        deny(ResourceType.TRANSACTIONAL_ID, "tx-denied", AclOperation.WRITE))

    errors: list[KafkaError] = []
    p = Producer({"bootstrap.servers": bs, "enable.idempotence": False, "retries": 0})
    p.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    p.flush(15)
    assert [e.code() for e in errors] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]

    c = Consumer({"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    try:
        seen = None
        for _ in range(30):
            msg = c.poll(0.5)
            if msg is not None and msg.error() is not None:
                seen = msg.error().code()
                break
        assert seen == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        c.close()

    t = Producer({"bootstrap.servers": bs, "transactional.id": "tx-denied"})
    with pytest.raises(KafkaException) as exc:
        t.init_transactions(15)
    assert exc.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_read_denied_and_acls_survive_kill_9(start_broker: StartBroker, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", SETTINGS)
    bs = broker.bootstrap
    topic = topic_name("acl")
    create_topic(bs, topic)
    # Any ACL on the topic turns allow.everyone off for it: DESCRIBE must be granted.
    add(bs, deny(ResourceType.TOPIC, topic, AclOperation.READ),
        AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, ANON, "*",
                   AclOperation.DESCRIBE, AclPermissionType.ALLOW))
    broker.restart(hard=True)  # kill -9
    bs = broker.bootstrap
    client = admin(bs)
    listed = client.describe_acls(AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
        AclPermissionType.ANY), request_timeout=10).result(10)
    assert sorted((a.name, a.operation.name) for a in listed) == [
        (topic, "DESCRIBE"), (topic, "READ")]
    c = Consumer({"bootstrap.servers": bs, "group.id": topic_name("g"),
                  "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, 0, 0)])
    try:
        seen = None
        for _ in range(30):
            msg = c.poll(0.5)
            if msg is not None and msg.error() is not None:
                seen = msg.error().code()
                break
        assert seen == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        c.close()
    deleted = client.delete_acls([AclBindingFilter(
        ResourceType.TOPIC, topic, ResourcePatternType.MATCH, None, None, AclOperation.ANY,
        AclPermissionType.ANY)], request_timeout=10)
    assert [len(f.result(10)) for f in deleted.values()] == [2]


CLASSPATH = Path(__file__).resolve().parents[2] / "compat_tests/java/target/cp-clients-4.4.txt"


@pytest.mark.skipif(not CLASSPATH.exists() or shutil.which("java") is None,
                    reason="Kafka 4.4 tools not built (bash compat_tests/setup.sh)")
def test_kafka_acls_tool_adds_lists_and_removes(start_broker: StartBroker,
                                                tmp_path: Path) -> None:
    """Kafka's own kafka-acls.sh (org.apache.kafka.tools.AclCommand) against Odradek."""
    broker = start_broker(tmp_path / "data", SETTINGS)

    def acls(*args: str) -> str:
        done = subprocess.run(
            ["java", "-cp", CLASSPATH.read_text().strip(), "org.apache.kafka.tools.AclCommand",
             "--bootstrap-server", broker.bootstrap, *args],
            capture_output=True, text=True, timeout=120, check=True)
        return done.stdout

    acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation",
         "Write", "--topic", "orders", "--resource-pattern-type", "prefixed")
    acls("--add", "--deny-principal", "User:bob", "--operation", "All", "--group", "g1")
    listed = acls("--list", "--topic", "orders-2024", "--resource-pattern-type", "match")
    assert "name=orders, patternType=PREFIXED" in listed
    assert "principal=User:alice, host=*, operation=READ, permissionType=ALLOW" in listed
    assert "g1" not in listed
    acls("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read",
         "--topic", "orders", "--resource-pattern-type", "prefixed")
    after = acls("--list")
    assert "operation=READ" not in after
    assert "operation=WRITE, permissionType=ALLOW" in after
    assert "principal=User:bob, host=*, operation=ALL, permissionType=DENY" in after


def error_code(exc: BaseException) -> int:
    assert isinstance(exc, KafkaException), exc
    return int(exc.args[0].code())


def test_admin_apis_denied_with_the_clients_errors(start_broker: StartBroker,
                                                   tmp_path: Path) -> None:
    """CreatePartitions (TOPIC ALTER), DeleteRecords (TOPIC DELETE) and the cluster's
    authorized operations through confluent-kafka's AdminClient, on a topic the client may
    DESCRIBE (so the metadata lookup the client makes first goes through)."""
    broker = start_broker(tmp_path / "data", SETTINGS)
    bs = broker.bootstrap
    topic, open_topic = topic_name("acl"), topic_name("open")
    create_topic(bs, topic)
    create_topic(bs, open_topic)
    add(bs, allow(ResourceType.TOPIC, topic, AclOperation.DESCRIBE),
        deny(ResourceType.TOPIC, topic, AclOperation.ALTER),
        deny(ResourceType.TOPIC, topic, AclOperation.DELETE))
    client = admin(bs)
    with pytest.raises(KafkaException) as exc:
        client.create_partitions([NewPartitions(topic, 2)], request_timeout=10)[topic].result(10)
    assert error_code(exc.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    client.create_partitions([NewPartitions(open_topic, 2)],
                             request_timeout=10)[open_topic].result(10)
    with pytest.raises(KafkaException) as exc:
        client.delete_records([TopicPartition(topic, 0, 0)],
                              request_timeout=10)[TopicPartition(topic, 0, 0)].result(10)
    assert error_code(exc.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    tp = TopicPartition(open_topic, 0, 0)
    assert client.delete_records([tp], request_timeout=10)[tp].result(10).low_watermark == 0
    # The topic's authorized operations: DESCRIBE only (the DENYs cancel nothing else: with
    # an ACL on it, allow.everyone no longer applies to the topic).
    described = client.describe_topics(
        TopicCollection([topic]), request_timeout=10, include_authorized_operations=True)
    ops = described[topic].result(10).authorized_operations
    assert sorted(o.name for o in ops) == ["DESCRIBE"]
    cluster = client.describe_cluster(request_timeout=10,
                                      include_authorized_operations=True).result(10)
    assert sorted(o.name for o in cluster.authorized_operations) == [
        "ALTER", "ALTER_CONFIGS", "CLUSTER_ACTION", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS",
        "IDEMPOTENT_WRITE"]
    # DESCRIBE denied on the cluster: its authorized operations are none at all. (On Kafka
    # the broker's own requests are User:ANONYMOUS too: it keeps CLUSTER_ACTION.)
    add(bs, deny(ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE),
        allow(ResourceType.BROKER, "kafka-cluster", AclOperation.CLUSTER_ACTION))
    cluster = client.describe_cluster(request_timeout=10,
                                      include_authorized_operations=True).result(10)
    assert not cluster.authorized_operations


def _produce_error(bs: str, topic: str) -> int | None:
    errors: list[KafkaError | None] = []
    p = Producer({"bootstrap.servers": bs, "enable.idempotence": False, "retries": 0,
                  "message.timeout.ms": 10_000})
    p.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    p.flush(15)
    assert len(errors) == 1
    return None if errors[0] is None else int(errors[0].code())


def _fetch_error(bs: str, topic: str) -> int | None:
    """The first error a consumer assigned to partition 0 sees (None: it got a record)."""
    c = Consumer({"bootstrap.servers": bs, "group.id": topic_name("g"),
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    try:
        for _ in range(40):
            msg = c.poll(0.5)
            if msg is None:
                continue
            return None if msg.error() is None else int(msg.error().code())
        raise AssertionError("neither a record nor an error")
    finally:
        c.close()


def test_prefixed_allow_deleted_denies_at_once_and_after_restart(start_broker: StartBroker,
                                                                tmp_path: Path) -> None:
    """The client may READ and WRITE its topic only through PREFIXED ALLOWs (a literal ALLOW
    DESCRIBE keeps allow.everyone off for it, and lets the clients' metadata through); once
    those bindings are deleted, the next produce and fetch are denied, with no restart, and
    still after one."""
    broker = start_broker(tmp_path / "data", SETTINGS)
    bs = broker.bootstrap
    prefix = topic_name("pfx") + "-"
    topic = prefix + "orders"
    create_topic(bs, topic)
    prefixed = [allow(ResourceType.TOPIC, prefix, op, pattern=ResourcePatternType.PREFIXED)
                for op in (AclOperation.READ, AclOperation.WRITE)]
    add(bs, allow(ResourceType.TOPIC, topic, AclOperation.DESCRIBE), *prefixed)
    assert _produce_error(bs, topic) is None
    assert _fetch_error(bs, topic) is None
    client = admin(bs)
    gone = client.delete_acls([AclBindingFilter(
        ResourceType.TOPIC, prefix, ResourcePatternType.PREFIXED, ANON, "*", AclOperation.ANY,
        AclPermissionType.ALLOW)], request_timeout=10)
    assert [len(f.result(10)) for f in gone.values()] == [2]
    attempts = 1
    while (code := _produce_error(bs, topic)) is None and attempts < 10:
        attempts += 1  # Kafka's brokers learn the deletion from the metadata log, a bit later
        time.sleep(0.5)
    assert code == KafkaError.TOPIC_AUTHORIZATION_FAILED
    if not KAFKA:
        assert attempts == 1  # Odradek: the very next produce
    assert _fetch_error(bs, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    broker.restart()
    bs = broker.bootstrap
    assert _produce_error(bs, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert _fetch_error(bs, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED


@pytest.mark.skipif(not CLASSPATH.exists() or shutil.which("java") is None,
                    reason="Kafka 4.4 tools not built (bash compat_tests/setup.sh)")
def test_kafka_tools_log_dirs_and_delete_offsets_denied(start_broker: StartBroker,
                                                        tmp_path: Path) -> None:
    """kafka-log-dirs.sh (DescribeLogDirs: CLUSTER DESCRIBE) and kafka-consumer-groups.sh
    --delete-offsets (OffsetDelete: GROUP DELETE) with Kafka 4.4's own tools."""
    broker = start_broker(tmp_path / "data", SETTINGS)
    bs = broker.bootstrap
    topic, group = topic_name("acl"), topic_name("g")
    create_topic(bs, topic)
    c = Consumer({"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False})
    for _ in range(20):  # Kafka: NOT_COORDINATOR until __consumer_offsets is up
        try:
            c.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
            break
        except KafkaException:
            time.sleep(0.5)
    else:
        raise AssertionError("offsets never committed")
    c.close()

    def tool(cls: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["java", "-cp", CLASSPATH.read_text().strip(), cls,
                               "--bootstrap-server", bs, *args],
                              capture_output=True, text=True, timeout=120)
    log_dirs = ("org.apache.kafka.tools.LogDirsCommand", "--describe")
    delete = ("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--delete-offsets",
              "--group", group, "--topic", topic)
    assert tool(*log_dirs).returncode == 0
    add(bs, deny(ResourceType.GROUP, group, AclOperation.DELETE),
        allow(ResourceType.GROUP, group, AclOperation.DESCRIBE))
    denied = tool(*delete)
    assert "Error: Group authorization failed." in denied.stdout
    assert "GroupAuthorizationException" in denied.stdout
    add(bs, deny(ResourceType.BROKER, "kafka-cluster", AclOperation.DESCRIBE),
        allow(ResourceType.BROKER, "kafka-cluster", AclOperation.CLUSTER_ACTION))
    denied = tool(*log_dirs)
    assert denied.returncode == 1
    assert "ClusterAuthorizationException: Cluster authorization failed." in (
        denied.stdout + denied.stderr)
