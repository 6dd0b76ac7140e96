"""Transaction metadata and its state machine (Kafka's TransactionMetadata), sans IO.

Every change is two steps, as in Kafka: `prepare_*` checks the move against the TRANSITIONS
table and returns a `TxnTransit` (the would-be metadata) while recording the target as the
`pending_state`; once the transit is persisted in `__transaction_state`,
`complete_transition` applies it (after re-checking that it is the expected kind of change),
or `abort_transition` forgets it when persisting failed. While a transition is pending, the
coordinator answers CONCURRENT_TRANSACTIONS.

States and ids (the `TransactionStatus` persisted in TransactionLogValue):
Empty 0, Ongoing 1, PrepareCommit 2, PrepareAbort 3, CompleteCommit 4, CompleteAbort 5,
Dead 6, PrepareEpochFence 7 (never persisted: it turns into PrepareAbort with a bumped epoch).

Each transaction remembers the transaction version its client used (Kafka's
clientTransactionVersion: 2 when it came through EndTxn v5+, AddPartitionsToTxn v4+ or an
implicit add by Produce v12+ / TxnOffsetCommit v5+, else 0). Under version 2 (KIP-890 part 2)
PrepareCommit/PrepareAbort bump the producer epoch (the markers carry the bumped epoch and
the client gets it back from EndTxn), PrepareAbort may follow Empty/CompleteCommit/
CompleteAbort (an abort with nothing added), and an epoch that runs out moves to the next
producer id when the transaction completes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767

TopicPartition = tuple[str, int]


class TxnState(enum.Enum):
    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def display(self) -> str:
        """Kafka's name, as DescribeTransactions and ListTransactions report it."""
        return self.value[1]

    @classmethod
    def from_id(cls, state_id: int) -> TxnState:
        for state in cls:
            if state.id == state_id:
                return state
        raise ValueError(f"unknown transaction state id {state_id}")

    @classmethod
    def from_name(cls, name: str) -> TxnState | None:
        for state in cls:
            if state.display == name:
                return state
        return None


E, ON, PC, PA = TxnState.EMPTY, TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT
CC, CA, D, PF = (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, TxnState.DEAD,
                 TxnState.PREPARE_EPOCH_FENCE)

# The transition table: target state -> the states it may be reached from.
TRANSITIONS: dict[TxnState, frozenset[TxnState]] = {
    E: frozenset({E, CC, CA}),  # InitProducerId
    ON: frozenset({ON, E, CC, CA}),  # AddPartitionsToTxn / AddOffsetsToTxn
    PC: frozenset({ON}),  # EndTxn(commit)
    PA: frozenset({ON, PF, E, CC, CA}),  # EndTxn(abort), a fence, a timeout (E/CC/CA: TV2)
    CC: frozenset({PC}),  # markers written
    CA: frozenset({PA}),
    D: frozenset({E, CC, CA}),  # transactional.id.expiration.ms
    PF: frozenset({ON}),  # InitProducerId or a timeout while a transaction is open
}

# States whose transactional id may expire after `transactional.id.expiration.ms` idle.
EXPIRABLE = frozenset({E, CC, CA})
# States with a transaction in flight.
IN_TRANSACTION = frozenset({ON, PC, PA})


class IllegalTransitionError(RuntimeError):
    """A transition the table or the metadata checks forbid: a coordinator bug."""


