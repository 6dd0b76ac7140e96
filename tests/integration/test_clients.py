"""Round trips through the broker with stock clients: keys and partitions, every codec,
headers, null keys and values, large messages, ListOffsets."""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import OFFSET_END, TopicPartition
from confluent_kafka.admin import OffsetSpec
from it_support import (
    CLIENTS,
    CODECS,
    DRIVERS,
    TIMEOUT,
    BrokerProcess,
    Rec,
    admin,
    by_partition,
    confluent_consume_all,
    confluent_consumer,
    confluent_produce,
    create_topic,
    topic_name,
)

pytestmark = pytest.mark.timeout(180)


def contents(recs: list[Rec]) -> list[tuple[bytes | None, bytes | None, tuple[object, ...]]]:
    return sorted(r.content() for r in recs)  # type: ignore[arg-type]


def assert_dense_offsets(recs: list[Rec]) -> None:
    for partition, group in by_partition(recs).items():
        offsets = [r.offset for r in group]
        assert offsets == list(range(len(group))), f"partition {partition}: {offsets}"


@pytest.mark.parametrize("client", CLIENTS)
def test_keyed_round_trip_on_three_partitions(broker: BrokerProcess, client: str) -> None:
    topic = topic_name()
    create_topic(broker.bootstrap, topic, partitions=3)
    produce, consume_all = DRIVERS[client]
    keys = [f"key-{i}".encode() for i in range(12)]
    sent = [Rec(keys[i % len(keys)], f"value-{i:04d}".encode()) for i in range(240)]

    acked = produce(broker.bootstrap, topic, sent)
    got = consume_all(broker.bootstrap, topic, 3)

    assert contents(got) == contents(sent)  # everything, exactly once
    assert_dense_offsets(got)
    assert len(by_partition(got)) > 1, "12 keys all landed on one partition"
    for key in keys:
        located = sorted((r for r in got if r.key == key), key=lambda r: r.offset)
        assert len({r.partition for r in located}) == 1, f"{key!r} spread over partitions"
        assert [r.value for r in located] == [r.value for r in sent if r.key == key]
    where = {(r.partition, r.offset): r.content() for r in got}
    for rec in acked:
        if rec.offset >= 0:  # kcat does not report offsets
            assert where[(rec.partition, rec.offset)] == rec.content()


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", CLIENTS)
def test_compression_round_trip(broker: BrokerProcess, client: str, codec: str) -> None:
    topic = topic_name()
    create_topic(broker.bootstrap, topic, partitions=1)
    produce, consume_all = DRIVERS[client]
    sent = [Rec(f"k{i}".encode(), (f"{codec} record {i} " * 40).encode()) for i in range(200)]

    produce(broker.bootstrap, topic, sent, compression=codec)

    got = consume_all(broker.bootstrap, topic, 1)
    assert [r.content() for r in got] == [r.content() for r in sent]
    assert_dense_offsets(got)
    if client != "confluent":  # and another client decompresses it the same way
        assert [r.content() for r in confluent_consume_all(broker.bootstrap, topic, 1)] == [
            r.content() for r in sent
        ]


HEADERS_BY_CLIENT: dict[str, tuple[tuple[str, bytes | None], ...]] = {
    "confluent": (
        ("trace", b"abc"),
        ("dup", b"1"),
        ("dup", b"2"),
        ("empty", b""),
        ("null", None),
        ("bin", bytes(range(256))),
    ),
    "kafka-python": (("trace", b"abc"), ("dup", b"1"), ("dup", b"2"), ("empty", b"")),
    "aiokafka": (("trace", b"abc"), ("dup", b"1"), ("dup", b"2"), ("bin", bytes(range(256)))),
    "kcat": (("trace", b"abc"), ("dup", b"1"), ("dup", b"2")),
}


@pytest.mark.parametrize("client", CLIENTS)
def test_headers(broker: BrokerProcess, client: str) -> None:
    topic = topic_name()
    create_topic(broker.bootstrap, topic, partitions=1)
    produce, consume_all = DRIVERS[client]
    headers = HEADERS_BY_CLIENT[client]
    sent = [Rec(b"with", f"h{i}".encode(), headers) for i in range(10)]
    sent += [Rec(b"without", f"n{i}".encode()) for i in range(5)]

    produce(broker.bootstrap, topic, sent)

    got = consume_all(broker.bootstrap, topic, 1)
    assert contents(got) == contents(sent)
    with_headers = [r for r in got if r.key == b"with"]
    assert all(r.headers == headers for r in with_headers)  # order and duplicates kept


@pytest.mark.parametrize("client", CLIENTS)
def test_null_keys_and_values(broker: BrokerProcess, client: str) -> None:
    topic = topic_name()
    create_topic(broker.bootstrap, topic, partitions=1)
    produce, consume_all = DRIVERS[client]
    sent = [Rec(None, b"no key"), Rec(b"no value", None), Rec(b"both", b"set")]
    if client in ("confluent", "kcat"):  # the others refuse a record without key and value
        sent.append(Rec(None, None))
    if client != "kcat":  # kcat's -Z turns empty into null, so it cannot send empty
        sent += [Rec(b"", b"empty key"), Rec(b"empty value", b"")]

    produce(broker.bootstrap, topic, sent)

    got = consume_all(broker.bootstrap, topic, 1)
    assert [r.content() for r in got] == [r.content() for r in sent]


