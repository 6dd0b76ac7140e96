"""One log segment: the `.log` file of record batches plus its three index files.

The `.log` file is the concatenation of v2 record batches exactly as written (see
`odradek.wire.records` for the batch layout and the structs that read it; here only the
first 43 header bytes matter, `BATCH_HEADER_PREFIX`):

     0 baseOffset int64 | 8 batchLength int32 (size = batchLength + 12) |
    12 partitionLeaderEpoch int32 | 16 magic int8 (2) | 17 crc uint32 | 21 attributes int16 |
    23 lastOffsetDelta int32 | 27 baseTimestamp int64 | 35 maxTimestamp int64 | 43 ...

Appends are written with `os.pwrite` at the segment's known size (no user-space buffering,
no O_APPEND); reads use `os.pread` on the same descriptor. Offsets map to positions through
the sparse `.index` and then a short scan of batch headers.

Descriptors (issue #10): the `.log` descriptor is opened on first use (`fd`), not when the
segment is opened or created (its size comes from `os.stat`), and the index files open theirs
on their first write. With a `HandleCache` (`handles.py`) a cold segment gives its descriptors
back (`drop_descriptors`, "evicted") and `fd` reopens the file by its current path (renames
by `change_file_suffixes` included) on next use; `close`, `release` and `delete` close it for
good, after which `fd` raises ValueError. Nothing in memory depends on a descriptor: the
size, the lazily known facts and `torn` survive an eviction. A segment's own operations
never evict it (the cache spares the segment that is opening a file), so a method may keep
its `.log` descriptor in a variable while its indexes open theirs; across a call that may
open another segment's file it reads `fd` again.

An append lands whole or not at all: when any of its writes fails (the `.log` write, a short
write, an index entry, an aborted-txn entry) the `.log` and the indexes are cut back to what
they held before and the in-memory facts restored (`mark` / `rollback`, also used by
`PartitionLog` to undo a multi-step append). Should a cut fail as well, the segment is `torn`:
it is cut again before its next write, and nothing is written behind partial bytes (the next
write goes to the known size anyway). `recover()` re-reads the whole file, checks
every batch (framing, magic, CRC-32C, increasing offsets), rebuilds `.index` and `.timeindex`
and cuts the file after the last good batch.

A segment's four files may carry an extra suffix (`suffix`): the log cleaner writes a new
segment as `<base>.log.cleaned` (and `.index.cleaned`, ...) and swaps it in by renaming
(`change_file_suffixes`, see `cleaner/algorithm.py` and `PartitionLog.replace_segments`).

Not thread-safe: the broker calls it from its one event loop; the log cleaner fsyncs a
segment from a worker thread only while it is `pinned()`.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from odradek.broker.storage import files
from odradek.broker.storage.errors import CorruptIndexError as CorruptIndexError  # re-exported
from odradek.broker.storage.errors import CorruptSegmentError as CorruptSegmentError
from odradek.broker.storage.handles import HandleCache, open_file
from odradek.broker.storage.handles import pinned as pinned_in
from odradek.broker.storage.offset_index import OffsetIndex
from odradek.broker.storage.time_index import NO_TIMESTAMP, TimeIndex
from odradek.broker.storage.txn_index import AbortedTxn, TransactionIndex
from odradek.wire.exceptions import RecordBatchError
from odradek.wire.records import (
    BATCH_HEADER_PREFIX,
    LOG_OVERHEAD,
    MAGIC,
    MIN_BATCH_LENGTH,
    RecordBatch,
    batch_length_at,
)

_MAX_RELATIVE = 2**31 - 1
_RECOVERY_CHUNK = 1 << 20


class BatchMeta(NamedTuple):
    """What a segment needs to know about each batch it is given: no record is looked at."""

    size: int
    last_offset: int
    max_timestamp: int


class SegmentMark(NamedTuple):
    """What an append may change, taken before it (`LogSegment.mark`) to undo it."""

    size: int
    index_entries: int
    time_entries: int
    next_offset: int | None
    max_ts: tuple[int, int] | None
    rolling_ts: int | None
    bytes_since_index: int | None


class BatchHeader(NamedTuple):
    position: int
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    partition_leader_epoch: int


class LogSegment:
    """A `.log` file and its `.index`, `.timeindex`, `.txnindex`, starting at `base_offset`."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        size: int,
        index_interval_bytes: int,
        max_index_size: int,
        now_ms: int,
        suffix: str = "",
        handles: HandleCache | None = None,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = now_ms
        self.suffix = suffix
        self.log_path = files.log_file(directory, base_offset, suffix)
        self.offset_index = OffsetIndex(
            files.offset_index_file(directory, base_offset, suffix),
            base_offset,
            max_index_size=max_index_size,
        )
        self.time_index = TimeIndex(
            files.time_index_file(directory, base_offset, suffix),
            base_offset,
            max_index_size=max_index_size,
        )
        self.txn_index = TransactionIndex(
            files.txn_index_file(directory, base_offset, suffix), base_offset
        )
        # The `.log` descriptor: None until first used, and again once evicted or closed.
        self._fd: int | None = None
        self._closed = False  # closed for good (`close`, `release`, `delete`): never reopened
        self._handles = handles
        # Kept by the HandleCache (see handles.Holder).
        self.handle_count = 0
        self.pins = 0
        self.referenced = False
        if handles is not None:
            for index in (self.offset_index, self.time_index, self.txn_index):
                index.attach(handles, self)
        self.size = size
        # Lazily known facts (None = not computed yet).
        self._next_offset: int | None = None if self.size else base_offset
        self._max_ts: tuple[int, int] | None = None if self.size else (NO_TIMESTAMP, base_offset)
        self._rolling_ts: int | None = None if self.size else NO_TIMESTAMP
        self._bytes_since_index: int | None = None if self.size else 0
        # A failed append could not be cut back off the `.log` (see the module docstring).
        self._torn = False

    # -- opening ----------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int = 4096,
        max_index_size: int = 10 * 1024 * 1024,
        now_ms: int,
        suffix: str = "",
        replace: bool = False,
        handles: HandleCache | None = None,
        fresh: bool = False,
    ) -> LogSegment:
        """A new empty segment. Leftover empty files at that base offset are replaced (any
        leftover files when `replace`, as the cleaner does with a stale `.cleaned` segment).
        `fresh`: `directory` was just created, so there are no leftovers to look for."""
        path = files.log_file(directory, base_offset, suffix)
        if not fresh:
            if not replace and path.exists() and path.stat().st_size > 0:
                raise FileExistsError(f"segment {path} already exists and is not empty")
            for index_path in (
                files.offset_index_file(directory, base_offset, suffix),
                files.time_index_file(directory, base_offset, suffix),
                files.txn_index_file(directory, base_offset, suffix),
            ):
                index_path.unlink(missing_ok=True)
        # Not kept: a new partition holds no descriptor until it is written or read.
        os.close(open_file(handles, path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644,
                           counted=False))
        segment = cls(
            directory,
            base_offset,
            size=0,
            index_interval_bytes=index_interval_bytes,
            max_index_size=max_index_size,
            now_ms=now_ms,
            suffix=suffix,
            handles=handles,
        )
        try:
            segment.offset_index.create()
            segment.time_index.create()
        except BaseException:
            with contextlib.suppress(OSError):
                segment.delete()  # no half-made segment is left behind (a roll is undone)
            raise
        return segment

    @classmethod
    def open(
        cls,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int = 4096,
        max_index_size: int = 10 * 1024 * 1024,
        now_ms: int,
        suffix: str = "",
        handles: HandleCache | None = None,
    ) -> LogSegment:
        """An existing segment; its indexes are read lazily (call `sanity_check()` first) and
        its `.log` is opened on first use."""
        size = os.stat(files.log_file(directory, base_offset, suffix)).st_size
        return cls(
            directory,
            base_offset,
            size=size,
            index_interval_bytes=index_interval_bytes,
            max_index_size=max_index_size,
            now_ms=now_ms,
            suffix=suffix,
            handles=handles,
        )

    def sanity_check(self) -> None:
        """Cheap checks that the index files can be trusted without a rebuild; raises
        CorruptIndexError (or FileNotFoundError for a missing index) when they cannot."""
        for index_path in (self.offset_index.path, self.time_index.path):
            if not index_path.exists():
                raise FileNotFoundError(f"index file {index_path} is missing")
        self.offset_index.sanity_check(self.size)
        self.time_index.sanity_check()
        self.txn_index.sanity_check()

    # -- facts ------------------------------------------------------------------------------

    @property
    def fd(self) -> int:
        """The `.log` descriptor, opened (again) when the segment holds none. Read it again
        after a call that may open another segment's file: that may have evicted this one
        (see the module docstring). Runs on every append and read: one store besides the
        check."""
        fd = self._fd
        if fd is None:
            fd = self._open_fd()
        self.referenced = True
        return fd

    def _open_fd(self) -> int:
        if self._closed:
            raise ValueError(f"segment {self.log_path} is closed")
        fd = self._fd = open_file(self._handles, self.log_path, os.O_RDWR, keep=self)
        if self._handles is not None:
            self._handles.update(self)  # may evict other segments, never this one
        return fd

    @property
    def closed(self) -> bool:
        """Closed for good: `fd` raises (an evicted segment is not closed)."""
        return self._closed

    def descriptors_held(self) -> int:
        """The `.log` descriptor and the index write descriptors it holds now."""
        return (
            (self._fd is not None)
            + self.offset_index.has_descriptor
            + self.time_index.has_descriptor
            + self.txn_index.has_descriptor
        )

    def drop_descriptors(self) -> None:
        """Close every descriptor, writing nothing and telling no cache; unless closed for
        good the next use reopens them. The HandleCache evicts with it (having already
        stopped counting them); `close` uses it, then counts again."""
        fd, self._fd = self._fd, None
        try:
            for index in (self.offset_index, self.time_index, self.txn_index):
                index.drop_descriptor()
        finally:
            if fd is not None:
                os.close(fd)

    def _descriptors_changed(self) -> None:
        if self._handles is not None:
            self._handles.update(self)

    def pinned(self) -> contextlib.AbstractContextManager[None]:
        """A block in which the segment's descriptors stay open: another thread (the cleaner's
        fsync) may use them. Opens the `.log` descriptor first."""
        _ = self.fd
        return pinned_in(self._handles, self)

    @property
    def next_offset(self) -> int:
        """One past the last offset in this segment (the base offset when empty)."""
        if self._next_offset is None:
            _, position = self.offset_index.lookup(2**63 - 1)
            next_offset = self.base_offset
            for header in self._headers(position, self.size):
                next_offset = header.last_offset + 1
            self._next_offset = next_offset
        return self._next_offset

    @property
    def max_timestamp_and_offset(self) -> tuple[int, int]:
        """(largest batch max-timestamp, last offset of the first batch that has it); the
        timestamp is -1 when no batch carries one."""
        if self._max_ts is None:
            self._max_ts = self.time_index.last_entry
        return self._max_ts

    @property
    def max_timestamp(self) -> int:
        return self.max_timestamp_and_offset[0]

    def largest_timestamp(self) -> int:
        """The retention clock of this segment: its max timestamp, or its file mtime."""
        ts = self.max_timestamp
        if ts >= 0:
            return ts
        return int(os.stat(self.log_path).st_mtime * 1000)

    @property
    def first_batch_timestamp(self) -> int:
        """The max timestamp of the first batch (what time-based rolling measures from), or -1."""
        if self._rolling_ts is None:
            header = self._read_header(0)
            self._rolling_ts = header.max_timestamp if header is not None else NO_TIMESTAMP
        return self._rolling_ts

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        """How long this segment has been filling, by record time when the first batch has a
        timestamp, else by wall clock since the segment was created or opened (as Kafka)."""
        first = self.first_batch_timestamp
        if first >= 0:
            return message_timestamp - first
        return now_ms - self.created_ms

    def can_convert_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= _MAX_RELATIVE

    def _bytes_since_last_index_entry(self) -> int:
        if self._bytes_since_index is None:
            entries = self.offset_index.entries
            last_position = self.offset_index.entry(entries - 1)[1] if entries else 0
            self._bytes_since_index = self.size - last_position
        return self._bytes_since_index

    # -- writing ----------------------------------------------------------------------------

    @property
    def torn(self) -> bool:
        """A failed write could not be cut back off one of the files (see the module
        docstring); the next write cuts it first."""
        return (
            self._torn or self.offset_index.torn or self.time_index.torn or self.txn_index.torn
        )

    def mark(self) -> SegmentMark:
        """What `rollback` restores: the sizes and the facts an append changes."""
        return SegmentMark(
            self.size,
            self.offset_index.entries,
            self.time_index.entries,
            self._next_offset,
            self._max_ts,
            self._rolling_ts,
            self._bytes_since_index,
        )

    def rollback(
        self,
        mark: SegmentMark,
        *,
        txn_index_from: int | None = None,
        txn_index_existed: bool = True,
    ) -> None:
        """Undo every append since `mark`: cut the `.log` and the indexes back to it and
        restore the in-memory facts; `txn_index_from`: also drop the aborted-txn entries whose
        marker is at or after that offset (and the `.txnindex` file unless
        `txn_index_existed`). Raises OSError when a file cannot be cut (the segment is then
        `torn`)."""
        self._next_offset = mark.next_offset
        self._max_ts = mark.max_ts
        self._rolling_ts = mark.rolling_ts
        self._bytes_since_index = mark.bytes_since_index
        cuts: list[Callable[[], None]] = []
        if txn_index_from is not None:
            cuts.append(lambda: self.txn_index.truncate_to(txn_index_from))
            if not txn_index_existed:
                cuts.append(self.txn_index.delete)
        self._cut(mark.size, (mark.index_entries, mark.time_entries), cuts)

    def _cut(
        self,
        size: int,
        index_entries: tuple[int, int] | None,
        more: Sequence[Callable[[], None]] = (),
    ) -> None:
        """Cut the `.log` to `size` bytes and the offset and time indexes to `index_entries`
        (None: they gained nothing), then run `more`; each cut is tried even when another
        failed, the first error raised (the segment stays `torn`)."""
        failures: list[OSError] = []
        if self._fd is None and not self._torn and size == self.size:
            # Nothing was written since it was evicted (a write needs the descriptor): the
            # file holds `size` bytes already, and a reopen could fail for lack of descriptors.
            pass
        else:
            self._torn = True
            try:
                os.ftruncate(self.fd, size)
                self._torn = False
            except OSError as exc:
                failures.append(exc)
        self.size = size
        cuts = list(more)
        if index_entries is not None:
            offsets, times = index_entries
            cuts[:0] = [
                lambda: self.offset_index.truncate_to_entries(offsets),
                lambda: self.time_index.truncate_to_entries(times),
            ]
        for cut in cuts:
            try:
                cut()
            except OSError as exc:
                failures.append(exc)
        if failures:
            raise failures[0]

    def append(self, data: memoryview | bytes, batches: Sequence[BatchMeta]) -> None:
        """Write `data` (the concatenation of `batches`, offsets already assigned) at the end of
        the `.log` and add index entries every `index_interval_bytes`; all or nothing (see the
        module docstring): on an error the segment is as it was before the call."""
        if not batches:
            return
        last_offset = batches[-1].last_offset
        if not self.can_convert_offset(last_offset):
            raise ValueError(f"offset {last_offset} does not fit segment {self.base_offset}")
        if self._torn:
            os.ftruncate(self.fd, self.size)
            self._torn = False
        # Opened before anything is written: when no descriptor is left there is nothing to
        # undo. Kept while the indexes open theirs (a segment's own opens never evict it).
        fd = self.fd
        # What an error must restore: the facts below only change once everything is written
        # (but the rolling timestamp), the index counts only once an entry is due.
        position = start = self.size
        rolling_ts = self._rolling_ts
        indexed: tuple[int, int] | None = None
        try:
            if position == 0:
                self._rolling_ts = max(b.max_timestamp for b in batches)
            bytes_since = self._bytes_since_last_index_entry()
            max_ts, max_ts_offset = self.max_timestamp_and_offset
            _pwrite_all(fd, data, position)
            for batch in batches:
                if batch.max_timestamp > max_ts:
                    max_ts, max_ts_offset = batch.max_timestamp, batch.last_offset
                # A full index (the roll check runs once per request, which may add several
                # entries here) just gets no more entries: the data is already written.
                if bytes_since > self.index_interval_bytes and not self.offset_index.is_full:
                    if indexed is None:
                        indexed = (self.offset_index.entries, self.time_index.entries)
                    self.offset_index.append(batch.last_offset, position)
                    if not self.time_index.is_full:
                        self.time_index.maybe_append(max_ts, max_ts_offset)
                    bytes_since = 0
                bytes_since += batch.size
                position += batch.size
        except BaseException:
            self._rolling_ts = rolling_ts
            self._cut(start, indexed)
            raise
        self.size = position
        self._bytes_since_index = bytes_since
        self._max_ts = (max_ts, max_ts_offset)
        self._next_offset = last_offset + 1

    def append_aborted_txn(self, txn: AbortedTxn) -> None:
        self.txn_index.append(txn)

    # -- reading ----------------------------------------------------------------------------

    def _read_header(self, position: int) -> BatchHeader | None:
        """The header of the batch at `position`, or None at/after the end of the data."""
        if position >= self.size:
            return None
        raw = os.pread(self.fd, BATCH_HEADER_PREFIX.size, position)
        if len(raw) < BATCH_HEADER_PREFIX.size:
            raise CorruptSegmentError(f"{self.log_path}: truncated batch header at byte {position}")
        base_offset, length, epoch, magic, _, _, delta, _, max_ts = BATCH_HEADER_PREFIX.unpack(raw)
        if magic != MAGIC or length < MIN_BATCH_LENGTH:
            raise CorruptSegmentError(
                f"{self.log_path}: no valid batch at byte {position} (magic {magic}, "
                f"batchLength {length})"
            )
        return BatchHeader(
            position, length + LOG_OVERHEAD, base_offset, base_offset + delta, max_ts, epoch
        )

    def _headers(self, start: int, end: int) -> list[BatchHeader]:
        """Headers of the batches starting in [start, end)."""
        found: list[BatchHeader] = []
        position = start
        while position < end:
            header = self._read_header(position)
            if header is None:
                break
            found.append(header)
            position += header.size
        return found

    def translate_offset(self, offset: int, start_position: int = 0) -> BatchHeader | None:
        """The first batch whose last offset is >= `offset` (the batch containing it, or the next
        one after a gap), or None when every batch in the segment ends before it."""
        _, position = self.offset_index.lookup(offset)
        position = max(position, start_position)
        while position < self.size:
            header = self._read_header(position)
            if header is None:
                return None
            if header.last_offset >= offset:
                return header
            position += header.size
        return None

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_position: int | None = None,
        *,
        min_one_message: bool = False,
    ) -> bytes | None:
        """Whole batches from the one containing `start_offset`, at most `max_bytes` (the
        first batch whole regardless when `min_one_message`), none starting at or after
        `max_position`. None when the segment holds nothing at or after `start_offset`."""
        extent = self.extent(start_offset, max_bytes, max_position,
                             min_one_message=min_one_message)
        if extent is None:
            return None
        return self.read_range(*extent)

    def read_range(self, start: int, end: int) -> bytes:
        """The bytes at [start, end), read with `pread` (a copy)."""
        return _pread_all(self.fd, end - start, start) if end > start else b""

    def extent(
        self,
        start_offset: int,
        max_bytes: int,
        max_position: int | None = None,
        *,
        min_one_message: bool = False,
    ) -> tuple[int, int] | None:
        """The byte range [start, end) `read` would return (start == end: nothing fits); reads
        batch headers only. The range is fixed now: later appends do not extend it."""
        if max_bytes < 0:
            raise ValueError(f"negative max_bytes {max_bytes}")
        first = self.translate_offset(start_offset)
        if first is None:
            return None
        limit = self.size if max_position is None else min(max_position, self.size)
        budget = max(max_bytes, first.size) if min_one_message else max_bytes
        end = min(limit, first.position + budget)
        if end < first.position + first.size:
            return first.position, first.position
        # Walk batch headers from the last index entry at or before `end` to find the last
        # batch boundary within it.
        _, boundary = self.offset_index.lookup_position(end)
        boundary = max(boundary, first.position + first.size)
        while boundary < end:
            header = self._read_header(boundary)
            if header is None or boundary + header.size > end:
                break
            boundary += header.size
        return first.position, boundary

    def offset_at(self, position: int) -> int:
        """The base offset of the batch at `position`, or the segment's next offset at its end
        (one header read): the exclusive upper offset of data ending at `position`."""
        header = self._read_header(position)
        return self.next_offset if header is None else header.base_offset

    def batch_headers(self, start_position: int = 0) -> list[BatchHeader]:
        """Every batch header from `start_position` to the end (reads headers only)."""
        return self._headers(start_position, self.size)

    def read_batch(self, position: int, size: int) -> RecordBatch:
        return RecordBatch(memoryview(_pread_all(self.fd, size, position)))

    def find_offset_by_timestamp(
        self, timestamp: int, starting_offset: int
    ) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= `timestamp` and offset >=
        `starting_offset`, or None when this segment has none."""
        _, ts_offset = self.time_index.lookup(timestamp)
        _, position = self.offset_index.lookup(max(ts_offset, starting_offset))
        for header in self._headers(position, self.size):
            if header.max_timestamp < timestamp or header.last_offset < starting_offset:
                continue
            batch = self.read_batch(header.position, header.size)
            for offset, ts in record_timestamps(batch):
                if ts >= timestamp and offset >= starting_offset:
                    return offset, ts
        return None

    def collect_aborted_txns(
        self, fetch_offset: int, upper_bound: int
    ) -> tuple[list[AbortedTxn], bool]:
        return self.txn_index.collect(fetch_offset, upper_bound)

    # -- recovery and truncation --------------------------------------------------------------

    def check_tail(self, *, from_start: bool = False) -> str | None:
        """The cheap check of a segment trusted without `recover()` (after a clean shutdown):
        None when it holds, else what is wrong (then recover the segment).

        From the batch named by the last `.index` entry (byte 0 when there is none, or when
        `from_start`: every header of the segment), batch headers must follow one another up
        to exactly the file size: magic 2, sane batchLength, no batch running past the end,
        offsets increasing and representable; the batch at the index entry must end at the
        entry's offset; the last batch must parse and its CRC-32C hold. Reads those headers
        (the 43-byte prefix above) and the last batch whole, nothing else; damage inside the
        body of an earlier batch is not seen here (a fetch returns it as stored, and clients
        reject its CRC).
        """
        if self.size == 0:
            return None
        entry = None if from_start else self.offset_index.last_entry()
        position = 0 if entry is None else entry[1]
        next_offset = self.base_offset
        last: BatchHeader | None = None
        try:
            while position < self.size:
                header = self._read_header(position)
                if header is None:
                    break
                if position + header.size > self.size:
                    return f"batch at byte {position} runs past the end ({self.size} bytes)"
                if (
                    header.last_offset < header.base_offset
                    or header.base_offset < next_offset
                    or not self.can_convert_offset(header.last_offset)
                ):
                    return f"batch at byte {position} has out-of-order offsets"
                if last is None and entry is not None and header.last_offset != entry[0]:
                    return (
                        f"index entry {entry[0]}->{entry[1]} names a batch ending at "
                        f"{header.last_offset}"
                    )
                next_offset = header.last_offset + 1
                last = header
                position += header.size
            if last is None:
                return f"no batch at byte {position}"
            if not self.read_batch(last.position, last.size).crc_ok():
                return f"CRC mismatch in the last batch, at byte {last.position}"
        except (CorruptSegmentError, RecordBatchError) as exc:
            return str(exc)
        self._next_offset = next_offset
        return None

    def recover(self, on_batch: Callable[[RecordBatch], None] | None = None) -> int:
        """Re-read the whole `.log`, keep the longest prefix of valid batches, rebuild the offset
        and time indexes, drop aborted-txn entries past the end. Returns the bytes cut off.

        A batch is valid when fully present, magic 2, batchLength sane, CRC-32C correct, its
        offsets above the previous batch's and representable relative to the base offset.
        `on_batch` sees every valid batch in order (leader epochs, producer state).
        """
        file_size = os.fstat(self.fd).st_size
        index_entries: list[tuple[int, int]] = []
        time_entries: list[tuple[int, int]] = []
        max_ts, max_ts_offset = NO_TIMESTAMP, self.base_offset
        last_index_position = 0
        next_offset = self.base_offset
        first_ts: int | None = None
        valid = 0
        want = _RECOVERY_CHUNK
        done = False
        while not done and valid < file_size:
            chunk = _pread_all(self.fd, min(want, file_size - valid), valid)
            view = memoryview(chunk)
            want = _RECOVERY_CHUNK
            at = 0
            while True:
                remaining = len(view) - at
                if remaining < LOG_OVERHEAD:
                    done = valid + at + LOG_OVERHEAD > file_size
                    break
                length = batch_length_at(view, at)
                size = length + LOG_OVERHEAD
                if length < MIN_BATCH_LENGTH or valid + at + size > file_size:
                    done = True  # garbage or a torn tail
                    break
                if size > remaining:
                    want = max(size, _RECOVERY_CHUNK)
                    break
                try:
                    batch = RecordBatch(view, at)
                except RecordBatchError:
                    done = True
                    break
                if (
                    not batch.crc_ok()
                    or batch.last_offset_delta < 0
                    or batch.base_offset < next_offset
                    or not self.can_convert_offset(batch.last_offset)
                ):
                    done = True
                    break
                position = valid + at
                if first_ts is None:
                    first_ts = batch.max_timestamp
                if batch.max_timestamp > max_ts:
                    max_ts, max_ts_offset = batch.max_timestamp, batch.last_offset
                if position - last_index_position > self.index_interval_bytes:
                    index_entries.append((batch.last_offset, position))
                    if not time_entries or max_ts > time_entries[-1][0]:
                        time_entries.append((max_ts, max_ts_offset))
                    last_index_position = position
                next_offset = batch.last_offset + 1
                if on_batch is not None:
                    on_batch(batch)
                at += size
            valid += at
        truncated = file_size - valid
        if truncated:
            os.ftruncate(self.fd, valid)
        self.size = valid
        if max_ts >= 0 and (not time_entries or max_ts > time_entries[-1][0]):
            # Kafka also ends a recovered segment's time index with its overall maximum.
            time_entries.append((max_ts, max_ts_offset))
        self.offset_index.replace_all(index_entries)
        self.time_index.replace_all(time_entries)
        self.txn_index.truncate_to(next_offset)
        self._next_offset = next_offset
        self._max_ts = (max_ts, max_ts_offset)
        self._rolling_ts = first_ts if first_ts is not None else NO_TIMESTAMP
        self._bytes_since_index = valid - last_index_position
        return truncated

    def truncate_to(self, offset: int, *, now_ms: int) -> int:
        """Remove every batch holding offsets >= `offset` (a batch straddling it goes whole).
        Returns the bytes removed."""
        first = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        if first is None:
            return 0
        removed = self.size - first.position
        os.ftruncate(self.fd, first.position)
        self.size = first.position
        self._next_offset = None
        self._bytes_since_index = None
        if self.size == 0:
            self.created_ms = now_ms
            self._rolling_ts = NO_TIMESTAMP
        self._max_ts = self._scan_max_timestamp()
        return removed

    def _scan_max_timestamp(self) -> tuple[int, int]:
        max_ts, max_ts_offset = self.time_index.last_entry
        _, position = self.offset_index.lookup(max_ts_offset)
        for header in self._headers(position, self.size):
            if header.max_timestamp > max_ts:
                max_ts, max_ts_offset = header.max_timestamp, header.last_offset
        return max_ts, max_ts_offset

    # -- lifecycle ----------------------------------------------------------------------------

    def change_file_suffixes(self, old: str, new: str) -> None:
        """Rename the four files from suffix `old` to `new` (`.log` first, then `.index`,
        `.timeindex`, `.txnindex`, Kafka's order, which crash recovery relies on). Open
        descriptors stay valid; a missing file (e.g. no `.txnindex`) is skipped."""
        if self.suffix != old:
            raise ValueError(f"segment {self.log_path} has suffix {self.suffix!r}, not {old!r}")
        new_log = files.log_file(self.directory, self.base_offset, new)
        os.replace(self.log_path, new_log)
        self.log_path = new_log
        self.offset_index.rename_to(files.offset_index_file(self.directory, self.base_offset, new))
        self.time_index.rename_to(files.time_index_file(self.directory, self.base_offset, new))
        self.txn_index.rename_to(files.txn_index_file(self.directory, self.base_offset, new))
        self.suffix = new

    def load_indexes(self) -> None:
        """Read the index files into memory now (before they are renamed or removed)."""
        _ = self.offset_index.entries, self.time_index.entries, self.txn_index.entries

    def set_last_modified(self, mtime_ms: int) -> None:
        """Set the `.log` file's modification time (a cleaned segment keeps its sources')."""
        os.utime(self.log_path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))

    @property
    def last_modified_ms(self) -> int:
        return int(os.stat(self.log_path).st_mtime * 1000)

    def on_become_inactive(self) -> None:
        """Called when a newer segment takes over appends: write the final time index entry
        (the segment's max timestamp) and release the index write descriptors."""
        max_ts, max_ts_offset = self.max_timestamp_and_offset
        self.time_index.maybe_append(max_ts, max_ts_offset, skip_full_check=True)
        self.release_index_handles()

    def release_index_handles(self) -> None:
        """Close the index write descriptors (reopened on demand); entries stay in memory."""
        try:
            self.offset_index.drop_descriptor()
            self.time_index.drop_descriptor()
            self.txn_index.drop_descriptor()
        finally:
            self._descriptors_changed()

    def flush(self) -> None:
        """fsync the log and its indexes. A segment holding no `.log` descriptor (evicted, or
        never used) fsyncs a short-lived one, not counted by the cache: fsync writes back the
        inode's dirty pages whichever descriptor wrote them (see `handles.py`)."""
        fd = self._fd
        if fd is not None:
            os.fsync(fd)
        elif self._closed:
            raise ValueError(f"segment {self.log_path} is closed")
        else:
            fd = open_file(self._handles, self.log_path, os.O_RDONLY, keep=self, counted=False)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """Write the final time index entry and close every descriptor. On an OSError (e.g.
        a full disk) every descriptor is released all the same, then the error raised."""
        if self._closed:
            return
        try:
            if self._torn:
                os.ftruncate(self.fd, self.size)
                self._torn = False
            if self.size and self._max_ts is not None:
                # Only when known (as Kafka): an untouched segment already ends with its maximum.
                max_ts, max_ts_offset = self._max_ts
                self.time_index.maybe_append(max_ts, max_ts_offset, skip_full_check=True)
        except BaseException:
            self.release()
            raise
        self._closed = True
        try:
            self.drop_descriptors()
        finally:
            self._descriptors_changed()

    def release(self) -> None:
        """Close every descriptor for good, writing nothing and ignoring errors (the log dir
        failed, or the segment is about to be deleted)."""
        self._closed = True
        for index in (self.offset_index, self.time_index, self.txn_index):
            with contextlib.suppress(OSError):
                index.drop_descriptor()
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._descriptors_changed()

    def delete(self) -> None:
        """Close and remove all four files (the `.log` first: an index without its log is
        removed as an orphan on the next start)."""
        self.release()
        self.log_path.unlink(missing_ok=True)
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size})"


