"""RecordBatch v2 (magic 2): a zero-copy header view, CRC-32C, in-place patches, lazy records.

Byte layout of one batch (big-endian; offsets from the batch start)::

     0 baseOffset           int64
     8 batchLength          int32   bytes after this field: size = batchLength + 12
    12 partitionLeaderEpoch int32
    16 magic                int8    2 (0 and 1, the legacy message sets, keep it at 16 too)
    17 crc                  uint32  CRC-32C of bytes 21..end (attributes to the last record)
    21 attributes           int16   bits 0-2 compression, 3 timestamp type (1 = LogAppendTime),
                                    4 transactional, 5 control, 6 delete horizon set
    23 lastOffsetDelta      int32
    27 baseTimestamp        int64
    35 maxTimestamp         int64
    43 producerId           int64
    51 producerEpoch        int16
    53 baseSequence         int32
    57 recordsCount         int32
    61 records              recordsCount records, compressed as one block when a codec is set

One record (varint = zigzag-encoded base-128 varint, at most 5 bytes; varlong at most 10)::

    length varint (bytes after this field) | attributes int8 | timestampDelta varlong |
    offsetDelta varint | keyLength varint (-1 = null) | key | valueLength varint (-1 = null) |
    value | headersCount varint |
    [ headerKeyLength varint | headerKey UTF-8 | headerValueLength varint (-1 = null) | value ]*

A control record (control batches: transaction markers) has key = version int16 | type int16
(0 ABORT, 1 COMMIT) and value = version int16 | coordinatorEpoch int32.

baseOffset and partitionLeaderEpoch lie outside the CRC: the broker patches them in place
without re-checksumming. Everything wrong inside a batch raises `RecordBatchError`, which the
broker answers with an error code on the partition rather than by closing the connection.

This module is the one home of that layout: the field offsets (`*_OFFSET`), the header
structs (`BATCH_HEADER`, all 61 bytes; `BATCH_HEADER_PREFIX`, baseOffset to maxTimestamp),
the attribute bits (`ATTR_*`) and the surgery the storage layer does on batches it does not
decode: reading header fields at a position (`read_header`, `batch_length_at`), patching
base offset, leader epoch and timestamps in place (`set_*`), and rewriting a batch with
fewer records for the log cleaner (`rewrite_batch`).
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple, Protocol

from odradek.wire import crc32c_c as crc32c
from odradek.wire.compression import compress, decompress, decompress_stream
from odradek.wire.exceptions import InvalidRecordError, RecordBatchError

try:  # the optional C extension (setup.py); records.py works the same without it, slower
    from odradek.wire import _speedups
except ImportError:
    _speedups = None  # type: ignore[assignment]

__all__ = [
    "ATTRIBUTES_OFFSET",
    "ATTR_COMPRESSION_MASK",
    "ATTR_CONTROL",
    "ATTR_DELETE_HORIZON",
    "ATTR_TIMESTAMP_TYPE",
    "ATTR_TRANSACTIONAL",
    "BATCH_HEADER",
    "BATCH_HEADER_PREFIX",
    "BATCH_HEADER_SIZE",
    "BATCH_LENGTH_OFFSET",
    "CONTROL_ABORT",
    "CONTROL_COMMIT",
    "CRC_OFFSET",
    "LEGACY_MAGIC_OFFSET",
    "LOG_OVERHEAD",
    "MAGIC",
    "MAX_TIMESTAMP_OFFSET",
    "MIN_BATCH_LENGTH",
    "PARTITION_LEADER_EPOCH_OFFSET",
    "HeaderFields",
    "Record",
    "RecordBatch",
    "batch_length_at",
    "build_batch",
    "build_control_batch",
    "iter_batches",
    "read_header",
    "recompress_batch",
    "record_walker",
    "rewrite_batch",
    "set_base_offset",
    "set_max_timestamp",
    "set_max_timestamp_log_append_time",
    "set_partition_leader_epoch",
]

Buffer = bytes | bytearray | memoryview

BATCH_HEADER_SIZE: Final = 61
LEGACY_MAGIC_OFFSET: Final = 16
LOG_OVERHEAD: Final = 12  # baseOffset + batchLength: the bytes batchLength does not count
# Smallest legal batchLength: the header after the batchLength field, with no records.
MIN_BATCH_LENGTH: Final = BATCH_HEADER_SIZE - LOG_OVERHEAD
MAGIC: Final = 2

# Field offsets from the batch start (the table above).
BATCH_LENGTH_OFFSET: Final = 8
PARTITION_LEADER_EPOCH_OFFSET: Final = 12
CRC_OFFSET: Final = 17
ATTRIBUTES_OFFSET: Final = 21
MAX_TIMESTAMP_OFFSET: Final = 35

ATTR_COMPRESSION_MASK: Final = 0x07
ATTR_TIMESTAMP_TYPE: Final = 0x08
ATTR_TRANSACTIONAL: Final = 0x10
ATTR_CONTROL: Final = 0x20
ATTR_DELETE_HORIZON: Final = 0x40

CONTROL_ABORT: Final = 0
CONTROL_COMMIT: Final = 1

_INT32_MAX: Final = 0x7FFFFFFF
_LONG_MAX: Final = 2**63 - 1
_LONG_MIN: Final = -(2**63)

# The whole header, baseOffset to recordsCount, in the order of the table above.
BATCH_HEADER: Final = struct.Struct(">qiibIhiqqqhii")
# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp (43 bytes): what locating batches by offset or time needs.
BATCH_HEADER_PREFIX: Final = struct.Struct(">qiibIhiqq")
_MAGIC_PREFIX: Final = struct.Struct(">qiib")  # enough to read the magic of any format
_I64: Final = struct.Struct(">q")
_I32: Final = struct.Struct(">i")
_U32: Final = struct.Struct(">I")
_I16: Final = struct.Struct(">h")
_CONTROL_KEY: Final = struct.Struct(">hh")
_CONTROL_VALUE: Final = struct.Struct(">hi")

assert BATCH_HEADER.size == BATCH_HEADER_SIZE
assert BATCH_HEADER_PREFIX.size == MAX_TIMESTAMP_OFFSET + 8


@dataclass(slots=True)
class Record:
    """One record of a batch. `attributes` is the raw (unused) record attributes byte."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    attributes: int = 0


