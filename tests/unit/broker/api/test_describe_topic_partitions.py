"""DescribeTopicPartitions (key 75) v0: paging with the cursor and the limits, errors as
Kafka's DescribeTopicPartitionsRequestHandler answers them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.broker.api.metadata import TOPIC_OPS_ALL
from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.describe_topic_partitions import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
)
from odradek.wire.primitives import ZERO_UUID

KEY = ApiKey.DESCRIBE_TOPIC_PARTITIONS
Req = DescribeTopicPartitionsRequest


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path)
    for name, partitions in (("b", 3), ("a", 2), ("c", 4)):
        b.cluster.create_topic(name, partitions, {})
    yield b
    b.close()


def describe(broker: Broker, names: list[str], limit: int = 2000,
             cursor: tuple[str, int] | None = None) -> DescribeTopicPartitionsResponse:
    request = Req(topics=[Req.TopicRequest(name=n) for n in names],
                  response_partition_limit=limit,
                  cursor=None if cursor is None else Req.Cursor(topic_name=cursor[0],
                                                                 partition_index=cursor[1]))
    response: DescribeTopicPartitionsResponse = call(broker, KEY, 0, request)
    return response


def shape(response: DescribeTopicPartitionsResponse) -> list[tuple[str | None, int, list[int]]]:
    return [(t.name, t.error_code, [p.partition_index for p in t.partitions])
            for t in response.topics]


def cursor_of(response: DescribeTopicPartitionsResponse) -> tuple[str, int] | None:
    c = response.next_cursor
    return None if c is None else (c.topic_name, c.partition_index)


def test_every_topic_sorted_with_its_partitions(broker: Broker) -> None:
    r = describe(broker, [])
    assert shape(r) == [("a", 0, [0, 1]), ("b", 0, [0, 1, 2]), ("c", 0, [0, 1, 2, 3])]
    assert cursor_of(r) is None
    node = broker.node_id
    a = r.topics[0]
    assert a.topic_id == broker.cluster.get("a").topic_id  # type: ignore[union-attr]
    assert (a.is_internal, a.topic_authorized_operations) == (False, TOPIC_OPS_ALL)
    p = a.partitions[1]
    assert (p.error_code, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes,
            p.eligible_leader_replicas, p.last_known_elr, p.offline_replicas) == (
        ErrorCode.NONE, node, 0, [node], [node], [], [], [])


def test_paging_walks_every_partition_once(broker: Broker) -> None:
    seen: list[tuple[str | None, int]] = []
    cursor: tuple[str, int] | None = None
    pages = 0
    while True:
        r = describe(broker, [], limit=2, cursor=cursor)
        pages += 1
        seen += [(t.name, p.partition_index) for t in r.topics for p in t.partitions]
        assert sum(len(t.partitions) for t in r.topics) <= 2
        cursor = cursor_of(r)
        if cursor is None:
            break
    assert pages == 5  # 9 partitions, 2 a page; the last page of one partition ends it
    assert seen == [(n, p) for n, count in (("a", 2), ("b", 3), ("c", 4)) for p in range(count)]


def test_cursor_cuts_a_topic_or_points_at_the_next_one(broker: Broker) -> None:
    r = describe(broker, [], limit=3)
    assert shape(r) == [("a", 0, [0, 1]), ("b", 0, [0])]
    assert cursor_of(r) == ("b", 1)
    r = describe(broker, [], limit=2)  # "a" takes it exactly: the cursor names "b" at 0
    assert shape(r) == [("a", 0, [0, 1])]
    assert cursor_of(r) == ("b", 0)
    r = describe(broker, ["c", "a"], limit=10, cursor=("c", 2))  # names before it are left
    assert shape(r) == [("c", 0, [2, 3])]


def test_limits_are_clamped(broker: Broker, tmp_path: Path) -> None:
    assert cursor_of(describe(broker, [], limit=0)) == ("a", 1)  # at least one partition
    small = open_broker(tmp_path / "small", **{"max.request.partition.size.limit": "4"})
    small.cluster.create_topic("t", 10, {})
    r = describe(small, [], limit=2000)
    assert shape(r) == [("t", 0, [0, 1, 2, 3])]
    assert cursor_of(r) == ("t", 4)
    small.close()


def test_unknown_and_illegal_names(broker: Broker) -> None:
    r = describe(broker, ["nope", "a", "bad/name", "a"])
    assert shape(r) == [("a", 0, [0, 1]),
                        ("bad/name", ErrorCode.INVALID_TOPIC_EXCEPTION, []),
                        ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
    assert r.topics[2].topic_id == ZERO_UUID
    missing = describe(broker, ["__consumer_offsets"])
    assert shape(missing) == [("__consumer_offsets", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
    assert missing.topics[0].is_internal


@pytest.mark.parametrize("cursor", [("x", 0), ("a", -1)])
def test_a_bad_cursor_is_an_invalid_request_for_every_topic(
    broker: Broker, cursor: tuple[str, int]
) -> None:
    r = describe(broker, ["a", "b"], cursor=cursor)
    assert shape(r) == [("a", ErrorCode.INVALID_REQUEST, []), ("b", ErrorCode.INVALID_REQUEST, [])]
    assert cursor_of(r) is None
