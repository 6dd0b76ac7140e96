"""Produce applies the topic configs Kafka's LogValidator applies (issue #10, finding 7):
compression.type (recompression at the topic's level) and the timestamp bounds."""

from __future__ import annotations

from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.broker.cluster import ClusterError
from odradek.wire import ApiKey, ErrorCode
from odradek.wire import records as records_module
from odradek.wire._generated.produce import ProduceRequest, ProduceResponse
from odradek.wire.compression import CompressionType, decompress
from odradek.wire.records import (
    BATCH_HEADER_SIZE,
    Record,
    RecordBatch,
    build_batch,
    iter_batches,
    set_max_timestamp,
)

HOUR = 3_600_000


def _produce(broker: Broker, topic: str, records: bytes, version: int = 9
             ) -> ProduceResponse.PartitionProduceResponse:
    request = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=records)])])
    response = call(broker, ApiKey.PRODUCE, version, request)
    return response.responses[0].partition_responses[0]  # type: ignore[no-any-return]


def _stored(broker: Broker, topic: str) -> list[RecordBatch]:
    plog = broker.partitions.log(topic, 0)
    assert plog is not None
    return list(iter_batches(plog.read(0, 1 << 20)))


def _records(n: int) -> list[Record]:
    return [Record(i, 10 * i, b"k%d" % i, b"value-%d" % i * 20, [("h", b"x")]) for i in range(n)]


# ----------------------------------------------------------------------------- compression.type

CODEC_NAMES = ["uncompressed", "gzip", "snappy", "lz4", "zstd"]


@pytest.mark.parametrize("target", CODEC_NAMES)
@pytest.mark.parametrize("source", [CompressionType.NONE, CompressionType.GZIP,
                                    CompressionType.ZSTD])
def test_batches_are_recompressed_to_the_topic_codec(tmp_path: Path, target: str,
                                                     source: CompressionType) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {"compression.type": target})
    assert _produce(broker, "t", build_batch([(b"a", b"b")])).error_code == ErrorCode.NONE
    sent = build_batch(_records(5), base_timestamp=1_000, compression=source,
                       producer_id=7, producer_epoch=2, base_sequence=0)
    response = _produce(broker, "t", sent)
    assert (response.error_code, response.base_offset) == (ErrorCode.NONE, 1)
    first, stored = _stored(broker, "t")
    wanted = CompressionType[target.upper()] if target != "uncompressed" else CompressionType.NONE
    assert first.compression == wanted
    assert stored.compression == wanted
    assert stored.crc_ok()
    assert (stored.base_offset, stored.last_offset) == (1, 5)
    assert (stored.producer_id, stored.producer_epoch, stored.base_sequence) == (7, 2, 0)
    assert (stored.base_timestamp, stored.max_timestamp) == (1_000, 1_040)
    original = RecordBatch(sent)
    assert list(stored.records()) == list(original.records())
    # the payload really is in the target codec
    payload = stored.buffer()[BATCH_HEADER_SIZE:]
    assert decompress(wanted, payload) == decompress(source, original.buffer()[BATCH_HEADER_SIZE:])


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP,
                                   CompressionType.SNAPPY, CompressionType.LZ4,
                                   CompressionType.ZSTD])
def test_producer_keeps_the_batch_byte_for_byte(tmp_path: Path, codec: CompressionType) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("p", 1, {})  # compression.type=producer, the default
    name = "uncompressed" if codec == CompressionType.NONE else codec.name.lower()
    broker.cluster.create_topic("same", 1, {"compression.type": name})
    sent = build_batch(_records(3), base_timestamp=5, compression=codec, partition_leader_epoch=0)
    for topic in ("p", "same"):
        assert _produce(broker, topic, sent).error_code == ErrorCode.NONE
        (stored,) = _stored(broker, topic)
        assert bytes(stored.buffer()) == sent


def test_transactional_batches_keep_their_producer_fields(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {"compression.type": "lz4"})
    sent = build_batch(_records(2), producer_id=3, producer_epoch=0, base_sequence=0,
                       is_transactional=True)
    from odradek.broker.api import _validation
    batch = RecordBatch(sent)
    plog = broker.partitions.log("t", 0)
    assert plog is not None
    rebuilt = RecordBatch(_validation.recompress(batch, plog.config) or b"")
    assert rebuilt.is_transactional and rebuilt.compression == CompressionType.LZ4
    assert (rebuilt.producer_id, rebuilt.producer_epoch, rebuilt.base_sequence) == (3, 0, 0)
    assert rebuilt.crc_ok()