class HeaderFields(NamedTuple):
    """The 13 header fields of one batch, as `read_header` unpacks them (no check made)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int


def read_header(buf: Buffer, pos: int = 0) -> HeaderFields:
    """The header fields of the batch starting at `pos`, from its 61 header bytes alone (the
    records need not be there). Nothing is checked: the caller judges magic and batchLength."""
    return HeaderFields._make(BATCH_HEADER.unpack_from(buf, pos))


def batch_length_at(buf: Buffer, pos: int = 0) -> int:
    """The batchLength field of the batch at `pos` (its size is that + `LOG_OVERHEAD`)."""
    length: int = _I32.unpack_from(buf, pos + BATCH_LENGTH_OFFSET)[0]
    return length


class RecordBatch:
    """A zero-copy view of one v2 batch at `pos` in `buf`; the header is parsed eagerly.

    The constructor checks only what is needed to trust the framing (header present, magic 2,
    sane batchLength, the whole batch present). Call `crc_ok()` to check the contents.
    """

    __slots__ = (
        "_buf",
        "_pos",
        "attributes",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "batch_length",
        "crc",
        "last_offset_delta",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
        "records_count",
        "size",
        "timestamp_deltas",
    )

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    size: int
    # (lowest, highest) timestampDelta of the records, once `check_records` walked them.
    timestamp_deltas: tuple[int, int] | None

    def __init__(self, buf: Buffer, pos: int = 0) -> None:
        mv = buf if isinstance(buf, memoryview) else memoryview(buf)
        avail = len(mv) - pos
        if pos < 0 or avail < LEGACY_MAGIC_OFFSET + 1:
            raise RecordBatchError(
                f"record batch at byte {pos} is truncated: {max(avail, 0)} bytes, "
                f"need {LEGACY_MAGIC_OFFSET + 1} to read its magic"
            )
        _, length, _, magic = _MAGIC_PREFIX.unpack_from(mv, pos)
        if magic != MAGIC:
            if magic in (0, 1):
                raise RecordBatchError(
                    f"legacy message format (magic {magic}) is not supported "
                    f"(record batch at byte {pos})"
                )
            raise RecordBatchError(f"unknown record batch magic {magic} at byte {pos}")
        if length < MIN_BATCH_LENGTH:
            raise RecordBatchError(
                f"record batch at byte {pos} declares batchLength {length}, "
                f"less than the minimum {MIN_BATCH_LENGTH}"
            )
        if avail < length + LOG_OVERHEAD:
            raise RecordBatchError(
                f"record batch at byte {pos} is truncated: batchLength {length} needs "
                f"{length + LOG_OVERHEAD} bytes, only {avail} remain"
            )
        (
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.records_count,
        ) = BATCH_HEADER.unpack_from(mv, pos)
        self.size = length + LOG_OVERHEAD
        self._buf = mv
        self._pos = pos
        self.timestamp_deltas = None

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset_delta="
            f"{self.last_offset_delta}, records_count={self.records_count}, size={self.size}, "
            f"attributes={self.attributes:#x}, producer_id={self.producer_id}, "
            f"producer_epoch={self.producer_epoch}, base_sequence={self.base_sequence})"
        )

    @property
    def last_offset(self) -> int:
        return int(self.base_offset + self.last_offset_delta)

    @property
    def next_offset(self) -> int:
        return int(self.base_offset + self.last_offset_delta + 1)

    @property
    def compression(self) -> int:
        return int(self.attributes & ATTR_COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime."""
        return 1 if self.attributes & ATTR_TIMESTAMP_TYPE else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def last_sequence(self) -> int:
        """Sequence number of the last record, wrapping past int32 max to 0 as Kafka does."""
        base: int = self.base_sequence
        if base < 0:
            return -1
        delta: int = self.last_offset_delta
        if base > _INT32_MAX - delta:
            return delta - (_INT32_MAX - base) - 1
        return base + delta

    def buffer(self) -> memoryview:
        """The batch's own bytes (a slice of the underlying buffer, not a copy)."""
        return self._buf[self._pos : self._pos + self.size]

    def compute_crc(self) -> int:
        return int(crc32c.crc32c(self._buf[self._pos + ATTRIBUTES_OFFSET : self._pos + self.size]))

    def crc_ok(self) -> bool:
        return self.compute_crc() == self.crc

    def records(self) -> Iterator[Record]:
        """Iterate the records, decompressing first if needed. Lazy: nothing runs until used."""
        start = self._pos + BATCH_HEADER_SIZE
        end = self._pos + self.size
        codec = self.compression
        count = self.records_count
        if count < 0:
            raise RecordBatchError(
                f"record batch at byte {self._pos} declares a negative records count {count}"
            )
        if codec == 0:
            return _iter_records(self._buf, start, end, count, self._pos)
        return _iter_decompressed(self._buf[start:end], codec, count, self._pos)

    def check_records(self, limit: int, *, keys_required: bool = False) -> list[int]:
        """Check that the header agrees with the records present; returns the indexes of
        keyless records when `keys_required` (compacted topics), else [].

        The header must declare recordsCount >= 1 and lastOffsetDelta = recordsCount - 1
        (Kafka's LogValidator.validateBatch), and the records must be exactly recordsCount
        records that fill the batch; in a compressed batch the i-th must have offsetDelta i
        (Kafka rewrites such a batch; it is refused here). Every record must be well formed
        as Kafka's DefaultRecord.readFrom reads it: its fields fill its length exactly (else a
        consumer could not read it); keys, values and headers are only measured, not copied.
        Compressed records are read as a stream (`decompress_stream`): at most `limit`
        decompressed bytes, holding one chunk and the record being read.

        Sets `timestamp_deltas` to the lowest and highest timestampDelta of the records, so
        that the produce path bounds every record's timestamp (not the header's max) without
        a second walk.

        Raises InvalidRecordError for a disagreement or a malformed record,
        DecompressedTooLargeError past `limit`, RecordBatchError for corrupt compression."""
        count = self.records_count
        if count <= 0:
            raise InvalidRecordError(f"invalid reported count for record batch: {count}")
        if self.last_offset_delta != count - 1:
            raise InvalidRecordError(
                f"inconsistent batch offset range [0, {self.last_offset_delta}] and count of "
                f"records {count}")
        keyless: list[int] | None = [] if keys_required else None
        stamps = [_LONG_MAX, _LONG_MIN]
        start = self._pos + BATCH_HEADER_SIZE
        end = self._pos + self.size
        codec = self.compression
        walkers = _walkers
        if codec == 0:
            # The C walkers read the batch where it is. For the Python ones, indexing bytes is
            # much faster than indexing a memoryview: one transient copy of the records (a
            # memcpy) costs less than the per-record reads it speeds up. Offset deltas are not
            # checked here: Kafka stores an uncompressed batch as sent.
            records: Buffer = (self._buf[start:end] if walkers.in_place
                               else bytes(self._buf[start:end]))
            index, pos, _ = walkers.walk(records, 0, len(records), 0, count, keyless, False,
                                         stamps)
            pos += start
            if pos != end:
                raise InvalidRecordError(
                    f"record {index} of {count} is truncated or overruns the batch")
        else:
            index = 0
            pending: list[bytes] = []
            have = 0
            need = 1
            for piece in decompress_stream(codec, self._buf[start:end], limit):
                pending.append(piece)
                have += len(piece)
                if have < need:
                    continue
                data = pending[0] if len(pending) == 1 else b"".join(pending)
                index, pos, need = walkers.walk(data, 0, len(data), index, count, keyless,
                                                True, stamps)
                rest = data[pos:] if pos else data
                pending = [rest] if rest else []
                have = len(rest)
            if have:
                raise InvalidRecordError(
                    f"record {index} of {count} is truncated or overruns the batch")
        if index != count:
            raise InvalidRecordError(
                f"record batch declares {count} records but holds {index}")
        self.timestamp_deltas = (stamps[0], stamps[1])
        return keyless or []

    def control_type(self) -> int | None:
        """0 ABORT or 1 COMMIT for a control batch (other values pass through); else None."""
        if not self.is_control:
            return None
        for record in self.records():
            key = record.key
            if key is None or len(key) < _CONTROL_KEY.size:
                raise RecordBatchError(
                    f"control record in batch at byte {self._pos} has a key of "
                    f"{'null' if key is None else len(key)} bytes, need {_CONTROL_KEY.size}"
                )
            return int(_CONTROL_KEY.unpack_from(key)[1])
        return None

    def control_marker(self) -> tuple[int, int] | None:
        """(type, coordinatorEpoch) of a control batch's first record, the epoch -1 when the
        value is null or too short; None for a data batch or a control batch with no record."""
        ctype = self.control_type()
        if ctype is None:
            return None
        for record in self.records():
            value = record.value
            coordinator_epoch = -1
            if value is not None and len(value) >= _CONTROL_VALUE.size:
                coordinator_epoch = int(_CONTROL_VALUE.unpack_from(value)[1])
            return ctype, coordinator_epoch
        return None


