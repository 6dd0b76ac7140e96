"""Producer state of one partition: idempotent sequences, producer epochs, open transactions.

What Kafka's ProducerStateManager/ProducerAppendInfo keep, per producer id: its epoch, the
metadata of its last 5 batches (to answer a retried batch with the original offsets), the
coordinator epoch of the last transaction marker, and the first offset of its open
transaction on this partition. From the open transactions follows the first unstable offset,
which bounds the last stable offset (LSO) that read_committed consumers may read up to.

Validation of an append (`prepare`) mirrors Kafka 3.9:
- a batch whose (epoch, first sequence, last sequence) equals one of the producer's last 5
  batches is a duplicate: the append is answered with that batch's offsets, nothing written;
- an epoch older than the producer's is INVALID_PRODUCER_EPOCH (also for markers);
- a new epoch must start at sequence 0, else OUT_OF_ORDER_SEQUENCE_NUMBER; within an epoch
  each batch must continue at last sequence + 1 (wrapping after int32 max);
- a producer this partition knows nothing about (never seen, expired, or removed with its
  segments) may start at any sequence: since Kafka 2.5 (KIP-360) the broker no longer answers
  UNKNOWN_PRODUCER_ID for produce, the client resets its sequences itself;
- a non-transactional batch while the producer has an open transaction is INVALID_TXN_STATE;
- a marker with an older coordinator epoch is TRANSACTION_COORDINATOR_FENCED;
- a marker of a transactions v2 transaction must carry an epoch above the producer's (the
  coordinator bumped it; Kafka 4.2's strict check, KIP-1228), else INVALID_PRODUCER_EPOCH:
  a late retry of a marker cannot end the next transaction of the same producer.

Snapshot file `<20-digit offset>.snapshot` in the partition directory, Kafka's layout
(big-endian), reflecting the state of every batch below `offset`:

    version   int16   1
    crc       uint32  CRC-32C of every byte after this field
    count     int32   number of entries
    entries   count x (producer_id int64, epoch int16, last_sequence int32,
                       last_offset int64, offset_delta int32, timestamp int64,
                       coordinator_epoch int32, current_txn_first_offset int64 (-1: none))

Only the producer's last batch survives a snapshot (as in Kafka). Snapshots are written when
the log rolls a segment and on clean shutdown; on start the state is rebuilt from the latest
readable snapshot plus the batches after it. While rebuilding, only the 61-byte batch
headers are read (layout in `odradek.wire.records`): baseOffset int64 @0, attributes int16
@21, lastOffsetDelta int32 @23, maxTimestamp int64 @35, producerId int64 @43, producerEpoch
int16 @51, baseSequence int32 @53; a control batch is read whole to learn its marker type
(key: version int16, type int16) and coordinator epoch (value: version int16, epoch int32).
"""

from __future__ import annotations

import contextlib
import enum
import os
import struct
from bisect import insort
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import structlog

from odradek.broker.storage import files

# The producer-state exceptions live in errors.py; re-exported here for the modules that
# import them from this one.
from odradek.broker.storage.errors import CoordinatorFencedError as CoordinatorFencedError
from odradek.broker.storage.errors import CorruptSnapshotError as CorruptSnapshotError
from odradek.broker.storage.errors import InvalidProducerEpochError as InvalidProducerEpochError
from odradek.broker.storage.errors import InvalidTxnStateError as InvalidTxnStateError
from odradek.broker.storage.errors import OutOfOrderSequenceError as OutOfOrderSequenceError
from odradek.broker.storage.errors import ProducerStateError as ProducerStateError
from odradek.broker.storage.txn_index import AbortedTxn
from odradek.wire import crc32c_c as crc32c
from odradek.wire.exceptions import ProtocolError, RecordBatchError
from odradek.wire.records import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    BATCH_HEADER_SIZE,
    CONTROL_ABORT,
    LOG_OVERHEAD,
    RecordBatch,
    read_header,
)

if TYPE_CHECKING:
    from odradek.broker.storage.segment import LogSegment

