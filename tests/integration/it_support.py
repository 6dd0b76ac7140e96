"""Stock-client drivers shared by the integration tests.

Each driver produces a list of `Rec` with one client (acks=all, a chosen codec) and reads a
topic back to its end. Everything is bounded by a deadline; "wait" means polling a condition
until the deadline, never sleeping for a fixed time as synchronisation.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import odradek.testing

TIMEOUT = 30.0
CLIENTS = ("confluent", "kafka-python", "aiokafka", "kcat")
CODECS = ("gzip", "snappy", "lz4", "zstd")

T = TypeVar("T")

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class Rec:
    """A record as sent or as read back; partition/offset -1 when not known."""

    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    partition: int = -1
    offset: int = -1
    timestamp: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def content(self) -> tuple[bytes | None, bytes | None, Headers]:
        return self.key, self.value, self.headers


def topic_name(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def wait_until(predicate: Callable[[], T], timeout: float = TIMEOUT, what: str = "") -> T:
    """Poll `predicate` until it returns something truthy or the deadline passes."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = predicate()
            if result:
                return result
        except Exception as exc:  # keep polling; report the last error on timeout
            last_error = exc
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}: {last_error!r}")
        time.sleep(0.05)


# --------------------------------------------------------------------------- broker process


class BrokerProcess(odradek.testing.BrokerProcess):
    """The package's broker subprocess (odradek/testing/process.py), plus the suite's two
    switches: ODRADEK_IT_SERVER_CMD (a shell-style command line) runs another server that
    accepts `serve --override key=value ...` and logs the same `listening` line (e.g. a wrapper
    around Apache Kafka); ODRADEK_IT_OVERRIDES="k=v k2=v2" are settings for every broker of
    the run (e.g. transaction.version=1 to run the suite against a classic-transactions
    broker)."""

    def __init__(self, data_dir: Path, overrides: Mapping[str, str],
                 env: Mapping[str, str] | None = None,
                 nofile: tuple[int, int] | None = None) -> None:
        base = os.environ.get("ODRADEK_IT_SERVER_CMD")
        extra = dict(kv.split("=", 1) for kv in os.environ.get("ODRADEK_IT_OVERRIDES", "").split())
        # A JVM reference server ends with 128+SIGTERM after its shutdown hooks ran.
        super().__init__(data_dir, {**extra, **overrides}, env, nofile,
                         command=shlex.split(base) if base else None,
                         clean_exit_codes=(0, 143) if base else (0,))


# `start_broker(data_dir, overrides=None)`, the factory fixture of conftest.py.
StartBroker = Callable[..., BrokerProcess]


# --------------------------------------------------------------------------- admin helpers


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10_000})


def partition_count(client: AdminClient, topic: str) -> int | None:
    """Partitions of `topic`, None if the broker does not list it. Asks for all topics: a
    Metadata request naming the topic could create it (auto-create) as a side effect."""
    meta = client.list_topics(timeout=10).topics.get(topic)
    if meta is None or meta.error is not None:
        return None
    return len(meta.partitions)


def create_topic(
    bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None,
    replication_factor: int = 1,
) -> None:
    client = admin(bootstrap)
    new = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                   config=config or {})
    client.create_topics([new], operation_timeout=TIMEOUT)[name].result(TIMEOUT)
    wait_until(lambda: partition_count(client, name) == partitions, what=f"topic {name}")


# --------------------------------------------------------------------------- confluent-kafka


def _check_no_errors(errors: list[Any]) -> None:
    assert not errors, f"delivery errors: {errors[:5]}"


def confluent_produce(
    bootstrap: str, topic: str, recs: Sequence[Rec], compression: str = "none"
) -> list[Rec]:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "compression.type": compression,
            "linger.ms": 5,
            "message.timeout.ms": int(TIMEOUT * 1000),
        }
    )
    acked: list[Rec] = []
    errors: list[Any] = []

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked.append(_from_confluent(msg))

    for rec in recs:
        kwargs: dict[str, Any] = {"key": rec.key, "value": rec.value, "on_delivery": on_delivery}
        if rec.headers:
            kwargs["headers"] = list(rec.headers)
        if rec.partition >= 0:
            kwargs["partition"] = rec.partition
        if rec.timestamp is not None:
            kwargs["timestamp"] = rec.timestamp
        producer.produce(topic, **kwargs)
        producer.poll(0)
    assert producer.flush(TIMEOUT) == 0, "messages still in flight after flush"
    _check_no_errors(errors)
    assert len(acked) == len(recs)
    return acked


def _from_confluent(msg: Any) -> Rec:
    return Rec(
        key=msg.key(),
        value=msg.value(),
        headers=tuple(msg.headers() or ()),
        partition=msg.partition(),
        offset=msg.offset(),
        timestamp=msg.timestamp()[1],
    )


