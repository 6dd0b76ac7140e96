"""Produce and consume throughput with stock librdkafka clients (confluent-kafka).

Several client processes run at once so the client is not the bottleneck. Prints MB/s and
records/s for produce (acks=all) and consume, against Odradek and, with `--reference`, against
a real Apache Kafka 4.1 broker started from Maven Central jars in the same run (the compat
matrix's launcher: run `bash compat_tests/setup.sh` once), with ratios.

    python -m bench.throughput [--records 200000] [--size 1024] [--procs 2] [--reference]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import tempfile
import time
import uuid
from pathlib import Path

from compat_tests.brokers import make_broker


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


def run(bootstrap: str, records: int, size: int, procs: int) -> dict[str, float]:
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
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    results = [q.get(timeout=300) for _ in workers]
    produce_s = time.perf_counter() - t0
    for w in workers:
        w.join()
    errors = sum(e for _, e in results)
    workers = [mp.Process(target=_consume, args=(bootstrap, topic, i, q)) for i in range(procs)]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    got = [q.get(timeout=300) for _ in workers]
    consume_s = time.perf_counter() - t0
    for w in workers:
        w.join()
    consumed = sum(n for _, n in got)
    total = per * procs
    mb = total * size / 1e6
    return {"produce_mb_s": mb / produce_s, "produce_rec_s": total / produce_s,
            "consume_mb_s": consumed * size / 1e6 / consume_s, "consume_rec_s": consumed / consume_s,
            "errors": errors, "consumed": consumed, "expected": total}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--reference", action="store_true",
                    help="also run against Apache Kafka 4.1 (jars from compat_tests/setup.sh)")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for target in ["odradek", "kafka"] if args.reference else ["odradek"]:
            broker = make_broker(target, Path(work), {"num.partitions": str(args.procs)})
            broker.start()
            try:
                rows.append((target, run(broker.bootstrap, args.records, args.size, args.procs)))
            finally:
                broker.stop()
    print(f"{args.records} records x {args.size} B, {args.procs} producer and consumer processes")
    print(f"{'broker':10} {'produce MB/s':>13} {'produce rec/s':>14} {'consume MB/s':>13} {'consume rec/s':>14} {'errors':>7}")
    for name, r in rows:
        print(f"{name:10} {r['produce_mb_s']:13.1f} {r['produce_rec_s']:14.0f} {r['consume_mb_s']:13.1f} "
              f"{r['consume_rec_s']:14.0f} {r['errors']:7.0f}  consumed {r['consumed']:.0f}/{r['expected']:.0f}")
    if len(rows) == 2:
        ours, k = rows[0][1], rows[1][1]
        print(f"ratio odradek/kafka: produce {ours['produce_mb_s'] / k['produce_mb_s']:.2f}, "
              f"consume {ours['consume_mb_s'] / k['consume_mb_s']:.2f}")


if __name__ == "__main__":
    main()