log = structlog.get_logger(__name__)

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NUM_BATCHES_TO_RETAIN = 5
SNAPSHOT_VERSION = 1
_INT32_MAX = 2**31 - 1

_SNAP_PREFIX = struct.Struct(">hIi")  # version, crc, entry count
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_START = 6  # the CRC covers everything after version and crc
_SCAN_CHUNK = 256 * 1024


class Origin(enum.Enum):
    """Who appends: clients get full validation, the coordinators epoch checks only, and
    batches replayed from the log while rebuilding none."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLAY = "replay"


def decrement_sequence(sequence: int, decrement: int) -> int:
    """`sequence - decrement`, wrapping below 0 to int32 max as producer sequences do."""
    if sequence < decrement:
        return _INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None
    batches: deque[BatchMetadata] = field(default_factory=deque)

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(self.producer_id, self.producer_epoch, self.coordinator_epoch,
                                  self.last_timestamp, self.current_txn_first_offset,
                                  deque(self.batches))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def maybe_update_epoch(self, epoch: int) -> None:
        """A new epoch forgets the old epoch's batches (sequences restart at 0)."""
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, offset_delta: int,
                  timestamp: int) -> None:
        self.maybe_update_epoch(epoch)
        if len(self.batches) == NUM_BATCHES_TO_RETAIN:
            self.batches.popleft()
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for meta in self.batches:
            if meta.first_seq == first_seq and meta.last_seq == last_seq:
                return meta
        return None


class BatchInfo(NamedTuple):
    """What producer state needs of a batch, with its final offsets."""

    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    max_timestamp: int
    is_transactional: bool
    # (marker type, coordinator epoch) of a control batch; None for data batches and for
    # control batches with no record (their transaction was cleaned away).
    marker: tuple[int, int] | None
    is_control: bool

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return NO_SEQUENCE
        delta = self.last_offset - self.base_offset
        if self.base_sequence > _INT32_MAX - delta:
            return delta - (_INT32_MAX - self.base_sequence) - 1
        return self.base_sequence + delta

    @classmethod
    def of(cls, batch: RecordBatch, base_offset: int) -> BatchInfo:
        """From a batch view; `base_offset` is the offset the batch gets (or has) in the log."""
        return cls(base_offset, base_offset + batch.last_offset_delta, batch.producer_id,
                   batch.producer_epoch, batch.base_sequence, batch.max_timestamp,
                   batch.is_transactional, batch.control_marker() if batch.is_control else None,
                   batch.is_control)


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # offset of the marker
    is_aborted: bool


@dataclass(slots=True)
class PreparedAppend:
    """The outcome of validating an append, applied with `ProducerStateManager.apply` once
    the batches are written. `duplicate` set: nothing may be written."""

    duplicate: BatchMetadata | None = None
    entries: dict[int, ProducerStateEntry] = field(default_factory=dict)
    started: list[tuple[int, int]] = field(default_factory=list)  # (first offset, producer id)
    completed: list[CompletedTxn] = field(default_factory=list)
    end_offset: int = -1  # offset after the last batch


