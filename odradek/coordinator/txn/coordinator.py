"""The transaction coordinator (Kafka's TransactionCoordinator), sans IO.

A shard of the coordinator runtime (`coordinator/common.py`) over `__transaction_state`:
every transition is persisted as one record through `outbox` before it takes effect (the
write's acknowledgement completes or abandons it), and COMMIT/ABORT markers go out through the
same outbox as control-batch `Write`s to each partition of the transaction. Producer ids come
from an injected `ProducerIdSource` (the broker persists id blocks), time from a `Clock`.
Operations return `Pending` answers, complete once their writes are acknowledged.

Behaviour follows Kafka 3.9 with the classic protocol (transaction.version 1, which is what
clients use when the broker advertises no `transaction.version` feature):

- InitProducerId without a transactional id: a fresh producer id, epoch 0, on every call.
  With one: INVALID_REQUEST for "", INVALID_TRANSACTION_TIMEOUT unless 0 < timeout <=
  `transaction.max.timeout.ms`; a new id gets a producer id and epoch 0; an existing one gets
  its epoch bumped (which fences the previous producer; a new producer id once the epoch is
  exhausted). A given (producer id, epoch) must match (KIP-360: a retry naming the previous
  epoch gets the current one again), else PRODUCER_FENCED. While a transaction is open it is
  aborted under a bumped epoch first and the caller gets CONCURRENT_TRANSACTIONS, so it
  retries and bumps once more.
- AddPartitionsToTxn / AddOffsetsToTxn: INVALID_PRODUCER_ID_MAPPING for an unknown id or
  another producer id, PRODUCER_FENCED for another epoch, CONCURRENT_TRANSACTIONS while a
  transition or commit/abort is in progress; adding known partitions to an Ongoing
  transaction answers at once.
- EndTxn: the same checks; COMMIT/ABORT from Ongoing goes to PrepareCommit/PrepareAbort,
  markers are written to every partition, then CompleteCommit/CompleteAbort. A retry of a
  completed EndTxn with the same result succeeds; the opposite result, or EndTxn with no
  transaction, is INVALID_TXN_STATE.
- Transactions v2 (KIP-890 part 2; Kafka 4.x's TransactionCoordinator), for transactions
  whose client used it (`client_tv` 2: EndTxn v5+, AddPartitionsToTxn v4+, the implicit adds
  of Produce v12+ and TxnOffsetCommit v5+): PrepareCommit/PrepareAbort bump the epoch, the
  markers carry the bumped epoch, and EndTxn answers with the producer id and epoch to use
  next (the next producer id at epoch 0 once the epoch ran out). A retry one epoch behind
  after the end succeeds with the same result (INVALID_TXN_STATE for the other), during the
  markers it is CONCURRENT_TRANSACTIONS; any other epoch is PRODUCER_FENCED. An abort with no
  transaction open (Empty, CompleteCommit, CompleteAbort at the current epoch) bumps the
  epoch too. Aborts the coordinator starts itself (timeouts, InitProducerId's fence) use
  the broker's finalized `transaction.version`, as Kafka does.
- A failed write of `__transaction_state` answers COORDINATOR_NOT_AVAILABLE (the client
  retries). A marker is done once written, or when its partition is gone or refuses it (a
  newer epoch or coordinator wrote there: it would never be accepted); other failures are
  retried by the timer.
- Timers: every `transaction.abort.timed.out.transaction.cleanup.interval.ms` a transaction
  open longer than its timeout is aborted under a bumped epoch (so its producer is fenced)
  and failed markers are retried; every
  `transaction.remove.expired.transaction.cleanup.interval.ms` transactional ids idle in
  Empty/Complete* for `transactional.id.expiration.ms` are removed with a tombstone.
- On load the state is replayed from `__transaction_state` (last record per id wins,
  tombstones delete); transactions found in PrepareCommit/PrepareAbort are completed by the
  first timer after the load.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from odradek.coordinator.common import Clock, Marker, Outbox, Pending, Write
from odradek.coordinator.txn.log_format import (
    TRANSACTION_STATE_TOPIC,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
)
from odradek.coordinator.txn.state import (
    EXPIRABLE,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    TopicPartition,
    TxnMetadata,
    TxnState,
    TxnTransit,
    is_epoch_exhausted,
)
from odradek.wire import ErrorCode
from odradek.wire.records import RecordBatch

E, ON = TxnState.EMPTY, TxnState.ONGOING
PC, PA = TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT
CC, CA = TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT
D, PF = TxnState.DEAD, TxnState.PREPARE_EPOCH_FENCE

# A marker write answered with one of these is done: the partition is gone, or it refuses
# the marker for good (a newer producer epoch or coordinator epoch wrote there).
_MARKER_FINAL = frozenset({
    ErrorCode.NONE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.PRODUCER_FENCED,
    ErrorCode.INVALID_TXN_STATE,
    ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
})


class ProducerIdsExhaustedError(Exception):
    """The producer id allocator cannot hand out another id."""


class ProducerIdSource(Protocol):
    def next_producer_id(self) -> int:
        """A producer id never handed out before (persisted before it is returned); raises
        ProducerIdsExhaustedError or OSError."""
        ...


@dataclass(frozen=True, slots=True)
class TxnConfig:
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    state_partitions: int = 50  # transaction.state.log.num.partitions
    id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms
    coordinator_epoch: int = 0  # single node: the leader epoch of __transaction_state
    abort_interval_ms: int = 10_000  # transaction.abort.timed.out.transaction.cleanup.interval.ms
    id_expiry_interval_ms: int = 3_600_000  # ....remove.expired.transaction.cleanup.interval.ms
    # The finalized transaction.version: the record format (0: TransactionLogValue v0, else
    # the flexible v1) and the version of the aborts the coordinator starts itself.
    transaction_version: int = 0


@dataclass(frozen=True, slots=True)
class InitResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class EndResult:
    """EndTxn's answer; v5+ clients continue with (producer_id, producer_epoch)."""

    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class TxnDescription:
    transactional_id: str
    state: TxnState
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    txn_start_ms: int
    partitions: frozenset[TopicPartition]


