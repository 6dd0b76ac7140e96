"""The sans-IO transaction coordinator with fake ports and a fake clock: the transition
table, InitProducerId fencing and KIP-360 retries, add/end/verify, timeouts, expiration,
persistence failures, recovery, and the `__transaction_state` record formats."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from odradek.coordinator.common import Pending
from odradek.coordinator.txn.coordinator import (
    ProducerIdsExhaustedError,
    TransactionCoordinator,
    TxnConfig,
)
from odradek.coordinator.txn.log_format import (
    TRANSACTION_STATE_TOPIC,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    java_string_hash,
    partition_for,
)
from odradek.coordinator.txn.state import (
    TRANSITIONS,
    IllegalTransitionError,
    TopicPartition,
    TxnMetadata,
    TxnState,
    TxnTransit,
)
from odradek.wire import ErrorCode

S = TxnState
TP1, TP2, OFFSETS = ("t", 0), ("t", 1), ("__consumer_offsets", 7)


@dataclass
class FakePorts:
    """The clock, the producer id source and the coordinator runtime's writes, in memory:
    every call through `Driven` is followed by a flush, as the runtime does."""

    now: int = 1_000
    next_pid: int = 100
    persisted: list[tuple[str, int, TxnMetadata | None]] = field(default_factory=list)
    markers: list[tuple[str, int, int, bool, frozenset[TopicPartition]]] = field(
        default_factory=list)
    fail_persist: bool = False
    fail_markers: set[TopicPartition] = field(default_factory=set)
    out_of_ids: bool = False
    raw_values: list[bytes | None] = field(default_factory=list)

    def now_ms(self) -> int:
        return self.now

    def next_producer_id(self) -> int:
        if self.out_of_ids:
            raise ProducerIdsExhaustedError("none left")
        self.next_pid += 1
        return self.next_pid - 1

    def flush(self, c: TransactionCoordinator) -> None:
        while writes := c.outbox.take():
            # the markers of one round of writes, per transaction: (pid, epoch, commit) -> done
            marked: dict[tuple[int, int, bool], set[TopicPartition]] = {}
            for w in writes:
                if w.marker is None:
                    assert w.topic == TRANSACTION_STATE_TOPIC and len(w.records) == 1
                    if self.fail_persist:
                        w.on_done(ErrorCode.NOT_ENOUGH_REPLICAS, -1)
                        continue
                    key, value = w.records[0]
                    self.raw_values.append(None if value is None else bytes(value))
                    tid = decode_key(key)
                    assert tid is not None
                    self.persisted.append((tid, w.partition, decode_value(tid, value)))
                    w.on_done(ErrorCode.NONE, len(self.persisted))
                    continue
                done = marked.setdefault((w.producer_id, w.producer_epoch, w.marker.commit),
                                         set())
                tp = (w.topic, w.partition)
                if tp in self.fail_markers:
                    w.on_done(ErrorCode.KAFKA_STORAGE_ERROR, -1)
                else:
                    done.add(tp)
                    w.on_done(ErrorCode.NONE, 0)
            for (pid, epoch, commit), done in marked.items():
                tid = next(t for t, m in c.txns.items() if pid in (m.producer_id,
                                                                    m.last_producer_id))
                self.markers.append((tid, pid, epoch, commit, frozenset(done)))

    def states(self, tid: str) -> list[TxnState]:
        return [t.state for i, _, t in self.persisted if i == tid and t is not None]


class Driven:
    """The coordinator as the runtime drives it: each call is followed by a flush of its
    writes, and a `Pending` answer is returned resolved."""

    def __init__(self, coordinator: TransactionCoordinator, ports: FakePorts) -> None:
        self._c = coordinator
        self._ports = ports

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._c, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kw: Any) -> Any:
            result = attr(*args, **kw)
            self._ports.flush(self._c)
            return result.result() if isinstance(result, Pending) else result

        return call


def coordinator(**config: int) -> tuple[Any, FakePorts]:
    ports = FakePorts()
    return Driven(TransactionCoordinator(TxnConfig(**config), ports, ports), ports), ports


def begin(c: Any, tid: str = "tx", *parts: TopicPartition
          ) -> tuple[int, int]:
    r = c.init_producer_id(tid, 60_000)
    assert r.error == ErrorCode.NONE
    if parts:
        assert c.add_partitions(tid, r.producer_id, r.producer_epoch, set(parts)) == ErrorCode.NONE
    return r.producer_id, r.producer_epoch


# -- the table ----------------------------------------------------------------------------------


def test_transition_table_is_kafkas() -> None:
    assert TRANSITIONS[S.PREPARE_COMMIT] == {S.ONGOING}
    # Kafka 4.x: under TV2 an abort may follow Empty/Complete* (nothing was added).
    assert TRANSITIONS[S.PREPARE_ABORT] == {S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY,
                                            S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    assert TRANSITIONS[S.COMPLETE_COMMIT] == {S.PREPARE_COMMIT}
    assert TRANSITIONS[S.EMPTY] == {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
    assert [s.id for s in S] == list(range(8))
    assert S.from_name("PrepareEpochFence") is S.PREPARE_EPOCH_FENCE and S.from_name("x") is None


@pytest.mark.parametrize("state", list(S))
def test_every_illegal_move_is_refused(state: TxnState) -> None:
    for target, sources in TRANSITIONS.items():
        meta = TxnMetadata("x", 1, 0, 1000, state, 0, txn_start_ms=5)
        meta.partitions.add(TP1)
        prepare = {
            S.ONGOING: lambda m: m.prepare_add_partitions({TP2}, 10),
            S.PREPARE_COMMIT: lambda m: m.prepare_abort_or_commit(S.PREPARE_COMMIT, 10),
            S.PREPARE_ABORT: lambda m: m.prepare_abort_or_commit(S.PREPARE_ABORT, 10),
            S.DEAD: lambda m: m.prepare_dead(),
            S.PREPARE_EPOCH_FENCE: lambda m: m.prepare_fence_producer_epoch(),
        }.get(target)
        if prepare is None:
            continue
        if state in sources:
            assert prepare(meta).state is target
        else:
            with pytest.raises(IllegalTransitionError):
                prepare(meta)


def test_a_pending_transition_blocks_another() -> None:
    meta = TxnMetadata("x", 1, 0, 1000, S.EMPTY, 0)
    meta.prepare_add_partitions({TP1}, 5)
    with pytest.raises(IllegalTransitionError, match="pending"):
        meta.prepare_add_partitions({TP2}, 5)
    meta.abort_transition()
    assert meta.prepare_add_partitions({TP2}, 5).partitions == {TP2}


# -- InitProducerId -----------------------------------------------------------------------------


def test_idempotent_producers_get_fresh_ids() -> None:
    c, ports = coordinator()
    a, b = c.init_producer_id(None, 0), c.init_producer_id(None, 0)
    assert (a.error, a.producer_id, a.producer_epoch) == (ErrorCode.NONE, 100, 0)
    assert b.producer_id == 101 and not ports.persisted
    ports.out_of_ids = True
    assert c.init_producer_id(None, 0).error == ErrorCode.COORDINATOR_NOT_AVAILABLE


@pytest.mark.parametrize(("tid", "timeout", "error"), [
    ("", 1000, ErrorCode.INVALID_REQUEST),
    ("tx", 0, ErrorCode.INVALID_TRANSACTION_TIMEOUT),
    ("tx", 900_001, ErrorCode.INVALID_TRANSACTION_TIMEOUT),
    ("tx", 900_000, ErrorCode.NONE),
])
def test_init_validates_id_and_timeout(tid: str, timeout: int, error: ErrorCode) -> None:
    c, _ = coordinator()
    assert c.init_producer_id(tid, timeout).error == error


def test_each_init_bumps_the_epoch_and_persists_empty() -> None:
    c, ports = coordinator()
    r1 = c.init_producer_id("tx", 5000)
    r2 = c.init_producer_id("tx", 6000)
    assert (r1.producer_id, r1.producer_epoch) == (100, 0)
    assert (r2.producer_id, r2.producer_epoch) == (100, 1)
    assert ports.states("tx") == [S.EMPTY, S.EMPTY]
    assert c.txns["tx"].timeout_ms == 6000
    # the old producer is fenced everywhere
    assert c.add_partitions("tx", 100, 0, {TP1}) == ErrorCode.PRODUCER_FENCED
    assert c.end_txn("tx", 100, 0, True) == ErrorCode.PRODUCER_FENCED


def test_init_while_a_transaction_is_open_aborts_it_first() -> None:
    c, ports = coordinator()
    pid, epoch = begin(c, "tx", TP1, TP2)
    r = c.init_producer_id("tx", 60_000)
    assert r.error == ErrorCode.CONCURRENT_TRANSACTIONS
    # the abort ran under a bumped epoch: markers fence the old producer on the partitions
    assert ports.markers[-1] == ("tx", pid, epoch + 1, False, frozenset({TP1, TP2}))
    assert ports.states("tx")[-2:] == [S.PREPARE_ABORT, S.COMPLETE_ABORT]
    assert c.txns["tx"].state is S.COMPLETE_ABORT and not c.txns["tx"].pending
    retry = c.init_producer_id("tx", 60_000)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (ErrorCode.NONE, pid,
                                                                      epoch + 2)


def test_kip_360_expected_epoch() -> None:
    c, _ = coordinator()
    pid, epoch = begin(c)
    bumped = c.init_producer_id("tx", 60_000, (pid, epoch))
    assert (bumped.error, bumped.producer_epoch) == (ErrorCode.NONE, epoch + 1)
    # a retry naming the previous epoch (the response was lost) gets the same epoch again
    again = c.init_producer_id("tx", 60_000, (pid, epoch))
    assert (again.error, again.producer_epoch) == (ErrorCode.NONE, epoch + 1)
    assert c.init_producer_id("tx", 60_000, (pid, epoch + 7)).error == ErrorCode.PRODUCER_FENCED
    assert c.init_producer_id("tx", 60_000, (999, 0)).error == ErrorCode.PRODUCER_FENCED


def test_an_exhausted_epoch_rotates_the_producer_id() -> None:
    c, _ = coordinator()
    pid, _ = begin(c)
    c.txns["tx"].producer_epoch = 32766
    r = c.init_producer_id("tx", 60_000, (pid, 32766))
    assert (r.error, r.producer_epoch) == (ErrorCode.NONE, 0) and r.producer_id != pid
    assert c.txns["tx"].last_producer_id == pid
    # a retry with the old id and its exhausted epoch is still recognised
    assert c.init_producer_id("tx", 60_000, (pid, 32766)).error == ErrorCode.NONE


def test_a_failed_persist_leaves_the_state_unchanged() -> None:
    c, ports = coordinator()
    pid, epoch = begin(c)
    ports.fail_persist = True
    assert c.init_producer_id("tx", 60_000).error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert c.add_partitions("tx", pid, epoch, {TP1}) == ErrorCode.COORDINATOR_NOT_AVAILABLE
    meta = c.txns["tx"]
    assert (meta.state, meta.producer_epoch, meta.pending) == (S.EMPTY, epoch, False)


def test_a_failed_fence_does_not_bump_twice() -> None:
    c, ports = coordinator()
    _pid, epoch = begin(c, "tx", TP1)
    ports.fail_persist = True
    assert c.init_producer_id("tx", 60_000).error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    meta = c.txns["tx"]
    assert meta.state is S.ONGOING and meta.has_failed_epoch_fence and not meta.pending
    ports.fail_persist = False
    assert c.init_producer_id("tx", 60_000).error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert ports.markers[-1][2] == epoch + 1  # the in-memory bump is reused, not repeated


# -- add, verify, end -----------------------------------------------------------------------------


def test_add_partitions_checks_the_producer() -> None:
    c, ports = coordinator()
    pid, epoch = begin(c)
    assert c.add_partitions("nope", pid, epoch, {TP1}) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert c.add_partitions("tx", pid + 1, epoch, {TP1}) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert c.add_partitions("tx", pid, epoch + 1, {TP1}) == ErrorCode.PRODUCER_FENCED
    assert c.add_partitions("", pid, epoch, {TP1}) == ErrorCode.INVALID_REQUEST
    ports.now = 5_000
    assert c.add_partitions("tx", pid, epoch, {TP1}) == ErrorCode.NONE
    written = len(ports.persisted)
    assert c.add_partitions("tx", pid, epoch, {TP1}) == ErrorCode.NONE  # known: no write
    assert len(ports.persisted) == written
    ports.now = 6_000
    assert c.add_partitions("tx", pid, epoch, {TP2}) == ErrorCode.NONE
    meta = c.txns["tx"]
    assert meta.partitions == {TP1, TP2} and meta.txn_start_ms == 5_000


def test_verify_partitions() -> None:
    c, _ = coordinator()
    pid, epoch = begin(c, "tx", TP1)
    assert c.verify_partitions("tx", pid, epoch, {TP1, TP2}) == {
        TP1: ErrorCode.NONE, TP2: ErrorCode.TRANSACTION_ABORTABLE}
    assert c.verify_partitions("tx", pid, epoch + 1, {TP1}) == {TP1: ErrorCode.PRODUCER_FENCED}
    assert c.is_partition_in_transaction("tx", pid, epoch, TP1)
    assert not c.is_partition_in_transaction("tx", pid, epoch, TP2)


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_writes_markers_then_completes(commit: bool) -> None:
    c, ports = coordinator()
    pid, epoch = begin(c, "tx", TP1, OFFSETS)
    assert c.end_txn("tx", pid, epoch, commit) == ErrorCode.NONE
    assert ports.markers == [("tx", pid, epoch, commit, frozenset({TP1, OFFSETS}))]
    prepare, complete = ((S.PREPARE_COMMIT, S.COMPLETE_COMMIT) if commit
                         else (S.PREPARE_ABORT, S.COMPLETE_ABORT))
    assert ports.states("tx")[-2:] == [prepare, complete]
    meta = c.txns["tx"]
    assert meta.state is complete and not meta.partitions
    # a retry of the same EndTxn succeeds; the opposite one is refused
    assert c.end_txn("tx", pid, epoch, commit) == ErrorCode.NONE
    assert c.end_txn("tx", pid, epoch, not commit) == ErrorCode.INVALID_TXN_STATE
    # the next transaction starts from Complete*
    assert c.add_partitions("tx", pid, epoch, {TP2}) == ErrorCode.NONE


def test_end_txn_without_a_transaction_and_with_a_stale_epoch() -> None:
    c, _ = coordinator()
    pid, epoch = begin(c)
    assert c.end_txn("tx", pid, epoch, True) == ErrorCode.INVALID_TXN_STATE
    assert c.end_txn("unknown", pid, epoch, True) == ErrorCode.INVALID_PRODUCER_ID_MAPPING
    c.add_partitions("tx", pid, epoch, {TP1})
    assert c.end_txn("tx", pid, epoch - 1, True) == ErrorCode.PRODUCER_FENCED
    assert c.end_txn("tx", pid, epoch + 1, True) == ErrorCode.PRODUCER_FENCED


def test_failed_markers_keep_the_transaction_preparing_until_retried() -> None:
    c, ports = coordinator()
    pid, epoch = begin(c, "tx", TP1, TP2)
    ports.fail_markers = {TP2}
    assert c.end_txn("tx", pid, epoch, True) == ErrorCode.NONE  # PrepareCommit is durable
    meta = c.txns["tx"]
    assert meta.state is S.PREPARE_COMMIT and meta.partitions == {TP2}
    assert c.add_partitions("tx", pid, epoch, {TP1}) == ErrorCode.CONCURRENT_TRANSACTIONS
    assert c.init_producer_id("tx", 60_000).error == ErrorCode.CONCURRENT_TRANSACTIONS
    assert c.end_txn("tx", pid, epoch, True) == ErrorCode.CONCURRENT_TRANSACTIONS
    ports.fail_markers = set()
    assert c.retry_markers() == 1
    assert meta.state is S.COMPLETE_COMMIT
    assert ports.markers[-1][4] == {TP2}


# -- timers -------------------------------------------------------------------------------------


def test_timed_out_transactions_are_aborted_and_fenced() -> None:
    c, ports = coordinator()
    r = c.init_producer_id("tx", 10_000)
    pid, epoch = r.producer_id, r.producer_epoch
    ports.now = 2_000
    c.add_partitions("tx", pid, epoch, {TP1})
    ports.now = 12_000  # start + timeout, not past it
    assert c.abort_timed_out() == []
    ports.now = 12_001
    assert c.abort_timed_out() == ["tx"]
    assert ports.markers[-1] == ("tx", pid, epoch + 1, False, frozenset({TP1}))
    assert c.txns["tx"].state is S.COMPLETE_ABORT
    assert c.end_txn("tx", pid, epoch, True) == ErrorCode.PRODUCER_FENCED
    assert c.abort_timed_out() == []


def test_idle_transactional_ids_expire_with_a_tombstone() -> None:
    c, ports = coordinator(id_expiration_ms=1_000)
    begin(c, "idle")
    pid, epoch = begin(c, "busy", TP1)
    ports.now += 1_000
    assert c.expire_transactional_ids() == ["idle"]
    assert ports.persisted[-1] == ("idle", c.partition_for("idle"), None)
    assert "idle" not in c.txns and "busy" in c.txns  # Ongoing never expires
    assert c.describe("idle") == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    c.end_txn("busy", pid, epoch, True)
    ports.now += 999
    assert c.expire_transactional_ids() == []


# -- recovery, describe, list ---------------------------------------------------------------------


def test_recovery_completes_prepared_transactions() -> None:
    c, ports = coordinator()
    pid, epoch = begin(c, "tx", TP1)
    ports.fail_markers = {TP1}
    c.end_txn("tx", pid, epoch, False)
    begin(c, "other", TP2)
    # a new coordinator replays what the first one persisted
    fresh, ports2 = coordinator()
    fresh.load((tid, t) for tid, _, t in ports.persisted)
    assert fresh.txns["tx"].state is S.PREPARE_ABORT and fresh.txns["tx"].partitions == {TP1}
    assert fresh.complete_recovered() == 1
    assert ports2.markers == [("tx", pid, epoch, False, frozenset({TP1}))]
    assert fresh.txns["tx"].state is S.COMPLETE_ABORT
    assert fresh.txns["other"].state is S.ONGOING  # left to its timeout or its producer


def test_describe_and_list() -> None:
    c, ports = coordinator()
    pid, _epoch = begin(c, "a", TP1, TP2)
    begin(c, "b")
    ports.now += 5_000
    d = c.describe("a")
    assert not isinstance(d, ErrorCode)
    assert (d.state, d.producer_id, d.partitions, d.txn_start_ms) == (
        S.ONGOING, pid, {TP1, TP2}, 1_000)
    assert c.describe("") == ErrorCode.INVALID_REQUEST
    assert c.list_transactions([], []) == ([], [("a", pid, S.ONGOING), ("b", pid + 1, S.EMPTY)])
    assert c.list_transactions(["Ongoing", "Bogus"], []) == (["Bogus"], [("a", pid, S.ONGOING)])
    assert c.list_transactions([], [pid + 1]) == ([], [("b", pid + 1, S.EMPTY)])
    # Kafka's duration filter compares with the start time, -1 outside a transaction, so
    # ids without a transaction always pass it
    assert c.list_transactions([], [], 4_999) == ([], [("a", pid, S.ONGOING),
                                                       ("b", pid + 1, S.EMPTY)])
    assert c.list_transactions(["Ongoing"], [], 5_000) == ([], [])


# -- the __transaction_state formats ---------------------------------------------------------------


def test_java_hash_and_partition() -> None:
    # values from Java's String.hashCode
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("transactional-id-with-a-long-name") == 250317943
    assert java_string_hash("\U0001f600") == 1772899  # a surrogate pair
    assert partition_for("transactional-id-with-a-long-name", 50) == 250317943 % 50
    assert partition_for("polygenelubricants", 50) == 0  # hashCode is Integer.MIN_VALUE


def test_log_records_round_trip_in_kafkas_layout() -> None:
    key = encode_key("my-txn")
    assert key == b"\x00\x00\x00\x06my-txn"
    assert decode_key(key) == "my-txn"
    transit = TxnTransit(7, -1, 3, -1, 60_000, S.ONGOING, frozenset({TP1, TP2, OFFSETS}),
                         1_000, 2_000)
    value = encode_value(transit)
    assert value[:2] == b"\x00\x00"
    # producer id, epoch, timeout, status, then 2 topics (sorted), then timestamps
    assert value[2:10] == (7).to_bytes(8, "big") and value[10:12] == b"\x00\x03"
    assert value[16] == 1
    meta = decode_value("my-txn", value)
    assert meta is not None
    assert (meta.producer_id, meta.producer_epoch, meta.state, meta.partitions,
            meta.txn_start_ms, meta.last_update_ms) == (7, 3, S.ONGOING, {TP1, TP2, OFFSETS},
                                                        1_000, 2_000)
    empty = encode_value(TxnTransit(7, -1, 4, -1, 60_000, S.EMPTY, frozenset(), -1, 3_000))
    assert empty[17:21] == b"\xff\xff\xff\xff"  # null partitions for Empty
    assert decode_value("my-txn", None) is None
    assert decode_key(b"\x00\x09xx") is None  # a future key version is skipped


# -- transactions v2 (KIP-890 part 2), as Kafka 4.x's TransactionCoordinator ----------------


def begin_v2(c: Any, tid: str = "tx", *parts: TopicPartition) -> tuple[int, int]:
    r = c.init_producer_id(tid, 60_000)
    assert r.error == ErrorCode.NONE
    if parts:  # the implicit add of Produce v12+ / AddPartitionsToTxn v4+
        assert c.add_partitions(tid, r.producer_id, r.producer_epoch, set(parts),
                                client_tv=2) == ErrorCode.NONE
    return r.producer_id, r.producer_epoch


@pytest.mark.parametrize("commit", [True, False])
def test_v2_end_bumps_the_epoch_and_the_markers_carry_it(commit: bool) -> None:
    c, ports = coordinator(transaction_version=2)
    pid, epoch = begin_v2(c, "tx", TP1, OFFSETS)
    result = c.end_transaction("tx", pid, epoch, commit, client_tv=2)
    assert (result.error, result.producer_id, result.producer_epoch) == (
        ErrorCode.NONE, pid, epoch + 1)
    assert ports.markers == [("tx", pid, epoch + 1, commit, frozenset({TP1, OFFSETS}))]
    meta = c.txns["tx"]
    assert meta.state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    assert (meta.producer_epoch, meta.last_producer_epoch, meta.client_tv) == (
        epoch + 1, epoch, 2)
    # the next transaction runs at the returned epoch, the old one is fenced
    assert c.add_partitions("tx", pid, epoch, {TP2}, client_tv=2) == ErrorCode.PRODUCER_FENCED
    assert c.add_partitions("tx", pid, epoch + 1, {TP2}, client_tv=2) == ErrorCode.NONE


def test_v2_a_retry_one_epoch_behind_gets_the_same_answer() -> None:
    c, ports = coordinator(transaction_version=2)
    pid, epoch = begin_v2(c, "tx", TP1)
    assert c.end_transaction("tx", pid, epoch, True, client_tv=2).error == ErrorCode.NONE
    written = len(ports.persisted)
    retry = c.end_transaction("tx", pid, epoch, True, client_tv=2)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (
        ErrorCode.NONE, pid, epoch + 1)
    assert len(ports.persisted) == written  # nothing written again
    # the other result one epoch behind is INVALID_TXN_STATE; two behind is fenced
    assert c.end_transaction("tx", pid, epoch, False, client_tv=2).error == \
        ErrorCode.INVALID_TXN_STATE
    assert c.end_transaction("tx", pid, epoch - 1, True, client_tv=2).error == \
        ErrorCode.PRODUCER_FENCED
    # the same epoch as the completed one is a new EndTxn: commit with nothing open is
    # INVALID_TXN_STATE, abort bumps once more (an "empty" abort)
    assert c.end_transaction("tx", pid, epoch + 1, True, client_tv=2).error == \
        ErrorCode.INVALID_TXN_STATE
    aborted = c.end_transaction("tx", pid, epoch + 1, False, client_tv=2)
    assert (aborted.error, aborted.producer_epoch) == (ErrorCode.NONE, epoch + 2)
    assert c.txns["tx"].state is S.COMPLETE_ABORT


def test_v2_abort_from_empty_bumps_and_a_retry_while_marking_is_concurrent() -> None:
    c, ports = coordinator(transaction_version=2)
    pid, epoch = begin_v2(c, "tx")
    # Empty: abort at the current epoch bumps, commit is INVALID_TXN_STATE
    assert c.end_transaction("tx", pid, epoch, True, client_tv=2).error == \
        ErrorCode.INVALID_TXN_STATE
    r = c.end_transaction("tx", pid, epoch, False, client_tv=2)
    assert (r.error, r.producer_epoch) == (ErrorCode.NONE, epoch + 1)
    assert ports.markers == []  # nothing was added: no markers
    assert ports.states("tx")[-2:] == [S.PREPARE_ABORT, S.COMPLETE_ABORT]
    # a marker that fails keeps PrepareCommit: the retry one epoch behind must wait
    assert c.add_partitions("tx", pid, epoch + 1, {TP1}, client_tv=2) == ErrorCode.NONE
    ports.fail_markers = {TP1}
    assert c.end_transaction("tx", pid, epoch + 1, True, client_tv=2).error == ErrorCode.NONE
    assert c.txns["tx"].state is S.PREPARE_COMMIT
    assert c.end_transaction("tx", pid, epoch + 1, True, client_tv=2).error == \
        ErrorCode.CONCURRENT_TRANSACTIONS
    assert c.end_transaction("tx", pid, epoch + 1, False, client_tv=2).error == \
        ErrorCode.INVALID_TXN_STATE
    assert c.end_transaction("tx", pid, epoch + 2, True, client_tv=2).error == \
        ErrorCode.PRODUCER_FENCED  # "current" during the markers is not valid: only a retry


def test_v2_an_exhausted_epoch_moves_to_the_next_producer_id_on_completion() -> None:
    c, ports = coordinator(transaction_version=2)
    pid, _ = begin_v2(c, "tx", TP1)
    meta = c.txns["tx"]
    meta.producer_epoch = 32766  # Short.MAX_VALUE - 1: the last epoch a client may hold
    r = c.end_transaction("tx", pid, 32766, True, client_tv=2)
    assert (r.error, r.producer_id, r.producer_epoch) == (ErrorCode.NONE, 101, 0)
    assert ports.markers[-1] == ("tx", pid, 32767, True, frozenset({TP1}))
    assert (meta.producer_id, meta.producer_epoch, meta.last_producer_id) == (101, 0, pid)
    assert meta.last_producer_epoch == 32766
    # the retry names the old producer id one epoch... behind the overflow
    retry = c.end_transaction("tx", pid, 32766, True, client_tv=2)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (ErrorCode.NONE, 101, 0)


def test_v1_clients_keep_the_classic_rules_on_a_v2_coordinator() -> None:
    c, ports = coordinator(transaction_version=2)
    pid, epoch = begin(c, "tx", TP1)  # AddPartitionsToTxn v0-3: client_tv 0
    assert c.end_txn("tx", pid, epoch, True) == ErrorCode.NONE  # EndTxn v0-4
    assert ports.markers == [("tx", pid, epoch, True, frozenset({TP1}))]  # no bump
    assert c.txns["tx"].producer_epoch == epoch
    assert c.end_txn("tx", pid, epoch, True) == ErrorCode.NONE  # the classic retry
    assert c.end_txn("tx", pid, epoch, False) == ErrorCode.INVALID_TXN_STATE


def test_v2_timeout_abort_fences_with_one_bump() -> None:
    c, ports = coordinator(transaction_version=2)
    pid, epoch = begin_v2(c, "tx", TP1)
    ports.now += 60_001
    assert c.abort_timed_out() == ["tx"]
    assert ports.markers[-1] == ("tx", pid, epoch + 1, False, frozenset({TP1}))
    assert c.txns["tx"].state is S.COMPLETE_ABORT
    assert c.end_transaction("tx", pid, epoch, True, client_tv=2).error == \
        ErrorCode.INVALID_TXN_STATE  # the producer's commit after its abort (a retry)


def test_v2_state_is_written_as_value_v1_and_replayed() -> None:
    c, ports = coordinator(transaction_version=2)
    pid, _epoch = begin_v2(c, "tx", TP1)
    ongoing = ports.persisted[-1][2]
    assert ongoing is not None and ongoing.client_tv == 2
    meta = c.txns["tx"]
    meta.producer_epoch = 32766
    c.end_transaction("tx", pid, 32766, True, client_tv=2)
    prepare = [m for t, _, m in ports.persisted if m is not None and m.state is S.PREPARE_COMMIT]
    assert prepare[-1].next_producer_id == 101 and prepare[-1].producer_epoch == 32767
    # a coordinator replaying the records (a restart after kill -9) has the same state
    fresh, _ = coordinator(transaction_version=2)
    fresh.load([(t, m) for t, _, m in ports.persisted])
    again = fresh.txns["tx"]
    assert (again.state, again.producer_id, again.producer_epoch, again.client_tv) == (
        S.COMPLETE_COMMIT, 101, 0, 2)
    assert again.last_producer_id == pid  # the overflow retry still works after a restart
    r = fresh.end_transaction("tx", pid, 32766, True, client_tv=2)
    assert (r.error, r.producer_id, r.producer_epoch) == (ErrorCode.NONE, 101, 0)


def test_value_versions_follow_the_finalized_level() -> None:
    transit = TxnTransit(7, 7, 3, 2, 1000, S.ONGOING, frozenset({TP1}), 5, 6, client_tv=2)
    v0, v1 = encode_value(transit, 0), encode_value(transit, 1)
    assert v0[:2] == b"\x00\x00" and v1[:2] == b"\x00\x01"
    assert decode_value("x", v0).client_tv == 0  # type: ignore[union-attr]
    decoded = decode_value("x", v1)
    assert decoded is not None and (decoded.client_tv, decoded.producer_epoch) == (2, 3)
    for level, prefix in ((0, b"\x00\x00"), (1, b"\x00\x01"), (2, b"\x00\x01")):
        c, ports = coordinator(transaction_version=level)
        begin(c, "tx", TP1)
        assert ports.raw_values and all(v is not None and v[:2] == prefix
                                        for v in ports.raw_values), level
