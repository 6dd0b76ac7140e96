"""Zero-copy Fetch (issue #12): records sent with sendfile from the segment files, read by
stock clients that check every batch's CRC: across segment rolls, while retention deletes the
segments being read (file.delete.delay.ms=0: unlinked at once, so only the pinned descriptor
keeps an in-flight response whole), read_committed with aborted transactions, and records
larger than the consumer's fetch sizes (KIP-74: the first batch comes whole)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from it_support import (
    TIMEOUT,
    BrokerProcess,
    Rec,
    StartBroker,
    confluent_consume_all,
    confluent_produce,
    create_topic,
    kafka_python_consume_all,
    topic_name,
)

MiB = 1 << 20
CONSUMERS = {"confluent": confluent_consume_all, "kafka-python": kafka_python_consume_all}


def value(i: int, size: int) -> bytes:
    """A value that names its record, so a corrupt or misplaced byte range is caught."""
    head = b"%08d:" % i
    return head + bytes((i + j) % 251 for j in range(size - len(head)))


def segment_files(broker: BrokerProcess, topic: str) -> list[Path]:
    return sorted(broker.data_dir.glob(f"{topic}-0/*.log"))


@pytest.mark.parametrize("client", sorted(CONSUMERS))
def test_consume_across_segment_rolls(broker: BrokerProcess, client: str) -> None:
    topic = topic_name("roll")
    create_topic(broker.bootstrap, topic, 1, {"segment.bytes": str(MiB)})
    recs = [Rec(key=b"%d" % i, value=value(i, 10_000), partition=0) for i in range(600)]
    confluent_produce(broker.bootstrap, topic, recs)
    assert len(segment_files(broker, topic)) >= 5  # ~6 MB in 1 MiB segments
    got = CONSUMERS[client](broker.bootstrap, topic, 1)
    assert [(r.offset, r.key, r.value) for r in got] == [
        (i, r.key, r.value) for i, r in enumerate(recs)]


def test_retention_deletes_segments_while_they_are_consumed(start_broker: StartBroker,
                                                            tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", {"log.retention.check.interval.ms": "50"})
    topic = topic_name("retention")
    create_topic(broker.bootstrap, topic, 1,
                 {"segment.bytes": str(MiB), "retention.bytes": str(2 * MiB),
                  "file.delete.delay.ms": "0"})
    size, total = 20_000, 1500  # ~30 MB through a log that keeps ~3 MB
    done = threading.Event()
    errors: list[Any] = []

    def produce() -> None:
        p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5})
        try:
            for i in range(total):
                while True:
                    try:
                        p.produce(topic, value(i, size), key=b"%d" % i, partition=0,
                                  on_delivery=lambda e, _m: e and errors.append(e))
                        break
                    except BufferError:
                        p.poll(0.05)
                p.poll(0)
                if i % 50 == 0:
                    p.flush(TIMEOUT)  # paced: the consumer keeps up with the head of the log
            p.flush(TIMEOUT)
        finally:
            done.set()

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": topic_name("g"),
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "check.crcs": True, "fetch.max.bytes": MiB,
                         "max.partition.fetch.bytes": 256 * 1024, "fetch.wait.max.ms": 50})
    thread = threading.Thread(target=produce)
    thread.start()
    seen: list[int] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 4 * TIMEOUT
        while not (done.is_set() and seen and seen[-1] == total - 1):
            assert time.monotonic() < deadline, f"consumed up to {seen[-1:]} of {total}"
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            i = int(msg.key())
            assert msg.value() == value(i, size), f"record {i} arrived corrupt"
            assert i == msg.offset()
            assert not seen or i > seen[-1]
            seen.append(i)
    finally:
        consumer.close()
        thread.join(TIMEOUT)
    assert not errors
    assert len(segment_files(broker, topic)) <= 5  # retention did delete what was read
    assert len(seen) > total // 2


def transactional(bootstrap: str, topic: str, batches: list[tuple[list[int], bool]]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": topic_name("tx"),
                  "linger.ms": 5})
    p.init_transactions(TIMEOUT)
    for indexes, commit in batches:
        p.begin_transaction()
        for i in indexes:
            p.produce(topic, value(i, 3000), key=b"%d" % i, partition=0)
        p.flush(TIMEOUT)
        if commit:
            p.commit_transaction(TIMEOUT)
        else:
            p.abort_transaction(TIMEOUT)


def read_committed(bootstrap: str, topic: str, client: str) -> list[int]:
    if client == "kafka-python":
        from kafka import KafkaConsumer
        from kafka import TopicPartition as KTopicPartition

        kc = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                           enable_auto_commit=False, fetch_max_wait_ms=100,
                           max_partition_fetch_bytes=20_000)
        try:
            tp = KTopicPartition(topic, 0)
            kc.assign([tp])
            kc.seek(tp, 0)
            end = kc.end_offsets([tp])[tp]
            out: list[int] = []
            deadline = time.monotonic() + TIMEOUT
            while kc.position(tp) < end:
                assert time.monotonic() < deadline
                for msgs in kc.poll(timeout_ms=500).values():
                    out += [int(m.key) for m in msgs if m.value == value(int(m.key), 3000)]
            return out
        finally:
            kc.close()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": topic_name("g"),
                  "isolation.level": "read_committed", "enable.partition.eof": True,
                  "check.crcs": True, "max.partition.fetch.bytes": 20_000})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out = []
        deadline = time.monotonic() + TIMEOUT
        while True:
            assert time.monotonic() < deadline
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF
                return out
            assert msg.value() == value(int(msg.key()), 3000)
            out.append(int(msg.key()))
    finally:
        c.close()


@pytest.mark.parametrize("client", sorted(CONSUMERS))
def test_read_committed_skips_aborted_transactions(broker: BrokerProcess, client: str) -> None:
    topic = topic_name("txn")
    create_topic(broker.bootstrap, topic, 1, {"segment.bytes": str(MiB)})
    plan = [(list(range(k * 100, k * 100 + 100)), k % 3 != 1) for k in range(12)]  # ~3.6 MB
    transactional(broker.bootstrap, topic, plan)
    committed = [i for indexes, commit in plan if commit for i in indexes]
    assert read_committed(broker.bootstrap, topic, client) == committed


@pytest.mark.parametrize("client", sorted(CONSUMERS))
def test_records_larger_than_the_fetch_sizes_come_whole(start_broker: StartBroker,
                                                        tmp_path: Path, client: str) -> None:
    broker = start_broker(tmp_path / "data", {"message.max.bytes": str(8 * MiB)})
    topic = topic_name("big")
    create_topic(broker.bootstrap, topic, 1, {"max.message.bytes": str(8 * MiB)})
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                  "message.max.bytes": 8 * MiB})
    sizes = [3 * MiB, 100, 2 * MiB + 7, 5 * MiB]
    for i, size in enumerate(sizes):
        p.produce(topic, value(i, size), key=b"%d" % i, partition=0)
        p.flush(TIMEOUT)  # one record per batch
    if client == "confluent":
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": topic_name("g"),
                      "enable.partition.eof": True, "check.crcs": True,
                      "fetch.max.bytes": MiB, "max.partition.fetch.bytes": 64 * 1024,
                      "receive.message.max.bytes": 16 * MiB})
        try:
            c.assign([TopicPartition(topic, 0, 0)])
            got: list[tuple[int, bytes]] = []
            deadline = time.monotonic() + TIMEOUT
            while True:
                assert time.monotonic() < deadline
                msg = c.poll(0.5)
                if msg is None:
                    continue
                if msg.error():
                    assert msg.error().code() == KafkaError._PARTITION_EOF
                    break
                got.append((msg.offset(), msg.value()))
        finally:
            c.close()
    else:
        from kafka import KafkaConsumer
        from kafka import TopicPartition as KTopicPartition

        kc = KafkaConsumer(bootstrap_servers=broker.bootstrap, fetch_max_bytes=MiB,
                           max_partition_fetch_bytes=64 * 1024, enable_auto_commit=False,
                           fetch_max_wait_ms=100)
        try:
            tp = KTopicPartition(topic, 0)
            kc.assign([tp])
            kc.seek(tp, 0)
            got = []
            deadline = time.monotonic() + TIMEOUT
            while len(got) < len(sizes):
                assert time.monotonic() < deadline
                for msgs in kc.poll(timeout_ms=500).values():
                    got += [(m.offset, m.value) for m in msgs]
        finally:
            kc.close()
    assert got == [(i, value(i, size)) for i, size in enumerate(sizes)]
