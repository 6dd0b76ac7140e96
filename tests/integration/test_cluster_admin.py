"""ElectLeaders on `odradek serve --brokers 3` (docs/cluster.md) from a stock client
(confluent-kafka's AdminClient.elect_leaders): a preferred election moving leadership back
to the first replica once it is in sync, and an unclean election making a lagging replica
the leader (the old leader truncates to it when it returns).

Odradek-only: the brokers are stopped and started through Odradek's admin endpoint; the
same answers from Apache Kafka 4.4's three-node cluster are checked by
compat_tests/leader_election_check.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from confluent_kafka import ElectionType, KafkaException, Producer, TopicPartition
from it_support import TIMEOUT, StartBroker, admin, create_topic, topic_name, wait_until

from odradek.client.cluster import ClusterAdmin

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(bool(os.environ.get("ODRADEK_IT_SERVER_CMD")),
                       reason="odradek's simulated cluster and its admin endpoint"),
]


def _cluster(start_broker: StartBroker, tmp_path: Path) -> tuple[str, ClusterAdmin]:
    broker = start_broker(tmp_path / "data", {"simulated.brokers": "3", "admin.http.port": "0"})
    assert broker.admin_url is not None
    control = ClusterAdmin(broker.admin_url)
    brokers = control.describe()["brokers"]
    bootstrap = ",".join(b["endpoints"][0].split("://")[1] for b in brokers)
    return bootstrap, control


def _elect(bootstrap: str, kind: ElectionType, topic: str) -> KafkaException | None:
    client = admin(bootstrap)  # kept alive until the answer (else _DESTROY)
    future = client.elect_leaders(kind, [TopicPartition(topic, 0)])
    try:
        result = future.result(timeout=TIMEOUT)
    except KafkaException as exc:
        return exc
    assert set(result) == {TopicPartition(topic, 0)}
    error = result[TopicPartition(topic, 0)]
    return None if error is None else KafkaException(error)


def _code(exc: KafkaException | None) -> str | None:
    return None if exc is None else exc.args[0].name()


def test_preferred_election_moves_leadership_back(start_broker: StartBroker,
                                                  tmp_path: Path) -> None:
    bootstrap, control = _cluster(start_broker, tmp_path)
    name = topic_name()
    create_topic(bootstrap, name, partitions=1, replication_factor=3)
    preferred = control.partition(name)["replicas"][0]
    assert _code(_elect(bootstrap, ElectionType.PREFERRED, name)) == "ELECTION_NOT_NEEDED"
    control.stop(preferred)
    assert _code(_elect(bootstrap, ElectionType.PREFERRED, name)) == \
        "PREFERRED_LEADER_NOT_AVAILABLE"
    control.start(preferred)
    state = control.partition(name)
    assert state["leader"] != preferred and preferred in state["isr"]
    assert _elect(bootstrap, ElectionType.PREFERRED, name) is None
    after = control.partition(name)
    assert (after["leader"], after["leader_epoch"]) == (preferred, state["leader_epoch"] + 1)
    wait_until(lambda: admin(bootstrap).list_topics(name, timeout=TIMEOUT)
               .topics[name].partitions[0].leader == preferred, what="metadata names it")


def test_unclean_election_elects_the_lagging_replica(start_broker: StartBroker,
                                                     tmp_path: Path) -> None:
    bootstrap, control = _cluster(start_broker, tmp_path)
    name = topic_name()
    create_topic(bootstrap, name, partitions=1, replication_factor=2)
    leader, follower = control.partition(name)["replicas"]
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1"})

    def send(value: bytes) -> None:
        producer.produce(name, value, partition=0)
        assert producer.flush(TIMEOUT) == 0

    send(b"both")
    control.stop(follower)
    send(b"leader-only-1")
    send(b"leader-only-2")
    control.stop(leader)
    control.start(follower)
    assert control.partition(name)["leader"] == -1
    assert _code(_elect(bootstrap, ElectionType.UNCLEAN, name)) is None
    state = control.partition(name)
    assert (state["leader"], state["isr"], state["high_watermark"]) == (follower, [follower], 1)
    assert _code(_elect(bootstrap, ElectionType.UNCLEAN, name)) == "ELECTION_NOT_NEEDED"
    control.start(leader)  # truncates its two leader-only records, then catches up
    wait_until(lambda: sorted(control.partition(name)["isr"]) == sorted([leader, follower]),
               what="the old leader rejoins the ISR")
    assert control.partition(name)["high_watermark"] == 1
