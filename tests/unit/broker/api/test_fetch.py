"""Fetch handler on a real Broker, through the codec both ways: long polling (on the partitions
port's append event, with a fake clock where timing matters), KIP-74 byte limits, read_committed
and aborted transactions, per-partition errors, at the versions where the wire differs."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import admin_testutil
import anyio
import anyio.lowlevel
import pytest
from admin_testutil import acall, call, open_broker

from odradek.broker.api import fetch as fetch_api
from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.fetch import FetchRequest
from odradek.wire._generated.produce import ProduceRequest
from odradek.wire.records import build_batch, build_control_batch, iter_batches

F = FetchRequest
KEY = ApiKey.FETCH
MiB = 1 << 20
VALUE = b"x" * 100
S = len(build_batch([(b"k", VALUE)]))  # the size of every one-record batch `raw` builds
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
VERSIONS = [4, 7, 11, 12, 13, 15, 17, 18]


@pytest.fixture(autouse=True, params=[False, True], ids=["copy", "zero-copy"])
def zero_copy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Every test both ways: records read as bytes, and as file regions of the segments."""
    monkeypatch.setattr(admin_testutil, "ZERO_COPY", request.param)
    return bool(request.param)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path)
    b.cluster.create_topic("t", 3, {})
    yield b
    b.close()


def raw(records: int = 1, **kw: Any) -> bytes:
    """Timestamped now: old timestamps would make the log roll a segment (log.roll.ms), and
    a fetch reads from one segment only."""
    return build_batch([(b"k", VALUE)] * records, **kw)


def append(broker: Broker, partition: int, data: bytes, topic: str = "t") -> int:
    """Append straight to the log (no wake-up); returns the batch's first offset."""
    plog = broker.partitions.log(topic, partition)
    assert plog is not None
    return plog.append(memoryview(bytearray(data)), leader_epoch=0,
                       now_ms=broker.now_ms()).first_offset


def marker(broker: Broker, partition: int, pid: int, commit: bool) -> int:
    """A COMMIT/ABORT control batch for producer `pid` (epoch 0), as the coordinator writes."""
    data = build_control_batch(commit=commit, producer_id=pid, producer_epoch=0,
                               coordinator_epoch=0, timestamp_ms=broker.now_ms())
    return broker.partitions.append_internal("t", partition, memoryview(bytearray(data)),
                                             broker.now_ms()).first_offset


def txn(pid: int, seq: int, records: int = 1) -> bytes:
    return raw(records, producer_id=pid, producer_epoch=0, base_sequence=seq,
               is_transactional=True)


Part = tuple[Any, ...]  # (topic name or id, partition, fetch offset[, partition max bytes])


def request(broker: Broker, version: int, parts: Sequence[Part], *, max_wait: int = 0,
            min_bytes: int = 0, max_bytes: int = 64 * MiB, isolation: int = READ_UNCOMMITTED,
            epoch: int = -1, session_id: int = 0, session_epoch: int = -1) -> FetchRequest:
    """Consecutive parts of one topic share a FetchTopic; v13+ names topics by id."""
    topics = []
    for topic, group in itertools.groupby(parts, key=lambda p: p[0]):
        partitions = [F.FetchPartition(partition=p[1], fetch_offset=p[2],
                                       partition_max_bytes=p[3] if len(p) > 3 else MiB,
                                       current_leader_epoch=epoch) for p in group]
        if version >= 13:
            known = broker.cluster.get(topic) if isinstance(topic, str) else None
            topic_id = known.topic_id if known else topic
            topics.append(F.FetchTopic(topic_id=topic_id, partitions=partitions))
        else:
            topics.append(F.FetchTopic(topic=topic, partitions=partitions))
    return F(max_wait_ms=max_wait, min_bytes=min_bytes, max_bytes=max_bytes,
             isolation_level=isolation, session_id=session_id, session_epoch=session_epoch,
             topics=topics)


def fetch(broker: Broker, *parts: Part, version: int = 12, **kw: Any) -> Any:
    return call(broker, KEY, version, request(broker, version, parts, **kw))


def partitions(response: Any, version: int = 12) -> list[tuple[Any, Any]]:
    """((topic name, or id from v13), partition data) in response order."""
    return [(t.topic_id if version >= 13 else t.topic, p)
            for t in response.responses for p in t.partitions]


def only(response: Any) -> Any:
    [(_, p)] = partitions(response)
    return p


