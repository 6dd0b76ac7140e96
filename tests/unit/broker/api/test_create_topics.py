from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.config import ConfigSource
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.create_topics import CreateTopicsRequest
from odradek.wire.primitives import ZERO_UUID

Req = CreateTopicsRequest
KEY = ApiKey.CREATE_TOPICS


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path, **{"num.partitions": "3"})
    yield b
    b.close()


def topic(name: str, partitions: int = 2, rf: int = 1, configs: dict[str, str | None] | None = None,
          assignments: list[list[int]] | None = None) -> Req.CreatableTopic:
    return Req.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf,
        configs=[Req.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()],
        assignments=[Req.CreatableReplicaAssignment(partition_index=i, broker_ids=ids)
                     for i, ids in enumerate(assignments or [])])


def create(broker: Broker, version: int, *topics: Req.CreatableTopic, validate_only: bool = False):  # type: ignore[no-untyped-def]
    return call(broker, KEY, version, Req(topics=list(topics), validate_only=validate_only)).topics


@pytest.mark.parametrize("version", range(8))
def test_creates_topic_with_partition_logs(broker: Broker, version: int) -> None:
    [r] = create(broker, version, topic("orders", 4))
    assert (r.name, r.error_code) == ("orders", ErrorCode.NONE)
    t = broker.cluster.get("orders")
    assert t is not None and t.partitions == 4
    assert all(broker.partitions.log("orders", p) is not None for p in range(4))
    assert broker.partitions.log("orders", 4) is None
    if version >= 1:
        assert r.error_message is None
    if version >= 5:
        assert (r.num_partitions, r.replication_factor) == (4, 1)
        names = [c.name for c in r.configs]
        assert names == sorted(names) and "retention.ms" in names and "cleanup.policy" in names
    else:
        assert r.num_partitions == -1  # not in the wire format before v5: decoded default
    assert r.topic_id == (t.topic_id if version >= 7 else ZERO_UUID)


def test_defaults_from_broker_settings(broker: Broker) -> None:
    [r] = create(broker, 7, topic("dflt", partitions=-1, rf=-1))
    assert r.error_code == ErrorCode.NONE
    assert (r.num_partitions, r.replication_factor) == (3, 1)
    assert broker.cluster.get("dflt").partitions == 3  # type: ignore[union-attr]


@pytest.mark.parametrize(("rf", "code"), [
    (2, ErrorCode.INVALID_REPLICATION_FACTOR),
    (3, ErrorCode.INVALID_REPLICATION_FACTOR),
    (0, ErrorCode.INVALID_REPLICATION_FACTOR),
    (-2, ErrorCode.INVALID_REPLICATION_FACTOR),
])
def test_replication_factor_refused(broker: Broker, rf: int, code: ErrorCode) -> None:
    [r] = create(broker, 6, topic("t", rf=rf))
    assert r.error_code == code
    assert broker.cluster.get("t") is None
    if rf > 1:
        assert r.error_message == (
            f"Unable to replicate the partition {rf} time(s): The target replication factor "
            f"of {rf} cannot be reached because only 1 broker(s) are registered.")


@pytest.mark.parametrize("partitions", [0, -2])
def test_bad_partition_count(broker: Broker, partitions: int) -> None:
    [r] = create(broker, 4, topic("t", partitions=partitions))
    assert r.error_code == ErrorCode.INVALID_PARTITIONS
    assert broker.cluster.get("t") is None


def test_existing_illegal_and_colliding_names(broker: Broker) -> None:
    create(broker, 7, topic("a.b"))
    results = create(broker, 7, topic("a.b"), topic("a_b"), topic("bad name"), topic(""),
                     topic("x" * 250), topic("ok"))
    codes = {r.name: r.error_code for r in results}
    assert codes == {
        "a.b": ErrorCode.TOPIC_ALREADY_EXISTS,
        "a_b": ErrorCode.INVALID_TOPIC_EXCEPTION,
        "bad name": ErrorCode.INVALID_TOPIC_EXCEPTION,
        "": ErrorCode.INVALID_TOPIC_EXCEPTION,
        "x" * 250: ErrorCode.INVALID_TOPIC_EXCEPTION,
        "ok": ErrorCode.NONE,
    }
    assert results[0].error_message == "Topic 'a.b' already exists."
    assert [r.name for r in results] == ["a.b", "a_b", "bad name", "", "x" * 250, "ok"]


def test_cluster_metadata_name_refused(broker: Broker) -> None:
    [r] = create(broker, 7, topic("__cluster_metadata"))
    assert r.error_code == ErrorCode.INVALID_REQUEST
    assert broker.cluster.get("__cluster_metadata") is None


def test_duplicate_names_in_one_request(broker: Broker) -> None:
    results = create(broker, 7, topic("dup", 1), topic("dup", 2), topic("single"))
    assert [(r.name, r.error_code) for r in results] == [
        ("dup", ErrorCode.INVALID_REQUEST), ("single", ErrorCode.NONE)]
    assert results[0].error_message == "Duplicate topic name."
    assert broker.cluster.get("dup") is None


