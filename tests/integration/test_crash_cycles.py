"""kill -9 cycles during produce, group commits and transactions (issue #10).

One broker on one data dir is killed with SIGKILL at a random moment and restarted, cycle
after cycle, while three workloads run against it without pause (their clients reconnect):

- two idempotent producers (confluent-kafka, acks=all), each value ``<producer>:<n>`` unique,
  recording every acknowledged (value, partition, offset);
- a consumer group reading that topic and committing offsets synchronously, recording every
  acknowledged commit;
- a transactional producer running small transactions, each committed or aborted at random,
  recording which commits and aborts were acknowledged.

After each restart the group's committed offsets are read back: never below an acknowledged
commit (so never going backwards across a restart) and never beyond the log end. After the
last cycle the workloads stop, the broker is killed once more and restarted, and everything is
read back with read_committed and read_uncommitted:

- 0 acknowledged records lost: each acknowledged (partition, offset) holds its value;
- 0 duplicates: each idempotent producer value appears once;
- every acknowledged committed transaction is visible whole; no record of an acknowledged
  aborted transaction is visible under read_committed; a transaction whose outcome the client
  never learned (the kill came first) is visible whole or not at all;
- no fatal idempotence error in the producers, no traceback in the broker's stderr.

``ODRADEK_CRASH_CYCLES`` sets the number of cycles (default 10, about a minute; the long run
is 100). ``ODRADEK_CRASH_SEED`` fixes the kill moments.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from it_support import BrokerProcess, StartBroker, create_topic, wait_until

CYCLES = int(os.environ.get("ODRADEK_CRASH_CYCLES", "10"))
SEED = int(os.environ.get("ODRADEK_CRASH_SEED", str(random.SystemRandom().randrange(1 << 31))))
IDEM_TOPIC, TXN_TOPIC, GROUP = "crash-idem", "crash-txn", "crash-group"
IDEM_PARTITIONS, TXN_PARTITIONS = 3, 2
KILL_AFTER = (0.5, 3.0)  # seconds of workload before the kill, drawn per cycle
# Records per second per idempotent producer: the log (which every restart recovers, kill -9
# leaving no clean-shutdown point) grows by about 2 x 400 x 40 bytes per second.
RATE = 400
READ_TIMEOUT = 300.0

pytestmark = pytest.mark.timeout(120 + CYCLES * 30)

CLIENT_COMMON: dict[str, Any] = {
    "reconnect.backoff.ms": 20,
    "reconnect.backoff.max.ms": 300,
    "retry.backoff.ms": 20,
    "retry.backoff.max.ms": 300,
    "socket.connection.setup.timeout.ms": 5000,
    "log_level": 0,  # the kills make librdkafka log every lost connection
}


@dataclass
class Ledger:
    """What the clients were told, shared by the workload threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    acked: list[tuple[bytes, int, int]] = field(default_factory=list)  # value, partition, offset
    failed: int = 0
    fatal: list[str] = field(default_factory=list)
    commits: dict[int, int] = field(default_factory=dict)  # partition -> highest acked commit
    commit_count: int = 0
    txn_committed: dict[str, int] = field(default_factory=dict)  # txn name -> record count
    txn_aborted: dict[str, int] = field(default_factory=dict)
    txn_unknown: dict[str, int] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    txn_fatal: list[str] = field(default_factory=list)  # reported, not asserted (see docs)


