"""Issue #10's findings, each against a real broker process (issue #10, "How it is proven").

Requests no stock client would send (a batch header that lies, a compression bomb, absurd
sizes) are sent as raw frames over a socket; stock clients (confluent-kafka) produce beside
them and read back what is stored, so the acknowledged set is checked against what is read:

- a topic deleted while a Fetch waits in its long poll: answered at once with
  UNKNOWN_TOPIC_OR_PARTITION (by name) or UNKNOWN_TOPIC_ID (by id), and the connection stays
  open (finding 5);
- finding 10: batch headers whose recordsCount / lastOffsetDelta disagree with the records
  present are INVALID_RECORD, the log end does not move, the next record lands right after;
- finding 11: a gzip or zstd bomb on a compacted topic is refused in seconds, the broker's RSS
  stays bounded and another producer keeps being acknowledged meanwhile;
- finding 12: a Fetch with max_bytes 2^31-1 naming one partition four times gets at most
  fetch.max.bytes (plus KIP-74's first batch);
- finding 14: a negative partition_max_bytes is answered per partition, connection open.

Findings 9 (full disk), 12's memory (announced frames, idle connections) and 13 (descriptors,
10,000 partitions or topics) have their own files: test_disk_faults.py, test_resources.py,
test_descriptors.py, test_scale.py.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import crc32c
import pytest
import zstandard
from confluent_kafka import Producer, TopicPartition
from it_support import (
    TIMEOUT,
    BrokerProcess,
    Rec,
    StartBroker,
    admin,
    confluent_consume_all,
    confluent_consumer,
    confluent_produce,
    create_topic,
    topic_name,
)

from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from odradek.wire._generated.fetch import FetchRequest, FetchResponse
from odradek.wire._generated.header import RequestHeader, ResponseHeader
from odradek.wire._generated.produce import ProduceRequest, ProduceResponse
from odradek.wire.headers import request_header_version, response_header_version
from odradek.wire.primitives import ZERO_UUID
from odradek.wire.records import ATTRIBUTES_OFFSET, BATCH_HEADER_SIZE, CRC_OFFSET, build_batch

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(bool(os.environ.get("ODRADEK_IT_SERVER_CMD")),
                       reason="reads odradek's own process (RSS, stderr)"),
]


# --------------------------------------------------------------------------- raw requests


class Conn:
    """One connection sending requests one at a time and decoding the answers."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.sock = socket.create_connection(("127.0.0.1", broker.port), timeout=TIMEOUT)
        self.correlation = 0

    def send(self, api_key: int, version: int, request: Any) -> int:
        self.correlation += 1
        header = RequestHeader(request_api_key=api_key, request_api_version=version,
                               correlation_id=self.correlation, client_id="regressions")
        payload = b"".join(bytes(p) for p in header.encode(request_header_version(api_key, version)))
        payload += b"".join(bytes(p) for p in request.encode(version))
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        return self.correlation

    def receive(self, api_key: int, version: int, response_cls: Any, correlation: int) -> Any:
        size = struct.unpack(">i", self._recv(4))[0]
        frame = memoryview(self._recv(size))
        header, pos = ResponseHeader.decode(frame, response_header_version(api_key, version))
        assert header.correlation_id == correlation
        response, end = response_cls.decode(frame[pos:], version)
        assert pos + end == size, "bytes left over in the answer"
        return response

    def call(self, api_key: int, version: int, request: Any, response_cls: Any) -> Any:
        return self.receive(api_key, version, response_cls, self.send(api_key, version, request))

    def still_answers(self) -> bool:
        resp = self.call(ApiKey.API_VERSIONS, 3,
                         ApiVersionsRequest(client_software_name="regressions",
                                            client_software_version="1"), ApiVersionsResponse)
        return bool(resp.error_code == ErrorCode.NONE and resp.api_keys)

    def _recv(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(min(n - len(out), 1 << 20))
            assert chunk, "connection closed by the broker"
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self.sock.close()


def fetch_request(topic: str, partitions: list[int], *, topic_id: Any = ZERO_UUID,
                  offset: int = 0, max_wait_ms: int = 0, max_bytes: int = 1 << 20,
                  partition_max_bytes: int = 1 << 20) -> FetchRequest:
    return FetchRequest(
        replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes,
        isolation_level=0, session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
        topics=[FetchRequest.FetchTopic(topic=topic, topic_id=topic_id, partitions=[
            FetchRequest.FetchPartition(partition=p, current_leader_epoch=-1, fetch_offset=offset,
                                        log_start_offset=-1,
                                        partition_max_bytes=partition_max_bytes)
            for p in partitions])])


def produce_raw(conn: Conn, topic: str, batch: bytes) -> ErrorCode:
    req = ProduceRequest(acks=-1, timeout_ms=10_000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=batch)])])
    resp = conn.call(ApiKey.PRODUCE, 9, req, ProduceResponse)
    return ErrorCode(resp.responses[0].partition_responses[0].error_code)


