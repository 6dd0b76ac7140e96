"""What wakes a long-polling Fetch, on a real Broker through the codec (issue #12): an append at
any point of the poll is read by that poll, appends elsewhere wake nobody, and the changes that
are not appends (a log start moved past a parked read_committed fetch, a log dir failing, a newer
request on the session) answer at once.

Every poll here has max_wait 5 s and must be answered in under half of it: a fetch that missed
its wake-up answers only at its timeout. All but `test_watches_end_with_their_fetch` use only what the
partitions port had before watches (`notify_appended`), so they run against the older broker
too (where the first test fails at the "first read" and "re-read" points, and each test of
changes that are not appends waits for its timeout).
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import admin_testutil
import anyio
import anyio.lowlevel
import pytest
from admin_testutil import acall, open_broker

from odradek.broker.api import fetch as fetch_api
from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.delete_records import DeleteRecordsRequest
from odradek.wire._generated.fetch import FetchRequest
from odradek.wire._generated.produce import ProduceRequest
from odradek.wire.records import build_batch, build_control_batch, iter_batches

F = FetchRequest
KEY = ApiKey.FETCH
MiB = 1 << 20
MAX_WAIT_MS = 5000
PROMPT_S = MAX_WAIT_MS / 2000  # "well before max_wait"
READ_COMMITTED = 1


@pytest.fixture(autouse=True, params=[False, True], ids=["copy", "zero-copy"])
def zero_copy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Every test both ways: records read as bytes, and as file regions of the segments."""
    monkeypatch.setattr(admin_testutil, "ZERO_COPY", request.param)
    return bool(request.param)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path)
    b.cluster.create_topic("t", 3, {})
    b.cluster.create_topic("u", 1, {})
    yield b
    b.close()


def raw(records: int = 1, **kw: Any) -> bytes:
    return build_batch([(b"k", b"v" * 50)] * records, **kw)


def produce(broker: Broker, partition: int, data: bytes, topic: str = "t") -> None:
    """An append as Produce makes it: written, then the partition's watchers told."""
    plog = broker.partitions.log(topic, partition)
    assert plog is not None
    plog.append(memoryview(bytearray(data)), leader_epoch=0, now_ms=broker.now_ms())
    broker.partitions.notify_appended(topic, partition)


def fetch_request(parts: list[tuple[str, int, int]], *, isolation: int = 0,
                  session_id: int = 0, session_epoch: int = -1, max_wait: int = MAX_WAIT_MS
                  ) -> FetchRequest:
    topics: dict[str, list[FetchRequest.FetchPartition]] = {}
    for topic, partition, offset in parts:
        topics.setdefault(topic, []).append(F.FetchPartition(
            partition=partition, fetch_offset=offset, partition_max_bytes=MiB))
    return F(max_wait_ms=max_wait, min_bytes=1, max_bytes=64 * MiB, isolation_level=isolation,
             session_id=session_id, session_epoch=session_epoch,
             topics=[F.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()])


def offsets(response: Any) -> dict[tuple[str, int], list[int]]:
    """Per partition: the offsets of the batches returned (first offset of each)."""
    return {(t.topic, p.partition_index): [b.base_offset for b in iter_batches(bytes(p.records))]
            for t in response.responses for p in t.partitions}


def errors(response: Any) -> dict[tuple[str, int], ErrorCode]:
    return {(t.topic, p.partition_index): ErrorCode(p.error_code)
            for t in response.responses for p in t.partitions}


async def poll_beside(broker: Broker, request: FetchRequest,
                      meanwhile: Callable[[], Awaitable[None]], version: int = 12
                      ) -> tuple[Any, float]:
    """Run the fetch and `meanwhile` side by side; (response, seconds the fetch took)."""
    out: dict[str, Any] = {}
    broker.partitions.start()  # type: ignore[attr-defined]  # older brokers need it, on the loop
    with anyio.fail_after(4 * MAX_WAIT_MS / 1000):
        async with anyio.create_task_group() as tg:
            async def fetcher() -> None:
                start = time.monotonic()
                out["response"] = await acall(broker, KEY, version, request)
                out["elapsed"] = time.monotonic() - start

            tg.start_soon(fetcher)
            await meanwhile()
    return out["response"], out["elapsed"]


