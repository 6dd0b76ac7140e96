"""Fetch sessions (KIP-227) with stock clients, through a byte-counting TCP proxy: the broker
advertises the proxy's port, so every connection of the client passes through it, and each
Fetch request and response is decoded and measured on the wire.

- a consumer on 200 partitions (kafka-python, which keeps sessions as the Java client does)
  gets every record, and keeps getting new ones, over an incremental session;
- an idle poll with a session costs a few dozen bytes each way; without (the cache of 0
  slots) it costs the full partition list both ways.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from it_support import (
    TIMEOUT,
    BrokerProcess,
    Rec,
    StartBroker,
    aiokafka_consume_all,
    confluent_consume_all,
    confluent_produce,
    create_topic,
    topic_name,
)

from odradek.wire import ApiKey
from odradek.wire._generated.fetch import FetchRequest, FetchResponse
from odradek.wire.headers import decode_request_header, response_header_version

PARTITIONS = 200


@dataclass
class Exchange:
    """One Fetch on the wire: sizes are whole frames (with the 4-byte size prefix)."""

    version: int
    request: FetchRequest
    request_bytes: int
    response: FetchResponse | None = None
    response_bytes: int = 0
    at: float = 0.0

    @property
    def incremental(self) -> bool:
        return self.request.session_epoch > 0

    @property
    def partitions_sent(self) -> int:
        assert self.response is not None
        return sum(len(t.partitions) for t in self.response.responses)


class FetchTap:
    """A loopback TCP proxy that decodes the Fetch requests and responses passing through."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.target: int | None = None
        self.fetches: list[Exchange] = []
        self._lock = threading.Lock()
        self._closing = False
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, name="fetch-tap", daemon=True).start()

    def close(self) -> None:
        self._closing = True
        for s in [self._listener, *self._sockets]:
            with contextlib.suppress(OSError):
                s.close()

    def snapshot(self) -> list[Exchange]:
        with self._lock:
            return [e for e in self.fetches if e.response is not None]

    def _accept(self) -> None:
        while not self._closing:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            assert self.target is not None
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self._sockets += [client, upstream]
            pending: dict[int, Exchange | None] = {}
            threading.Thread(target=self._pump, args=(client, upstream, pending, True),
                             daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, pending, False),
                             daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket,
              pending: dict[int, Exchange | None], requests: bool) -> None:
        buf = bytearray()
        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                buf += data
                while len(buf) >= 4:
                    size = int.from_bytes(buf[:4], "big", signed=True) + 4
                    if len(buf) < size:
                        break
                    frame = bytes(buf[4:size])
                    del buf[:size]
                    # record before forwarding: the answer cannot overtake its request
                    (self._request if requests else self._response)(frame, size, pending)
                    dst.sendall(int.to_bytes(size - 4, 4, "big") + frame)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def _request(self, frame: bytes, size: int, pending: dict[int, Exchange | None]) -> None:
        header, pos = decode_request_header(memoryview(frame))
        if header.request_api_key != ApiKey.FETCH:
            pending[header.correlation_id] = None
            return
        request, _ = FetchRequest.decode(frame, header.request_api_version, pos)
        with self._lock:
            exchange = Exchange(header.request_api_version, request, size)
            pending[header.correlation_id] = exchange
            self.fetches.append(exchange)

    def _response(self, frame: bytes, size: int, pending: dict[int, Exchange | None]) -> None:
        correlation = int.from_bytes(frame[:4], "big", signed=True)
        exchange = pending.pop(correlation, None)
        if exchange is None:
            return
        pos = 4 + (1 if response_header_version(ApiKey.FETCH, exchange.version) >= 1 else 0)
        response, _ = FetchResponse.decode(frame, exchange.version, pos)
        with self._lock:
            exchange.response, exchange.response_bytes = response, size
            exchange.at = time.monotonic()


@pytest.fixture
def tap() -> Iterator[FetchTap]:
    t = FetchTap()
    yield t
    t.close()


