"""__share_group_state: ShareSnapshot/ShareUpdate records, the batch combiner, the snapshot
cadence, epoch fencing, replay, and the round trip from a live share-partition through the
records back to a rebuilt one."""

from __future__ import annotations

import itertools
import uuid

from hypothesis import example, given, settings
from hypothesis import strategies as st

from odradek.coordinator.share.partition import (
    AckBatch,
    AcknowledgeType,
    RecordState,
    SharePartition,
    SharePartitionConfig,
    StateBatch,
)
from odradek.coordinator.share.state import (
    SNAPSHOT,
    UPDATE,
    PersistedState,
    SharePartitionKey,
    ShareStateStore,
    combine,
    parse_key,
    parse_snapshot,
    parse_update,
    replay_records,
    snapshot_record,
)
from odradek.wire import ErrorCode

KEY = SharePartitionKey("g", uuid.UUID(int=7), 3)
ACKED, ARCH, AVAIL = (int(RecordState.ACKNOWLEDGED), int(RecordState.ARCHIVED),
                      int(RecordState.AVAILABLE))


def sb(first: int, last: int, state: int, count: int) -> StateBatch:
    return StateBatch(first, last, state, count)


def test_combine_overrides_prunes_and_merges() -> None:
    old = [sb(0, 9, AVAIL, 1), sb(10, 19, ACKED, 1)]
    new = [sb(5, 12, ACKED, 1), sb(20, 21, ARCH, 2)]
    assert combine(old, new, 0) == (sb(0, 4, AVAIL, 1), sb(5, 19, ACKED, 1),
                                    sb(20, 21, ARCH, 2))
    assert combine(old, new, 7) == (sb(7, 19, ACKED, 1), sb(20, 21, ARCH, 2))
    # Later batches of one write win over earlier ones.
    assert combine([], [sb(0, 5, AVAIL, 1), sb(2, 3, ARCH, 1)], 0) == (
        sb(0, 1, AVAIL, 1), sb(2, 3, ARCH, 1), sb(4, 5, AVAIL, 1))


def test_records_round_trip_through_the_generated_codecs() -> None:
    state = PersistedState(2, 5, 1, 100, (sb(100, 104, ACKED, 1), sb(105, 105, ARCH, 5)),
                           6, 111, 222)
    k, v = snapshot_record(KEY, state)
    assert parse_key(k) == (SNAPSHOT, KEY)
    assert v is not None and parse_snapshot(v) == state


def test_first_write_is_a_snapshot_then_updates_then_a_snapshot_again() -> None:
    store = ShareStateStore(updates_per_snapshot=2)
    kinds = []
    for i in range(6):
        res = store.write_state(KEY, 0, 0, i, [sb(i, i, ACKED, 1)], now=1000 + i)
        assert res.error == ErrorCode.NONE
        parsed = parse_key(res.records[0][0])
        assert parsed is not None
        kinds.append(parsed[0])
    assert kinds == [SNAPSHOT, UPDATE, UPDATE, SNAPSHOT, UPDATE, UPDATE]
    state = store.read_state(KEY)
    assert state is not None
    assert state.snapshot_epoch == 1 and state.start_offset == 5
    assert state.batches == (sb(5, 5, ACKED, 1),)
    assert state.create_timestamp == 1000 and state.write_timestamp == 1003


def test_zero_updates_per_snapshot_writes_only_snapshots() -> None:
    store = ShareStateStore(updates_per_snapshot=0)
    for i in range(3):
        res = store.write_state(KEY, 0, 0, 0, [sb(i, i, ARCH, 1)], now=i)
        parsed = parse_key(res.records[0][0])
        assert parsed is not None and parsed[0] == SNAPSHOT


def test_update_value_keeps_start_offset_minus_one_as_unchanged() -> None:
    store = ShareStateStore()
    store.write_state(KEY, 0, 0, 10, [sb(10, 11, ACKED, 1)], now=0)
    res = store.write_state(KEY, 0, 0, -1, [sb(12, 12, ARCH, 3)], now=1)
    v = res.records[0][1]
    assert v is not None and parse_update(v).start_offset == -1
    state = store.read_state(KEY)
    assert state is not None and state.start_offset == 10
    assert state.batches == (sb(10, 11, ACKED, 1), sb(12, 12, ARCH, 3))


def test_fencing_by_leader_and_state_epoch() -> None:
    store = ShareStateStore()
    store.write_state(KEY, 2, 5, 0, [], now=0)
    assert store.write_state(KEY, 2, 4, 0, [], now=1).error == ErrorCode.FENCED_LEADER_EPOCH
    assert store.write_state(KEY, 1, 5, 0, [], now=1).error == ErrorCode.FENCED_STATE_EPOCH
    assert store.write_state(KEY, 2, 6, 0, [], now=1).error == ErrorCode.NONE


def test_initialize_and_delete() -> None:
    store = ShareStateStore()
    assert store.initialize_state(KEY, 1, 42, now=5).error == ErrorCode.NONE
    state = store.read_state(KEY)
    assert state is not None and (state.state_epoch, state.start_offset) == (1, 42)
    assert store.initialize_state(KEY, 1, 0, now=6).error == ErrorCode.FENCED_STATE_EPOCH
    store.write_state(KEY, 1, 0, 42, [sb(42, 43, ACKED, 1)], now=7)
    res = store.initialize_state(KEY, 2, 0, now=8)  # an offset reset: the batches go
    assert res.error == ErrorCode.NONE
    state = store.read_state(KEY)
    assert state is not None and state.batches == () and state.snapshot_epoch == 1
    records = [r for r in store.delete_state(KEY).records]
    assert all(v is None for _, v in records) and store.read_state(KEY) is None


