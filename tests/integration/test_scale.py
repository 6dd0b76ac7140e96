"""Large admin requests against a real broker (issue #10, finding 13): one CreateTopics of
thousands of partitions, and one of thousands of topics, are answered with everything
created, and then one DeleteTopics of them all with everything gone, while a producer on
another connection keeps its latency.

The default run uses 2,000; `ODRADEK_SCALE_TESTS=1` runs Kafka's per-request maximum,
10,000 (minutes on a loaded machine)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from it_support import TIMEOUT, BrokerProcess, create_topic, topic_name

SIZE = 10_000 if os.environ.get("ODRADEK_SCALE_TESTS") == "1" else 2_000
MAX_ACK_SECONDS = 1.0
AFTER_SECONDS = 3.0  # watched after the request's answer, for work done after it
PACE_SECONDS = 0.05

pytestmark = pytest.mark.timeout(600 if SIZE > 2_000 else 180)


class PacedProducer:
    """Sends one record every 50 ms from its own thread and records each ack's latency."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.latencies: list[float] = []
        self.errors: list[Any] = []
        self._stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                   "linger.ms": 0, "message.timeout.ms": int(TIMEOUT * 1000)})
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            sent = time.monotonic()
            acked: list[float] = []

            def on_delivery(err: Any, _msg: Any, acked: list[float] = acked) -> None:
                if err is not None:
                    self.errors.append(err)
                acked.append(time.monotonic())

            self._producer.produce(self.topic, b"ping", on_delivery=on_delivery)
            self._producer.flush(TIMEOUT)
            self.latencies.append((acked[0] if acked else time.monotonic()) - sent)
            self._stop.wait(PACE_SECONDS)

    def __enter__(self) -> PacedProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT)


def big_admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 300_000})


def beside_producer(broker: BrokerProcess, probe: str, what: str,
                    action: Callable[[], None]) -> None:
    """Run `action` (one big admin request) while a paced producer writes to `probe`; every
    ack meanwhile must come within MAX_ACK_SECONDS."""
    with PacedProducer(broker.bootstrap, probe) as producer:
        # A first ack proves the producer is connected before the big request starts.
        deadline = time.monotonic() + TIMEOUT
        while not producer.latencies and time.monotonic() < deadline:
            producer._stop.wait(PACE_SECONDS)
        assert producer.latencies, "producer never got an ack"
        before = len(producer.latencies)
        started = time.monotonic()
        action()
        took = time.monotonic() - started
        # The broker may finish the work after answering (CreateTopics makes the partition
        # logs in the background, as Kafka): the producer keeps going over that time too.
        producer._stop.wait(AFTER_SECONDS)
        watched = time.monotonic() - started
    # After the producer thread is joined: an ack still waiting when the request ended counts.
    during = producer.latencies[before:]
    print(f"\n{what}: {took:.1f} s; {len(during)} acks in the {watched:.1f} s after it began, "
          f"slowest {max(during, default=0):.3f} s")
    assert not producer.errors
    assert len(during) >= max(1, int(watched / (PACE_SECONDS + MAX_ACK_SECONDS)) - 1)
    assert max(during, default=0) < MAX_ACK_SECONDS, sorted(during)[-5:]


def create_then_delete_beside_producer(broker: BrokerProcess, topics: list[NewTopic]) -> None:
    probe = topic_name("probe")
    create_topic(broker.bootstrap, probe)
    client = big_admin(broker.bootstrap)
    size = f"{len(topics)} topics, {sum(t.num_partitions for t in topics)} partitions"

    def create() -> None:
        futures = client.create_topics(topics, request_timeout=300, operation_timeout=300)
        for future in futures.values():
            assert future.result(300) is None

    def delete() -> None:
        futures = client.delete_topics([t.topic for t in topics], request_timeout=300,
                                       operation_timeout=300)
        for future in futures.values():
            assert future.result(300) is None

    beside_producer(broker, probe, f"created {size}", create)
    listed = client.list_topics(timeout=120).topics
    for t in topics:
        assert t.topic in listed and len(listed[t.topic].partitions) == t.num_partitions
    beside_producer(broker, probe, f"deleted {size}", delete)
    listed = client.list_topics(timeout=120).topics
    assert not [t.topic for t in topics if t.topic in listed]
    assert not [d for d in os.listdir(broker.data_dir) if d.startswith(topics[0].topic)]


def test_one_topic_of_many_partitions_beside_a_producer(broker: BrokerProcess) -> None:
    create_then_delete_beside_producer(broker, [NewTopic(topic_name("wide"), SIZE, 1)])


def test_many_topics_beside_a_producer(broker: BrokerProcess) -> None:
    prefix = topic_name("many")
    create_then_delete_beside_producer(
        broker, [NewTopic(f"{prefix}-{i}", 1, 1) for i in range(SIZE)])
