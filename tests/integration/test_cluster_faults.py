"""Hard failures of `odradek serve --brokers 3` (docs/cluster.md "Hard failures") driven by
confluent-kafka (librdkafka): an acks=all idempotent producer through a killed leader
(fenced only after broker.session.timeout.ms), an isolated leader (acks=all cannot
complete; acks=1 records it took are truncated when it rejoins, as Kafka's data loss with
acks=1), and a slowed follower leaving and rejoining the ISR (replica.lag.time.max.ms), slowed and
healed through `odradek cluster slow|heal`.

Odradek-only: the failures are injected through Odradek's admin endpoint. Timers are short
(session 1.5 s, lag 1 s) to keep the tests fast."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from it_support import TIMEOUT, StartBroker, create_topic, topic_name, wait_until

from odradek.cli import main
from odradek.client.cluster import ClusterAdmin

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(bool(os.environ.get("ODRADEK_IT_SERVER_CMD")),
                       reason="odradek's simulated cluster and its admin endpoint"),
]

SESSION_MS = 1500
LAG_MS = 1000


def _cluster(start_broker: StartBroker, tmp_path: Path) -> tuple[str, ClusterAdmin]:
    broker = start_broker(tmp_path / "data", {
        "simulated.brokers": "3", "admin.http.port": "0",
        "broker.session.timeout.ms": str(SESSION_MS),
        "replica.lag.time.max.ms": str(LAG_MS)})
    assert broker.admin_url is not None
    control = ClusterAdmin(broker.admin_url)
    bootstrap = ",".join(b["endpoints"][0].split("://")[1]
                         for b in control.describe()["brokers"])
    return bootstrap, control


def _read_all(bootstrap: str, name: str, end: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic_name("g"),
                  "enable.auto.commit": False})
    c.assign([TopicPartition(name, 0, 0)])
    out: list[bytes] = []
    try:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline and len(out) < end:
            m = c.poll(0.2)
            if m is not None and not m.error():
                out.append(m.value())
    finally:
        c.close()
    return out


def _hw(control: ClusterAdmin, name: str) -> int:
    return int(control.partition(name)["high_watermark"])


def test_an_idempotent_acks_all_producer_loses_and_doubles_nothing_through_a_leader_kill(
        start_broker: StartBroker, tmp_path: Path) -> None:
    bootstrap, control = _cluster(start_broker, tmp_path)
    name = topic_name()
    create_topic(bootstrap, name, replication_factor=3, config={"min.insync.replicas": "2"})
    leader = control.leader(name)
    acked: list[int] = []
    failed: list[Any] = []

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        (failed.append(err) if err is not None else acked.append(int(msg.value())))

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 2, "reconnect.backoff.max.ms": 200})
    total = 3000
    for i in range(total):
        p.produce(name, value=str(i).encode(), on_delivery=on_delivery)
        p.poll(0)
        if i == 1000:
            killed_at = time.monotonic()
            control.kill(leader)
            state = control.partition(name)
            assert state["leader"] == leader  # not fenced yet: no reachable leader
    assert p.flush(TIMEOUT * 2) == 0
    assert failed == []
    state = control.partition(name)
    assert state["leader"] not in (leader, -1) and state["leader_epoch"] == 1
    assert leader not in state["isr"]
    assert time.monotonic() - killed_at >= SESSION_MS / 1000  # fenced only after the session
    assert sorted(acked) == list(range(total))
    values = [int(v) for v in _read_all(bootstrap, name, total)]
    assert sorted(values) == list(range(total))  # none lost, none doubled
    control.start(leader)
    state = wait_until(lambda: (s := control.partition(name)) and len(s["isr"]) == 3 and s,
                       what="the restarted broker back in the ISR")
    assert state["high_watermark"] == total


def test_an_isolated_leader_times_out_acks_all_and_loses_its_acks_1_records(
        start_broker: StartBroker, tmp_path: Path) -> None:
    bootstrap, control = _cluster(start_broker, tmp_path)
    name = topic_name()
    create_topic(bootstrap, name, replication_factor=3, config={"min.insync.replicas": "2"})
    leader = control.leader(name)
    strong = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                       "enable.idempotence": True})
    for i in range(10):
        strong.produce(name, value=f"before-{i}".encode())
    assert strong.flush(TIMEOUT) == 0 and _hw(control, name) == 10

    control.isolate(leader)
    weak_acked: list[int] = []
    weak = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0})
    for i in range(5):
        weak.produce(name, value=f"acks1-{i}".encode(),
                     on_delivery=lambda e, m: e is None and weak_acked.append(m.offset()))
    assert weak.flush(TIMEOUT) == 0
    assert len(weak_acked) == 5  # the isolated leader took them: it still leads
    outcome: list[Any] = []
    timed = Producer({"bootstrap.servers": bootstrap, "acks": "all", "retries": 0,
                      "request.timeout.ms": 800, "message.timeout.ms": 1000})
    timed.produce(name, value=b"acks-all-to-isolated",
                  on_delivery=lambda e, m: outcome.append(e))
    timed.flush(TIMEOUT)
    assert outcome and outcome[0] is not None  # not acknowledged: no replica can follow
    assert outcome[0].code() in (KafkaError.REQUEST_TIMED_OUT, KafkaError._MSG_TIMED_OUT,
                                 KafkaError._TIMED_OUT)
    assert _hw(control, name) == 10

    state = wait_until(lambda: (s := control.partition(name))["leader"] != leader and s,
                       what="the isolated leader fenced")
    assert state["leader_epoch"] == 1 and leader not in state["isr"]
    for i in range(5):
        strong.produce(name, value=f"after-{i}".encode())
    assert strong.flush(TIMEOUT) == 0
    control.heal(leader)
    wait_until(lambda: len(control.partition(name)["isr"]) == 3, what="healed broker in ISR")
    values = _read_all(bootstrap, name, 15)
    assert values == [f"before-{i}".encode() for i in range(10)] + [
        f"after-{i}".encode() for i in range(5)]  # the acks=1 records are gone
    control.stop(control.leader(name))  # the healed broker's replica holds the same
    new = control.partition(name)
    assert new["leader"] in (leader, *state["isr"])
    assert _read_all(bootstrap, name, 15) == values


def test_a_slowed_follower_leaves_the_isr_and_rejoins_when_the_delay_ends(
        start_broker: StartBroker, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap, control = _cluster(start_broker, tmp_path)
    name = topic_name()
    create_topic(bootstrap, name, replication_factor=3, config={"min.insync.replicas": "2"})
    state = control.partition(name)
    follower = next(r for r in state["replicas"] if r != state["leader"])
    url = control._http.url
    assert main(["cluster", "slow", str(follower), "--delay-ms", str(3 * LAG_MS), "-a", url,
                 "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["brokers"][follower - 1]["delay_ms"] == 3 * LAG_MS
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    deadline = time.monotonic() + 20
    left = False
    while time.monotonic() < deadline and not left:
        for _ in range(20):
            p.produce(name, value=b"x")
        p.flush(TIMEOUT)
        left = follower not in control.partition(name)["isr"]
    assert left, "the slowed follower stayed in the ISR"
    assert control.describe()["brokers"][follower - 1]["delay_ms"] == 3 * LAG_MS
    assert main(["cluster", "heal", str(follower), "-a", url]) == 0
    assert f"broker {follower}: live" in capsys.readouterr().out
    assert main(["cluster", "kill", "9", "-a", url]) == 2  # no such broker
    p.produce(name, value=b"y")
    p.flush(TIMEOUT)
    wait_until(lambda: follower in control.partition(name)["isr"], timeout=10,
               what="the follower back in the ISR")
