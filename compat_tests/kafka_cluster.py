"""A three-node Apache Kafka KRaft cluster on loopback: the oracle for failover (issue #15).

Three JVM processes from the same Maven Central jars as the single-node oracle
(`compat_tests/brokers.py`): node 1 is broker and controller (the only KRaft voter), nodes 2
and 3 are brokers only. One voter keeps the metadata quorum alive whichever broker-only nodes
are stopped, so a test can take two of three replicas away and see the ISR shrink (and
`acks=all` answer NOT_ENOUGH_REPLICAS with `min.insync.replicas=2`) instead of losing the
controller. Each node has its own data dir, storage formatted with one cluster id.

    cluster = KafkaCluster(workdir)
    cluster.start()
    cluster.kill(2)      # SIGKILL node 2
    cluster.restart(2)   # same data dir, same ports
    cluster.stop()
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from compat_tests.brokers import (
    COMMON_OVERRIDES,
    KAFKA_VERSION,
    _cluster_id,
    free_port,
    java_classpath,
)

CONTROLLER_NODE = 1


class KafkaCluster:
    name = "apache-kafka-cluster"
    version = KAFKA_VERSION

    def __init__(self, workdir: Path, nodes: int = 3, overrides: dict[str, str] | None = None,
                 heap: str = "512m") -> None:
        self.workdir = workdir
        self.node_ids = list(range(1, nodes + 1))
        self.overrides = {**COMMON_OVERRIDES, **(overrides or {})}
        self.heap = heap
        self.ports = {n: free_port() for n in self.node_ids}
        self.controller_port = free_port()
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.taken_down: set[int] = set()  # nodes stopped or killed on purpose
        self.cluster_id = _cluster_id()

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.ports[n]}" for n in self.node_ids)

    def node_bootstrap(self, node: int) -> str:
        return f"127.0.0.1:{self.ports[node]}"

    def data_dir(self, node: int) -> Path:
        return self.workdir / f"kafka-node-{node}"

    def log_path(self, node: int) -> Path:
        return self.workdir / f"kafka-node-{node}.log"

    def _props(self, node: int) -> Path:
        data = self.data_dir(node)
        (data / "logs").mkdir(parents=True, exist_ok=True)
        port = self.ports[node]
        replicated = str(min(3, len(self.node_ids)))
        settings = {
            "node.id": str(node),
            "controller.quorum.voters": f"{CONTROLLER_NODE}@127.0.0.1:{self.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "log.dirs": str(data / "logs"),
            "num.partitions": "1",
            "default.replication.factor": replicated,
            "offsets.topic.replication.factor": replicated,
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": replicated,
            "transaction.state.log.min.isr": "2",
            "transaction.state.log.num.partitions": "3",
            "share.coordinator.state.topic.replication.factor": replicated,
            "share.coordinator.state.topic.min.isr": "2",
            # a dead follower leaves the ISR within seconds, not 30 s
            "replica.lag.time.max.ms": "5000",
            # a killed broker's session ends at the controller within 3 s, not 9 s
            "broker.session.timeout.ms": "3000",
            "broker.heartbeat.interval.ms": "500",
            # a restarted node gets its preferred leaderships back within seconds (300 s)
            "leader.imbalance.check.interval.seconds": "5",
            "leader.imbalance.per.broker.percentage": "0",
            **self.overrides,
        }
        if node == CONTROLLER_NODE:
            settings["process.roles"] = "broker,controller"
            settings["listeners"] = (f"PLAINTEXT://127.0.0.1:{port},"
                                     f"CONTROLLER://127.0.0.1:{self.controller_port}")
        else:
            settings["process.roles"] = "broker"
            settings["listeners"] = f"PLAINTEXT://127.0.0.1:{port}"
        props = data / "server.properties"
        props.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        return props

    def _java(self) -> list[str]:
        return ["java", f"-Xmx{self.heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-cp", java_classpath("clients-4.4")]

    def start(self, timeout: float = 120.0) -> None:
        for node in self.node_ids:
            props = self._props(node)
            with self.log_path(node).open("w") as log:
                fmt = subprocess.run([*self._java(), "kafka.tools.StorageTool", "format", "-t",
                                      self.cluster_id, "-c", str(props)],
                                     stdout=log, stderr=subprocess.STDOUT, timeout=120)
            if fmt.returncode != 0:
                raise RuntimeError(f"kafka storage format of node {node} failed; see "
                                   f"{self.log_path(node)}")
        for node in self.node_ids:
            self._launch(node)
        self.wait_for_brokers(len(self.node_ids), timeout)

    def _launch(self, node: int) -> None:
        log = self.log_path(node).open("a")
        self.procs[node] = subprocess.Popen(
            [*self._java(), "kafka.Kafka", str(self.data_dir(node) / "server.properties")],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

    def wait_for_brokers(self, count: int, timeout: float = 120.0) -> None:
        """Until Metadata (from any live node) lists `count` brokers."""
        from confluent_kafka.admin import AdminClient

        live = ",".join(self.node_bootstrap(n) for n in self.node_ids if self.alive(n))
        admin = AdminClient({"bootstrap.servers": live, "log_level": 0})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node, proc in self.procs.items():
                if proc.poll() is not None and node not in self.taken_down:
                    raise RuntimeError(f"kafka node {node} exited with {proc.returncode}; "
                                       f"see {self.log_path(node)}")
            try:
                if len(admin.list_topics(timeout=2).brokers) == count:
                    return
            except Exception:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the cluster did not list {count} brokers within {timeout}s")

    def alive(self, node: int) -> bool:
        proc = self.procs.get(node)
        return proc is not None and proc.poll() is None

    def kill(self, node: int) -> None:
        """SIGKILL: no controlled shutdown, the controller notices when its session ends."""
        self._signal(node, signal.SIGKILL)

    def stop_node(self, node: int) -> None:
        """SIGTERM: Kafka's controlled shutdown moves the node's leaderships first."""
        self._signal(node, signal.SIGTERM)

    def _signal(self, node: int, sig: int) -> None:
        proc = self.procs[node]
        self.taken_down.add(node)
        if proc.poll() is None:
            proc.send_signal(sig)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)

    def restart(self, node: int, timeout: float = 120.0) -> None:
        if self.alive(node):
            raise RuntimeError(f"node {node} is running")
        self.taken_down.discard(node)
        self._launch(node)
        self.wait_for_brokers(sum(self.alive(n) for n in self.node_ids), timeout)

    def stop(self) -> None:
        for node in reversed(self.node_ids):  # the controller last
            if node in self.procs:
                self.stop_node(node)

    def __enter__(self) -> KafkaCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
