"""One share-partition's delivery state (KIP-932): Kafka's SharePartition, sans IO.

A share group consumes a topic partition cooperatively: every record is *acquired* by one
member at a time, under an acquisition lock, and then acknowledged. This module keeps, for
one (group, topic, partition):

- the share-partition start offset (SPSO, `start_offset`): every record below it is done;
- the in-flight records from the SPSO up to `next_offset` (exclusive; Kafka's end offset is
  `next_offset - 1`), as contiguous *runs* of offsets sharing one state, delivery count,
  owning member and lock deadline. A run begins as the batch a fetch acquired, and is split
  when part of it changes, as Kafka's InFlightBatch falls back to per-offset state;
- record states AVAILABLE (0), ACQUIRED (1), ACKNOWLEDGED (2), ARCHIVED (4), Kafka's ids;
  the transitions AVAILABLE -> ACQUIRED -> AVAILABLE | ACKNOWLEDGED | ARCHIVED, nothing out
  of ACKNOWLEDGED or ARCHIVED.

Behaviour, as Kafka 4.4's SharePartition (read from apache/kafka core/.../share/
SharePartition.java, KIP-932, KIP-1206, KIP-1222, KIP-1240, KIP-1226):

- `acquire` takes the offsets of the log batches a fetch read from `next_fetch_offset()`:
  AVAILABLE records among them are acquired again, records past `next_offset` become new
  in-flight runs. Each acquisition increments the delivery count and starts a lock of
  `record_lock_duration_ms` (`group.share.record.lock.duration.ms`). MaxRecords is a soft
  limit in batch-optimized mode (the last new run ends at the end of the log batch holding
  the limit; an in-flight run is acquired whole) and exact in record-limit mode (KIP-1206,
  ShareAcquireMode 1). New records are cut into runs of about `batch_size` at log-batch
  boundaries (ShareFetch BatchSize).
- `group.share.partition.max.record.locks` bounds `next_offset - start_offset`: at the bound,
  no new records are acquired, only AVAILABLE ones below `next_offset`.
- A lock expiry, a RELEASE, or the member's session closing (`release_member`) puts a record
  back to AVAILABLE without touching its delivery count, or ARCHIVED once its count reached
  `delivery_count_limit` (`group.share.delivery.count.limit`; KIP-1240's rule: checked when a
  delivery attempt ends).
- Acknowledgement types (ShareFetch/ShareAcknowledge v2): 0 GAP and 3 REJECT archive, 1 ACCEPT
  acknowledges, 2 RELEASE releases, 4 RENEW (KIP-1222) restarts the lock and leaves state and
  count alone; RENEW is refused with INVALID_RECORD_STATE unless
  `share.renew.acknowledge.enable` (a group config; Kafka 4.4's default, true, is what the
  broker passes; this class's own default is off). A batch gives one type
  for all its offsets or one per offset.
- Errors as Kafka's: an offset that is not ACQUIRED (never acquired, acknowledged already, or
  its lock expired) or is held by another member -> INVALID_RECORD_STATE; acknowledging with
  nothing in flight -> INVALID_RECORD_STATE; a batch reaching past the in-flight records ->
  INVALID_REQUEST; offsets below the SPSO are skipped silently. The acknowledgements of one
  call are all applied or none (Kafka rolls back the partition's transitions).
- The SPSO advances over a prefix of ACKNOWLEDGED/ARCHIVED records, dropping those runs.
- Every change that Kafka persists comes back as a `StateUpdate` (start offset, the changed
  ranges with state and delivery count, the delivery-complete count of KIP-1226), which the
  caller writes through the share coordinator (`state.py`). Acquisitions are not persisted,
  as in Kafka; a reloaded partition sees such records as AVAILABLE with their last persisted
  count (`SharePartition.from_state`), and offsets between persisted ranges as never
  delivered (AVAILABLE, count 0).
- Time comes from the caller (`now`, ms); `next_deadline()` / `expire(now)` drive the locks.
  `acquire` and `acknowledge` expire due locks first, so an acknowledgement after the lock
  duration fails even if the timer has not run yet.

Differences from Kafka, on purpose: when the log start offset passes the SPSO
(`move_log_start`), every run below it is dropped at once (Kafka archives the AVAILABLE ones
and lets ACQUIRED ones finish their lock; acknowledgements below the SPSO are skipped either
way); runs of one state are not re-merged after a split.

Not implemented yet: read_committed filtering of aborted transactions (share.isolation.level),
delayed redelivery, the dead-letter queue (KIP-1191), the write-in-progress guard that holds
records while their state is persisted (the caller restores a `copy()` if the write fails).
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from odradek.wire import ErrorCode


class RecordState(enum.IntEnum):
    """A record's delivery state; the values are Kafka's ids, written in state batches."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4

    @property
    def is_terminal(self) -> bool:
        return self in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class AcknowledgeType(enum.IntEnum):
    """AcknowledgeTypes of ShareFetch/ShareAcknowledge (4.4 specs: 0 Gap ... 4 Renew)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class AcquireMode(enum.IntEnum):
    """ShareFetch v2 ShareAcquireMode (KIP-1206)."""

    BATCH_OPTIMIZED = 0
    RECORD_LIMIT = 1


@dataclass(frozen=True, slots=True)
class SharePartitionConfig:
    record_lock_duration_ms: int = 30_000  # group.share.record.lock.duration.ms
    delivery_count_limit: int = 5  # group.share.delivery.count.limit
    max_record_locks: int = 2_000  # group.share.partition.max.record.locks
    renew_enabled: bool = False  # share.renew.acknowledge.enable (group config)


@dataclass(slots=True)
class Run:
    """Offsets first..last (inclusive) in one state."""

    first: int
    last: int
    state: RecordState
    delivery_count: int
    member_id: str = ""
    lock_deadline: int | None = None  # ms, while ACQUIRED

    @property
    def size(self) -> int:
        return self.last - self.first + 1


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """One range of a ShareFetch answer's AcquiredRecords."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A persisted range (ShareSnapshot/ShareUpdate StateBatch; WriteShareGroupState)."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class StateUpdate:
    """What one change asks to persist (WriteShareGroupState's partition data)."""

    start_offset: int
    batches: tuple[StateBatch, ...]
    delivery_complete_count: int


