"""KIP-848 regex subscriptions with confluent-kafka (librdkafka >= 2.12, group.protocol=consumer):
a topic name starting with "^" is sent as SubscribedTopicRegex and resolved by the broker.

- The consumer subscribes to "^orders-.*" and reads the records of the matching topic, none of
  the others ("payments", "orders" itself: the match is a full match).
- A topic created after the subscription ("orders-us") is picked up by the coordinator's
  regex refresh (at a heartbeat more than 10 s after the last resolution) and its records are
  consumed; the group's description assigns it.
"""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer
from it_support import TIMEOUT, Rec, StartBroker, admin, confluent_produce, create_topic

OVERRIDES = {
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.session.timeout.ms": "6000",
    "offsets.topic.num.partitions": "3",
}


def _poll_until(c: Consumer, want: int, got: list[tuple[str, bytes]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < deadline:
        msg = c.poll(0.2)
        if msg is None:
            continue
        assert not msg.error(), msg.error()
        got.append((msg.topic(), msg.value()))


def test_regex_subscription_picks_up_a_topic_created_later(start_broker: StartBroker,
                                                           tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", OVERRIDES)
    bootstrap = broker.bootstrap
    for topic, partitions in (("orders-eu", 2), ("payments", 1), ("orders", 1)):
        create_topic(bootstrap, topic, partitions)
    confluent_produce(bootstrap, "orders-eu", [Rec(key=b"e%d" % i, value=b"eu%d" % i)
                                               for i in range(6)])
    confluent_produce(bootstrap, "payments", [Rec(key=b"p", value=b"pay")])
    confluent_produce(bootstrap, "orders", [Rec(key=b"o", value=b"plain")])
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "regex-group",
                  "group.protocol": "consumer", "auto.offset.reset": "earliest",
                  "fetch.wait.max.ms": 100})
    try:
        c.subscribe(["^orders-.*"])
        got: list[tuple[str, bytes]] = []
        _poll_until(c, 6, got, TIMEOUT)
        assert sorted(got) == sorted(("orders-eu", b"eu%d" % i) for i in range(6))

        create_topic(bootstrap, "orders-us", 1)
        confluent_produce(bootstrap, "orders-us", [Rec(key=b"u%d" % i, value=b"us%d" % i)
                                                   for i in range(3)])
        _poll_until(c, 9, got, 10 + TIMEOUT)
        assert sorted(v for t, v in got if t == "orders-us") == [b"us0", b"us1", b"us2"]
        assert {t for t, _ in got} == {"orders-eu", "orders-us"}

        client = admin(bootstrap)  # kept: a collected client abandons its requests
        group = client.describe_consumer_groups(
            ["regex-group"], request_timeout=TIMEOUT)["regex-group"].result(TIMEOUT)
        [member] = group.members
        assigned = {(tp.topic, tp.partition) for tp in member.assignment.topic_partitions}
        assert assigned == {("orders-eu", 0), ("orders-eu", 1), ("orders-us", 0)}
    finally:
        c.close()