def batches(records: Any) -> list[tuple[int, int]]:
    """(base offset, last offset) of each whole batch in a records field."""
    assert records is not None  # empty records are zero length, never null
    return [(b.base_offset, b.next_offset - 1) for b in iter_batches(bytes(records))]


def no_waiting(monkeypatch: pytest.MonkeyPatch, broker: Broker) -> None:
    async def must_not_wait(watch: Any, timeout_s: float) -> None:
        raise AssertionError(f"the fetch parked (for {timeout_s}s)")

    monkeypatch.setattr(broker.partitions, "wait", must_not_wait)


def produce_request(partition: int, data: bytes) -> ProduceRequest:
    P = ProduceRequest
    return P(acks=-1, timeout_ms=1000, topic_data=[P.TopicProduceData(
        name="t", partition_data=[P.PartitionProduceData(index=partition, records=data)])])


# -- long polling -----------------------------------------------------------------------------


def test_long_poll_is_answered_by_an_append(broker: Broker, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    parked = []
    real_wait = broker.partitions.wait

    async def wait(watch: Any, timeout_s: float) -> None:
        parked.append(timeout_s)
        await real_wait(watch, timeout_s)

    monkeypatch.setattr(broker.partitions, "wait", wait)
    got: dict[str, Any] = {}

    async def main() -> None:
        broker.partitions.start()  # on this loop: appends now wake waiters
        req = request(broker, 12, [("t", 0, 0), ("t", 1, 0)], max_wait=30_000, min_bytes=1)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                async def fetcher() -> None:
                    start = time.monotonic()
                    got["response"] = await acall(broker, KEY, 12, req)
                    got["elapsed"] = time.monotonic() - start

                tg.start_soon(fetcher)
                while not parked and "response" not in got:  # until the fetch has parked
                    await anyio.lowlevel.checkpoint()
                assert "response" not in got  # it found nothing and waits
                produced = await acall(broker, ApiKey.PRODUCE, 9, produce_request(1, raw(2)))
                assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NONE

    anyio.run(main)
    assert got["elapsed"] < 5  # well before max_wait (30 s)
    assert len(parked) == 1  # one wake-up was enough
    (_, p0), (_, p1) = partitions(got["response"])
    assert (p0.error_code, batches(p0.records), p0.high_watermark) == (ErrorCode.NONE, [], 0)
    assert (p1.error_code, batches(p1.records), p1.high_watermark) == (ErrorCode.NONE, [(0, 1)], 2)


def test_long_poll_ends_at_max_wait_with_what_is_there(broker: Broker) -> None:
    append(broker, 0, raw(3))  # 0-2: fewer bytes than min_bytes
    got: dict[str, Any] = {}

    async def main() -> None:
        broker.partitions.start()
        start = time.monotonic()
        got["response"] = await acall(broker, KEY, 12, request(
            broker, 12, [("t", 0, 0), ("t", 1, 0)], max_wait=100, min_bytes=MiB))
        got["elapsed"] = time.monotonic() - start

    anyio.run(main)
    assert 0.1 <= got["elapsed"] < 5
    (_, p0), (_, p1) = partitions(got["response"])
    assert (p0.error_code, batches(p0.records), p0.high_watermark) == (ErrorCode.NONE, [(0, 2)], 3)
    assert (p1.error_code, bytes(p1.records), p1.high_watermark) == (ErrorCode.NONE, b"", 0)


def test_a_wake_up_below_min_bytes_waits_again_for_the_time_left(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]  # the handler's clock, moved only by the fake wait
    monkeypatch.setattr(fetch_api, "time", SimpleNamespace(monotonic=lambda: now[0]))
    waits: list[float] = []

    async def wait(watch: Any, timeout_s: float) -> None:
        waits.append(timeout_s)
        if len(waits) == 1:  # 400 ms later one batch arrives: still below min_bytes
            now[0] += 0.4
            append(broker, 0, raw())
        else:  # nothing more arrives before the deadline
            now[0] += timeout_s

    monkeypatch.setattr(broker.partitions, "wait", wait)
    response = fetch(broker, ("t", 0, 0), max_wait=1000, min_bytes=2 * S)
    assert waits == [pytest.approx(1.0), pytest.approx(0.6)]
    assert batches(only(response).records) == [(0, 0)]
    assert now[0] == pytest.approx(101.0)


def test_a_second_append_reaching_min_bytes_answers_before_the_deadline(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(fetch_api, "time", SimpleNamespace(monotonic=lambda: now[0]))
    waits: list[float] = []

    async def wait(watch: Any, timeout_s: float) -> None:
        waits.append(timeout_s)
        now[0] += 0.1
        append(broker, 0, raw())

    monkeypatch.setattr(broker.partitions, "wait", wait)
    response = fetch(broker, ("t", 0, 0), max_wait=1000, min_bytes=2 * S)
    assert waits == [pytest.approx(1.0), pytest.approx(0.9)]
    assert batches(only(response).records) == [(0, 0), (1, 1)]


def test_min_bytes_already_there_answers_without_waiting(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    append(broker, 0, raw(2))
    no_waiting(monkeypatch, broker)
    response = fetch(broker, ("t", 0, 0), ("t", 1, 0), max_wait=30_000, min_bytes=S)
    (_, p0), (_, p1) = partitions(response)
    assert batches(p0.records) == [(0, 1)]
    assert batches(p1.records) == []


@pytest.mark.parametrize(("bad", "code"), [
    (("t", 7, 0), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    (("missing", 0, 0), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    (("t", 1, 5), ErrorCode.OFFSET_OUT_OF_RANGE)])
def test_a_partition_error_answers_without_waiting(
        broker: Broker, monkeypatch: pytest.MonkeyPatch, bad: Part, code: ErrorCode) -> None:
    no_waiting(monkeypatch, broker)
    response = fetch(broker, ("t", 0, 0), bad, max_wait=30_000, min_bytes=1)
    (_, good), (_, failed) = partitions(response)
    assert (good.error_code, bytes(good.records)) == (ErrorCode.NONE, b"")
    assert (failed.error_code, bytes(failed.records)) == (code, b"")


def test_a_fetch_for_no_partitions_answers_without_waiting(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    no_waiting(monkeypatch, broker)  # Kafka answers an empty full fetch at once
    response = fetch(broker, max_wait=30_000, min_bytes=1)
    assert (response.error_code, response.session_id, response.responses) == (
        ErrorCode.NONE, 0, [])
    req = F(max_wait_ms=30_000, min_bytes=1, topics=[F.FetchTopic(topic="t", partitions=[])])
    response = call(broker, KEY, 12, req)
    assert [(t.topic, t.partitions) for t in response.responses] == [("t", [])]


# -- bytes: KIP-74 and whole batches ----------------------------------------------------------


def test_the_first_batch_of_the_first_non_empty_partition_comes_whole(broker: Broker) -> None:
    big = raw(10)  # 10 records, several times S
    append(broker, 1, big)  # 0-9
    append(broker, 1, raw())  # 10
    append(broker, 2, raw())  # 0
    # partition 0 is empty; limits far below one batch
    response = fetch(broker, ("t", 0, 0, 10), ("t", 1, 0, 10), ("t", 2, 0, 10), max_bytes=10)
    (_, p0), (_, p1), (_, p2) = partitions(response)
    assert batches(p0.records) == []
    assert batches(p1.records) == [(0, 9)]  # whole, and only the first batch
    assert len(p1.records) == len(big)
    assert batches(p2.records) == []  # the budget is spent: no batch, not even a small one
    assert [p.error_code for p in (p0, p1, p2)] == [ErrorCode.NONE] * 3
    assert p2.high_watermark == 1


def test_partition_max_bytes_alone_does_not_cut_the_first_batch(broker: Broker) -> None:
    append(broker, 0, raw(4))  # 0-3
    append(broker, 0, raw())  # 4
    [(_, p)] = partitions(fetch(broker, ("t", 0, 0, 1)))  # max_bytes is large
    assert batches(p.records) == [(0, 3)]


def test_later_partitions_get_the_remaining_budget(broker: Broker) -> None:
    for p in range(3):
        for _ in range(3):
            append(broker, p, raw())  # offsets 0, 1, 2: one batch of size S each
    response = fetch(broker, ("t", 0, 0, 2 * S + 1), ("t", 1, 0, 2 * S + 1),
                     ("t", 2, 0, 2 * S + 1), max_bytes=3 * S + S // 2)
    (_, p0), (_, p1), (_, p2) = partitions(response)
    assert batches(p0.records) == [(0, 0), (1, 1)]  # partition_max_bytes: two batches
    assert batches(p1.records) == [(0, 0)]  # 1.5 S left of max_bytes: one batch
    assert batches(p2.records) == []  # 0.5 S left: not a whole batch, so none
    assert len(p0.records) + len(p1.records) <= 3 * S + S // 2


def test_a_fetch_offset_inside_a_batch_returns_that_whole_batch(broker: Broker) -> None:
    first = raw(5)
    append(broker, 0, first)  # 0-4
    append(broker, 0, raw(2))  # 5-6
    p = only(fetch(broker, ("t", 0, 3)))
    assert batches(p.records) == [(0, 4), (5, 6)]
    p = only(fetch(broker, ("t", 0, 3, len(first))))
    assert batches(p.records) == [(0, 4)]
    assert bytes(p.records)[16:] == first[16:]  # as produced but base offset, leader epoch
    assert batches(only(fetch(broker, ("t", 0, 6))).records) == [(5, 6)]
    assert batches(only(fetch(broker, ("t", 0, 7))).records) == []  # at the log end


def test_records_stop_at_the_high_watermark(broker: Broker) -> None:
    append(broker, 0, raw(2))  # 0-1
    append(broker, 0, raw(2))  # 2-3
    plog = broker.partitions.log("t", 0)
    assert plog is not None
    plog.high_watermark = 2  # as if 2-3 were not replicated yet
    p = only(fetch(broker, ("t", 0, 0)))
    assert (batches(p.records), p.high_watermark) == ([(0, 1)], 2)
    p = only(fetch(broker, ("t", 0, 3)))  # between the HW and the log end: empty, no error
    assert (p.error_code, batches(p.records)) == (ErrorCode.NONE, [])


# -- read_committed ---------------------------------------------------------------------------

A, B, C = 1000, 2000, 3000  # producer ids


def test_read_committed_stops_at_the_lso_and_read_uncommitted_at_the_hw(broker: Broker) -> None:
    append(broker, 0, raw(2))  # 0-1
    append(broker, 0, txn(A, 0, 3))  # 2-4: open transaction
    append(broker, 0, raw())  # 5
    committed = only(fetch(broker, ("t", 0, 0), isolation=READ_COMMITTED))
    assert (committed.high_watermark, committed.last_stable_offset) == (6, 2)
    assert batches(committed.records) == [(0, 1)]
    assert committed.aborted_transactions == []
    at_lso = only(fetch(broker, ("t", 0, 2), isolation=READ_COMMITTED))
    assert (at_lso.error_code, batches(at_lso.records)) == (ErrorCode.NONE, [])
    uncommitted = only(fetch(broker, ("t", 0, 0)))
    assert (uncommitted.high_watermark, uncommitted.last_stable_offset) == (6, 2)
    assert batches(uncommitted.records) == [(0, 1), (2, 4), (5, 5)]
    assert uncommitted.aborted_transactions is None
    marker(broker, 0, A, commit=True)  # 6
    committed = only(fetch(broker, ("t", 0, 0), isolation=READ_COMMITTED))
    assert (committed.high_watermark, committed.last_stable_offset) == (7, 7)
    assert batches(committed.records) == [(0, 1), (2, 4), (5, 5), (6, 6)]  # marker included
    assert committed.aborted_transactions == []


@pytest.fixture
def aborted(broker: Broker) -> Broker:
    """B aborted first (marker at 3) though A began first; C committed."""
    append(broker, 0, txn(A, 0))  # 0
    append(broker, 0, txn(B, 0))  # 1
    append(broker, 0, txn(C, 0))  # 2
    assert marker(broker, 0, B, commit=False) == 3
    assert marker(broker, 0, C, commit=True) == 4
    append(broker, 0, txn(A, 1))  # 5
    assert marker(broker, 0, A, commit=False) == 6
    append(broker, 0, raw())  # 7
    return broker


def listed(p: Any) -> list[tuple[int, int]] | None:
    if p.aborted_transactions is None:
        return None
    return [(a.producer_id, a.first_offset) for a in p.aborted_transactions]


def test_aborted_transactions_are_listed_by_first_offset(aborted: Broker) -> None:
    p = only(fetch(aborted, ("t", 0, 0), isolation=READ_COMMITTED))
    assert (p.high_watermark, p.last_stable_offset) == (8, 8)
    assert batches(p.records) == [(i, i) for i in range(8)]
    assert listed(p) == [(A, 0), (B, 1)]
    assert listed(only(fetch(aborted, ("t", 0, 0)))) is None  # read_uncommitted: null


@pytest.mark.parametrize(("offset", "max_bytes", "expected"), [
    (0, S, [(A, 0)]),  # only batch 0 is returned: B (from 1) does not overlap it
    (1, S, [(A, 0), (B, 1)]),
    (3, MiB, [(A, 0), (B, 1)]),  # B's marker, at 3, is the last offset of B
    (4, MiB, [(A, 0)]),  # B is over; A runs from 0 to its marker at 6
    (7, MiB, []),
])
def test_aborted_transactions_overlapping_the_returned_batches(
        aborted: Broker, offset: int, max_bytes: int, expected: list[tuple[int, int]]) -> None:
    p = only(fetch(aborted, ("t", 0, offset, max_bytes), isolation=READ_COMMITTED))
    assert listed(p) == expected


# -- errors -----------------------------------------------------------------------------------


def test_offsets_outside_the_log_are_out_of_range(broker: Broker) -> None:
    for _ in range(4):
        append(broker, 0, raw())  # 0-3
    plog = broker.partitions.log("t", 0)
    assert plog is not None
    plog.delete_records_before(2)
    codes = {offset: only(fetch(broker, ("t", 0, offset))).error_code
             for offset in (-1, 0, 1, 2, 3, 4, 5, 100)}
    assert codes == {-1: ErrorCode.OFFSET_OUT_OF_RANGE, 0: ErrorCode.OFFSET_OUT_OF_RANGE,
                     1: ErrorCode.OFFSET_OUT_OF_RANGE, 2: ErrorCode.NONE, 3: ErrorCode.NONE,
                     4: ErrorCode.NONE, 5: ErrorCode.OFFSET_OUT_OF_RANGE,
                     100: ErrorCode.OFFSET_OUT_OF_RANGE}
    p = only(fetch(broker, ("t", 0, 2)))
    assert (batches(p.records), p.log_start_offset, p.high_watermark) == ([(2, 2), (3, 3)], 2, 4)
    assert bytes(only(fetch(broker, ("t", 0, 5))).records) == b""


def test_an_offset_out_of_range_is_found_after_the_budget_is_spent(broker: Broker) -> None:
    append(broker, 0, raw(10))
    append(broker, 1, raw())
    response = fetch(broker, ("t", 0, 0), ("t", 1, 9), ("t", 1, 0), max_bytes=S)
    (_, p0), (_, bad), (_, p1) = partitions(response)
    assert (p0.error_code, batches(p0.records)) == (ErrorCode.NONE, [(0, 9)])
    assert bad.error_code == ErrorCode.OFFSET_OUT_OF_RANGE  # as from Kafka: checked at 0 bytes
    assert (p1.error_code, batches(p1.records), p1.high_watermark) == (ErrorCode.NONE, [], 1)


@pytest.mark.parametrize("version", [4, 7, 11, 12])
def test_unknown_topics_and_partitions_by_name(broker: Broker, version: int) -> None:
    response = fetch(broker, ("missing", 0, 0), ("t", 3, 0), ("t", 0, 0), version=version)
    got = [(name, p.partition_index, p.error_code) for name, p in partitions(response, version)]
    assert got == [("missing", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                   ("t", 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ("t", 0, ErrorCode.NONE)]
    for _, p in partitions(response, version)[:2]:
        assert (bytes(p.records), p.high_watermark, p.last_stable_offset) == (b"", -1, -1)


@pytest.mark.parametrize("version", [13, 15, 17])
def test_topics_by_id(broker: Broker, version: int) -> None:
    unknown = uuid.uuid4()
    known = broker.cluster.get("t")
    assert known is not None
    append(broker, 0, raw())
    response = fetch(broker, (unknown, 0, 0), ("t", 3, 0), ("t", 0, 0), version=version)
    got = [(topic_id, p.partition_index, p.error_code)
           for topic_id, p in partitions(response, version)]
    assert got == [(unknown, 0, ErrorCode.UNKNOWN_TOPIC_ID),
                   (known.topic_id, 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),  # as Kafka
                   (known.topic_id, 0, ErrorCode.NONE)]
    assert [t.topic for t in response.responses] == ["", ""]  # no names from v13
    assert batches(partitions(response, version)[2][1].records) == [(0, 0)]


@pytest.mark.parametrize(("epoch", "code"), [
    (-1, ErrorCode.NONE), (0, ErrorCode.NONE), (1, ErrorCode.UNKNOWN_LEADER_EPOCH),
    (-2, ErrorCode.NONE)])  # Kafka reads every negative epoch as "not given"
@pytest.mark.parametrize("version", [9, 12, 17])
def test_current_leader_epoch(broker: Broker, version: int, epoch: int, code: ErrorCode) -> None:
    append(broker, 0, raw())
    [(_, p)] = partitions(fetch(broker, ("t", 0, 0), version=version, epoch=epoch), version)
    assert p.error_code == code
    assert batches(p.records) == ([(0, 0)] if code == ErrorCode.NONE else [])


def test_current_leader_epoch_is_not_sent_before_v9(broker: Broker) -> None:
    assert only(fetch(broker, ("t", 0, 0), version=8, epoch=1)).error_code == ErrorCode.NONE


@pytest.mark.parametrize("version", [7, 12, 17, 18])
def test_a_sessionless_fetch_and_an_unknown_session(broker: Broker, version: int) -> None:
    # (sessions themselves: test_fetch_sessions_handler.py)
    append(broker, 0, raw())
    sessionless = fetch(broker, ("t", 0, 0), version=version, session_id=0, session_epoch=-1)
    assert (sessionless.error_code, sessionless.session_id) == (ErrorCode.NONE, 0)
    assert len(broker.fetch_sessions) == 0
    incremental = fetch(broker, ("t", 0, 0), version=version, session_id=12, session_epoch=1)
    assert (incremental.error_code, incremental.session_id, incremental.responses) == (
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, [])


def test_partitions_come_back_in_request_order_with_their_offsets(broker: Broker) -> None:
    broker.cluster.create_topic("a", 2, {})
    for _ in range(3):
        append(broker, 1, raw())  # t-1: 0-2
    append(broker, 1, txn(A, 0), topic="t")  # t-1: 3, open
    append(broker, 0, raw(), topic="a")  # a-0: 0
    plog = broker.partitions.log("t", 1)
    assert plog is not None
    plog.delete_records_before(1)
    response = fetch(broker, ("t", 1, 1), ("t", 0, 0), ("a", 1, 0), ("a", 0, 0), ("t", 2, 0))
    assert (response.throttle_time_ms, response.error_code, response.session_id) == (
        0, ErrorCode.NONE, 0)
    assert [t.topic for t in response.responses] == ["t", "a", "t"]
    got = [(name, p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset,
            p.log_start_offset, p.preferred_read_replica, batches(p.records))
           for name, p in partitions(response)]
    assert got == [("t", 1, ErrorCode.NONE, 4, 3, 1, -1, [(1, 1), (2, 2), (3, 3)]),
                   ("t", 0, ErrorCode.NONE, 0, 0, 0, -1, []),
                   ("a", 1, ErrorCode.NONE, 0, 0, 0, -1, []),
                   ("a", 0, ErrorCode.NONE, 1, 1, 0, -1, [(0, 0)]),
                   ("t", 2, ErrorCode.NONE, 0, 0, 0, -1, [])]


# -- versions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_read_committed_fetch_at_each_version(aborted: Broker, version: int) -> None:
    plog = aborted.partitions.log("t", 0)
    assert plog is not None
    plog.delete_records_before(1)
    response = fetch(aborted, ("t", 0, 1), ("t", 1, 0), version=version,
                     isolation=READ_COMMITTED)
    [(key, p0), (_, p1)] = partitions(response, version)
    topic = aborted.cluster.get("t")
    assert topic is not None
    assert key == (topic.topic_id if version >= 13 else "t")
    assert (p0.error_code, p0.high_watermark, p0.last_stable_offset) == (ErrorCode.NONE, 8, 8)
    assert p0.log_start_offset == (1 if version >= 5 else -1)  # the field is v5+
    assert batches(p0.records) == [(i, i) for i in range(1, 8)]
    assert listed(p0) == [(A, 0), (B, 1)]
    assert (p0.preferred_read_replica, p1.preferred_read_replica) == (-1, -1)
    assert (listed(p1), bytes(p1.records), p1.records is not None) == ([], b"", True)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_read_uncommitted_fetch_at_each_version(broker: Broker, version: int) -> None:
    append(broker, 0, raw(2))
    append(broker, 0, txn(A, 0))  # 2, open
    [(_, p)] = partitions(fetch(broker, ("t", 0, 0), version=version), version)
    assert (p.error_code, p.high_watermark, p.last_stable_offset) == (ErrorCode.NONE, 3, 2)
    assert (batches(p.records), listed(p)) == ([(0, 1), (2, 2)], None)