@dataclass(frozen=True, slots=True)
class AckBatch:
    """One AcknowledgementBatch: one type for every offset, or one type per offset."""

    first_offset: int
    last_offset: int
    types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AcquireResult:
    records: tuple[AcquiredRecords, ...]
    update: StateUpdate | None  # locks that expired on the way


@dataclass(frozen=True, slots=True)
class AckResult:
    error: ErrorCode
    message: str | None
    update: StateUpdate | None  # the acknowledgements' changes and/or expired locks


def validate_ack_batches(batches: Sequence[AckBatch]) -> str | None:
    """The request-level checks Kafka makes on a partition's AcknowledgementBatches before
    any state is touched (their failure is INVALID_REQUEST): first <= last, offsets in
    increasing order without overlap, one type or one per offset, known types."""
    previous_last = -1
    for b in batches:
        if b.first_offset < 0 or b.first_offset > b.last_offset:
            return "First offset greater than last offset in an acknowledgement batch."
        if b.first_offset <= previous_last:
            return "Acknowledgement batches overlap or are not in increasing offset order."
        previous_last = b.last_offset
        if len(b.types) != 1 and len(b.types) != b.last_offset - b.first_offset + 1:
            return "Size of acknowledge types must be 1 or equal to the number of offsets."
        for t in b.types:
            if t not in AcknowledgeType._value2member_map_:
                return f"Invalid acknowledge type: {t}"
    return None