async def steps(n: int) -> None:
    for _ in range(n):
        await anyio.lowlevel.checkpoint()


# -- appends at random points of a long poll --------------------------------------------------

POINTS = ("before", "first read", "parked", "re-read")


def test_an_append_at_any_point_of_a_long_poll_is_read_by_that_poll(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    """An append just before the fetch reads, while it reads its partitions (after it read the
    one that grows: the window between reading and parking), while it is parked, or while it
    re-reads after news on another of its partitions that is not enough to answer."""
    rng = random.Random(12)
    real_read_all = fetch_api._read_all
    hooks: list[Callable[[], None]] = []  # run once, right after a read pass

    def read_all(*args: Any, **kw: Any) -> Any:
        result = real_read_all(*args, **kw)
        if hooks:
            hooks.pop(0)()
        return result

    monkeypatch.setattr(fetch_api, "_read_all", read_all)
    # an empty batch on partition 1 (min_bytes not reached) stands for "news that is not
    # enough": a transactional batch read_committed does not return yet
    next_offset = {0: 0, 1: 0}
    slow: list[tuple[str, float]] = []

    async def main() -> None:
        for i in range(40):
            point = POINTS[i % len(POINTS)]
            offset = next_offset[0]
            request = fetch_request([("t", 0, offset), ("t", 1, next_offset[1])],
                                    isolation=READ_COMMITTED)
            pid = 1000 + i

            def grow() -> None:
                produce(broker, 0, raw())
                next_offset[0] += 1

            def not_enough(pid: int = pid) -> None:  # an open transaction on t-1: LSO stays
                produce(broker, 1, raw(producer_id=pid, producer_epoch=0, base_sequence=0,
                                       is_transactional=True))

            async def meanwhile(point: str = point) -> None:
                if point == "before":
                    grow()
                elif point == "first read":
                    hooks.append(grow)
                elif point == "parked":
                    await steps(rng.randint(1, 30))
                    grow()
                else:  # re-read: news on partition 1, then the append during that pass
                    await steps(rng.randint(1, 10))
                    hooks.append(grow)
                    not_enough()

            response, elapsed = await poll_beside(broker, request, meanwhile)
            hooks.clear()
            got = offsets(response)[("t", 0)]
            assert got and got[0] == offset, (point, got)
            if elapsed >= PROMPT_S:
                slow.append((point, round(elapsed, 3)))
            # close partition 1's transaction so the next poll starts without an open one
            if point == "re-read":
                marker = build_control_batch(commit=True, producer_id=pid, producer_epoch=0,
                                             coordinator_epoch=0, timestamp_ms=broker.now_ms())
                broker.partitions.append_internal("t", 1, memoryview(bytearray(marker)),
                                                  broker.now_ms())
                plog = broker.partitions.log("t", 1)
                assert plog is not None
                next_offset[1] = plog.log_end_offset

    anyio.run(main)
    assert not slow, f"polls answered only at their timeout (point, seconds): {slow}"


def test_a_producer_append_wakes_a_poll_of_several_partitions_at_once(broker: Broker) -> None:
    async def main() -> tuple[Any, float]:
        async def meanwhile() -> None:
            await steps(5)
            P = ProduceRequest
            await acall(broker, ApiKey.PRODUCE, 9, P(acks=-1, timeout_ms=1000, topic_data=[
                P.TopicProduceData(name="u", partition_data=[
                    P.PartitionProduceData(index=0, records=raw(2))])]))

        return await poll_beside(broker, fetch_request([("t", 0, 0), ("u", 0, 0)]), meanwhile)

    response, elapsed = anyio.run(main)
    assert elapsed < PROMPT_S
    assert offsets(response) == {("t", 0): [], ("u", 0): [0]}


# -- per partition ----------------------------------------------------------------------------


def test_appends_elsewhere_do_not_wake_a_parked_fetch(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    passes = []
    real_read_all = fetch_api._read_all

    def read_all(*args: Any, **kw: Any) -> Any:
        passes.append(1)
        return real_read_all(*args, **kw)

    monkeypatch.setattr(fetch_api, "_read_all", read_all)

    async def main() -> tuple[Any, float]:
        async def meanwhile() -> None:
            await steps(5)
            for _ in range(20):  # other partitions, another topic
                produce(broker, 1, raw())
                produce(broker, 0, raw(), topic="u")
                await steps(2)
            assert len(passes) == 1  # read once, never woken since
            produce(broker, 2, raw())

        return await poll_beside(broker, fetch_request([("t", 0, 0), ("t", 2, 0)]), meanwhile)

    response, elapsed = anyio.run(main)
    assert elapsed < PROMPT_S and len(passes) == 2
    assert offsets(response) == {("t", 0): [], ("t", 2): [0]}


def test_watches_end_with_their_fetch(broker: Broker) -> None:
    """Answered, timed out or cancelled (a closed connection), a fetch leaves no watch."""
    async def main() -> None:
        async def meanwhile() -> None:
            await steps(5)
            produce(broker, 0, raw())

        await poll_beside(broker, fetch_request([("t", 0, 0), ("t", 1, 0)]), meanwhile)
        await acall(broker, KEY, 12, fetch_request([("t", 1, 0)], max_wait=20))
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(acall, broker, KEY, 12, fetch_request([("t", 2, 0)]))
                await steps(5)
                scope.cancel()

    anyio.run(main)
    assert broker.partitions.watched() == 0  # type: ignore[attr-defined]


# -- changes that are not appends -------------------------------------------------------------


def test_a_log_start_moved_past_a_parked_read_committed_fetch_answers_out_of_range(
        broker: Broker) -> None:
    # offsets 0-1 in an open transaction: a read_committed fetch at 0 waits for its end
    produce(broker, 0, raw(2, producer_id=7, producer_epoch=0, base_sequence=0,
                           is_transactional=True))

    async def main() -> tuple[Any, float]:
        async def meanwhile() -> None:
            await steps(5)
            R = DeleteRecordsRequest
            deleted = await acall(broker, ApiKey.DELETE_RECORDS, 2, R(timeout_ms=1000, topics=[
                R.DeleteRecordsTopic(name="t", partitions=[
                    R.DeleteRecordsPartition(partition_index=0, offset=2)])]))
            assert deleted.topics[0].partitions[0].error_code == ErrorCode.NONE

        return await poll_beside(broker, fetch_request([("t", 0, 0)], isolation=READ_COMMITTED),
                                 meanwhile)

    response, elapsed = anyio.run(main)
    assert errors(response) == {("t", 0): ErrorCode.OFFSET_OUT_OF_RANGE}
    assert elapsed < PROMPT_S


def test_a_commit_marker_wakes_a_read_committed_fetch(broker: Broker) -> None:
    produce(broker, 0, raw(2, producer_id=7, producer_epoch=0, base_sequence=0,
                           is_transactional=True))

    async def main() -> tuple[Any, float]:
        async def meanwhile() -> None:
            await steps(5)
            marker = build_control_batch(commit=True, producer_id=7, producer_epoch=0,
                                         coordinator_epoch=0, timestamp_ms=broker.now_ms())
            broker.partitions.append_internal("t", 0, memoryview(bytearray(marker)),
                                              broker.now_ms())
            broker.partitions.notify_appended("t", 0)  # as the coordinator runtime does

        return await poll_beside(broker, fetch_request([("t", 0, 0)], isolation=READ_COMMITTED),
                                 meanwhile)

    response, elapsed = anyio.run(main)
    assert offsets(response) == {("t", 0): [0, 2]} and elapsed < PROMPT_S


def test_a_failed_log_dir_answers_a_parked_fetch_at_once(broker: Broker) -> None:
    async def main() -> tuple[Any, float]:
        async def meanwhile() -> None:
            await steps(5)
            log_dir = broker.partitions.log_dir_of("t", 0)
            assert log_dir is not None
            broker.logs.handle_dir_failure(log_dir, "test: the disk went away")

        return await poll_beside(broker, fetch_request([("t", 0, 0)]), meanwhile)

    response, elapsed = anyio.run(main)
    assert errors(response) == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}
    assert elapsed < PROMPT_S


def test_a_newer_request_on_the_session_answers_the_parked_one_at_once(broker: Broker) -> None:
    async def main() -> tuple[Any, Any, float]:
        full = await acall(broker, KEY, 12, fetch_request([("t", 0, 0)], session_epoch=0,
                                                          max_wait=0))
        sid = full.session_id
        assert sid != 0
        second: list[Any] = []

        async def meanwhile() -> None:
            await steps(5)
            # the client gave up on the parked request and sent the next epoch
            second.append(await acall(broker, KEY, 12, F(
                max_wait_ms=0, min_bytes=1, max_bytes=MiB, session_id=sid, session_epoch=2)))

        first, elapsed = await poll_beside(broker, F(
            max_wait_ms=MAX_WAIT_MS, min_bytes=1, max_bytes=MiB, session_id=sid,
            session_epoch=1), meanwhile)
        return first, second[0], elapsed

    first, second, elapsed = anyio.run(main)
    assert second.error_code == ErrorCode.NONE
    assert (first.error_code, first.session_id) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                                                    second.session_id)
    assert elapsed < PROMPT_S


