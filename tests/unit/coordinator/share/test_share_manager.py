"""The share-partition registry with the share-state store behind it, sans IO: loading with
and without persisted state, acknowledgements across partitions, releases, lock timers, and
a crash-and-reload machine (the kill -9 scenario of the matrix, without the broker): no
accepted record is delivered again after a restart and none is lost."""

from __future__ import annotations

import uuid

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from odradek.coordinator.common import KeyValue
from odradek.coordinator.share.manager import SharePartitions
from odradek.coordinator.share.offset_reset import OffsetReset
from odradek.coordinator.share.partition import (
    AckBatch,
    AcknowledgeType,
    RecordState,
    SharePartitionConfig,
    StateUpdate,
)
from odradek.coordinator.share.state import SharePartitionKey, ShareStateStore, replay_records
from odradek.wire import ErrorCode

T = uuid.UUID(int=9)
K0, K1 = SharePartitionKey("g", T, 0), SharePartitionKey("g", T, 1)
ACCEPT, RELEASE = int(AcknowledgeType.ACCEPT), int(AcknowledgeType.RELEASE)
CFG = SharePartitionConfig(record_lock_duration_ms=100, delivery_count_limit=4)


def never(_ts: int) -> int | None:
    return None


def test_load_without_state_uses_the_offset_reset() -> None:
    m = SharePartitions(lambda _g: CFG)
    sp = m.load(K0, None, OffsetReset("latest"), 5, 50, never, now=0)
    assert sp.start_offset == 50
    sp = m.load(K1, None, OffsetReset("earliest"), 5, 50, never, now=0)
    assert sp.start_offset == 5


def test_load_with_state_and_a_moved_log_start() -> None:
    store = ShareStateStore()
    store.write_state(K0, 0, 0, 10, [], now=0)
    m = SharePartitions(lambda _g: CFG)
    sp = m.load(K0, store.read_state(K0), OffsetReset("latest"), 30, 90, never, now=0)
    assert sp.start_offset == 30  # retention took 10..29 meanwhile
    sp = m.load(K1, None, OffsetReset("latest"), 0, 90, never, now=0)
    assert sp.start_offset == 90


def test_acknowledge_per_partition_and_release_member() -> None:
    m = SharePartitions(lambda _g: CFG)
    for k in (K0, K1):
        m.load(k, None, OffsetReset("earliest"), 0, 0, never, now=0)
    sp0, sp1 = m.get(K0), m.get(K1)
    assert sp0 is not None and sp1 is not None
    sp0.acquire("a", [(0, 4)], 10, now=0)
    sp1.acquire("a", [(0, 4)], 10, now=0)
    results, updates = m.acknowledge(
        "g", "a", {(T, 0): [AckBatch(0, 4, (ACCEPT,))], (T, 1): [AckBatch(0, 9, (ACCEPT,))],
                   (T, 7): [AckBatch(0, 0, (ACCEPT,))]}, now=1)
    assert results[(T, 0)].error == ErrorCode.NONE
    assert results[(T, 1)].error == ErrorCode.INVALID_REQUEST  # past the in-flight records
    assert results[(T, 7)].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert [k for k, _ in updates] == [K0]
    assert m.next_deadline() == 100
    released = m.release_member("g", "a", now=2)
    assert [k for k, _ in released] == [K1]
    assert m.next_deadline() is None


def test_on_timer_expires_across_partitions() -> None:
    m = SharePartitions(lambda _g: CFG)
    for k in (K0, K1):
        sp = m.load(k, None, OffsetReset("earliest"), 0, 0, never, now=0)
        sp.acquire("a", [(0, 1)], 10, now=k.partition * 50)
    assert m.next_deadline() == 100
    assert [k for k, _ in m.on_timer(100)] == [K0]
    assert [k for k, _ in m.on_timer(150)] == [K1]


