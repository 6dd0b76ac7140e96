from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_testutil import call, open_broker, produce

from odradek.broker.broker import Broker
from odradek.broker.storage.leader_epoch import LeaderEpochCache
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.offset_for_leader_epoch import OffsetForLeaderEpochRequest

Req = OffsetForLeaderEpochRequest
KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path)
    b.cluster.create_topic("t", 2, {})
    produce(b, "t", 0, [1, 2, 3])
    produce(b, "t", 0, [4])
    yield b
    b.close()


def ask(broker: Broker, version: int, *parts: tuple[str, int, int], current: int = -1):  # type: ignore[no-untyped-def]
    topics: dict[str, list[Req.OffsetForLeaderPartition]] = {}
    for name, p, epoch in parts:
        topics.setdefault(name, []).append(Req.OffsetForLeaderPartition(
            partition=p, leader_epoch=epoch, current_leader_epoch=current))
    req = Req(replica_id=-1, topics=[Req.OffsetForLeaderTopic(topic=n, partitions=ps)
                                     for n, ps in topics.items()])
    resp = call(broker, KEY, version, req)
    return [(t.topic, p) for t in resp.topics for p in t.partitions]


@pytest.mark.parametrize("version", range(5))
def test_current_epoch_ends_at_log_end(broker: Broker, version: int) -> None:
    [(topic, p)] = ask(broker, version, ("t", 0, 0))
    assert (topic, p.partition, p.error_code, p.end_offset) == ("t", 0, ErrorCode.NONE, 4)
    if version >= 1:
        assert p.leader_epoch == 0


def test_empty_partition_knows_the_current_epoch(broker: Broker) -> None:
    [(_, p)] = ask(broker, 4, ("t", 1, 0))
    assert (p.error_code, p.leader_epoch, p.end_offset) == (ErrorCode.NONE, 0, 0)


@pytest.mark.parametrize("epoch", [1, 7, -1])
def test_unknown_epochs(broker: Broker, epoch: int) -> None:
    [(_, p)] = ask(broker, 4, ("t", 0, epoch))
    assert (p.error_code, p.leader_epoch, p.end_offset) == (ErrorCode.NONE, -1, -1)


def test_history_of_several_epochs(broker: Broker) -> None:
    broker.cluster.create_topic("h", 1, {})
    produce(broker, "h", 0, [1, 1], epoch=2)  # 0-1
    produce(broker, "h", 0, [1], epoch=5)  # 2
    produce(broker, "h", 0, [1, 1, 1], epoch=9)  # 3-5
    got = {epoch: ask(broker, 3, ("h", 0, epoch))[0][1] for epoch in (0, 2, 3, 5, 8, 9, 10)}
    answers = {e: (p.leader_epoch, p.end_offset) for e, p in got.items()}
    assert answers == {
        0: (0, 0),  # older than every known epoch: the first known one's start
        2: (2, 2), 3: (2, 2), 5: (5, 3), 8: (5, 3),
        9: (9, 6),  # the latest epoch ends at the log end
        10: (-1, -1),
    }


@pytest.mark.parametrize(("current", "code"), [
    (-1, ErrorCode.NONE), (0, ErrorCode.NONE), (1, ErrorCode.UNKNOWN_LEADER_EPOCH),
    (-3, ErrorCode.FENCED_LEADER_EPOCH)])
def test_current_leader_epoch(broker: Broker, current: int, code: ErrorCode) -> None:
    [(_, p)] = ask(broker, 4, ("t", 0, 0), current=current)
    assert p.error_code == code
    [(_, old)] = ask(broker, 1, ("t", 0, 0), current=current)  # no such field before v2
    assert old.error_code == ErrorCode.NONE


def test_unknown_partitions(broker: Broker) -> None:
    got = ask(broker, 4, ("t", 5, 0), ("nope", 0, 0), ("t", 0, 0))
    assert [(t, p.partition, p.error_code) for t, p in got] == [
        ("t", 5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ("t", 0, ErrorCode.NONE),
        ("nope", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]


def test_end_offset_for_epoch_matches_kafkas_cache(tmp_path: Path) -> None:
    def end_offset_for_epoch(entries: list[tuple[int, int]], requested: int,
                             log_end_offset: int) -> tuple[int, int]:
        cache = LeaderEpochCache(tmp_path)
        for epoch, start in entries:
            cache.assign(epoch, start, persist=False)
        return cache.end_offset_for(requested, log_end_offset)

    entries = [(1, 10), (4, 20), (6, 35)]
    assert end_offset_for_epoch(entries, 6, 50) == (6, 50)
    assert end_offset_for_epoch(entries, 5, 50) == (4, 35)
    assert end_offset_for_epoch(entries, 4, 50) == (4, 35)
    assert end_offset_for_epoch(entries, 1, 50) == (1, 20)
    assert end_offset_for_epoch(entries, 0, 50) == (0, 10)
    assert end_offset_for_epoch(entries, 7, 50) == (-1, -1)
    assert end_offset_for_epoch(entries, -1, 50) == (-1, -1)
    assert end_offset_for_epoch([], 0, 50) == (-1, -1)