@pytest.mark.parametrize(("codec", "fast", "small"), [("gzip", 1, 9), ("lz4", 1, 17),
                                                     ("zstd", 1, 19)])
def test_the_topic_compression_level_is_used(tmp_path: Path, codec: str, fast: int,
                                             small: int) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("fast", 1, {"compression.type": codec,
                                            f"compression.{codec}.level": str(fast)})
    broker.cluster.create_topic("small", 1, {"compression.type": codec,
                                             f"compression.{codec}.level": str(small)})
    text = b" ".join(b"record %d of a long and repetitive text" % i for i in range(2000))
    sent = build_batch([(b"k", text)])
    sizes = {}
    for topic in ("fast", "small"):
        assert _produce(broker, topic, sent).error_code == ErrorCode.NONE
        (stored,) = _stored(broker, topic)
        sizes[topic] = stored.size
    assert sizes["small"] < sizes["fast"]


def test_a_recompressed_batch_over_max_message_bytes(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {"compression.type": "uncompressed",
                                         "max.message.bytes": "1000"})
    sent = build_batch([(b"k", b"x" * 5000)], compression=CompressionType.ZSTD)
    assert len(sent) < 1000
    assert _produce(broker, "t", sent).error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert _stored(broker, "t") == []


# ----------------------------------------------------------------------------- timestamps


