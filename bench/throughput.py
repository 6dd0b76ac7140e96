"""Produce and consume throughput with stock librdkafka clients (confluent-kafka).

Several client processes run at once so the client is not the bottleneck. Prints MB/s,
records/s and the broker's CPU seconds per GB moved (user + system time of the broker
process, from /proc) for produce (acks=all) and consume, against Odradek and, in the same run:
- with `--reference`, a real Apache Kafka 4.4 broker started from Maven Central jars (the
  compat matrix's launcher: run `bash compat_tests/setup.sh` once), with ratios;
- with `--baseline PATH`, the Odradek of another checkout (e.g. `git worktree add /tmp/base
  <commit>`), to show what a change does to the data path; repeat it for more checkouts
  (each row is named by its folder); `--rounds N` alternates the brokers N times and reports
  the median.

    python -m bench.throughput [--records 200000] [--size 1024] [--procs 2] [--reference]
                               [--baseline PATH ...] [--rounds 1] [--consume-passes 1]

`--consume-passes N` reads the topic N times per broker; the first pass is the row above (it
includes what the broker's first fetches cost once), passes 2..N are reported apart: the
steady-state cost of the fetch path.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from compat_tests.brokers import OdradekBroker, make_broker

_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (and its waited-for children) from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return (utime + stime + cutime + cstime) / _TICK


def _produce(bootstrap: str, topic: str, records: int, size: int, q: mp.Queue) -> None:  # type: ignore[type-arg]
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "batch.size": 512 * 1024, "compression.type": "none",
                  "queue.buffering.max.messages": 1_000_000, "enable.idempotence": False})
    value = b"x" * size
    errors = 0

    def cb(err: object, _msg: object) -> None:
        nonlocal errors
        if err is not None:
            errors += 1

    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                p.produce(topic, value, key=str(i).encode(), on_delivery=cb)
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
    p.flush(120)
    q.put((time.perf_counter() - start, errors))


def _consume(bootstrap: str, topic: str, partition: int, q: mp.Queue) -> None:  # type: ignore[type-arg]
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                  "enable.auto.commit": False, "fetch.max.bytes": 50 * 1024 * 1024,
                  "max.partition.fetch.bytes": 10 * 1024 * 1024})
    expected = c.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[1]
    c.assign([TopicPartition(topic, partition, 0)])
    got = 0
    start = time.perf_counter()
    deadline = start + 120
    while got < expected and time.perf_counter() < deadline:
        for m in c.consume(10_000, 1.0):
            if m.error() is None:
                got += 1
    elapsed = time.perf_counter() - start
    c.close()
    q.put((elapsed, got))


def _consume_once(bootstrap: str, topic: str, procs: int, pid: int,
                  q: mp.Queue) -> tuple[float, float, int]:  # type: ignore[type-arg]
    """One consume pass from offset 0: (seconds, broker CPU seconds, records)."""
    workers = [mp.Process(target=_consume, args=(bootstrap, topic, i, q)) for i in range(procs)]
    cpu0 = cpu_seconds(pid)
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    got = [q.get(timeout=300) for _ in workers]
    consume_s = time.perf_counter() - t0
    consume_cpu = cpu_seconds(pid) - cpu0
    for w in workers:
        w.join()
    return consume_s, consume_cpu, sum(n for _, n in got)


def run(bootstrap: str, records: int, size: int, procs: int, pid: int,
        consume_passes: int = 1) -> dict[str, float]:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([NewTopic(topic, procs, 1)])[topic].result(30)
    except Exception as e:  # a broker without CreateTopics auto-creates with num.partitions
        print(f"create_topics failed ({e}); relying on auto-creation")
    per = records // procs
    q: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    workers = [mp.Process(target=_produce, args=(bootstrap, topic, per, size, q)) for _ in range(procs)]
    cpu0 = cpu_seconds(pid)
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    results = [q.get(timeout=300) for _ in workers]
    produce_s = time.perf_counter() - t0
    produce_cpu = cpu_seconds(pid) - cpu0
    for w in workers:
        w.join()
    errors = sum(e for _, e in results)
    passes = [_consume_once(bootstrap, topic, procs, pid, q) for _ in range(consume_passes)]
    consume_s, consume_cpu, consumed = passes[0]
    # Later passes (same broker, same topic, page cache warm) leave out what a broker's first
    # fetches cost once (first-use imports, opening segments): the steady state.
    again = passes[1:] or passes
    again_s = statistics.median(p[0] for p in again)
    again_cpu = statistics.median(p[1] for p in again)
    total = per * procs
    mb = total * size / 1e6
    consumed_mb = consumed * size / 1e6
    return {"produce_mb_s": mb / produce_s, "produce_rec_s": total / produce_s,
            "produce_cpu_s_gb": produce_cpu / (mb / 1000),
            "consume_mb_s": consumed_mb / consume_s, "consume_rec_s": consumed / consume_s,
            "consume_cpu_s_gb": consume_cpu / max(consumed_mb / 1000, 1e-9),
            "again_mb_s": consumed_mb / again_s,
            "again_cpu_s_gb": again_cpu / max(consumed_mb / 1000, 1e-9),
            "errors": errors, "consumed": consumed, "expected": total}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--reference", action="store_true",
                    help="also run against Apache Kafka 4.4 (jars from compat_tests/setup.sh)")
    ap.add_argument("--baseline", type=Path, action="append", default=[],
                    help="also run the Odradek of this checkout (a worktree of another "
                         "commit); repeatable")
    ap.add_argument("--rounds", type=int, default=1, help="alternate the brokers this often")
    ap.add_argument("--consume-passes", type=int, default=1,
                    help="read the topic this often per broker; passes after the first are "
                         "reported apart (warm: no first-use costs)")
    args = ap.parse_args()
    baselines: dict[str, Path] = {}
    for path in args.baseline:
        name = path.resolve().name
        while name in baselines or name in ("odradek", "kafka"):
            name += "'"
        baselines[name] = path.resolve()
    targets = ["odradek", *baselines] + (["kafka"] if args.reference else [])
    rounds: dict[str, list[dict[str, float]]] = {t: [] for t in targets}
    overrides = {"num.partitions": str(args.procs)}
    with tempfile.TemporaryDirectory() as work:
        for i in range(args.rounds):
            # Each round starts with the next broker: none always runs first (cold caches)
            # or last (after the others' page cache and heat).
            for target in targets[i % len(targets):] + targets[:i % len(targets)]:
                if target in baselines:
                    broker = OdradekBroker(Path(tempfile.mkdtemp(dir=work)),
                                           Path(work) / f"broker-{target}.log", overrides,
                                           source=baselines[target])
                else:
                    broker = make_broker(target, Path(work), overrides)
                broker.start()
                try:
                    assert broker.proc is not None
                    rounds[target].append(run(broker.bootstrap, args.records, args.size,
                                              args.procs, broker.proc.pid,
                                              args.consume_passes))
                finally:
                    broker.stop()
    rows = [(t, {k: statistics.median(r[k] for r in rs) for k in rs[0]})
            for t, rs in rounds.items()]
    print(f"{args.records} records x {args.size} B, {args.procs} producer and consumer processes, "
          f"median of {args.rounds} round(s); CPU: broker process user+system s per GB")
    print(f"{'broker':14} {'produce MB/s':>13} {'CPU s/GB':>9} {'consume MB/s':>13} "
          f"{'CPU s/GB':>9} {'errors':>7}")
    for name, r in rows:
        print(f"{name:14} {r['produce_mb_s']:13.1f} {r['produce_cpu_s_gb']:9.2f} "
              f"{r['consume_mb_s']:13.1f} {r['consume_cpu_s_gb']:9.2f} {r['errors']:7.0f}  "
              f"consumed {r['consumed']:.0f}/{r['expected']:.0f}")
    if args.consume_passes > 1:
        print(f"consume passes 2..{args.consume_passes} (median per round, then of rounds):")
        for name, r in rows:
            print(f"{name:14} consume MB/s {r['again_mb_s']:7.1f}  CPU s/GB "
                  f"{r['again_cpu_s_gb']:5.2f}  by round: "
                  + ", ".join(f"{x['again_cpu_s_gb']:.2f}" for x in rounds[name]))
    if args.rounds > 1:  # the spread: one change's effect is often smaller than it
        for name, rs in rounds.items():
            print(f"{name:14} produce CPU s/GB by round: "
                  + ", ".join(f"{r['produce_cpu_s_gb']:.2f}" for r in rs))
    ours = rows[0][1]
    for name, other in rows[1:]:
        print(f"ratio odradek/{name}: produce {ours['produce_mb_s'] / other['produce_mb_s']:.2f} "
              f"(CPU {ours['produce_cpu_s_gb'] / other['produce_cpu_s_gb']:.2f}), "
              f"consume {ours['consume_mb_s'] / other['consume_mb_s']:.2f} "
              f"(CPU {ours['consume_cpu_s_gb'] / other['consume_cpu_s_gb']:.2f})")
        if args.rounds > 1:  # within a round the brokers ran minutes apart, not hours
            paired = [a["produce_cpu_s_gb"] / b["produce_cpu_s_gb"]
                      for a, b in zip(rounds["odradek"], rounds[name], strict=True)]
            print(f"  produce CPU odradek/{name} round by round: "
                  + ", ".join(f"{x:.2f}" for x in paired)
                  + f"; median {statistics.median(paired):.2f}")


if __name__ == "__main__":
    main()
