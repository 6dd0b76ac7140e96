"""Helpers shared by the storage tests: batch builders, a crash simulator and an independent
checker of segment files that applies the checks Kafka's `kafka-dump-log` tool makes."""

from __future__ import annotations

import os
import struct
from pathlib import Path

from odradek.broker.storage.log import PartitionLog
from odradek.wire.records import RecordBatch, build_batch, iter_batches


def batch(
    values: list[bytes], *, timestamp: int = 1_000, deltas: list[int] | None = None
) -> bytearray:
    """A writable uncompressed batch; record i gets timestamp `timestamp + deltas[i]`."""
    from odradek.wire.records import Record

    if deltas is None:
        return bytearray(build_batch([(b"k", v) for v in values], base_timestamp=timestamp))
    records = [
        Record(i, d, b"k", v, []) for i, (v, d) in enumerate(zip(values, deltas, strict=True))
    ]
    return bytearray(build_batch(records, base_timestamp=timestamp))


def append(
    log: PartitionLog,
    values: list[bytes],
    *,
    timestamp: int = 1_000,
    now_ms: int = 1_000,
    epoch: int = 0,
) -> int:
    """Append one batch; returns its first offset."""
    info = log.append(
        memoryview(batch(values, timestamp=timestamp)), leader_epoch=epoch, now_ms=now_ms
    )
    return info.first_offset


def values_of(data: bytes) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record in whole batches `data`."""
    out: list[tuple[int, bytes | None]] = []
    for b in iter_batches(memoryview(data)):
        assert b.crc_ok()
        out.extend((b.base_offset + r.offset_delta, r.value) for r in b.records())
    return out


def batches_of(data: bytes) -> list[RecordBatch]:
    return list(iter_batches(memoryview(data)))


def abandon(log: PartitionLog) -> None:
    """Simulate a killed process: release the descriptors without writing anything more
    (no final time index entry, no fsync, no checkpoint)."""
    for segment in log.segments:
        segment.offset_index.close()
        segment.time_index.close()
        segment.txn_index.close()
        os.close(segment.fd)
        segment._fd = None


def read_index(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    assert len(data) % 8 == 0, f"{path} has {len(data)} bytes"
    return [struct.unpack_from(">II", data, i) for i in range(0, len(data), 8)]


def read_time_index(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    assert len(data) % 12 == 0, f"{path} has {len(data)} bytes"
    return [struct.unpack_from(">qI", data, i) for i in range(0, len(data), 12)]


def verify_segment_files(directory: Path, base_offset: int) -> None:
    """The checks of Kafka's DumpLogSegments (--verify-index-only) and more, from the raw
    files: every `.index` entry points at a batch whose last offset is the entry's offset;
    every `.timeindex` entry names a batch's last offset and that batch's max record
    timestamp, with strictly increasing timestamps; the `.log` is whole valid batches."""
    stem = f"{base_offset:020d}"
    log_bytes = (directory / f"{stem}.log").read_bytes()
    batches = list(iter_batches(memoryview(log_bytes)))
    assert sum(b.size for b in batches) == len(log_bytes)
    by_position: dict[int, RecordBatch] = {}
    by_last_offset: dict[int, RecordBatch] = {}
    position = 0
    for b in batches:
        assert b.crc_ok()
        by_position[position] = b
        by_last_offset[b.last_offset] = b
        position += b.size
    last = -1
    for rel, pos in read_index(directory / f"{stem}.index"):
        offset = base_offset + rel
        assert offset > last
        last = offset
        assert pos in by_position, f"index entry {offset}->{pos} is not a batch start"
        assert by_position[pos].last_offset == offset, "index offset mismatch (dump-log check)"
    previous_ts = -1
    for ts, rel in read_time_index(directory / f"{stem}.timeindex"):
        offset = base_offset + rel
        assert offset in by_last_offset, f"time index offset {offset} is not a batch's last offset"
        b = by_last_offset[offset]
        if b.timestamp_type == 1:  # LogAppendTime: every record carries the batch max
            record_max = b.max_timestamp
        else:
            record_max = max(b.base_timestamp + r.timestamp_delta for r in b.records())
        assert record_max == ts, "time index timestamp mismatch (dump-log check)"
        assert ts > previous_ts, "time index out of order (dump-log check)"
        previous_ts = ts