def confluent_consumer(bootstrap: str, **extra: Any) -> Consumer:
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": topic_name("g"),
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
        **extra,
    }
    return Consumer(config)


def confluent_consume_all(bootstrap: str, topic: str, partitions: int) -> list[Rec]:
    """Read every partition from the beginning until each reports end-of-partition."""
    consumer = confluent_consumer(bootstrap, **{"enable.partition.eof": True})
    try:
        # Offset 0 rather than OFFSET_BEGINNING: reading back does not depend on ListOffsets.
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[Rec] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + TIMEOUT
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"only partitions {at_end} reached their end"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                assert err.code() == KafkaError._PARTITION_EOF, err
                at_end.add(msg.partition())
                continue
            at_end.discard(msg.partition())
            out.append(_from_confluent(msg))
        return out
    finally:
        consumer.close()


# --------------------------------------------------------------------------- kafka-python


def kafka_python_produce(
    bootstrap: str, topic: str, recs: Sequence[Rec], compression: str = "none"
) -> list[Rec]:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        compression_type=None if compression == "none" else compression,
        linger_ms=5,
        request_timeout_ms=int(TIMEOUT * 1000),
        max_block_ms=int(TIMEOUT * 1000),
    )
    try:
        futures = [
            producer.send(
                topic,
                key=rec.key,
                value=rec.value,
                headers=list(rec.headers) or None,
                partition=rec.partition if rec.partition >= 0 else None,
                timestamp_ms=rec.timestamp,
            )
            for rec in recs
        ]
        producer.flush(timeout=TIMEOUT)
        acked = []
        for rec, future in zip(recs, futures, strict=True):
            meta = future.get(timeout=TIMEOUT)
            acked.append(replace(rec, partition=meta.partition, offset=meta.offset))
        return acked
    finally:
        producer.close(timeout=10)


def kafka_python_consume_all(bootstrap: str, topic: str, partitions: int) -> list[Rec]:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
        request_timeout_ms=int(TIMEOUT * 1000) + 5000,
    )
    try:
        tps = [KTopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        out: list[Rec] = []
        deadline = time.monotonic() + TIMEOUT
        while any(consumer.position(tp) < end[tp] for tp in tps):
            assert time.monotonic() < deadline, "kafka-python consumer did not reach the end"
            for _, msgs in consumer.poll(timeout_ms=500).items():
                out.extend(_from_kafka_python(m) for m in msgs)
        return out
    finally:
        consumer.close()


def _from_kafka_python(msg: Any) -> Rec:
    return Rec(
        key=msg.key,
        value=msg.value,
        headers=tuple((k, v) for k, v in msg.headers or ()),
        partition=msg.partition,
        offset=msg.offset,
        timestamp=msg.timestamp,
    )


# --------------------------------------------------------------------------- aiokafka


def _run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT * 2))


def aiokafka_produce(
    bootstrap: str, topic: str, recs: Sequence[Rec], compression: str = "none"
) -> list[Rec]:
    from aiokafka import AIOKafkaProducer

    async def go() -> list[Rec]:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            compression_type=None if compression == "none" else compression,
            linger_ms=5,
            request_timeout_ms=int(TIMEOUT * 1000),
        )
        await producer.start()
        try:
            futures = [
                await producer.send(
                    topic,
                    key=rec.key,
                    value=rec.value,
                    headers=list(rec.headers) or None,
                    partition=rec.partition if rec.partition >= 0 else None,
                    timestamp_ms=rec.timestamp,
                )
                for rec in recs
            ]
            metas = await asyncio.gather(*futures)
        finally:
            await producer.stop()
        return [
            replace(rec, partition=m.partition, offset=m.offset)
            for rec, m in zip(recs, metas, strict=True)
        ]

    result: list[Rec] = _run(go())
    return result