class CrashMachine(RuleBasedStateMachine):
    """Two members consume 30 records of one partition; every StateUpdate is written to the
    share-state log before the acknowledgement counts; a crash rebuilds everything from that
    log. Accepted records are never acquired again; at the end everything is accepted."""

    N = 30

    def __init__(self) -> None:
        super().__init__()
        self.log: list[KeyValue] = []
        self.now = 0
        self.accepted: set[int] = set()
        self.persisted: dict[int, RecordState] = {}  # terminal states written, per offset
        self.held: dict[str, list[tuple[int, int]]] = {"a": [], "b": []}
        self._boot()

    def _log_from(self, start: int) -> list[tuple[int, int]]:
        """The partition's log batches (3 records each) from `start` on."""
        return [(b, min(b + 2, self.N - 1)) for b in range(0, self.N, 3) if b + 2 >= start]

    def _boot(self) -> None:
        self.store = ShareStateStore(updates_per_snapshot=3)
        for k, v in self.log:
            self.store.replay(k, v)
        self.m = SharePartitions(lambda _g: CFG)
        self.m.load(K0, self.store.read_state(K0), OffsetReset("earliest"), 0, self.N, never,
                    self.now)
        self.held = {"a": [], "b": []}  # a crash ends every session

    def _persist(self, updates: list[tuple[SharePartitionKey, StateUpdate]]) -> None:
        for key, u in updates:
            sp = self.m.get(key)
            assert sp is not None
            res = self.store.write_state(key, sp.state_epoch, 0, u.start_offset, u.batches,
                                         self.now, u.delivery_complete_count)
            assert res.error == ErrorCode.NONE
            self.log += res.records
            for b in u.batches:
                state = RecordState(b.delivery_state)
                if state.is_terminal:
                    for o in range(b.first_offset, b.last_offset + 1):
                        assert o not in self.persisted, f"offset {o} finished twice"
                        self.persisted[o] = state

    @rule(member=st.sampled_from(["a", "b"]), n=st.integers(1, 8))
    def fetch(self, member: str, n: int) -> None:
        sp = self.m.get(K0)
        assert sp is not None
        start = sp.next_fetch_offset()
        if start >= self.N:
            return
        res = sp.acquire(member, self._log_from(start), n, self.now)
        if res.update is not None:
            self._persist([(K0, res.update)])
        for r in res.records:
            for o in range(r.first_offset, r.last_offset + 1):
                assert o not in self.accepted, f"accepted offset {o} delivered again"
            self.held[member].append((r.first_offset, r.last_offset))

    @rule(member=st.sampled_from(["a", "b"]), accept=st.booleans())
    def ack(self, member: str, accept: bool) -> None:
        if not self.held[member]:
            return
        first, last = self.held[member].pop(0)
        kind = ACCEPT if accept else RELEASE
        sp = self.m.get(K0)
        assert sp is not None
        start = sp.start_offset
        results, updates = self.m.acknowledge("g", member,
                                              {(T, 0): [AckBatch(first, last, (kind,))]},
                                              self.now)
        self._persist(updates)
        if results[(T, 0)].error == ErrorCode.NONE and accept:
            # Offsets below the start offset are finished already (archived): Kafka's
            # SharePartition.acknowledge skips them without an error, and so does Odradek.
            self.accepted |= set(range(max(first, start), last + 1))

    @rule(dt=st.integers(1, 120))
    def tick(self, dt: int) -> None:
        self.now += dt
        self._persist(self.m.on_timer(self.now))

    @rule()
    def crash(self) -> None:
        self._boot()

    @invariant()
    def persisted_matches(self) -> None:
        state = replay_records(self.log, 3).get(K0)
        sp = self.m.get(K0)
        assert sp is not None
        if state is not None:
            # Every move of the start offset was written with it.
            assert state.start_offset == sp.start_offset
        acked = {o for o, st_ in self.persisted.items() if st_ is RecordState.ACKNOWLEDGED}
        assert acked == self.accepted

    def teardown(self) -> None:
        # Drain after a last crash: everything not accepted yet comes back and is accepted.
        self.crash()
        for _ in range(CFG.delivery_count_limit + 2):
            self.now += 1000
            self._persist(self.m.on_timer(self.now))
            sp = self.m.get(K0)
            assert sp is not None
            start = sp.next_fetch_offset()
            if start >= self.N:
                break
            res = sp.acquire("a", self._log_from(start), self.N, self.now)
            for r in res.records:
                for o in range(r.first_offset, r.last_offset + 1):
                    assert o not in self.accepted
                results, updates = self.m.acknowledge(
                    "g", "a", {(T, 0): [AckBatch(r.first_offset, r.last_offset, (ACCEPT,))]},
                    self.now)
                assert results[(T, 0)].error == ErrorCode.NONE
                self._persist(updates)
                self.accepted |= set(range(r.first_offset, r.last_offset + 1))
        sp = self.m.get(K0)
        assert sp is not None
        assert sp.start_offset == self.N
        assert replay_records(self.log, 3)[K0].start_offset == self.N
        # Every record finished exactly once: accepted, or archived after too many
        # deliveries (released ones reach the limit); none lost.
        assert set(self.persisted) == set(range(self.N))
        archived = {o for o, st_ in self.persisted.items() if st_ is RecordState.ARCHIVED}
        assert archived.isdisjoint(self.accepted)
        assert archived | self.accepted == set(range(self.N))


