"""The drivers the runner knows: how to start each one and which scenarios it implements."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from compat_tests.scenarios import (
    BROKER_SCENARIOS,
    CLI_SCENARIOS,
    CLUSTER_SCENARIOS,
    CONSUMER_PROTOCOL_SCENARIOS,
    FETCH_SESSION_SCENARIOS,
    MIGRATION_SCENARIOS,
    SCENARIOS,
    SECURITY_SCENARIOS,
    SHARE_SCENARIOS,
)

HERE = Path(__file__).resolve().parent
# Security rows only the drivers that implement them claim (their security_scenarios say so).
QUOTA_ROWS = ("quota-throttle",)
# The cluster suite's rows, for the drivers that implement them (kcat and java-4.1 do not).
CLUSTER_ROWS = tuple(CLUSTER_SCENARIOS)


@dataclass(frozen=True)
class Driver:
    name: str  # the client column in the report
    family: str
    scenarios: tuple[str, ...] = tuple(SCENARIOS)
    extra_scenarios: tuple[str, ...] = field(default=())
    # The rows of `run.py --suite security` (its own broker, see compat_tests/security_setup.py).
    security_scenarios: tuple[str, ...] = tuple(s for s in SECURITY_SCENARIOS if s not in QUOTA_ROWS)
    # The rows of `run.py --suite cluster` (three brokers, compat_tests/cluster_suite.py).
    cluster_scenarios: tuple[str, ...] = ()

    def all_scenarios(self) -> tuple[str, ...]:
        return self.scenarios + self.extra_scenarios

    def suite_scenarios(self, suite: str) -> tuple[str, ...]:
        if suite == "cluster":
            return self.cluster_scenarios
        return self.security_scenarios if suite == "security" else self.all_scenarios()

    def command(self) -> list[str]:
        """argv before --bootstrap/--scenario/--topic-prefix; raises if the driver isn't built."""
        py = [sys.executable, "-m"]
        if self.name == "confluent-kafka":
            return [*py, "compat_tests.python.confluent"]
        if self.name == "kafka-python":
            return [*py, "compat_tests.python.kafka_python"]
        if self.name == "aiokafka":
            return [*py, "compat_tests.python.aiokafka_driver"]
        if self.name == "kcat":
            if not (shutil.which("kcat") or shutil.which("kafkacat")):
                raise RuntimeError("kcat not installed (apt-get install kcat)")
            return [*py, "compat_tests.python.kcat"]
        if self.name.startswith("java-"):
            cp_name = {"java-3.9": "clients-3.9", "java-4.1": "clients-4.1", "java-4.4": "clients-4.4"}[self.name]
            target = HERE / "java" / "target"
            cp_file = target / f"cp-{cp_name}.txt"
            if not (target / "classes").is_dir() or not cp_file.exists():
                raise RuntimeError("Java driver not built: run compat_tests/setup.sh")
            cp = f"{target / 'classes'}:{cp_file.read_text().strip()}"
            if self.name == "java-4.4":  # KafkaShareConsumer scenarios, compiled against 4.4
                cp = f"{target / 'share-classes'}:{cp}"
            return ["java", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp,
                    "odradek.compat.Driver", "--client", self.name, "--classpath", cp]
        if self.name in ("franz-go", "sarama"):
            binary = HERE / "go" / "bin" / "compat-go"
            if not binary.exists():
                raise RuntimeError("Go driver not built: run compat_tests/setup.sh")
            return [str(binary), "--client", self.name]
        if self.name == "kafkajs":
            if not (HERE / "node" / "node_modules" / "kafkajs").is_dir():
                raise RuntimeError("node_modules missing: run compat_tests/setup.sh (npm ci)")
            return ["node", str(HERE / "node" / "driver.js")]
        raise ValueError(self.name)


# Rows the compat tier (tests/compat) leaves to compat_tests/slow.sh, for time: Kafka Streams on
# the older clients (about 30 s each; java-4.4's streams-eos row stays in the tier, and
# test_transaction_versions runs it at transaction.version 1). The runner
# skips them with --skip-slow; ODRADEK_COMPAT_SLOW=1 puts them back into the tier.
SLOW_ROWS: frozenset[tuple[str, str]] = frozenset({
    ("java-4.1", "streams-eos"),
    ("java-3.9", "streams-eos"),
})

DRIVERS: dict[str, Driver] = {
    d.name: d
    for d in (
        Driver("java-4.4", "Java", cluster_scenarios=CLUSTER_ROWS,
               extra_scenarios=(*CONSUMER_PROTOCOL_SCENARIOS, *FETCH_SESSION_SCENARIOS,
                                *CLI_SCENARIOS, *BROKER_SCENARIOS, *SHARE_SCENARIOS,
                                "streams-eos", "streams-groups", "streams-groups-failover",
                                "cli-streams-groups", "txn-copier"),
               security_scenarios=tuple(SECURITY_SCENARIOS)),
        Driver("java-4.1", "Java", extra_scenarios=(*BROKER_SCENARIOS, "streams-eos"),
               security_scenarios=tuple(SECURITY_SCENARIOS)),
        Driver("java-3.9", "Java", extra_scenarios=(*BROKER_SCENARIOS, "streams-eos"),
               security_scenarios=tuple(SECURITY_SCENARIOS), cluster_scenarios=CLUSTER_ROWS),
        Driver("confluent-kafka", "librdkafka", cluster_scenarios=CLUSTER_ROWS,
               extra_scenarios=(*CONSUMER_PROTOCOL_SCENARIOS, *MIGRATION_SCENARIOS,
                                "share-group-split"),
               security_scenarios=tuple(SECURITY_SCENARIOS)),
        Driver("kcat", "librdkafka"),
        Driver("kafka-python", "Python", cluster_scenarios=CLUSTER_ROWS,
               extra_scenarios=tuple(FETCH_SESSION_SCENARIOS),
               security_scenarios=tuple(SECURITY_SCENARIOS)),
        Driver("aiokafka", "Python", cluster_scenarios=CLUSTER_ROWS,
               security_scenarios=tuple(SECURITY_SCENARIOS)),
        Driver("franz-go", "Go", cluster_scenarios=CLUSTER_ROWS,
               extra_scenarios=(*CONSUMER_PROTOCOL_SCENARIOS, *FETCH_SESSION_SCENARIOS,
                                "share-group-split"),
               security_scenarios=tuple(SECURITY_SCENARIOS)),
        Driver("sarama", "Go", cluster_scenarios=CLUSTER_ROWS,
               security_scenarios=tuple(SECURITY_SCENARIOS)),
        Driver("kafkajs", "Node", security_scenarios=tuple(SECURITY_SCENARIOS),
               cluster_scenarios=CLUSTER_ROWS),
    )
}
