"""`python -m compat_tests.run --suite cluster --target odradek|kafka`: failover rows (issue #15).

The runner starts three brokers: Odradek `--brokers 3` with its admin HTTP endpoint (faults
through `ClusterAdmin`), or the three-process Apache Kafka 4.4 KRaft cluster of
compat_tests/kafka_cluster.py (faults by signal; node 1 is the only KRaft voter and is never
killed). Drivers run one at a time, since a fault hits every client of the cluster.

The phase protocol (the same for every language): the driver asks the runner for a step by
printing one JSON line `{"cluster": STEP, "scenario": S, ...}` on stdout and reads the answer,
one JSON line, on stdin: `{"ok": true, ...}` or `{"ok": false, "error": "..."}`. Steps:

- `setup`: the runner creates `topic` (RF=3, min.insync.replicas=2, 3 partitions), waits for
  a full ISR, and answers `topic`, `partition` (the one the scenario's fault is aimed at),
  and for failover-group-coordinator a `group` whose coordinator is not node 1 plus the
  `count` records it produced into the topic.
- `kill`: failover-acks-all: the leader of `partition`; failover-not-enough-replicas: its two
  followers, answered once the ISR is the leader alone; failover-group-coordinator: the
  group's coordinator. Answers `killed` (node ids).
- `restore`: every killed node back, answered once all partitions have a full ISR.
- `verify`: failover-acks-all sends `acked` (the acknowledged values, decimal strings): the
  runner reads the topic back and answers `ok` false with the lost / duplicated ones;
  failover-group-coordinator sends `values` (the records read): the runner checks all were
  read and the group's committed offsets reach each partition's end.

The driver then prints its row as in the other suites; the runner restores any node still
down before the next scenario. Odradek: `kill` is `ClusterAdmin.kill` where the broker has it
(issue #15's failure verbs), else `stop` (a controlled shutdown).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from compat_tests import failover_check as fc
from compat_tests.brokers import OdradekBroker
from compat_tests.drivers import Driver

CONTROLLER = 1  # never killed: Kafka's only voter; Odradek's controller is not a broker
PARTITIONS = 3
GROUP_RECORDS = 60
ADMIN_URL = re.compile(r"admin http endpoint.*url=(http://\S+)")


class OdradekCluster:
    """`odradek serve --brokers 3` with the admin endpoint; the KafkaCluster interface."""

    name = "odradek-cluster"

    def __init__(self, workdir: Path) -> None:
        data = workdir / "odradek-data"
        data.mkdir(parents=True, exist_ok=True)
        # The session, lag and leader-balancing settings of compat_tests/kafka_cluster.py's
        # Kafka cluster: a killed broker is fenced after 3 s, its leaderships come back 5 s
        # after it returns.
        self.server = OdradekBroker(data, workdir / "broker-odradek.log", {
            "simulated.brokers": "3", "admin.http.port": "0",
            "broker.session.timeout.ms": "3000", "replica.lag.time.max.ms": "5000",
            "leader.imbalance.check.interval.seconds": "5"})
        self.version = self.server.version
        self.node_ids = [1, 2, 3]
        self.down: set[int] = set()
        self.kill_verb = "stop"
        self._bootstrap = ""

    def start(self) -> None:
        from odradek.client.cluster import ClusterAdmin

        self.server.start()
        url = ""
        deadline = time.monotonic() + 10
        while not url and time.monotonic() < deadline:
            m = ADMIN_URL.search(self.server.log_path.read_text(errors="replace"))
            url = m.group(1) if m else ""
            time.sleep(0.1)
        if not url:
            raise RuntimeError(f"no admin http endpoint in {self.server.log_path}")
        self.admin = ClusterAdmin(url)
        brokers = self.admin.describe()["brokers"]
        self.node_ids = [int(b["node_id"]) for b in brokers]
        self._bootstrap = ",".join(b["endpoints"][0].split("://")[1] for b in brokers)
        self.kill_verb = "kill" if hasattr(self.admin, "kill") else "stop"

    @property
    def bootstrap(self) -> str:
        return self._bootstrap

    def alive(self, node: int) -> bool:
        return node not in self.down

    def kill(self, node: int) -> None:
        getattr(self.admin, self.kill_verb)(node)
        self.down.add(node)

    def restart(self, node: int, timeout: float = 120.0) -> None:
        self.admin.start(node)
        self.down.discard(node)

    def stop(self) -> None:
        self.server.stop()

    def log_dirs(self) -> list[Path]:
        return [self.server.data_dir]


class KafkaTarget:
    """compat_tests/kafka_cluster.KafkaCluster, with what the runner reports."""

    def __init__(self, workdir: Path) -> None:
        from compat_tests.kafka_cluster import KafkaCluster

        self.cluster = KafkaCluster(workdir)
        self.name, self.version = self.cluster.name, self.cluster.version
        self.node_ids = self.cluster.node_ids
        self.kill_verb = "SIGKILL"

    def start(self) -> None:
        self.cluster.start()

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def alive(self, node: int) -> bool:
        return self.cluster.alive(node)

    def kill(self, node: int) -> None:
        self.cluster.kill(node)

    def restart(self, node: int, timeout: float = 120.0) -> None:
        self.cluster.restart(node, timeout)

    def stop(self) -> None:
        self.cluster.stop()

    def log_dirs(self) -> list[Path]:
        return [self.cluster.data_dir(n) / "logs" for n in self.node_ids]


Target = OdradekCluster | KafkaTarget


def make(target: str, workdir: Path) -> Target:
    return OdradekCluster(workdir) if target == "odradek" else KafkaTarget(workdir)


class Conductor:
    """Answers one driver's steps; remembers each scenario's topic, partition and kills."""

    def __init__(self, cluster: Target, prefix: str) -> None:
        self.cluster = cluster
        self.prefix = prefix
        self.state: dict[str, dict[str, Any]] = {}
        self.log: list[str] = []

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        step, scenario = str(request.get("cluster")), str(request.get("scenario"))
        started = time.monotonic()
        try:
            handler = getattr(self, f"_{step}", None)
            if handler is None:
                raise ValueError(f"unknown step {step!r}")
            reply: dict[str, Any] = {"ok": True, **handler(scenario, request)}
        except Exception as exc:  # the driver reports the row FAIL with this
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        self.log.append(f"{scenario} {step} ({time.monotonic() - started:.1f}s): "
                        f"{ {k: v for k, v in reply.items() if k not in ('ok',)} }")
        print(f"  cluster {self.log[-1]}"[:300], file=sys.stderr, flush=True)
        return reply

    def _setup(self, scenario: str, request: dict[str, Any]) -> dict[str, Any]:
        self.restore_all()
        topic = f"{self.prefix}-{scenario}-{uuid.uuid4().hex[:6]}"
        fc._create(self.cluster, topic, PARTITIONS)
        parts = fc._partitions(self.cluster, topic)
        st: dict[str, Any] = {"topic": topic, "killed": []}
        if scenario == "failover-not-enough-replicas":
            # the leader must be the node that stays up; placement spreads leaders, and a
            # topic of 3 partitions over 3 nodes has one led by each
            st["partition"] = next(p for p, m in sorted(parts.items()) if m.leader == CONTROLLER)
        else:
            st["partition"] = next(p for p, m in sorted(parts.items()) if m.leader != CONTROLLER)
        if scenario == "failover-group-coordinator":
            st["group"], st["coordinator"] = fc._away_from(self.cluster, CONTROLLER,
                                                           f"{self.prefix}-grp", 0)
            st["count"] = GROUP_RECORDS
            _produce(self.cluster.bootstrap, topic, GROUP_RECORDS)
        self.state[scenario] = st
        return {k: v for k, v in st.items() if k in ("topic", "partition", "group", "count")}

    def _kill(self, scenario: str, request: dict[str, Any]) -> dict[str, Any]:
        st = self.state[scenario]
        topic, partition = st["topic"], st["partition"]
        meta = fc._partitions(self.cluster, topic)[partition]
        if scenario == "failover-acks-all":
            victims = [meta.leader]
        elif scenario == "failover-not-enough-replicas":
            victims = [n for n in meta.replicas if n != meta.leader]
        elif scenario == "failover-group-coordinator":
            victims = [st["coordinator"]]
        else:
            raise ValueError(f"no kill for {scenario}")
        for node in victims:
            self.cluster.kill(node)
            st["killed"].append(node)
        if scenario == "failover-not-enough-replicas":
            fc._wait(lambda: fc._partitions(self.cluster, topic)[partition].isrs == [meta.leader],
                     60, f"the ISR of {topic}-{partition} shrunk to [{meta.leader}]")
        return {"killed": victims, "how": self.cluster.kill_verb}

    def _restore(self, scenario: str, request: dict[str, Any]) -> dict[str, Any]:
        back = self.restore_all()
        st = self.state.get(scenario)
        if st is not None:
            topic = st["topic"]
            fc._wait(lambda: all(len(p.isrs) == 3 for p in fc._partitions(self.cluster, topic).values()),
                     90, f"{topic}: a full ISR again")
        return {"restarted": back}

    def _verify(self, scenario: str, request: dict[str, Any]) -> dict[str, Any]:
        st = self.state[scenario]
        topic = st["topic"]
        if scenario == "failover-acks-all":
            acked = [str(v) for v in request.get("acked", [])]
            if not acked:
                return {"ok": False, "error": "no acknowledged record reported"}
            got = fc._read_all(self.cluster, topic, PARTITIONS, len(acked))
            read = [v.decode() for values in got.values() for v in values]
            lost = sorted(set(acked) - set(read), key=int)
            dups = sorted({v for v in read if read.count(v) > 1}, key=int)
            detail = (f"{len(acked)} acknowledged, {len(read)} read back; killed "
                      f"{st['killed']} ({self.cluster.kill_verb})")
            if lost or dups:
                return {"ok": False, "error": f"{detail}: lost {lost[:10]} ({len(lost)}), "
                                              f"duplicated {dups[:10]} ({len(dups)})"}
            return {"detail": detail + ": none lost, none duplicated"}
        if scenario == "failover-group-coordinator":
            values = sorted({str(v) for v in request.get("values", [])})
            expected = sorted(str(i) for i in range(st["count"]))
            if values != expected:
                return {"ok": False, "error": f"read {len(values)} distinct records of "
                                              f"{len(expected)}"}
            committed = _committed(self.cluster.bootstrap, st["group"], topic)
            ends = _end_offsets(self.cluster.bootstrap, topic)
            if committed != ends:
                return {"ok": False, "error": f"committed {committed}, end offsets {ends}"}
            return {"detail": f"coordinator node {st['coordinator']} killed "
                              f"({self.cluster.kill_verb}); {len(values)} read, committed {committed}"}
        raise ValueError(f"no verify for {scenario}")

    def restore_all(self) -> list[int]:
        back = [n for n in self.cluster.node_ids if not self.cluster.alive(n)]
        for node in back:
            self.cluster.restart(node)
        return back


def _produce(bootstrap: str, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 0})
    for i in range(count):
        producer.produce(topic, value=str(i).encode(), partition=i % PARTITIONS)
    if producer.flush(30):
        raise RuntimeError(f"{topic}: the setup records were not acknowledged")


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(PARTITIONS)])
    result = admin.list_consumer_group_offsets([request])[group].result(30)
    return {tp.partition: tp.offset for tp in result.topic_partitions}


def _end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"ends-{uuid.uuid4().hex[:6]}",
                         "log_level": 0})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(PARTITIONS)}
    finally:
        consumer.close()


def command(driver: Driver) -> list[str]:
    """The cluster suite's argv of `driver` (before --bootstrap etc.)."""
    py = [sys.executable, "-m", "compat_tests.python.cluster", "--client"]
    if driver.family == "Python" or driver.name == "confluent-kafka":
        return [*py, driver.name]
    return driver.command()


def talk(proc: subprocess.Popen[bytes], conductor: Conductor, request: dict[str, Any]) -> None:
    import json

    reply = conductor.answer(request)
    assert proc.stdin is not None
    try:
        proc.stdin.write((json.dumps(reply) + "\n").encode())
        proc.stdin.flush()
    except (BrokenPipeError, OSError):
        pass