def aiokafka_consume_all(bootstrap: str, topic: str, partitions: int) -> list[Rec]:
    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as ATopicPartition

    async def go() -> list[Rec]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=100,
        )
        await consumer.start()
        try:
            tps = [ATopicPartition(topic, p) for p in range(partitions)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            end = await consumer.end_offsets(tps)
            out: list[Rec] = []

            async def behind() -> bool:
                for tp in tps:
                    if await consumer.position(tp) < end[tp]:
                        return True
                return False

            while await behind():
                batch = await consumer.getmany(*tps, timeout_ms=500)
                for msgs in batch.values():
                    out.extend(_from_kafka_python(m) for m in msgs)
            return out
        finally:
            await consumer.stop()

    result: list[Rec] = _run(go())
    return result


# --------------------------------------------------------------------------- kcat


def _kcat(args: list[str], stdin: bytes | None = None) -> bytes:
    result = subprocess.run(
        ["kcat", *args],
        input=stdin,
        capture_output=True,
        timeout=TIMEOUT * 2,
        check=False,
    )
    assert result.returncode == 0, f"kcat {args} failed: {result.stderr.decode(errors='replace')}"
    return result.stdout


def kcat_produce(
    bootstrap: str, topic: str, recs: Sequence[Rec], compression: str = "none"
) -> list[Rec]:
    """kcat sends one header set for a whole run: records are grouped by their headers.
    Empty keys/values are sent as NULL (-Z); records have no tab or newline in them."""
    groups: dict[Headers, list[Rec]] = {}
    for rec in recs:
        groups.setdefault(rec.headers, []).append(rec)
    for headers, group in groups.items():
        lines = []
        for rec in group:
            key, value = rec.key or b"", rec.value or b""
            assert not any(c in key + value for c in b"\t\n"), "kcat records must be one line"
            lines.append(key + b"\t" + value + b"\n")
        args = ["-P", "-b", bootstrap, "-t", topic, "-K", "\t", "-Z", "-z", compression]
        args += ["-X", "acks=all", "-X", "linger.ms=5"]
        for name, hvalue in headers:
            assert hvalue is not None, "kcat cannot send null header values"
            args += ["-H", f"{name}={hvalue.decode()}"]
        _kcat(args, stdin=b"".join(lines))
    return list(recs)


def kcat_consume_all(bootstrap: str, topic: str, partitions: int) -> list[Rec]:
    out = _kcat(["-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-J", "-q"])
    recs: list[Rec] = []
    for line in out.decode().splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        flat = doc.get("headers") or []
        headers = tuple(
            (flat[i], None if flat[i + 1] is None else flat[i + 1].encode())
            for i in range(0, len(flat), 2)
        )
        recs.append(
            Rec(
                key=None if doc.get("key") is None else doc["key"].encode(),
                value=None if doc.get("payload") is None else doc["payload"].encode(),
                headers=headers,
                partition=doc["partition"],
                offset=doc["offset"],
                timestamp=doc.get("ts"),
            )
        )
    return recs


Produce = Callable[..., list[Rec]]
ConsumeAll = Callable[[str, str, int], list[Rec]]

DRIVERS: dict[str, tuple[Produce, ConsumeAll]] = {
    "confluent": (confluent_produce, confluent_consume_all),
    "kafka-python": (kafka_python_produce, kafka_python_consume_all),
    "aiokafka": (aiokafka_produce, aiokafka_consume_all),
    "kcat": (kcat_produce, kcat_consume_all),
}


def by_partition(recs: Sequence[Rec]) -> dict[int, list[Rec]]:
    """Records grouped by partition, each group in offset order."""
    groups: dict[int, list[Rec]] = {}
    for rec in recs:
        groups.setdefault(rec.partition, []).append(rec)
    return {p: sorted(g, key=lambda r: r.offset) for p, g in sorted(groups.items())}


def python_clients_round_trip(topic: str, sec: Mapping[str, Any],
                              cafile: str | None = None) -> tuple[int, int]:
    """kafka-python then aiokafka, each producing 5 records to `topic` and reading it through a
    group of its own, with the security settings `sec` (and a CA file for TLS): how many
    records kafka-python read (5 expected) and how many aiokafka read (all 10)."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context
    from kafka import KafkaConsumer, KafkaProducer

    kp_tls: dict[str, Any] = {} if cafile is None else {"ssl_cafile": cafile}
    producer = KafkaProducer(**kp_tls, **sec)
    for i in range(5):
        producer.send(topic, f"v{i}".encode())
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest",
                             consumer_timeout_ms=10000, **kp_tls, **sec)
    kafka_python_read = len([m for _, m in zip(range(5), consumer, strict=False)])
    consumer.close()

    async def aio() -> int:
        aio_tls: dict[str, Any] = ({} if cafile is None
                                   else {"ssl_context": create_ssl_context(cafile=cafile)})
        p = AIOKafkaProducer(**aio_tls, **sec)
        await p.start()
        try:
            for i in range(5):
                await p.send_and_wait(topic, f"a{i}".encode())
        finally:
            await p.stop()
        c = AIOKafkaConsumer(topic, group_id=f"a-{topic}", auto_offset_reset="earliest",
                             **aio_tls, **sec)
        await c.start()
        try:
            got = 0
            deadline = time.monotonic() + 20
            while got < 10 and time.monotonic() < deadline:
                batch = await c.getmany(timeout_ms=1000)
                got += sum(len(v) for v in batch.values())
            return got
        finally:
            await c.stop()

    return kafka_python_read, asyncio.run(aio())
