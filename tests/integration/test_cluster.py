"""`odradek serve --brokers 3` (docs/cluster.md) driven by confluent-kafka (librdkafka): an
idempotent acks=all producer and a group consumer through a controlled stop of the
partition's leader, and NOT_ENOUGH_REPLICAS once two of three replicas are down.

Odradek-only: the brokers are stopped and started through Odradek's admin endpoint (the
three-node Apache Kafka oracle is a later milestone of issue #15)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from it_support import TIMEOUT, StartBroker, admin, create_topic, topic_name, wait_until

from odradek.client.cluster import ClusterAdmin

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(bool(os.environ.get("ODRADEK_IT_SERVER_CMD")),
                       reason="odradek's simulated cluster and its admin endpoint"),
]

RECORDS = 4000
STOP_AT = 1500


def _cluster(start_broker: StartBroker, tmp_path: Path) -> tuple[str, ClusterAdmin]:
    broker = start_broker(tmp_path / "data", {"simulated.brokers": "3", "admin.http.port": "0",
                                             "group.initial.rebalance.delay.ms": "0"})
    assert broker.admin_url is not None
    control = ClusterAdmin(broker.admin_url)
    brokers = control.describe()["brokers"]
    assert [b["node_id"] for b in brokers] == [1, 2, 3]
    # every broker as bootstrap: a client can start whichever is stopped
    bootstrap = ",".join(b["endpoints"][0].split("://")[1] for b in brokers)
    md = admin(bootstrap).list_topics(timeout=TIMEOUT)
    assert sorted(md.brokers) == [1, 2, 3]
    assert md.controller_id == 1
    return bootstrap, control


def test_acks_all_idempotent_producer_and_consumer_follow_a_stopped_leader(
        start_broker: StartBroker, tmp_path: Path) -> None:
    bootstrap, control = _cluster(start_broker, tmp_path)
    name = topic_name()
    create_topic(bootstrap, name, partitions=1, replication_factor=3,
                 config={"min.insync.replicas": "2"})
    before = control.partition(name)
    assert sorted(before["replicas"]) == [1, 2, 3] and sorted(before["isr"]) == [1, 2, 3]
    md = admin(bootstrap).list_topics(name, timeout=TIMEOUT).topics[name].partitions[0]
    assert (md.leader, md.replicas, md.isrs) == (before["leader"], before["replicas"],
                                                 before["isr"])

    seen: list[int] = []
    consumer_errors: list[Any] = []
    done = threading.Event()

    def consume() -> None:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic_name("g"),
                      "auto.offset.reset": "earliest", "enable.auto.commit": True})
        c.subscribe([name])
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and len(seen) < RECORDS:
                m = c.poll(0.2)
                if m is None:
                    continue
                if m.error():
                    consumer_errors.append(m.error())
                    continue
                seen.append(int(m.value()))
        finally:
            c.close()
            done.set()

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    acked: list[int] = []
    failed: list[Any] = []

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        if err is None:
            acked.append(int(msg.value()))
        else:
            failed.append(err)

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 2})
    leader = before["leader"]
    for i in range(RECORDS):
        p.produce(name, value=str(i).encode(), on_delivery=on_delivery)
        p.poll(0)
        if i == STOP_AT:
            p.flush(TIMEOUT)  # records acknowledged by the old leader
            assert len(acked) == STOP_AT + 1
            control.stop(leader)
            after = control.partition(name)
            assert after["leader"] not in (leader, -1)
            assert after["leader_epoch"] == before["leader_epoch"] + 1
            assert leader not in after["isr"] and len(after["isr"]) == 2
    assert p.flush(TIMEOUT) == 0
    assert failed == []
    assert sorted(acked) == list(range(RECORDS))  # every record acknowledged, once
    assert done.wait(150)
    assert not [e for e in consumer_errors if e.fatal()]
    assert len(seen) == RECORDS and sorted(seen) == list(range(RECORDS))  # none lost or doubled
    assert seen == sorted(seen)  # in order: one partition
    # the clients follow the new leader: Metadata names it
    md = admin(bootstrap).list_topics(name, timeout=TIMEOUT).topics[name].partitions[0]
    assert md.leader == control.leader(name) != leader

    # the stopped broker comes back, catches up and rejoins the ISR
    control.start(leader)
    state = control.partition(name)
    assert sorted(state["isr"]) == [1, 2, 3] and state["high_watermark"] == RECORDS


def test_not_enough_replicas_once_two_of_three_are_down(
        start_broker: StartBroker, tmp_path: Path) -> None:
    bootstrap, control = _cluster(start_broker, tmp_path)
    name = topic_name()
    create_topic(bootstrap, name, partitions=1, replication_factor=3,
                 config={"min.insync.replicas": "2"})
    replicas = control.partition(name)["replicas"]
    followers = [n for n in replicas if n != control.leader(name)]
    for node in followers:
        control.stop(node)
    assert control.partition(name)["isr"] == [control.leader(name)]
    errors: list[KafkaError | None] = []
    # retries 0: the broker's answer reaches the application instead of being retried
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "retries": 0,
                  "message.timeout.ms": 10000})
    p.produce(name, value=b"x", on_delivery=lambda err, _msg: errors.append(err))
    p.flush(TIMEOUT)
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].code() == KafkaError.NOT_ENOUGH_REPLICAS
    ok: list[KafkaError | None] = []
    p.produce(name, value=b"y", on_delivery=lambda err, _msg: ok.append(err))
    # acks=1 is not held to min.insync.replicas
    p1 = Producer({"bootstrap.servers": bootstrap, "acks": "1"})
    p1.produce(name, value=b"z", on_delivery=lambda err, _msg: ok.append(err))
    p1.flush(TIMEOUT)
    p.flush(TIMEOUT)
    assert sum(e is None for e in ok) == 1  # acks=1 landed; acks=all still refused
    control.start(followers[0])
    wait_until(lambda: len(control.partition(name)["isr"]) == 2, what="ISR of 2")
    again: list[KafkaError | None] = []
    p.produce(name, value=b"w", on_delivery=lambda err, _msg: again.append(err))
    p.flush(TIMEOUT)
    assert len(again) == 1 and again[0] is None