@pytest.mark.parametrize("version", [1, 4, 5, 7])
def test_validate_only_creates_nothing(broker: Broker, version: int) -> None:
    [r] = create(broker, version, topic("v", 5, configs={"retention.ms": "1000"}),
                 validate_only=True)
    assert r.error_code == ErrorCode.NONE
    assert broker.cluster.get("v") is None
    assert broker.partitions.log("v", 0) is None
    if version >= 7:  # Kafka answers a random id that never exists (issue #18)
        assert r.topic_id != ZERO_UUID
        assert r.topic_id not in broker.cluster.by_id
    if version >= 5:
        assert r.num_partitions == 5
        retention = next(c for c in r.configs if c.name == "retention.ms")
        assert (retention.value, retention.config_source) == ("1000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    # the same checks run: a bad request still fails
    [bad] = create(broker, version, topic("v", rf=2), validate_only=True)
    assert bad.error_code == ErrorCode.INVALID_REPLICATION_FACTOR


def test_configs_validated_and_stored(broker: Broker) -> None:
    results = create(
        broker, 7,
        topic("good", configs={"retention.ms": "60000", "cleanup.policy": "compact"}),
        topic("badvalue", configs={"retention.ms": "soon"}),
        topic("unknown", configs={"no.such.config": "1"}),
        topic("null", configs={"retention.ms": None}),
    )
    good, badvalue, unknown, null = results
    assert good.error_code == ErrorCode.NONE
    assert broker.cluster.get("good").configs == {  # type: ignore[union-attr]
        "retention.ms": "60000", "cleanup.policy": "compact"}
    by_name = {c.name: c for c in good.configs}
    assert by_name["retention.ms"].value == "60000"
    assert by_name["retention.ms"].config_source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert by_name["segment.bytes"].config_source == ConfigSource.DEFAULT_CONFIG
    assert not by_name["retention.ms"].read_only
    assert badvalue.error_code == ErrorCode.INVALID_CONFIG
    assert "retention.ms" in (badvalue.error_message or "")
    assert unknown.error_code == ErrorCode.INVALID_CONFIG
    assert null.error_code == ErrorCode.INVALID_CONFIG
    assert null.error_message == "Null value not supported for topic configs: retention.ms"
    for name in ("badvalue", "unknown", "null"):
        assert broker.cluster.get(name) is None


@pytest.mark.parametrize("value", ["14", "1024", "1048575"])
def test_segment_bytes_below_one_mib_is_refused(broker: Broker, value: str) -> None:
    # Kafka 4.0 (KIP-1030) raised segment.bytes' floor to 1 MiB.
    [r] = create(broker, 7, topic("small", configs={"segment.bytes": value}))
    assert r.error_code == ErrorCode.INVALID_CONFIG
    assert r.error_message == (f"Invalid value {value} for configuration segment.bytes: "
                               "Value must be at least 1048576")
    assert broker.cluster.get("small") is None
    [ok] = create(broker, 7, topic("mib", configs={"segment.bytes": "1048576"}))
    assert ok.error_code == ErrorCode.NONE
    assert broker.partitions.log("mib", 0).config.segment_bytes == 1048576  # type: ignore[union-attr]


def test_the_echoed_configs_are_kafka_4_4s(broker: Broker) -> None:
    [r] = create(broker, 7, topic("echo"))
    names = {c.name for c in r.configs}
    assert len(names) == 37
    assert {"max.decompressed.message.bytes", "remote.copy.lag.ms"} <= names
    assert not {"message.format.version", "internal.segment.bytes"} & names
    after = next(c for c in r.configs if c.name == "message.timestamp.after.max.ms")
    assert after.value == "3600000"


def test_created_topic_reports_broker_sourced_defaults(tmp_path: Path) -> None:
    b = open_broker(tmp_path, **{"log.retention.ms": "12345"})
    try:
        [r] = create(b, 5, topic("t"))
        retention = next(c for c in r.configs if c.name == "retention.ms")
        assert (retention.value, retention.config_source) == (
            "12345", ConfigSource.STATIC_BROKER_CONFIG)
    finally:
        b.close()


def test_manual_assignment(broker: Broker) -> None:
    node = broker.node_id
    results = create(
        broker, 7,
        topic("manual", partitions=-1, rf=-1, assignments=[[node], [node], [node]]),
        topic("other-broker", partitions=-1, rf=-1, assignments=[[node + 1]]),
        topic("twice", partitions=-1, rf=-1, assignments=[[node, node]]),
        topic("empty", partitions=-1, rf=-1, assignments=[[]]),
        topic("rf-set", partitions=-1, rf=1, assignments=[[node]]),
        topic("count-set", partitions=1, rf=-1, assignments=[[node]]),
    )
    codes = [(r.name, r.error_code) for r in results]
    assert codes == [
        ("manual", ErrorCode.NONE),
        ("other-broker", ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ("twice", ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ("empty", ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        ("rf-set", ErrorCode.INVALID_REQUEST),
        ("count-set", ErrorCode.INVALID_REQUEST),
    ]
    assert results[0].num_partitions == 3
    assert broker.cluster.get("manual").partitions == 3  # type: ignore[union-attr]


def test_manual_assignment_must_be_consecutive(broker: Broker) -> None:
    node = broker.node_id
    t = Req.CreatableTopic(name="gap", num_partitions=-1, replication_factor=-1, assignments=[
        Req.CreatableReplicaAssignment(partition_index=0, broker_ids=[node]),
        Req.CreatableReplicaAssignment(partition_index=2, broker_ids=[node])])
    [r] = create(broker, 7, t)
    assert r.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert broker.cluster.get("gap") is None


def test_oversized_request_refused(broker: Broker) -> None:
    # validate_only counts partitions the same way without paying for 6,000 real logs
    results = create(broker, 7, topic("big", 6000), topic("bigger", 6000), validate_only=True)
    assert [r.error_code for r in results] == [ErrorCode.NONE, ErrorCode.POLICY_VIOLATION]
    [r] = create(broker, 7, topic("huge", 10_001))
    assert r.error_code == ErrorCode.POLICY_VIOLATION
    assert broker.cluster.get("huge") is None
