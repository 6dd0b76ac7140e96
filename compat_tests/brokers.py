"""The brokers the matrix runs against: Odradek (the product) and Apache Kafka (the oracle).

Odradek: `python -m odradek serve` on port 0 with a temp data dir; ready when stderr logs the
`listening` event with the bound port.
Kafka: a single-node KRaft broker+controller from the Maven Central jars resolved into
`java/target/cp-clients-4.4.txt` (kafka_2.13 4.4.x): storage formatted with
`kafka.tools.StorageTool`, then `kafka.Kafka server.properties`, loopback only; ready when a
Metadata request answers with the broker in it.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
JAVA_DIR = HERE / "java"
KAFKA_VERSION = "4.4.0"
LISTENING = re.compile(r"listening.*\bport=(\d+)|\"event\": \"listening\".*\"port\": (\d+)")

# Settings both targets get: no 3 s wait before the first rebalance of a new group; consumer-
# protocol (KIP-848) members heartbeat every second rather than every 5 s, so an assignment
# change (a few heartbeats) fits a scenario's time (Kafka's floor for the interval is lowered
# with it; Odradek has no such floor and keeps the setting as an unknown one).
COMMON_OVERRIDES = {
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.heartbeat.interval.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "1000",
    # Streams groups (KIP-1071): no 3 s wait for the first assignment, heartbeats every second,
    # a dead member fenced after 6 s (streams-groups-failover); Kafka's floors lowered with them.
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.heartbeat.interval.ms": "1000",
    "group.streams.min.heartbeat.interval.ms": "1000",
    "group.streams.session.timeout.ms": "6000",
    "group.streams.min.session.timeout.ms": "6000",
    # txn-copier leaves a transaction to time out: look for timed-out ones every second (10 s).
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}


def java_classpath(name: str) -> str:
    """The classpath file that `mvn dependency:build-classpath` wrote (see java/pom.xml)."""
    path = JAVA_DIR / "target" / f"cp-{name}.txt"
    if not path.exists():
        raise RuntimeError(f"{path} missing: run compat_tests/setup.sh first")
    return path.read_text().strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Broker:
    name = "?"
    version = "?"
    port = 0
    data_dir: Path
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        raise NotImplementedError

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def log_dirs(self) -> list[Path]:
        return [self.data_dir]

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def __enter__(self) -> Broker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class OdradekBroker(Broker):
    name = "odradek"

    def __init__(self, data_dir: Path, log_path: Path, overrides: dict[str, str] | None = None,
                 source: Path | None = None) -> None:
        """`source`: run the odradek package of another checkout (a benchmark baseline)."""
        self.source = source
        self.data_dir = data_dir
        self.log_path = log_path
        self.overrides = {**COMMON_OVERRIDES, **(overrides or {})}
        try:
            from odradek import __version__ as v  # type: ignore[attr-defined]
            self.version = str(v)
        except Exception:
            self.version = "dev"
        self.lines: list[str] = []

    def start(self, timeout: float = 30.0) -> None:
        argv = [sys.executable, "-m", "odradek", "serve",
                "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                "--override", f"log.dirs={self.data_dir}"]
        for k, v in self.overrides.items():
            argv += ["--override", f"{k}={v}"]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if self.source is not None:
            env["PYTHONPATH"] = str(self.source)
        self.proc = subprocess.Popen(argv, cwd=self.source or REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=env)
        found = threading.Event()
        log = self.log_path.open("w")

        def reader() -> None:
            assert self.proc is not None and self.proc.stderr is not None
            for raw in self.proc.stderr:
                line = raw.decode(errors="replace")
                log.write(line)
                log.flush()
                if not found.is_set():
                    m = LISTENING.search(line)
                    if m:
                        self.port = int(m.group(1) or m.group(2))
                        found.set()
            log.close()
            self.proc.stderr.close()  # at EOF: the broker exited (no ResourceWarning later)
            found.set()

        threading.Thread(target=reader, daemon=True).start()
        found.wait(timeout)
        if not self.port:
            self.stop()
            raise RuntimeError(f"odradek did not start; see {self.log_path}")


class KafkaBroker(Broker):
    name = "apache-kafka"
    version = KAFKA_VERSION
    cp_name = "clients-4.4"  # kafka_2.13 and kafka-tools 4.4.0: see java/pom.xml

    def __init__(self, data_dir: Path, log_path: Path, overrides: dict[str, str] | None = None,
                 source: Path | None = None, features: dict[str, int] | None = None,
                 extra_listeners: dict[str, tuple[str, int]] | None = None,
                 format_args: list[str] | None = None) -> None:
        """`source`: run the odradek package of another checkout (a benchmark baseline).
        `features`: finalized feature levels given to `kafka-storage format --feature`.
        `extra_listeners`: {name: (security protocol, port)} besides PLAINTEXT (which stays
        the inter-broker one); `format_args`: more `kafka-storage format` arguments (e.g.
        `--add-scram`)."""
        self.extra_listeners = dict(extra_listeners or {})
        self.format_args = list(format_args or [])
        self.source = source
        self.data_dir = data_dir
        self.log_path = log_path
        self.overrides = {**COMMON_OVERRIDES, **(overrides or {})}
        self.features = dict(features or {})

    def log_dirs(self) -> list[Path]:
        return [self.data_dir / "logs"]

    def start(self, timeout: float = 90.0) -> None:
        cp = java_classpath(self.cp_name)
        self.port, cport = free_port(), free_port()
        props = self.data_dir / "server.properties"
        (self.data_dir / "logs").mkdir(parents=True, exist_ok=True)
        extra = "".join(f",{n}://127.0.0.1:{port}" for n, (_, port) in self.extra_listeners.items())
        extra_map = "".join(f",{n}:{proto}" for n, (proto, _) in self.extra_listeners.items())
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{cport}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{cport}{extra}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}{extra}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT{extra_map}",
            "log.dirs": str(self.data_dir / "logs"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "3",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            **self.overrides,
        }
        props.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        java = ["java", "-Xmx1g", "-XX:+UseG1GC", "-cp", cp]
        log = self.log_path.open("w")
        feature_args = [a for k, v in self.features.items() for a in ("--feature", f"{k}={v}")]
        fmt = subprocess.run([*java, "kafka.tools.StorageTool", "format", "-t", _cluster_id(), "-c", str(props),
                              *feature_args, *self.format_args],
                             stdout=log, stderr=subprocess.STDOUT, timeout=120)
        if fmt.returncode != 0:
            raise RuntimeError(f"kafka storage format failed; see {self.log_path}")
        self.proc = subprocess.Popen([*java, "kafka.Kafka", str(props)], stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kafka exited with {self.proc.returncode}; see {self.log_path}")
            try:
                md = admin.list_topics(timeout=2)
                if md.brokers:
                    return
            except Exception:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"kafka did not answer Metadata within {timeout}s; see {self.log_path}")


def _cluster_id() -> str:
    # Kafka's cluster ids are 16 random bytes in url-safe base64 without padding.
    import base64

    # Like Kafka's Uuid.randomUuid, never one starting with "-": the storage tool's argument
    # parser would take it for an option.
    while (cid := base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("="))[0] == "-":
        pass
    return cid


def make_broker(target: str, workdir: Path, overrides: dict[str, str] | None = None,
                features: dict[str, int] | None = None) -> Broker:
    """A broker (not started) for `target`, with Kafka-named settings `overrides` and the
    finalized feature levels `features` (Kafka: `kafka-storage format --feature`; Odradek:
    the broker setting of the same name, e.g. transaction.version)."""
    data = Path(tempfile.mkdtemp(prefix=f"compat-{target}-", dir=workdir))
    log = workdir / f"broker-{target}.log"
    if target == "odradek":
        levels = {name: str(level) for name, level in (features or {}).items()}
        return OdradekBroker(data, log, {**(overrides or {}), **levels})
    if target in ("kafka", "kafka-4.4"):  # the oracle is Kafka 4.4.0
        return KafkaBroker(data, log, overrides, features=features)
    raise ValueError(f"unknown target {target!r}")