def _iter_decompressed(block: memoryview, codec: int, count: int, pos: int) -> Iterator[Record]:
    data = decompress(codec, block)
    yield from _iter_records(data, 0, len(data), count, pos)


# What a record walker found wrong, as a code: the C walkers (odradek/wire/_speedups.c) return
# these same numbers, and `_walk_error` makes the one exception for each, whichever walker ran.
_WALK_BAD_LENGTH: Final = 1  # arg: the declared length, less than a record's 6-byte minimum
_WALK_TOO_MANY: Final = 2  # more records than the header's recordsCount
_WALK_BAD_VARINT: Final = 3  # arg: where the varint starts (over 5/10 bytes, or over 32 bits)
_WALK_OVERRUN: Final = 4  # a field runs past the record's length
_WALK_BAD_DELTA: Final = 5  # arg: the offsetDelta, which is not the record's index
_WALK_BAD_HEADER_COUNT: Final = 6  # arg: the negative headers count
_WALK_BAD_HEADER_KEY: Final = 7  # arg: the negative header key length
_WALK_SIZE_MISMATCH: Final = 8  # arg: the bytes the fields take, fewer than the length


def _walk_error(code: int, index: int, count: int, arg: int) -> RecordBatchError:
    """The exception for walker code `code` at record `index` of a batch of `count`; the
    messages follow Kafka's InvalidRecordException ones where it has one."""
    if code == _WALK_BAD_LENGTH:
        return InvalidRecordError(f"record {index} declares a length of {arg} bytes")
    if code == _WALK_TOO_MANY:
        return InvalidRecordError(f"record batch declares {count} records but holds more")
    if code == _WALK_BAD_VARINT:
        return _bad_varint(arg, 0)
    if code == _WALK_OVERRUN:
        return InvalidRecordError(f"record {index} has fields longer than the record")
    if code == _WALK_BAD_DELTA:
        return InvalidRecordError(
            f"record {index} has offsetDelta {arg}: the deltas must be 0..{count - 1}")
    if code == _WALK_BAD_HEADER_COUNT:
        return InvalidRecordError(f"record {index} has an invalid number of headers {arg}")
    if code == _WALK_BAD_HEADER_KEY:
        return InvalidRecordError(f"record {index} has a header key of negative size {arg}")
    if code == _WALK_SIZE_MISMATCH:
        return InvalidRecordError(
            f"record {index} has fields that take {arg} bytes, fewer than its length")
    raise AssertionError(f"unknown record walker code {code}")


