"""The fetch session cache on its own (sans IO, a number for the clock): epochs, the session
update from incremental requests, the response filter, eviction, and the session errors."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from odradek.broker.fetch_sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    MAX_EPOCH,
    CachedPartition,
    FetchSessionCache,
    FullFetch,
    IncrementalFetch,
    Key,
    SessionError,
    Sessionless,
    next_epoch,
)
from odradek.wire import ErrorCode
from odradek.wire._generated.fetch import FetchRequest, FetchResponse

F = FetchRequest
FOO = uuid.UUID(int=0xF00)
BAR = uuid.UUID(int=0xBA2)
NAMES = {FOO: "foo", BAR: "bar"}


def names(topic_id: uuid.UUID) -> str | None:
    return NAMES.get(topic_id)


def part(index: int, offset: int = 0, max_bytes: int = 100) -> F.FetchPartition:
    return F.FetchPartition(partition=index, fetch_offset=offset, partition_max_bytes=max_bytes)


def req(session_id: int, epoch: int, topics: dict[Any, list[F.FetchPartition]] | None = None,
        forget: dict[Any, list[int]] | None = None, *, by_id: bool = True) -> FetchRequest:
    def topic(t: Any) -> dict[str, Any]:
        return {"topic_id": t} if by_id else {"topic": t}
    return F(session_id=session_id, session_epoch=epoch,
             topics=[F.FetchTopic(partitions=ps, **topic(t)) for t, ps in (topics or {}).items()],
             forgotten_topics_data=[F.ForgottenTopic(partitions=ps, **topic(t))
                                    for t, ps in (forget or {}).items()])


def dummy(n: int) -> dict[Key, CachedPartition]:
    return {(FOO, i): CachedPartition((FOO, i), "foo", FOO, part(i)) for i in range(n)}


def create(cache: FetchSessionCache, now: int, size: int, *, privileged: bool = False) -> int:
    return cache.maybe_create(now, privileged, size, True, lambda: dummy(size))


def ids(cache: FetchSessionCache, *expected: int) -> None:
    assert sorted(s for s in expected if cache.get(s) is not None) == sorted(expected)
    assert len(cache) == len(expected)


def full_session(cache: FetchSessionCache, now: int = 0, *, version: int = 13,
                 topics: dict[Any, list[F.FetchPartition]] | None = None) -> int:
    """A session created the way the handler does it: a FullFetch, then its partitions."""
    topics = topics or {FOO: [part(0), part(1)]}
    by_id = version >= 13
    ctx = cache.new_context(version, req(0, INITIAL_EPOCH, topics, by_id=by_id),
                            privileged=False, names=names, now_ms=now)
    assert isinstance(ctx, FullFetch)
    entries = []
    for t, ps in topics.items():
        for p in ps:
            name = names(t) if by_id else t
            key = (t, p.partition)
            entries.append((key, CachedPartition(key, name, t if by_id else uuid.UUID(int=0), p,
                                                 high_watermark=10, local_log_start_offset=0)))
    return ctx.create_session(now, len(entries), lambda: entries)


def data(error: ErrorCode = ErrorCode.NONE, hw: int = 10, log_start: int = 0,
         records: bytes = b"") -> FetchResponse.PartitionData:
    return FetchResponse.PartitionData(error_code=error, high_watermark=hw, last_stable_offset=hw,
                                       log_start_offset=log_start, records=records)


# -- epochs and ids ----------------------------------------------------------------------------


def test_next_epoch_wraps_to_one_and_final_stays_final() -> None:
    assert [next_epoch(e) for e in (INITIAL_EPOCH, 1, 41, MAX_EPOCH)] == [1, 2, 42, 1]
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH
    assert next_epoch(-7) == FINAL_EPOCH


def test_session_ids_are_positive_int32_and_unique() -> None:
    cache = FetchSessionCache(1000, rng=random.Random(5))
    made = [create(cache, 0, 1) for _ in range(300)]
    assert len(set(made)) == 300
    assert all(0 < s < 2**31 - 1 for s in made)


def test_a_repeated_random_id_is_drawn_again() -> None:
    class Rigged(random.Random):
        def __init__(self, draws: list[int]) -> None:
            super().__init__(0)
            self.draws = draws

        def randrange(self, *args: Any, **kw: Any) -> int:  # type: ignore[override]
            return self.draws.pop(0)

    cache = FetchSessionCache(10, rng=Rigged([7, 7, 7, 9]))
    assert create(cache, 0, 1) == 7
    assert create(cache, 0, 1) == 9


def test_a_new_session_starts_at_epoch_one() -> None:
    cache = FetchSessionCache(10)
    session = cache.get(full_session(cache))
    assert session is not None and session.epoch == 1 and len(session.partitions) == 2


# -- new_context: which kind of fetch ------------------------------------------------------------


def test_final_epoch_is_sessionless_and_closes_the_named_session() -> None:
    cache = FetchSessionCache(10)
    sid = full_session(cache)
    ctx = cache.new_context(13, req(sid, FINAL_EPOCH, {FOO: [part(0)]}), privileged=False,
                            names=names, now_ms=1)
    assert isinstance(ctx, Sessionless)
    assert cache.get(sid) is None and cache.total_partitions == 0


def test_initial_epoch_closes_the_named_session_and_starts_a_new_one() -> None:
    cache = FetchSessionCache(10)
    sid = full_session(cache)
    ctx = cache.new_context(13, req(sid, INITIAL_EPOCH, {FOO: [part(0)]}), privileged=False,
                            names=names, now_ms=1)
    assert isinstance(ctx, FullFetch)
    assert cache.get(sid) is None
    # and a full fetch naming an unknown session is no error
    ctx = cache.new_context(13, req(12345, INITIAL_EPOCH), privileged=False, names=names,
                            now_ms=1)
    assert isinstance(ctx, FullFetch)


@pytest.mark.parametrize("session_id", [0, 424242])
def test_an_incremental_fetch_on_an_unknown_session(session_id: int) -> None:
    cache = FetchSessionCache(10)
    full_session(cache)
    ctx = cache.new_context(13, req(session_id, 1), privileged=False, names=names, now_ms=1)
    assert isinstance(ctx, SessionError) and ctx.error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


@pytest.mark.parametrize("epoch", [2, 0x7FFFFFFF, -2])
def test_an_incremental_fetch_with_the_wrong_epoch(epoch: int) -> None:
    cache = FetchSessionCache(10)
    sid = full_session(cache)
    ctx = cache.new_context(13, req(sid, epoch), privileged=False, names=names, now_ms=1)
    assert isinstance(ctx, SessionError) and ctx.error == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    session = cache.get(sid)
    assert session is not None and session.epoch == 1  # untouched


def test_epochs_advance_with_each_incremental_fetch_and_a_replay_is_refused() -> None:
    cache = FetchSessionCache(10)
    sid = full_session(cache)
    for epoch in (1, 2, 3):
        ctx = cache.new_context(13, req(sid, epoch), privileged=False, names=names, now_ms=epoch)
        assert isinstance(ctx, IncrementalFetch) and ctx.expected_epoch == epoch + 1
    again = cache.new_context(13, req(sid, 3), privileged=False, names=names, now_ms=9)
    assert isinstance(again, SessionError)
    assert again.error == ErrorCode.INVALID_FETCH_SESSION_EPOCH


def test_the_epoch_after_int32_max_is_one() -> None:
    cache = FetchSessionCache(10)
    sid = full_session(cache)
    session = cache.get(sid)
    assert session is not None
    session.epoch = MAX_EPOCH
    ctx = cache.new_context(13, req(sid, MAX_EPOCH), privileged=False, names=names, now_ms=1)
    assert isinstance(ctx, IncrementalFetch) and session.epoch == 1
    assert isinstance(cache.new_context(13, req(sid, 1), privileged=False, names=names,
                                        now_ms=2), IncrementalFetch)


@pytest.mark.parametrize(("created", "used"), [(13, 12), (12, 13), (17, 7)])
def test_a_session_keeps_to_topic_ids_or_names(created: int, used: int) -> None:
    cache = FetchSessionCache(10)
    topics = {FOO: [part(0)]} if created >= 13 else {"foo": [part(0)]}
    sid = full_session(cache, version=created, topics=topics)
    ctx = cache.new_context(used, req(sid, 1, by_id=used >= 13), privileged=False, names=names,
                            now_ms=1)
    assert isinstance(ctx, SessionError) and ctx.error == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR


def test_a_duplicate_request_is_noticed_after_the_wait() -> None:
    cache = FetchSessionCache(10)
    sid = full_session(cache)
    first = cache.new_context(13, req(sid, 1), privileged=False, names=names, now_ms=1)
    assert isinstance(first, IncrementalFetch) and first.still_current()
    second = cache.new_context(13, req(sid, 2), privileged=False, names=names, now_ms=2)
    assert isinstance(second, IncrementalFetch)
    assert not first.still_current() and second.still_current()


# -- incremental updates -------------------------------------------------------------------------


def test_incremental_add_update_and_forget() -> None:
    cache = FetchSessionCache(10)
    sid = full_session(cache, topics={FOO: [part(0), part(1)]})
    ctx = cache.new_context(13, req(sid, 1, {FOO: [part(1, offset=55, max_bytes=7)],
                                             BAR: [part(3, offset=2)]},
                                    forget={FOO: [0, 9]}), privileged=False, names=names,
                            now_ms=5)
    assert isinstance(ctx, IncrementalFetch)
    session = ctx.session
    assert list(session.partitions) == [(FOO, 1), (BAR, 3)]
    foo1, bar3 = session.partitions.values()
    assert (foo1.fetch_offset, foo1.partition_max_bytes, foo1.high_watermark) == (55, 7, 10)
    assert (bar3.topic, bar3.fetch_offset, bar3.high_watermark) == ("bar", 2, -1)
    assert cache.total_partitions == 2 and session.last_used_ms == 5


def test_forgetting_every_partition_closes_the_session() -> None:
    cache = FetchSessionCache(10)
    sid = full_session(cache, topics={FOO: [part(0), part(1)]})
    ctx = cache.new_context(13, req(sid, 1, forget={FOO: [0, 1]}), privileged=False,
                            names=names, now_ms=1)
    assert isinstance(ctx, Sessionless)
    assert cache.get(sid) is None and len(cache) == 0 and cache.total_partitions == 0


def test_name_keyed_sessions_forget_by_name() -> None:
    cache = FetchSessionCache(10)
    sid = full_session(cache, version=12, topics={"foo": [part(0), part(1)]})
    ctx = cache.new_context(12, req(sid, 1, {"bar": [part(0)]}, forget={"foo": [1]},
                                    by_id=False), privileged=False, names=names, now_ms=1)
    assert isinstance(ctx, IncrementalFetch)
    assert list(ctx.session.partitions) == [("foo", 0), ("bar", 0)]


def test_an_unknown_topic_id_is_kept_and_resolved_once_known() -> None:
    cache = FetchSessionCache(10)
    later = uuid.UUID(int=0x1A7E)
    sid = full_session(cache, topics={FOO: [part(0)]})
    ctx = cache.new_context(13, req(sid, 1, {later: [part(0)]}), privileged=False, names=names,
                            now_ms=1)
    assert isinstance(ctx, IncrementalFetch)
    assert ctx.session.partitions[(later, 0)].topic is None
    NAMES[later] = "late"
    try:
        ctx = cache.new_context(13, req(sid, 2), privileged=False, names=names, now_ms=2)
    finally:
        del NAMES[later]
    assert isinstance(ctx, IncrementalFetch)
    assert ctx.session.partitions[(later, 0)].topic == "late"


def test_a_partition_with_records_moves_to_the_end() -> None:
    cache = FetchSessionCache(10)
    sid = full_session(cache, topics={FOO: [part(0), part(1), part(2)]})
    ctx = cache.new_context(13, req(sid, 1), privileged=False, names=names, now_ms=1)
    assert isinstance(ctx, IncrementalFetch)
    first = ctx.session.partitions[(FOO, 0)]
    ctx.sent(ctx.session.partitions[(FOO, 1)], had_records=False)
    ctx.sent(first, had_records=True)
    assert list(ctx.session.partitions) == [(FOO, 1), (FOO, 2), (FOO, 0)]


# -- the response filter -------------------------------------------------------------------------


def cached(hw: int = 10, log_start: int = 0) -> CachedPartition:
    return CachedPartition((FOO, 0), "foo", FOO, part(0), high_watermark=hw,
                           local_log_start_offset=log_start)


def test_an_unchanged_partition_is_left_out() -> None:
    assert not cached().must_respond(data(), update=True)


@pytest.mark.parametrize("changed", [
    data(hw=11), data(log_start=3), data(records=b"x"),
    data(error=ErrorCode.OFFSET_OUT_OF_RANGE)])
def test_what_makes_a_partition_part_of_the_response(changed: Any) -> None:
    assert cached().must_respond(changed, update=False)


def test_the_filter_remembers_only_when_asked() -> None:
    c = cached()
    assert c.must_respond(data(hw=12, log_start=2), update=False)
    assert (c.high_watermark, c.local_log_start_offset) == (10, 0)
    assert c.must_respond(data(hw=12, log_start=2), update=True)
    assert (c.high_watermark, c.local_log_start_offset) == (12, 2)
    assert not c.must_respond(data(hw=12, log_start=2), update=True)


def test_an_error_is_sent_every_time_and_the_recovery_too() -> None:
    c = cached()
    bad = data(error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, hw=-1, log_start=-1)
    assert c.must_respond(bad, update=True) and c.must_respond(bad, update=True)
    assert c.high_watermark == -1
    assert c.must_respond(data(), update=True)  # back: hw -1 -> 10 is a change
    assert not c.must_respond(data(), update=True)


def test_the_last_stable_offset_alone_is_not_tracked_as_in_kafka() -> None:
    c = cached()
    moved = data()
    moved.last_stable_offset = 4
    assert not c.must_respond(moved, update=True)


def test_preferred_replica_and_diverging_epoch_are_always_sent() -> None:
    d = data()
    d.preferred_read_replica = 2
    assert cached().must_respond(d, update=True)
    d = data()
    d.diverging_epoch = FetchResponse.EpochEndOffset(epoch=3, end_offset=9)
    assert cached().must_respond(d, update=True)


# -- the cache and eviction ----------------------------------------------------------------------


def test_a_full_cache_evicts_stale_then_smaller_sessions() -> None:
    cache = FetchSessionCache(3, eviction_ms=100)
    a = create(cache, 0, 10)
    b = create(cache, 10, 20)
    c = create(cache, 20, 30)
    # full, nothing stale yet and nothing old enough to be evictable: no room
    assert create(cache, 30, 40) == INVALID_SESSION_ID
    assert create(cache, 40, 5) == INVALID_SESSION_ID
    ids(cache, a, b, c)
    session_a = cache.get(a)
    assert session_a is not None
    cache.touch(session_a, 200)
    # b is the least recently used, unused for more than 100 ms: stale, evicted
    d = create(cache, 210, 11)
    ids(cache, a, c, d)
    assert cache.evictions == 1
    for sid, now in ((a, 400), (c, 390), (d, 400)):
        s = cache.get(sid)
        assert s is not None
        cache.touch(s, now)
    # nothing stale; a (10 partitions) is the smallest session old enough to be evicted
    e = create(cache, 410, 50)
    ids(cache, c, d, e)
    # 5 partitions are fewer than any evictable session has: no room
    assert create(cache, 410, 5) == INVALID_SESSION_ID
    # a follower's session may evict a consumer's at once, whatever their sizes
    f = create(cache, 410, 5, privileged=True)
    ids(cache, c, e, f)
    assert cache.evictions == 3


def test_evictability_is_judged_when_a_session_was_last_used() -> None:
    cache = FetchSessionCache(1, eviction_ms=100)
    a = create(cache, 0, 1)
    # a was last touched at creation: not yet evictable by a consumer, and not stale at 90
    assert create(cache, 90, 50) == INVALID_SESSION_ID
    # ... stale after 100 ms unused
    assert create(cache, 101, 1) != INVALID_SESSION_ID
    assert cache.get(a) is None


def test_a_follower_session_is_kept_from_consumers_while_young() -> None:
    cache = FetchSessionCache(2, eviction_ms=1000)
    follower = create(cache, 0, 2, privileged=True)
    consumer = create(cache, 500, 2)
    for sid in (follower, consumer):
        s = cache.get(sid)
        assert s is not None
        cache.touch(s, 900)
    # a follower evicts the consumer session although the follower's is older
    newer = create(cache, 1000, 2, privileged=True)
    ids(cache, follower, newer)
    # a consumer cannot evict either follower session while they are young
    assert create(cache, 1000, 100) == INVALID_SESSION_ID


def test_a_new_session_needs_more_partitions_than_the_one_it_evicts() -> None:
    cache = FetchSessionCache(2, eviction_ms=100, rng=random.Random(1))
    a, b = create(cache, 0, 3), create(cache, 0, 3)
    for sid in (a, b):
        s = cache.get(sid)
        assert s is not None
        cache.touch(s, 150)  # older than 100 ms at this touch, and not stale later
    assert create(cache, 200, 3) == INVALID_SESSION_ID  # as many is not enough
    c = create(cache, 200, 4)
    ids(cache, max(a, b), c)  # of two equal sessions, the lower id goes


def test_zero_slots_keep_no_session() -> None:
    cache = FetchSessionCache(0)
    assert create(cache, 0, 3) == INVALID_SESSION_ID
    assert create(cache, 0, 3, privileged=True) == INVALID_SESSION_ID
    assert len(cache) == 0


def test_partitions_are_only_built_for_a_session_that_is_created() -> None:
    cache = FetchSessionCache(0)
    built = []
    assert cache.maybe_create(0, False, 2, True, lambda: built.append(1) or {}) == 0
    assert built == []


def test_the_cached_partition_count_follows_touches_and_removals() -> None:
    cache = FetchSessionCache(5)
    a = create(cache, 0, 2)
    b = create(cache, 0, 4)
    assert cache.total_partitions == 6
    session_b = cache.get(b)
    assert session_b is not None
    session_b.partitions.pop(next(iter(session_b.partitions)))
    assert cache.total_partitions == 6  # counted again when next used
    cache.touch(session_b, 1)
    assert cache.total_partitions == 5
    cache.remove(a)
    assert cache.total_partitions == 3
    assert cache.remove(a) is None
