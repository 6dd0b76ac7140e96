"""KIP-932 share groups across a broker kill -9 (issue #14 (d)): a Java KafkaShareConsumer
(kafka-clients 4.4, the compat driver's ShareScenarios in `consume` mode) reads while the
broker is killed and restarted on the same port and data: no record whose acknowledgement the
broker confirmed is delivered again, and no record is lost.

The compat matrix cannot kill its Apache Kafka oracle, so this runs on Odradek only. Needs the
Java driver (`compat_tests/setup.sh`); skipped without it.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest
from it_support import (
    TIMEOUT,
    Rec,
    StartBroker,
    confluent_produce,
    create_topic,
    topic_name,
    wait_until,
)

from compat_tests.drivers import HERE as COMPAT

TARGET = COMPAT / "java" / "target"
CP_FILE = TARGET / "cp-clients-4.4.txt"
SHARE_CLASSES = TARGET / "share-classes" / "odradek" / "compat" / "ShareScenarios.class"

pytestmark = pytest.mark.skipif(not (CP_FILE.exists() and SHARE_CLASSES.exists()),
                                reason="Java share driver not built (compat_tests/setup.sh)")


class Consumer:
    """The Java consumer's output, read on a thread."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        cp = f"{TARGET / 'share-classes'}:{CP_FILE.read_text().strip()}"
        self.proc = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp,
             "odradek.compat.ShareScenarios", "consume", bootstrap, topic, group],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.got: list[tuple[str, int]] = []
        self.acked: list[tuple[int, list[str]]] = []  # (index into got when confirmed, values)
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            kind, _, rest = line.strip().partition(" ")
            with self.lock:
                if kind == "GOT":
                    value, count = rest.rsplit(" ", 1)
                    self.got.append((value, int(count)))
                elif kind == "ACKED":
                    self.acked.append((len(self.got), rest.split(",")))
                elif kind == "ERROR":
                    self.errors.append(rest)

    def values(self) -> set[str]:
        with self.lock:
            return {v for v, _ in self.got}

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        self.reader.join(10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def _produce(bootstrap: str, topic: str, values: list[str]) -> None:
    confluent_produce(bootstrap, topic, [Rec(None, v.encode(), partition=0) for v in values])


def test_no_accepted_record_redelivered_and_none_lost_across_kill_9(
        start_broker: StartBroker, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", {"offsets.topic.num.partitions": "3",
                                              "share.coordinator.state.topic.num.partitions": "3"})
    topic, group = topic_name(), topic_name("g")
    create_topic(broker.bootstrap, topic, 1)
    consumer = Consumer(broker.bootstrap, topic, group)
    try:
        # share.auto.offset.reset=latest: probes until the group delivers one.
        n = 0
        deadline = time.monotonic() + 60
        while not any(v.startswith("probe") for v in consumer.values()):
            assert time.monotonic() < deadline, "the share group never delivered a probe"
            _produce(broker.bootstrap, topic, [f"probe-{n}"])
            n += 1
            time.sleep(0.3)
        # Records keep coming, in chunks, while the broker is killed and restarted: the
        # consumer has records in flight and acknowledgements on the way at the kill.
        values = [f"r-{i}" for i in range(300)]

        def produce_all() -> None:
            for i in range(0, len(values), 10):
                _produce(broker.bootstrap, topic, values[i:i + 10])
                time.sleep(0.05)

        producer = threading.Thread(target=produce_all, daemon=True)
        producer.start()
        wait_until(lambda: len({v for v in consumer.values() if v.startswith("r-")}) >= 60,
                   TIMEOUT, "60 records consumed")
        broker.kill()
        time.sleep(1)
        broker.start()
        producer.join(TIMEOUT)
        wanted = set(values)
        wait_until(lambda: wanted <= consumer.values(), 90, "every record consumed")
        time.sleep(2)  # a redelivery of an accepted record would show up now
        with consumer.lock:
            got, acked = list(consumer.got), list(consumer.acked)
        # A record delivered after its acknowledgement was confirmed: redelivered although
        # accepted.
        again = [v for at, values in acked for v in values
                 if any(g == v for g, _ in got[at:])]
        assert again == [], f"accepted records delivered again: {again[:10]}"
        assert wanted <= {v for v, _ in got}
        redelivered = sum(1 for _, count in got if count > 1)
        assert len(acked) > 0
        print(f"{len(got)} deliveries of {len(wanted)} records, {redelivered} redelivered "
              f"(not confirmed before the kill), errors seen by the client: {len(consumer.errors)}")
    finally:
        consumer.close()
