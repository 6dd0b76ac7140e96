"""Partitions beyond the descriptor limit (issue #10): a broker whose RLIMIT_NOFILE is 256
serves 2,000 partitions (one CreateTopics, one record each from an idempotent producer, all
read back, again after a clean restart and after kill -9), because segments give their
descriptors back when cold (`odradek/broker/storage/handles.py`). Without that, the
CreateTopics alone runs out of descriptors (each partition kept its `.log` open).

The broker's descriptors are counted in /proc/PID/fd while it works; clients report every
error through `error_cb` (a closed connection included) and none may come.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from it_support import BrokerProcess, StartBroker, topic_name, wait_until

pytestmark = pytest.mark.timeout(900)

PARTITIONS = 2_000
LIMIT = 256
DEADLINE = 240.0  # seconds for each produce or read of all partitions (a loaded machine)
# What the broker must never say in this test.
BAD = re.compile(r"Too many open files|out of file descriptors|log dir failed|Traceback|"
                 r"closing connection|request failed")


class Peak:
    """Samples the broker's open descriptors every 20 ms from a thread."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.broker = broker
        self.value = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            try:
                self.value = max(self.value, self.broker.open_descriptors())
            except (OSError, AssertionError):  # restarting
                continue

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def produce_one_each(bootstrap: str, topic: str, errors: list[Any]) -> dict[int, int]:
    """One record per partition from an idempotent producer; partition -> acked offset."""
    acked: dict[int, int] = {}

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked[msg.partition()] = msg.offset()

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 20,
        "message.timeout.ms": int(DEADLINE * 1000),
        "error_cb": errors.append,
    })
    for p in range(PARTITIONS):
        producer.produce(topic, key=b"k%d" % p, value=b"value-%d" % p, partition=p,
                         on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(DEADLINE) == 0, "records still in flight"
    return acked


def read_all(bootstrap: str, topic: str, errors: list[Any]) -> dict[int, list[bytes | None]]:
    """Every record of every partition from offset 0: partition -> values."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": topic_name("g"),
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 100,
        "error_cb": errors.append,
    })
    found: dict[int, list[bytes | None]] = {}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])

        def all_read() -> bool:
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                assert msg.error() is None, msg.error()
                found.setdefault(msg.partition(), []).append(msg.value())
            return sum(len(v) for v in found.values()) >= PARTITIONS

        wait_until(all_read, timeout=DEADLINE, what=f"{PARTITIONS} records")
        # Nothing more arrives (no duplicate, nothing from elsewhere).
        assert not consumer.consume(num_messages=10, timeout=1.0)
    finally:
        consumer.close()
    return found


def expected() -> dict[int, list[bytes | None]]:
    return {p: [b"value-%d" % p] for p in range(PARTITIONS)}


def test_two_thousand_partitions_under_a_limit_of_256_descriptors(
        start_broker: StartBroker, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", nofile=(LIMIT, LIMIT))
    line = broker.wait_for_log("file descriptors")
    assert f"limit={LIMIT}" in line and "raised_from" not in line  # hard = soft: no raise
    topic = topic_name("wide")
    errors: list[Any] = []
    with Peak(broker) as peak:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "error_cb": errors.append})
        futures = admin.create_topics([NewTopic(topic, PARTITIONS, 1)],
                                      request_timeout=DEADLINE, operation_timeout=DEADLINE)
        assert futures[topic].result(DEADLINE) is None
        acked = produce_one_each(broker.bootstrap, topic, errors)
        assert acked == {p: 0 for p in range(PARTITIONS)}
        assert read_all(broker.bootstrap, topic, errors) == expected()
        del admin
        for hard in (False, True):  # a clean restart, then kill -9 and recovery
            broker.restart(hard=hard)
            assert read_all(broker.bootstrap, topic, errors) == expected()
    assert not errors, errors[:5]
    assert peak.value < LIMIT, f"peak {peak.value} descriptors"
    said = [line for line in broker.stderr_text().splitlines() if BAD.search(line)]
    assert not said, said[:5]
    print(f"\n{PARTITIONS} partitions under RLIMIT_NOFILE {LIMIT}: peak {peak.value} "
          "descriptors in the broker")


def test_the_soft_limit_is_raised_to_the_hard_one(start_broker: StartBroker,
                                                  tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", nofile=(200, 4096))
    line = broker.wait_for_log("file descriptors")
    assert "limit=4096" in line and "raised_from=200" in line
    assert "segments_may_hold=2048" in line
    assert broker.proc is not None
    limits = Path(f"/proc/{broker.proc.pid}/limits").read_text()
    assert re.search(r"Max open files\s+4096\s+4096", limits), limits
