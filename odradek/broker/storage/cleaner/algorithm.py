"""One clean of one compacted log (Kafka's Cleaner): map the keys, decide what each batch
keeps, write the survivors into new segments and swap them in.

1. Map the dirty section (`OffsetMap`): key -> offset of its last record, skipping aborted
   transactional batches, until the map's memory budget (`log.cleaner.dedupe.buffer.size`
   x `log.cleaner.io.buffer.load.factor`) is used up. The map's end is the next dirty offset.
2. Rewrite every segment below the map's end (the clean part too, to drop tombstones and
   older values of newly seen keys), grouped so that a group's files fit `segment.bytes`,
   `segment.index.bytes` and int32 relative offsets, each group into one new segment.

A record survives when its offset is past the map's end, or it is the last of its key and
has a value or its tombstone is not yet past the delete horizon. Transactional data of
aborted transactions goes; an ABORT marker stays while this pass still saw data of its
transaction (and keeps its `.txnindex` entry), a COMMIT marker while data of its
transaction remains; a marker with nothing left gets a delete horizon and goes once that
passed. The batch holding a live producer's last sequence (or, when its last entry is a
marker, that marker) is kept, emptied if nothing in it survives, so that producer state
and sequence checks survive compaction. Keyless records are dropped (Kafka counts them as
invalid). A batch that keeps everything is copied unchanged; the others are rebuilt by
`rewrite.py`.

Segments are read in chunks of whole v2 batches (`log.cleaner.io.buffer.size` / 2 bytes;
each batch is baseOffset int64 | batchLength int32 | the rest, batchLength bytes, see
`odradek.wire.records`); a batch larger than a chunk is read whole.

Crash safety: a group is written as `<base>.log.cleaned` (+ `.index.cleaned`,
`.timeindex.cleaned`, `.txnindex.cleaned`), fsynced, then `PartitionLog.replace_segments`
renames it `.swap`, the old segments' files `.deleted`, then drops `.swap`; a crash at any
point is settled on the next start (`loader.py`), so the log holds the old or the new segment
set. Old segments stay readable after the swap for `file.delete.delay.ms` (reopened by
their `.deleted` names if evicted, see `handles.py`) so that a reader holding one keeps
working. The caller writes the checkpoint only after the swaps, so a crash costs a repeated
clean, never a record.

`Cleaner.clean_steps` is a generator that yields after every chunk it reads or writes, and
yields a callable for each fsync, so that its driver (`scheduler.py`) can share the event
loop; the segment being fsynced is pinned meanwhile, as the driver runs the fsync in a worker
thread while the event loop may evict other segments (see `handles.py`). Appends only touch the active segment, which is never cleaned; retention or topic
deletion removing a segment that is being cleaned aborts the clean (`CleaningAbortedError`:
nothing is swapped, the `.cleaned` files are removed).
"""

from __future__ import annotations

import heapq
import os
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field

import structlog

from odradek.broker.storage import files
from odradek.broker.storage.cleaner.dirty import LogToClean, log_to_clean, segments_in
from odradek.broker.storage.cleaner.rewrite import NO_TIMESTAMP, empty_batch, rebuild_batch
from odradek.broker.storage.log import PartitionLog
from odradek.broker.storage.segment import BatchMeta, LogSegment
from odradek.broker.storage.txn_index import AbortedTxn, TransactionIndex
from odradek.wire.exceptions import RecordBatchError
from odradek.wire.records import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    LOG_OVERHEAD,
    Record,
    RecordBatch,
    batch_length_at,
    iter_batches,
)

log = structlog.get_logger(__name__)

# What one map entry costs beyond its key bytes in CPython (dict slot, bytes and int objects);
# the dedupe buffer size is a memory budget, not Kafka's 24-byte hash slots.
MAP_ENTRY_OVERHEAD = 120
_MAX_RELATIVE = 2**31 - 1

# A step of a clean: None = a point where the driver may pause; a callable = blocking disk
# work (fsync) the driver may run in a worker thread.
Step = Callable[[], None] | None


class CleaningAbortedError(Exception):
    """The log changed under the cleaner (closed, or a segment deleted): nothing was swapped."""


# -- the key map --------------------------------------------------------------------------------


