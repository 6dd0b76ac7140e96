"""Produce handler: per-partition errors in Kafka's order, offsets assigned on success."""

from __future__ import annotations

import struct
import time
import tracemalloc
import zlib
from pathlib import Path

import crc32c
import pytest
import zstandard
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.produce import ProduceRequest
from odradek.wire.records import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    CRC_OFFSET,
    Record,
    build_batch,
)


def _produce(broker: Broker, topic: str, records: bytes, *, acks: int = -1, version: int = 9
             ) -> ProduceRequest:
    request = ProduceRequest(acks=acks, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=records)])])
    response = call(broker, ApiKey.PRODUCE, version, request)
    return response.responses[0].partition_responses[0]  # type: ignore[no-any-return]


def test_offsets_are_assigned_in_order(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    first = _produce(broker, "t", build_batch([(b"k", b"a"), (b"k", b"b")]))
    second = _produce(broker, "t", build_batch([(b"k", b"c")]))
    assert (first.error_code, first.base_offset) == (ErrorCode.NONE, 0)
    assert (second.error_code, second.base_offset) == (ErrorCode.NONE, 2)
    assert broker.partitions.log("t", 0).log_end_offset == 3  # type: ignore[union-attr]


def test_size_is_checked_before_keys_on_a_compacted_topic(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("c", 1, {"cleanup.policy": "compact", "max.message.bytes": "200"})
    big_keyless = _produce(broker, "c", build_batch([(None, b"x" * 500)]))
    small_keyless = _produce(broker, "c", build_batch([(None, b"x")]))
    assert big_keyless.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert small_keyless.error_code == ErrorCode.INVALID_RECORD
    assert [e.batch_index for e in small_keyless.record_errors] == [0]


def test_invalid_batches_get_partition_errors_and_nothing_is_stored(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    good = build_batch([(b"k", b"v")])
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF  # inside the CRC-covered bytes
    legacy = bytearray(good)
    legacy[16] = 1  # magic 1
    assert _produce(broker, "t", bytes(corrupt)).error_code == ErrorCode.CORRUPT_MESSAGE
    assert _produce(broker, "t", bytes(legacy)).error_code == ErrorCode.INVALID_RECORD
    assert _produce(broker, "t", good + good).error_code == ErrorCode.INVALID_RECORD
    assert _produce(broker, "t", good, acks=2).error_code == ErrorCode.INVALID_REQUIRED_ACKS
    assert _produce(broker, "missing", good).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert broker.partitions.log("t", 0).log_end_offset == 0  # type: ignore[union-attr]


# -- issue #10: the batch header must agree with the records present ------------------------

def _lie(batch: bytes, *, records_count: int | None = None,
         last_offset_delta: int | None = None) -> bytes:
    """`batch` with header fields rewritten and its CRC recomputed (a well-formed liar)."""
    out = bytearray(batch)
    if records_count is not None:
        struct.pack_into(">i", out, 57, records_count)
    if last_offset_delta is not None:
        struct.pack_into(">i", out, 23, last_offset_delta)
    struct.pack_into(">I", out, CRC_OFFSET, crc32c.crc32c(bytes(out[ATTRIBUTES_OFFSET:])))
    return bytes(out)


@pytest.mark.parametrize(("count", "delta"), [
    (2**31 - 1, 2**31 - 1),  # the torture run's: the log end jumped by 2**31
    (2**31 - 1, 2**31 - 2),  # header self-consistent, one record present
    (-2**31, 0), (2**31 - 1, 0), (0, 0), (0, -1), (2, 1),
])
def test_a_header_that_lies_about_its_records_is_invalid_record(
        tmp_path: Path, count: int, delta: int) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    for codec in (0, 4):
        liar = _lie(build_batch([(b"k", b"v")], compression=codec), records_count=count,
                    last_offset_delta=delta)
        assert _produce(broker, "t", liar).error_code == ErrorCode.INVALID_RECORD
    assert broker.partitions.log("t", 0).log_end_offset == 0  # type: ignore[union-attr]


def test_fewer_or_more_records_than_declared_is_invalid_record(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    three = [(b"k", b"a"), (b"k", b"b"), (b"k", b"c")]
    for codec in (0, 1, 2, 3, 4):
        more = _lie(build_batch(three, compression=codec), records_count=2, last_offset_delta=1)
        fewer = _lie(build_batch(three, compression=codec), records_count=4, last_offset_delta=3)
        assert _produce(broker, "t", more).error_code == ErrorCode.INVALID_RECORD
        assert _produce(broker, "t", fewer).error_code == ErrorCode.INVALID_RECORD
        ok = _produce(broker, "t", build_batch(three, compression=codec))
        assert ok.error_code == ErrorCode.NONE
    assert broker.partitions.log("t", 0).log_end_offset == 15  # type: ignore[union-attr]


def _padded_first_record(batch: bytes, pad: int) -> bytes:
    """`batch` (uncompressed, first record shorter than 64 bytes) with `pad` zero bytes added
    inside its first record: the record's length covers them, its fields do not (the fuzzer's
    case: a record declaring 63 bytes whose fields take 55, which a length-only walk took)."""
    out = bytearray(batch)
    length = out[BATCH_HEADER_SIZE] >> 1  # a one-byte zigzag varint
    assert length + pad < 64
    out[BATCH_HEADER_SIZE] = (length + pad) << 1
    at = BATCH_HEADER_SIZE + 1 + length
    out[at:at] = bytes(pad)
    struct.pack_into(">i", out, 8, len(out) - 12)
    return _lie(bytes(out))


@pytest.mark.parametrize("config", [{}, {"cleanup.policy": "compact"}])
def test_a_record_whose_fields_do_not_fill_its_length_is_invalid_record(
        tmp_path: Path, config: dict[str, str]) -> None:
    """Kafka's DefaultRecord.readFrom refuses it ("Invalid record size"); stored, it would be
    a record no consumer can read."""
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, config)
    for records in ([(b"k", b"v")], [(b"k", b"v"), (b"k2", b"v2")]):
        padded = _padded_first_record(build_batch(records), 8)
        assert _produce(broker, "t", padded).error_code == ErrorCode.INVALID_RECORD
    headers = bytearray(build_batch([Record(0, 0, b"k", b"v", [("h", b"x")])]))
    at = headers.rindex(b"\x02\x02h")  # headersCount 1, then the key's length
    headers[at] = 0x01  # headersCount -1
    assert _produce(broker, "t", _lie(bytes(headers))).error_code == ErrorCode.INVALID_RECORD
    assert broker.partitions.log("t", 0).log_end_offset == 0  # type: ignore[union-attr]
    ok = _produce(broker, "t", build_batch([Record(0, 0, b"k", b"v", [("h", b"x")])]))
    assert ok.error_code == ErrorCode.NONE


@pytest.mark.parametrize("deltas", [[0, 0, 1], [1, 2, 3], [0, 2, 1], [0, 1, 5]])
def test_offset_deltas_other_than_0_to_n_minus_1(tmp_path: Path, deltas: list[int]) -> None:
    """Kafka stores an uncompressed batch as sent and rewrites a compressed one; Odradek
    stores the uncompressed one too and refuses the compressed one (it does not rewrite)."""
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    records = [Record(d, 0, b"k", b"v") for d in deltas]
    batch = _lie(build_batch(records, compression=1), last_offset_delta=len(deltas) - 1)
    assert _produce(broker, "t", batch).error_code == ErrorCode.INVALID_RECORD
    assert broker.partitions.log("t", 0).log_end_offset == 0  # type: ignore[union-attr]
    batch = _lie(build_batch(records, compression=0), last_offset_delta=len(deltas) - 1)
    assert _produce(broker, "t", batch).error_code == ErrorCode.NONE
    assert broker.partitions.log("t", 0).log_end_offset == 3  # type: ignore[union-attr]


def _bomb_batch(codec: int, size: int) -> bytes:
    """A batch whose records block is `size` zero bytes, compressed with `codec`."""
    header = bytearray(build_batch([(b"k", b"v")]))[:BATCH_HEADER_SIZE]
    if codec == 1:
        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        block = b"".join(z.compress(bytes(1 << 20)) for _ in range(size >> 20)) + z.flush()
    else:
        c = zstandard.ZstdCompressor(level=3).compressobj()
        block = b"".join(c.compress(bytes(1 << 20)) for _ in range(size >> 20)) + c.flush()
    struct.pack_into(">h", header, ATTRIBUTES_OFFSET, codec)
    struct.pack_into(">i", header, 8, BATCH_HEADER_SIZE + len(block) - 12)
    struct.pack_into(">i", header, 57, 1)
    return _lie(bytes(header) + block)


@pytest.mark.parametrize("codec", [1, 4])
def test_a_compression_bomb_on_a_compacted_topic_is_refused_quickly_in_bounded_memory(
        tmp_path: Path, codec: int) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("c", 1, {"cleanup.policy": "compact"})
    bomb = _bomb_batch(codec, 1 << 30)  # 1 GiB of zeros: 1 MiB as gzip, 32 KiB as zstd
    tracemalloc.start()
    try:
        started = time.monotonic()
        resp = _produce(broker, "c", bomb)
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Zeros are no record (a record of length 0): refused at the first chunk.
    assert resp.error_code == ErrorCode.INVALID_RECORD
    assert peak < 8 * len(bomb) + (4 << 20), peak
    assert elapsed < 5, elapsed


def test_records_decompressing_past_the_bound_are_message_too_large(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("c", 1, {"cleanup.policy": "compact",
                                         "max.message.bytes": "100000"})
    # Valid records, each 100 KB of zeros: 20 of them decompress past 16 x max.message.bytes.
    records = [(b"k%d" % i, bytes(100_000)) for i in range(20)]
    tracemalloc.start()
    try:
        resp = _produce(broker, "c", build_batch(records, compression=4))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert resp.error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert peak < 8 << 20, peak
    fits = _produce(broker, "c", build_batch(records[:10], compression=4))
    assert fits.error_code == ErrorCode.NONE


def test_zstd_needs_produce_v7(tmp_path: Path) -> None:
    """KIP-110: Kafka refuses zstd batches in Produce v3-v6 (the fuzzer's F1 table)."""
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    batch = build_batch([(b"k", b"v")], compression=4)
    assert _produce(broker, "t", batch, version=6).error_code == (
        ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)
    assert _produce(broker, "t", batch, version=7).error_code == ErrorCode.NONE