def start_behind(start_broker: StartBroker, tap: FetchTap, data: Path,
                 **overrides: str) -> BrokerProcess:
    broker = start_broker(data, {
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{tap.port}", **overrides})
    tap.target = broker.port
    return broker


def spread(n: int) -> list[Rec]:
    return [Rec(key=b"k%d" % i, value=b"v%d" % i, partition=i % PARTITIONS) for i in range(n)]


class Consumer:
    """kafka-python's consumer, assigned every partition from the start. It keeps fetch
    sessions (its FetchSessionHandler), as the Java client does."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        from kafka import KafkaConsumer
        from kafka import TopicPartition as KTopicPartition

        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None,
                                      enable_auto_commit=False, auto_offset_reset="earliest",
                                      fetch_max_wait_ms=100,
                                      request_timeout_ms=int(TIMEOUT * 1000) + 5000)
        tps = [KTopicPartition(topic, p) for p in range(partitions)]
        self.consumer.assign(tps)
        self.consumer.seek_to_beginning(*tps)

    def poll(self, timeout_ms: int) -> list[tuple[int, int]]:
        """(partition, offset) of the records one poll returned."""
        return [(m.partition, m.offset) for msgs in
                self.consumer.poll(timeout_ms=timeout_ms).values() for m in msgs]

    def consume(self, want: int) -> list[tuple[int, int]]:
        got: list[tuple[int, int]] = []
        deadline = time.monotonic() + TIMEOUT
        while len(got) < want:
            assert time.monotonic() < deadline, f"consumed {len(got)} of {want}"
            got += self.poll(500)
        return got

    def close(self) -> None:
        self.consumer.close()


def idle_polls(tap: FetchTap, consumer: Consumer, seconds: float) -> list[Exchange]:
    """The Fetches answered while the consumer polls with nothing to read (after a second
    for the partitions it last consumed to settle back into the session)."""
    settle = time.monotonic() + 1.0
    while time.monotonic() < settle:
        assert consumer.poll(200) == []
    start = time.monotonic()
    end = start + seconds
    while time.monotonic() < end:
        assert consumer.poll(200) == []
    return [e for e in tap.snapshot() if start <= e.at <= end]


def per_poll(exchanges: list[Exchange]) -> tuple[float, float]:
    assert exchanges
    return (sum(e.request_bytes for e in exchanges) / len(exchanges),
            sum(e.response_bytes for e in exchanges) / len(exchanges))


def test_a_consumer_on_200_partitions_over_a_session(
        start_broker: StartBroker, tap: FetchTap, tmp_path: Path) -> None:
    broker = start_behind(start_broker, tap, tmp_path / "data")
    topic = topic_name()
    create_topic(broker.bootstrap, topic, PARTITIONS)
    confluent_produce(broker.bootstrap, topic, spread(1000))
    consumer = Consumer(f"127.0.0.1:{tap.port}", topic, PARTITIONS)
    try:
        got = consumer.consume(1000)
        assert sorted(got) == sorted((i % PARTITIONS, i // PARTITIONS) for i in range(1000))
        idle = idle_polls(tap, consumer, 2.0)
        # more records, to some partitions only: consumed over the same session
        confluent_produce(broker.bootstrap, topic, spread(300))
        more = consumer.consume(300)
        assert sorted(more) == sorted((i % PARTITIONS, 5 + i // PARTITIONS) for i in range(300))
        assert consumer.poll(300) == []  # nothing twice
    finally:
        consumer.close()
    fetches = tap.snapshot()
    assert all(e.response is not None and e.response.error_code == 0 for e in fetches)
    incremental = [e for e in fetches if e.incremental]
    assert len(incremental) >= len(fetches) - 2  # a full fetch first, then incremental ones
    assert len({e.response.session_id for e in incremental if e.response}) == 1
    assert incremental[0].response is not None and incremental[0].response.session_id != 0
    assert idle and all(e.incremental for e in idle)
    for e in idle:
        # nothing to read; a partition the client re-added (kafka-python forgets a partition
        # while it holds records of it) is sent once again, as Kafka sends a new one
        assert e.response is not None
        named = {(t.topic, p.partition) for t in e.request.topics for p in t.partitions}
        sent = {(t.topic, p.partition_index) for t in e.response.responses for p in t.partitions}
        assert sent <= named
        assert all(not p.records for t in e.response.responses for p in t.partitions)
    assert sum(e.partitions_sent for e in idle) <= 2
    request_bytes, response_bytes = per_poll(idle)
    assert request_bytes < 100 and response_bytes < 40, (request_bytes, response_bytes)
    # the polls that brought the new records named only the partitions that had them
    busy = [e for e in incremental if e.partitions_sent]
    assert busy and max(e.partitions_sent for e in busy) <= PARTITIONS


def test_an_idle_poll_with_and_without_sessions(start_broker: StartBroker, tap: FetchTap,
                                                tmp_path: Path) -> None:
    sizes = {}
    for slots in ("1000", "0"):
        tap.fetches.clear()
        broker = start_behind(start_broker, tap, tmp_path / f"data-{slots}",
                              **{"max.incremental.fetch.session.cache.slots": slots})
        topic = topic_name()
        create_topic(broker.bootstrap, topic, PARTITIONS)
        consumer = Consumer(f"127.0.0.1:{tap.port}", topic, PARTITIONS)
        try:
            exchanges = idle_polls(tap, consumer, 2.0)
        finally:
            consumer.close()
        assert all(e.incremental == (slots != "0") for e in exchanges)
        sizes[slots] = per_poll(exchanges)
        broker.stop()
    (with_req, with_resp), (without_req, without_resp) = sizes["1000"], sizes["0"]
    print(f"idle poll on {PARTITIONS} partitions, bytes request/response: "
          f"with sessions {with_req:.0f}/{with_resp:.0f}, "
          f"without {without_req:.0f}/{without_resp:.0f}")
    assert without_req > 20 * with_req and without_resp > 20 * with_resp


@pytest.mark.parametrize("client", ["confluent", "aiokafka"])
def test_clients_without_sessions_fetch_sessionless(start_broker: StartBroker, tap: FetchTap,
                                                    tmp_path: Path, client: str) -> None:
    """librdkafka and aiokafka do not implement KIP-227: every fetch is full (epoch -1),
    answered with session id 0, and they consume as before."""
    broker = start_behind(start_broker, tap, tmp_path / "data")
    topic = topic_name()
    create_topic(broker.bootstrap, topic, 4)
    confluent_produce(broker.bootstrap, topic, [Rec(key=b"k", value=b"v%d" % i, partition=i % 4)
                                                for i in range(40)])
    proxied = f"127.0.0.1:{tap.port}"
    recs = (confluent_consume_all if client == "confluent" else aiokafka_consume_all)(
        proxied, topic, 4)
    assert sorted((r.partition, r.offset) for r in recs) == sorted(
        (i % 4, i // 4) for i in range(40))
    fetches = tap.snapshot()
    assert fetches
    assert all(e.request.session_epoch == -1 and e.response is not None
               and e.response.session_id == 0 for e in fetches)