class Workload:
    def __init__(self, bootstrap: str, ledger: Ledger, seed: int) -> None:
        self.bootstrap = bootstrap
        self.ledger = ledger
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self.idempotent, args=(name,), name=name, daemon=True)
            for name in ("p0", "p1")
        ]
        self.threads.append(threading.Thread(target=self.group, name="group", daemon=True))
        self.threads.append(threading.Thread(target=self.transactions, name="txn", daemon=True))

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def finish(self, timeout: float = 120.0) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout)
            assert not t.is_alive(), f"workload thread {t.name} did not stop"

    # -- idempotent producers ---------------------------------------------------------------

    def idempotent(self, name: str) -> None:
        ledger = self.ledger
        producer = Producer({
            **CLIENT_COMMON, "bootstrap.servers": self.bootstrap, "acks": "all",
            "enable.idempotence": True, "linger.ms": 2, "message.timeout.ms": 300_000,
            "max.in.flight.requests.per.connection": 5,
            "error_cb": lambda err: self._error(name, err),
        })
        outstanding = 0

        def on_delivery(err: KafkaError | None, msg: Any) -> None:
            nonlocal outstanding
            outstanding -= 1
            with ledger.lock:
                if err is None:
                    ledger.acked.append((msg.value(), msg.partition(), msg.offset()))
                else:
                    ledger.failed += 1
                    ledger.errors[f"{name} delivery: {err.name()}"] += 1

        n = 0
        started = time.monotonic()
        while not self.stop.is_set():
            ahead = n - (time.monotonic() - started) * RATE
            if ahead > 0:
                producer.poll(min(ahead / RATE, 0.05))  # serves callbacks while pacing
                continue
            if outstanding >= 500:
                producer.poll(0.05)
                continue
            try:
                producer.produce(IDEM_TOPIC, key=b"k%d" % (n % 13), value=f"{name}:{n}".encode(),
                                 on_delivery=on_delivery)
                outstanding += 1
                n += 1
            except BufferError:
                producer.poll(0.05)
            producer.poll(0)
        remaining = producer.flush(120)
        with ledger.lock:
            if remaining:
                ledger.fatal.append(f"{name}: {remaining} records still in flight at the end")

    def _error(self, name: str, err: KafkaError) -> None:
        with self.ledger.lock:
            if err.fatal():
                self.ledger.fatal.append(f"{name}: {err}")
            self.ledger.errors[f"{name}: {err.name()}"] += 1

    # -- consumer group ---------------------------------------------------------------------

    def group(self) -> None:
        ledger = self.ledger
        consumer = Consumer({
            **CLIENT_COMMON, "bootstrap.servers": self.bootstrap, "group.id": GROUP,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "session.timeout.ms": 10_000, "heartbeat.interval.ms": 500,
            "fetch.wait.max.ms": 100,
        })
        consumer.subscribe([IDEM_TOPIC])
        last_commit = time.monotonic()
        try:
            while not self.stop.is_set():
                msg = consumer.poll(0.1)
                if msg is not None and msg.error() is not None:
                    with ledger.lock:
                        ledger.errors[f"consumer: {msg.error().name()}"] += 1
                if time.monotonic() - last_commit < 0.2:
                    continue
                last_commit = time.monotonic()
                try:
                    done = consumer.commit(asynchronous=False)
                except KafkaException as e:
                    with ledger.lock:
                        ledger.errors[f"commit: {e.args[0].name()}"] += 1
                    continue
                with ledger.lock:
                    ledger.commit_count += 1
                    for tp in done or []:
                        if tp.error is None and tp.offset >= 0:
                            ledger.commits[tp.partition] = max(
                                ledger.commits.get(tp.partition, -1), tp.offset)
        finally:
            consumer.close()

    # -- transactions -----------------------------------------------------------------------

    def _txn_producer(self) -> Producer:
        producer = Producer({
            **CLIENT_COMMON, "bootstrap.servers": self.bootstrap,
            "transactional.id": "crash-txn-producer", "transaction.timeout.ms": 10_000,
            "message.timeout.ms": 10_000, "linger.ms": 2,
        })
        deadline = time.monotonic() + 120
        while True:
            try:
                producer.init_transactions(10)
                return producer
            except KafkaException as e:
                if time.monotonic() > deadline:
                    raise
                with self.ledger.lock:
                    self.ledger.errors[f"init_transactions: {e.args[0].name()}"] += 1

    def transactions(self) -> None:
        ledger = self.ledger
        producer = self._txn_producer()
        n = 0
        while not self.stop.is_set():
            name = f"txn{n}"
            n += 1
            size = self.rng.randint(1, 8)
            commit = self.rng.random() < 0.6
            outcome = "unknown"
            try:
                producer.begin_transaction()
                for i in range(size):
                    producer.produce(TXN_TOPIC, key=name.encode(),
                                     value=f"{name}:{i}:{size}".encode(),
                                     partition=i % TXN_PARTITIONS)
                if commit:
                    producer.commit_transaction(15)
                    outcome = "committed"
                else:
                    producer.abort_transaction(15)
                    outcome = "aborted"
            except KafkaException as e:
                err = e.args[0]
                with ledger.lock:
                    ledger.errors[f"txn: {err.name()}"] += 1
                # The outcome stays unknown; get the producer back to a clean state.
                try:
                    if err.fatal():
                        with ledger.lock:
                            ledger.txn_fatal.append(f"{name}: {err}")
                        raise KafkaException(err)
                    producer.abort_transaction(15)
                except KafkaException:
                    producer = self._txn_producer()  # fences the old one, aborting its txn
            with ledger.lock:
                {"committed": ledger.txn_committed, "aborted": ledger.txn_aborted,
                 "unknown": ledger.txn_unknown}[outcome][name] = size


