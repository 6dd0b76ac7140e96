"""How long a consumer group takes to form: Odradek and Apache Kafka 4.4 in the same run.

Three confluent-kafka consumers subscribe to one 6-partition topic at the same moment, with
`group.protocol=consumer` (KIP-848: the broker assigns, members learn their partitions from
heartbeats) and, for comparison, `group.protocol=classic` (JoinGroup/SyncGroup, the leader
assigns). The join time is from the subscribe calls until every member holds 2 partitions
and together they hold all 6, each once: a stable assignment, as an application sees it in
`assignment()`. Then one member closes and the time until the other two hold 3 + 3 is the
rebalance time. Client and broker settings are the defaults on both brokers: Kafka's classic
join of a new group waits `group.initial.rebalance.delay.ms` (3 s), where Odradek ends that
phase once every member it handed an id to has joined (odradek/coordinator/group/
coordinator.py); the consumer rows depend on when members heartbeat (at most every
`group.consumer.heartbeat.interval.ms`, 5 s, and at once when their assignment changes).

    python -m bench.group_join [--targets odradek,kafka] [--rounds 3] [--protocols consumer,classic]

Kafka 4.4.0 is the compat harness's oracle (compat_tests/brokers.py; its jars come with
`bash compat_tests/setup.sh`). Only 127.0.0.1 is used.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.brokers import make_broker

PARTITIONS = 6
MEMBERS = 3
LIMIT_S = 60.0


def _owned(consumer: Consumer) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


def _until_balanced(consumers: list[Consumer], each: int, t0: float) -> float:
    """Polls every consumer until each owns `each` partitions, all of them once; seconds
    since t0. Raises TimeoutError after LIMIT_S."""
    while True:
        for c in consumers:
            c.poll(0.02)
        owned = [_owned(c) for c in consumers]
        union = set().union(*owned)
        if (all(len(o) == each for o in owned) and len(union) == PARTITIONS
                and sum(map(len, owned)) == PARTITIONS):
            return time.monotonic() - t0
        if time.monotonic() - t0 > LIMIT_S:
            raise TimeoutError(f"no balanced assignment after {LIMIT_S:.0f} s: {owned}")


def one_round(bootstrap: str, protocol: str) -> tuple[float, float]:
    """(join seconds, rebalance seconds after one member leaves) for a fresh group."""
    topic = f"join-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    group = f"g-{uuid.uuid4().hex[:8]}"
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
            "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    consumers = [Consumer(conf) for _ in range(MEMBERS)]
    try:
        # Metadata first, so the subscribe moment does not include a cold connection.
        for c in consumers:
            c.list_topics(topic, timeout=30)
        t0 = time.monotonic()
        for c in consumers:
            c.subscribe([topic])
        join = _until_balanced(consumers, PARTITIONS // MEMBERS, t0)
        leaver = consumers.pop()
        t1 = time.monotonic()
        leaver.close()
        rebalance = _until_balanced(consumers, PARTITIONS // (MEMBERS - 1), t1)
        return join, rebalance
    finally:
        for c in consumers:
            c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", default="odradek,kafka")
    ap.add_argument("--protocols", default="consumer,classic")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    targets = args.targets.split(",")
    protocols = args.protocols.split(",")
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as work:
        for target in targets:
            broker = make_broker(target, Path(work))
            broker.start()
            try:
                # One warm-up group: the first join also creates __consumer_offsets.
                one_round(broker.bootstrap, protocols[0])
                for _ in range(args.rounds):
                    for protocol in protocols:
                        results.setdefault((target, protocol), []).append(
                            one_round(broker.bootstrap, protocol))
            finally:
                broker.stop()
    print(f"{MEMBERS} confluent-kafka members, {PARTITIONS} partitions, default settings; "
          f"median of {args.rounds} rounds (min-max)")
    print(f"{'broker':8} {'protocol':9} {'join s':>16} {'rebalance s':>18}")
    for (target, protocol), rs in results.items():
        joins = [r[0] for r in rs]
        rebalances = [r[1] for r in rs]
        print(f"{target:8} {protocol:9} {statistics.median(joins):6.2f} "
              f"({min(joins):.2f}-{max(joins):.2f}) {statistics.median(rebalances):7.2f} "
              f"({min(rebalances):.2f}-{max(rebalances):.2f})")


if __name__ == "__main__":
    main()
