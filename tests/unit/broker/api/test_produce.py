"""Produce handler: per-partition errors in Kafka's order, offsets assigned on success."""

from __future__ import annotations

from pathlib import Path

from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.produce import ProduceRequest
from odradek.wire.records import build_batch


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