# --------------------------------------------------------------------------- read-back


def read_all(bootstrap: str, topic: str, partitions: int,
             isolation: str) -> list[tuple[bytes, int, int]]:
    """Every record (value, partition, offset) from offset 0 to the end of each partition."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
        "enable.auto.commit": False, "enable.partition.eof": True,
        "isolation.level": isolation, "fetch.wait.max.ms": 100,
    })
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[tuple[bytes, int, int]] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + READ_TIMEOUT
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"{topic}: only partitions {at_end} reached the end"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                at_end.add(msg.partition())
                continue
            at_end.discard(msg.partition())
            out.append((msg.value(), msg.partition(), msg.offset()))
        return out
    finally:
        consumer.close()


def committed_and_ends(bootstrap: str) -> tuple[dict[int, int], dict[int, int]]:
    """The group's committed offsets and the log end offsets of the idempotent topic."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "enable.auto.commit": False})
    try:
        tps = [TopicPartition(IDEM_TOPIC, p) for p in range(IDEM_PARTITIONS)]
        committed = {tp.partition: tp.offset for tp in consumer.committed(tps, timeout=10)}
        ends = {p: consumer.get_watermark_offsets(TopicPartition(IDEM_TOPIC, p), timeout=10)[1]
                for p in range(IDEM_PARTITIONS)}
        return committed, ends
    finally:
        consumer.close()


def broker_ready(bootstrap: str) -> bool:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5)
    return IDEM_TOPIC in md.topics and md.topics[IDEM_TOPIC].error is None


# --------------------------------------------------------------------------- the test


