"""A long-polling Fetch is answered as soon as its partition grows, whatever else the broker
is doing (issue #12): appends at random points of the poll, then a producer connection whose
pipelined requests keep the broker busy, its socket never empty. The second once starved every
other connection: a connection's task read and answered request after request without ever
yielding to the event loop, so the woken fetch (and every other client) waited until that
producer paused.

Raw sockets on both sides, so the clients add no batching or backoff of their own: Produce v9
with acks=0 (no responses to read, so the broker never waits on a full send buffer) and
sessionless Fetch v12 with max_wait 5 s and min_bytes 1. Timing is asserted against half of
max_wait only: the broker answers each fetch within milliseconds of an append, and the bound
would be missed only by a fetch that waited for its timeout or for the producer to pause.
"""

from __future__ import annotations

import random
import socket
import struct
import threading
import time
from dataclasses import dataclass

from confluent_kafka.admin import NewTopic
from it_support import BrokerProcess, admin, wait_until

from odradek.wire._generated.fetch import FetchRequest, FetchResponse
from odradek.wire._generated.produce import ProduceRequest
from odradek.wire.records import build_batch, iter_batches

PRODUCE, FETCH = 0, 1
MAX_WAIT_MS = 5000
TOPIC = "long-poll"


def request_frame(api_key: int, version: int, correlation_id: int, body: list[object]) -> bytes:
    """Request header v2 (flexible versions: client id, no tagged fields) and the body."""
    header = struct.pack(">hhih", api_key, version, correlation_id, 4) + b"test" + b"\x00"
    payload = header + b"".join(bytes(p) for p in body)  # type: ignore[call-overload]
    return struct.pack(">i", len(payload)) + payload


def produce_frame(value: bytes) -> bytes:
    P = ProduceRequest
    request = P(acks=0, timeout_ms=30_000, topic_data=[P.TopicProduceData(
        name=TOPIC, partition_data=[P.PartitionProduceData(
            index=0, records=build_batch([(None, value)]))])])
    return request_frame(PRODUCE, 9, 1, list(request.encode(9)))


def fetch_frame(offset: int, correlation_id: int) -> bytes:
    F = FetchRequest
    request = F(replica_id=-1, max_wait_ms=MAX_WAIT_MS, min_bytes=1, max_bytes=1 << 20,
                isolation_level=0, session_id=0, session_epoch=-1, topics=[F.FetchTopic(
                    topic=TOPIC, partitions=[F.FetchPartition(
                        partition=0, fetch_offset=offset, partition_max_bytes=1 << 20)])])
    return request_frame(FETCH, 12, correlation_id, list(request.encode(12)))


def read_exactly(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise AssertionError("the broker closed the connection")
        data += chunk
    return bytes(data)


@dataclass
class Poll:
    sent: float
    answered: float
    records: int
    error: int


class Fetcher(threading.Thread):
    """Long-polls partition 0 from offset 0 until `target` records arrived."""

    def __init__(self, port: int) -> None:
        super().__init__(name="fetcher", daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.polls: list[Poll] = []
        self.received = 0
        self.target = float("inf")
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            correlation = 0
            while self.received < self.target:
                correlation += 1
                sent = time.monotonic()
                self.sock.sendall(fetch_frame(self.received, correlation))
                (size,) = struct.unpack(">i", read_exactly(self.sock, 4))
                payload = read_exactly(self.sock, size)
                answered = time.monotonic()
                # response header v1: correlation id, then an empty tagged-field section
                assert struct.unpack_from(">i", payload)[0] == correlation
                response, _ = FetchResponse.decode(payload, 12, 5)
                [topic] = response.responses
                [part] = topic.partitions
                count = 0
                for batch in iter_batches(bytes(part.records), allow_partial_tail=True):
                    count = batch.next_offset - self.received
                self.received += max(count, 0)
                self.polls.append(Poll(sent, answered, count, part.error_code))
        except BaseException as exc:  # reported by the test
            self.failure = exc
        finally:
            self.sock.close()


def test_appends_reach_a_long_poll_at_once_even_while_a_producer_keeps_the_broker_busy(
        broker: BrokerProcess) -> None:
    client = admin(broker.bootstrap)
    client.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    wait_until(lambda: TOPIC in client.list_topics(timeout=10).topics, what="the topic")
    one = produce_frame(b"v" * 10)
    producer = socket.create_connection(("127.0.0.1", broker.port), timeout=60)
    fetcher = Fetcher(broker.port)
    fetcher.start()
    sent = 0
    rng = random.Random(12)
    try:
        # Random points of the long polls: a pause (the fetch parks), then a burst.
        for _ in range(30):
            time.sleep(rng.uniform(0, 0.2))
            burst = rng.randint(1, 40)
            producer.sendall(one * burst)
            sent += burst
        # A backlog: requests written as fast as the socket takes them, for 4 s, so the
        # broker always finds the next one waiting.
        chunk = one * 1000
        end = time.monotonic() + 4
        while time.monotonic() < end:
            producer.sendall(chunk)
            sent += 1000
    finally:
        producer.close()
    fetcher.target = sent
    fetcher.join(120)
    assert not fetcher.is_alive(), f"the fetcher has {fetcher.received} of {sent} records"
    assert fetcher.failure is None, repr(fetcher.failure)
    assert fetcher.received == sent
    # Every poll was sent while more records were coming (within 0.2 s): each must have
    # been answered with records, well before max_wait.
    slow = [(round(p.answered - p.sent, 3), p.records) for p in fetcher.polls
            if p.answered - p.sent >= MAX_WAIT_MS / 2000 or p.records <= 0 or p.error]
    longest = max(p.answered - p.sent for p in fetcher.polls)
    assert not slow, (f"{len(slow)} of {len(fetcher.polls)} polls slow or empty "
                      f"(round trip s, records): {slow[:10]}; longest {longest:.3f} s")