def _walk_records(data: Buffer, pos: int, end: int, index: int, count: int,
                  keyless: list[int] | None, check_deltas: bool = True,
                  stamps: list[int] | None = None) -> tuple[int, int, int]:
    """Walk the whole records in data[pos:end], numbered from `index`; stop at the first one
    that is not complete. Returns (next index, where it starts, bytes needed from there to
    complete it; 1 when even its length is incomplete). Reads every field of each record, as
    Kafka's DefaultRecord.readFrom does: the fields must fill the record's length exactly, the
    headers count and header key lengths must not be negative, and there are at most `count`
    records; with `check_deltas` each offsetDelta must be its index. Appends the indexes of
    null-keyed records to `keyless` when given. `stamps`, when given, is [lowest, highest]
    timestampDelta so far (TIMESTAMP_SPAN_EMPTY before any record): widened by the deltas of
    the records walked, so that the produce path bounds every record's timestamp without a
    second walk. This loop is the produce path's per-record cost when the C walker is not
    built: varints are inlined with a one-byte fast path."""
    lo = hi = 0
    if stamps is not None:
        lo, hi = stamps
    while pos < end:
        rec_start = pos
        b = data[pos]
        if b < 0x80:
            pos += 1
        elif pos + 1 < end and (b2 := data[pos + 1]) < 0x80:
            b = (b & 0x7F) | (b2 << 7)
            pos += 2
        else:
            try:
                b, pos = _read_varint(data, pos, 5, 0)
            except IndexError:
                pos = end + 1
            if pos > end:
                if stamps is not None:
                    stamps[0], stamps[1] = lo, hi
                return index, rec_start, end - rec_start + 1
            b = (b << 1) ^ (b >> 31)  # back to zigzag, decoded below like the fast paths
        length = (b >> 1) ^ -(b & 1)
        rec_end = pos + length
        if length < 6:  # attributes, three varints and two lengths take at least 6 bytes
            raise _walk_error(_WALK_BAD_LENGTH, index, count, length)
        if rec_end > end:
            if stamps is not None:
                stamps[0], stamps[1] = lo, hi
            return index, rec_start, rec_end - rec_start
        if index >= count:
            raise _walk_error(_WALK_TOO_MANY, index, count, 0)
        # A field may run past rec_end (into the next record): judged after it is read, as
        # the C walker does; running past the data is an IndexError, an overrun too.
        try:
            pos += 1  # attributes
            b = data[pos]  # timestampDelta: a varlong of at most 10 bytes
            if b < 0x80:
                ts = (b >> 1) ^ -(b & 1)
                pos += 1
            elif (b2 := data[pos + 1]) < 0x80:  # deltas under 8 s: two bytes
                b = (b & 0x7F) | (b2 << 7)
                ts = (b >> 1) ^ -(b & 1)
                pos += 2
            else:
                field = pos
                raw = shift = 0
                while b & 0x80:
                    raw |= (b & 0x7F) << shift
                    shift += 7
                    pos += 1
                    if pos - field == 10:
                        raise _walk_error(_WALK_BAD_VARINT, index, count, field)
                    b = data[pos]
                raw = (raw | (b << shift)) & 0xFFFF_FFFF_FFFF_FFFF  # Java's long wraps
                ts = (raw >> 1) ^ -(raw & 1)
                pos += 1
            if ts < lo:
                lo = ts
            if ts > hi:
                hi = ts
            b = data[pos]
            if b < 0x80:
                delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                delta, pos = _read_varint(data, pos, 5, 0)
            if check_deltas and delta != index:
                raise _walk_error(_WALK_BAD_DELTA, index, count, delta)
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                n, pos = _read_varint(data, pos, 5, 0)
            if n < 0:
                if keyless is not None:
                    keyless.append(index)
            else:
                pos += n
                if pos > rec_end:
                    raise _walk_error(_WALK_OVERRUN, index, count, 0)
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                n, pos = _read_varint(data, pos, 5, 0)
            if n >= 0:
                pos += n
                if pos > rec_end:
                    raise _walk_error(_WALK_OVERRUN, index, count, 0)
            b = data[pos]
            if b < 0x80:
                headers = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                headers, pos = _read_varint(data, pos, 5, 0)
            if headers < 0:
                raise _walk_error(_WALK_BAD_HEADER_COUNT, index, count, headers)
            for _ in range(headers):
                if pos >= rec_end:  # bounds the loop before trusting the count
                    raise _walk_error(_WALK_OVERRUN, index, count, 0)
                n, pos = _read_varint(data, pos, 5, 0)
                if n < 0:
                    raise _walk_error(_WALK_BAD_HEADER_KEY, index, count, n)
                pos += n
                if pos > rec_end:
                    raise _walk_error(_WALK_OVERRUN, index, count, 0)
                n, pos = _read_varint(data, pos, 5, 0)
                if n >= 0:
                    pos += n
                    if pos > rec_end:
                        raise _walk_error(_WALK_OVERRUN, index, count, 0)
        except IndexError:  # a varint running past the end of the data
            raise _walk_error(_WALK_OVERRUN, index, count, 0) from None
        if pos > rec_end:
            raise _walk_error(_WALK_OVERRUN, index, count, 0)
        if pos != rec_end:
            raise _walk_error(_WALK_SIZE_MISMATCH, index, count, pos - rec_end + length)
        pos = rec_end
        index += 1
    if stamps is not None:
        stamps[0], stamps[1] = lo, hi
    return index, pos, 1


