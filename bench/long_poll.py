"""End-to-end latency with a long-polling consumer at a steady produce rate.

One librdkafka producer (confluent-kafka; acks=all, linger 5 ms as the client's default) sends
`--rate` records/s of `--size` bytes to a one-partition topic, paced in 1 ms ticks; one
librdkafka consumer assigned to that partition long-polls it with `fetch.wait.max.ms=500` and
`fetch.min.bytes=1`. Each record carries its send time (`time.time_ns()` just before
`produce()`); the consumer takes the difference on receipt. Reported per broker: end-to-end
p50/p99/p99.9/max in ms, and the longest delivery gap (the longest time between two consecutive
records reaching the consumer while records kept being sent: at 5,000/s a healthy broker's gap
is a few ms, a missed wake-up shows as a gap near `fetch.wait.max.ms`).

Brokers, in the same run, interleaved round by round: this checkout (`odradek`); with
`--baseline PATH` the Odradek of another checkout (e.g. `git worktree add /tmp/base main`);
with `--reference` Apache Kafka 4.4 (the compat matrix's launcher; `bash compat_tests/setup.sh`
once).

    python -m bench.long_poll [--rate 5000] [--seconds 10] [--size 100] [--rounds 2]
                              [--baseline PATH ...] [--reference]
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import statistics
import struct
import tempfile
import time
import uuid
from pathlib import Path

from compat_tests.brokers import OdradekBroker, make_broker

_WARMUP_S = 1.0  # records sent in the first second are not counted (connections, metadata)


def _produce(bootstrap: str, topic: str, rate: int, seconds: float, size: int, linger_ms: int,
             go: mp.Event, q: mp.Queue) -> None:  # type: ignore[type-arg]
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": linger_ms,
                  "enable.idempotence": False, "compression.type": "none"})
    pad = b"x" * max(size - 8, 0)
    go.wait(60)
    start = time.perf_counter()
    sent = 0
    while True:
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            break
        due = int(elapsed * rate) + 1
        while sent < due:
            p.produce(topic, struct.pack(">q", time.time_ns()) + pad, partition=0)
            sent += 1
        p.poll(0)
        time.sleep(0.001)
    p.flush(30)
    q.put(("produced", sent))


def _consume(bootstrap: str, topic: str, ready: mp.Event, done: mp.Event,
             q: mp.Queue) -> None:  # type: ignore[type-arg]
    from confluent_kafka import OFFSET_END, Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"lp-{uuid.uuid4()}",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 500,
                  "fetch.min.bytes": 1, "auto.offset.reset": "latest"})
    c.assign([TopicPartition(topic, 0, OFFSET_END)])
    # wait until the consumer fetches (an empty poll with the partition resolved)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        c.poll(0.1)
        pos = c.position([TopicPartition(topic, 0)])[0].offset
        if pos >= 0:
            break
    ready.set()
    lat: list[tuple[int, int]] = []  # (received ns, sent ns)
    idle_until = None
    while True:
        # poll(), not consume(n, timeout): consume waits for n records or the whole timeout
        m = c.poll(0.05)
        now = time.time_ns()
        if m is not None and m.error() is None:
            lat.append((now, struct.unpack_from(">q", m.value())[0]))
        if m is not None:
            idle_until = None
        elif idle_until is None:
            idle_until = time.monotonic() + 3.0
        elif time.monotonic() > idle_until and done.is_set():
            break
    c.close()
    q.put(("consumed", lat))


def run(bootstrap: str, rate: int, seconds: float, size: int, linger_ms: int = 5
        ) -> dict[str, float]:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"lp-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    q_prod: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    q_cons: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    ready, done = mp.Event(), mp.Event()
    cons = mp.Process(target=_consume, args=(bootstrap, topic, ready, done, q_cons))
    cons.start()
    ready.wait(60)
    prod = mp.Process(target=_produce, args=(bootstrap, topic, rate, seconds, size, linger_ms, ready,
                                                q_prod))
    prod.start()
    _, produced = q_prod.get(timeout=seconds + 120)
    done.set()  # the consumer stops after 3 s without records once this is set
    _, lat = q_cons.get(timeout=120)
    prod.join()
    cons.join()
    lat.sort(key=lambda x: x[1])
    t0 = lat[0][1] if lat else 0
    counted = [(r, s) for r, s in lat if s - t0 >= _WARMUP_S * 1e9]
    e2e = sorted((r - s) / 1e6 for r, s in counted)
    received = sorted(r for r, _ in counted)
    gaps = [(b - a) / 1e6 for a, b in itertools.pairwise(received)]

    def pct(p: float) -> float:
        return e2e[min(int(p * len(e2e)), len(e2e) - 1)] if e2e else float("nan")

    return {"p50": pct(0.50), "p99": pct(0.99), "p999": pct(0.999),
            "max": e2e[-1] if e2e else float("nan"), "gap": max(gaps, default=float("nan")),
            "counted": len(counted), "consumed": len(lat), "produced": produced}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=5000, help="records per second")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--size", type=int, default=100, help="record value bytes (>= 8)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--linger", type=int, default=5, help="producer linger.ms")
    ap.add_argument("--reference", action="store_true",
                    help="also run against Apache Kafka 4.4 (jars from compat_tests/setup.sh)")
    ap.add_argument("--baseline", type=Path, action="append", default=[],
                    help="also run the Odradek of this checkout; repeatable")
    args = ap.parse_args()
    baselines: dict[str, Path] = {}
    for path in args.baseline:
        name = path.resolve().name
        while name in baselines or name in ("odradek", "kafka"):
            name += "'"
        baselines[name] = path.resolve()
    targets = ["odradek", *baselines] + (["kafka"] if args.reference else [])
    rounds: dict[str, list[dict[str, float]]] = {t: [] for t in targets}
    with tempfile.TemporaryDirectory() as work:
        for i in range(args.rounds):
            for target in targets[i % len(targets):] + targets[:i % len(targets)]:
                if target in baselines:
                    broker = OdradekBroker(Path(tempfile.mkdtemp(dir=work)),
                                           Path(work) / f"broker-{target}.log",
                                           source=baselines[target])
                else:
                    broker = make_broker(target, Path(work))
                broker.start()
                try:
                    r = run(broker.bootstrap, args.rate, args.seconds, args.size, args.linger)
                finally:
                    broker.stop()
                rounds[target].append(r)
                print(f"round {i + 1} {target:12} p50 {r['p50']:7.1f} p99 {r['p99']:7.1f} "
                      f"p99.9 {r['p999']:7.1f} max {r['max']:7.1f} gap {r['gap']:7.1f} ms  "
                      f"consumed {r['consumed']:.0f}/{r['produced']:.0f}", flush=True)
    print(f"{args.rate} records/s x {args.size} B for {args.seconds:.0f} s, linger.ms="
          f"{args.linger} (first "
          f"{_WARMUP_S:.0f} s not counted), fetch.wait.max.ms=500, fetch.min.bytes=1; "
          f"median of {args.rounds} round(s), worst gap of all rounds; ms")
    print(f"{'broker':14} {'p50':>7} {'p99':>7} {'p99.9':>7} {'max':>7} {'worst gap':>10}")
    for name, rs in rounds.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("p50", "p99", "p999", "max")}
        print(f"{name:14} {med['p50']:7.1f} {med['p99']:7.1f} {med['p999']:7.1f} "
              f"{med['max']:7.1f} {max(r['gap'] for r in rs):10.1f}")


if __name__ == "__main__":
    main()
