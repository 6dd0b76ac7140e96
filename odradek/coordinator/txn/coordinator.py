"""The transaction coordinator (Kafka's TransactionCoordinator), sans IO.

It decides; its `TxnPorts` act: the clock, producer id allocation, persisting a transition in
`__transaction_state` and writing COMMIT/ABORT markers to the partitions of a transaction.
The broker's shell implements the ports with synchronous local writes, so every call here
runs to completion (prepare, persist, complete, markers) before the next request is looked at;
tests implement them with fakes and a fake clock.

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
- A transaction open longer than its timeout is aborted under a bumped epoch (so its producer
  is fenced); transactional ids idle in Empty/Complete* for `transactional.id.expiration.ms`
  are removed with a tombstone.
- On start the state is replayed from `__transaction_state` (last record per id wins,
  tombstones delete); transactions found in PrepareCommit/PrepareAbort are completed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from odradek.coordinator.txn.log_format import partition_for
from odradek.coordinator.txn.state import (
    EXPIRABLE,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TopicPartition,
    TxnMetadata,
    TxnState,
    TxnTransit,
    is_epoch_exhausted,
)
from odradek.wire import ErrorCode

E, ON = TxnState.EMPTY, TxnState.ONGOING
PC, PA = TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT
CC, CA = TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT
D, PF = TxnState.DEAD, TxnState.PREPARE_EPOCH_FENCE


class ProducerIdsExhaustedError(Exception):
    """The producer id allocator cannot hand out another id."""


class TxnPorts(Protocol):
    def now_ms(self) -> int: ...

    def next_producer_id(self) -> int:
        """A producer id never handed out before (persisted before it is returned); raises
        ProducerIdsExhaustedError or OSError."""
        ...

    def persist(self, transactional_id: str, partition: int, transit: TxnTransit | None
                ) -> ErrorCode:
        """Write the transit (None: a tombstone) to `__transaction_state`-`partition`."""
        ...

    def write_markers(self, transactional_id: str, producer_id: int, producer_epoch: int,
                      coordinator_epoch: int, commit: bool,
                      partitions: set[TopicPartition]) -> set[TopicPartition]:
        """Append a COMMIT/ABORT marker to each partition; return those now done (written,
        or gone: a deleted partition needs no marker). The rest are retried later."""
        ...


@dataclass(frozen=True, slots=True)
class TxnConfig:
    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    state_partitions: int = 50  # transaction.state.log.num.partitions
    id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms
    coordinator_epoch: int = 0  # single node: the leader epoch of __transaction_state


@dataclass(frozen=True, slots=True)
class InitResult:
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


class TransactionCoordinator:
    def __init__(self, config: TxnConfig, ports: TxnPorts) -> None:
        self.config = config
        self.ports = ports
        self.txns: dict[str, TxnMetadata] = {}

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.state_partitions)

    # -- persistence ----------------------------------------------------------------------------

    def _persist(self, meta: TxnMetadata, transit: TxnTransit) -> ErrorCode:
        """Persist a prepared transit and complete it, or forget it on failure."""
        tid = meta.transactional_id
        error = self.ports.persist(tid, self.partition_for(tid), transit)
        if error != ErrorCode.NONE:
            meta.abort_transition()
            return error
        meta.complete_transition(transit)
        return ErrorCode.NONE

    def load(self, records: Iterable[tuple[str, TxnMetadata | None]]) -> None:
        """Replay `__transaction_state` records in log order (None: a tombstone)."""
        for tid, meta in records:
            if meta is None:
                self.txns.pop(tid, None)
            else:
                self.txns[tid] = meta

    def complete_recovered(self) -> int:
        """After `load`: finish transactions caught between prepare and complete. Returns how
        many were found."""
        found = 0
        for meta in list(self.txns.values()):
            if meta.state in (PC, PA) and not meta.pending:
                found += 1
                self._write_markers(meta)
        return found

    # -- InitProducerId -------------------------------------------------------------------------

    def init_producer_id(self, transactional_id: str | None, timeout_ms: int,
                         expected: tuple[int, int] | None = None) -> InitResult:
        """`expected` is the (producer id, epoch) a KIP-360 client already holds."""
        if transactional_id is None:
            try:
                return InitResult(ErrorCode.NONE, self.ports.next_producer_id(), 0)
            except (ProducerIdsExhaustedError, OSError):
                return InitResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if transactional_id == "":
            return InitResult(ErrorCode.INVALID_REQUEST)
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return InitResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        now = self.ports.now_ms()
        meta = self.txns.get(transactional_id)
        if meta is None:
            try:
                pid = self.ports.next_producer_id()
            except (ProducerIdsExhaustedError, OSError):
                return InitResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            meta = TxnMetadata(transactional_id, pid, NO_PRODUCER_EPOCH, timeout_ms, E, now)
            self.txns[transactional_id] = meta
        if meta.pending:
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if expected is not None and not self._valid_expected(meta, expected):
            return InitResult(ErrorCode.PRODUCER_FENCED)
        state = meta.state
        if state in (PC, PA):
            return InitResult(ErrorCode.CONCURRENT_TRANSACTIONS)
        if state is ON:
            # Abort the open transaction under a bumped epoch; the caller retries and gets
            # another bump (a new producer id if that exhausted the epochs).
            fence = meta.prepare_fence_producer_epoch()
            error = self._end(meta, fence.producer_id, fence.producer_epoch, commit=False,
                              from_client=False)
            if meta.pending_state is PF:
                meta.abort_transition()
            return InitResult(error if error != ErrorCode.NONE
                              else ErrorCode.CONCURRENT_TRANSACTIONS)
        if state not in (E, CC, CA):
            raise RuntimeError(f"{transactional_id}: InitProducerId in state {state.display}")
        if meta.epoch_exhausted and (expected is None or expected[1] == meta.producer_epoch):
            try:
                new_pid = self.ports.next_producer_id()
            except (ProducerIdsExhaustedError, OSError):
                return InitResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            transit = meta.prepare_producer_id_rotation(new_pid, timeout_ms, now,
                                                        expected is not None)
        else:
            bumped = meta.prepare_increment_producer_epoch(
                timeout_ms, None if expected is None else expected[1], now)
            if bumped is None:
                return InitResult(ErrorCode.PRODUCER_FENCED)
            transit = bumped
        error = self._persist(meta, transit)
        if error != ErrorCode.NONE:
            return InitResult(error)
        return InitResult(ErrorCode.NONE, meta.producer_id, meta.producer_epoch)

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
                       partitions: set[TopicPartition]) -> ErrorCode:
        found = self._check_producer(transactional_id, producer_id, producer_epoch)
        if isinstance(found, ErrorCode):
            return found
        meta = found
        if meta.pending or meta.state in (PC, PA):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if meta.state is ON and partitions <= meta.partitions:
            return ErrorCode.NONE
        return self._persist(meta, meta.prepare_add_partitions(partitions, self.ports.now_ms()))

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
                commit: bool) -> ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        meta = self.txns.get(transactional_id)
        if meta is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        return self._end(meta, producer_id, producer_epoch, commit, from_client=True)

    def _end(self, meta: TxnMetadata, producer_id: int, producer_epoch: int, commit: bool,
             *, from_client: bool) -> ErrorCode:
        if meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        # Clients must name the current epoch; the coordinator's own aborts may bump it.
        if ((from_client and producer_epoch != meta.producer_epoch)
                or producer_epoch < meta.producer_epoch):
            return ErrorCode.PRODUCER_FENCED
        if meta.pending and meta.pending_state is not PF:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        state = meta.state
        if state is ON:
            target = PC if commit else PA
            fencing = target is PA and meta.pending_state is PF
            if fencing:
                meta.pending_state = None
                meta.producer_epoch = producer_epoch
                meta.last_producer_epoch = NO_PRODUCER_EPOCH
            error = self._persist(meta, meta.prepare_abort_or_commit(target, self.ports.now_ms()))
            if error != ErrorCode.NONE:
                if fencing:
                    meta.has_failed_epoch_fence = True  # the epoch is bumped only in memory
                return error
            self._write_markers(meta)
            return ErrorCode.NONE
        if state is CC:
            return ErrorCode.NONE if commit else ErrorCode.INVALID_TXN_STATE
        if state is CA:
            return ErrorCode.NONE if not commit else ErrorCode.INVALID_TXN_STATE
        if state is PC:
            return ErrorCode.CONCURRENT_TRANSACTIONS if commit else ErrorCode.INVALID_TXN_STATE
        if state is PA:
            return ErrorCode.CONCURRENT_TRANSACTIONS if not commit else ErrorCode.INVALID_TXN_STATE
        if state is E:
            return ErrorCode.INVALID_TXN_STATE
        raise RuntimeError(f"{meta.transactional_id}: EndTxn in state {state.display}")

    def _write_markers(self, meta: TxnMetadata) -> None:
        """Write the markers of a PrepareCommit/PrepareAbort transaction, then complete it.
        Partitions whose marker failed stay for `retry_markers`."""
        commit = meta.state is PC
        if meta.partitions:
            done = self.ports.write_markers(meta.transactional_id, meta.producer_id,
                                            meta.producer_epoch, self.config.coordinator_epoch,
                                            commit, set(meta.partitions))
            meta.partitions -= done
            if meta.partitions:
                return
        self._persist(meta, meta.prepare_complete(self.ports.now_ms()))

    def retry_markers(self) -> int:
        """Retry transactions stuck in PrepareCommit/PrepareAbort (a marker or the final
        record failed). Returns how many were retried."""
        stuck = [m for m in self.txns.values() if m.state in (PC, PA) and not m.pending]
        for meta in stuck:
            self._write_markers(meta)
        return len(stuck)

    # -- timers ---------------------------------------------------------------------------------

    def abort_timed_out(self) -> list[str]:
        """Abort (and fence) every transaction open longer than its timeout."""
        now = self.ports.now_ms()
        aborted = []
        for meta in list(self.txns.values()):
            if (meta.state is not ON or meta.pending
                    or meta.txn_start_ms + meta.timeout_ms >= now):
                continue
            fence = meta.prepare_fence_producer_epoch()
            error = self._end(meta, fence.producer_id, fence.producer_epoch, commit=False,
                              from_client=False)
            if meta.pending_state is PF:
                meta.abort_transition()
            if error == ErrorCode.NONE:
                aborted.append(meta.transactional_id)
        return aborted

    def expire_transactional_ids(self) -> list[str]:
        now = self.ports.now_ms()
        expired = []
        for tid, meta in list(self.txns.items()):
            if (meta.state not in EXPIRABLE or meta.pending
                    or meta.last_update_ms > now - self.config.id_expiration_ms):
                continue
            meta.prepare_dead()
            if self.ports.persist(tid, self.partition_for(tid), None) == ErrorCode.NONE:
                del self.txns[tid]
                expired.append(tid)
            else:
                meta.abort_transition()
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
        now = self.ports.now_ms()
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
