"""Kafka release emulation with real clients (issue #16): a broker started with
`emulate.kafka.version=2.8` is seen as a 2.8 broker (kafka-python's version probe, librdkafka's
ApiVersions ranges), and clients still produce and consume through it."""

from __future__ import annotations

import logging
import socket
import struct
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer

from odradek.testing import TestBroker, running_broker, unique_name


@pytest.fixture(scope="module")
def broker() -> Iterator[TestBroker]:
    with running_broker({"emulate.kafka.version": "2.8"}, start_timeout=120) as handle:
        yield handle


def _api_versions_v3(bootstrap: str) -> dict[int, tuple[int, int]]:
    """A raw ApiVersions v3 request: the ranges exactly as the broker lists them."""
    host, port = bootstrap.split(":")
    client = b"t"
    header = struct.pack(">hhih", 18, 3, 1, len(client)) + client + b"\x00"
    body = b"\x02t\x021\x00"  # compact strings "t", "1", no tags
    frame = header + body
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        data = sock.recv(size, socket.MSG_WAITALL)
    pos = 4  # correlation id (response header v0)
    error, = struct.unpack_from(">h", data, pos)
    assert error == 0
    n = data[pos + 2] - 1  # compact array length (a small list: one byte)
    pos += 3
    out = {}
    for _ in range(n):
        key, low, high = struct.unpack_from(">hhh", data, pos)
        out[key] = (low, high)
        pos += 7  # + the entry's empty tag buffer
    return out


def test_the_old_ranges_are_advertised(broker: TestBroker) -> None:
    ranges = _api_versions_v3(broker.bootstrap)
    assert ranges[0] == (3, 9)  # Produce: 2.8's max (Odradek's own floor)
    assert ranges[1] == (4, 12)  # Fetch
    assert ranges[18] == (0, 3)  # ApiVersions
    assert 68 not in ranges and 75 not in ranges  # no KIP-848, no DescribeTopicPartitions


def test_kafka_python_detects_2_8(broker: TestBroker) -> None:
    kafka = pytest.importorskip("kafka")
    client = kafka.KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        # kafka-python infers the broker's release from its ApiVersions answer.
        version = client._manager.broker_version_data.broker_version
        produce = client.api_versions()[0]
    finally:
        client.close()
    assert version[:2] == (2, 8), version
    assert tuple(produce) == (3, 9)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_librdkafka_sees_2_8_s_ranges(broker: TestBroker) -> None:
    lines = _Lines()
    logger = logging.getLogger(f"rdkafka-{unique_name('l')}")
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "api.version.request": True,
                         "debug": "feature"}, logger=logger)
    producer.list_topics(timeout=30)
    producer.poll(0.5)
    seen = " ".join(lines.lines)
    assert "ApiKey Produce (0) Versions 3..9" in seen, seen[-2000:]
    assert "ApiKey Fetch (1) Versions 4..12" in seen


def test_confluent_produces_and_consumes_through_an_emulated_2_8(broker: TestBroker) -> None:
    topic = broker.create_topic()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "api.version.request": True})
    errors: list[object] = []
    producer.produce(topic, b"old", on_delivery=lambda e, m: errors.append(e))
    producer.flush(60)
    assert errors == [None]
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": unique_name("g"),
                         "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        for _ in range(150):
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                assert msg.value() == b"old"
                return
        raise AssertionError("nothing consumed")
    finally:
        consumer.close()


def test_a_produce_above_2_8_s_max_closes_the_connection(broker: TestBroker) -> None:
    from odradek.wire._generated.produce import ProduceRequest

    host, port = broker.bootstrap.split(":")
    body = b"".join(bytes(p) for p in ProduceRequest(acks=1, timeout_ms=1000).encode(10))

    def send(version: int) -> bytes:
        # request header v2 (flexible versions): key, version, correlation id, client id, tags
        frame = struct.pack(">hhih", 0, version, 1, 1) + b"t" + b"\x00" + body
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(struct.pack(">i", len(frame)) + frame)
            return sock.recv(4)

    assert len(send(9)) == 4  # 2.8's max: answered (the same body is valid at v9 and v10)
    assert send(10) == b""  # 3.0's Produce v10: closed, unanswered, as a 2.8 broker does