def topic_id_of(broker: BrokerProcess, topic: str) -> Any:
    from odradek.wire._generated.metadata import MetadataRequest, MetadataResponse

    conn = Conn(broker)
    try:
        req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                              allow_auto_topic_creation=False)
        resp = conn.call(ApiKey.METADATA, 12, req, MetadataResponse)
    finally:
        conn.close()
    return resp.topics[0].topic_id


def end_offset(broker: BrokerProcess, topic: str, partition: int = 0) -> int:
    consumer = confluent_consumer(broker.bootstrap)
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    finally:
        consumer.close()
    return int(high)


def rss_mib(broker: BrokerProcess) -> float:
    assert broker.proc is not None
    with open(f"/proc/{broker.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


# --------------------------------------------------------------------------- long poll


@pytest.mark.parametrize("by", ["name", "id"])
def test_a_topic_deleted_during_a_long_poll_is_answered(broker: BrokerProcess, by: str) -> None:
    topic = topic_name("poll")
    create_topic(broker.bootstrap, topic, partitions=2)
    acked = confluent_produce(broker.bootstrap, topic, [Rec(b"k", b"v", partition=0)])
    topic_id = topic_id_of(broker, topic)
    version = 12 if by == "name" else 13
    client = admin(broker.bootstrap)  # kept: a dropped AdminClient aborts its requests
    conn = Conn(broker)
    try:
        # Wait at the end of both partitions for up to 20 s.
        request = fetch_request(topic if by == "name" else "", [0, 1], topic_id=topic_id,
                                offset=acked[0].offset + 1, max_wait_ms=20_000)
        request.topics[0].partitions[1].fetch_offset = 0
        correlation = conn.send(ApiKey.FETCH, version, request)
        time.sleep(0.5)  # parked in the long poll
        started = time.monotonic()
        client.delete_topics([topic], operation_timeout=TIMEOUT)[topic].result(TIMEOUT)
        response = conn.receive(ApiKey.FETCH, version, FetchResponse, correlation)
        waited = time.monotonic() - started
        want = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if by == "name"
                else ErrorCode.UNKNOWN_TOPIC_ID)
        codes = {ErrorCode(p.error_code) for t in response.responses for p in t.partitions}
        assert codes == {want}, codes
        assert waited < 10, f"answered after {waited:.1f} s: at max_wait_ms, not at the deletion"
        assert conn.still_answers()
    finally:
        conn.close()
    assert "Traceback" not in broker.stderr_text()
    assert "closing connection" not in broker.stderr_text()


# --------------------------------------------------------------------------- finding 10


def lie(batch: bytes, *, records_count: int | None = None,
        last_offset_delta: int | None = None) -> bytes:
    """`batch` with header fields replaced and the CRC made right again (so only the deeper
    checks can catch it)."""
    out = bytearray(batch)
    if records_count is not None:
        struct.pack_into(">i", out, 57, records_count)
    if last_offset_delta is not None:
        struct.pack_into(">i", out, 23, last_offset_delta)
    struct.pack_into(">I", out, CRC_OFFSET, crc32c.crc32c(bytes(out[ATTRIBUTES_OFFSET:])))
    return bytes(out)


