"""Metadata handler on a real Broker, through the codec both ways, against Kafka's behaviour:
which topics are answered, auto-creation, names and ids, this node as broker, controller,
leader, replica and ISR, and authorized operations."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.metadata import MetadataRequest
from odradek.wire.primitives import ZERO_UUID

Req = MetadataRequest
KEY = ApiKey.METADATA
NODE = 3
NOT_REQUESTED = -(2**31)
# AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
# CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
# With no authorizer Kafka reports AclEntry.supportedOperations of the resource type.
TOPIC_OPS = 1 << 3 | 1 << 4 | 1 << 5 | 1 << 6 | 1 << 7 | 1 << 8 | 1 << 10 | 1 << 11
CLUSTER_OPS = 1 << 5 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 10 | 1 << 11 | 1 << 12
ALL_VERSIONS = range(14)
LISTENERS = {
    "listeners": "PLAINTEXT://0.0.0.0:9092,INTERNAL://0.0.0.0:9093",
    "advertised.listeners": "PLAINTEXT://kafka.example:19092,INTERNAL://10.0.0.7:9093",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
}


def open_node(tmp_path: Path, **settings: str) -> Broker:
    return open_broker(tmp_path, **{"node.id": str(NODE), "num.partitions": "3", **settings})


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_node(tmp_path)
    b.cluster.create_topic("b", 2, {})
    b.cluster.create_topic("a", 1, {})
    yield b
    b.close()


def metadata(broker: Broker, version: int, topics: list[str | uuid.UUID] | None, *,
             allow: bool = True, topic_ops: bool = False, cluster_ops: bool = False,
             listener: str = "PLAINTEXT") -> Any:
    """`topics`: names, or (v10+) ids; None asks for all (a null list, v1+)."""
    req = Req(allow_auto_topic_creation=allow, include_topic_authorized_operations=topic_ops,
              include_cluster_authorized_operations=cluster_ops)
    req.topics = None if topics is None else [
        Req.MetadataRequestTopic(name=None, topic_id=t) if isinstance(t, uuid.UUID)
        else Req.MetadataRequestTopic(name=t) for t in topics]
    return call(broker, KEY, version, req, listener=listener)


def summary(response: Any) -> list[tuple[Any, ...]]:
    """(error, name, internal, partition count) per topic, in response order."""
    return [(t.error_code, t.name, t.is_internal, len(t.partitions)) for t in response.topics]


def topic_id(broker: Broker, name: str) -> uuid.UUID:
    topic = broker.cluster.get(name)
    assert topic is not None
    return topic.topic_id


# -- which topics -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_all_topics(broker: Broker, version: int) -> None:
    broker.cluster.create_topic("__consumer_offsets", 2, {})  # internal topics are listed
    response = metadata(broker, version, [] if version == 0 else None)
    assert sorted(summary(response)) == [
        (ErrorCode.NONE, "__consumer_offsets", version >= 1, 2),  # is_internal is v1+
        (ErrorCode.NONE, "a", False, 1), (ErrorCode.NONE, "b", False, 2)]


@pytest.mark.parametrize("version", range(1, 14))
def test_an_empty_list_asks_for_no_topic_from_v1(broker: Broker, version: int) -> None:
    response = metadata(broker, version, [])
    assert response.topics == []
    assert [b.node_id for b in response.brokers] == [NODE]


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_named_topics_in_request_order(broker: Broker, version: int) -> None:
    response = metadata(broker, version, ["b", "a"])
    assert summary(response) == [(ErrorCode.NONE, "b", False, 2), (ErrorCode.NONE, "a", False, 1)]
    b, a = response.topics
    assert (b.topic_id, a.topic_id) == ((topic_id(broker, "b"), topic_id(broker, "a"))
                                        if version >= 10 else (ZERO_UUID, ZERO_UUID))
    epoch = 0 if version >= 7 else -1  # leader_epoch is v7+
    assert [(p.error_code, p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes,
             p.isr_nodes, p.offline_replicas) for p in b.partitions] == [
        (ErrorCode.NONE, i, NODE, epoch, [NODE], [NODE], []) for i in range(2)]
    assert b.topic_authorized_operations == NOT_REQUESTED


# -- brokers, controller, cluster id ----------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 9, 12, 13])  # controller_id v1+, cluster_id v2+
@pytest.mark.parametrize(("listener", "endpoint"), [
    ("PLAINTEXT", ("kafka.example", 19092)), ("INTERNAL", ("10.0.0.7", 9093)),
    ("OTHER", ("kafka.example", 19092))])  # an unknown listener: the first one's
def test_this_node_is_the_broker_and_controller_on_the_clients_listener(
        tmp_path: Path, version: int, listener: str, endpoint: tuple[str, int]) -> None:
    broker = open_node(tmp_path, **LISTENERS)
    try:
        response = metadata(broker, version, [], listener=listener)
        assert [(b.node_id, b.host, b.port, b.rack) for b in response.brokers] == [
            (NODE, *endpoint, None)]
        assert response.controller_id == (NODE if version >= 1 else -1)  # v1+
        cluster_id = broker.cluster.cluster_id
        assert len(cluster_id) == 22
        assert response.cluster_id == (cluster_id if version >= 2 else None)  # v2+
        assert response.throttle_time_ms == 0
    finally:
        broker.close()


def test_the_advertised_port_is_the_bound_one_when_configured_as_0(tmp_path: Path) -> None:
    broker = open_node(tmp_path, listeners="PLAINTEXT://127.0.0.1:0")
    try:
        broker.set_bound_ports({"PLAINTEXT": 41234})
        [b] = metadata(broker, 12, []).brokers
        assert (b.node_id, b.host, b.port) == (NODE, "127.0.0.1", 41234)
    finally:
        broker.close()


# -- unknown topics and auto-creation ---------------------------------------------------------


@pytest.mark.parametrize(("version", "allow", "enabled", "created"), [
    (0, True, "true", True), (3, False, "true", True),  # before v4 the request cannot refuse
    (3, True, "false", False),
    (4, True, "true", True), (4, False, "true", False), (4, True, "false", False),
    (9, True, "true", True), (12, True, "true", True), (12, False, "true", False),
    (12, True, "false", False), (12, False, "false", False)])
def test_unknown_topics_and_auto_creation(tmp_path: Path, version: int, allow: bool,
                                          enabled: str, created: bool) -> None:
    broker = open_node(tmp_path, **{"auto.create.topics.enable": enabled})
    try:
        response = metadata(broker, version, ["new"], allow=allow)
        [t] = response.topics
        known = broker.cluster.get("new")
        if created:
            assert known is not None and known.partitions == 3  # num.partitions
            assert broker.partitions.log("new", 2) is not None
            # created synchronously and answered ready (not LEADER_NOT_AVAILABLE)
            assert summary(response) == [(ErrorCode.NONE, "new", False, 3)]
            assert [p.leader_id for p in t.partitions] == [NODE] * 3
            assert t.topic_id == (known.topic_id if version >= 10 else ZERO_UUID)
        else:
            assert known is None
            assert summary(response) == [(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "new", False, 0)]
            assert t.topic_id == ZERO_UUID
    finally:
        broker.close()


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "with space", "sl/ash", "ünï"])
@pytest.mark.parametrize(("version", "allow"), [(1, True), (4, False), (12, True), (12, False)])
def test_invalid_topic_names_are_never_created(broker: Broker, name: str, version: int,
                                                allow: bool) -> None:
    response = metadata(broker, version, [name, "a"], allow=allow)
    assert summary(response) == [(ErrorCode.INVALID_TOPIC_EXCEPTION, name, False, 0),
                                 (ErrorCode.NONE, "a", False, 1)]
    assert broker.cluster.get(name) is None


def test_invalid_names_with_auto_creation_disabled(tmp_path: Path) -> None:
    broker = open_node(tmp_path, **{"auto.create.topics.enable": "false"})
    try:
        assert summary(metadata(broker, 12, ["bad name"])) == [
            (ErrorCode.INVALID_TOPIC_EXCEPTION, "bad name", False, 0)]
    finally:
        broker.close()


@pytest.mark.parametrize("version", [1, 9, 12])
def test_internal_topics_are_not_auto_created_and_are_flagged(broker: Broker,
                                                               version: int) -> None:
    response = metadata(broker, version, ["__consumer_offsets", "__transaction_state",
                                          "__not_internal"])
    # Kafka flags an unknown internal name as internal too (Topic.isInternal)
    assert summary(response) == [
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "__consumer_offsets", True, 0),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "__transaction_state", True, 0),
        (ErrorCode.NONE, "__not_internal", False, 3)]  # a legal, ordinary name
    assert broker.cluster.get("__consumer_offsets") is None
    assert broker.cluster.get("__transaction_state") is None
    broker.cluster.create_topic("__transaction_state", 2, {})  # as its coordinator does
    assert summary(metadata(broker, version, ["__transaction_state"])) == [
        (ErrorCode.NONE, "__transaction_state", True, 2)]


# -- topic ids --------------------------------------------------------------------------------


def test_topics_by_id_from_v12(broker: Broker) -> None:
    """Unknown ids first, then the known topics (Kafka 4.4's order)."""
    unknown = uuid.uuid4()
    response = metadata(broker, 12, [topic_id(broker, "b"), unknown])
    missing, known = response.topics
    assert (known.error_code, known.name, known.topic_id, len(known.partitions)) == (
        ErrorCode.NONE, "b", topic_id(broker, "b"), 2)
    assert (missing.error_code, missing.name, missing.topic_id, missing.is_internal,
            missing.partitions, missing.topic_authorized_operations) == (
        ErrorCode.UNKNOWN_TOPIC_ID, None, unknown, False, [], NOT_REQUESTED)
    assert sorted(t.name for t in broker.cluster) == ["a", "b"]  # ids never auto-create


@pytest.mark.parametrize("version", [12, 13])
def test_a_request_with_ids_is_answered_by_ids_alone(broker: Broker, version: int) -> None:
    """As Kafka 4.4 answers (probed): the Java consumer asks for the topics of a KIP-848
    assignment by id with the name "" (MetadataRequestTopic's default), not null; any name
    beside an id is ignored; once one entry has an id, entries without one are dropped (not
    auto-created); a repeated id is answered once; unknown ids come first."""
    a, b, unknown = topic_id(broker, "a"), topic_id(broker, "b"), uuid.uuid4()

    def ask(*topics: tuple[str | None, uuid.UUID]) -> list[tuple[Any, ...]]:
        req = Req(allow_auto_topic_creation=True, topics=[
            Req.MetadataRequestTopic(name=name, topic_id=tid) for name, tid in topics])
        return [(t.error_code, t.name, t.topic_id, len(t.partitions))
                for t in call(broker, KEY, version, req).topics]

    assert ask(("", b)) == [(ErrorCode.NONE, "b", b, 2)]
    assert ask(("a", b), ("no-such-topic", a)) == [(ErrorCode.NONE, "b", b, 2), (ErrorCode.NONE, "a", a, 1)]
    assert ask(("new-topic", ZERO_UUID), ("", a), ("", a)) == [(ErrorCode.NONE, "a", a, 1)]
    assert ask(("", a), ("", unknown)) == [(ErrorCode.UNKNOWN_TOPIC_ID, None, unknown, 0),
                                           (ErrorCode.NONE, "a", a, 1)]
    assert sorted(t.name for t in broker.cluster) == ["a", "b"]


@pytest.mark.parametrize("version", [10, 11])
def test_topic_ids_in_requests_before_v12_are_invalid(broker: Broker, version: int) -> None:
    """Kafka: "Topic name can not be null" / "Topic IDs are not supported in requests for
    version 10/11", answered as MetadataRequest.getErrorResponse: INVALID_REQUEST for every
    requested topic, with no brokers."""
    known, unknown = topic_id(broker, "a"), uuid.uuid4()
    req = Req(topics=[Req.MetadataRequestTopic(name=None, topic_id=known),
                      Req.MetadataRequestTopic(name="b"),
                      Req.MetadataRequestTopic(name=None, topic_id=unknown)])
    response = call(broker, KEY, version, req)
    assert [(t.error_code, t.name, t.topic_id, t.is_internal, t.partitions)
            for t in response.topics] == [
        (ErrorCode.INVALID_REQUEST, "", known, False, []),
        (ErrorCode.INVALID_REQUEST, "b", ZERO_UUID, False, []),
        (ErrorCode.INVALID_REQUEST, "", unknown, False, [])]
    assert (response.brokers, response.controller_id) == ([], -1)
    named_with_id = Req(topics=[Req.MetadataRequestTopic(name="a", topic_id=known)])
    [t] = call(broker, KEY, version, named_with_id).topics
    assert (t.error_code, t.name, t.topic_id) == (ErrorCode.INVALID_REQUEST, "a", known)


# -- authorized operations --------------------------------------------------------------------


@pytest.mark.parametrize("version", range(8, 13))
def test_topic_authorized_operations_when_requested(broker: Broker, version: int) -> None:
    response = metadata(broker, version, ["a", "created", "bad name"], topic_ops=True)
    assert [(t.error_code, t.topic_authorized_operations) for t in response.topics] == [
        (ErrorCode.NONE, TOPIC_OPS), (ErrorCode.NONE, TOPIC_OPS),
        (ErrorCode.INVALID_TOPIC_EXCEPTION, TOPIC_OPS)]  # Kafka sets them on errors too
    response = metadata(broker, version, None, topic_ops=True)
    assert {t.topic_authorized_operations for t in response.topics} == {TOPIC_OPS}
    response = metadata(broker, version, ["a", "bad name"])
    assert [t.topic_authorized_operations for t in response.topics] == [NOT_REQUESTED] * 2


@pytest.mark.parametrize("version", [0, 4, 7])
def test_no_authorized_operations_before_v8(broker: Broker, version: int) -> None:
    response = metadata(broker, version, ["a"], topic_ops=True, cluster_ops=True)
    assert response.topics[0].topic_authorized_operations == NOT_REQUESTED
    assert response.cluster_authorized_operations == NOT_REQUESTED


@pytest.mark.parametrize(("version", "expected"), [
    (8, CLUSTER_OPS), (10, CLUSTER_OPS), (11, NOT_REQUESTED), (12, NOT_REQUESTED)])
def test_cluster_authorized_operations_v8_to_v10(broker: Broker, version: int,
                                                 expected: int) -> None:
    assert metadata(broker, version, [], cluster_ops=True).cluster_authorized_operations == expected
    assert metadata(broker, version, []).cluster_authorized_operations == NOT_REQUESTED