class SharePartition:
    """The delivery state of one share-partition; see the module docstring."""

    def __init__(self, config: SharePartitionConfig, start_offset: int = 0,
                 state_epoch: int = 0, leader_epoch: int = 0) -> None:
        if start_offset < 0:
            raise ValueError("start offset must be >= 0")
        self.config = config
        self.start_offset = start_offset
        self.next_offset = start_offset
        self.state_epoch = state_epoch
        self.leader_epoch = leader_epoch
        self._runs: list[Run] = []

    @classmethod
    def from_state(cls, config: SharePartitionConfig, start_offset: int,
                   batches: Iterable[StateBatch], state_epoch: int = 0,
                   leader_epoch: int = 0) -> SharePartition:
        """A partition rebuilt from its persisted state (ReadShareGroupState), as Kafka's
        maybeInitialize: ranges below the start offset are dropped, ACQUIRED (never written
        by Kafka) reads as AVAILABLE, offsets between ranges were never delivered."""
        sp = cls(config, start_offset, state_epoch, leader_epoch)
        pos = start_offset
        for b in sorted(batches, key=lambda b: b.first_offset):
            first = max(b.first_offset, pos)
            if b.last_offset < first:
                continue
            if first > pos:
                sp._runs.append(Run(pos, first - 1, RecordState.AVAILABLE, 0))
            state = RecordState(b.delivery_state)
            if state is RecordState.ACQUIRED:
                state = RecordState.AVAILABLE
            sp._runs.append(Run(first, b.last_offset, state, b.delivery_count))
            pos = b.last_offset + 1
        sp.next_offset = pos
        sp._advance()
        return sp

    def copy(self) -> SharePartition:
        other = SharePartition(self.config, self.start_offset, self.state_epoch,
                               self.leader_epoch)
        other.next_offset = self.next_offset
        other._runs = [replace(r) for r in self._runs]
        return other

    # -- reading ------------------------------------------------------------------------------

    def runs(self) -> list[Run]:
        """The in-flight runs, in offset order (copies)."""
        return [replace(r) for r in self._runs]

    def state_of(self, offset: int) -> tuple[RecordState, int, str] | None:
        """(state, delivery count, member) of an in-flight offset; None outside."""
        i = self._find(offset)
        if i is None:
            return None
        r = self._runs[i]
        return r.state, r.delivery_count, r.member_id

    @property
    def in_flight(self) -> int:
        return self.next_offset - self.start_offset

    def next_fetch_offset(self) -> int:
        """Where the next fetch for this share-partition reads from: the first AVAILABLE
        in-flight offset, else `next_offset`."""
        for r in self._runs:
            if r.state is RecordState.AVAILABLE:
                return r.first
        return self.next_offset

    def can_acquire(self) -> bool:
        """Whether a fetch could acquire anything (Kafka's canAcquireRecords)."""
        return (self.next_fetch_offset() < self.next_offset
                or self.in_flight < self.config.max_record_locks)

    def delivery_complete_count(self) -> int:
        """Offsets at or above the SPSO whose delivery is complete (KIP-1226)."""
        return sum(r.size for r in self._runs if r.state.is_terminal)

    def next_deadline(self) -> int | None:
        deadlines = [r.lock_deadline for r in self._runs
                     if r.state is RecordState.ACQUIRED and r.lock_deadline is not None]
        return min(deadlines) if deadlines else None

    # -- internals ----------------------------------------------------------------------------

    def _find(self, offset: int) -> int | None:
        if not self._runs or offset < self._runs[0].first or offset >= self.next_offset:
            return None
        return bisect.bisect_right(self._runs, offset, key=lambda r: r.first) - 1

    def _split(self, offset: int) -> None:
        """Make a run begin at `offset` (if it lies inside one)."""
        i = self._find(offset)
        if i is None:
            return
        r = self._runs[i]
        if r.first == offset:
            return
        tail = replace(r, first=offset)
        r.last = offset - 1
        self._runs.insert(i + 1, tail)

    def _isolate(self, first: int, last: int) -> list[Run]:
        """The runs covering exactly first..last (split at both ends)."""
        self._split(first)
        self._split(last + 1)
        i = self._find(first)
        assert i is not None
        out = []
        while i < len(self._runs) and self._runs[i].first <= last:
            out.append(self._runs[i])
            i += 1
        return out

    def _finish_delivery(self, run: Run, state: RecordState) -> None:
        """End an acquisition: `state` ACCEPTED/ARCHIVED as given; AVAILABLE becomes
        ARCHIVED once the delivery count reached the limit."""
        limit = self.config.delivery_count_limit
        if state is RecordState.AVAILABLE and run.delivery_count >= limit:
            state = RecordState.ARCHIVED
        run.state = state
        run.member_id = ""
        run.lock_deadline = None

    def _advance(self) -> None:
        """Move the SPSO over the completed prefix and drop those runs."""
        drop = 0
        for r in self._runs:
            if not r.state.is_terminal:
                break
            drop += 1
        if drop:
            self.start_offset = self._runs[drop - 1].last + 1
            del self._runs[:drop]
        if not self._runs:
            self.start_offset = self.next_offset

    def _update(self, changed: list[StateBatch]) -> StateUpdate:
        changed.sort(key=lambda b: b.first_offset)
        merged: list[StateBatch] = []
        for b in changed:
            if merged:
                p = merged[-1]
                if (p.last_offset + 1 == b.first_offset and p.delivery_state == b.delivery_state
                        and p.delivery_count == b.delivery_count):
                    merged[-1] = replace(p, last_offset=b.last_offset)
                    continue
            merged.append(b)
        return StateUpdate(self.start_offset, tuple(merged), self.delivery_complete_count())

    @staticmethod
    def _batch(r: Run) -> StateBatch:
        return StateBatch(r.first, r.last, int(r.state), r.delivery_count)

    def _expire(self, now: int) -> list[StateBatch]:
        changed = []
        for r in self._runs:
            if (r.state is RecordState.ACQUIRED and r.lock_deadline is not None
                    and r.lock_deadline <= now):
                self._finish_delivery(r, RecordState.AVAILABLE)
                changed.append(self._batch(r))
        return changed

    # -- operations ---------------------------------------------------------------------------

    def expire(self, now: int) -> StateUpdate | None:
        """Release every record whose acquisition lock ran out by `now` (the lock timer)."""
        changed = self._expire(now)
        if not changed:
            return None
        self._advance()
        return self._update(changed)

    def acquire(self, member_id: str, fetched: Sequence[tuple[int, int]], max_records: int,
                now: int, mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
                batch_size: int = 0) -> AcquireResult:
        """Acquire for `member_id` what it may have of the log batches `fetched` ((base
        offset, last offset) each, in order, as read from `next_fetch_offset()`)."""
        expired = self._expire(now)
        if expired:
            self._advance()
        update = self._update(expired) if expired else None
        if max_records <= 0 or not fetched:
            return AcquireResult((), update)
        first = max(fetched[0][0], self.start_offset)
        last = fetched[-1][1]
        if last < first:
            return AcquireResult((), update)
        budget = min(max_records, self.config.max_record_locks - self.in_flight)
        if budget <= 0:
            # At the bound: only records already in flight may be acquired again.
            if first >= self.next_offset:
                return AcquireResult((), update)
            budget = min(max_records, self.next_offset - first)
            last = min(last, self.next_offset - 1)
        deadline = now + self.config.record_lock_duration_ms
        out: list[AcquiredRecords] = []
        count = 0
        o = first
        while o <= last and o < self.next_offset and count < budget:
            i = self._find(o)
            assert i is not None
            r = self._runs[i]
            if r.state is not RecordState.AVAILABLE:
                o = r.last + 1
                continue
            seg_last = min(r.last, last)
            if mode is AcquireMode.RECORD_LIMIT:
                seg_last = min(seg_last, o + (budget - count) - 1)
            for piece in self._isolate(o, seg_last):
                piece.state = RecordState.ACQUIRED
                piece.delivery_count += 1
                piece.member_id = member_id
                piece.lock_deadline = deadline
                out.append(AcquiredRecords(piece.first, piece.last, piece.delivery_count))
            count += seg_last - o + 1
            o = seg_last + 1
        if count < budget and last >= self.next_offset and o >= self.next_offset:
            new_first = self.next_offset
            new_last = last
            remaining = budget - count
            if new_last - new_first + 1 > remaining:
                limit = new_first + remaining - 1
                new_last = limit if mode is AcquireMode.RECORD_LIMIT else _batch_end(fetched, limit)
            for run_first, run_last in _cut(fetched, new_first, new_last, batch_size):
                self._runs.append(Run(run_first, run_last, RecordState.ACQUIRED, 1, member_id,
                                      deadline))
                out.append(AcquiredRecords(run_first, run_last, 1))
            self.next_offset = new_last + 1
        return AcquireResult(tuple(out), update)

    def acknowledge(self, member_id: str, batches: Sequence[AckBatch], now: int) -> AckResult:
        """Apply one partition's acknowledgements from `member_id`, all or none."""
        expired = self._expire(now)
        if expired:
            self._advance()

        def fail(error: ErrorCode, message: str) -> AckResult:
            return AckResult(error, message, self._update(expired) if expired else None)

        problem = validate_ack_batches(batches)
        if problem is not None:
            return fail(ErrorCode.INVALID_REQUEST, problem)
        plan: list[tuple[int, int, AcknowledgeType]] = []
        for b in batches:
            if b.last_offset < self.start_offset:
                continue  # already past the SPSO: done
            if not self._runs:
                return fail(ErrorCode.INVALID_RECORD_STATE,
                            "Batch record not found. The request batch offsets are not found "
                            "in the cache.")
            if b.first_offset >= self.next_offset:
                return fail(ErrorCode.INVALID_REQUEST,
                            "Batch record not found. The first offset in request is past "
                            "acquired records.")
            if b.last_offset >= self.next_offset:
                return fail(ErrorCode.INVALID_REQUEST,
                            "Batch record not found. The last offset in request is past "
                            "acquired records.")
            for seg_first, seg_last, kind in _segments(b):
                seg_first = max(seg_first, self.start_offset)
                if seg_last < seg_first:
                    continue
                if kind is AcknowledgeType.RENEW and not self.config.renew_enabled:
                    return fail(ErrorCode.INVALID_RECORD_STATE,
                                "Renew acknowledgements are not enabled for this share group.")
                o = seg_first
                while o <= seg_last:
                    i = self._find(o)
                    assert i is not None
                    r = self._runs[i]
                    if r.state is not RecordState.ACQUIRED:
                        return fail(ErrorCode.INVALID_RECORD_STATE,
                                    "The batch cannot be acknowledged. The offset is not "
                                    "acquired.")
                    if r.member_id != member_id:
                        return fail(ErrorCode.INVALID_RECORD_STATE,
                                    "Member is not the owner of batch record")
                    o = r.last + 1
                plan.append((seg_first, seg_last, kind))
        changed = list(expired)
        deadline = now + self.config.record_lock_duration_ms
        for seg_first, seg_last, kind in plan:
            for r in self._isolate(seg_first, seg_last):
                if kind is AcknowledgeType.RENEW:
                    r.lock_deadline = deadline
                    continue
                self._finish_delivery(r, _TARGET[kind])
                changed.append(self._batch(r))
        self._advance()
        return AckResult(ErrorCode.NONE, None, self._update(changed) if changed else None)

    def release_member(self, member_id: str, now: int) -> StateUpdate | None:
        """Release every record `member_id` holds (its share session closed or it left the
        group), as Kafka's releaseAcquiredRecords; expired locks go too."""
        changed = self._expire(now)
        for r in self._runs:
            if r.state is RecordState.ACQUIRED and r.member_id == member_id:
                self._finish_delivery(r, RecordState.AVAILABLE)
                changed.append(self._batch(r))
        if not changed:
            return None
        self._advance()
        return self._update(changed)

    def move_log_start(self, log_start_offset: int) -> None:
        """The log's start offset moved (retention, DeleteRecords): records below it are
        gone. Not persisted here; the next write carries the new start offset (as Kafka)."""
        if log_start_offset <= self.start_offset:
            return
        if log_start_offset < self.next_offset:
            self._split(log_start_offset)
            i = self._find(log_start_offset)
            assert i is not None
            del self._runs[:i]
        else:
            self._runs.clear()
            self.next_offset = log_start_offset
        self.start_offset = log_start_offset
        self._advance()