def _no_log(event: str, **kw: Any) -> None:
    pass


class TransactionCoordinator:
    def __init__(self, config: TxnConfig, clock: Clock, producer_ids: ProducerIdSource, *,
                 log: Callable[..., None] = _no_log) -> None:
        self.config = config
        self._clock = clock
        self._producer_ids = producer_ids
        self._log = log
        self.txns: dict[str, TxnMetadata] = {}
        self.outbox = Outbox()
        self._loaded_records = 0
        self._recover_due = False
        self._next_abort: int | None = None
        self._next_id_expiry: int | None = None
        self._marking: set[str] = set()  # transactions whose markers are being written

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.state_partitions)

    def now(self) -> int:
        return self._clock.now_ms()

    # -- persistence ----------------------------------------------------------------------------

    def _write_state(self, transactional_id: str, transit: TxnTransit | None,
                     on_done: Callable[[ErrorCode], None]) -> None:
        """Queue one `__transaction_state` record (None: a tombstone)."""
        value = (None if transit is None
                 else encode_value(transit, 0 if self.config.transaction_version == 0 else 1))
        self.outbox.write(Write(TRANSACTION_STATE_TOPIC, self.partition_for(transactional_id),
                                [(encode_key(transactional_id), value)],
                                lambda error, _offset: on_done(error)))

    def _persist(self, meta: TxnMetadata, transit: TxnTransit) -> Pending[ErrorCode]:
        """Persist a prepared transit and complete it, or forget it on failure."""
        answer: Pending[ErrorCode] = Pending()

        def written(error: ErrorCode) -> None:
            if error != ErrorCode.NONE:
                meta.abort_transition()
                answer.resolve(ErrorCode.COORDINATOR_NOT_AVAILABLE)
                return
            meta.complete_transition(transit)
            answer.resolve(ErrorCode.NONE)

        self._write_state(meta.transactional_id, transit, written)
        return answer

    # -- load -----------------------------------------------------------------------------------

    def unload_partition(self, partition: int) -> list[str]:
        """Drop the transactional ids of one `__transaction_state` partition (its leadership
        moved away, as Kafka's removeTransactionsForTxnTopicPartition). Returns them."""
        gone = [tid for tid in self.txns if self.partition_for(tid) == partition]
        for tid in gone:
            del self.txns[tid]
        return gone

    def begin_load(self) -> None:
        self._loaded_records = 0

    def replay(self, batch: RecordBatch) -> None:
        """Replay one batch of `__transaction_state` in log order (markers are skipped)."""
        if batch.is_control:
            return
        decoded = [(tid, decode_value(tid, r.value)) for r in batch.records()
                   if r.key is not None and (tid := decode_key(r.key)) is not None]
        self._loaded_records += len(decoded)
        self.load(decoded)

    def load(self, records: Iterable[tuple[str, TxnMetadata | None]]) -> None:
        """Apply decoded records in log order (None: a tombstone)."""
        for tid, meta in records:
            if meta is None:
                self.txns.pop(tid, None)
            else:
                self.txns[tid] = meta

    def finish_load(self) -> None:
        """Transactions caught between prepare and complete are finished by the next timer."""
        self._recover_due = True
        self._log("transaction coordinator loaded", records=self._loaded_records,
                  transactional_ids=len(self.txns),
                  unfinished=sum(m.state in (PC, PA) for m in self.txns.values()))

    def complete_recovered(self) -> int:
        """After loading: finish transactions caught between prepare and complete. Returns
        how many were found."""
        self._recover_due = False
        found = 0
        for meta in list(self.txns.values()):
            if meta.state in (PC, PA) and not meta.pending:
                found += 1
                self._write_markers(meta)
        if found:
            self._log("completing transactions left unfinished at shutdown", count=found)
        return found

    # -- timers ---------------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        now = self.now()
        if self._recover_due:
            return now
        if self._next_abort is None:
            self._next_abort = now + self.config.abort_interval_ms
        if self._next_id_expiry is None:
            self._next_id_expiry = now + self.config.id_expiry_interval_ms
        return min(self._next_abort, self._next_id_expiry)

    def on_timer(self, now: int) -> None:
        """Recover after a load; abort timed-out transactions and retry failed markers; expire
        idle transactional ids; each when its interval has passed."""
        if self._recover_due:
            self.complete_recovered()
        if self._next_abort is None or now >= self._next_abort:
            self._next_abort = now + self.config.abort_interval_ms
            for tid in self.abort_timed_out():
                self._log("aborted timed-out transaction", transactional_id=tid)
            self.retry_markers()
        if self._next_id_expiry is None or now >= self._next_id_expiry:
            self._next_id_expiry = now + self.config.id_expiry_interval_ms
            for tid in self.expire_transactional_ids():
                self._log("expired transactional id", transactional_id=tid)

    # -- InitProducerId -------------------------------------------------------------------------

    def _new_producer_id(self) -> int | None:
        try:
            return self._producer_ids.next_producer_id()
        except (ProducerIdsExhaustedError, OSError) as exc:
            self._log("cannot allocate a producer id", error=str(exc))
            return None

    def init_producer_id(self, transactional_id: str | None, timeout_ms: int,
                         expected: tuple[int, int] | None = None) -> Pending[InitResult]:
        """`expected` is the (producer id, epoch) a KIP-360 client already holds."""
        answer = Pending.resolved
        if transactional_id is None:
            pid = self._new_producer_id()
            if pid is None:
                return answer(InitResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return answer(InitResult(ErrorCode.NONE, pid, 0))
        if transactional_id == "":
            return answer(InitResult(ErrorCode.INVALID_REQUEST))
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return answer(InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT))
        now = self.now()
        meta = self.txns.get(transactional_id)
        if meta is None:
            pid = self._new_producer_id()
            if pid is None:
                return answer(InitResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            meta = TxnMetadata(transactional_id, pid, NO_PRODUCER_EPOCH, timeout_ms, E, now)
            self.txns[transactional_id] = meta
        if meta.pending:
            return answer(InitResult(ErrorCode.CONCURRENT_TRANSACTIONS))
        if expected is not None and not self._valid_expected(meta, expected):
            return answer(InitResult(ErrorCode.PRODUCER_FENCED))
        state = meta.state
        if state in (PC, PA):
            return answer(InitResult(ErrorCode.CONCURRENT_TRANSACTIONS))
        if state is ON:
            # Abort the open transaction under a bumped epoch; the caller retries and gets
            # another bump (a new producer id if that exhausted the epochs).
            fence = meta.prepare_fence_producer_epoch()
            fenced = meta

            def aborted(result: EndResult) -> InitResult:
                if fenced.pending_state is PF:
                    fenced.abort_transition()
                error = result.error
                return InitResult(error if error != ErrorCode.NONE
                                  else ErrorCode.CONCURRENT_TRANSACTIONS)

            return self._end(meta, fence.producer_id, fence.producer_epoch, commit=False,
                             from_client=False, client_tv=self.config.transaction_version
                             ).then(aborted)
        if state not in (E, CC, CA):
            raise RuntimeError(f"{transactional_id}: InitProducerId in state {state.display}")
        if meta.epoch_exhausted and (expected is None or expected[1] == meta.producer_epoch):
            new_pid = self._new_producer_id()
            if new_pid is None:
                return answer(InitResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            transit = meta.prepare_producer_id_rotation(new_pid, timeout_ms, now,
                                                        expected is not None)
        else:
            bumped = meta.prepare_increment_producer_epoch(
                timeout_ms, None if expected is None else expected[1], now)
            if bumped is None:
                return answer(InitResult(ErrorCode.PRODUCER_FENCED))
            transit = bumped
        persisted = meta

        def initialised(error: ErrorCode) -> InitResult:
            if error != ErrorCode.NONE:
                return InitResult(error)
            return InitResult(ErrorCode.NONE, persisted.producer_id, persisted.producer_epoch)

        return self._persist(meta, transit).then(initialised)

    @staticmethod
    def _valid_expected(meta: TxnMetadata, expected: tuple[int, int]) -> bool:
        pid, epoch = expected
        return (meta.producer_epoch == NO_PRODUCER_EPOCH or pid == meta.producer_id
                or (pid == meta.last_producer_id and is_epoch_exhausted(epoch)))

    # -- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------------

    def _check_producer(self, transactional_id: str, producer_id: int, producer_epoch: int
                        ) -> TxnMetadata | ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        meta = self.txns.get(transactional_id)
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if meta.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        return meta

    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: set[TopicPartition], client_tv: int = 0
                       ) -> Pending[ErrorCode]:
        """`client_tv` 2: AddPartitionsToTxn v4+ or an implicit add (Produce v12+,
        TxnOffsetCommit v5+). A pending transition is answered CONCURRENT_TRANSACTIONS before
        the producer is checked (under TV2 it may be moving to a new producer id)."""
        if not transactional_id:
            return Pending.resolved(ErrorCode.INVALID_REQUEST)
        pending = self.txns.get(transactional_id)
        if pending is not None and pending.pending:
            return Pending.resolved(ErrorCode.CONCURRENT_TRANSACTIONS)
        found = self._check_producer(transactional_id, producer_id, producer_epoch)
        if isinstance(found, ErrorCode):
            return Pending.resolved(found)
        meta = found
        if meta.state in (PC, PA):
            return Pending.resolved(ErrorCode.CONCURRENT_TRANSACTIONS)
        if meta.state is ON and partitions <= meta.partitions:
            return Pending.resolved(ErrorCode.NONE)
        return self._persist(meta, meta.prepare_add_partitions(partitions, self.now(),
                                                               client_tv))

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: set[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4+ `verify_only`: is each partition in the open transaction?"""
        found = self._check_producer(transactional_id, producer_id, producer_epoch)
        if isinstance(found, ErrorCode):
            return dict.fromkeys(partitions, found)
        if found.state in (PC, PA):
            return dict.fromkeys(partitions, ErrorCode.CONCURRENT_TRANSACTIONS)
        return {tp: ErrorCode.NONE if tp in found.partitions else ErrorCode.TRANSACTION_ABORTABLE
                for tp in partitions}

    def is_partition_in_transaction(self, transactional_id: str, producer_id: int,
                                    producer_epoch: int, partition: TopicPartition) -> bool:
        meta = self.txns.get(transactional_id)
        return (meta is not None and meta.state is ON and meta.producer_id == producer_id
                and meta.producer_epoch == producer_epoch and partition in meta.partitions)

    # -- EndTxn ---------------------------------------------------------------------------------

    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int,
                commit: bool, client_tv: int = 0) -> Pending[ErrorCode]:
        return self.end_transaction(transactional_id, producer_id, producer_epoch, commit,
                                    client_tv).then(lambda r: r.error)

    def end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                        commit: bool, client_tv: int = 0) -> Pending[EndResult]:
        """EndTxn; `client_tv` 2 for v5+ (an epoch bump per transaction)."""
        if not transactional_id:
            return Pending.resolved(EndResult(ErrorCode.INVALID_REQUEST))
        meta = self.txns.get(transactional_id)
        if meta is None:
            return Pending.resolved(EndResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING))
        return self._end(meta, producer_id, producer_epoch, commit, from_client=True,
                         client_tv=client_tv)

    def _end(self, meta: TxnMetadata, producer_id: int, producer_epoch: int, commit: bool,
             *, from_client: bool, client_tv: int) -> Pending[EndResult]:
        if client_tv >= 2:
            return self._end_v2(meta, producer_id, producer_epoch, commit,
                                from_client=from_client)
        answer = Pending.resolved
        if meta.producer_id != producer_id:
            return answer(EndResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING))
        # Clients must name the current epoch; the coordinator's own aborts may bump it.
        if ((from_client and producer_epoch != meta.producer_epoch)
                or producer_epoch < meta.producer_epoch):
            return answer(EndResult(ErrorCode.PRODUCER_FENCED))
        if meta.pending and meta.pending_state is not PF:
            return answer(EndResult(ErrorCode.CONCURRENT_TRANSACTIONS))
        state = meta.state
        if state is ON:
            target = PC if commit else PA
            fencing = target is PA and meta.pending_state is PF
            if fencing:
                meta.pending_state = None
                meta.producer_epoch = producer_epoch
                meta.last_producer_epoch = NO_PRODUCER_EPOCH

            def prepared(error: ErrorCode) -> ErrorCode:
                if error != ErrorCode.NONE and fencing:
                    meta.has_failed_epoch_fence = True  # the epoch is bumped only in memory
                return error

            return self._complete_after(
                meta, meta.prepare_abort_or_commit(target, self.now()), prepared,
                v2=False)
        error = self._ended_answer(state, commit, retry=True)
        if error is None:
            raise RuntimeError(f"{meta.transactional_id}: EndTxn in state {state.display}")
        return answer(EndResult(error))

    @staticmethod
    def _ended_answer(state: TxnState, commit: bool, *, retry: bool) -> ErrorCode | None:
        """The answer of an EndTxn that starts nothing: the same result again succeeds (only
        as a retry under TV2), the other one is INVALID_TXN_STATE, one still writing its
        markers is CONCURRENT_TRANSACTIONS. None: the state starts a transition instead."""
        if state is CC:
            return ErrorCode.NONE if commit and retry else (
                ErrorCode.INVALID_TXN_STATE if commit or retry else None)
        if state is CA:
            return ErrorCode.NONE if not commit and retry else (
                ErrorCode.INVALID_TXN_STATE if commit else None)
        if state is PC:
            return ErrorCode.CONCURRENT_TRANSACTIONS if commit else ErrorCode.INVALID_TXN_STATE
        if state is PA:
            return (ErrorCode.CONCURRENT_TRANSACTIONS if not commit
                    else ErrorCode.INVALID_TXN_STATE)
        if state is E:
            return ErrorCode.INVALID_TXN_STATE if commit or retry else None
        return None

    def _end_v2(self, meta: TxnMetadata, producer_id: int, producer_epoch: int, commit: bool,
                *, from_client: bool) -> Pending[EndResult]:
        """Kafka 4.x's endTransaction for transaction version 2 (see the module docstring)."""
        answer = Pending.resolved
        fence = meta.pending_state is PF
        retry_on_overflow = (not fence and meta.last_producer_id == producer_id
                             and producer_epoch == SHORT_MAX - 1 and meta.producer_epoch == 0)
        retry_on_bump = not fence and meta.producer_epoch == producer_epoch + 1
        state = meta.state
        if fence:
            valid_epoch = ((not from_client or producer_epoch == meta.producer_epoch)
                           and producer_epoch >= meta.producer_epoch)
        elif state in (PC, PA):
            valid_epoch = retry_on_bump
        elif state in (CC, CA):
            valid_epoch = retry_on_bump or retry_on_overflow or producer_epoch == meta.producer_epoch
        else:
            valid_epoch = producer_epoch == meta.producer_epoch
        if meta.pending and not fence:
            return answer(EndResult(ErrorCode.CONCURRENT_TRANSACTIONS))
        if meta.producer_id != producer_id and not retry_on_overflow:
            return answer(EndResult(ErrorCode.INVALID_PRODUCER_ID_MAPPING))
        if not valid_epoch:
            return answer(EndResult(ErrorCode.PRODUCER_FENCED))
        retry = retry_on_bump or retry_on_overflow
        if state is ON:
            target, nothing_added = (PC if commit else PA), False
        else:
            ended = self._ended_answer(state, commit, retry=retry)
            if ended is not None:
                if ended == ErrorCode.NONE:
                    return answer(EndResult(ended, meta.producer_id, meta.producer_epoch))
                return answer(EndResult(ended))
            if state not in (E, CC, CA):
                raise RuntimeError(f"{meta.transactional_id}: EndTxn in state {state.display}")
            target, nothing_added = PA, True  # an abort with no transaction open
        next_pid = NO_PRODUCER_ID
        if not fence and meta.epoch_exhausted:
            allocated = self._new_producer_id()
            if allocated is None:
                return answer(EndResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            next_pid = allocated
        if fence:
            meta.pending_state = None  # the fence becomes this abort's epoch bump
        transit = meta.prepare_abort_or_commit(target, self.now(), 2, next_pid, nothing_added)
        return self._complete_after(meta, transit, lambda error: error, v2=True)

    def _complete_after(self, meta: TxnMetadata, transit: TxnTransit,
                        prepared: Callable[[ErrorCode], ErrorCode], *, v2: bool
                        ) -> Pending[EndResult]:
        """Persist PrepareCommit/PrepareAbort, then queue the markers (and CompleteCommit/
        CompleteAbort after them). As Kafka, the answer follows the Prepare record; under
        TV2 it names the producer id and epoch the completion moves to."""
        if transit.next_producer_id != NO_PRODUCER_ID:
            after = (transit.next_producer_id, 0)
        else:
            after = (transit.producer_id, transit.producer_epoch)

        def written(error: ErrorCode) -> EndResult:
            error = prepared(error)
            if error != ErrorCode.NONE:
                return EndResult(error)
            self._write_markers(meta)
            return EndResult(ErrorCode.NONE, *after) if v2 else EndResult(ErrorCode.NONE)

        return self._persist(meta, transit).then(written)

    def _write_markers(self, meta: TxnMetadata) -> None:
        """Queue the markers of a PrepareCommit/PrepareAbort transaction; once every one is
        done, complete it. Partitions whose marker failed stay for `retry_markers`."""
        if meta.transactional_id in self._marking:
            return  # already queued: a retry would write every marker twice
        if not meta.partitions:
            self._persist(meta, meta.prepare_complete(self.now()))
            return
        self._marking.add(meta.transactional_id)
        marker = Marker(commit=meta.state is PC, coordinator_epoch=self.config.coordinator_epoch,
                        transaction_version=meta.client_tv)
        partitions = sorted(meta.partitions)
        outstanding = [len(partitions)]

        def marked(tp: TopicPartition, error: ErrorCode) -> None:
            if error in _MARKER_FINAL:
                meta.partitions.discard(tp)
            outstanding[0] -= 1
            if outstanding[0]:
                return
            self._marking.discard(meta.transactional_id)
            if not meta.partitions and meta.state in (PC, PA):
                self._persist(meta, meta.prepare_complete(self.now()))

        def on_done(tp: TopicPartition) -> Callable[[ErrorCode, int], None]:
            return lambda error, _offset: marked(tp, error)

        for tp in partitions:
            self.outbox.write(Write(tp[0], tp[1], [], on_done(tp), producer_id=meta.producer_id,
                                    producer_epoch=meta.producer_epoch, marker=marker))

    def retry_markers(self) -> int:
        """Retry transactions stuck in PrepareCommit/PrepareAbort (a marker or the final
        record failed). Returns how many were retried."""
        stuck = [m for m in self.txns.values() if m.state in (PC, PA) and not m.pending
                 and m.transactional_id not in self._marking]
        for meta in stuck:
            self._write_markers(meta)
        return len(stuck)

    # -- timers ---------------------------------------------------------------------------------

    def abort_timed_out(self) -> list[str]:
        """Abort (and fence) every transaction open longer than its timeout. Returns the ids
        whose abort was started (its records are written once the runtime flushes)."""
        now = self.now()
        aborted = []
        for meta in list(self.txns.values()):
            if (meta.state is not ON or meta.pending
                    or meta.txn_start_ms + meta.timeout_ms >= now):
                continue
            fence = meta.prepare_fence_producer_epoch()
            self._end(meta, fence.producer_id, fence.producer_epoch, commit=False,
                      from_client=False, client_tv=self.config.transaction_version)
            if meta.pending_state is PF:
                meta.abort_transition()
            else:
                aborted.append(meta.transactional_id)
        return aborted

    def expire_transactional_ids(self) -> list[str]:
        """Remove idle transactional ids with a tombstone. Returns the ids whose tombstone
        was queued; each is forgotten once its tombstone is written."""
        now = self.now()
        expired = []
        for tid, meta in list(self.txns.items()):
            if (meta.state not in EXPIRABLE or meta.pending
                    or meta.last_update_ms > now - self.config.id_expiration_ms):
                continue
            meta.prepare_dead()

            def written(error: ErrorCode, tid: str = tid, meta: TxnMetadata = meta) -> None:
                if error == ErrorCode.NONE and self.txns.get(tid) is meta:
                    del self.txns[tid]
                else:
                    meta.abort_transition()

            self._write_state(tid, None, written)
            expired.append(tid)
        return expired

    # -- describe / list ------------------------------------------------------------------------

    def describe(self, transactional_id: str) -> TxnDescription | ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        meta = self.txns.get(transactional_id)
        if meta is None or meta.state is D:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        return TxnDescription(meta.transactional_id, meta.state, meta.producer_id,
                              meta.producer_epoch, meta.timeout_ms, meta.txn_start_ms,
                              frozenset(meta.partitions))

    def list_transactions(self, state_filters: Iterable[str], producer_id_filters: Iterable[int],
                          duration_filter_ms: int = -1
                          ) -> tuple[list[str], list[tuple[str, int, TxnState]]]:
        """(unknown state names, [(transactional id, producer id, state)]) as Kafka filters:
        by state names, producer ids, and (v1) transactions running longer than a duration."""
        names = list(state_filters)
        pids = set(producer_id_filters)
        wanted: set[TxnState] = set()
        unknown = []
        for name in names:
            state = TxnState.from_name(name)
            if state is None:
                unknown.append(name)
            else:
                wanted.add(state)
        now = self.now()
        out = []
        for meta in self.txns.values():
            if meta.state is D:
                continue
            if pids and meta.producer_id not in pids:
                continue
            if names and meta.state not in wanted:
                continue
            if duration_filter_ms >= 0 and now - meta.txn_start_ms <= duration_filter_ms:
                continue
            out.append((meta.transactional_id, meta.producer_id, meta.state))
        return unknown, sorted(out)