def test_kill_9_cycles(start_broker: StartBroker, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    broker: BrokerProcess = start_broker(
        tmp_path / "data", {"group.initial.rebalance.delay.ms": "0"})
    create_topic(broker.bootstrap, IDEM_TOPIC, IDEM_PARTITIONS)
    create_topic(broker.bootstrap, TXN_TOPIC, TXN_PARTITIONS)
    ledger = Ledger()
    workload = Workload(broker.bootstrap, ledger, SEED)
    workload.start()
    seen_commits: dict[int, int] = {}
    commits_per_cycle: list[int] = []  # acknowledged group commits in each broker life
    anomalies: list[str] = []
    started = time.monotonic()
    for cycle in range(CYCLES):
        # Let the workload make progress in this broker's life, then kill at a random moment.
        acked_before = len(ledger.acked)
        wait_until(lambda n=acked_before: len(ledger.acked) > n, timeout=60,
                   what=f"acks in cycle {cycle}")
        time.sleep(rng.uniform(*KILL_AFTER))  # picks the kill moment, not a synchronisation
        broker.kill()
        with ledger.lock:
            acked_commits = dict(ledger.commits)
            commits_per_cycle.append(ledger.commit_count - sum(commits_per_cycle))
        broker.start()
        wait_until(lambda: broker_ready(broker.bootstrap), timeout=60, what="broker ready")
        committed, ends = wait_until(lambda: committed_and_ends(broker.bootstrap), timeout=60,
                                     what="committed offsets")
        for p in range(IDEM_PARTITIONS):
            c = committed.get(p, -1001)
            if c >= 0 and c > ends[p]:
                anomalies.append(f"cycle {cycle}: partition {p} committed {c} > log end {ends[p]}")
            if acked_commits.get(p, -1) > max(c, -1):
                anomalies.append(f"cycle {cycle}: partition {p} committed {c} < acknowledged "
                                 f"commit {acked_commits[p]}")
            if seen_commits.get(p, -1) > max(c, -1):
                anomalies.append(f"cycle {cycle}: partition {p} committed offset went back from "
                                 f"{seen_commits[p]} to {c}")
            seen_commits[p] = max(seen_commits.get(p, -1), c)
    workload.finish()
    broker.kill()
    broker.start()
    wait_until(lambda: broker_ready(broker.bootstrap), timeout=60, what="broker ready")
    elapsed = time.monotonic() - started

    idem_committed = read_all(broker.bootstrap, IDEM_TOPIC, IDEM_PARTITIONS, "read_committed")
    idem_uncommitted = read_all(broker.bootstrap, IDEM_TOPIC, IDEM_PARTITIONS, "read_uncommitted")
    txn_committed = read_all(broker.bootstrap, TXN_TOPIC, TXN_PARTITIONS, "read_committed")
    txn_uncommitted = read_all(broker.bootstrap, TXN_TOPIC, TXN_PARTITIONS, "read_uncommitted")

    stored = {(p, o): v for v, p, o in idem_committed}
    lost = [a for a in ledger.acked if stored.get((a[1], a[2])) != a[0]]
    counts = Counter(v for v, _, _ in idem_committed)
    duplicates = {v: n for v, n in counts.items() if n > 1}
    if sorted(idem_uncommitted) != sorted(idem_committed):
        anomalies.append("the idempotent topic reads differently with read_uncommitted")

    visible = Counter(v.split(b":")[0].decode() for v, _, _ in txn_committed)
    partial = {t: (n, visible[t]) for t, n in {**ledger.txn_committed, **ledger.txn_unknown,
                                                 **ledger.txn_aborted}.items()
               if visible[t] not in (0, n)}
    committed_missing = {t: n for t, n in ledger.txn_committed.items() if visible[t] != n}
    aborted_visible = {t: visible[t] for t in ledger.txn_aborted if visible[t]}
    txn_dups = [v for v, n in Counter(v for v, _, _ in txn_committed).items() if n > 1]
    if len(txn_uncommitted) < len(txn_committed):
        anomalies.append("read_uncommitted returns fewer transactional records than read_committed")
    if "Traceback" in broker.stderr_text():
        anomalies.append("traceback in the broker's stderr")

    report = (
        f"seed {SEED}: {CYCLES} cycles in {elapsed:.0f}s; idempotent records acked "
        f"{len(ledger.acked)}, failed {ledger.failed}, stored {len(idem_committed)}, lost "
        f"{len(lost)}, duplicates {len(duplicates)}; commits acked {ledger.commit_count}; "
        f"transactions committed {len(ledger.txn_committed)}, aborted {len(ledger.txn_aborted)}, "
        f"unknown {len(ledger.txn_unknown)} (visible "
        f"{sum(1 for t in ledger.txn_unknown if visible[t])}); partial {len(partial)}, committed "
        f"missing {len(committed_missing)}, aborted visible {len(aborted_visible)}, duplicate "
        f"transactional records {len(txn_dups)}; fatal client errors {len(ledger.fatal)}; "
        f"fatal transactional producer errors {ledger.txn_fatal}; "
        f"anomalies {len(anomalies)}; group commits per cycle {commits_per_cycle}; client errors {dict(ledger.errors.most_common(8))}"
    )
    print(report)
    problems = {
        "lost": lost[:5], "duplicates": list(duplicates.items())[:5], "partial": partial,
        "committed missing": committed_missing, "aborted visible": aborted_visible,
        "transactional duplicates": txn_dups[:5], "fatal": ledger.fatal[:5],
        "anomalies": anomalies[:10],
    }
    assert not any(problems.values()), f"{report}\n{problems}"
    assert ledger.acked and ledger.txn_committed and ledger.commit_count, report