def _walk_records_c(data: Buffer, pos: int, end: int, index: int, count: int,
                    keyless: list[int] | None, check_deltas: bool = True,
                    stamps: list[int] | None = None) -> tuple[int, int, int]:
    """`_walk_records` in C: the same results, exceptions, `keyless` and `stamps` (for
    end = len(data))."""
    index, pos, need, code, arg = _speedups.walk_records(data, pos, end, index, count, keyless,
                                                         check_deltas, stamps)
    if code:
        raise _walk_error(code, index, count, arg)
    return index, pos, need


class _WalkFn(Protocol):
    def __call__(self, data: Buffer, pos: int, end: int, index: int, count: int,
                 keyless: list[int] | None, check_deltas: bool = True,
                 stamps: list[int] | None = None, /) -> tuple[int, int, int]: ...


class _Walkers(NamedTuple):
    """One implementation of the record walks `check_records` makes."""

    name: str  # "c" or "python"
    walk: _WalkFn  # as _walk_records
    in_place: bool  # reads a memoryview as fast as bytes (else check_records copies first)


_PY_WALKERS: Final = _Walkers("python", _walk_records, in_place=False)
_C_WALKERS: Final = (_Walkers("c", _walk_records_c, in_place=True)
                     if _speedups is not None else None)
# Chosen once, at import: the C walkers when they were built (setup.py builds them where there
# is a compiler) unless ODRADEK_NO_SPEEDUPS=1 asks for the Python ones (to compare them).
_walkers: _Walkers = (_C_WALKERS if _C_WALKERS is not None
                      and os.environ.get("ODRADEK_NO_SPEEDUPS") != "1" else _PY_WALKERS)