_TARGET = {
    AcknowledgeType.GAP: RecordState.ARCHIVED,
    AcknowledgeType.ACCEPT: RecordState.ACKNOWLEDGED,
    AcknowledgeType.RELEASE: RecordState.AVAILABLE,
    AcknowledgeType.REJECT: RecordState.ARCHIVED,
}


def _segments(b: AckBatch) -> list[tuple[int, int, AcknowledgeType]]:
    """An acknowledgement batch as ranges of one type."""
    if len(b.types) == 1:
        return [(b.first_offset, b.last_offset, AcknowledgeType(b.types[0]))]
    out: list[tuple[int, int, AcknowledgeType]] = []
    for k, t in enumerate(b.types):
        offset = b.first_offset + k
        kind = AcknowledgeType(t)
        if out and out[-1][2] is kind and out[-1][1] == offset - 1:
            out[-1] = (out[-1][0], offset, kind)
        else:
            out.append((offset, offset, kind))
    return out


def _batch_end(fetched: Sequence[tuple[int, int]], offset: int) -> int:
    """The last offset of the log batch holding `offset` (the soft MaxRecords limit)."""
    for base, last in fetched:
        if base <= offset <= last:
            return last
    return offset


def _cut(fetched: Sequence[tuple[int, int]], first: int, last: int,
         batch_size: int) -> list[tuple[int, int]]:
    """first..last as in-flight runs of at least `batch_size` records each, cut only at the
    end of a log batch (0: one run)."""
    if batch_size <= 0:
        return [(first, last)]
    out: list[tuple[int, int]] = []
    start = first
    for _, batch_last in fetched:
        if batch_last < start or batch_last >= last:
            continue
        if batch_last - start + 1 >= batch_size:
            out.append((start, batch_last))
            start = batch_last + 1
    out.append((start, last))
    return out
