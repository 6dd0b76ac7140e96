"""A Jepsen-style run against a three-broker cluster (issue #15), with confluent-kafka:

    python -m compat_tests.jepsen --target odradek|kafka --seconds N --seed S
        [--nemesis stop,kill,isolate,elect] [--history FILE]

Workload on a RF=3, min.insync.replicas=2 topic of 3 partitions: K idempotent acks=all
producers and K transactional producers write unique values `<producer>:<seq>` (a quarter
of the transactions aborted on purpose); a read_committed consumer group (2 members) and a
read_uncommitted consumer assigned every partition poll throughout. A nemesis thread, on a
schedule drawn from the seed, takes one broker at a time down (`stop`: controlled shutdown,
`kill`: hard kill) and back, isolates and heals one (`isolate`), or asks for a preferred
leader election (`elect`). Afterwards every broker is back, producers flush, consumers drain,
and a last read_committed read takes every partition from offset 0 to its end.

Every send, ack/error, transaction outcome, assignment and poll goes to a JSON-lines history;
`compat_tests/jepsen_checker.py` analyses it. Exit 0 when valid, 1 on any anomaly, 2 when the
cluster could not be set up. Nemeses the target cannot do are skipped with a message: on
Odradek `kill`/`isolate` until SimulatedCluster has them (ClusterAdmin.kill / .isolate), on
Kafka `isolate` (one host, no root: no way to cut one JVM's sockets).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from compat_tests.jepsen_checker import check

PARTITIONS = 3
NEMESES = ("stop", "kill", "isolate", "elect")


class History:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("w")
        self._lock = threading.Lock()
        self.events: list[dict[str, Any]] = []

    def add(self, **event: Any) -> None:
        event["t"] = round(time.monotonic(), 3)
        with self._lock:
            self.events.append(event)
            self._file.write(json.dumps(event) + "\n")

    def close(self) -> None:
        self._file.close()


class Target:
    """What the nemesis needs from a cluster; one per `--target`."""

    node_ids: list[int]
    bootstrap: str
    supported: dict[str, str]  # nemesis -> "" when supported, else why not

    def down(self, node: int, how: str) -> None: ...
    def up(self, node: int) -> None: ...
    def isolate(self, node: int) -> None: ...
    def heal(self, node: int) -> None: ...
    def close(self) -> None: ...


class OdradekTarget(Target):
    def __init__(self, workdir: Path) -> None:
        from odradek.client.cluster import ClusterAdmin
        from odradek.testing.process import BrokerProcess

        self.proc = BrokerProcess(workdir / "data", {
            "simulated.brokers": "3", "admin.http.port": "0",
            "group.initial.rebalance.delay.ms": "0",
            # fast failure detection where the failover branch provides it
            "replica.lag.time.max.ms": "2000", "broker.session.timeout.ms": "2000",
        })
        (workdir / "data").mkdir(parents=True)
        self.proc.start()
        assert self.proc.admin_url is not None
        self.admin = ClusterAdmin(self.proc.admin_url)
        brokers = self.admin.describe()["brokers"]
        self.node_ids = [int(b["node_id"]) for b in brokers]
        self.bootstrap = ",".join(b["endpoints"][0].split("://")[1] for b in brokers)
        self.supported = {"stop": "", "elect": ""}
        for verb in ("kill", "isolate"):
            self.supported[verb] = "" if hasattr(self.admin, verb) else (
                f"SimulatedCluster.{verb} is not on this branch (issue #15 'failover')")

    def down(self, node: int, how: str) -> None:
        getattr(self.admin, how)(node)

    def up(self, node: int) -> None:
        self.admin.start(node)

    def isolate(self, node: int) -> None:
        self.admin.isolate(node)  # type: ignore[attr-defined]

    def heal(self, node: int) -> None:
        self.admin.heal(node)  # type: ignore[attr-defined]

    def close(self) -> None:
        self.proc.stop()


class KafkaTarget(Target):
    def __init__(self, workdir: Path) -> None:
        from compat_tests.kafka_cluster import KafkaCluster

        self.cluster = KafkaCluster(workdir)
        self.cluster.start()
        self.node_ids = list(self.cluster.node_ids)
        self.bootstrap = self.cluster.bootstrap
        self.supported = {"stop": "", "kill": "", "elect": "",
                          "isolate": "one host without root cannot cut one JVM's sockets"}

    def down(self, node: int, how: str) -> None:
        (self.cluster.kill if how == "kill" else self.cluster.stop_node)(node)

    def up(self, node: int) -> None:
        self.cluster.restart(node)

    def close(self) -> None:
        self.cluster.stop()


def _create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3,
                                  config={"min.insync.replicas": "2"})])[topic].result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        t = admin.list_topics(topic, timeout=10).topics.get(topic)
        if t and t.error is None and len(t.partitions) == PARTITIONS and all(
                len(p.isrs) == 3 for p in t.partitions.values()):
            return
        time.sleep(0.3)
    raise RuntimeError(f"{topic}: partitions without 3 in-sync replicas after 30 s")


def _idempotent(bootstrap: str, topic: str, name: str, history: History,
                stop: threading.Event) -> None:
    from confluent_kafka import Producer

    def report(err: Any, msg: Any) -> None:
        value = msg.value().decode()
        if err is None:
            history.add(type="ack", value=value, partition=msg.partition(), offset=msg.offset())
        else:
            history.add(type="send_error", value=value, error=str(err))

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5, "message.timeout.ms": 60000, "log_level": 0})
    seq = 0
    while not stop.is_set():
        value = f"{name}:{seq}"
        partition = seq % PARTITIONS
        history.add(type="send", value=value, producer=name, seq=seq, partition=partition,
                    txn=None)
        p.produce(topic, value=value.encode(), partition=partition, on_delivery=report)
        p.poll(0)
        seq += 1
        time.sleep(0.01)
    p.flush(90)


def _transactional(bootstrap: str, topic: str, name: str, history: History,
                   stop: threading.Event, rng: random.Random) -> None:
    from confluent_kafka import KafkaException, Producer

    def report(err: Any, msg: Any) -> None:
        value = msg.value().decode()
        if err is None:
            history.add(type="ack", value=value, partition=msg.partition(), offset=msg.offset())
        else:
            history.add(type="send_error", value=value, error=str(err))

    def producer() -> Any:
        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"jepsen-{name}",
                      "transaction.timeout.ms": 30000, "message.timeout.ms": 30000,
                      "log_level": 0})
        p.init_transactions(60)
        return p

    p = producer()
    seq = n = 0
    while not stop.is_set():
        txn = f"{name}-{n}"
        n += 1
        abort = rng.random() < 0.25
        try:
            p.begin_transaction()
            for _ in range(rng.randint(2, 6)):
                value = f"{name}:{seq}"
                partition = rng.randrange(PARTITIONS)
                history.add(type="send", value=value, producer=name, seq=seq,
                            partition=partition, txn=txn)
                p.produce(topic, value=value.encode(), partition=partition, on_delivery=report)
                seq += 1
            if abort:
                p.abort_transaction(60)
                history.add(type="txn", txn=txn, outcome="abort")
            else:
                p.commit_transaction(60)
                history.add(type="txn", txn=txn, outcome="commit")
        except KafkaException as e:
            err = e.args[0]
            history.add(type="txn_error", txn=txn, error=str(err))
            if err.txn_requires_abort():
                try:
                    p.abort_transaction(60)
                    history.add(type="txn", txn=txn, outcome="abort")
                    continue
                except KafkaException as e2:
                    history.add(type="txn_error", txn=txn, error=str(e2.args[0]))
            # fatal or not abortable: the outcome is unknown; a new producer with the same
            # transactional id fences the old one and finishes its transaction
            history.add(type="txn", txn=txn, outcome="unknown")
            p.flush(5)
            while not stop.is_set():
                try:
                    p = producer()
                    break
                except KafkaException as e3:
                    history.add(type="txn_error", txn=txn, error=f"init: {e3.args[0]}")
                    time.sleep(1)
        time.sleep(0.02)


def _consumer(bootstrap: str, topic: str, name: str, group: str | None, isolation: str,
              history: History, stop: threading.Event, idle: dict[str, float]) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group or f"solo-{name}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": group is not None,
                  "isolation.level": isolation, "session.timeout.ms": 10000,
                  "log_level": 0})

    def assigned(consumer: Any, partitions: Any) -> None:
        history.add(type="assign", consumer=name,
                    partitions=[tp.partition for tp in partitions])

    if group is None:
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    else:
        c.subscribe([topic], on_assign=assigned, on_revoke=assigned, on_lost=assigned)
    idle[name] = time.monotonic()
    while not stop.is_set():
        msg = c.poll(0.2)
        if msg is None or msg.error():
            continue
        idle[name] = time.monotonic()
        history.add(type="poll", consumer=name, isolation=isolation,
                    partition=msg.partition(), offset=msg.offset(),
                    value=msg.value().decode())
    c.close()


def _final_read(bootstrap: str, topic: str, history: History) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"final-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "isolation.level": "read_committed",
                  "log_level": 0})
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(PARTITIONS)}
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    done: set[int] = {p for p, end in ends.items() if end == 0}
    deadline = time.monotonic() + 120
    while len(done) < PARTITIONS and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is None:
            # the rest of a partition may be markers / aborted data only
            for tp in c.position([TopicPartition(topic, p) for p in range(PARTITIONS)]):
                if tp.offset >= ends[tp.partition]:
                    done.add(tp.partition)
            continue
        if msg.error():
            continue
        history.add(type="final", partition=msg.partition(), offset=msg.offset(),
                    value=msg.value().decode())
        if msg.offset() + 1 >= ends[msg.partition()]:
            done.add(msg.partition())
    c.close()
    if len(done) < PARTITIONS:
        raise RuntimeError(f"the final read did not reach the ends {ends} within 120 s")


def _elect(bootstrap: str) -> str:
    from confluent_kafka import ElectionType
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        result = admin.elect_leaders(ElectionType.PREFERRED, None).result(30)
        return f"ok {len(result)} partitions"
    except Exception as e:  # ELECTION_NOT_NEEDED, an unsupported API: reported, not fatal
        return f"error {e}"


def _nemesis(target: Target, verbs: list[str], rng: random.Random, history: History,
             stop: threading.Event, ran: dict[str, int]) -> None:
    while not stop.wait(rng.uniform(3, 6)):
        verb = rng.choice(verbs)
        node = rng.choice(target.node_ids)
        try:
            if verb in ("stop", "kill"):
                history.add(type="nemesis", op=verb, node=node)
                target.down(node, verb)
                stop.wait(rng.uniform(2, 5))
                target.up(node)
                history.add(type="nemesis", op="start", node=node)
            elif verb == "isolate":
                history.add(type="nemesis", op="isolate", node=node)
                target.isolate(node)
                stop.wait(rng.uniform(2, 5))
                target.heal(node)
                history.add(type="nemesis", op="heal", node=node)
            else:
                history.add(type="nemesis", op="elect", result=_elect(target.bootstrap))
            ran[verb] = ran.get(verb, 0) + 1
        except Exception as e:
            history.add(type="nemesis_error", op=verb, node=node, error=repr(e))
            ran[f"{verb} failed"] = ran.get(f"{verb} failed", 0) + 1


def run(target: Target, seconds: float, seed: int, verbs: list[str], history: History,
        k: int = 2) -> None:
    rng = random.Random(seed)
    topic = f"jepsen-{seed}-{uuid.uuid4().hex[:6]}"
    _create_topic(target.bootstrap, topic)
    stop_writes, stop_reads, stop_nemesis = threading.Event(), threading.Event(), \
        threading.Event()
    idle: dict[str, float] = {}
    group = f"jepsen-group-{uuid.uuid4().hex[:6]}"
    workers: list[tuple[threading.Thread, threading.Event]] = []

    def spawn(fn: Callable[..., None], stop: threading.Event, *args: Any) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        workers.append((t, stop))

    for i in range(2):
        spawn(_consumer, stop_reads, target.bootstrap, topic, f"g{i}", group,
              "read_committed", history, stop_reads, idle)
    spawn(_consumer, stop_reads, target.bootstrap, topic, "u0", None, "read_uncommitted",
          history, stop_reads, idle)
    for i in range(k):
        spawn(_idempotent, stop_writes, target.bootstrap, topic, f"i{i}", history, stop_writes)
        spawn(_transactional, stop_writes, target.bootstrap, topic, f"t{i}", history,
              stop_writes, random.Random(rng.random()))
    ran: dict[str, int] = {}
    nemesis = threading.Thread(target=_nemesis, daemon=True,
                               args=(target, verbs, random.Random(rng.random()), history,
                                     stop_nemesis, ran))
    if verbs:
        nemesis.start()
    time.sleep(seconds)
    stop_nemesis.set()
    if verbs:
        nemesis.join(300)
    for node in target.node_ids:  # every broker back before the writers finish
        with contextlib.suppress(Exception):  # already up
            target.up(node)
    stop_writes.set()
    for t, s in workers:
        if s is stop_writes:
            t.join(180)
    # the readers drain: no record for 5 s on every consumer
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and any(time.monotonic() - v < 5 for v in idle.values()):
        time.sleep(0.5)
    stop_reads.set()
    for t, s in workers:
        if s is stop_reads:
            t.join(60)
    _final_read(target.bootstrap, topic, history)
    print(f"nemeses run: {', '.join(f'{v} x{n}' for v, n in sorted(ran.items())) or 'none'}",
          flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compat_tests.jepsen")
    ap.add_argument("--target", choices=("odradek", "kafka"), default="odradek")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nemesis", default=",".join(NEMESES),
                    help="comma-separated among " + ", ".join(NEMESES) + " ('' for none)")
    ap.add_argument("--history", type=Path, help="where to write the history (JSON lines)")
    args = ap.parse_args(argv)
    wanted = [v for v in args.nemesis.split(",") if v]
    workdir = Path(tempfile.mkdtemp(prefix=f"jepsen-{args.target}-"))
    path = args.history or workdir / "history.jsonl"
    t0 = time.monotonic()
    try:
        target: Target = (OdradekTarget if args.target == "odradek" else KafkaTarget)(workdir)
    except Exception as e:
        print(f"{args.target}: cluster setup failed: {e!r} (see {workdir})", file=sys.stderr)
        return 2
    if "elect" in wanted and "UNSUPPORTED_FEATURE" in _elect(target.bootstrap):
        target.supported["elect"] = ("the brokers do not serve ElectLeaders "
                                     "(on Odradek: issue #15 'leaders')")
    verbs = []
    for v in wanted:
        why = target.supported.get(v, "unknown nemesis")
        if why:
            print(f"nemesis {v}: skipped ({why})", flush=True)
        else:
            verbs.append(v)
    print(f"{args.target}: {len(target.node_ids)} brokers up in {time.monotonic() - t0:.1f}s; "
          f"{args.seconds:.0f}s, seed {args.seed}, nemeses {verbs or 'none'}; history {path}",
          flush=True)
    history = History(path)
    try:
        run(target, args.seconds, args.seed, verbs, history)
    finally:
        history.close()
        target.close()
    report = check(history.events)
    for line in report.lines():
        print(line)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