def test_timestamps_before_the_bound_are_invalid(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {"message.timestamp.before.max.ms": str(HOUR)})
    now = broker.now_ms()
    records = [Record(0, 0, b"k", b"old", []), Record(1, 2 * HOUR, b"k", b"ok", []),
               Record(2, 0, b"k", b"old too", [])]
    response = _produce(broker, "t", build_batch(records, base_timestamp=now - 2 * HOUR))
    assert response.error_code == ErrorCode.INVALID_TIMESTAMP
    assert response.error_message == (
        "One or more records have been rejected due to invalid timestamp")
    assert [e.batch_index for e in response.record_errors] == [0, 2]
    message = response.record_errors[0].batch_index_error_message
    assert message.startswith(f"Timestamp {now - 2 * HOUR} of message with offset 0 is out of "
                              "range. The timestamp should be within [")
    assert _stored(broker, "t") == []
    fine = _produce(broker, "t", build_batch([(b"k", b"v")], base_timestamp=now - HOUR // 2))
    assert fine.error_code == ErrorCode.NONE


def test_timestamps_after_the_bound_are_invalid(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {"message.timestamp.after.max.ms": "1000"})
    now = broker.now_ms()
    response = _produce(broker, "t", build_batch([(b"k", b"v")], base_timestamp=now + HOUR,
                                                 compression=CompressionType.GZIP))
    assert response.error_code == ErrorCode.INVALID_TIMESTAMP
    assert [e.batch_index for e in response.record_errors] == [0]
    # far in the past is fine: only the after bound is set
    assert _produce(broker, "t", build_batch([(b"k", b"v")], base_timestamp=1)).error_code == 0


def test_the_default_after_bound_is_one_hour(tmp_path: Path) -> None:
    # KIP-1030 (Kafka 4.0): log.message.timestamp.after.max.ms defaults to one hour.
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    now = broker.now_ms()
    late = _produce(broker, "t", build_batch([(b"k", b"v")], base_timestamp=now + 2 * HOUR))
    assert late.error_code == ErrorCode.INVALID_TIMESTAMP
    ok = _produce(broker, "t", build_batch([(b"k", b"v")], base_timestamp=now + HOUR // 2))
    assert ok.error_code == ErrorCode.NONE
    old = _produce(broker, "t", build_batch([(b"k", b"v")], base_timestamp=1))
    assert old.error_code == ErrorCode.NONE  # before.max.ms stays unbounded


def test_the_broker_setting_bounds_every_topic(tmp_path: Path) -> None:
    broker = open_broker(tmp_path, **{"log.message.timestamp.before.max.ms": "3600000"})
    broker.cluster.create_topic("t", 1, {})
    now = broker.now_ms()
    early = _produce(broker, "t", build_batch([(b"k", b"v")], base_timestamp=now - 2 * HOUR))
    assert early.error_code == ErrorCode.INVALID_TIMESTAMP


def test_the_removed_difference_setting_is_unknown(tmp_path: Path) -> None:
    # Kafka 4.0 removed message.timestamp.difference.max.ms.
    broker = open_broker(tmp_path)
    with pytest.raises(ClusterError, match="Unknown topic config name"):
        broker.cluster.create_topic("t", 1, {"message.timestamp.difference.max.ms": "1000"})


def test_log_append_time_topics_are_exempt(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {"message.timestamp.type": "LogAppendTime",
                                         "message.timestamp.before.max.ms": "1000",
                                         "message.timestamp.after.max.ms": "1000"})
    response = _produce(broker, "t", build_batch([(b"k", b"v")], base_timestamp=1))
    assert response.error_code == ErrorCode.NONE


@pytest.mark.parametrize("configs", [{}, {"message.timestamp.after.max.ms": str(2**63 - 1)}])
def test_default_or_unbounded_timestamps_read_no_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, configs: dict[str, str]) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, configs)

    def no_records(self: RecordBatch) -> None:
        raise AssertionError("records read although no feature needs them")

    monkeypatch.setattr(RecordBatch, "records", no_records)
    assert _produce(broker, "t", build_batch([(b"k", b"v")], base_timestamp=1)).error_code == 0


def _lying_batch(records: list[Record], base_timestamp: int, max_timestamp: int,
                 compression: int = CompressionType.NONE) -> bytes:
    """A batch whose header claims `max_timestamp` (CRC recomputed, so it is well formed)."""
    raw = bytearray(build_batch(records, base_timestamp=base_timestamp, compression=compression))
    set_max_timestamp(raw, 0, 0, max_timestamp)
    assert RecordBatch(raw).crc_ok() and RecordBatch(raw).max_timestamp == max_timestamp
    return bytes(raw)


@pytest.fixture(params=["python", "c"])
def walker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test runs with the Python record walker and the C one (when built)."""
    chosen = records_module._PY_WALKERS if request.param == "python" else records_module._C_WALKERS
    if chosen is None:
        pytest.skip("the C extension was not built")
    monkeypatch.setattr(records_module, "_walkers", chosen)
    return str(request.param)


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.ZSTD])
@pytest.mark.parametrize("configs", [{}, {"message.timestamp.after.max.ms": str(HOUR)},
                                     {"message.timestamp.before.max.ms": str(HOUR)}])
def test_each_records_timestamp_is_bounded_not_the_headers(
        tmp_path: Path, walker: str, codec: int, configs: dict[str, str]) -> None:
    """A producer that claims an in-bounds maxTimestamp in the header while one record lies
    out of bounds is caught, as Kafka's LogValidator checks every record (default bounds
    included: after.max.ms is one hour since Kafka 4.0)."""
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, configs)
    now = broker.now_ms()
    future = "before.max" not in next(iter(configs), "")
    off = 2 * HOUR if future else -2 * HOUR
    records = [Record(0, 0, b"k", b"ok", []), Record(1, off, b"k", b"out", []),
               Record(2, 5, b"k", b"ok", [])]
    response = _produce(broker, "t", _lying_batch(records, now, now + 5, codec))
    assert response.error_code == ErrorCode.INVALID_TIMESTAMP
    assert response.error_message == (
        "One or more records have been rejected due to invalid timestamp")
    assert [e.batch_index for e in response.record_errors] == [1]
    assert response.record_errors[0].batch_index_error_message.startswith(
        f"Timestamp {now + off} of message with offset 1 is out of range. The timestamp "
        "should be within [")
    assert _stored(broker, "t") == []
    # the same records in bounds pass
    ok = [Record(0, 0, b"k", b"ok", []), Record(1, 7, b"k", b"ok", [])]
    assert _produce(broker, "t", _lying_batch(ok, now, now + 7, codec)).error_code == 0


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.LZ4])
def test_a_wrong_header_max_timestamp_is_corrected(tmp_path: Path, walker: str,
                                                   codec: int) -> None:
    """Kafka's LogValidator sets the batch's maxTimestamp to its records' largest
    (setMaxTimestamp, CRC recomputed): the time index then finds the records by time."""
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    now = broker.now_ms()
    records = [Record(0, 0, b"k", b"a", []), Record(1, 300, b"k", b"b", []),
               Record(2, 100, b"k", b"c", [])]
    for claimed in (now - 50_000, now + 10 * 60_000):  # too small, too large (in bounds)
        assert _produce(broker, "t", _lying_batch(records, now, claimed, codec)).error_code == 0
    for stored in _stored(broker, "t"):
        assert stored.crc_ok()
        assert stored.max_timestamp == now + 300
        assert [r.value for r in stored.records()] == [b"a", b"b", b"c"]
    plog = broker.partitions.log("t", 0)
    assert plog is not None
    assert plog.max_timestamp_offset() == (1, now + 300)  # (offset, timestamp)
    # a truthful header is stored byte for byte
    honest = build_batch(records, base_timestamp=now, compression=codec, partition_leader_epoch=0)
    assert RecordBatch(honest).max_timestamp == now + 300
    assert _produce(broker, "t", honest).error_code == 0
    assert bytes(_stored(broker, "t")[-1].buffer())[8:] == honest[8:]  # but its base offset


def _log_append_time_batch(records: list[Record], max_timestamp: int) -> bytes:
    """A batch its producer marked LogAppendTime (no Kafka client does)."""
    raw = bytearray(build_batch(records, base_timestamp=max_timestamp))
    set_max_timestamp(raw, 0, 1, max_timestamp)
    return bytes(raw)


@pytest.mark.parametrize(("configs", "stamp"), [
    ({"message.timestamp.type": "LogAppendTime"}, "now"), ({}, -1)])
def test_a_producer_may_not_mark_its_batch_log_append_time(
        tmp_path: Path, configs: dict[str, str], stamp: object) -> None:
    """Kafka's validateTimestamp: on a LogAppendTime topic, or when the records carry no
    timestamp, every record is INVALID_TIMESTAMP, named as Kafka's DefaultRecord prints it."""
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, configs)
    ts = broker.now_ms() if stamp == "now" else -1
    records = [Record(0, 0, b"key", b"value", []), Record(1, 0, None, b"", [])]
    response = _produce(broker, "t", _log_append_time_batch(records, ts))
    assert response.error_code == ErrorCode.INVALID_TIMESTAMP
    assert response.error_message == (
        "One or more records have been rejected due to invalid timestamp")
    assert [(e.batch_index, e.batch_index_error_message) for e in response.record_errors] == [
        (i, f"Invalid timestamp type in message DefaultRecord(offset={i}, timestamp={ts}, "
            f"key={k} bytes, value={v} bytes). Producer should not set timestamp type to "
            "LogAppendTime.") for i, k, v in ((0, 3, 5), (1, 0, 0))]
    assert _stored(broker, "t") == []


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP])
def test_a_log_append_time_batch_becomes_create_time_on_a_create_time_topic(
        tmp_path: Path, codec: int) -> None:
    """Its records' timestamp is its maxTimestamp: bounded as such, then stored as a
    CreateTime batch with that maxTimestamp (Kafka's setMaxTimestamp with the topic's type)."""
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {"compression.type": "uncompressed"}
                                if codec else {})
    now = broker.now_ms()
    raw = bytearray(build_batch([(b"k", b"v")], base_timestamp=now, compression=codec))
    set_max_timestamp(raw, 0, 1, now)
    assert _produce(broker, "t", bytes(raw)).error_code == ErrorCode.NONE
    (stored,) = _stored(broker, "t")
    assert (stored.timestamp_type, stored.max_timestamp) == (0, now)
    assert stored.crc_ok()
    late = bytearray(build_batch([(b"k", b"v")], base_timestamp=now))
    set_max_timestamp(late, 0, 1, now + 2 * HOUR)  # after.max.ms: one hour
    assert _produce(broker, "t", bytes(late)).error_code == ErrorCode.INVALID_TIMESTAMP