batch_st = st.tuples(st.integers(0, 60), st.integers(0, 8), st.sampled_from([AVAIL, ACKED, ARCH]),
                     st.integers(1, 5)).map(lambda t: sb(t[0], t[0] + t[1], t[2], t[3]))
write_st = st.tuples(st.one_of(st.just(-1), st.integers(0, 40)), st.lists(batch_st, max_size=4))


@settings(max_examples=80, deadline=None)
@given(writes=st.lists(write_st, min_size=1, max_size=25), per_snapshot=st.integers(0, 4))
def test_replay_rebuilds_what_the_writes_built(writes: list[tuple[int, list[StateBatch]]],
                                               per_snapshot: int) -> None:
    store = ShareStateStore(per_snapshot)
    log = []
    # A reference per-offset model: the last written state of each offset at or above the
    # start offset.
    model: dict[int, tuple[int, int]] = {}
    start = 0
    for i, (start_offset, batches) in enumerate(writes):
        res = store.write_state(KEY, 0, 0, start_offset, batches, now=i)
        assert res.error == ErrorCode.NONE
        log += res.records
        if i == 0:
            start = max(start_offset, 0)
        elif start_offset != -1:
            start = start_offset
        for b in batches:
            for o in range(b.first_offset, b.last_offset + 1):
                model[o] = (b.delivery_state, b.delivery_count)
        model = {o: s for o, s in model.items() if o >= start}
    replayed = replay_records(log, per_snapshot)
    assert replayed == store.states
    state = replayed[KEY]
    assert state.start_offset == start
    flat = {o: (b.delivery_state, b.delivery_count) for b in state.batches
            for o in range(b.first_offset, b.last_offset + 1)}
    assert flat == model
    for x, y in itertools.pairwise(state.batches):
        assert x.last_offset < y.first_offset


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["fetch", "accept", "release", "reject",
                                                "tick"]), st.integers(1, 6)), max_size=40),
       per_snapshot=st.integers(0, 3))
@example(ops=[("fetch", 3), ("fetch", 3), ("accept", 2)], per_snapshot=0)  # out of order
@example(ops=[("fetch", 2), ("release", 1), ("fetch", 2), ("fetch", 2), ("reject", 2),
              ("tick", 6)], per_snapshot=1)
def test_a_live_partition_survives_the_round_trip(ops: list[tuple[str, int]],
                                                  per_snapshot: int) -> None:
    """Drive a share-partition, persist every StateUpdate, replay the records and rebuild:
    the rebuilt partition has the same start offset, the same finished records, the same
    delivery counts for released ones, and in-flight records come back AVAILABLE."""
    cfg = SharePartitionConfig(record_lock_duration_ms=40, delivery_count_limit=3)
    live = SharePartition(cfg)
    store = ShareStateStore(per_snapshot)
    log = []
    now = 0
    held: list[tuple[int, int]] = []
    acquired_counts: dict[int, int] = {}

    def persist(update: object) -> None:
        if update is None:
            return
        res = store.write_state(KEY, 0, 0, update.start_offset,  # type: ignore[attr-defined]
                                update.batches, now,  # type: ignore[attr-defined]
                                update.delivery_complete_count)  # type: ignore[attr-defined]
        assert res.error == ErrorCode.NONE
        log.extend(res.records)

    for op, n in ops:
        if op == "fetch":
            base = live.next_fetch_offset()
            res = live.acquire("m", [(base, base + n - 1)], n, now)
            persist(res.update)
            held += [(r.first_offset, r.last_offset) for r in res.records]
            for r in res.records:
                for o in range(r.first_offset, r.last_offset + 1):
                    acquired_counts[o] = r.delivery_count
        elif op == "tick":
            now += n * 3
            persist(live.expire(now))
        elif held:
            first, last = held.pop(0 if n % 2 else -1)  # out of order too
            kind = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE,
                    "reject": AcknowledgeType.REJECT}[op]
            a = live.acknowledge("m", [AckBatch(first, last, (int(kind),))], now)
            persist(a.update)
    persisted = replay_records(log, per_snapshot).get(KEY)
    if persisted is None:
        rebuilt = SharePartition(cfg)
    else:
        rebuilt = SharePartition.from_state(cfg, persisted.start_offset, persisted.batches)
    # Every change of the start offset was persisted with it.
    assert rebuilt.start_offset == live.start_offset
    for o in range(live.start_offset, live.next_offset):
        state = live.state_of(o)
        got = rebuilt.state_of(o)
        assert state is not None
        if state[0].is_terminal or (state[0] is RecordState.AVAILABLE and state[1] > 0):
            assert got is not None and got[:2] == state[:2], (o, state, got)
        elif state[0] is RecordState.ACQUIRED and got is not None:
            # Acquisitions are not persisted: it comes back AVAILABLE, one delivery fewer.
            assert got[0] is RecordState.AVAILABLE and got[1] == state[1] - 1
    if persisted is not None:
        assert persisted.delivery_complete_count == rebuilt.delivery_complete_count()
        assert persisted.delivery_complete_count == live.delivery_complete_count()
