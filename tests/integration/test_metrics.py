"""Prometheus metrics (issue #16, docs/metrics.md): a broker with `admin.http.metrics=true`,
scraped after confluent-kafka produced, consumed and committed: the per-topic counts, the
request counts, the group's lag."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from odradek.testing import TestBroker, running_broker, unique_name

pytest.importorskip("prometheus_client")


@pytest.fixture(scope="module")
def broker() -> Iterator[TestBroker]:
    with running_broker({"admin.http.metrics": "true"}, start_timeout=120) as handle:
        yield handle


def scrape(broker: TestBroker) -> dict[str, float]:
    with urllib.request.urlopen(f"{broker.admin_url}/metrics", timeout=10) as resp:
        assert resp.status == 200
        text = resp.read().decode()
    out = {}
    for line in text.splitlines():
        m = re.fullmatch(r"([a-z_]+(?:\{[^}]*\})?) (\S+)", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def test_counts_after_produce_and_consume(broker: TestBroker) -> None:
    topic, group = broker.create_topic(), unique_name("g")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50})
    values = [b"x" * 100 for _ in range(10)]
    for v in values:
        producer.produce(topic, v)
    producer.flush(30)
    for v in values[:5]:  # a second batch, so the lag below is 5 after committing 5
        producer.produce(topic, v)
    producer.flush(30)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    got = 0
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        while got < 15:
            msg = consumer.poll(10)
            assert msg is not None and msg.error() is None
            got += 1
        consumer.commit(offsets=[TopicPartition(topic, 0, 10)], asynchronous=False)
    finally:
        consumer.close()
    m = scrape(broker)
    label = f'{{topic="{topic}"}}'
    assert m[f"kafka_server_brokertopicmetrics_messagesinpersec{label}"] == 15
    bytes_in = m[f"kafka_server_brokertopicmetrics_bytesinpersec{label}"]
    assert 1500 < bytes_in < 3000  # 15 records of 100 bytes, in batches
    assert m[f"kafka_server_brokertopicmetrics_bytesoutpersec{label}"] >= bytes_in
    assert sum(v for k, v in m.items()
               if k.startswith('kafka_network_requestmetrics_requestspersec{request="Produce"')) >= 2
    assert m['kafka_network_requestmetrics_totaltimems_count{request="Fetch"}'] >= 1
    assert m["kafka_server_replicamanager_underreplicatedpartitions"] == 0
    assert m["kafka_server_socket_server_metrics_connection_count"] >= 1  # the test's admin
    assert m[f'kafka_consumergroup_lag{{consumergroup="{group}",partition="0",topic="{topic}"}}'] == 5


def test_a_failed_produce_is_not_counted(broker: TestBroker) -> None:
    topic = broker.create_topic()
    broker.faults.add("Produce", error="NOT_LEADER_OR_FOLLOWER", count=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "retry.backoff.ms": 20})
    producer.produce(topic, b"once")
    producer.flush(30)
    m = scrape(broker)
    assert m[f'kafka_server_brokertopicmetrics_messagesinpersec{{topic="{topic}"}}'] == 1
    assert m["odradek_faults_injected"] == 1


def test_metrics_are_opt_in() -> None:
    with running_broker(start_timeout=120) as plain, pytest.raises(urllib.error.HTTPError,
                                                                   match="404"):
        urllib.request.urlopen(f"{plain.admin_url}/metrics", timeout=10)