def record_walker() -> str:
    """Which record walkers `RecordBatch.check_records` uses: "c" or "python"."""
    return _walkers.name


def _bad_varint(where: int, batch_pos: int) -> RecordBatchError:
    return RecordBatchError(
        f"malformed varint at byte {where} of the records of the batch at byte {batch_pos}"
    )


def _iter_records(data: Buffer, pos: int, end: int, count: int, batch_pos: int) -> Iterator[Record]:
    """Parse `count` records from data[pos:end]. Bytes are read with IndexError as the bound
    check past `end` of `data`; every record must also end exactly where its length says."""
    for index in range(count):
        if pos >= end:
            raise RecordBatchError(
                f"record batch at byte {batch_pos} declares {count} records but its data "
                f"ends after {index}"
            )
        try:
            # The varint readers are inlined (one-byte fast path) for speed.
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                length, pos = _read_varint(data, pos, 5, batch_pos)
            rec_end = pos + length
            if length < 0 or rec_end > end:
                raise RecordBatchError(
                    f"record {index} of the batch at byte {batch_pos} declares {length} "
                    f"bytes, {end - pos} remain"
                )
            attributes = data[pos]
            pos += 1
            b = data[pos]
            if b < 0x80:
                timestamp_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                timestamp_delta, pos = _read_varint(data, pos, 10, batch_pos)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = _read_varint(data, pos, 5, batch_pos)

            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                n, pos = _read_varint(data, pos, 5, batch_pos)
            key: bytes | None = None
            if n >= 0:
                if pos + n > rec_end:
                    raise _overrun("key", index, batch_pos)
                key = bytes(data[pos : pos + n])
                pos += n

            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                n, pos = _read_varint(data, pos, 5, batch_pos)
            value: bytes | None = None
            if n >= 0:
                if pos + n > rec_end:
                    raise _overrun("value", index, batch_pos)
                value = bytes(data[pos : pos + n])
                pos += n

            b = data[pos]
            if b < 0x80:
                header_count = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                header_count, pos = _read_varint(data, pos, 5, batch_pos)
            headers: list[tuple[str, bytes | None]] = []
            if header_count:
                # Each header needs at least 2 bytes: bound the loop before trusting the count.
                if header_count < 0 or header_count * 2 > rec_end - pos:
                    raise RecordBatchError(
                        f"record {index} of the batch at byte {batch_pos} declares "
                        f"{header_count} headers in {rec_end - pos} bytes"
                    )
                for _ in range(header_count):
                    n, pos = _read_varint(data, pos, 5, batch_pos)
                    if n < 0 or pos + n > rec_end:
                        raise RecordBatchError(
                            f"record {index} of the batch at byte {batch_pos} has a header key "
                            f"length {n} that does not fit the record"
                        )
                    # Kafka accepts any bytes and decodes them as Java does, replacing what
                    # is not UTF-8: so must a reader of what Odradek accepted.
                    hkey = str(data[pos : pos + n], "utf-8", "replace")
                    pos += n
                    n, pos = _read_varint(data, pos, 5, batch_pos)
                    hvalue: bytes | None = None
                    if n >= 0:
                        if pos + n > rec_end:
                            raise _overrun("header value", index, batch_pos)
                        hvalue = bytes(data[pos : pos + n])
                        pos += n
                    headers.append((hkey, hvalue))
        except IndexError:
            raise RecordBatchError(
                f"record {index} of the batch at byte {batch_pos} is truncated"
            ) from None
        if pos != rec_end:
            raise RecordBatchError(
                f"record {index} of the batch at byte {batch_pos} declares {length} bytes "
                f"but its fields take {length + pos - rec_end}"
            )
        yield Record(offset_delta, timestamp_delta, key, value, headers, attributes)
    if pos != end:
        raise RecordBatchError(
            f"record batch at byte {batch_pos} has {end - pos} bytes after its {count} "
            f"declared records"
        )


def _overrun(what: str, index: int, batch_pos: int) -> RecordBatchError:
    return RecordBatchError(
        f"record {index} of the batch at byte {batch_pos} has a {what} longer than the record"
    )


def _read_varint(data: Buffer, pos: int, max_bytes: int, batch_pos: int) -> tuple[int, int]:
    """Zigzag varint of at most `max_bytes` bytes (5: int32, 10: int64)."""
    start = pos
    result = 0
    shift = 0
    limit = pos + max_bytes
    while True:
        if pos >= limit:
            raise _bad_varint(start, batch_pos)
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    if result >> (32 if max_bytes == 5 else 64):
        # More significant bits than an int32/int64 holds.
        raise _bad_varint(start, batch_pos)
    return (result >> 1) ^ -(result & 1), pos


