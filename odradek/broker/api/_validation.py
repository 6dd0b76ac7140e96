"""The produce path's topic-config checks after `produce._validate` accepted a batch, as
Kafka's LogValidator applies them: the timestamp bounds and the topic's compression.type.

Both cost next to nothing in the common case: the record walk `produce._validate` makes anyway
(`RecordBatch.check_records`) leaves the lowest and highest timestampDelta of the batch's
records, so a batch whose records are all in bounds is judged by two comparisons (the records
are walked again only to name the bad ones); with `compression.type=producer` (the default) or
a codec equal to the batch's the batch is stored as it came.

- Timestamps (`check_timestamps`): CreateTime topics only (LogAppendTime topics overwrite the
  timestamps, so they are exempt). A record whose timestamp is more than
  `message.timestamp.before.max.ms` before the broker's clock or more than
  `message.timestamp.after.max.ms` after it is INVALID_TIMESTAMP; the partition answer lists
  every such record (record_errors) and nothing of the batch is written. Records without a
  timestamp (-1) pass, as in Kafka. Each record's own timestamp (baseTimestamp +
  timestampDelta) is judged, never the header's maxTimestamp, which a producer may get wrong:
  as Kafka's LogValidator, the header's maxTimestamp is then set to the records' largest
  timestamp (`corrected_max_timestamp`; the CRC is recomputed), so the time index and
  ListOffsets by time see the records' real timestamps. A batch its producer marked
  LogAppendTime (no Kafka client does) is refused on a LogAppendTime topic, and on a
  CreateTime one when it carries no timestamp, every record INVALID_TIMESTAMP ("Producer
  should not set timestamp type to LogAppendTime."); otherwise, on a CreateTime topic, its
  records' timestamp is its maxTimestamp and it is stored as a CreateTime batch, as Kafka.
- Recompression (`recompress`): a codec other than `producer` that differs from the batch's
  rebuilds the batch with it (`records.recompress_batch`: same base offset and producer
  fields, also for idempotent and transactional batches, consecutive offset deltas), at the
  topic's `compression.<codec>.level`.
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.broker.storage.config import LONG_MAX, LogSettings
from odradek.wire import ErrorCode
from odradek.wire.compression import CompressionType
from odradek.wire.records import RecordBatch, recompress_batch

CODECS: dict[str, CompressionType] = {
    "uncompressed": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}

NO_TIMESTAMP = -1
INVALID_TIMESTAMP_MESSAGE = "One or more records have been rejected due to invalid timestamp"


@dataclass(frozen=True, slots=True)
class RecordErrors:
    """A rejected batch: the partition's error, its message and (index, message) per record."""

    code: ErrorCode
    message: str
    records: list[tuple[int, str]]


def check_timestamps(batch: RecordBatch, config: LogSettings, now_ms: int) -> RecordErrors | None:
    """The records of `batch` outside the topic's timestamp bounds around `now_ms`, or None."""
    if batch.timestamp_type == 1 and (config.log_append_time
                                      or batch.max_timestamp == NO_TIMESTAMP):
        return _log_append_time_from_producer(batch)
    before, after = config.timestamp_before_max_ms, config.timestamp_after_max_ms
    if config.log_append_time or (before == LONG_MAX and after == LONG_MAX):
        return None
    lowest, highest = now_ms - before, now_ms + after
    # The span of the records' own timestamps, from the walk check_records made: when it lies
    # in bounds every record does, and nothing is read again (nor decompressed).
    deltas = batch.timestamp_deltas
    if batch.timestamp_type == 0 and deltas is not None and (
            lowest <= batch.base_timestamp + deltas[0]
            and batch.base_timestamp + deltas[1] <= highest):
        return None
    # A LogAppendTime batch's records all carry its max timestamp (Kafka's record.timestamp()).
    if batch.timestamp_type == 1 and (
        lowest <= batch.max_timestamp <= highest or batch.max_timestamp == NO_TIMESTAMP
    ):
        return None
    bad: list[tuple[int, str]] = []
    for index, record in enumerate(batch.records()):
        if batch.timestamp_type == 1:
            timestamp = batch.max_timestamp
        else:
            timestamp = batch.base_timestamp + record.timestamp_delta
        if timestamp == NO_TIMESTAMP or lowest <= timestamp <= highest:
            continue
        offset = batch.base_offset + record.offset_delta
        bad.append((index, f"Timestamp {timestamp} of message with offset {offset} is out of "
                           f"range. The timestamp should be within [{lowest}, {highest}]"))
    if not bad:
        return None
    return RecordErrors(ErrorCode.INVALID_TIMESTAMP, INVALID_TIMESTAMP_MESSAGE, bad)


def _log_append_time_from_producer(batch: RecordBatch) -> RecordErrors:
    """Kafka's validateTimestamp: a batch marked LogAppendTime by its producer is refused on a
    LogAppendTime topic, and on a CreateTime one when its records carry no timestamp (their
    timestamp is the batch's maxTimestamp, -1). Every record is named, as Kafka's
    DefaultRecord.toString shows it."""
    bad = []
    for index, record in enumerate(batch.records()):
        key = 0 if record.key is None else len(record.key)
        value = 0 if record.value is None else len(record.value)
        bad.append((index, "Invalid timestamp type in message DefaultRecord(offset="
                           f"{batch.base_offset + record.offset_delta}, timestamp="
                           f"{batch.max_timestamp}, key={key} bytes, value={value} bytes). "
                           "Producer should not set timestamp type to LogAppendTime."))
    return RecordErrors(ErrorCode.INVALID_TIMESTAMP, INVALID_TIMESTAMP_MESSAGE, bad)


def corrected_max_timestamp(batch: RecordBatch) -> int | None:
    """The maxTimestamp a batch appended to a CreateTime topic must carry when its header's
    differs from its records' largest timestamp (-1 when none is larger: Kafka's NO_TIMESTAMP
    start), else None; the batch is then marked CreateTime. Kafka's LogValidator sets it
    (setMaxTimestamp with the topic's timestamp type) on every batch it appends; here the
    records' span is known from `check_records`, so a batch that tells the truth costs one
    comparison. A batch its producer marked LogAppendTime (its records' timestamp is its
    maxTimestamp) becomes a CreateTime batch with that maxTimestamp, as on Kafka."""
    if batch.timestamp_type == 1:
        return batch.max_timestamp
    deltas = batch.timestamp_deltas
    if deltas is None:
        return None
    largest = max(NO_TIMESTAMP, batch.base_timestamp + deltas[1])
    return None if largest == batch.max_timestamp else largest


def target_codec(batch: RecordBatch, config: LogSettings) -> CompressionType | None:
    """The codec `batch` must be stored with when it differs from the batch's, else None."""
    wanted = config.compression_type
    if wanted == "producer":
        return None
    codec = CODECS[wanted]
    return None if codec == batch.compression else codec


def recompress(batch: RecordBatch, config: LogSettings) -> bytearray | None:
    """`batch` rebuilt with the topic's codec, or None when it is stored as it came."""
    codec = target_codec(batch, config)
    if codec is None:
        return None
    level = config.compression_level.get(codec.name.lower())
    return bytearray(recompress_batch(batch, codec, level=level))