@pytest.mark.parametrize(("count", "delta"), [
    (2**31 - 1, 2**31 - 1),  # the torture run's: the log end jumped by 2,147,483,648
    (2**31 - 1, 0), (-2**31, 0), (0, 0), (3, 2),
])
def test_a_batch_header_that_lies_is_invalid_record(broker: BrokerProcess, count: int,
                                                    delta: int) -> None:
    topic = topic_name("liar")
    create_topic(broker.bootstrap, topic, partitions=1)
    before = confluent_produce(broker.bootstrap, topic, [Rec(b"k", b"first")])
    conn = Conn(broker)
    try:
        for codec in (0, 1, 4):  # none, gzip, zstd
            liar = lie(build_batch([(b"k", b"one real record")], compression=codec),
                       records_count=count, last_offset_delta=delta)
            assert produce_raw(conn, topic, liar) == ErrorCode.INVALID_RECORD
        assert conn.still_answers()
    finally:
        conn.close()
    assert end_offset(broker, topic) == 1  # the log end did not move
    after = confluent_produce(broker.bootstrap, topic, [Rec(b"k", b"next")])
    assert [r.offset for r in after] == [1]
    stored = confluent_consume_all(broker.bootstrap, topic, 1)
    assert [r.value for r in stored] == [r.value for r in before + after]


# --------------------------------------------------------------------------- finding 11


def bomb(codec: int, size: int) -> bytes:
    """A one-record batch whose records block is `size` zero bytes compressed with `codec`."""
    header = bytearray(build_batch([(b"k", b"v")]))[:BATCH_HEADER_SIZE]
    zeros = bytes(1 << 20)
    if codec == 1:
        z = zlib.compressobj(9, zlib.DEFLATED, 31)
        block = b"".join(z.compress(zeros) for _ in range(size >> 20)) + z.flush()
    else:
        c = zstandard.ZstdCompressor(level=3).compressobj()
        block = b"".join(c.compress(zeros) for _ in range(size >> 20)) + c.flush()
    struct.pack_into(">h", header, ATTRIBUTES_OFFSET, codec)
    struct.pack_into(">i", header, 8, BATCH_HEADER_SIZE + len(block) - 12)
    struct.pack_into(">i", header, 57, 1)
    return lie(bytes(header) + block)


