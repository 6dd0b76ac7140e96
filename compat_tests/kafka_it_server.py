"""Apache Kafka 4.4 behind Odradek's command line, to run the integration tests on the oracle.

    ODRADEK_IT_SERVER_CMD="python -m compat_tests.kafka_it_server" python -m pytest tests/integration/...

`serve --override key=value ...` as `odradek serve` takes it: `listeners` (port 0: a free one)
and `log.dirs` give the port and the data directory; every other setting goes to Kafka's
server.properties. The process becomes the Kafka JVM (exec), so SIGTERM and kill -9 reach
Kafka itself, and a restart on the same port and directory finds its data; a forked helper
prints the `listening ... port=N` line the tests wait for once Kafka answers Metadata.

Kafka refuses consumer-group heartbeat intervals and session timeouts below its minimums
(`group.consumer.min.heartbeat.interval.ms`, 5 s, and `group.consumer.min.session.timeout.ms`,
45 s); the short values the tests give are allowed by lowering those minimums to them.
Needs the jars of `compat_tests/setup.sh` (java/target/cp-clients-4.4.txt).

`listeners=SASL_PLAINTEXT://...`: Kafka gets that listener on the port the tests are told,
plus a PLAINTEXT one on a port of its own (inter-broker, and the readiness probe); the
`listener.name.sasl_plaintext.*` settings go through, each enabled SCRAM mechanism without
a JAAS entry gets Kafka's ScramLoginModule one (Odradek needs none), and Odradek's
`scram.bootstrap.credentials` becomes `kafka-storage format --add-scram` (one per entry).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from compat_tests.brokers import COMMON_OVERRIDES, _cluster_id, free_port, java_classpath


def _overrides(argv: list[str]) -> dict[str, str]:
    if not argv or argv[0] != "serve":
        raise SystemExit("usage: python -m compat_tests.kafka_it_server serve --override k=v ...")
    out: dict[str, str] = {}
    args = iter(argv[1:])
    for arg in args:
        if arg == "--override":
            key, _, value = next(args).partition("=")
            out[key] = value
    return out


def _announce_when_ready(probe: int, port: int) -> None:
    """In a forked child: wait for Metadata to answer on `probe` (PLAINTEXT), then print the
    line tests wait for, with the tests' `port`."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{probe}", "log_level": 0})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if admin.list_topics(timeout=2).brokers:
                print(f"event=listening listener=PLAINTEXT host=127.0.0.1 port={port}",
                      file=sys.stderr, flush=True)
                return
        except Exception:
            time.sleep(0.3)


def main(argv: list[str]) -> None:
    settings = _overrides(argv)
    listener = settings.pop("listeners", "PLAINTEXT://127.0.0.1:0")
    port = int(listener.rsplit(":", 1)[1]) or free_port()
    sasl = listener.startswith("SASL_PLAINTEXT://")
    scram = [c for c in settings.pop("scram.bootstrap.credentials", "").split(";") if c]
    if sasl:
        mechs = settings.get("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "")
        for mech in (m.strip() for m in mechs.split(",")):
            if mech.startswith("SCRAM-"):
                settings.setdefault(
                    f"listener.name.sasl_plaintext.{mech.lower()}.sasl.jaas.config",
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;")
    data = Path(settings.pop("log.dirs"))
    data.mkdir(parents=True, exist_ok=True)
    state_file = data / "kafka-it-server.json"
    if state_file.exists():  # a restart: the same controller port and cluster
        state = json.loads(state_file.read_text())
    else:
        state = {"controller_port": free_port(), "cluster_id": _cluster_id(),
                 "plaintext_port": free_port()}
        state_file.write_text(json.dumps(state))
    cport = state["controller_port"]
    # With a SASL listener the tests' port is SASL_PLAINTEXT's; PLAINTEXT gets its own.
    pport = int(state.get("plaintext_port") or free_port()) if sasl else port
    extra = f",SASL_PLAINTEXT://127.0.0.1:{port}" if sasl else ""
    for key, floor in (("group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms"),
                       ("group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms")):
        if key in settings:
            settings.setdefault(floor, settings[key])
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{cport}",
        "listeners": f"PLAINTEXT://127.0.0.1:{pport}{extra},CONTROLLER://127.0.0.1:{cport}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{pport}{extra}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
                                          + (",SASL_PLAINTEXT:SASL_PLAINTEXT" if sasl else ""),
        "log.dirs": str(data / "kafka-logs"),
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        **{k: v for k, v in COMMON_OVERRIDES.items() if not k.startswith("group.consumer.")},
        **settings,
    }
    path = data / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    java = ["java", "-Xmx1g", "-XX:+UseG1GC", "-cp", java_classpath("clients-4.4")]
    if not (data / "kafka-logs" / "meta.properties").exists():
        pid = os.fork()
        if pid == 0:
            with open(os.devnull, "w") as devnull:
                os.dup2(devnull.fileno(), 1)
                os.execvp("java", [*java, "kafka.tools.StorageTool", "format", "-t",
                                   state["cluster_id"], "-c", str(path),
                                   *(a for c in scram for a in ("--add-scram", c))])
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise SystemExit(f"kafka storage format failed ({status})")
    if os.fork() == 0:
        try:
            _announce_when_ready(pport, port)
        finally:
            os._exit(0)
    os.execvp("java", [*java, "kafka.Kafka", str(path)])


if __name__ == "__main__":
    main(sys.argv[1:])