@pytest.mark.parametrize("client", ["confluent", "kafka-python", "aiokafka"])
def test_large_message(broker: BrokerProcess, client: str) -> None:
    topic = topic_name()
    create_topic(broker.bootstrap, topic, partitions=1)
    produce, consume_all = DRIVERS[client]
    sent = [Rec(b"big-%d" % i, os.urandom(900 * 1024)) for i in range(3)]

    produce(broker.bootstrap, topic, sent)

    got = consume_all(broker.bootstrap, topic, 1)
    assert [r.content() for r in got] == [r.content() for r in sent]


def _timestamped(base: int, n: int) -> list[Rec]:
    return [Rec(b"k", f"v{i}".encode(), timestamp=base + i * 1000) for i in range(n)]


def test_list_offsets_confluent(broker: BrokerProcess) -> None:
    topic = topic_name()
    create_topic(broker.bootstrap, topic, partitions=1)
    base = (int(time.time()) - 3600) * 1000
    confluent_produce(broker.bootstrap, topic, _timestamped(base, 10))
    tp = TopicPartition(topic, 0)

    consumer = confluent_consumer(broker.bootstrap)
    try:
        assert consumer.get_watermark_offsets(tp, timeout=TIMEOUT) == (0, 10)

        def at(ts: int) -> int:
            (result,) = consumer.offsets_for_times([TopicPartition(topic, 0, ts)], timeout=TIMEOUT)
            assert result.error is None, result.error
            offset: int = result.offset
            return offset

        assert at(base - 5000) == 0
        assert at(base) == 0
        assert at(base + 2000) == 2
        assert at(base + 2500) == 3
        assert at(base + 9000) == 9
        assert at(base + 9001) == OFFSET_END  # no record that late
    finally:
        consumer.close()

    client = admin(broker.bootstrap)

    def listed(spec: OffsetSpec) -> int:
        result = client.list_offsets({tp: spec}, request_timeout=TIMEOUT)[tp].result(TIMEOUT)
        offset: int = result.offset
        return offset

    assert listed(OffsetSpec.earliest()) == 0
    assert listed(OffsetSpec.latest()) == 10
    assert listed(OffsetSpec.for_timestamp(base + 4500)) == 5


def test_list_offsets_max_timestamp(broker: BrokerProcess) -> None:
    topic = topic_name()
    create_topic(broker.bootstrap, topic, partitions=1)
    base = (int(time.time()) - 3600) * 1000
    recs = _timestamped(base, 10)
    recs[4] = Rec(b"k", b"latest stamp", timestamp=base + 60_000)  # out of order on purpose
    confluent_produce(broker.bootstrap, topic, recs)
    tp = TopicPartition(topic, 0)
    client = admin(broker.bootstrap)
    result = client.list_offsets({tp: OffsetSpec.max_timestamp()}, request_timeout=TIMEOUT)
    info = result[tp].result(TIMEOUT)
    assert info.offset == 4
    assert info.timestamp == base + 60_000


@pytest.mark.parametrize("client", ["kafka-python", "aiokafka"])
def test_list_offsets_python_clients(broker: BrokerProcess, client: str) -> None:
    topic = topic_name()
    create_topic(broker.bootstrap, topic, partitions=1)
    base = (int(time.time()) - 3600) * 1000
    confluent_produce(broker.bootstrap, topic, _timestamped(base, 10))

    if client == "kafka-python":
        from kafka import KafkaConsumer
        from kafka import TopicPartition as KTopicPartition

        consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None)
        try:
            tp = KTopicPartition(topic, 0)
            assert consumer.beginning_offsets([tp]) == {tp: 0}
            assert consumer.end_offsets([tp]) == {tp: 10}
            found = consumer.offsets_for_times({tp: base + 2500})[tp]
            assert found is not None and found.offset == 3 and found.timestamp == base + 3000
            assert consumer.offsets_for_times({tp: base + 20_000})[tp] is None
        finally:
            consumer.close()
    else:
        import asyncio

        from aiokafka import AIOKafkaConsumer
        from aiokafka import TopicPartition as ATopicPartition

        async def check() -> None:
            consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None)
            await consumer.start()
            try:
                tp = ATopicPartition(topic, 0)
                assert await consumer.beginning_offsets([tp]) == {tp: 0}
                assert await consumer.end_offsets([tp]) == {tp: 10}
                found = (await consumer.offsets_for_times({tp: base + 2500}))[tp]
                assert found is not None and found.offset == 3 and found.timestamp == base + 3000
                assert (await consumer.offsets_for_times({tp: base + 20_000}))[tp] is None
            finally:
                await consumer.stop()

        asyncio.run(asyncio.wait_for(check(), TIMEOUT))
