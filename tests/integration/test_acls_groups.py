"""ACLs on what groups reach through the coordinator (issue #13), on Odradek and on Kafka 4.4
(`ODRADEK_IT_SERVER_CMD="python -m compat_tests.kafka_it_server"`):

- a KIP-848 consumer subscribed with a regex is assigned only the matching topics its
  principal may DESCRIBE (Kafka's TopicRegexResolver filters the resolution with the
  member's request context)."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer
from confluent_kafka.admin import AclOperation, ResourceType
from it_support import TIMEOUT, Rec, StartBroker, confluent_produce, create_topic, topic_name
from test_acls import SETTINGS, add, allow

GROUPS = {**SETTINGS, "group.consumer.heartbeat.interval.ms": "500",
          "group.consumer.session.timeout.ms": "6000"}


def test_regex_assigns_only_the_topics_the_member_may_describe(start_broker: StartBroker,
                                                                tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", GROUPS)
    bs = broker.bootstrap
    prefix = topic_name("rx")
    a, b = prefix + "-a", prefix + "-b"
    for t in (a, b):
        create_topic(bs, t, 2)
        confluent_produce(bs, t, [Rec(key=b"k", value=t.encode())])
    # READ (which implies DESCRIBE) on a; b has an ACL for someone else only, so
    # allow.everyone.if.no.acl.found no longer lets User:ANONYMOUS describe it.
    add(bs, allow(ResourceType.TOPIC, a, AclOperation.READ),
        allow(ResourceType.TOPIC, b, AclOperation.READ, principal="User:someone-else"))
    c = Consumer({"bootstrap.servers": bs, "group.id": topic_name("g"),
                  "group.protocol": "consumer", "auto.offset.reset": "earliest",
                  "fetch.wait.max.ms": 100})
    try:
        c.subscribe([f"^{prefix}-.*"])
        got: list[str] = []
        deadline = time.monotonic() + TIMEOUT
        while not got and time.monotonic() < deadline:
            msg = c.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.topic())
        assert got == [a]
        # Several heartbeats later, still only a's partitions.
        end = time.monotonic() + 3
        while time.monotonic() < end:
            msg = c.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg.topic())
        assert got == [a]
        assert sorted((tp.topic, tp.partition) for tp in c.assignment()) == [(a, 0), (a, 1)]
    finally:
        c.close()