def is_epoch_exhausted(epoch: int) -> bool:
    # One epoch is kept in reserve so a fence can still bump it.
    return epoch >= SHORT_MAX - 1


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """The metadata a transition leads to (Kafka's TxnTransitMetadata)."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    txn_start_ms: int
    last_update_ms: int
    client_tv: int = 0
    next_producer_id: int = NO_PRODUCER_ID


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    last_update_ms: int
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_ms: int = -1
    client_tv: int = 0  # the transaction version the client used (Kafka's clientTransactionVersion)
    next_producer_id: int = NO_PRODUCER_ID  # TV2: the producer id after an exhausted epoch
    pending_state: TxnState | None = None
    # A fence whose PrepareAbort could not be persisted already bumped the epoch in memory.
    has_failed_epoch_fence: bool = False

    @property
    def pending(self) -> bool:
        return self.pending_state is not None

    @property
    def epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    # -- prepare ------------------------------------------------------------------------------

    def _prepare(self, state: TxnState, producer_id: int, epoch: int, last_epoch: int,
                 timeout_ms: int, partitions: frozenset[TopicPartition], txn_start_ms: int,
                 now_ms: int, client_tv: int | None = None,
                 next_producer_id: int = NO_PRODUCER_ID) -> TxnTransit:
        if self.pending_state is not None:
            raise IllegalTransitionError(
                f"{self.transactional_id}: preparing {state.display} while "
                f"{self.pending_state.display} is pending")
        if producer_id < 0:
            raise IllegalTransitionError(f"illegal new producer id {producer_id}")
        if state is not D and epoch < 0:
            raise IllegalTransitionError(f"illegal new producer epoch {epoch}")
        if self.state not in TRANSITIONS[state]:
            raise IllegalTransitionError(
                f"{self.transactional_id}: {state.display} cannot follow {self.state.display}")
        self.pending_state = state
        return TxnTransit(producer_id, self.producer_id, epoch, last_epoch, timeout_ms, state,
                          partitions, txn_start_ms, now_ms,
                          self.client_tv if client_tv is None else client_tv, next_producer_id)

    def prepare_fence_producer_epoch(self) -> TxnTransit:
        """Bump the epoch to fence the current producer before aborting its transaction."""
        if self.producer_epoch == SHORT_MAX:
            raise IllegalTransitionError("cannot fence a producer at epoch Short.MAX_VALUE")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(PF, self.producer_id, bumped, NO_PRODUCER_EPOCH, self.timeout_ms,
                             frozenset(self.partitions), self.txn_start_ms, self.last_update_ms)

    def prepare_increment_producer_epoch(self, timeout_ms: int, expected_epoch: int | None,
                                         now_ms: int) -> TxnTransit | None:
        """InitProducerId's epoch bump; None when `expected_epoch` says the caller is fenced.
        A retry whose expected epoch is the previous one gets the current epoch again."""
        if self.epoch_exhausted:
            raise IllegalTransitionError(f"no epochs left for producer id {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            return None
        return self._prepare(E, self.producer_id, epoch, last, timeout_ms, frozenset(), -1,
                             now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransit:
        if self.state in IN_TRANSACTION:
            raise IllegalTransitionError("cannot rotate producer ids while a transaction is open")
        last = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        return self._prepare(E, new_producer_id, 0, last, timeout_ms, frozenset(), -1, now_ms)

    def prepare_add_partitions(self, added: set[TopicPartition], now_ms: int,
                               client_tv: int = 0) -> TxnTransit:
        start = now_ms if self.state in (E, CC, CA) else self.txn_start_ms
        return self._prepare(ON, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, frozenset(self.partitions | added), start, now_ms,
                             client_tv)

    def prepare_abort_or_commit(self, state: TxnState, now_ms: int, client_tv: int = 0,
                                next_producer_id: int = NO_PRODUCER_ID,
                                no_partition_added: bool = False) -> TxnTransit:
        """Under transaction version 2 the epoch is bumped (the caller made sure it cannot
        overflow) and an abort with nothing added starts its transaction now."""
        if client_tv >= 2:
            epoch, last = self.producer_epoch + 1, self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        start = now_ms if no_partition_added else self.txn_start_ms
        return self._prepare(state, self.producer_id, epoch, last, self.timeout_ms,
                             frozenset(self.partitions), start, now_ms, client_tv,
                             next_producer_id)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """CompleteCommit/CompleteAbort; a version 2 transaction whose epoch ran out moves to
        its next producer id at epoch 0 (the last epoch stays the one the client saw)."""
        state = CC if self.state is PC else CA
        self.has_failed_epoch_fence = False
        pid, epoch = self.producer_id, self.producer_epoch
        if self.client_tv >= 2 and self.next_producer_id != NO_PRODUCER_ID:
            pid, epoch = self.next_producer_id, 0
        return self._prepare(state, pid, epoch, self.last_producer_epoch, self.timeout_ms,
                             frozenset(), self.txn_start_ms, now_ms)

    def prepare_dead(self) -> TxnTransit:
        return self._prepare(D, self.producer_id, self.producer_epoch, self.last_producer_epoch,
                             self.timeout_ms, frozenset(), self.txn_start_ms,
                             self.last_update_ms)

    # -- complete -----------------------------------------------------------------------------

    def abort_transition(self) -> None:
        """Persisting the pending transit failed: forget it."""
        self.pending_state = None

    def complete_transition(self, transit: TxnTransit) -> None:
        """Apply a persisted transit, re-checking it is the change its state implies."""
        target = self.pending_state
        if target is None or target is not transit.state:
            raise IllegalTransitionError(
                f"{self.transactional_id}: completing {transit.state.display} but pending is "
                f"{target.display if target else None}")
        same_producer = self._valid_producer_epoch(transit)
        if target is E:
            bump = (transit.producer_epoch == self.producer_epoch + 1
                    or (transit.producer_epoch == 0 and transit.producer_id != self.producer_id))
            if ((self.producer_epoch != transit.producer_epoch and not bump)
                    or transit.partitions or transit.txn_start_ms != -1):
                self._fail(transit)
            self.timeout_ms = transit.timeout_ms
            self.producer_epoch = transit.producer_epoch
            self.last_producer_epoch = transit.last_producer_epoch
            self.producer_id = transit.producer_id
            self.last_producer_id = transit.last_producer_id
        elif target is ON:
            if (not same_producer or not self.partitions <= transit.partitions
                    or self.timeout_ms != transit.timeout_ms):
                self._fail(transit)
            self.txn_start_ms = transit.txn_start_ms
            self.partitions |= transit.partitions
        elif target in (PC, PA):
            # Under TV2 an abort may follow Empty/Complete*, with a new start time.
            empty_abort = (target is PA and transit.client_tv >= 2
                           and self.state in (E, CC, CA))
            if (not same_producer or self.partitions != transit.partitions
                    or self.timeout_ms != transit.timeout_ms
                    or (self.txn_start_ms != transit.txn_start_ms and not empty_abort)):
                self._fail(transit)
            self.producer_epoch = transit.producer_epoch
            self.last_producer_epoch = transit.last_producer_epoch
            self.txn_start_ms = transit.txn_start_ms
        elif target in (CC, CA):
            if (not same_producer or self.timeout_ms != transit.timeout_ms
                    or transit.txn_start_ms == -1):
                self._fail(transit)
            self.txn_start_ms = transit.txn_start_ms
            self.partitions.clear()
            self.producer_id = transit.producer_id
            self.producer_epoch = transit.producer_epoch
            self.last_producer_id = transit.last_producer_id
        else:  # Dead and PrepareEpochFence are never completed this way
            self._fail(transit)
        self.client_tv = transit.client_tv
        self.next_producer_id = transit.next_producer_id
        self.last_update_ms = transit.last_update_ms
        self.pending_state = None
        self.state = target

    def _valid_producer_epoch(self, transit: TxnTransit) -> bool:
        """Kafka's validProducerEpoch: a TV2 completion that moved to the next producer id
        names the current one as its previous id; a TV2 prepare bumped the epoch by one;
        everything else keeps the producer id and epoch."""
        if transit.client_tv >= 2:
            if transit.state in (CC, CA) and transit.producer_epoch == 0 \
                    and transit.producer_id != self.producer_id:
                return (transit.last_producer_epoch == self.last_producer_epoch
                        and transit.last_producer_id == self.producer_id)
            if transit.state in (PC, PA):
                return (transit.last_producer_epoch == self.producer_epoch
                        and transit.producer_id == self.producer_id)
        return (transit.producer_id == self.producer_id
                and transit.producer_epoch == self.producer_epoch)

    def _fail(self, transit: TxnTransit) -> None:
        raise IllegalTransitionError(
            f"{self.transactional_id}: unexpected transition from {self.state.display} to "
            f"{transit}")