def _write_varint(out: bytearray, value: int) -> None:
    """Zigzag varint/varlong; callers keep `value` within int64."""
    v = (value << 1) ^ (value >> 63)
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _check_range(what: str, value: int, bits: int) -> None:
    bound = 1 << (bits - 1)
    if not -bound <= value < bound:
        raise ValueError(f"{what} {value} does not fit in int{bits}")


def _encode_records(
    records: Sequence[Record | tuple[bytes | None, bytes | None]],
) -> tuple[bytearray, int, int]:
    """Encoded records, the largest offset delta and the largest timestamp delta."""
    out = bytearray()
    body = bytearray()
    max_offset_delta = 0
    max_ts_delta = 0
    for index, item in enumerate(records):
        rec = item if isinstance(item, Record) else Record(index, 0, item[0], item[1], [])
        _check_range("offset delta", rec.offset_delta, 32)
        _check_range("timestamp delta", rec.timestamp_delta, 64)
        max_offset_delta = max(max_offset_delta, rec.offset_delta)
        max_ts_delta = max(max_ts_delta, rec.timestamp_delta)
        body.clear()
        body.append(rec.attributes & 0xFF)
        _write_varint(body, rec.timestamp_delta)
        _write_varint(body, rec.offset_delta)
        for blob in (rec.key, rec.value):
            if blob is None:
                body.append(0x01)  # zigzag(-1)
            else:
                _write_varint(body, len(blob))
                body += blob
        _write_varint(body, len(rec.headers))
        for hkey, hvalue in rec.headers:
            raw = hkey.encode()
            _write_varint(body, len(raw))
            body += raw
            if hvalue is None:
                body.append(0x01)
            else:
                _write_varint(body, len(hvalue))
                body += hvalue
        _write_varint(out, len(body))
        out += body
    return out, max_offset_delta, max_ts_delta


