"""Three-broker targets for the upstream suites' `--brokers 3` modes (issue #15).

`odradek`: one Odradek process with `simulated.brokers=3` (docs/cluster.md), each broker on a
port chosen here so the bootstrap list names all three. `kafka`: compat_tests/kafka_cluster.py's
three-node Apache Kafka 4.4 KRaft cluster. Both with replication factor 3 for auto-created and
internal topics and `transaction.state.log.min.isr=2`, as KafkaCluster configures itself.

`kafka_path_shim` makes a stand-in for a Kafka release directory (`KAFKA_PATH`) out of the
Maven jars compat_tests/setup.sh resolved: librdkafka's tests build and run their Java helpers
(tests/java: TransactionProducerCli for 0098) with `$KAFKA_PATH/libs/kafka-clients-*.jar` and
`$KAFKA_PATH/bin/kafka-run-class.sh`, and need nothing else of a release.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from compat_tests.brokers import OdradekBroker, free_port, java_classpath
from compat_tests.kafka_cluster import KafkaCluster

BROKERS = 3
# What KafkaCluster sets for the internal topics, given to Odradek too (its defaults already
# cap the internal replication factors at the broker count).
REPLICATED = {
    "default.replication.factor": str(BROKERS),
    "offsets.topic.replication.factor": str(BROKERS),
    "transaction.state.log.replication.factor": str(BROKERS),
    "transaction.state.log.min.isr": "2",
}


class OdradekCluster(OdradekBroker):
    """Odradek `--brokers 3`; `bootstrap` lists every broker's listener."""

    name = "odradek-3-brokers"

    def __init__(self, workdir: Path, overrides: dict[str, str] | None = None) -> None:
        self.ports = [free_port() for _ in range(BROKERS)]
        data = Path(tempfile.mkdtemp(prefix="compat-odradek3-", dir=workdir))
        super().__init__(data, workdir / "broker-odradek.log",
                         {**REPLICATED, **(overrides or {}), "simulated.brokers": str(BROKERS),
                          # the first broker serves the configured listener, the others these
                          "listeners": f"PLAINTEXT://127.0.0.1:{self.ports[0]}",
                          "simulated.broker.ports": ",".join(map(str, self.ports))})

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)


class KafkaClusterTarget:
    """KafkaCluster with the start/stop/bootstrap/log_path of compat_tests.brokers.Broker."""

    name = "apache-kafka-3-nodes"

    def __init__(self, workdir: Path, overrides: dict[str, str] | None = None) -> None:
        self.cluster = KafkaCluster(workdir, BROKERS, {**REPLICATED, **(overrides or {})})
        self.version = self.cluster.version
        self.log_path = workdir / "kafka-node-*.log"

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def start(self) -> None:
        self.cluster.start()

    def stop(self) -> None:
        self.cluster.stop()


def make_three_brokers(target: str, workdir: Path,
                       overrides: dict[str, str] | None = None) -> OdradekCluster | KafkaClusterTarget:
    if target == "odradek":
        return OdradekCluster(workdir, overrides)
    if target == "kafka":
        return KafkaClusterTarget(workdir, overrides)
    raise ValueError(f"unknown target {target!r}")


def kafka_path_shim(workdir: Path) -> Path:
    """A directory with libs/kafka-clients-<v>.jar and bin/kafka-run-class.sh over the 4.4 jars."""
    classpath = java_classpath("clients-4.4")
    root = workdir / "kafka-path"
    (root / "libs").mkdir(parents=True, exist_ok=True)
    (root / "bin").mkdir(exist_ok=True)
    clients = next(j for j in classpath.split(":") if Path(j).name.startswith("kafka-clients-"))
    link = root / "libs" / Path(clients).name
    if not link.exists():
        link.symlink_to(clients)
    script = root / "bin" / "kafka-run-class.sh"
    # run-class.sh passes the test classes' dir in CLASSPATH, then the class and its arguments.
    script.write_text(f'#!/bin/sh\nexec java -cp "$CLASSPATH:{classpath}" "$@"\n')
    script.chmod(0o755)
    return root
