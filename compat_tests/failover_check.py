"""Failover checks against a three-node cluster (issue #15), with confluent-kafka clients:

    python -m compat_tests.failover_check --target kafka [--check NAME]

- `acks-all-leader-kill`: RF=3, min.insync.replicas=2, 3 partitions; an idempotent acks=all
  producer sends 1,500 numbered records while the leader of one partition is SIGKILLed and
  later restarted. Every acknowledged record is read back exactly once, in the order it was
  acknowledged per partition, and no record at all appears twice.
- `not-enough-replicas`: RF=3, min.insync.replicas=2, the partition led by the controller
  node; the two other replicas are killed: once the ISR is the leader alone, an acks=all
  produce fails with NOT_ENOUGH_REPLICAS while acks=1 still succeeds; after both return
  and rejoin the ISR, acks=all succeeds again.
- `coordinator-failover`: a transactional producer commits, its transaction coordinator's node
  is SIGKILLed, and its next transaction commits through the new coordinator; a
  read_committed consumer group commits after every record while its group coordinator's node
  is SIGKILLed: every committed record is read once and the commits reach the last record.

`--target kafka` runs them on a three-process Apache Kafka 4.4 KRaft cluster
(compat_tests/kafka_cluster.py); `--target odradek` on Odradek's simulated cluster
(`--brokers 3`, docs/cluster.md), with the same session (3 s), lag (5 s) and leader
balancing (5 s) settings, where
"kill" is the cluster's hard kill (fenced after the session timeout) through its admin
endpoint. Node 1 (the controller) is never killed on either. Prints one line per check;
exit 1 if any fails.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

TOPIC_CONFIG = {"min.insync.replicas": "2"}


class Cluster(Protocol):
    node_ids: list[int]

    @property
    def bootstrap(self) -> str: ...

    def kill(self, node: int) -> None: ...

    def restart(self, node: int, timeout: float = 120.0) -> None: ...

    def alive(self, node: int) -> bool: ...


def _admin(cluster: Cluster) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})


def _create(cluster: Cluster, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import NewTopic

    spec = NewTopic(topic, partitions, 3, config=TOPIC_CONFIG)
    admin = _admin(cluster)  # held until the future resolves: a freed handle cancels it
    admin.create_topics([spec])[topic].result(30)
    _wait(lambda: all(len(p.isrs) == 3 for p in _partitions(cluster, topic).values()),
          30, f"{topic}: every partition with 3 in-sync replicas")


def _partitions(cluster: Cluster, topic: str) -> dict[int, Any]:
    md = _admin(cluster).list_topics(topic, timeout=10)
    t = md.topics.get(topic)
    return dict(t.partitions) if t is not None and t.error is None else {}


def _wait(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            if cond():
                return
        except Exception as e:  # a broker not answering yet: try again
            last = e
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for: {what}"
                         + (f" (last error: {last!r})" if last else ""))


def _read_all(cluster: Cluster, topic: str, partitions: int,
              expected: int) -> dict[int, list[bytes]]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"r-{topic}",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "log_level": 0})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + 60
    idle_since = time.monotonic()
    while time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None or msg.error():
            if sum(map(len, got.values())) >= expected and time.monotonic() - idle_since > 3:
                break
            continue
        idle_since = time.monotonic()
        got[msg.partition()].append(msg.value())
    consumer.close()
    return got


def acks_all_leader_kill(cluster: Cluster, controller: int) -> str:
    from confluent_kafka import Producer

    topic = f"failover-{uuid.uuid4().hex[:8]}"
    _create(cluster, topic, 3)
    leaders = {p: meta.leader for p, meta in _partitions(cluster, topic).items()}
    victim_partition, victim = next((p, n) for p, n in sorted(leaders.items()) if n != controller)
    acked: dict[int, list[bytes]] = {p: [] for p in leaders}
    failed: list[str] = []
    lock = threading.Lock()

    def on_delivery(err: Any, msg: Any) -> None:
        with lock:
            if err is None:
                acked[msg.partition()].append(msg.value())
            else:
                failed.append(str(err))

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5,
                         "message.timeout.ms": 120000, "log_level": 0})
    total = 1500
    for i in range(total):
        if i == 500:
            cluster.kill(victim)
        if i == 1000:
            cluster.restart(victim)
        producer.produce(topic, value=f"{i:06d}".encode(), partition=i % 3,
                         on_delivery=on_delivery)
        producer.poll(0)
        time.sleep(0.004)
    if producer.flush(120):
        raise AssertionError("the producer did not finish within 120 s")
    n_acked = sum(map(len, acked.values()))
    new_leader = _partitions(cluster, topic)[victim_partition].leader
    got = _read_all(cluster, topic, 3, n_acked)
    problems: list[str] = []
    for p, values in acked.items():
        seen = got[p]
        if len(seen) != len(set(seen)):
            problems.append(f"partition {p}: {len(seen) - len(set(seen))} duplicates")
        missing = set(values) - set(seen)
        if missing:
            problems.append(f"partition {p}: {len(missing)} acknowledged records lost")
        order = [v for v in seen if v in set(values)]
        if order != values:
            problems.append(f"partition {p}: order differs from the acknowledgement order")
    if problems or failed:
        raise AssertionError("; ".join([*problems, f"{len(failed)} delivery errors: {failed[:2]}"]))
    return (f"killed node {victim} (leader of partition {victim_partition}; later led by "
            f"{new_leader}) and restarted it: {n_acked}/{total} acknowledged, all read back "
            f"once, in order, no duplicates")


def not_enough_replicas(cluster: Cluster, controller: int) -> str:
    from confluent_kafka import KafkaError, Producer

    others = [n for n in cluster.node_ids if n != controller]
    topic = f"nerep-{uuid.uuid4().hex[:8]}"
    # Placement spreads leaders over the nodes: one of 6 partitions is led by the controller,
    # the node that stays up (confluent-kafka 2.16 refuses an explicit replica assignment).
    _create(cluster, topic, 6)
    partition = next(p for p, m in sorted(_partitions(cluster, topic).items())
                     if m.leader == controller)

    def produce(acks: str) -> Any:
        errors: list[Any] = []
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": acks,
                             "enable.idempotence": False, "retries": 0,
                             "message.timeout.ms": 10000, "log_level": 0})
        producer.produce(topic, b"x", partition=partition,
                         on_delivery=lambda e, m: errors.append(e))
        producer.flush(20)
        return errors[0] if errors else "no delivery report"

    for node in others:
        cluster.kill(node)
    _wait(lambda: _partitions(cluster, topic)[partition].isrs == [controller], 60,
          f"ISR shrunk to [{controller}]")
    err = produce("all")
    if err is None or getattr(err, "code", lambda: None)() != KafkaError.NOT_ENOUGH_REPLICAS:
        raise AssertionError(f"acks=all with ISR [{controller}]: got {err}, "
                             "expected NOT_ENOUGH_REPLICAS")
    err1 = produce("1")
    if err1 is not None:
        raise AssertionError(f"acks=1 with ISR [{controller}] failed: {err1}")
    for node in others:
        cluster.restart(node)
    _wait(lambda: len(_partitions(cluster, topic)[partition].isrs) == 3, 90, "ISR back to 3")
    err = produce("all")
    if err is not None:
        raise AssertionError(f"acks=all after the replicas returned failed: {err}")
    return (f"partition {partition} led by node {controller}, nodes {others} killed: ISR "
            f"[{controller}] -> acks=all NOT_ENOUGH_REPLICAS, acks=1 accepted; replicas back "
            "-> acks=all accepted")


def _coordinator(cluster: Cluster, key: str, key_type: int) -> int:
    """The node FindCoordinator names for a group (0) or transactional id (1)."""
    from odradek.client.admin import Admin
    from odradek.wire._generated.find_coordinator import (
        FindCoordinatorRequest,
        FindCoordinatorResponse,
    )

    live = next(n for n in cluster.node_ids if cluster.alive(n))
    with Admin(cluster.bootstrap.split(",")[cluster.node_ids.index(live)]) as admin:
        request = FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key], key=key)
        response, _ = admin.conn.call(request, FindCoordinatorResponse)
    found = response.coordinators[0] if response.coordinators else response
    if found.error_code:  # e.g. COORDINATOR_NOT_AVAILABLE while the internal topic is made
        raise RuntimeError(f"FindCoordinator {key}: error {found.error_code}")
    return int(found.node_id)


def _coordinator_when_ready(cluster: Cluster, key: str, key_type: int) -> int:
    deadline = time.monotonic() + 60
    while True:
        try:
            return _coordinator(cluster, key, key_type)
        except (RuntimeError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def _away_from(cluster: Cluster, controller: int, prefix: str, key_type: int) -> tuple[str, int]:
    """A group or transactional id whose coordinator is not the controller (which stays up)."""
    deadline = time.monotonic() + 30  # after a restart its leaderships come back in seconds
    while time.monotonic() < deadline:
        key = f"{prefix}-{uuid.uuid4().hex[:8]}"
        node = _coordinator_when_ready(cluster, key, key_type)
        if node != controller:
            return key, node
    raise AssertionError(f"no {prefix} id found whose coordinator is not node {controller}")


def coordinator_failover(cluster: Cluster, controller: int) -> str:
    from confluent_kafka import Consumer, Producer

    topic = f"coord-{uuid.uuid4().hex[:8]}"
    _create(cluster, topic, 3)
    txn_id, txn_node = _away_from(cluster, controller, "txn", 1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": 60000, "log_level": 0})
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(30):
        producer.produce(topic, value=f"a{i}".encode(), partition=i % 3)
    producer.commit_transaction(60)
    cluster.kill(txn_node)
    producer.begin_transaction()  # the next transaction goes to the new coordinator
    for i in range(30):
        producer.produce(topic, value=f"b{i}".encode(), partition=i % 3)
    producer.commit_transaction(120)
    moved_to = _coordinator_when_ready(cluster, txn_id, 1)
    cluster.restart(txn_node)

    group, group_node = _away_from(cluster, controller, "grp", 0)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "log_level": 0})
    consumer.subscribe([topic])
    seen: list[bytes] = []
    killed = False
    deadline = time.monotonic() + 90
    while len(seen) < 60 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None or msg.error():
            continue
        seen.append(msg.value())
        consumer.commit(msg, asynchronous=False)
        if len(seen) == 20 and not killed:
            cluster.kill(group_node)
            killed = True
    committed = consumer.committed([_tp(topic, p) for p in range(3)], timeout=30)
    group_moved_to = _coordinator_when_ready(cluster, group, 0)
    consumer.close()
    cluster.restart(group_node)
    values = sorted(v.decode() for v in seen)
    expected = sorted([f"a{i}" for i in range(30)] + [f"b{i}" for i in range(30)])
    if values != expected:
        raise AssertionError(f"read_committed group read {len(seen)} records "
                             f"({len(set(seen))} distinct), expected the 60 committed ones")
    total = sum(max(tp.offset, 0) for tp in committed)
    # per partition: a0.. (10), marker, b0.. (10), marker; each commit is the offset after
    # the last record read, so 21 each: past the first marker, before the second
    if total != 63:
        raise AssertionError(f"committed offsets sum to {total}, expected 3 x 21")
    return (f"transaction coordinator node {txn_node} killed between two transactions "
            f"(moved to {moved_to}): both committed; group coordinator node {group_node} "
            f"killed after 20 of 60 records (moved to {group_moved_to}): all 60 read once "
            f"and committed (offsets 3 x 21)")


def _tp(topic: str, partition: int) -> Any:
    from confluent_kafka import TopicPartition

    return TopicPartition(topic, partition)


CHECKS: dict[str, Callable[[Cluster, int], str]] = {
    "acks-all-leader-kill": acks_all_leader_kill,
    "not-enough-replicas": not_enough_replicas,
    "coordinator-failover": coordinator_failover,
}


class OdradekFailoverCluster:
    """Odradek `--brokers 3` behind the `Cluster` protocol: kill, restart and liveness go
    through the simulated cluster's admin endpoint (odradek.client.cluster.ClusterAdmin)."""

    name = "odradek"

    def __init__(self, workdir: Path) -> None:
        self.node_ids = [1, 2, 3]
        from compat_tests.brokers import free_port
        from compat_tests.upstream.three_brokers import OdradekCluster

        self._admin_port = free_port()
        self._broker = OdradekCluster(workdir, {
            "broker.session.timeout.ms": "3000", "replica.lag.time.max.ms": "5000",
            "leader.imbalance.check.interval.seconds": "5",  # as KafkaCluster sets it
            "admin.http.port": str(self._admin_port)})
        self.version = self._broker.version

    @property
    def bootstrap(self) -> str:
        return self._broker.bootstrap

    def _cluster(self) -> Any:
        from odradek.client.cluster import ClusterAdmin

        return ClusterAdmin(f"http://127.0.0.1:{self._admin_port}")

    def start(self) -> None:
        self._broker.start()

    def kill(self, node: int) -> None:
        self._cluster().kill(node)

    def restart(self, node: int, timeout: float = 120.0) -> None:
        self._cluster().start(node)

    def alive(self, node: int) -> bool:
        brokers = self._cluster().describe()["brokers"]
        return any(b["node_id"] == node and b["live"] and not b.get("killed") for b in brokers)

    def __enter__(self) -> OdradekFailoverCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self._broker.stop()


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m compat_tests.failover_check")
    ap.add_argument("--target", choices=("kafka", "odradek"), default="kafka")
    ap.add_argument("--check", action="append", choices=sorted(CHECKS))
    args = ap.parse_args()
    from compat_tests.kafka_cluster import CONTROLLER_NODE, KafkaCluster

    workdir = Path(tempfile.mkdtemp(prefix="failover-"))
    failed = 0
    target = OdradekFailoverCluster(workdir) if args.target == "odradek" else KafkaCluster(workdir)
    with target as cluster:
        t = time.monotonic()
        cluster.start()
        print(f"{cluster.name} {cluster.version}: 3 nodes up in {time.monotonic() - t:.1f}s "
              f"({cluster.bootstrap}; logs in {workdir})", flush=True)
        for name in args.check or list(CHECKS):
            t = time.monotonic()
            try:
                detail, ok = CHECKS[name](cluster, CONTROLLER_NODE), True
            except AssertionError as e:
                detail, ok = str(e), False
            failed += not ok
            print(f"{args.target:8} {name:22} {'PASS' if ok else 'FAIL'} "
                  f"({time.monotonic() - t:.1f}s) {detail}", flush=True)
            for node in cluster.node_ids:  # the next check starts with every node up
                if not cluster.alive(node):
                    cluster.restart(node)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
