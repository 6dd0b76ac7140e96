"""The running log of one partition: an ordered list of segments in
`<log dir>/<topic>-<partition>/`, appended to, read, rolled, retained and compacted.

The bytes on disk are Kafka's (see `segment.py` and the index modules); the partition
directory also holds `leader-epoch-checkpoint` (see `leader_epoch.py`). The per-log-dir
checkpoints (recovery points, log start offsets, the clean-shutdown marker) belong to
`manager.py`, which hands their values to `PartitionLog.open`.

Produce path: `append` reads only batch headers (`iter_batches`), checks each batch's CRC once,
patches base offsets and the partition leader epoch in place (both outside the CRC), and
writes the request's batches to the active segment with one `os.pwrite`. Fetch path: `read`
finds the segment and position through the indexes and returns whole batches read with
`os.pread`, unchanged; `read_region` finds the same bytes and returns them by reference (a
region of a dup of the segment's descriptor) for a zero-copy Fetch sent with `sendfile`.

Failed writes (see docs/storage.md, "Durability"). An append lands whole or leaves the log
exactly as it was: its writes (a roll's producer-state snapshot, time index entry and new
files; the batches; their index entries; the aborted-txn entries of its markers; a new leader
epoch) are undone when any of them fails, and the in-memory state (log end offset, producer
state, epoch cache) is only changed once all of them succeeded. A full file system (ENOSPC,
EDQUOT) is answered with `AppendFailedError` (KAFKA_STORAGE_ERROR, retriable) and the next
append tries again; any other I/O error, or a failed undo, is a failed log dir: the manager's
`on_dir_failure` callback takes the whole dir offline (`mark_offline`), and its logs refuse
every read and write with `LogDirOfflineError` until the broker restarts. A file that cannot be
opened for lack of descriptors (EMFILE, ENFILE; the segment's descriptor was evicted, see
`handles.py`) fails only that request: an append is undone and answered `AppendFailedError`, a
read or an fsync `OutOfDescriptorsError` (the recovery point stays where it was), both
KAFKA_STORAGE_ERROR; a retried idempotent batch that finds its original gets the fsync the
original missed before it is acknowledged.

Offsets: `log_start_offset` <= `high_watermark` <= `log_end_offset` (the next offset to
assign). `recovery_point` is the offset below which everything has been fsynced; after a
crash, segments from the one holding it onwards are re-validated.

Loading at start-up (settling interrupted swaps, re-validating segments after the recovery
point, cutting a torn tail, rebuilding indexes, leader epochs and producer state) is
`loader.py`'s job; this module is the running log.

Compaction (`cleaner/`) writes a replacement for consecutive non-active segments as
`<base>.log.cleaned` (+ `.index.cleaned`, ...) and `replace_segments` swaps it in with
Kafka's renames: `.cleaned` -> `.swap`, the old segments' files -> `.deleted`, `.swap` -> no
suffix; a crash at any step is settled on the next start by `loader.py`, so the log holds the
old or the new segments, never a mix that loses a record.

Not thread-safe: the broker calls it from its one event loop.
"""

from __future__ import annotations

import os
import random
import shutil
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from odradek.broker.storage import files
from odradek.broker.storage.config import LONG_MAX, LogSettings
from odradek.broker.storage.errors import (
    AppendFailedError,
    LogDirOfflineError,
    OutOfDescriptorsError,
    is_out_of_descriptors,
    is_out_of_space,
)

# The log's exceptions live in errors.py; re-exported here for the modules that import them
# from this one.
from odradek.broker.storage.errors import LogClosedError as LogClosedError
from odradek.broker.storage.errors import MessageTooLargeError as MessageTooLargeError
from odradek.broker.storage.errors import OffsetOutOfRangeError as OffsetOutOfRangeError
from odradek.broker.storage.errors import StorageError as StorageError
from odradek.broker.storage.handles import HandleCache
from odradek.broker.storage.leader_epoch import LeaderEpochCache
from odradek.broker.storage.loader import load_log
from odradek.broker.storage.producer_state import (
    BatchInfo,
    BatchMetadata,
    Origin,
    ProducerStateManager,
)
from odradek.broker.storage.segment import BatchMeta, LogSegment, record_timestamps
from odradek.broker.storage.txn_index import AbortedTxn
from odradek.wire.exceptions import RecordBatchError
from odradek.wire.records import (
    RecordBatch,
    iter_batches,
    set_base_offset,
    set_max_timestamp_log_append_time,
    set_partition_leader_epoch,
)
from odradek.wire.regions import FileRegion

log = structlog.get_logger(__name__)


_JITTER_RNG = random.Random()  # segment.jitter.ms draws (see PartitionLog)


