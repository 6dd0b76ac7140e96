"""Data survives restarts: a clean stop, and kill -9 for every acknowledged record."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import ConfigResource, ResourceType
from it_support import (
    TIMEOUT,
    BrokerProcess,
    Rec,
    admin,
    by_partition,
    confluent_consume_all,
    confluent_produce,
    create_topic,
    partition_count,
    topic_name,
)

pytestmark = pytest.mark.timeout(180)


def test_restart_keeps_data(broker: BrokerProcess) -> None:
    name = topic_name()
    create_topic(broker.bootstrap, name, partitions=3, config={"retention.ms": "86400000"})
    sent = [Rec(f"k{i % 7}".encode(), f"v{i}".encode()) for i in range(300)]
    confluent_produce(broker.bootstrap, name, sent[:150])
    confluent_produce(broker.bootstrap, name, sent[150:], compression="lz4")
    before = confluent_consume_all(broker.bootstrap, name, 3)
    assert len(before) == 300

    assert broker.stop() in broker.clean_exit_codes
    broker.start()

    after = confluent_consume_all(broker.bootstrap, name, 3)
    assert after == before  # same records, partitions, offsets and timestamps
    client = admin(broker.bootstrap)
    assert partition_count(client, name) == 3
    resource = ConfigResource(ResourceType.TOPIC, name)
    configs = client.describe_configs([resource])[resource].result(TIMEOUT)
    assert configs["retention.ms"].value == "86400000"

    # Appends continue after the recovered end of each partition.
    ends = {p: len(group) for p, group in by_partition(after).items()}
    more = confluent_produce(broker.bootstrap, name, [Rec(b"k1", b"after restart")])
    assert more[0].offset == ends.get(more[0].partition, 0)


def test_kill_9_keeps_every_acknowledged_record(broker: BrokerProcess) -> None:
    name = topic_name()
    create_topic(broker.bootstrap, name, partitions=2)
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "acks": "all",
            "linger.ms": 2,
            "batch.num.messages": 50,
            "message.timeout.ms": 5000,
        }
    )
    acked: list[Rec] = []
    failed = 0

    def on_delivery(err: object, msg: object) -> None:
        nonlocal failed
        if err is not None:
            failed += 1
            return
        acked.append(
            Rec(msg.key(), msg.value(), partition=msg.partition(), offset=msg.offset())  # type: ignore[attr-defined]
        )

    deadline = time.monotonic() + TIMEOUT
    sent = 0
    while len(acked) < 3000:  # keep records in flight right up to the kill
        assert time.monotonic() < deadline, f"only {len(acked)} acks"
        try:
            producer.produce(
                name, key=b"k%d" % (sent % 11), value=b"v%d" % sent, on_delivery=on_delivery
            )
            sent += 1
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    broker.kill()
    # Reports still queued for acks the broker sent before dying count as acks; the rest fail.
    assert producer.flush(TIMEOUT) == 0
    assert len(acked) + failed == sent

    broker.start()
    stored = confluent_consume_all(broker.bootstrap, name, 2)
    where = {(r.partition, r.offset): (r.key, r.value) for r in stored}
    missing = [r for r in acked if where.get((r.partition, r.offset)) != (r.key, r.value)]
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged records lost: {missing[:3]}"
    for partition, group in by_partition(stored).items():
        offsets = [r.offset for r in group]
        assert offsets == list(range(len(group))), f"gap in partition {partition}"