class SteadyProducer:
    """A confluent-kafka producer acknowledging one record every 50 ms on its own thread,
    timing each acknowledgement."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                  "linger.ms": 0, "message.timeout.ms": 30_000})
        self.topic = topic
        self.latencies: list[float] = []
        self.errors: list[Any] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        while not self.stop.is_set():
            sent = time.monotonic()
            done: list[Any] = []
            self.producer.produce(self.topic, value=b"steady-%d" % n,
                                  on_delivery=lambda err, _msg, done=done: done.append(err))
            self.producer.flush(30)
            if done and done[0] is None:
                self.latencies.append(time.monotonic() - sent)
            else:
                self.errors.append(done[0] if done else "not answered")
            n += 1
            self.stop.wait(0.05)

    def __enter__(self) -> SteadyProducer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(60)


@pytest.mark.parametrize("codec", [1, 4], ids=["gzip", "zstd"])
def test_a_compression_bomb_on_a_compacted_topic_is_refused_in_bounded_memory(
        start_broker: StartBroker, tmp_path: Path, codec: int) -> None:
    # 1 GiB of zeros: about 1 MiB as gzip (so message.max.bytes is raised to let it in), 32 KiB
    # as zstd. Before the fix: RSS 2,085 MiB, every client stalled 6-16 s.
    broker = start_broker(tmp_path / "data", overrides={"message.max.bytes": str(4 << 20)})
    topic = topic_name("compact")
    create_topic(broker.bootstrap, topic, partitions=1, config={"cleanup.policy": "compact"})
    create_topic(broker.bootstrap, "steady", partitions=1)
    confluent_produce(broker.bootstrap, "steady", [Rec(b"k", b"warm-up")])
    payload = bomb(codec, 1 << 30)
    base = rss_mib(broker)
    conn = Conn(broker)
    peak = base
    try:
        with SteadyProducer(broker.bootstrap, "steady") as steady:
            time.sleep(0.5)
            for _ in range(3):
                started = time.monotonic()
                correlation = conn.send(ApiKey.PRODUCE, 9, ProduceRequest(
                    acks=-1, timeout_ms=10_000, topic_data=[ProduceRequest.TopicProduceData(
                        name=topic, partition_data=[ProduceRequest.PartitionProduceData(
                            index=0, records=payload)])]))
                resp = conn.receive(ApiKey.PRODUCE, 9, ProduceResponse, correlation)
                took = time.monotonic() - started
                peak = max(peak, rss_mib(broker))
                code = ErrorCode(resp.responses[0].partition_responses[0].error_code)
                assert code == ErrorCode.INVALID_RECORD, code
                assert took < 5, f"the bomb took {took:.1f} s"
            time.sleep(0.5)
        assert conn.still_answers()
    finally:
        conn.close()
    print(f"\nbomb ({len(payload)} bytes): RSS {base:.0f} -> peak {peak:.0f} MiB; steady acks "
          f"{len(steady.latencies)}, slowest {max(steady.latencies):.3f} s")
    assert peak - base < 100, f"RSS grew by {peak - base:.0f} MiB"
    assert not steady.errors, steady.errors[:3]
    assert len(steady.latencies) >= 5
    assert max(steady.latencies) < 2.0, max(steady.latencies)
    assert end_offset(broker, topic) == 0


# --------------------------------------------------------------------------- findings 12, 14


def test_fetch_max_bytes_bounds_a_fetch_naming_a_partition_four_times(
        start_broker: StartBroker, tmp_path: Path) -> None:
    limit = 256 * 1024
    broker = start_broker(tmp_path / "data", overrides={"fetch.max.bytes": str(limit)})
    topic = topic_name("big")
    create_topic(broker.bootstrap, topic, partitions=1)
    conn = Conn(broker)
    value = os.urandom(20_000)
    for i in range(200):  # 200 batches of one 20 kB record: about 4 MiB
        assert produce_raw(conn, topic, build_batch([(b"k%d" % i, value)])) == ErrorCode.NONE
    conn.close()
    assert end_offset(broker, topic) == 200
    conn = Conn(broker)
    try:
        request = fetch_request(topic, [0, 0, 0, 0], max_bytes=2**31 - 1,
                                partition_max_bytes=2**31 - 1)
        response = conn.call(ApiKey.FETCH, 11, request, FetchResponse)
        sizes = [len(p.records or b"") for t in response.responses for p in t.partitions]
        assert all(ErrorCode(p.error_code) == ErrorCode.NONE
                   for t in response.responses for p in t.partitions)
        # KIP-74: the first batch is returned whole even past the limit; then the limit holds.
        assert sum(sizes) <= limit + 64 * 1024, sizes
        assert sizes[0] > 0
        assert conn.still_answers()
    finally:
        conn.close()


def test_a_negative_partition_max_bytes_is_answered_per_partition(broker: BrokerProcess) -> None:
    topic = topic_name("neg")
    create_topic(broker.bootstrap, topic, partitions=2)
    confluent_produce(broker.bootstrap, topic, [Rec(b"k", b"v", partition=p) for p in (0, 1)])
    conn = Conn(broker)
    try:
        request = fetch_request(topic, [0, 1])
        request.topics[0].partitions[0].partition_max_bytes = -1
        response = conn.call(ApiKey.FETCH, 12, request, FetchResponse)
        by_partition = {p.partition_index: p for t in response.responses for p in t.partitions}
        assert ErrorCode(by_partition[0].error_code) == ErrorCode.UNKNOWN_SERVER_ERROR
        assert ErrorCode(by_partition[1].error_code) == ErrorCode.NONE
        assert by_partition[1].records
        assert conn.still_answers()
    finally:
        conn.close()
    assert "Traceback" not in broker.stderr_text()