@dataclass(slots=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    size: int
    # The bytes as written (offsets patched); nothing for a duplicate.
    written: memoryview | bytes = b""
    # A retried idempotent batch: nothing was written, the offsets are the original ones.
    duplicate: bool = False

    @property
    def batches(self) -> list[RecordBatch]:
        """Views of the appended batches with their final offsets, parsed only when asked:
        the produce path never needs them."""
        return list(iter_batches(self.written))


class PartitionLog:
    def __init__(
        self,
        directory: Path,
        config: LogSettings,
        segments: list[LogSegment],
        epochs: LeaderEpochCache,
        producer_state: ProducerStateManager,
        *,
        log_start_offset: int,
        recovery_point: int,
        now_ms: int,
        on_log_start_offset_change: Callable[[PartitionLog], None] | None,
        rng: random.Random | None = None,
        on_dir_failure: Callable[[PartitionLog, OSError], None] | None = None,
        handles: HandleCache | None = None,
    ) -> None:
        self.directory = directory
        # Where its segments count their descriptors (see handles.py); None: never closed
        # before the log is.
        self.handles = handles
        self.topic, self.partition = files.parse_partition_dir_name(directory.name)
        self.config = config
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self.epochs = epochs
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self.log_end_offset = segments[-1].next_offset
        self._high_watermark = self.log_end_offset
        self._unflushed_messages = 0
        self._last_flush_ms = now_ms
        self._on_log_start_offset_change = on_log_start_offset_change
        self._on_dir_failure = on_dir_failure
        self._closed = False
        # Why the log dir went offline (None while it is online), see the module docstring.
        self._offline: str | None = None
        # An append failed for lack of space and none succeeded since (logged once).
        self._out_of_space = False
        # Segments replaced by the cleaner: their files are renamed `.deleted` and removed
        # after `file.delete.delay.ms`, so a reader still holding one keeps working.
        self._retired: list[tuple[int, LogSegment]] = []
        self.producer_state = producer_state
        # segment.jitter.ms: the active segment rolls at segment.ms minus a random jitter
        # drawn when it became active (Kafka's LogConfig.randomSegmentJitter).
        # One generator for every log: a Random of its own is seeded from os.urandom (~80 us
        # of a partition's creation) and holds ~2.5 KB of state per partition.
        self._rng = rng if rng is not None else _JITTER_RNG
        self._roll_jitter_ms = self._random_jitter()

    def _random_jitter(self) -> int:
        jitter = self.config.segment_jitter_ms
        if jitter <= 0:
            return 0
        return self._rng.randrange(min(jitter, self.config.segment_ms))

    @property
    def roll_jitter_ms(self) -> int:
        """The active segment's jitter: it rolls once it spans segment.ms minus this."""
        return self._roll_jitter_ms

    # -- opening ----------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogSettings,
        *,
        now_ms: int,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = False,
        on_log_start_offset_change: Callable[[PartitionLog], None] | None = None,
        rng: random.Random | None = None,
        on_dir_failure: Callable[[PartitionLog, OSError], None] | None = None,
        handles: HandleCache | None = None,
    ) -> PartitionLog:
        """Load (or create) the log in `directory` (`loader.load_log`: unless
        `had_clean_shutdown`, the segments from the one holding `recovery_point` on are
        re-validated, a torn tail cut, indexes and producer state rebuilt). `on_dir_failure`
        is told about an I/O error that fails the log dir (see the module docstring); its
        segments count their descriptors in `handles` (see `handles.py`)."""
        loaded = load_log(
            directory,
            config,
            now_ms=now_ms,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
            handles=handles,
        )
        return cls(
            directory,
            config,
            loaded.segments,
            loaded.epochs,
            loaded.producer_state,
            log_start_offset=loaded.log_start_offset,
            recovery_point=loaded.recovery_point,
            now_ms=now_ms,
            on_log_start_offset_change=on_log_start_offset_change,
            rng=rng,
            on_dir_failure=on_dir_failure,
            handles=handles,
        )

    # -- facts ------------------------------------------------------------------------------

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        self._high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)

    @property
    def closed(self) -> bool:
        """Closed, deleted, or offline with its log dir: nothing may be read or written."""
        return self._closed or self._offline is not None

    @property
    def offline(self) -> bool:
        """Its log dir failed (see the module docstring)."""
        return self._offline is not None

    def _check_open(self) -> None:
        if self._offline is not None:
            raise LogDirOfflineError(
                f"log dir of {self.topic}-{self.partition} is offline: {self._offline}"
            )
        if self._closed:
            raise LogClosedError(f"log {self.directory} is closed")

    def _floor_index(self, offset: int) -> int:
        """Index of the segment that would hold `offset` (0 when below every segment)."""
        return max(bisect_right(self._bases, offset) - 1, 0)

    # -- appending --------------------------------------------------------------------------

    def append(
        self,
        records: memoryview,
        *,
        leader_epoch: int,
        now_ms: int,
        verify_crc: bool = True,
        origin: Origin = Origin.CLIENT,
        transaction_version: int = 0,
    ) -> AppendInfo:
        """Append the batches in `records` (a writable view, patched in place), assigning
        offsets from the log end. All-or-nothing: every batch is checked before any is
        written, and a write that fails is undone (see the module docstring). Raises
        RecordBatchError (corrupt/invalid framing or CRC), MessageTooLargeError, a
        `producer_state.ProducerStateError` (sequence, epoch, transaction checks per
        `origin`), AppendFailedError (disk full: nothing written) or LogDirOfflineError; a
        retried idempotent batch is not written again (`AppendInfo.duplicate`). Never
        iterates records (but reads a marker's one record)."""
        self._check_open()
        if records.readonly:
            raise ValueError("append needs a writable buffer (offsets are patched in place)")
        found = list(iter_batches(records))
        if not found:
            raise RecordBatchError("produce request carries no record batch")
        for batch in found:
            if batch.size > self.config.max_message_bytes:
                raise MessageTooLargeError(
                    f"batch of {batch.size} bytes exceeds max.message.bytes "
                    f"{self.config.max_message_bytes} for {self.topic}-{self.partition}"
                )
            if batch.last_offset_delta < 0:
                raise RecordBatchError(
                    f"batch has a negative lastOffsetDelta {batch.last_offset_delta}"
                )
            if verify_crc and not batch.crc_ok():
                raise RecordBatchError(
                    f"record batch CRC mismatch for {self.topic}-{self.partition}: stored "
                    f"{batch.crc:#010x}, computed {batch.compute_crc():#010x}"
                )

        log_append_time = now_ms if self.config.log_append_time else -1
        first_offset = next_offset = self.log_end_offset
        metas: list[BatchMeta] = []
        max_ts, max_ts_offset = -1, first_offset
        message_count = 0
        position = 0
        producer_batches: list[BatchInfo] = []
        for batch in found:
            if batch.producer_id >= 0:
                producer_batches.append(BatchInfo.of(batch, next_offset))
            set_base_offset(records, position, next_offset)
            set_partition_leader_epoch(records, position, leader_epoch)
            batch_max_ts = batch.max_timestamp
            if log_append_time >= 0:
                set_max_timestamp_log_append_time(records, position, log_append_time)
                batch_max_ts = log_append_time
            last = next_offset + batch.last_offset_delta
            metas.append(BatchMeta(batch.size, last, batch_max_ts))
            if batch_max_ts > max_ts:
                max_ts, max_ts_offset = batch_max_ts, last
            message_count += batch.last_offset_delta + 1
            next_offset = last + 1
            position += batch.size
        last_offset = next_offset - 1
        prepared = None
        if producer_batches:
            prepared = self.producer_state.prepare(producer_batches, origin,
                                                   transaction_version)
            if prepared.duplicate is not None:
                if self._unflushed_messages >= self.config.flush_messages:
                    # The fsync due after the original failed (no descriptor was left): the
                    # retry is acknowledged only once it is done.
                    self.flush(now_ms=now_ms)
                return self._duplicate_info(prepared.duplicate)

        aborted = self.producer_state.aborted_txns(prepared) if prepared is not None else []
        try:
            segment = self._maybe_roll(position, max_ts, last_offset, now_ms)
            self._write(segment, records[:position], metas, aborted, leader_epoch, first_offset)
        except OSError as exc:
            raise self._write_failed(exc, f"append at offset {first_offset}") from exc
        if self._out_of_space:
            self._out_of_space = False
            log.info("appends resumed", log=f"{self.topic}-{self.partition}")
        self.log_end_offset = next_offset
        self._high_watermark = next_offset  # single node: the leader is the whole ISR
        if prepared is not None:
            for txn in self.producer_state.apply(prepared):
                self.producer_state.complete_txn(txn)  # its abort was indexed by `_write`
        self.producer_state.map_end_offset = next_offset
        self._unflushed_messages += message_count
        if self._unflushed_messages >= self.config.flush_messages:
            self.flush(now_ms=now_ms)
        return AppendInfo(
            first_offset=first_offset,
            last_offset=last_offset,
            max_timestamp=max_ts,
            offset_of_max_timestamp=max_ts_offset,
            log_append_time=log_append_time,
            log_start_offset=self.log_start_offset,
            size=position,
            written=records[:position],
        )

    def append_as_follower(self, records: bytes | memoryview, *, now_ms: int) -> int:
        """Append batches copied from the partition's leader, as they are: their offsets and
        partition leader epochs are the leader's (Kafka's appendAsFollower; the simulated
        cluster, `replication/`). They must start at this log's end. One write per leader
        epoch met; producer state replays them without checks. Returns the new log end."""
        self._check_open()
        view = records if isinstance(records, memoryview) else memoryview(records)
        found = list(iter_batches(view))
        starts = [0]
        for b in found:
            starts.append(starts[-1] + b.size)
        position = 0
        while position < len(found):
            epoch = found[position].partition_leader_epoch
            run = position
            while run < len(found) and found[run].partition_leader_epoch == epoch:
                run += 1
            group = found[position:run]
            first = group[0].base_offset
            if first != self.log_end_offset:
                raise ValueError(f"follower append at {first}, log end is {self.log_end_offset}"
                                 f" ({self.topic}-{self.partition})")
            start, end = starts[position], starts[run]
            metas = [BatchMeta(b.size, b.last_offset, b.max_timestamp) for b in group]
            prepared = self.producer_state.prepare(
                [BatchInfo.of(b, b.base_offset) for b in group if b.producer_id >= 0],
                Origin.REPLAY)
            aborted = self.producer_state.aborted_txns(prepared)
            last = group[-1].last_offset
            try:
                segment = self._maybe_roll(end - start, max(m.max_timestamp for m in metas),
                                           last, now_ms)
                self._write(segment, view[start:end], metas, aborted, epoch, first)
            except OSError as exc:
                raise self._write_failed(exc, f"follower append at offset {first}") from exc
            self.log_end_offset = last + 1
            for txn in self.producer_state.apply(prepared):
                self.producer_state.complete_txn(txn)
            self.producer_state.map_end_offset = self.log_end_offset
            self._unflushed_messages += last - first + 1
            position = run
        # A follower's high watermark is the leader's, set by the replication layer.
        self._high_watermark = min(self._high_watermark, self.log_end_offset)
        if self._unflushed_messages >= self.config.flush_messages:
            self.flush(now_ms=now_ms)
        return self.log_end_offset

    def truncate_to(self, offset: int, *, now_ms: int) -> int:
        """Cut the log back to end at `offset` (a follower diverging from its new leader, as
        Kafka's Log.truncateTo): whole batches from the one holding `offset` on go, segments
        starting at or after it are deleted, the leader epochs and producer state follow.
        Returns the new log end."""
        self._check_open()
        if offset >= self.log_end_offset:
            return self.log_end_offset
        offset = max(offset, self.log_start_offset)
        while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
            segment = self._segments.pop()
            self._bases.pop()
            segment.delete()
        try:
            self._segments[-1].truncate_to(offset, now_ms=now_ms)
        except OSError as exc:
            raise self._dir_failed(exc, f"truncation to offset {offset}") from exc
        self.log_end_offset = self._segments[-1].next_offset
        self._high_watermark = min(self._high_watermark, self.log_end_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self.epochs.truncate_from_end(self.log_end_offset)
        self.producer_state.rebuild(self._segments, self.log_start_offset, self.log_end_offset)
        log.info("log truncated", log=f"{self.topic}-{self.partition}",
                 end_offset=self.log_end_offset)
        return self.log_end_offset

    def _duplicate_info(self, dup: BatchMetadata) -> AppendInfo:
        return AppendInfo(
            first_offset=dup.first_offset,
            last_offset=dup.last_offset,
            max_timestamp=dup.timestamp,
            offset_of_max_timestamp=dup.last_offset,
            log_append_time=dup.timestamp if self.config.log_append_time else -1,
            log_start_offset=self.log_start_offset,
            size=0,
            duplicate=True,
        )

    def _write(
        self,
        segment: LogSegment,
        data: memoryview,
        metas: list[BatchMeta],
        aborted: list[AbortedTxn],
        leader_epoch: int,
        first_offset: int,
    ) -> None:
        """The writes of one append, all or nothing: the batches, the aborted-txn entries of
        its markers (in the segment holding them: this one), a new leader epoch. On an error
        each is undone, the epoch cache restored, and the error raised."""
        latest = self.epochs.latest_epoch
        new_epoch = leader_epoch >= 0 and (latest is None or leader_epoch > latest)
        saved_epochs = self.epochs.entries if new_epoch else None
        if not aborted and not new_epoch:  # the common case: one write, undone by the segment
            segment.append(data, metas)
            return
        # The `.txnindex` is created by its first entry: a failed one leaves no file either.
        txn_index_existed = not aborted or segment.txn_index.path.exists()
        mark = segment.mark()
        try:
            segment.append(data, metas)
            for txn in aborted:
                segment.append_aborted_txn(txn)
            if new_epoch:
                self.epochs.assign(leader_epoch, first_offset)
        except BaseException:
            if saved_epochs is not None:
                self.epochs.restore(saved_epochs)
            segment.rollback(
                mark,
                txn_index_from=first_offset if aborted else None,
                txn_index_existed=txn_index_existed,
            )
            raise

    def _write_failed(self, exc: OSError, what: str) -> AppendFailedError | LogDirOfflineError:
        """What a failed append raises: the file system is full, or no descriptor was left to
        open a file, and every write was undone: AppendFailedError, the log dir stays online;
        else the log dir failed."""
        torn = any(s.torn for s in self._segments[-2:])
        if is_out_of_descriptors(exc) and not torn:
            self._warn_out_of_descriptors(what, exc)
            return AppendFailedError(
                f"{what} of {self.topic}-{self.partition} failed and was undone: no file "
                f"descriptor left ({exc.strerror or exc})"
            )
        if is_out_of_space(exc) and not torn:
            if not self._out_of_space:
                self._out_of_space = True
                log.warning(
                    "append failed for lack of space; nothing was written, appends are "
                    "answered KAFKA_STORAGE_ERROR until space is freed",
                    log=f"{self.topic}-{self.partition}",
                    error=str(exc),
                )
            return AppendFailedError(
                f"{what} of {self.topic}-{self.partition} failed and was undone: "
                f"{exc.strerror or exc}"
            )
        return self._dir_failed(exc, what)

    def _out_of_descriptors(self, exc: OSError, what: str) -> OutOfDescriptorsError:
        """A read or fsync that could not open its file: answered, the log dir stays online."""
        self._warn_out_of_descriptors(what, exc)
        return OutOfDescriptorsError(
            f"{what} of {self.topic}-{self.partition} failed: no file descriptor left "
            f"({exc.strerror or exc})"
        )

    def _warn_out_of_descriptors(self, what: str, exc: OSError) -> None:
        if self.handles is None or self.handles.should_warn():
            log.warning(
                "out of file descriptors; the request is answered KAFKA_STORAGE_ERROR "
                "(retriable) and nothing was changed",
                log=f"{self.topic}-{self.partition}",
                what=what,
                error=str(exc),
                segment_descriptors=None if self.handles is None else self.handles.held,
            )

    def _dir_failed(self, exc: OSError, what: str) -> LogDirOfflineError:
        """An I/O error that fails the log dir: tell the manager (which takes every log of the
        dir offline), or take this log offline when there is none."""
        if self._offline is None:
            reason = f"{what} of {self.topic}-{self.partition} failed: {exc}"
            if self._on_dir_failure is not None:
                self._on_dir_failure(self, exc)
            self.mark_offline(reason)
        return LogDirOfflineError(
            f"log dir of {self.topic}-{self.partition} is offline: {self._offline}"
        )

    def mark_offline(self, reason: str) -> None:
        """The log dir failed: from now on refuse every read and write, and release the
        descriptors without writing anything (as Kafka closes a failed dir's log handlers)."""
        if self._offline is not None:
            return
        self._offline = reason
        for segment in self._segments:
            segment.release()
        for _, segment in self._retired:
            segment.release()

    @property
    def last_stable_offset(self) -> int:
        """The offset below which every transaction is decided (read_committed bound): the
        first offset of the earliest open transaction, else the high watermark."""
        first = self.producer_state.first_unstable_offset()
        if first is None:
            return self._high_watermark
        return max(min(first, self._high_watermark), self.log_start_offset)

    def _maybe_roll(
        self, size: int, max_timestamp: int, last_offset: int, now_ms: int
    ) -> LogSegment:
        segment = self._segments[-1]
        if segment.size == 0:
            return segment
        config = self.config
        if (
            segment.size > config.segment_bytes - size
            or segment.time_waited_for_roll(now_ms, max_timestamp)
            > config.segment_ms - self._roll_jitter_ms
            or segment.offset_index.is_full
            or segment.time_index.is_full
            or not segment.can_convert_offset(last_offset)
        ):
            return self.roll(now_ms=now_ms)
        return segment

    def roll(self, *, now_ms: int) -> LogSegment:
        """Start a new active segment at the log end offset (no-op when the active one is empty).
        All or nothing: on an OSError the log is as it was and the error raised."""
        self._check_open()
        active = self._segments[-1]
        if active.size == 0:
            return active
        # As Kafka: a producer-state snapshot per segment base offset, so a restart after a
        # crash only replays the active segment (no fsync: a torn snapshot fails its CRC).
        # Unlike Kafka, none while no producer wrote here: there is nothing to restore.
        # Taken first: a roll that fails later removes it again.
        self.producer_state.map_end_offset = self.log_end_offset
        snapshot = None
        if self.producer_state.producers:
            snapshot = self.producer_state.take_snapshot(sync=False)
        mark = active.mark()
        try:
            active.on_become_inactive()
            segment = LogSegment.create(
                self.directory,
                self.log_end_offset,
                index_interval_bytes=self.config.index_interval_bytes,
                max_index_size=self.config.segment_index_bytes,
                now_ms=now_ms,
                handles=self.handles,
            )
        except BaseException:
            if snapshot is not None:
                self.producer_state.delete_snapshot(self.log_end_offset)
            active.rollback(mark)
            raise
        self._segments.append(segment)
        self._bases.append(segment.base_offset)
        self._roll_jitter_ms = self._random_jitter()
        return segment

    def append_aborted_txn(self, txn: AbortedTxn) -> None:
        """Record an aborted transaction in the segment holding its ABORT marker."""
        self._check_open()
        self._segments[self._floor_index(txn.last_offset)].append_aborted_txn(txn)

    # -- reading ----------------------------------------------------------------------------

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        upper_bound: int | None = None,
        min_one_message: bool = True,
    ) -> bytes:
        """Whole batches, starting with the one that contains `fetch_offset`, at most
        `max_bytes` (but the first batch whole when `min_one_message`, KIP-74), none starting
        at or after `upper_bound` (exclusive, e.g. the high watermark or the LSO; default the
        log end). Reads from one segment. Raises OffsetOutOfRangeError outside
        [log_start_offset, log_end_offset]."""
        bound = self._read_bound(fetch_offset, upper_bound)
        if fetch_offset >= bound:
            return b""
        try:
            for segment in self._segments[self._floor_index(fetch_offset) :]:
                if segment.base_offset >= bound:
                    break
                data = segment.read(
                    fetch_offset,
                    max_bytes,
                    self._position_bound(segment, bound),
                    min_one_message=min_one_message,
                )
                if data is not None:
                    return data
        except OSError as exc:  # as Kafka: a read that fails is a failed log dir
            if is_out_of_descriptors(exc):  # but nothing was read: answer and go on
                raise self._out_of_descriptors(exc, f"read at offset {fetch_offset}") from exc
            raise self._dir_failed(exc, f"read at offset {fetch_offset}") from exc
        return b""

    def _read_bound(self, fetch_offset: int, upper_bound: int | None) -> int:
        """The exclusive offset a read from `fetch_offset` stops at (`upper_bound`, at most the
        log end); OffsetOutOfRangeError outside [log_start_offset, log_end_offset]."""
        self._check_open()
        if fetch_offset < self.log_start_offset or fetch_offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {fetch_offset} is outside [{self.log_start_offset}, "
                f"{self.log_end_offset}] for {self.topic}-{self.partition}"
            )
        return self.log_end_offset if upper_bound is None else min(upper_bound, self.log_end_offset)

    def read_region(
        self,
        fetch_offset: int,
        max_bytes: int,
        *,
        upper_bound: int | None = None,
        min_one_message: bool = True,
        with_upper: bool = False,
    ) -> tuple[FileRegion | bytes | None, int]:
        """`read` by reference, for zero-copy Fetch: the same bytes as a region of a `dup` of
        the segment's descriptor (None when there are none), so the response can be sent with
        `sendfile` even after the segment is rolled or deleted; the bytes themselves when no
        descriptor is left for the dup (EMFILE/ENFILE). With `with_upper`, also the
        exclusive upper offset of the returned batches (one more header read; for the aborted
        transactions of read_committed), else -1."""
        bound = self._read_bound(fetch_offset, upper_bound)
        if fetch_offset >= bound:
            return None, -1
        try:
            for segment in self._segments[self._floor_index(fetch_offset) :]:
                if segment.base_offset >= bound:
                    break
                extent = segment.extent(
                    fetch_offset,
                    max_bytes,
                    self._position_bound(segment, bound),
                    min_one_message=min_one_message,
                )
                if extent is None:
                    continue
                start, end = extent
                if end <= start:
                    return None, -1
                upper = segment.offset_at(end) if with_upper else -1
                if (self.handles is not None
                        and FileRegion.open_count >= max(self.handles.capacity // 4, 16)):
                    # As many regions in flight as a quarter of what segments may hold: copy,
                    # so responses naming thousands of partitions leave descriptors for sockets.
                    return segment.read_range(start, end), upper
                try:
                    pinned = os.dup(segment.fd)
                except OSError as exc:
                    if not is_out_of_descriptors(exc):
                        raise
                    # No descriptor to pin the file with (a response naming more partitions
                    # than the limit has room for): copy, as `read`, rather than fail.
                    return segment.read_range(start, end), upper
                return FileRegion(pinned, start, end - start), upper
        except OSError as exc:  # as `read`
            if is_out_of_descriptors(exc):
                raise self._out_of_descriptors(exc, f"read at offset {fetch_offset}") from exc
            raise self._dir_failed(exc, f"read at offset {fetch_offset}") from exc
        return None, -1

    @staticmethod
    def _position_bound(segment: LogSegment, bound: int) -> int | None:
        """The byte position in `segment` where batches starting at or after `bound` begin."""
        if bound >= segment.next_offset:
            return None
        header = segment.translate_offset(bound)
        if header is None:
            return None
        return header.position if header.base_offset >= bound else header.position + header.size

    def collect_aborted_txns(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound), for read_committed."""
        self._check_open()
        found: list[AbortedTxn] = []
        for segment in self._segments[self._floor_index(fetch_offset) :]:
            txns, complete = segment.collect_aborted_txns(fetch_offset, upper_bound)
            found.extend(txns)
            if complete:
                break
        return found

    def offset_for_timestamp(
        self, timestamp: int, *, upper_bound: int | None = None
    ) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= `timestamp` (ListOffsets),
        or None when there is none (below `upper_bound` if given)."""
        self._check_open()
        for segment in self._segments:
            if segment.largest_timestamp() < timestamp:
                continue
            found = segment.find_offset_by_timestamp(timestamp, self.log_start_offset)
            if found is None:
                continue  # e.g. a segment compaction emptied, dated by its file's mtime
            if upper_bound is not None and found[0] >= upper_bound:
                return None
            return found
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record holding the largest timestamp in the log
        (ListOffsets MAX_TIMESTAMP, -3), or None when no batch carries a timestamp."""
        self._check_open()
        best = max(self._segments, key=lambda s: s.max_timestamp)
        max_ts, max_ts_offset = best.max_timestamp_and_offset
        if max_ts < 0:
            return None
        _, position = best.offset_index.lookup(max_ts_offset)
        for header in best.batch_headers(position):
            if header.max_timestamp == max_ts:
                batch = best.read_batch(header.position, header.size)
                for offset, ts in record_timestamps(batch):
                    if ts == max_ts:
                        return offset, ts
                return header.last_offset, max_ts
        return None

    # Leader epoch lookups (`leader_epoch.py`). `leader_epoch`: the current leader's epoch,
    # counted as starting at the log end while no batch of it was appended (as Kafka's cache,
    # which records it when the replica becomes leader); None: the cache alone.

    def _current_epoch(self, leader_epoch: int | None) -> tuple[int, int] | None:
        return None if leader_epoch is None else (leader_epoch, self.log_end_offset)

    def epoch_for_offset(self, offset: int, *, leader_epoch: int | None = None) -> int | None:
        """The leader epoch `offset` was written in, if known (ListOffsets)."""
        return self.epochs.epoch_for_offset(offset, current=self._current_epoch(leader_epoch))

    def earliest_epoch(self, *, leader_epoch: int | None = None) -> int | None:
        """The oldest known epoch when it covers the log start offset (ListOffsets EARLIEST)."""
        return self.epochs.earliest_epoch(
            self.log_start_offset, current=self._current_epoch(leader_epoch)
        )

    def end_offset_for_epoch(
        self, epoch: int, *, leader_epoch: int | None = None
    ) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch; (-1, -1) when unknown."""
        return self.epochs.end_offset_for(
            epoch, self.log_end_offset, current=self._current_epoch(leader_epoch)
        )

    # -- deleting ---------------------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """Advance the log start offset to `offset` (DeleteRecords) and delete the segments
        wholly below it. Returns the new log start offset."""
        self._check_open()
        if offset > self._high_watermark or offset < 0:
            raise OffsetOutOfRangeError(
                f"cannot delete records before {offset}: high watermark is {self._high_watermark}"
            )
        if offset <= self.log_start_offset:
            return self.log_start_offset
        self.log_start_offset = offset
        self.epochs.truncate_from_start(offset)
        while len(self._segments) > 1 and self._segments[1].base_offset <= offset:
            self._delete_oldest_segment()
        self._notify_log_start()
        return self.log_start_offset

    def enforce_retention(self, now_ms: int) -> int:
        """Delete old segments by `retention.ms` and `retention.bytes` (when the cleanup policy
        includes `delete`) and those wholly below the log start offset. Returns how many were
        deleted. As Kafka, only segments below the high watermark go, and a breached active
        segment is rolled first so that it can go too."""
        self._check_open()
        deleted = self._delete_old(
            lambda seg, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset, now_ms
        )
        config = self.config
        if config.deletes and config.retention_ms >= 0:
            deleted += self._delete_old(
                lambda seg, _: now_ms - seg.largest_timestamp() > config.retention_ms, now_ms
            )
        if config.deletes and config.retention_bytes >= 0:
            excess = self.size_in_bytes - config.retention_bytes

            def over_size(seg: LogSegment, _: LogSegment | None) -> bool:
                nonlocal excess
                if excess - seg.size >= 0:
                    excess -= seg.size
                    return True
                return False

            deleted += self._delete_old(over_size, now_ms)
        return deleted

    def _delete_old(
        self, predicate: Callable[[LogSegment, LogSegment | None], bool], now_ms: int
    ) -> int:
        count = 0
        for i, segment in enumerate(self._segments):
            nxt = self._segments[i + 1] if i + 1 < len(self._segments) else None
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if nxt is None and segment.size == 0:
                break
            if upper > self._high_watermark or not predicate(segment, nxt):
                break
            count += 1
        if count == 0:
            return 0
        if count == len(self._segments):
            self.roll(now_ms=now_ms)
        for _ in range(count):
            self._delete_oldest_segment(now_ms)
        if self._segments[0].base_offset > self.log_start_offset:
            self.log_start_offset = self._segments[0].base_offset
            self.epochs.truncate_from_start(self.log_start_offset)
            self._notify_log_start()
        return count

    def _delete_oldest_segment(self, now_ms: int | None = None) -> None:
        """Drop the oldest segment. By retention (`now_ms` given) its files are renamed
        `.deleted` and removed `file.delete.delay.ms` later (`delete_retired`), as Kafka's
        asynchronous segment deletion: a reader still holding the segment reads it whole."""
        segment = self._segments.pop(0)
        self._bases.pop(0)
        delay = self.config.file_delete_delay_ms
        if now_ms is None or delay <= 0:
            segment.delete()
        else:
            segment.load_indexes()  # a reader still holding it must not need the files
            segment.change_file_suffixes("", files.DELETED_SUFFIX)
            self._retired.append((now_ms + delay, segment))
        self.producer_state.delete_snapshots_before(self._segments[0].base_offset)
        log.info(
            "deleted segment", log=f"{self.topic}-{self.partition}", base_offset=segment.base_offset
        )

    def _notify_log_start(self) -> None:
        if self._on_log_start_offset_change is not None:
            self._on_log_start_offset_change(self)

    # -- compaction -------------------------------------------------------------------------

    def replace_segments(
        self, cleaned: LogSegment, old: Sequence[LogSegment], *, now_ms: int
    ) -> None:
        """Swap `cleaned` (a flushed segment written with the `.cleaned` suffix at the base
        offset of `old[0]`) in for `old`, consecutive non-active segments of this log, with
        Kafka's crash-safe renames (see the module docstring). The old segments stay readable,
        their files renamed `.deleted` (and reopened by that name if evicted meanwhile), until
        `delete_retired` runs `file.delete.delay.ms` later. Raises ValueError, changing nothing, when `old` is not (or no longer) such a
        run of segments, e.g. because retention deleted one meanwhile."""
        self._check_open()
        if not old or cleaned.suffix != files.CLEANED_SUFFIX:
            raise ValueError("replace_segments needs old segments and a .cleaned segment")
        first = next((i for i, s in enumerate(self._segments) if s is old[0]), None)
        end = -1 if first is None else first + len(old)
        if (
            first is None
            or end >= len(self._segments)
            or any(a is not b for a, b in zip(self._segments[first:end], old, strict=True))
        ):
            raise ValueError(
                f"segments {[s.base_offset for s in old]} are no longer consecutive non-active "
                f"segments of {self.topic}-{self.partition}"
            )
        if cleaned.base_offset != old[0].base_offset:
            raise ValueError(
                f"cleaned segment starts at {cleaned.base_offset}, not {old[0].base_offset}"
            )
        cleaned.change_file_suffixes(files.CLEANED_SUFFIX, files.SWAP_SUFFIX)
        self._segments[first:end] = [cleaned]
        self._bases[first:end] = [cleaned.base_offset]
        deadline = now_ms + self.config.file_delete_delay_ms
        for segment in old:
            segment.load_indexes()  # a reader still holding it must not need the files
            segment.change_file_suffixes("", files.DELETED_SUFFIX)
            self._retired.append((deadline, segment))
        cleaned.change_file_suffixes(files.SWAP_SUFFIX, "")
        files.fsync_dir(self.directory)
        cleaned.release_index_handles()

    def delete_retired(self, now_ms: int | None = None) -> int:
        """Close and remove the replaced segments whose delay has passed (all when `now_ms` is
        None). Returns how many were removed."""
        keep: list[tuple[int, LogSegment]] = []
        removed = 0
        for deadline, segment in self._retired:
            if now_ms is None or deadline <= now_ms:
                segment.delete()
                removed += 1
            else:
                keep.append((deadline, segment))
        self._retired = keep
        return removed

    # -- durability and lifecycle -----------------------------------------------------------

    def flush(self, *, up_to: int | None = None, now_ms: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery_point, up_to) (default: the whole
        log) and advance the recovery point. `up_to=active_segment.base_offset` flushes just
        the rolled segments, as Kafka does after a roll. A failed fsync fails the log dir
        (as Kafka): the kernel may have dropped the pages it could not write."""
        self._check_open()
        end = self.log_end_offset if up_to is None else min(up_to, self.log_end_offset)
        if end <= self.recovery_point:
            return
        first = self._floor_index(self.recovery_point)
        for segment in self._segments[first:]:
            if segment.base_offset >= end:
                break
            try:
                segment.flush()
            except OSError as exc:
                if is_out_of_descriptors(exc):  # not fsynced: the next flush tries again
                    raise self._out_of_descriptors(exc, "fsync") from exc
                raise self._dir_failed(exc, "fsync") from exc
        self.recovery_point = end
        if end == self.log_end_offset:
            self._unflushed_messages = 0
        if now_ms is not None:
            self._last_flush_ms = now_ms

    def flush_if_due(self, now_ms: int) -> bool:
        """Apply `flush.ms`: fsync when data is unflushed for longer than that. True if flushed."""
        if self.closed or self.config.flush_ms == LONG_MAX:
            return False
        if (
            self.recovery_point < self.log_end_offset
            and now_ms - self._last_flush_ms >= self.config.flush_ms
        ):
            self.flush(now_ms=now_ms)
            return True
        return False

    def close(self) -> bool:
        """fsync, snapshot the producer state, write the final time index entries and release
        every descriptor. The recovery point becomes the log end offset. Never raises for an
        I/O error (e.g. on a full disk): a step that fails is logged and skipped. Returns False
        when the log is not closed cleanly, so that the next start recovers it (a failed
        fsync, a missing final time index entry, an offline log dir); a snapshot that cannot
        be written does not count: the next start rebuilds producer state from the log."""
        if self._closed:
            return self._offline is None
        name = f"{self.topic}-{self.partition}"
        clean = self._offline is None
        if clean:
            try:
                self.flush()
            except StorageError as exc:  # LogDirOfflineError: the dir failed
                log.error("log not flushed at shutdown", log=name, error=str(exc))
                clean = False
        if self._offline is None:
            self.producer_state.map_end_offset = self.log_end_offset
            if self.producer_state.producers:
                try:
                    self.producer_state.take_snapshot()
                except OSError as exc:
                    log.warning(
                        "producer-state snapshot not written at shutdown; the next start "
                        "rebuilds it from the log",
                        log=name,
                        error=str(exc),
                    )
        for segment in self._segments:
            if self._offline is not None:
                segment.release()
                continue
            try:
                segment.close()
            except OSError as exc:
                log.warning(
                    "segment not closed cleanly; the next start recovers it",
                    log=name,
                    base_offset=segment.base_offset,
                    error=str(exc),
                )
                clean = False
        try:
            self.delete_retired()
        except OSError as exc:
            log.warning("replaced segments not removed", log=name, error=str(exc))
        self._closed = True
        return clean and self._offline is None

    def close_without_flush(self) -> None:
        """Release descriptors, writing nothing (the log is about to be deleted: this works on
        a full disk, so that deleting a topic frees its space)."""
        if self._closed:
            return
        for segment in self._segments:
            segment.release()
        for _, segment in self._retired:
            segment.release()
        self._retired = []
        self._closed = True

    def delete(self) -> None:
        """Close and remove the partition directory."""
        self.close_without_flush()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.topic}-{self.partition}, start={self.log_start_offset}, "
            f"end={self.log_end_offset}, segments={len(self._segments)})"
        )