def record_timestamps(batch: RecordBatch) -> list[tuple[int, int]]:
    """(offset, timestamp) of every record; LogAppendTime batches stamp all with max timestamp."""
    log_append_time = batch.timestamp_type == 1
    return [
        (
            batch.base_offset + record.offset_delta,
            batch.max_timestamp
            if log_append_time
            else batch.base_timestamp + record.timestamp_delta,
        )
        for record in batch.records()
    ]


def _pwrite_all(fd: int, data: memoryview | bytes, position: int) -> None:
    """Write all of `data` at `position`, continuing after short writes."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, position)
        if written <= 0:
            raise OSError(errno.EIO, f"write of {len(view)} bytes at {position} made no progress")
        position += written
        view = view[written:]


def _pread_all(fd: int, size: int, position: int) -> bytes:
    data = os.pread(fd, size, position)
    if len(data) == size:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.pread(fd, size - got, position + got)
        if not more:
            raise CorruptSegmentError(f"short read: {got} of {size} bytes at {position}")
        parts.append(more)
        got += len(more)
    return b"".join(parts)


__all__ = [
    "BatchHeader",
    "BatchMeta",
    "CorruptIndexError",
    "CorruptSegmentError",
    "LogSegment",
    "SegmentMark",
    "record_timestamps",
]
