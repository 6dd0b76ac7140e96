"""Fetch sessions (KIP-227) through the Fetch handler on a real Broker, through the codec both
ways: a full fetch creates a session, incremental fetches carry only what changed, the
session errors, forgotten partitions, long polls on the session's partitions, and v18."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
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
from odradek.wire._generated.fetch import FetchRequest, FetchResponse
from odradek.wire.records import build_batch, iter_batches

F = FetchRequest
KEY = ApiKey.FETCH
MiB = 1 << 20
VALUE = b"x" * 100
S = len(build_batch([(b"k", VALUE)]))
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
    b.cluster.create_topic("u", 2, {})
    yield b
    b.close()


def raw(records: int = 1, **kw: Any) -> bytes:
    return build_batch([(b"k", VALUE)] * records, **kw)


def append(broker: Broker, partition: int, data: bytes, topic: str = "t") -> int:
    plog = broker.partitions.log(topic, partition)
    assert plog is not None
    return plog.append(memoryview(bytearray(data)), leader_epoch=0,
                       now_ms=broker.now_ms()).first_offset


Part = tuple[Any, int, int]  # (topic name, or id for v13+, partition, fetch offset)


def topic_key(broker: Broker, topic: Any, version: int) -> dict[str, Any]:
    if version < 13:
        return {"topic": topic}
    known = broker.cluster.get(topic) if isinstance(topic, str) else None
    return {"topic_id": known.topic_id if known else topic}


def req(broker: Broker, version: int, parts: list[Part], *, session_id: int = 0,
        epoch: int = 0, forget: list[tuple[Any, int]] | None = None, max_wait: int = 0,
        min_bytes: int = 0, max_bytes: int = 64 * MiB, isolation: int = 0,
        replica_id: int = -1) -> FetchRequest:
    topics: list[F.FetchTopic] = []
    for topic, index, offset in parts:
        p = F.FetchPartition(partition=index, fetch_offset=offset, partition_max_bytes=MiB)
        key = topic_key(broker, topic, version)
        if topics and all(getattr(topics[-1], k) == v for k, v in key.items()):
            topics[-1].partitions.append(p)
        else:
            topics.append(F.FetchTopic(partitions=[p], **key))
    forgotten: dict[Any, list[int]] = {}
    for topic, index in forget or []:
        forgotten.setdefault(topic, []).append(index)
    return F(max_wait_ms=max_wait, min_bytes=min_bytes, max_bytes=max_bytes,
             isolation_level=isolation, session_id=session_id, session_epoch=epoch,
             topics=topics, replica_id=replica_id if version < 15 else -1,
             replica_state=F.ReplicaState(replica_id=replica_id) if version >= 15 else None,
             forgotten_topics_data=[F.ForgottenTopic(partitions=ps, **topic_key(broker, t, version))
                                    for t, ps in forgotten.items()])


def fetch(broker: Broker, version: int, parts: list[Part], **kw: Any) -> Any:
    return call(broker, KEY, version, req(broker, version, parts, **kw))


def got(response: Any, version: int) -> list[tuple[Any, int, int, list[tuple[int, int]]]]:
    """(topic name or id, partition, error, batches) in response order."""
    out = []
    for t in response.responses:
        for p in t.partitions:
            assert p.records is not None
            out.append((t.topic_id if version >= 13 else t.topic, p.partition_index, p.error_code,
                        [(b.base_offset, b.next_offset - 1) for b in iter_batches(bytes(p.records))]))
    return out


def tid(broker: Broker, name: str) -> uuid.UUID:
    topic = broker.cluster.get(name)
    assert topic is not None
    return topic.topic_id


def name_or_id(broker: Broker, name: str, version: int) -> Any:
    return tid(broker, name) if version >= 13 else name


class Session:
    """A fetcher keeping a session as the Java client does: a full fetch first, then
    incremental fetches at the next epoch naming only what changed."""

    def __init__(self, broker: Broker, version: int, parts: list[Part], **kw: Any) -> None:
        self.broker, self.version = broker, version
        response = fetch(broker, version, parts, **kw)
        assert response.error_code == ErrorCode.NONE
        self.first = response
        self.id = response.session_id
        self.epoch = 1

    def next(self, parts: list[Part] | None = None, **kw: Any) -> Any:
        response = fetch(self.broker, self.version, parts or [], session_id=self.id,
                         epoch=self.epoch, **kw)
        self.epoch += 1
        return response


VERSIONS = [7, 12, 13, 17, 18]


# -- creating and using a session --------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_full_fetch_creates_a_session_and_an_idle_poll_is_empty(broker: Broker,
                                                                  version: int) -> None:
    append(broker, 0, raw(2))
    s = Session(broker, version, [("t", 0, 0), ("t", 1, 0), ("u", 0, 0)])
    assert s.id > 0
    t, u = name_or_id(broker, "t", version), name_or_id(broker, "u", version)
    assert got(s.first, version) == [(t, 0, 0, [(0, 1)]), (t, 1, 0, []), (u, 0, 0, [])]
    # the fetcher moved partition 0 on to offset 2; nothing else changed
    idle = s.next([("t", 0, 2)])
    assert (idle.error_code, idle.session_id, idle.responses) == (ErrorCode.NONE, s.id, [])
    idle = s.next()
    assert (idle.error_code, idle.session_id, idle.responses) == (ErrorCode.NONE, s.id, [])


@pytest.mark.parametrize("version", VERSIONS)
def test_only_partitions_with_news_are_sent(broker: Broker, version: int) -> None:
    s = Session(broker, version, [("t", 0, 0), ("t", 1, 0), ("t", 2, 0), ("u", 1, 0)])
    append(broker, 1, raw(3))  # 0-2 on t-1
    append(broker, 1, raw(1), topic="u")  # 0 on u-1
    t, u = name_or_id(broker, "t", version), name_or_id(broker, "u", version)
    response = s.next()
    assert got(response, version) == [(t, 1, 0, [(0, 2)]), (u, 1, 0, [(0, 0)])]
    [t_part] = response.responses[0].partitions
    assert (t_part.high_watermark, t_part.log_start_offset) == (3, 0)
    # the fetcher reports its new offsets; nothing new since
    assert s.next([("t", 1, 3), ("u", 1, 1)]).responses == []


def test_a_partition_is_sent_again_while_its_offset_is_not_moved_on(broker: Broker) -> None:
    # Kafka reads a session partition from the offset last *requested*.
    s = Session(broker, 12, [("t", 0, 0)])
    append(broker, 0, raw())
    assert got(s.next(), 12) == [("t", 0, 0, [(0, 0)])]
    assert got(s.next(), 12) == [("t", 0, 0, [(0, 0)])]
    assert s.next([("t", 0, 1)]).responses == []


def test_a_high_watermark_change_alone_is_sent(broker: Broker) -> None:
    s = Session(broker, 12, [("t", 0, 0)], isolation=READ_COMMITTED)
    append(broker, 0, raw(2, producer_id=7, producer_epoch=0, base_sequence=0,
                          is_transactional=True))  # open: nothing readable yet
    [p] = s.next(isolation=READ_COMMITTED).responses[0].partitions
    assert (p.high_watermark, p.last_stable_offset, bytes(p.records)) == (2, 0, b"")
    assert s.next(isolation=READ_COMMITTED).responses == []


def test_a_log_start_offset_change_alone_is_sent(broker: Broker) -> None:
    append(broker, 0, raw(4))
    s = Session(broker, 12, [("t", 0, 4)])
    plog = broker.partitions.log("t", 0)
    assert plog is not None
    plog.delete_records_before(2)
    [p] = s.next().responses[0].partitions
    assert (p.log_start_offset, p.high_watermark, bytes(p.records)) == (2, 4, b"")
    assert s.next().responses == []


def test_errors_are_sent_every_time(broker: Broker) -> None:
    s = Session(broker, 12, [("t", 0, 5), ("t", 1, 0)])
    assert got(s.first, 12)[0] == ("t", 0, ErrorCode.OFFSET_OUT_OF_RANGE, [])
    for _ in range(2):
        assert got(s.next(), 12) == [("t", 0, ErrorCode.OFFSET_OUT_OF_RANGE, [])]
    # the fetcher resets to the log end: no records, but the partition is sent once again
    [(_, _, code, _)] = got(s.next([("t", 0, 0)]), 12)
    assert code == ErrorCode.NONE
    assert s.next().responses == []


@pytest.mark.parametrize("version", [12, 13])
def test_a_deleted_topic_in_a_session(broker: Broker, version: int) -> None:
    s = Session(broker, version, [("t", 0, 0), ("u", 0, 0)])
    broker.cluster.delete_topic("u")
    u = name_or_id(broker, "u", version) if version < 13 else s.first.responses[1].topic_id
    # the session knows the topic's name: as Kafka, UNKNOWN_TOPIC_OR_PARTITION even by id
    for _ in range(2):
        assert got(s.next(), version) == [(u, 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]


def test_a_topic_recreated_under_its_name_is_inconsistent_for_an_id_session(
        broker: Broker) -> None:
    s = Session(broker, 13, [("u", 0, 0)])
    old = s.first.responses[0].topic_id
    broker.cluster.delete_topic("u")
    broker.cluster.create_topic("u", 2, {})
    assert got(s.next(), 13) == [(old, 0, ErrorCode.INCONSISTENT_TOPIC_ID, [])]


@pytest.mark.parametrize("version", [13, 18])
def test_an_unknown_topic_id_stays_in_the_session(broker: Broker, version: int) -> None:
    unknown = uuid.uuid4()
    s = Session(broker, version, [(unknown, 0, 0), ("t", 0, 0)])
    assert s.id > 0
    assert got(s.first, version)[0] == (unknown, 0, ErrorCode.UNKNOWN_TOPIC_ID, [])
    assert got(s.next(), version) == [(unknown, 0, ErrorCode.UNKNOWN_TOPIC_ID, [])]
    # added by an incremental fetch, too
    other = uuid.uuid4()
    codes = [(t, c) for t, _, c, _ in got(s.next([(other, 1, 0)]), version)]
    assert codes == [(unknown, ErrorCode.UNKNOWN_TOPIC_ID), (other, ErrorCode.UNKNOWN_TOPIC_ID)]


@pytest.mark.parametrize("version", [7, 12, 13])
def test_partitions_added_and_forgotten(broker: Broker, version: int) -> None:
    append(broker, 2, raw())
    s = Session(broker, version, [("t", 0, 0), ("t", 1, 0)])
    t = name_or_id(broker, "t", version)
    # add t-2 (has a record), forget t-0
    response = s.next([("t", 2, 0)], forget=[("t", 0)])
    assert got(response, version) == [(t, 2, 0, [(0, 0)])]
    append(broker, 0, raw())  # t-0 is no longer in the session
    assert s.next([("t", 2, 1)]).responses == []
    append(broker, 1, raw())
    assert got(s.next(), version) == [(t, 1, 0, [(0, 0)])]


def test_forgetting_the_last_partition_answers_sessionless(broker: Broker) -> None:
    s = Session(broker, 12, [("t", 0, 0)])
    response = s.next(forget=[("t", 0)])
    assert (response.error_code, response.session_id, response.responses) == (
        ErrorCode.NONE, 0, [])
    closed = s.next()
    assert closed.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_a_partition_with_records_goes_to_the_back_of_the_line(broker: Broker) -> None:
    for p in (0, 1):
        append(broker, p, raw())
        append(broker, p, raw())
    # the byte budget takes one batch: t-0 first (request order)
    s = Session(broker, 12, [("t", 0, 0), ("t", 1, 0)], max_bytes=1)
    assert got(s.first, 12) == [("t", 0, 0, [(0, 0)]), ("t", 1, 0, [])]
    assert got(s.next([("t", 0, 1)], max_bytes=1), 12) == [("t", 0, 0, [(1, 1)])]
    # t-0 returned records last time, so t-1 is read first now and takes the budget
    assert got(s.next([("t", 0, 2)], max_bytes=1), 12) == [("t", 1, 0, [(0, 0)])]


# -- session errors ------------------------------------------------------------------------------


def assert_session_error(response: Any, code: ErrorCode) -> None:
    assert (response.error_code, response.session_id, response.responses) == (code, 0, [])


@pytest.mark.parametrize("version", [7, 12, 13, 18])
def test_an_unknown_session_id(broker: Broker, version: int) -> None:
    assert_session_error(fetch(broker, version, [("t", 0, 0)], session_id=12, epoch=1),
                         ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    assert_session_error(fetch(broker, version, [], session_id=0, epoch=3),
                         ErrorCode.FETCH_SESSION_ID_NOT_FOUND)


@pytest.mark.parametrize("version", [7, 13])
def test_a_wrong_epoch(broker: Broker, version: int) -> None:
    s = Session(broker, version, [("t", 0, 0)])
    s.next()
    s.epoch -= 1  # a replay of the last request
    assert_session_error(s.next(), ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    s.epoch += 5
    assert_session_error(s.next(), ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    s.epoch = 2  # the right one still works
    assert s.next().error_code == ErrorCode.NONE


@pytest.mark.parametrize(("created", "used"), [(13, 12), (12, 13), (18, 7)])
def test_a_session_keeps_its_topic_id_mode(broker: Broker, created: int, used: int) -> None:
    s = Session(broker, created, [("t", 0, 0)])
    s.version = used
    assert_session_error(s.next(), ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)


def test_final_epoch_closes_the_session_and_answers_sessionless(broker: Broker) -> None:
    append(broker, 0, raw())
    s = Session(broker, 12, [("t", 0, 0)])
    response = fetch(broker, 12, [("t", 0, 0)], session_id=s.id, epoch=-1)
    assert (response.error_code, response.session_id) == (ErrorCode.NONE, 0)
    assert got(response, 12) == [("t", 0, 0, [(0, 0)])]
    assert_session_error(s.next(), ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    assert len(broker.fetch_sessions) == 0


def test_a_new_full_fetch_replaces_the_session(broker: Broker) -> None:
    s = Session(broker, 12, [("t", 0, 0)])
    again = fetch(broker, 12, [("t", 1, 0)], session_id=s.id, epoch=0)
    assert again.session_id not in (0, s.id)
    assert_session_error(s.next(), ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    assert len(broker.fetch_sessions) == 1


def test_old_versions_and_final_epoch_keep_no_session(broker: Broker) -> None:
    for version in (4, 6):
        assert fetch(broker, version, [("t", 0, 0)]).session_id == 0
    assert fetch(broker, 12, [("t", 0, 0)], epoch=-1).session_id == 0
    assert len(broker.fetch_sessions) == 0


def test_no_slots_no_sessions(tmp_path: Path) -> None:
    b = open_broker(tmp_path, **{"max.incremental.fetch.session.cache.slots": "0"})
    try:
        b.cluster.create_topic("t", 1, {})
        response = fetch(b, 12, [("t", 0, 0)])
        assert (response.error_code, response.session_id) == (ErrorCode.NONE, 0)
        assert len(got(response, 12)) == 1
    finally:
        b.close()


def test_the_slot_limit_and_follower_privilege(tmp_path: Path) -> None:
    b = open_broker(tmp_path, **{"max.incremental.fetch.session.cache.slots": "2"})
    try:
        b.cluster.create_topic("t", 3, {})
        first = fetch(b, 12, [("t", 0, 0)]).session_id
        second = fetch(b, 12, [("t", 0, 0), ("t", 1, 0)]).session_id
        assert 0 not in (first, second)
        assert fetch(b, 12, [("t", 0, 0), ("t", 1, 0), ("t", 2, 0)]).session_id == 0
        # a follower (replica id >= 0) takes a consumer's place at once
        for version in (12, 15):
            assert fetch(b, version, [("t", 2, 0)], replica_id=1).session_id != 0
        assert b.fetch_sessions.get(first) is None and b.fetch_sessions.get(second) is None
    finally:
        b.close()


# -- long polls ---------------------------------------------------------------------------------


def test_an_incremental_fetch_parks_and_is_woken_by_its_session_partitions(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    s = Session(broker, 13, [("t", 0, 0), ("t", 1, 0)])
    parked: list[float] = []
    real_wait = broker.partitions.wait

    async def wait(watch: Any, timeout_s: float) -> None:
        parked.append(timeout_s)
        await real_wait(watch, timeout_s)

    monkeypatch.setattr(broker.partitions, "wait", wait)
    out: dict[str, Any] = {}

    async def main() -> None:
        broker.partitions.start()
        # names no partition: it waits for the ones the session holds
        incremental = req(broker, 13, [], session_id=s.id, epoch=1, max_wait=30_000,
                          min_bytes=1)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                async def fetcher() -> None:
                    start = time.monotonic()
                    out["response"] = await acall(broker, KEY, 13, incremental)
                    out["elapsed"] = time.monotonic() - start

                tg.start_soon(fetcher)
                while not parked:
                    await anyio.lowlevel.checkpoint()
                assert "response" not in out
                append(broker, 1, raw(2))
                broker.partitions.notify_appended("t", 1)

    anyio.run(main)
    assert out["elapsed"] < 5 and len(parked) == 1
    assert got(out["response"], 13) == [(tid(broker, "t"), 1, 0, [(0, 1)])]


def test_an_idle_incremental_fetch_waits_max_wait_and_answers_empty(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    s = Session(broker, 12, [("t", 0, 0)])
    now = [50.0]
    monkeypatch.setattr(fetch_api, "time", SimpleNamespace(monotonic=lambda: now[0]))
    waits: list[float] = []

    async def wait(watch: Any, timeout_s: float) -> None:
        waits.append(timeout_s)
        now[0] += timeout_s

    monkeypatch.setattr(broker.partitions, "wait", wait)
    response = s.next(max_wait=500, min_bytes=1)
    assert waits == [pytest.approx(0.5)]
    assert (response.error_code, response.session_id, response.responses) == (
        ErrorCode.NONE, s.id, [])


def test_a_duplicate_request_while_one_waits(broker: Broker) -> None:
    s = Session(broker, 12, [("t", 0, 0)])
    out: dict[str, Any] = {}

    async def main() -> None:
        broker.partitions.start()
        waiting = req(broker, 12, [], session_id=s.id, epoch=1, max_wait=30_000, min_bytes=1)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                async def fetcher() -> None:
                    out["first"] = await acall(broker, KEY, 12, waiting)

                tg.start_soon(fetcher)
                for _ in range(20):
                    await anyio.lowlevel.checkpoint()
                # the fetcher gave up on that request and sent the next epoch elsewhere
                out["second"] = await acall(broker, KEY, 12, req(
                    broker, 12, [], session_id=s.id, epoch=2))
                append(broker, 0, raw())
                broker.partitions.notify_appended("t", 0)

    anyio.run(main)
    assert out["second"].error_code == ErrorCode.NONE
    first = out["first"]
    assert (first.error_code, first.session_id, first.responses) == (
        ErrorCode.INVALID_FETCH_SESSION_EPOCH, s.id, [])


# -- v18 and sizes ------------------------------------------------------------------------------


def test_v18_accepts_the_replica_high_watermark(broker: Broker) -> None:
    append(broker, 0, raw())
    request = req(broker, 18, [("t", 0, 0)])
    request.topics[0].partitions[0].high_watermark = 0  # a follower's (KIP-1166)
    response = call(broker, KEY, 18, request)
    assert got(response, 18) == [(tid(broker, "t"), 0, 0, [(0, 0)])]


def _size(message: Any, version: int) -> int:
    return sum(len(bytes(b)) for b in message.encode(version))


@pytest.mark.parametrize("version", [12, 13, 18])
def test_an_idle_incremental_poll_is_small(tmp_path: Path, version: int) -> None:
    b = open_broker(tmp_path)
    try:
        b.cluster.create_topic("wide", 200, {})
        parts: list[Part] = [("wide", i, 0) for i in range(200)]
        full_req = req(b, version, parts)
        full = call(b, KEY, version, full_req)
        inc_req = req(b, version, [], session_id=full.session_id, epoch=1)
        inc = call(b, KEY, version, inc_req)
        assert inc.responses == [] and inc.session_id == full.session_id
        sizes = [_size(m, version) for m in (full_req, full, inc_req, inc)]
        assert sizes[0] > 2000 and sizes[1] > 4000  # 200 partitions each way
        assert sizes[2] < 60 and sizes[3] < 20
    finally:
        b.close()


def test_the_response_class_is_unchanged_for_sessions() -> None:
    assert FetchResponse.MAX_VERSION == 18