class OffsetMap:
    """Key -> offset of its last record in the dirty section, within a memory budget."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = max(budget_bytes, 0)
        self._used = 0
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1  # the last offset the map covers

    def __len__(self) -> int:
        return len(self._map)

    def put(self, key: bytes, offset: int) -> bool:
        """Map `key` to `offset`; False (nothing changed) when a new key would not fit. The
        first key always fits, so a pass always makes progress."""
        known = self._map.get(key)
        if known is None:
            cost = len(key) + MAP_ENTRY_OVERHEAD
            if self._map and self._used + cost > self.budget_bytes:
                return False
            self._used += cost
        self._map[key] = offset
        return True

    def get(self, key: bytes) -> int:
        """The mapped offset of `key`, -1 when unmapped."""
        return self._map.get(key, -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = max(self.latest_offset, offset)

    @property
    def utilization(self) -> float:
        return self._used / self.budget_bytes if self.budget_bytes else 1.0


# -- transactions while cleaning ---------------------------------------------------------------


@dataclass(slots=True)
class _AbortedState:
    txn: AbortedTxn
    last_observed_batch_offset: int | None = None


class CleanedTransactions:
    """Which batches belong to aborted transactions, and which markers may go (Kafka's
    CleanedTransactionMetadata). Fed the aborted transactions of each segment before its
    batches are read in order; writes the `.txnindex` entries of retained ABORT markers to
    `cleaned_index`."""

    def __init__(self) -> None:
        self._pending: list[tuple[int, int, AbortedTxn]] = []  # heap by first offset
        self._seq = 0
        self._ongoing_aborted: dict[int, _AbortedState] = {}
        self._ongoing_committed: set[int] = set()
        self.cleaned_index: TransactionIndex | None = None

    def add_aborted(self, txns: Sequence[AbortedTxn]) -> None:
        for txn in txns:
            self._seq += 1
            heapq.heappush(self._pending, (txn.first_offset, self._seq, txn))

    def _consume_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            txn = heapq.heappop(self._pending)[2]
            self._ongoing_aborted.setdefault(txn.producer_id, _AbortedState(txn))

    def on_control_batch(self, batch: RecordBatch) -> bool:
        """Read a marker; True when it may be discarded."""
        self._consume_up_to(batch.last_offset)
        control_type = batch.control_type()
        if control_type is None:
            return True  # an emptied marker: already cleaned
        pid = batch.producer_id
        if control_type == CONTROL_ABORT:
            state = self._ongoing_aborted.pop(pid, None)
            if state is not None and state.last_observed_batch_offset is not None:
                # Data of the transaction remains: keep the marker and its index entry.
                if self.cleaned_index is not None:
                    self.cleaned_index.append(state.txn)
                return False
            return True
        if control_type == CONTROL_COMMIT:
            if pid in self._ongoing_committed:
                self._ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_data_batch(self, batch: RecordBatch) -> bool:
        """Read a data batch; True when it belongs to an aborted transaction."""
        self._consume_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        state = self._ongoing_aborted.get(batch.producer_id)
        if state is not None:
            state.last_observed_batch_offset = batch.last_offset
            return True
        self._ongoing_committed.add(batch.producer_id)
        return False


# -- live producers and segment groups ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LastRecord:
    """A live producer's last data offset (None when its last entry is a marker) and epoch."""

    last_data_offset: int | None
    producer_epoch: int


def last_records_of_active_producers(plog: PartitionLog) -> dict[int, LastRecord]:
    out: dict[int, LastRecord] = {}
    for pid, entry in plog.producer_state.producers.items():
        last = entry.last_data_offset
        out[pid] = LastRecord(last if last >= 0 else None, entry.producer_epoch)
    return out