def test_a_topic_deleted_while_a_fetch_waits_answers_at_once(broker: Broker) -> None:
    async def main() -> tuple[Any, float]:
        async def meanwhile() -> None:
            await steps(5)
            from odradek.wire._generated.delete_topics import DeleteTopicsRequest
            D = DeleteTopicsRequest
            await acall(broker, ApiKey.DELETE_TOPICS, 5, D(topic_names=["u"], timeout_ms=1000))

        return await poll_beside(broker, fetch_request([("u", 0, 0)]), meanwhile)

    response, elapsed = anyio.run(main)
    assert errors(response) == {("u", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert elapsed < PROMPT_S


# -- a session keeps its watch ----------------------------------------------------------------


def test_a_session_keeps_its_watch_across_polls_and_drops_it_when_its_partitions_change(
        broker: Broker) -> None:
    """An idle incremental poll registers nothing once the session watches; a partition added
    to the session is watched from the next poll on; a closed session leaves no watch."""
    def incremental(epoch: int, parts: list[tuple[str, int, int]] | None = None,
                    max_wait: int = MAX_WAIT_MS) -> FetchRequest:
        return fetch_request(parts or [], session_id=sid, session_epoch=epoch, max_wait=max_wait)

    async def main() -> None:
        nonlocal sid
        full = await acall(broker, KEY, 12, fetch_request([("t", 0, 0)], session_epoch=0,
                                                          max_wait=0))
        sid = full.session_id
        [session] = [s for s in broker.fetch_sessions._sessions.values() if s.id == sid]
        await acall(broker, KEY, 12, incremental(1, max_wait=10))  # idle: waits, then times out
        watch = session.watch
        assert watch is not None and broker.partitions.watched() == 1  # type: ignore[attr-defined]
        await acall(broker, KEY, 12, incremental(2, max_wait=10))
        assert session.watch is watch  # kept, not registered again

        async def grow_0() -> None:
            await steps(5)
            produce(broker, 0, raw())

        response, elapsed = await poll_beside(broker, incremental(3), grow_0)
        assert offsets(response) == {("t", 0): [0]} and elapsed < PROMPT_S
        assert session.watch is watch

        async def grow_2() -> None:  # the poll that adds t-2 watches it
            await steps(5)
            produce(broker, 2, raw())

        response, elapsed = await poll_beside(broker, incremental(4, [("t", 0, 1), ("t", 2, 0)]), grow_2)
        assert offsets(response) == {("t", 2): [0]} and elapsed < PROMPT_S
        assert session.watch is not None and session.watch is not watch
        assert broker.partitions.watched() == 2  # type: ignore[attr-defined]
        # a full fetch naming the session closes it, and its watch
        await acall(broker, KEY, 12, fetch_request([("t", 0, 1)], session_id=sid,
                                                   session_epoch=-1, max_wait=0))
        assert session.watch is None and broker.partitions.watched() == 0  # type: ignore[attr-defined]

    sid = 0
    anyio.run(main)
