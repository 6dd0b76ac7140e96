"""The bytes of a batch the cleaner keeps only part of (v2 layout in `odradek.wire.records`,
whose `rewrite_batch` assembles them).

- A batch that loses nothing and needs no horizon is copied unchanged (`algorithm.py`).
- A rebuilt batch (`rebuild_batch`): the original baseOffset, partitionLeaderEpoch,
  producerId, producerEpoch, baseSequence, lastOffsetDelta (so the last sequence and the
  offset range stay) and codec (recompressed with it); the survivors keep their offsetDelta,
  so offsets stay sparse. Attributes keep compression, timestamp type, transactional and
  control bits; bit 6 (delete horizon, KIP-534) is set when the batch carries tombstones or
  a removable marker: then baseTimestamp = the horizon (now + `delete.retention.ms` at the
  first clean that saw them; kept on later rewrites), else the first survivor's timestamp.
  Record timestamp deltas are rebased so every record keeps its timestamp; maxTimestamp is
  the survivors' largest (the original for LogAppendTime). CRC-32C recomputed.
- An emptied batch (`empty_batch`, Kafka's writeEmptyHeader): the 61-byte header alone,
  recordsCount 0, no compression, baseTimestamp -1, the original maxTimestamp, offsets,
  producer fields and timestamp-type, transactional and control flags.
"""

from __future__ import annotations

from collections.abc import Sequence

from odradek.wire.records import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    Record,
    RecordBatch,
    rewrite_batch,
)

NO_TIMESTAMP = -1


def rebuild_batch(
    batch: RecordBatch, retained: Sequence[Record], horizon: int
) -> tuple[bytes, int]:
    """A batch like `batch` holding only `retained` (see the module docstring); `horizon` -1
    means no delete horizon. Returns its bytes and max timestamp."""
    log_append_time = batch.timestamp_type == 1
    stamps = [
        batch.max_timestamp if log_append_time else batch.base_timestamp + r.timestamp_delta
        for r in retained
    ]
    base_ts = horizon if horizon >= 0 else stamps[0]
    records = [
        Record(r.offset_delta, ts - base_ts, r.key, r.value, r.headers, r.attributes)
        for r, ts in zip(retained, stamps, strict=True)
    ]
    max_ts = batch.max_timestamp if log_append_time else max(stamps)
    attributes = batch.attributes & ~ATTR_DELETE_HORIZON
    if horizon >= 0:
        attributes |= ATTR_DELETE_HORIZON
    raw = rewrite_batch(
        batch, records, attributes=attributes, base_timestamp=base_ts, max_timestamp=max_ts
    )
    return raw, max_ts


def empty_batch(batch: RecordBatch) -> bytes:
    """The header of `batch` alone, with no records (Kafka's writeEmptyHeader)."""
    attributes = batch.attributes & ~(ATTR_COMPRESSION_MASK | ATTR_DELETE_HORIZON)
    attributes &= ATTR_TIMESTAMP_TYPE | ATTR_TRANSACTIONAL | ATTR_CONTROL
    return rewrite_batch(
        batch,
        (),
        attributes=attributes,
        base_timestamp=NO_TIMESTAMP,
        max_timestamp=batch.max_timestamp,
    )