def group_segments_by_size(
    segments: Sequence[LogSegment], max_size: int, max_index_size: int, first_uncleanable: int
) -> list[list[LogSegment]]:
    """Consecutive runs whose summed `.log`, `.index` and `.timeindex` sizes stay within the
    limits and whose offsets fit one segment's int32 relative offsets (Kafka's grouping)."""
    groups: list[list[LogSegment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        log_size = segments[i].size
        index_size = segments[i].offset_index.size_in_bytes
        time_size = segments[i].time_index.size_in_bytes
        i += 1
        while i < len(segments):
            nxt = segments[i]
            last_offset = (
                segments[i + 1].base_offset - 1 if i + 1 < len(segments) else first_uncleanable - 1
            )
            if not (
                log_size + nxt.size <= max_size
                and index_size + nxt.offset_index.size_in_bytes <= max_index_size
                and time_size + nxt.time_index.size_in_bytes <= max_index_size
                and (nxt.size == 0 or last_offset - group[0].base_offset <= _MAX_RELATIVE)
            ):
                break
            group.append(nxt)
            log_size += nxt.size
            index_size += nxt.offset_index.size_in_bytes
            time_size += nxt.time_index.size_in_bytes
            i += 1
        groups.append(group)
    return groups


# -- statistics ---------------------------------------------------------------------------------


@dataclass(slots=True)
class CleanerStats:
    started: float = field(default_factory=time.monotonic)
    map_bytes_read: int = 0
    map_records_read: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_written: int = 0
    invalid_records: int = 0
    segments_cleaned: int = 0
    segments_written: int = 0
    map_utilization: float = 0.0

    @property
    def io_bytes(self) -> int:
        return self.map_bytes_read + self.bytes_read + self.bytes_written


@dataclass(frozen=True, slots=True)
class CleanResult:
    next_dirty_offset: int  # the new checkpoint: everything below it is clean
    stats: CleanerStats


# -- batch filtering ----------------------------------------------------------------------------


@dataclass(slots=True)
class _FilterContext:
    offset_map: OffsetMap
    txns: CleanedTransactions
    last_records: dict[int, LastRecord]
    now_ms: int
    delete_retention_ms: int
    stats: CleanerStats


def _keep_record(batch: RecordBatch, record: Record, ctx: _FilterContext) -> bool:
    offset = batch.base_offset + record.offset_delta
    if offset > ctx.offset_map.latest_offset:
        return True  # not mapped in this pass
    if record.key is None:
        ctx.stats.invalid_records += 1
        return False
    if offset < ctx.offset_map.get(record.key):
        return False  # a later record has the key
    if record.value is not None:
        return True
    return not batch.has_delete_horizon or ctx.now_ms < batch.base_timestamp


def filter_batch(batch: RecordBatch, ctx: _FilterContext) -> tuple[bytes, int] | None:
    """The bytes that replace `batch` in the cleaned segment and their max timestamp, or None
    when the batch goes entirely (Kafka's checkBatchRetention + filterTo)."""
    if batch.is_control:
        can_discard = ctx.txns.on_control_batch(batch)
        discard_records = (
            can_discard and batch.has_delete_horizon and batch.base_timestamp <= ctx.now_ms
        )
    else:
        can_discard = ctx.txns.on_data_batch(batch)
        discard_records = can_discard
    retain_empty = False
    if batch.producer_id >= 0:
        last = ctx.last_records.get(batch.producer_id)
        if last is not None:
            if last.last_data_offset is not None:
                retain_empty = batch.last_offset == last.last_data_offset
            else:
                retain_empty = batch.is_control and batch.producer_epoch == last.producer_epoch
    if discard_records and not retain_empty:
        ctx.stats.records_read += max(batch.records_count, 0)
        return None
    marker_for_empty_txn = can_discard and batch.is_control

    retained: list[Record] = []
    kept_all = True
    tombstones = False
    if discard_records:
        kept_all = batch.records_count == 0
        ctx.stats.records_read += max(batch.records_count, 0)
    else:
        for record in batch.records():
            ctx.stats.records_read += 1
            if batch.is_control or _keep_record(batch, record, ctx):
                retained.append(record)
                tombstones = tombstones or record.value is None
            else:
                kept_all = False
    if retained:
        ctx.stats.records_written += len(retained)
        needs_horizon = (tombstones or marker_for_empty_txn) and not batch.has_delete_horizon
        if kept_all and not needs_horizon:
            return bytes(batch.buffer()), batch.max_timestamp
        if needs_horizon:
            horizon = ctx.now_ms + ctx.delete_retention_ms
        else:
            horizon = batch.base_timestamp if batch.has_delete_horizon else NO_TIMESTAMP
        return rebuild_batch(batch, retained, horizon)
    if retain_empty:
        return empty_batch(batch), batch.max_timestamp
    return None


# -- reading segments in chunks -----------------------------------------------------------------


def _read_chunks(
    segment: LogSegment, start_position: int, chunk_bytes: int
) -> Iterator[list[RecordBatch]]:
    """The batches of `segment` from `start_position`, one list per chunk read."""
    end = segment.size
    position = start_position
    want = chunk_bytes
    while position < end:
        data = os.pread(segment.fd, min(want, end - position), position)
        if not data:
            raise RecordBatchError(f"{segment.log_path}: short read at byte {position}")
        batches = list(iter_batches(memoryview(data), allow_partial_tail=True))
        if not batches:
            if len(data) < LOG_OVERHEAD:
                raise RecordBatchError(f"{segment.log_path}: truncated batch at byte {position}")
            size = batch_length_at(data) + LOG_OVERHEAD
            if size <= len(data) or position + size > end:
                raise RecordBatchError(f"{segment.log_path}: bad batch at byte {position}")
            want = size
            continue
        want = chunk_bytes
        position += sum(b.size for b in batches)
        yield batches


# -- the cleaner --------------------------------------------------------------------------------


class Cleaner:
    """Cleans one log at a time (Kafka's Cleaner). Settings are Kafka's `log.cleaner.*`."""

    def __init__(
        self,
        *,
        dedupe_buffer_size: int = 128 * 1024 * 1024,
        load_factor: float = 0.9,
        io_buffer_size: int = 512 * 1024,
    ) -> None:
        self.map_budget = int(dedupe_buffer_size * load_factor)
        self.chunk_bytes = max(io_buffer_size // 2, 4096)  # Kafka: half reads, half writes

    def clean(
        self, plog: PartitionLog, *, first_dirty_offset: int | None = None, now_ms: int
    ) -> CleanResult:
        """Clean `plog` now, synchronously (tests and tools); the dirty section starts at
        `first_dirty_offset` (default: the log start)."""
        ltc = log_to_clean(plog, first_dirty_offset, now_ms)
        steps = self.clean_steps(ltc, now_ms)
        while True:
            try:
                step = next(steps)
            except StopIteration as done:
                result: CleanResult = done.value
                return result
            if step is not None:
                step()

    def clean_steps(
        self, ltc: LogToClean, now_ms: int, stats: CleanerStats | None = None
    ) -> Generator[Step, None, CleanResult]:
        """Clean `ltc.log` as a generator of steps (see the module docstring), counting into
        `stats`. Raises CleaningAbortedError when the log changed under it."""
        plog = ltc.log
        stats = CleanerStats() if stats is None else stats
        offset_map = OffsetMap(self.map_budget)
        yield from self._build_offset_map(
            plog, ltc.first_dirty_offset, ltc.first_uncleanable_offset, offset_map, stats
        )
        end_offset = offset_map.latest_offset + 1
        stats.map_utilization = offset_map.utilization
        if end_offset <= ltc.first_dirty_offset:
            return CleanResult(ltc.first_dirty_offset, stats)
        _check_live(plog, ())
        config = plog.config
        to_clean = [s for s in plog.segments[:-1] if s.base_offset < end_offset]
        groups = group_segments_by_size(
            to_clean,
            config.segment_bytes,
            config.segment_index_bytes,
            ltc.first_uncleanable_offset,
        )
        txns = CleanedTransactions()
        for group in groups:
            yield from self._clean_group(plog, group, offset_map, txns, now_ms, stats)
        log.info(
            "cleaned log",
            log=f"{plog.topic}-{plog.partition}",
            dirty=[ltc.first_dirty_offset, end_offset],
            segments=stats.segments_cleaned,
            into=stats.segments_written,
            bytes_read=stats.bytes_read,
            bytes_written=stats.bytes_written,
            records_read=stats.records_read,
            records_written=stats.records_written,
            keys=len(offset_map),
            seconds=round(time.monotonic() - stats.started, 3),
        )
        return CleanResult(end_offset, stats)

    def _build_offset_map(
        self, plog: PartitionLog, start: int, end: int, offset_map: OffsetMap, stats: CleanerStats
    ) -> Generator[Step, None, None]:
        dirty = segments_in(plog, start, end)
        if not dirty:
            return
        txns = CleanedTransactions()
        txns.add_aborted(plog.collect_aborted_txns(start, end))
        next_starts = [s.base_offset for s in dirty[1:]] + [end]
        for segment, next_start in zip(dirty, next_starts, strict=True):
            full = yield from self._map_segment(
                plog, segment, offset_map, start, next_start, txns, stats
            )
            if full:
                return

    def _map_segment(
        self,
        plog: PartitionLog,
        segment: LogSegment,
        offset_map: OffsetMap,
        start: int,
        next_start: int,
        txns: CleanedTransactions,
        stats: CleanerStats,
    ) -> Generator[Step, None, bool]:
        """Map the keys of `segment` at or after `start`; True when the map filled up."""
        _check_live(plog, (segment,))
        _, position = segment.offset_index.lookup(start)
        for batches in _read_chunks(segment, position, self.chunk_bytes):
            for batch in batches:
                stats.map_bytes_read += batch.size
                if batch.is_control:
                    txns.on_control_batch(batch)
                elif not txns.on_data_batch(batch):
                    base = batch.base_offset
                    for record in batch.records():
                        stats.map_records_read += 1
                        offset = base + record.offset_delta
                        if (
                            record.key is not None
                            and offset >= start
                            and not offset_map.put(record.key, offset)
                        ):
                            return True
                if batch.last_offset >= start:
                    offset_map.update_latest_offset(batch.last_offset)
            yield None
            _check_live(plog, (segment,))
        offset_map.update_latest_offset(next_start - 1)  # offsets may have gaps
        return False

    def _clean_group(
        self,
        plog: PartitionLog,
        group: list[LogSegment],
        offset_map: OffsetMap,
        txns: CleanedTransactions,
        now_ms: int,
        stats: CleanerStats,
    ) -> Generator[Step, None, None]:
        _check_live(plog, group)
        config = plog.config
        cleaned = LogSegment.create(
            plog.directory,
            group[0].base_offset,
            index_interval_bytes=config.index_interval_bytes,
            max_index_size=config.segment_index_bytes,
            now_ms=now_ms,
            suffix=files.CLEANED_SUFFIX,
            replace=True,
            handles=plog.handles,
        )
        try:
            txns.cleaned_index = cleaned.txn_index
            ctx = _FilterContext(
                offset_map,
                txns,
                last_records_of_active_producers(plog),
                now_ms,
                config.delete_retention_ms,
                stats,
            )
            for i, segment in enumerate(group):
                upper = group[i + 1].base_offset if i + 1 < len(group) else segment.next_offset
                txns.add_aborted(plog.collect_aborted_txns(segment.base_offset, upper))
                yield from self._clean_into(plog, segment, cleaned, ctx)
            cleaned.on_become_inactive()
            with cleaned.pinned():  # the driver may fsync it in a worker thread
                yield cleaned.flush
            _check_live(plog, group)
            cleaned.set_last_modified(group[-1].last_modified_ms)
            try:
                plog.replace_segments(cleaned, group, now_ms=now_ms)
            except ValueError as exc:
                raise CleaningAbortedError(str(exc)) from None
            stats.segments_cleaned += len(group)
            stats.segments_written += 1
        except BaseException:
            txns.cleaned_index = None
            if cleaned.suffix == files.CLEANED_SUFFIX and cleaned.log_path.name.endswith(
                files.CLEANED_SUFFIX
            ):
                cleaned.delete()
            else:
                # The swap had begun: its files are what the next start completes the swap
                # from (see loader.py), so leave them.
                log.error("segment swap interrupted", log=f"{plog.topic}-{plog.partition}")
                if not any(s is cleaned for s in plog.segments):
                    cleaned.close()
            raise
        txns.cleaned_index = None

    def _clean_into(
        self, plog: PartitionLog, source: LogSegment, cleaned: LogSegment, ctx: _FilterContext
    ) -> Generator[Step, None, None]:
        _check_live(plog, (source,))
        for batches in _read_chunks(source, 0, self.chunk_bytes):
            out: list[bytes] = []
            metas: list[BatchMeta] = []
            for batch in batches:
                ctx.stats.bytes_read += batch.size
                kept = filter_batch(batch, ctx)
                if kept is not None:
                    data, max_ts = kept
                    out.append(data)
                    metas.append(BatchMeta(len(data), batch.last_offset, max_ts))
                    ctx.stats.bytes_written += len(data)
            if metas:
                cleaned.append(b"".join(out), metas)
            yield None
            _check_live(plog, (source,))


def _check_live(plog: PartitionLog, segments: Sequence[LogSegment]) -> None:
    if plog.closed:
        raise CleaningAbortedError(f"log {plog.topic}-{plog.partition} was closed")
    live = plog.segments
    for segment in segments:
        if not any(s is segment for s in live):
            raise CleaningAbortedError(
                f"segment {segment.base_offset} of {plog.topic}-{plog.partition} was deleted"
            )
