"""Error answers that clients rely on: unknown topics without auto-create, and fetching past
the end of the log."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer, TopicPartition
from it_support import (
    TIMEOUT,
    BrokerProcess,
    Rec,
    StartBroker,
    admin,
    confluent_consumer,
    confluent_produce,
    create_topic,
    partition_count,
    topic_name,
)

pytestmark = pytest.mark.timeout(120)


def test_produce_to_missing_topic_without_auto_create(
    start_broker: StartBroker, tmp_path: Path
) -> None:
    broker = start_broker(tmp_path / "data", {"auto.create.topics.enable": "false"})
    name = topic_name()
    client = admin(broker.bootstrap)
    md = client.list_topics(topic=name, timeout=TIMEOUT)
    assert md.topics[name].error is not None
    assert md.topics[name].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART

    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "acks": "all",
            "message.timeout.ms": 10_000,
            "topic.metadata.propagation.max.ms": 1000,
        }
    )
    reports: list[KafkaError | None] = []
    producer.produce(name, value=b"v", on_delivery=lambda err, _msg: reports.append(err))
    assert producer.flush(TIMEOUT) == 0
    (err,) = reports
    assert err is not None, "produce to a missing topic succeeded"
    assert err.code() in (KafkaError._UNKNOWN_TOPIC, KafkaError.UNKNOWN_TOPIC_OR_PART), err
    assert partition_count(client, name) is None  # and it was not created


def test_kafka_python_produce_to_missing_topic_without_auto_create(
    start_broker: StartBroker, tmp_path: Path
) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError, UnknownTopicOrPartitionError

    broker = start_broker(tmp_path / "data", {"auto.create.topics.enable": "false"})
    name = topic_name()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", max_block_ms=3000)
    try:
        with pytest.raises((KafkaTimeoutError, UnknownTopicOrPartitionError)):
            producer.send(name, b"v").get(timeout=TIMEOUT)
    finally:
        producer.close(timeout=10)
    assert partition_count(admin(broker.bootstrap), name) is None


def test_fetch_past_log_end_is_offset_out_of_range(broker: BrokerProcess) -> None:
    name = topic_name()
    create_topic(broker.bootstrap, name)
    confluent_produce(broker.bootstrap, name, [Rec(b"k", b"v%d" % i) for i in range(5)])

    consumer = confluent_consumer(broker.bootstrap, **{"auto.offset.reset": "error"})
    try:
        consumer.assign([TopicPartition(name, 0, 1000)])
        deadline = time.monotonic() + TIMEOUT
        while True:
            assert time.monotonic() < deadline, "no offset-out-of-range error reported"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            assert err is not None, f"got a record at offset {msg.offset()}"
            break
        assert err.code() == KafkaError._AUTO_OFFSET_RESET, err
        assert "out of range" in err.str().lower(), err
    finally:
        consumer.close()


def test_kafka_python_fetch_past_log_end(broker: BrokerProcess) -> None:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition
    from kafka.errors import OffsetOutOfRangeError

    name = topic_name()
    create_topic(broker.bootstrap, name)
    confluent_produce(broker.bootstrap, name, [Rec(b"k", b"v%d" % i) for i in range(5)])

    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, group_id=None, auto_offset_reset="none"
    )
    try:
        tp = KTopicPartition(name, 0)
        consumer.assign([tp])
        consumer.seek(tp, 1000)
        deadline = time.monotonic() + TIMEOUT
        with pytest.raises(OffsetOutOfRangeError):
            while time.monotonic() < deadline:
                records = consumer.poll(timeout_ms=500)
                assert not records, f"got records past the end: {records}"
    finally:
        consumer.close()
