from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.create_partitions import CreatePartitionsRequest

Req = CreatePartitionsRequest
KEY = ApiKey.CREATE_PARTITIONS


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path)
    b.cluster.create_topic("t", 2, {})
    yield b
    b.close()


def grow(name: str, count: int, assignments: list[list[int]] | None = None) -> Req.CreatePartitionsTopic:
    t = Req.CreatePartitionsTopic(name=name, count=count, assignments=[
        Req.CreatePartitionsAssignment(broker_ids=ids) for ids in assignments or []])
    if assignments is None:
        t.assignments = None  # what clients send; the constructor turns None into []
    return t


def run(broker: Broker, version: int, *topics: Req.CreatePartitionsTopic,
        validate_only: bool = False):  # type: ignore[no-untyped-def]
    return call(broker, KEY, version, Req(topics=list(topics), validate_only=validate_only)).results


@pytest.mark.parametrize("version", range(4))
def test_increase(broker: Broker, version: int) -> None:
    [r] = run(broker, version, grow("t", 5))
    assert (r.name, r.error_code, r.error_message) == ("t", ErrorCode.NONE, None)
    assert broker.cluster.get("t").partitions == 5  # type: ignore[union-attr]
    assert all(broker.partitions.log("t", p) is not None for p in range(5))


def test_equal_and_decrease_refused(broker: Broker) -> None:
    [same] = run(broker, 3, grow("t", 2))
    assert same.error_code == ErrorCode.INVALID_PARTITIONS
    assert same.error_message == "Topic already has 2 partition(s)."
    [less] = run(broker, 3, grow("t", 1))
    assert less.error_code == ErrorCode.INVALID_PARTITIONS
    assert less.error_message == "The topic t currently has 2 partition(s); 1 would not be an increase."
    assert broker.cluster.get("t").partitions == 2  # type: ignore[union-attr]


def test_duplicates_and_unknown(broker: Broker) -> None:
    broker.cluster.create_topic("u", 1, {})
    results = run(broker, 2, grow("t", 3), grow("missing", 3), grow("t", 4), grow("u", 2))
    assert [(r.name, r.error_code) for r in results] == [
        ("t", ErrorCode.INVALID_REQUEST), ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("u", ErrorCode.NONE)]
    assert broker.cluster.get("t").partitions == 2  # type: ignore[union-attr]
    assert broker.cluster.get("u").partitions == 2  # type: ignore[union-attr]


def test_validate_only(broker: Broker) -> None:
    [r] = run(broker, 1, grow("t", 4), validate_only=True)
    assert r.error_code == ErrorCode.NONE
    assert broker.cluster.get("t").partitions == 2  # type: ignore[union-attr]
    assert broker.partitions.log("t", 2) is None
    [bad] = run(broker, 1, grow("t", 1), validate_only=True)
    assert bad.error_code == ErrorCode.INVALID_PARTITIONS


def test_assignments(broker: Broker) -> None:
    node = broker.node_id
    [ok] = run(broker, 3, grow("t", 4, [[node], [node]]))
    assert ok.error_code == ErrorCode.NONE
    cases = {
        "too few": grow("t", 7, [[node]]),
        "other broker": grow("t", 5, [[node + 1]]),
        "twice": grow("t", 5, [[node, node]]),
        "empty": grow("t", 5, [[]]),
    }
    for what, topic in cases.items():
        [r] = run(broker, 3, topic)
        assert r.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT, what
    assert broker.cluster.get("t").partitions == 4  # type: ignore[union-attr]


def test_oversized_refused(broker: Broker) -> None:
    [r] = run(broker, 3, grow("t", 20_000), validate_only=True)
    assert r.error_code == ErrorCode.POLICY_VIOLATION


def test_empty_assignment_list_means_none(broker: Broker) -> None:
    [r] = run(broker, 3, grow("t", 3, []))
    assert r.error_code == ErrorCode.NONE
    assert broker.cluster.get("t").partitions == 3  # type: ignore[union-attr]
