"""The share-partition state machine: acquisition, locks, acknowledgements, delivery limits,
the SPSO, record locks and the errors, each transition with an explicit clock."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from odradek.coordinator.share.partition import (
    AckBatch,
    AcknowledgeType,
    AcquiredRecords,
    AcquireMode,
    RecordState,
    SharePartition,
    SharePartitionConfig,
    StateBatch,
    validate_ack_batches,
)
from odradek.wire import ErrorCode

A, B = "member-a", "member-b"
LOCK = 30_000
ACCEPT, RELEASE, REJECT, GAP, RENEW = (int(AcknowledgeType.ACCEPT), int(AcknowledgeType.RELEASE),
                                       int(AcknowledgeType.REJECT), int(AcknowledgeType.GAP),
                                       int(AcknowledgeType.RENEW))


def sp(**kw: object) -> SharePartition:
    cfg = SharePartitionConfig(**{"record_lock_duration_ms": LOCK, **kw})  # type: ignore[arg-type]
    return SharePartition(cfg)


def ack(first: int, last: int, *types: int) -> AckBatch:
    return AckBatch(first, last, tuple(types))


def acquire(p: SharePartition, member: str, batches: list[tuple[int, int]], now: int,
            max_records: int = 500, **kw: object) -> list[tuple[int, int, int]]:
    res = p.acquire(member, batches, max_records, now, **kw)  # type: ignore[arg-type]
    return [(r.first_offset, r.last_offset, r.delivery_count) for r in res.records]


# -- acquisition --------------------------------------------------------------------------------


def test_new_records_are_acquired_with_delivery_count_one_and_a_lock() -> None:
    p = sp()
    assert p.next_fetch_offset() == 0
    assert acquire(p, A, [(0, 4), (5, 9)], now=1000) == [(0, 9, 1)]
    assert p.next_offset == 10 and p.start_offset == 0 and p.in_flight == 10
    assert p.state_of(3) == (RecordState.ACQUIRED, 1, A)
    assert p.next_deadline() == 1000 + LOCK
    assert p.next_fetch_offset() == 10
    # Nothing AVAILABLE below 10: a second member fetching the same batches gets nothing.
    assert acquire(p, B, [(0, 4), (5, 9)], now=1001) == []


def test_batch_optimized_max_records_is_soft_and_ends_at_a_batch_boundary() -> None:
    p = sp()
    assert acquire(p, A, [(0, 4), (5, 9), (10, 14)], now=0, max_records=7) == [(0, 9, 1)]
    assert p.next_offset == 10


def test_record_limit_mode_acquires_exactly_max_records() -> None:
    p = sp()
    got = acquire(p, A, [(0, 4), (5, 9)], now=0, max_records=3, mode=AcquireMode.RECORD_LIMIT)
    assert got == [(0, 2, 1)]
    assert p.next_offset == 3
    # The rest of the log batch is acquired by the next fetch, from offset 3.
    assert p.next_fetch_offset() == 3
    got = acquire(p, B, [(0, 4), (5, 9)], now=0, max_records=3, mode=AcquireMode.RECORD_LIMIT)
    assert got == [(3, 5, 1)]


def test_record_limit_mode_splits_an_available_run() -> None:
    p = sp()
    acquire(p, A, [(0, 9)], now=0)
    p.acknowledge(A, [ack(0, 9, RELEASE)], now=1)
    got = acquire(p, B, [(0, 9)], now=2, max_records=4, mode=AcquireMode.RECORD_LIMIT)
    assert got == [(0, 3, 2)]
    assert p.state_of(4) == (RecordState.AVAILABLE, 1, "")
    assert p.next_fetch_offset() == 4


def test_batch_size_cuts_new_records_at_log_batch_boundaries() -> None:
    p = sp()
    got = acquire(p, A, [(0, 1), (2, 3), (4, 5), (6, 9)], now=0, batch_size=3)
    assert got == [(0, 3, 1), (4, 9, 1)]


def test_fetch_starting_past_next_offset_covers_the_hole() -> None:
    # Offsets 0..4 are missing from the log (compacted); the acquired range still begins at
    # the partition's next offset, and the client acknowledges the missing ones as GAP.
    p = sp()
    assert acquire(p, A, [(5, 9)], now=0) == [(0, 9, 1)]
    assert p.acknowledge(A, [ack(0, 4, GAP), ack(5, 9, ACCEPT)], now=1).error == ErrorCode.NONE
    assert p.start_offset == 10


def test_max_record_locks_bounds_the_in_flight_span() -> None:
    p = sp(max_record_locks=10)
    assert acquire(p, A, [(0, 7)], now=0) == [(0, 7, 1)]
    # Two more records fit; the fetch read a batch up to 15: batch-optimized overshoots to
    # the end of that batch, as Kafka's soft limit does.
    assert acquire(p, B, [(8, 15)], now=0) == [(8, 15, 1)]
    assert not p.can_acquire()
    assert acquire(p, B, [(16, 20)], now=0) == []
    # A released record below the bound can be acquired again even at the bound.
    p.acknowledge(A, [ack(0, 7, RELEASE)], now=1)
    assert p.can_acquire()
    assert acquire(p, B, [(0, 7), (8, 15), (16, 20)], now=2) == [(0, 7, 2)]
    assert p.next_offset == 16


def test_max_record_locks_frees_up_as_the_spso_moves() -> None:
    p = sp(max_record_locks=5)
    acquire(p, A, [(0, 4)], now=0)
    assert acquire(p, A, [(5, 9)], now=0) == []
    p.acknowledge(A, [ack(0, 4, ACCEPT)], now=1)
    assert p.start_offset == 5 and p.in_flight == 0
    assert acquire(p, A, [(5, 9)], now=1) == [(5, 9, 1)]


def test_zero_max_records_or_nothing_fetched_acquires_nothing() -> None:
    p = sp()
    assert acquire(p, A, [(0, 4)], now=0, max_records=0) == []
    assert acquire(p, A, [], now=0) == []
    assert p.next_offset == 0


# -- acknowledgements ---------------------------------------------------------------------------


def test_accept_acknowledges_and_moves_the_spso() -> None:
    p = sp()
    acquire(p, A, [(0, 9)], now=0)
    res = p.acknowledge(A, [ack(0, 4, ACCEPT)], now=10)
    assert res.error == ErrorCode.NONE
    assert p.start_offset == 5
    assert res.update is not None
    assert res.update.start_offset == 5
    assert res.update.batches == (StateBatch(0, 4, int(RecordState.ACKNOWLEDGED), 1),)
    assert p.state_of(2) is None  # below the SPSO: gone from the in-flight state
    assert p.state_of(5) == (RecordState.ACQUIRED, 1, A)


def test_reject_and_gap_archive() -> None:
    p = sp()
    acquire(p, A, [(0, 3)], now=0)
    res = p.acknowledge(A, [ack(0, 3, REJECT, GAP, ACCEPT, REJECT)], now=1)
    assert res.error == ErrorCode.NONE
    assert res.update is not None
    assert res.update.batches == (
        StateBatch(0, 1, int(RecordState.ARCHIVED), 1),
        StateBatch(2, 2, int(RecordState.ACKNOWLEDGED), 1),
        StateBatch(3, 3, int(RecordState.ARCHIVED), 1),
    )
    assert p.start_offset == 4 and p.in_flight == 0


def test_release_makes_records_available_again_with_their_count() -> None:
    p = sp()
    acquire(p, A, [(0, 4)], now=0)
    res = p.acknowledge(A, [ack(0, 4, RELEASE)], now=1)
    assert res.update is not None
    assert res.update.batches == (StateBatch(0, 4, int(RecordState.AVAILABLE), 1),)
    assert p.state_of(0) == (RecordState.AVAILABLE, 1, "")
    assert p.next_fetch_offset() == 0 and p.start_offset == 0
    assert acquire(p, B, [(0, 4)], now=2) == [(0, 4, 2)]


def test_spso_waits_for_the_first_unfinished_record() -> None:
    p = sp()
    acquire(p, A, [(0, 9)], now=0)
    p.acknowledge(A, [ack(5, 9, ACCEPT)], now=1)
    assert p.start_offset == 0
    assert p.delivery_complete_count() == 5
    p.acknowledge(A, [ack(0, 4, ACCEPT)], now=2)
    assert p.start_offset == 10 and p.delivery_complete_count() == 0


def test_release_at_the_delivery_limit_archives() -> None:
    p = sp(delivery_count_limit=2)
    acquire(p, A, [(0, 0)], now=0)
    p.acknowledge(A, [ack(0, 0, RELEASE)], now=1)
    assert acquire(p, A, [(0, 0)], now=2) == [(0, 0, 2)]
    res = p.acknowledge(A, [ack(0, 0, RELEASE)], now=3)
    assert res.update is not None
    assert res.update.batches == (StateBatch(0, 0, int(RecordState.ARCHIVED), 2),)
    assert p.start_offset == 1
    assert acquire(p, B, [(0, 0)], now=4) == []  # never redelivered


def test_acknowledging_a_record_of_another_member_is_invalid_record_state() -> None:
    p = sp()
    acquire(p, A, [(0, 4)], now=0)
    res = p.acknowledge(B, [ack(0, 4, ACCEPT)], now=1)
    assert res.error == ErrorCode.INVALID_RECORD_STATE
    assert p.state_of(0) == (RecordState.ACQUIRED, 1, A)


def test_acknowledging_twice_is_invalid_record_state() -> None:
    p = sp()
    acquire(p, A, [(0, 9)], now=0)
    p.acknowledge(A, [ack(5, 9, ACCEPT)], now=1)
    assert p.acknowledge(A, [ack(5, 9, ACCEPT)], now=2).error == ErrorCode.INVALID_RECORD_STATE


def test_acknowledging_an_available_record_is_invalid_record_state() -> None:
    p = sp()
    acquire(p, A, [(0, 4)], now=0)
    p.acknowledge(A, [ack(0, 4, RELEASE)], now=1)
    assert p.acknowledge(A, [ack(0, 4, ACCEPT)], now=2).error == ErrorCode.INVALID_RECORD_STATE


def test_acknowledging_with_nothing_in_flight_is_invalid_record_state() -> None:
    p = sp()
    assert p.acknowledge(A, [ack(0, 0, ACCEPT)], now=0).error == ErrorCode.INVALID_RECORD_STATE


def test_acknowledging_past_the_in_flight_records_is_invalid_request() -> None:
    p = sp()
    acquire(p, A, [(0, 4)], now=0)
    assert p.acknowledge(A, [ack(5, 6, ACCEPT)], now=1).error == ErrorCode.INVALID_REQUEST
    assert p.acknowledge(A, [ack(3, 6, ACCEPT)], now=1).error == ErrorCode.INVALID_REQUEST
    assert p.state_of(3) == (RecordState.ACQUIRED, 1, A)


def test_offsets_below_the_spso_are_skipped() -> None:
    p = sp()
    acquire(p, A, [(0, 9)], now=0)
    p.acknowledge(A, [ack(0, 4, ACCEPT)], now=1)
    # 0..4 are done: acknowledging them again (or a batch straddling the SPSO) is fine.
    assert p.acknowledge(A, [ack(0, 4, REJECT)], now=2).error == ErrorCode.NONE
    assert p.acknowledge(A, [ack(3, 9, ACCEPT)], now=2).error == ErrorCode.NONE
    assert p.start_offset == 10


def test_acknowledgements_of_one_call_are_all_or_nothing() -> None:
    p = sp()
    acquire(p, A, [(0, 4)], now=0)
    acquire(p, B, [(5, 9)], now=0)
    res = p.acknowledge(A, [ack(0, 4, ACCEPT), ack(5, 9, ACCEPT)], now=1)
    assert res.error == ErrorCode.INVALID_RECORD_STATE
    assert res.update is None
    assert p.state_of(0) == (RecordState.ACQUIRED, 1, A)
    assert p.start_offset == 0


@pytest.mark.parametrize("batches, message", [
    ([ack(5, 4, ACCEPT)], "First offset greater"),
    ([ack(0, 4, ACCEPT), ack(3, 6, ACCEPT)], "overlap"),
    ([ack(0, 4, ACCEPT, ACCEPT)], "Size of acknowledge types"),
    ([ack(0, 0, 7)], "Invalid acknowledge type"),
])
def test_malformed_acknowledgements_are_invalid_request(batches: list[AckBatch],
                                                        message: str) -> None:
    p = sp()
    acquire(p, A, [(0, 9)], now=0)
    problem = validate_ack_batches(batches)
    assert problem is not None and message in problem
    res = p.acknowledge(A, batches, now=1)
    assert res.error == ErrorCode.INVALID_REQUEST and res.message == problem
    assert p.state_of(0) == (RecordState.ACQUIRED, 1, A)


# -- locks ----------------------------------------------------------------------------------------


def test_lock_expiry_returns_records_to_available_without_counting() -> None:
    p = sp()
    acquire(p, A, [(0, 4)], now=0)
    assert p.expire(LOCK - 1) is None
    update = p.expire(LOCK)
    assert update is not None
    assert update.batches == (StateBatch(0, 4, int(RecordState.AVAILABLE), 1),)
    assert p.state_of(0) == (RecordState.AVAILABLE, 1, "")
    assert p.next_deadline() is None
    assert acquire(p, B, [(0, 4)], now=LOCK + 1) == [(0, 4, 2)]


def test_acknowledging_after_the_lock_expired_is_invalid_record_state() -> None:
    p = sp()
    acquire(p, A, [(0, 4)], now=0)
    # The timer has not run, but the acknowledgement comes after the lock duration.
    res = p.acknowledge(A, [ack(0, 4, ACCEPT)], now=LOCK)
    assert res.error == ErrorCode.INVALID_RECORD_STATE
    # The expiry itself is reported for persistence.
    assert res.update is not None
    assert res.update.batches == (StateBatch(0, 4, int(RecordState.AVAILABLE), 1),)


def test_expiry_at_the_delivery_limit_archives() -> None:
    p = sp(delivery_count_limit=2)
    acquire(p, A, [(0, 1)], now=0)
    p.expire(LOCK)
    acquire(p, A, [(0, 1)], now=LOCK)
    update = p.expire(2 * LOCK)
    assert update is not None
    assert update.batches == (StateBatch(0, 1, int(RecordState.ARCHIVED), 2),)
    assert p.start_offset == 2


def test_renew_restarts_the_lock_when_enabled() -> None:
    p = sp(renew_enabled=True)
    acquire(p, A, [(0, 4)], now=0)
    res = p.acknowledge(A, [ack(0, 1, RENEW)], now=20_000)
    assert res.error == ErrorCode.NONE and res.update is None  # nothing to persist
    p.expire(LOCK)
    assert p.state_of(0) == (RecordState.ACQUIRED, 1, A)
    assert p.state_of(2) == (RecordState.AVAILABLE, 1, "")
    assert p.next_deadline() == 20_000 + LOCK
    assert p.acknowledge(A, [ack(0, 1, ACCEPT)], now=40_000).error == ErrorCode.NONE


def test_renew_is_refused_unless_enabled() -> None:
    p = sp()
    acquire(p, A, [(0, 4)], now=0)
    res = p.acknowledge(A, [ack(0, 4, RENEW)], now=1)
    assert res.error == ErrorCode.INVALID_RECORD_STATE
    assert p.next_deadline() == LOCK


def test_renew_of_a_record_not_acquired_is_invalid_record_state() -> None:
    p = sp(renew_enabled=True)
    acquire(p, A, [(0, 4)], now=0)
    assert p.acknowledge(B, [ack(0, 4, RENEW)], now=1).error == ErrorCode.INVALID_RECORD_STATE


def test_release_member_frees_only_its_records() -> None:
    p = sp()
    acquire(p, A, [(0, 4)], now=0)
    acquire(p, B, [(5, 9)], now=0)
    update = p.release_member(A, now=1)
    assert update is not None
    assert update.batches == (StateBatch(0, 4, int(RecordState.AVAILABLE), 1),)
    assert p.state_of(7) == (RecordState.ACQUIRED, 1, B)
    assert p.release_member(A, now=2) is None


# -- start offset, log start, reload ------------------------------------------------------------


def test_move_log_start_drops_records_below_it() -> None:
    p = sp()
    acquire(p, A, [(0, 9)], now=0)
    p.move_log_start(4)
    assert p.start_offset == 4 and p.state_of(3) is None
    assert p.state_of(4) == (RecordState.ACQUIRED, 1, A)
    p.move_log_start(20)
    assert p.start_offset == 20 and p.next_offset == 20 and p.in_flight == 0
    assert p.next_fetch_offset() == 20


def test_from_state_rebuilds_the_persisted_batches_and_gaps() -> None:
    batches = [StateBatch(12, 13, int(RecordState.ARCHIVED), 5),
               StateBatch(10, 11, int(RecordState.ACKNOWLEDGED), 1),
               StateBatch(16, 17, int(RecordState.AVAILABLE), 2),
               StateBatch(2, 3, int(RecordState.ACKNOWLEDGED), 1)]  # below the start offset
    p = SharePartition.from_state(SharePartitionConfig(), 10, batches, state_epoch=3)
    # 10..13 are done: the start offset moves to 14; 14..15 were never delivered.
    assert p.start_offset == 14 and p.next_offset == 18 and p.state_epoch == 3
    assert p.state_of(14) == (RecordState.AVAILABLE, 0, "")
    assert p.state_of(16) == (RecordState.AVAILABLE, 2, "")
    assert p.next_fetch_offset() == 14
    got = acquire(p, A, [(14, 20)], now=0)
    assert got == [(14, 15, 1), (16, 17, 3), (18, 20, 1)]


def test_copy_is_independent() -> None:
    p = sp()
    acquire(p, A, [(0, 4)], now=0)
    q = p.copy()
    p.acknowledge(A, [ack(0, 4, ACCEPT)], now=1)
    assert q.state_of(0) == (RecordState.ACQUIRED, 1, A) and q.start_offset == 0


# -- property: random acquire / acknowledge / expiry sequences ---------------------------------


class DeliveryMachine(RuleBasedStateMachine):
    """Records 0..N-1 in log batches; members acquire, acknowledge and let locks lapse.
    Invariants: every offset is in exactly one place (below the SPSO and done, or in flight),
    counts never pass the limit, and each offset is finished (accepted or archived) once."""

    N = 40
    LIMIT = 3

    def __init__(self) -> None:
        super().__init__()
        self.p = SharePartition(SharePartitionConfig(record_lock_duration_ms=100,
                                                     delivery_count_limit=self.LIMIT,
                                                     max_record_locks=25,
                                                     renew_enabled=True))
        self.now = 0
        self.log = [(b, min(b + 3, self.N - 1)) for b in range(0, self.N, 4)]
        self.held: dict[str, list[AcquiredRecords]] = {A: [], B: []}
        self.finished: dict[int, RecordState] = {}
        self.deliveries: dict[int, int] = {}

    def _record(self, update: object) -> None:
        if update is None:
            return
        for b in update.batches:  # type: ignore[attr-defined]
            state = RecordState(b.delivery_state)
            for o in range(b.first_offset, b.last_offset + 1):
                if state.is_terminal:
                    assert o not in self.finished, f"offset {o} finished twice"
                    self.finished[o] = state

    @rule(member=st.sampled_from([A, B]), n=st.integers(1, 12),
          mode=st.sampled_from(list(AcquireMode)))
    def fetch(self, member: str, n: int, mode: AcquireMode) -> None:
        start = self.p.next_fetch_offset()
        batches = [b for b in self.log if b[1] >= start]
        res = self.p.acquire(member, batches, n, self.now, mode=mode)
        self._record(res.update)
        for r in res.records:
            for o in range(r.first_offset, r.last_offset + 1):
                self.deliveries[o] = self.deliveries.get(o, 0) + 1
                assert self.deliveries[o] == r.delivery_count
            if mode is AcquireMode.RECORD_LIMIT:
                assert sum(x.last_offset - x.first_offset + 1 for x in res.records) <= n
        self.held[member] += list(res.records)

    @precondition(lambda self: any(self.held.values()))
    @rule(member=st.sampled_from([A, B]), kind=st.sampled_from([ACCEPT, RELEASE, REJECT, RENEW]),
          other=st.booleans())
    def acknowledge(self, member: str, kind: int, other: bool) -> None:
        if not self.held[member]:
            return
        r = self.held[member].pop(0)
        who = B if (other and member == A) else member
        res = self.p.acknowledge(who, [AckBatch(r.first_offset, r.last_offset, (kind,))],
                                 self.now)
        self._record(res.update)
        if who != member:
            assert res.error in (ErrorCode.INVALID_RECORD_STATE, ErrorCode.NONE)
        if kind == RENEW and res.error == ErrorCode.NONE:
            self.held[member].append(r)

    @rule(dt=st.integers(1, 150))
    def tick(self, dt: int) -> None:
        self.now += dt
        self._record(self.p.expire(self.now))

    @invariant()
    def accounted(self) -> None:
        p = self.p
        assert 0 <= p.start_offset <= p.next_offset
        runs = p.runs()
        if runs:
            assert runs[0].first == p.start_offset and runs[-1].last == p.next_offset - 1
            for x, y in itertools.pairwise(runs):
                assert x.last + 1 == y.first
        for r in runs:
            assert r.delivery_count <= self.LIMIT
            assert (r.state is RecordState.ACQUIRED) == (r.member_id != "")
        # Everything below the SPSO finished exactly once; nothing above it is lost.
        for o in range(p.start_offset):
            assert o in self.finished, f"offset {o} below the SPSO never finished"
        for o, state in self.finished.items():
            if o >= p.start_offset:
                got = p.state_of(o)
                assert got is not None and got[0] is state

    def teardown(self) -> None:
        # Drain: let every lock lapse, then accept everything that comes back.
        for _ in range(self.LIMIT + 2):
            self.now += 1000
            self._record(self.p.expire(self.now))
            res = self.p.acquire(A, [b for b in self.log if b[1] >= self.p.next_fetch_offset()],
                                 1000, self.now)
            for r in res.records:
                a = self.p.acknowledge(A, [AckBatch(r.first_offset, r.last_offset, (ACCEPT,))],
                                       self.now)
                assert a.error == ErrorCode.NONE
                self._record(a.update)
        assert self.p.start_offset == self.N
        assert set(self.finished) == set(range(self.N))


DeliveryMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40,
                                             deadline=None)
test_delivery_machine = DeliveryMachine.TestCase
