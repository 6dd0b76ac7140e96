"""kafka-leader-election.sh (Kafka 4.4's LeaderElectionCommand, run by main class with the
4.4 tools jars) against a three-node cluster, the same steps on Apache Kafka and Odradek:

    python -m compat_tests.leader_election_check --target kafka|odradek

- `preferred`: RF=3; the tool answers "already elected" while the first replica leads,
  PreferredLeaderNotAvailable while that broker is stopped; after that broker's controlled stop and start (back in the ISR, not leading) a preferred
  election succeeds and Metadata names the first replica leader again.
- `unclean`: RF=2 on the two nodes that are not the controller; one record on both
  replicas, the follower stopped, two records acks=1 on the leader alone, the leader
  stopped, the follower started: no leader. An unclean election succeeds, the lagging
  replica leads with the log end 1 (the two records are gone), and the old leader, started
  again, rejoins the ISR truncated to it.

Kafka runs with `auto.leader.rebalance.enable=false` so that only the tool moves leaders.
Odradek runs `serve --brokers 3` with its admin endpoint for stop/start. Prints one line
per check; exit 1 if any fails.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

TOOL = "org.apache.kafka.tools.LeaderElectionCommand"
CONTROLLER = 1


class Target:
    bootstrap: str

    def stop(self, node: int) -> None: ...

    def start(self, node: int) -> None: ...


class KafkaTarget(Target):
    def __init__(self, cluster: Any) -> None:
        self.c = cluster
        self.bootstrap = cluster.bootstrap

    def stop(self, node: int) -> None:
        self.c.stop_node(node)

    def start(self, node: int) -> None:
        self.c.restart(node)


class OdradekTarget(Target):
    def __init__(self, control: Any, bootstrap: str) -> None:
        self.control = control
        self.bootstrap = bootstrap

    def stop(self, node: int) -> None:
        self.control.stop(node)

    def start(self, node: int) -> None:
        self.control.start(node)


def _admin(t: Target) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": t.bootstrap, "log_level": 0})


def _partition(t: Target, topic: str, p: int) -> Any:
    return _admin(t).list_topics(topic, timeout=10).topics[topic].partitions[p]


def _wait(cond: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if cond():
                return
        except Exception:  # metadata mid-failover
            pass
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def _create(t: Target, topic: str, rf: int) -> None:
    from confluent_kafka.admin import NewTopic

    client = _admin(t)  # alive until the answer (else _DESTROY)
    client.create_topics([NewTopic(topic, 6, rf)])[topic].result(30)
    _wait(lambda: all(_partition(t, topic, p).leader >= 0 for p in range(6)), "leaders")


def _tool(t: Target, kind: str, topic: str, p: int) -> str:
    from compat_tests.brokers import java_classpath

    proc = subprocess.run(["java", "-cp", java_classpath("clients-4.4"), TOOL,
                           "--bootstrap-server", t.bootstrap, "--election-type", kind,
                           "--topic", topic, "--partition", str(p)],
                          capture_output=True, text=True, timeout=120)
    out = " ".join((proc.stdout + proc.stderr).split())
    return f"rc={proc.returncode}: {out}"


def preferred(t: Target) -> str:
    topic = f"pref-{uuid.uuid4().hex[:8]}"
    _create(t, topic, 3)
    p = next(p for p in range(6) if _partition(t, topic, p).replicas[0] != CONTROLLER)
    first = _partition(t, topic, p).replicas[0]
    noop = _tool(t, "preferred", topic, p)
    assert "Valid replica already elected" in noop, noop
    t.stop(first)
    _wait(lambda: _partition(t, topic, p).leader not in (first, -1), "a new leader")
    gone = _tool(t, "preferred", topic, p)
    assert "PreferredLeaderNotAvailable" in gone, gone
    t.start(first)
    _wait(lambda: first in _partition(t, topic, p).isrs, "the first replica back in the ISR")
    assert _partition(t, topic, p).leader != first
    done = _tool(t, "preferred", topic, p)
    assert "Successfully completed leader election (PREFERRED)" in done, done
    _wait(lambda: _partition(t, topic, p).leader == first, "the preferred leader", 20)
    return f"{topic}-{p}: [{noop}], stopped [{gone[:120]}], back [{done}]"


def _end(t: Target, topic: str, p: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": t.bootstrap, "group.id": "x", "log_level": 0})
    try:
        return int(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1])
    finally:
        c.close()


def unclean(t: Target) -> str:
    from confluent_kafka import Producer

    topic = f"uncl-{uuid.uuid4().hex[:8]}"
    _create(t, topic, 2)
    p = next(p for p in range(6) if CONTROLLER not in _partition(t, topic, p).replicas)
    leader = _partition(t, topic, p).leader
    follower = next(r for r in _partition(t, topic, p).replicas if r != leader)

    def send(acks: str, n: int) -> None:
        prod = Producer({"bootstrap.servers": t.bootstrap, "acks": acks, "log_level": 0})
        for i in range(n):
            prod.produce(topic, b"v%d" % i, partition=p)
        assert prod.flush(30) == 0

    send("all", 1)
    t.stop(follower)
    _wait(lambda: _partition(t, topic, p).isrs == [leader], "the ISR to shrink")
    send("1", 2)
    t.stop(leader)
    t.start(follower)
    _wait(lambda: _partition(t, topic, p).leader == -1 and follower in
          _admin(t).list_topics(timeout=10).brokers, "the follower back, leaderless")
    done = _tool(t, "unclean", topic, p)
    assert "Successfully completed leader election (UNCLEAN)" in done, done
    _wait(lambda: _partition(t, topic, p).leader == follower, "the unclean leader", 20)
    end = _end(t, topic, p)
    assert end == 1, f"log end {end} after the unclean election"
    t.start(leader)
    _wait(lambda: sorted(_partition(t, topic, p).isrs) == sorted([leader, follower]),
          "the old leader back in the ISR")
    end = _end(t, topic, p)
    assert end == 1, f"log end {end} once the old leader returned"
    again = _tool(t, "unclean", topic, p)
    return f"{topic}-{p}: [{done}], end offset 1; again [{again}]"


CHECKS: dict[str, Callable[[Target], str]] = {"preferred": preferred, "unclean": unclean}


def _run(target: Target, name: str, checks: list[str]) -> int:
    failed = 0
    for check in checks:
        t0 = time.monotonic()
        try:
            detail, ok = CHECKS[check](target), True
        except AssertionError as e:
            detail, ok = str(e), False
        failed += not ok
        print(f"{name:8} {check:10} {'PASS' if ok else 'FAIL'} ({time.monotonic() - t0:.1f}s) "
              f"{detail}", flush=True)
    return failed


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m compat_tests.leader_election_check")
    ap.add_argument("--target", choices=("kafka", "odradek"), default="kafka")
    ap.add_argument("--check", action="append", choices=sorted(CHECKS))
    args = ap.parse_args()
    checks = args.check or list(CHECKS)
    workdir = Path(tempfile.mkdtemp(prefix="election-"))
    if args.target == "kafka":
        from compat_tests.kafka_cluster import KafkaCluster

        with KafkaCluster(workdir, overrides={"auto.leader.rebalance.enable": "false"}) as c:
            c.start()
            return 1 if _run(KafkaTarget(c), "kafka", checks) else 0
    from compat_tests.brokers import OdradekBroker, free_port
    from odradek.client.cluster import ClusterAdmin

    port = free_port()
    broker = OdradekBroker(workdir / "data", workdir / "odradek.log",
                           {"simulated.brokers": "3", "admin.http.port": str(port)})
    with broker:
        broker.start()
        control = ClusterAdmin(f"http://127.0.0.1:{port}")
        brokers = control.describe()["brokers"]
        bootstrap = ",".join(b["endpoints"][0].split("://")[1] for b in brokers)
        return 1 if _run(OdradekTarget(control, bootstrap), "odradek", checks) else 0


if __name__ == "__main__":
    sys.exit(main())