class ProducerStateManager:
    """Producer state of the partition whose directory is `directory`. Not thread-safe."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.producers: dict[int, ProducerStateEntry] = {}
        self._ongoing: dict[int, int] = {}  # first offset of an open txn -> producer id
        self._ongoing_sorted: list[int] = []
        self.map_end_offset = 0
        self._last_snap_offset = 0
        self._snapshots: list[int] = sorted(_list_snapshots(directory))

    @property
    def name(self) -> str:
        return self.directory.name

    # -- validation and update --------------------------------------------------------------

    def prepare(self, batches: Iterable[BatchInfo], origin: Origin,
                transaction_version: int = 0) -> PreparedAppend:
        """Validate `batches` (with their final offsets) against the current state. Raises a
        ProducerStateError subclass; returns the updates to `apply` after writing them.
        `transaction_version`: that of the transaction a coordinator's marker ends."""
        out = PreparedAppend()
        for info in batches:
            out.end_offset = info.last_offset + 1
            pid = info.producer_id
            if pid < 0:
                continue
            existing = self.producers.get(pid)
            if origin is Origin.CLIENT and existing is not None and not info.is_control:
                dup = existing.find_duplicate(info.producer_epoch, info.base_sequence,
                                              info.last_sequence)
                if dup is not None:
                    return PreparedAppend(duplicate=dup, end_offset=out.end_offset)
            entry = out.entries.get(pid)
            if entry is None:
                entry = existing.copy() if existing is not None else ProducerStateEntry(pid)
                out.entries[pid] = entry
            prior_epoch = existing.producer_epoch if existing is not None else NO_PRODUCER_EPOCH
            if info.is_control:
                self._prepare_marker(entry, info, origin, out, transaction_version)
            else:
                self._prepare_data(entry, info, origin, prior_epoch, out)
        return out

    def _check_epoch(self, entry: ProducerStateEntry, info: BatchInfo, origin: Origin) -> None:
        if origin is not Origin.REPLAY and info.producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"Epoch of producer {entry.producer_id} at offset {info.base_offset} in "
                f"{self.name} is {info.producer_epoch}, which is smaller than the last seen "
                f"epoch {entry.producer_epoch}")

    def _prepare_data(self, entry: ProducerStateEntry, info: BatchInfo, origin: Origin,
                      prior_epoch: int, out: PreparedAppend) -> None:
        self._check_epoch(entry, info, origin)
        first_seq = info.base_sequence
        if origin is Origin.CLIENT:
            if info.producer_epoch != entry.producer_epoch:
                if first_seq != 0 and entry.producer_epoch != NO_PRODUCER_EPOCH:
                    raise OutOfOrderSequenceError(
                        f"Invalid sequence number for new epoch of producer {entry.producer_id} "
                        f"at offset {info.base_offset} in partition {self.name}: "
                        f"{info.producer_epoch} (request epoch), {first_seq} (seq. number), "
                        f"{entry.producer_epoch} (current producer epoch)")
            elif not (prior_epoch == NO_PRODUCER_EPOCH or _in_sequence(entry.last_seq, first_seq)):
                raise OutOfOrderSequenceError(
                    f"Out of order sequence number for producer {entry.producer_id} at offset "
                    f"{info.base_offset} in partition {self.name}: {first_seq} (incoming seq. "
                    f"number), {entry.last_seq} (current end sequence number)")
        entry.add_batch(info.producer_epoch, info.last_sequence, info.last_offset,
                        info.last_offset - info.base_offset, info.max_timestamp)
        if entry.current_txn_first_offset is not None and not info.is_transactional:
            if origin is not Origin.REPLAY:
                raise InvalidTxnStateError(
                    f"Expected transactional write from producer {entry.producer_id} at offset "
                    f"{info.base_offset} in partition {self.name}")
        elif entry.current_txn_first_offset is None and info.is_transactional:
            entry.current_txn_first_offset = info.base_offset
            out.started.append((info.base_offset, entry.producer_id))

    def _prepare_marker(self, entry: ProducerStateEntry, info: BatchInfo, origin: Origin,
                        out: PreparedAppend, transaction_version: int = 0) -> None:
        if info.marker is None:
            return  # an empty control batch: its transaction was cleaned from the log
        marker_type, coordinator_epoch = info.marker
        if origin is not Origin.REPLAY and entry.coordinator_epoch > coordinator_epoch:
            raise CoordinatorFencedError(
                f"Invalid coordinator epoch for producerId {entry.producer_id} at offset "
                f"{info.base_offset} in partition {self.name}: {coordinator_epoch} (zombie), "
                f"{entry.coordinator_epoch} (current)")
        self._check_epoch(entry, info, origin)
        if (transaction_version >= 2 and origin is not Origin.REPLAY
                and info.producer_epoch <= entry.producer_epoch):
            raise InvalidProducerEpochError(
                f"Epoch of the transactions v2 marker of producer {entry.producer_id} at offset "
                f"{info.base_offset} in {self.name} is {info.producer_epoch}, which is not "
                f"greater than the last seen epoch {entry.producer_epoch}")
        first = entry.current_txn_first_offset
        if first is not None:
            out.completed.append(CompletedTxn(entry.producer_id, first, info.base_offset,
                                              marker_type == CONTROL_ABORT))
        entry.maybe_update_epoch(info.producer_epoch)
        entry.current_txn_first_offset = None
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = info.max_timestamp

    def apply(self, prepared: PreparedAppend) -> list[CompletedTxn]:
        """Record a written append; returns the transactions its markers completed, which the
        caller indexes (`last_stable_offset_after`) and then passes to `complete_txn`."""
        if prepared.duplicate is not None:
            raise ValueError("a duplicate append was not written and cannot be applied")
        self.producers.update(prepared.entries)
        for first_offset, pid in prepared.started:
            self._ongoing[first_offset] = pid
            insort(self._ongoing_sorted, first_offset)
        if prepared.end_offset > self.map_end_offset:
            self.map_end_offset = prepared.end_offset
        return prepared.completed

    def aborted_txns(self, prepared: PreparedAppend) -> list[AbortedTxn]:
        """The `.txnindex` entries for the transactions the markers of `prepared` abort, with
        the LSO each gets (`last_stable_offset_after` as `apply` and `complete_txn` would
        leave it), computed without changing any state: they are written with the append,
        before `apply` (see `PartitionLog.append`)."""
        if not prepared.completed:
            return []
        ongoing = dict(self._ongoing)
        ongoing.update(prepared.started)
        order = sorted(ongoing)
        found: list[AbortedTxn] = []
        for txn in prepared.completed:
            if txn.is_aborted:
                lso = next((first for first in order if ongoing[first] != txn.producer_id),
                           txn.last_offset + 1)
                found.append(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso))
            if ongoing.pop(txn.first_offset, None) is not None:
                order.remove(txn.first_offset)
        return found

    def last_stable_offset_after(self, txn: CompletedTxn) -> int:
        """The LSO once `txn` completes: the first open transaction of another producer, else
        the offset after its marker (the value stored in the aborted-txn index)."""
        for first in self._ongoing_sorted:
            if self._ongoing[first] != txn.producer_id:
                return first
        return txn.last_offset + 1

    def complete_txn(self, txn: CompletedTxn) -> None:
        if self._ongoing.pop(txn.first_offset, None) is None:
            raise ValueError(f"{self.name}: completing transaction {txn} that was not started")
        self._ongoing_sorted.remove(txn.first_offset)

    # -- queries ----------------------------------------------------------------------------

    def first_unstable_offset(self) -> int | None:
        """First offset of the earliest open transaction (None when none is open)."""
        return self._ongoing_sorted[0] if self._ongoing_sorted else None

    def ongoing_transactions(self) -> list[tuple[int, int]]:
        """(first offset, producer id) of each open transaction, by first offset."""
        return [(first, self._ongoing[first]) for first in self._ongoing_sorted]

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    # -- expiration -------------------------------------------------------------------------

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for `producer.id.expiration.ms` without an open transaction.
        Returns how many were removed."""
        doomed = [pid for pid, e in self.producers.items()
                  if e.current_txn_first_offset is None
                  and now_ms - e.last_timestamp >= expiration_ms]
        for pid in doomed:
            del self.producers[pid]
        return len(doomed)

    # -- snapshots --------------------------------------------------------------------------

    @property
    def snapshot_offsets(self) -> list[int]:
        return list(self._snapshots)

    def take_snapshot(self, *, sync: bool = True) -> Path | None:
        """Write `<map end offset>.snapshot` unless the state has not moved since the last one."""
        offset = self.map_end_offset
        if offset <= self._last_snap_offset and offset in self._snapshots:
            return None
        path = files.snapshot_file(self.directory, offset)
        write_snapshot(path, self.producers.values(), sync=sync)
        if offset not in self._snapshots:
            insort(self._snapshots, offset)
        self._last_snap_offset = offset
        return path

    def delete_snapshot(self, offset: int) -> None:
        """Delete the snapshot at `offset` (a roll that took it failed), ignoring I/O errors:
        a snapshot left behind is still true, it describes the state at its offset."""
        if offset in self._snapshots:
            self._snapshots.remove(offset)
            with contextlib.suppress(OSError):
                files.snapshot_file(self.directory, offset).unlink(missing_ok=True)

    def delete_snapshots_before(self, offset: int) -> None:
        """Delete snapshot files below `offset` (their segments are gone)."""
        while self._snapshots and self._snapshots[0] < offset:
            files.snapshot_file(self.directory, self._snapshots.pop(0)).unlink(missing_ok=True)

    def _delete_snapshots_after(self, offset: int) -> None:
        while self._snapshots and self._snapshots[-1] > offset:
            files.snapshot_file(self.directory, self._snapshots.pop()).unlink(missing_ok=True)

    def _load_latest_snapshot(self) -> int | None:
        while self._snapshots:
            offset = self._snapshots[-1]
            path = files.snapshot_file(self.directory, offset)
            try:
                entries = read_snapshot(path)
            except (CorruptSnapshotError, OSError) as exc:
                log.warning("unreadable producer snapshot, deleting it", file=str(path),
                            error=str(exc))
                self._snapshots.pop()
                path.unlink(missing_ok=True)
                continue
            for entry in entries:
                self.producers[entry.producer_id] = entry
                if entry.current_txn_first_offset is not None:
                    self._ongoing[entry.current_txn_first_offset] = entry.producer_id
                    insort(self._ongoing_sorted, entry.current_txn_first_offset)
            return offset
        return None

    # -- rebuilding -------------------------------------------------------------------------

    def rebuild(self, segments: Sequence[LogSegment], log_start_offset: int,
                log_end_offset: int) -> None:
        """Load the latest snapshot at or below the log end and replay every batch after it.
        Aborted transactions found while replaying are added to their segment's `.txnindex`
        when missing (a crash between writing a marker and indexing it)."""
        self.producers.clear()
        self._ongoing.clear()
        self._ongoing_sorted.clear()
        self._delete_snapshots_after(log_end_offset)
        first_base = segments[0].base_offset if segments else log_start_offset
        self.delete_snapshots_before(first_base)
        loaded = self._load_latest_snapshot()
        start = loaded if loaded is not None else first_base
        self.map_end_offset = start
        self._last_snap_offset = loaded if loaded is not None else -1
        replayed = 0
        for segment in segments:
            if segment.next_offset <= start:
                continue
            indexed = {t.last_offset for t in segment.txn_index.all()}
            for info in _segment_batches(segment, start):
                replayed += 1
                prepared = self.prepare([info], Origin.REPLAY)
                for txn in self.apply(prepared):
                    if txn.is_aborted and txn.last_offset not in indexed:
                        self._index_recovered_abort(segment, txn)
                    self.complete_txn(txn)
        self.map_end_offset = max(self.map_end_offset, log_end_offset)
        if replayed:
            log.info("rebuilt producer state", partition=self.name, snapshot=loaded,
                     batches=replayed, producers=len(self.producers),
                     open_transactions=len(self._ongoing))

    def _index_recovered_abort(self, segment: LogSegment, txn: CompletedTxn) -> None:
        lso = self.last_stable_offset_after(txn)
        try:
            segment.append_aborted_txn(
                AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso))
        except ValueError as exc:  # not at the tail: an older entry went missing
            log.warning("cannot re-index aborted transaction", partition=self.name,
                        txn=str(txn), error=str(exc))


def _segment_batches(segment: LogSegment, start_offset: int) -> Iterable[BatchInfo]:
    """BatchInfo of every producer batch in `segment` ending at or after `start_offset`. Reads
    only headers, in chunks (a restart may scan a whole segment), and control batches whole."""
    first = segment.translate_offset(start_offset)
    if first is None:
        return
    end = segment.size
    pos = first.position
    buf, buf_pos = b"", pos  # buf holds the file's bytes from buf_pos
    while pos + BATCH_HEADER_SIZE <= end:
        rel = pos - buf_pos
        if rel + BATCH_HEADER_SIZE > len(buf):
            # `segment.fd` read again each time: between yields the caller may open files,
            # which may evict this segment's descriptor (see segment.py).
            buf, buf_pos, rel = os.pread(segment.fd, _SCAN_CHUNK, pos), pos, 0
            if len(buf) < BATCH_HEADER_SIZE:
                return
        header = read_header(buf, rel)
        size = header.batch_length + LOG_OVERHEAD
        if size < BATCH_HEADER_SIZE:  # not a batch: recovery checks the files, not us
            log.warning("bad batch length while rebuilding producer state",
                        segment=str(segment.log_path), position=pos, length=header.batch_length)
            return
        batch_pos = pos
        pos += size
        base_offset, pid = header.base_offset, header.producer_id
        last_offset = base_offset + header.last_offset_delta
        if pid < 0 or last_offset < start_offset:
            continue
        marker = None
        is_control = bool(header.attributes & ATTR_CONTROL)
        if is_control:
            try:
                marker = segment.read_batch(batch_pos, size).control_marker()
            except RecordBatchError as exc:
                log.warning("unreadable control batch", segment=str(segment.log_path),
                            offset=base_offset, error=str(exc))
                continue
        yield BatchInfo(base_offset, last_offset, pid, header.producer_epoch,
                        header.base_sequence, header.max_timestamp,
                        bool(header.attributes & ATTR_TRANSACTIONAL), marker, is_control)


def _list_snapshots(directory: Path) -> list[int]:
    found = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    for name in names:
        if name.endswith(files.SNAPSHOT_SUFFIX):
            try:
                found.append(files.offset_from_file_name(name))
            except ValueError:
                continue
    return found


# -- the snapshot file ------------------------------------------------------------------------


def encode_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    body = bytearray()
    count = 0
    for e in entries:
        body += _SNAP_ENTRY.pack(e.producer_id, e.producer_epoch, e.last_seq, e.last_data_offset,
                                 e.last_offset_delta, e.last_timestamp, e.coordinator_epoch,
                                 -1 if e.current_txn_first_offset is None
                                 else e.current_txn_first_offset)
        count += 1
    out = bytearray(_SNAP_PREFIX.pack(SNAPSHOT_VERSION, 0, count))
    out += body
    crc = crc32c.crc32c(memoryview(out)[_CRC_START:])
    struct.pack_into(">I", out, 2, crc)
    return bytes(out)


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    if len(data) < _SNAP_PREFIX.size:
        raise CorruptSnapshotError(f"snapshot of {len(data)} bytes is shorter than its header")
    version, crc, count = _SNAP_PREFIX.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    computed = crc32c.crc32c(memoryview(data)[_CRC_START:])
    if computed != crc:
        raise CorruptSnapshotError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
            f"Computed crc: {computed}")
    if count < 0 or len(data) != _SNAP_PREFIX.size + count * _SNAP_ENTRY.size:
        raise CorruptSnapshotError(
            f"snapshot declares {count} entries but holds {len(data) - _SNAP_PREFIX.size} bytes "
            f"of entries")
    entries = []
    for (pid, epoch, last_seq, last_offset, offset_delta, timestamp, coordinator_epoch,
         txn_first) in _SNAP_ENTRY.iter_unpack(memoryview(data)[_SNAP_PREFIX.size:]):
        entry = ProducerStateEntry(pid, epoch, coordinator_epoch, timestamp,
                                   txn_first if txn_first >= 0 else None)
        if last_offset >= 0:
            entry.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        entries.append(entry)
    return entries


def read_snapshot(path: Path) -> list[ProducerStateEntry]:
    try:
        return decode_snapshot(path.read_bytes())
    except (struct.error, ProtocolError) as exc:
        raise CorruptSnapshotError(f"{path}: {exc}") from None


def write_snapshot(path: Path, entries: Iterable[ProducerStateEntry], *, sync: bool = True) -> None:
    """Write atomically (`files.atomic_write`); `sync=False` skips the fsyncs."""
    files.atomic_write(path, encode_snapshot(entries), sync=sync)