CrashMachine.TestCase.settings = settings(max_examples=80, stateful_step_count=25,
                                          deadline=None)
test_crash_machine = CrashMachine.TestCase


def test_a_restart_keeps_out_of_order_acceptances() -> None:
    """b accepts 5..9 while a still holds 0..4; the broker dies. After the reload 0..4 are
    delivered again (never persisted: delivery count 1) and 5..9 never are."""
    store = ShareStateStore()
    log: list[KeyValue] = []
    m = SharePartitions(lambda _g: CFG)
    sp = m.load(K0, None, OffsetReset("earliest"), 0, 10, never, now=0)
    sp.acquire("a", [(0, 4), (5, 9)], 5, now=0)
    sp.acquire("b", [(5, 9)], 5, now=0)
    _, updates = m.acknowledge("g", "b", {(T, 0): [AckBatch(5, 9, (ACCEPT,))]}, now=1)
    for key, u in updates:
        log += store.write_state(key, 0, 0, u.start_offset, u.batches, 1).records
    rebuilt_store = ShareStateStore()
    for k, v in log:
        rebuilt_store.replay(k, v)
    m2 = SharePartitions(lambda _g: CFG)
    sp2 = m2.load(K0, rebuilt_store.read_state(K0), OffsetReset("latest"), 0, 10, never, now=2)
    assert sp2.start_offset == 0
    got = sp2.acquire("c", [(0, 4), (5, 9)], 100, now=2)
    assert [(r.first_offset, r.last_offset, r.delivery_count) for r in got.records] == [(0, 4, 1)]
    assert sp2.state_of(7) == (RecordState.ACKNOWLEDGED, 1, "")


def test_an_acknowledgement_below_the_start_offset_is_skipped_as_kafka_does() -> None:
    """Kafka's SharePartition.acknowledge: a batch wholly below the start offset ("already
    archived") is skipped without an error; nothing changes state."""
    cfg = SharePartitionConfig(record_lock_duration_ms=100, delivery_count_limit=2)
    m = SharePartitions(lambda _g: cfg)
    sp = m.load(K0, None, OffsetReset("earliest"), 0, 3, never, now=0)
    [r] = sp.acquire("a", [(0, 2)], 3, 0).records
    m.on_timer(100)  # lock expired: delivery 1 over
    [r] = sp.acquire("a", [(0, 2)], 3, 100).records
    assert r.delivery_count == 2
    results, _ = m.acknowledge("g", "a", {(T, 0): [AckBatch(0, 2, (RELEASE,))]}, 101)
    assert results[(T, 0)].error == ErrorCode.NONE
    assert sp.start_offset == 3  # the limit reached: archived, the start moved past them
    results, updates = m.acknowledge("g", "a", {(T, 0): [AckBatch(0, 2, (ACCEPT,))]}, 102)
    assert results[(T, 0)].error == ErrorCode.NONE
    assert updates == []
