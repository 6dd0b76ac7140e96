from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_testutil import call, open_broker, produce

from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.delete_records import DeleteRecordsRequest

Req = DeleteRecordsRequest
KEY = ApiKey.DELETE_RECORDS


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path)
    # tiny segments: every batch rolls a new one
    b.cluster.create_topic("t", 2, {"internal.segment.bytes": "100"})
    for i in range(5):
        produce(b, "t", 0, [1000 + i, 1000 + i])  # offsets 2i, 2i+1
    yield b
    b.close()


def delete(broker: Broker, version: int, *parts: tuple[str, int, int]):  # type: ignore[no-untyped-def]
    topics: dict[str, list[Req.DeleteRecordsPartition]] = {}
    for name, p, offset in parts:
        topics.setdefault(name, []).append(Req.DeleteRecordsPartition(partition_index=p, offset=offset))
    req = Req(topics=[Req.DeleteRecordsTopic(name=n, partitions=ps) for n, ps in topics.items()],
              timeout_ms=1000)
    return call(broker, KEY, version, req).topics


def result(topics, name: str, partition: int):  # type: ignore[no-untyped-def]
    [t] = [t for t in topics if t.name == name]
    [p] = [p for p in t.partitions if p.partition_index == partition]
    return p


@pytest.mark.parametrize("version", range(3))
def test_moves_log_start_and_drops_segments(broker: Broker, version: int) -> None:
    plog = broker.partitions.log("t", 0)
    assert plog is not None and len(plog.segments) >= 5
    r = result(delete(broker, version, ("t", 0, 5)), "t", 0)
    assert (r.error_code, r.low_watermark) == (ErrorCode.NONE, 5)
    assert plog.log_start_offset == 5
    assert all(s.next_offset > 5 for s in plog.segments)  # wholly-below segments are gone
    # a lower offset changes nothing and answers the current start
    r = result(delete(broker, version, ("t", 0, 2)), "t", 0)
    assert (r.error_code, r.low_watermark) == (ErrorCode.NONE, 5)


def test_minus_one_means_high_watermark(broker: Broker) -> None:
    r = result(delete(broker, 2, ("t", 0, -1)), "t", 0)
    plog = broker.partitions.log("t", 0)
    assert plog is not None
    assert (r.error_code, r.low_watermark) == (ErrorCode.NONE, 10)
    assert plog.log_start_offset == plog.high_watermark == 10


@pytest.mark.parametrize("offset", [11, 1000, -2])
def test_out_of_range(broker: Broker, offset: int) -> None:
    r = result(delete(broker, 1, ("t", 0, offset)), "t", 0)
    assert (r.error_code, r.low_watermark) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
    assert broker.partitions.log("t", 0).log_start_offset == 0  # type: ignore[union-attr]


def test_per_partition_errors(broker: Broker) -> None:
    broker.cluster.create_topic("compacted", 1, {"cleanup.policy": "compact"})
    broker.cluster.create_topic("__consumer_offsets", 1, {})
    topics = delete(broker, 2, ("t", 1, 0), ("t", 9, 0), ("missing", 0, 0),
                    ("compacted", 0, 0), ("__consumer_offsets", 0, 0))
    assert [t.name for t in topics] == ["t", "missing", "compacted", "__consumer_offsets"]
    assert result(topics, "t", 1).error_code == ErrorCode.NONE
    assert result(topics, "t", 9).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert result(topics, "missing", 0).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert result(topics, "compacted", 0).error_code == ErrorCode.POLICY_VIOLATION
    assert result(topics, "__consumer_offsets", 0).error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_partition_named_twice_counts_once(broker: Broker) -> None:
    [t] = delete(broker, 2, ("t", 0, 3), ("t", 0, 4))
    assert [(p.partition_index, p.low_watermark) for p in t.partitions] == [(0, 4)]