def _assemble(
    *,
    payload: Buffer,
    count: int,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
) -> bytes:
    size = BATCH_HEADER_SIZE + len(payload)
    out = bytearray(size)
    BATCH_HEADER.pack_into(
        out,
        0,
        base_offset,
        size - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC,
        0,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    out[BATCH_HEADER_SIZE:] = payload
    mv = memoryview(out)
    _U32.pack_into(out, CRC_OFFSET, crc32c.crc32c(mv[ATTRIBUTES_OFFSET:]))
    mv.release()
    return bytes(out)


def build_batch(
    records: Sequence[Record | tuple[bytes | None, bytes | None]],
    *,
    base_offset: int = 0,
    base_timestamp: int | None = None,
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    partition_leader_epoch: int = -1,
    timestamp_type: int = 0,
) -> bytes:
    """Encode one v2 batch. Plain `(key, value)` tuples get offset delta = their index and
    timestamp delta 0; `Record`s keep their deltas. `base_timestamp` defaults to now (ms)."""
    if base_timestamp is None:
        base_timestamp = int(time.time() * 1000)
    encoded, max_offset_delta, max_ts_delta = _encode_records(records)
    payload: Buffer = encoded if compression == 0 else compress(compression, encoded)
    attributes = compression & ATTR_COMPRESSION_MASK
    if timestamp_type:
        attributes |= ATTR_TIMESTAMP_TYPE
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    return _assemble(
        payload=payload,
        count=len(records),
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=attributes,
        last_offset_delta=max_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=base_timestamp + max_ts_delta,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )


def build_control_batch(
    *,
    commit: bool,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    base_offset: int = 0,
    timestamp_ms: int,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A transaction marker: a transactional control batch holding one COMMIT/ABORT record."""
    key = _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = _CONTROL_VALUE.pack(0, coordinator_epoch)
    encoded, _, _ = _encode_records([Record(0, 0, key, value, [])])
    return _assemble(
        payload=encoded,
        count=1,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=ATTR_TRANSACTIONAL | ATTR_CONTROL,
        last_offset_delta=0,
        base_timestamp=timestamp_ms,
        max_timestamp=timestamp_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
    )


def rewrite_batch(
    batch: RecordBatch,
    records: Sequence[Record],
    *,
    attributes: int,
    base_timestamp: int,
    max_timestamp: int,
) -> bytes:
    """A new batch in place of `batch` holding `records` (each keeps its offset and timestamp
    deltas), as the log cleaner writes one: baseOffset, partitionLeaderEpoch,
    lastOffsetDelta, producerId, producerEpoch and baseSequence are `batch`'s; attributes,
    baseTimestamp and maxTimestamp are the given ones; the records are compressed with the
    codec in `attributes` (no records and no codec: the 61-byte header alone); CRC-32C
    recomputed."""
    encoded, _, _ = _encode_records(records)
    codec = attributes & ATTR_COMPRESSION_MASK
    payload: Buffer = encoded if codec == 0 else compress(codec, encoded)
    return _assemble(
        payload=payload,
        count=len(records),
        base_offset=batch.base_offset,
        partition_leader_epoch=batch.partition_leader_epoch,
        attributes=attributes,
        last_offset_delta=batch.last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
    )


def recompress_batch(batch: RecordBatch, codec: int, *, level: int | None = None) -> bytes:
    """`batch` rebuilt with its records compressed by `codec` (at `level`; None: Kafka's
    default), as Kafka's broker rebuilds a produced batch whose codec differs from the topic's
    compression.type: baseOffset, partitionLeaderEpoch, producerId, producerEpoch,
    baseSequence and the transactional and timestamp-type bits are kept; the records keep
    key, value, headers and timestamp, and take consecutive offset deltas 0..n-1;
    baseTimestamp is the first record's timestamp, maxTimestamp the largest (for a
    LogAppendTime batch, the batch's own maxTimestamp); CRC-32C recomputed."""
    records = list(batch.records())
    log_append = bool(batch.attributes & ATTR_TIMESTAMP_TYPE)
    timestamps = [batch.base_timestamp + r.timestamp_delta for r in records]
    base_timestamp = timestamps[0] if timestamps else batch.base_timestamp
    rebuilt = [
        Record(i, ts - base_timestamp, r.key, r.value, r.headers, r.attributes)
        for i, (r, ts) in enumerate(zip(records, timestamps, strict=True))
    ]
    encoded, _, _ = _encode_records(rebuilt)
    payload: Buffer = encoded if codec == 0 else compress(codec, encoded, level)
    attributes = (batch.attributes & ~ATTR_COMPRESSION_MASK) | (codec & ATTR_COMPRESSION_MASK)
    max_timestamp = batch.max_timestamp if log_append or not timestamps else max(timestamps)
    return _assemble(
        payload=payload,
        count=len(rebuilt),
        base_offset=batch.base_offset,
        partition_leader_epoch=batch.partition_leader_epoch,
        attributes=attributes,
        last_offset_delta=max(len(rebuilt) - 1, 0),
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
    )


def iter_batches(buf: Buffer, *, allow_partial_tail: bool = False) -> Iterator[RecordBatch]:
    """Split a `records` field into batches. A partial batch at the end raises RecordBatchError,
    or ends the iteration when `allow_partial_tail` (fetch responses may cut the last batch)."""
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    end = len(mv)
    pos = 0
    while pos < end:
        avail = end - pos
        if avail >= LOG_OVERHEAD:
            length = _I32.unpack_from(mv, pos + BATCH_LENGTH_OFFSET)[0]
            if length < 0:
                raise RecordBatchError(
                    f"record batch at byte {pos} declares a negative batchLength {length}"
                )
            if avail >= LEGACY_MAGIC_OFFSET + 1 and mv[pos + LEGACY_MAGIC_OFFSET] != MAGIC:
                RecordBatch(mv, pos)  # raises the magic error
            complete = avail >= length + LOG_OVERHEAD
        else:
            complete = False
        if not complete:
            if allow_partial_tail:
                return
            RecordBatch(mv, pos)  # raises, naming what is missing
        batch = RecordBatch(mv, pos)
        yield batch
        pos += batch.size


def set_base_offset(buf: memoryview | bytearray, pos: int, base_offset: int) -> None:
    """Patch the base offset in place (outside the CRC: no re-checksum needed)."""
    _I64.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: memoryview | bytearray, pos: int, epoch: int) -> None:
    """Patch the partition leader epoch in place (outside the CRC)."""
    _I32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_max_timestamp(
    buf: memoryview | bytearray, pos: int, timestamp_type: int, max_timestamp: int
) -> None:
    """Rewrite the timestamp type and max timestamp in place and recompute the CRC (both
    fields are inside it), as Kafka does when a topic uses LogAppendTime."""
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    length = _I32.unpack_from(mv, pos + BATCH_LENGTH_OFFSET)[0]
    attributes = _I16.unpack_from(mv, pos + ATTRIBUTES_OFFSET)[0]
    if timestamp_type:
        attributes |= ATTR_TIMESTAMP_TYPE
    else:
        attributes &= ~ATTR_TIMESTAMP_TYPE
    _I16.pack_into(mv, pos + ATTRIBUTES_OFFSET, attributes)
    _I64.pack_into(mv, pos + MAX_TIMESTAMP_OFFSET, max_timestamp)
    crc = crc32c.crc32c(mv[pos + ATTRIBUTES_OFFSET : pos + length + LOG_OVERHEAD])
    _U32.pack_into(mv, pos + CRC_OFFSET, crc)


def set_max_timestamp_log_append_time(
    buf: memoryview | bytearray, pos: int, timestamp_ms: int
) -> None:
    """Mark the batch LogAppendTime with `timestamp_ms` as its max timestamp; re-CRCs."""
    set_max_timestamp(buf, pos, 1, timestamp_ms)
