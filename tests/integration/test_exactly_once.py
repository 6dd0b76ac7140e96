"""Exactly once with stock clients: idempotent producers (the default of kafka-python 3 and
librdkafka with enable.idempotence), transactions committed and aborted, read_committed and
read_uncommitted consumers, consume-transform-produce with offsets in the transaction,
fencing of a zombie producer, and a kill -9 in the middle of transactions under load."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from it_support import TIMEOUT, BrokerProcess, create_topic, topic_name, wait_until

from odradek.wire.records import iter_batches

pytestmark = pytest.mark.timeout(240)

StartBroker = Callable[..., BrokerProcess]
FAST_GROUPS = {"group.initial.rebalance.delay.ms": "0"}


# --------------------------------------------------------------------------- helpers


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str,
             **extra: Any) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of every record a consumer with `isolation` can read, from
    offset 0 until every partition reports its end."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": topic_name("reader"),
        "enable.auto.commit": False, "isolation.level": isolation,
        "enable.partition.eof": True, "fetch.wait.max.ms": 100, **extra})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[tuple[int, int, bytes]] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + TIMEOUT
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"only partitions {at_end} reached their end"
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                assert err.code() == KafkaError._PARTITION_EOF, err
                at_end.add(msg.partition())
                continue
            at_end.discard(msg.partition())
            out.append((msg.partition(), msg.offset(), msg.value()))
        return out
    finally:
        consumer.close()


def values(recs: list[tuple[int, int, bytes]]) -> list[bytes]:
    return sorted(v for _, _, v in recs)


def txn_producer(bootstrap: str, txn_id: str, **extra: Any) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": 60_000, "linger.ms": 5, **extra})
    producer.init_transactions(TIMEOUT)
    return producer


def disk_batches(broker: BrokerProcess, topic: str, partition: int) -> list[Any]:
    """The batches of a partition as stored (headers: producer ids, sequences, markers)."""
    directory = broker.data_dir / f"{topic}-{partition}"
    out = []
    for path in sorted(directory.glob("*.log")):
        out.extend(iter_batches(memoryview(path.read_bytes())))
    return out


def no_dropped_connections(broker: BrokerProcess) -> None:
    text = broker.stderr_text()
    assert "closing connection" not in text, text[-3000:]


# --------------------------------------------------------------------------- idempotence


def test_kafka_python_default_producer_is_idempotent(broker: BrokerProcess) -> None:
    from kafka import KafkaProducer

    topic = topic_name()
    create_topic(broker.bootstrap, topic, partitions=1)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5,
                             request_timeout_ms=int(TIMEOUT * 1000))
    try:
        futures = [producer.send(topic, value=b"v%04d" % i) for i in range(300)]
        producer.flush(timeout=TIMEOUT)
        offsets = [f.get(timeout=TIMEOUT).offset for f in futures]
    finally:
        producer.close(timeout=10)
    assert offsets == list(range(300))
    batches = disk_batches(broker, topic, 0)
    assert {b.producer_id for b in batches} != {-1}, "kafka-python did not use a producer id"
    seq = 0
    for b in batches:
        assert b.producer_id >= 0 and b.producer_epoch == 0
        assert b.base_sequence == seq  # contiguous sequences, from 0
        seq += b.records_count
    got = read_all(broker.bootstrap, topic, 1, "read_uncommitted")
    assert values(got) == [b"v%04d" % i for i in range(300)]


def test_confluent_idempotent_producer_no_duplicates_contiguous_offsets(
        broker: BrokerProcess) -> None:
    topic = topic_name()
    create_topic(broker.bootstrap, topic, partitions=3)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True,
                         "linger.ms": 2, "batch.num.messages": 50,
                         "max.in.flight.requests.per.connection": 5})
    errors: list[Any] = []
    for i in range(3000):
        producer.produce(topic, key=b"k%d" % (i % 17), value=b"v%05d" % i,
                         on_delivery=lambda err, _m: err is not None and errors.append(err))
        producer.poll(0)
    assert producer.flush(TIMEOUT) == 0
    assert not errors, errors[:3]
    got = read_all(broker.bootstrap, topic, 3, "read_uncommitted")
    assert values(got) == sorted(b"v%05d" % i for i in range(3000))  # each exactly once
    for p in range(3):
        offsets = sorted(o for part, o, _ in got if part == p)
        assert offsets == list(range(len(offsets)))  # contiguous: no gaps, no duplicates
        pids = {b.producer_id for b in disk_batches(broker, topic, p)}
        assert len(pids) == 1 and min(pids) >= 0


def test_producer_ids_are_not_reused_after_a_restart(start_broker: StartBroker,
                                                     tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data")
    topic = topic_name()
    create_topic(broker.bootstrap, topic)
    seen = set()
    for round_ in range(2):
        producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
        producer.produce(topic, value=b"r%d" % round_)
        assert producer.flush(TIMEOUT) == 0
        seen.add(disk_batches(broker, topic, 0)[-1].producer_id)
        broker.restart(hard=round_ == 0)
    assert len(seen) == 2


# --------------------------------------------------------------------------- transactions


def test_commit_and_abort_with_read_committed_and_uncommitted(broker: BrokerProcess) -> None:
    topic = topic_name()
    create_topic(broker.bootstrap, topic, partitions=2)
    producer = txn_producer(broker.bootstrap, topic_name("tx"))
    for round_, commit in enumerate([True, False, True, False, True]):
        producer.begin_transaction()
        for i in range(20):
            producer.produce(topic, key=b"k%d" % i, value=b"%s-%d-%02d" % (
                b"c" if commit else b"a", round_, i))
        if commit:
            producer.commit_transaction(TIMEOUT)
        else:
            producer.flush(TIMEOUT)  # the aborted records do reach the log
            producer.abort_transaction(TIMEOUT)
    committed = read_all(broker.bootstrap, topic, 2, "read_committed")
    everything = read_all(broker.bootstrap, topic, 2, "read_uncommitted")
    assert len(committed) == 60 and all(v.startswith(b"c-") for v in values(committed))
    assert len(everything) == 100
    assert {v[:2] for v in values(everything)} == {b"c-", b"a-"}
    # markers take offsets: 5 transactions, a marker on each partition they touched
    ends = [max(o for p, o, _ in everything if p == part) for part in range(2)]
    assert sum(ends) + 2 > 100
    for part in range(2):
        markers = [b for b in disk_batches(broker, topic, part) if b.is_control]
        assert [b.control_type() for b in markers] == [1, 0, 1, 0, 1]
    producer.flush(TIMEOUT)
    no_dropped_connections(broker)


def test_open_transaction_holds_back_read_committed(broker: BrokerProcess) -> None:
    topic = topic_name()
    create_topic(broker.bootstrap, topic)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce(topic, value=b"before")
    plain.flush(TIMEOUT)
    producer = txn_producer(broker.bootstrap, topic_name("tx"))
    producer.begin_transaction()
    producer.produce(topic, value=b"pending")
    producer.flush(TIMEOUT)
    plain.produce(topic, value=b"after")  # behind the open transaction: not stable yet
    plain.flush(TIMEOUT)
    committed_reader = Consumer({"bootstrap.servers": broker.bootstrap,
                                 "group.id": topic_name("g"), "isolation.level": "read_committed"})
    uncommitted_reader = Consumer({"bootstrap.servers": broker.bootstrap,
                                   "group.id": topic_name("g"),
                                   "isolation.level": "read_uncommitted"})
    tp = TopicPartition(topic, 0)
    try:
        # ListOffsets(latest) answers the LSO to read_committed, the high watermark otherwise
        assert committed_reader.get_watermark_offsets(tp, timeout=TIMEOUT) == (0, 1)
        assert uncommitted_reader.get_watermark_offsets(tp, timeout=TIMEOUT) == (0, 3)
        assert values(read_all(broker.bootstrap, topic, 1, "read_committed")) == [b"before"]
        producer.commit_transaction(TIMEOUT)
        assert committed_reader.get_watermark_offsets(tp, timeout=TIMEOUT) == (0, 4)
        assert values(read_all(broker.bootstrap, topic, 1, "read_committed")) == [
            b"after", b"before", b"pending"]
    finally:
        committed_reader.close()
        uncommitted_reader.close()


def test_consume_transform_produce(start_broker: StartBroker, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", FAST_GROUPS)
    source, sink, group = topic_name("in"), topic_name("out"), topic_name("g")
    create_topic(broker.bootstrap, source, partitions=2)
    create_topic(broker.bootstrap, sink, partitions=2)
    feeder = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(200):
        feeder.produce(source, key=b"k%d" % i, value=b"%03d" % i)
    assert feeder.flush(TIMEOUT) == 0

    def run(txn_id: str, limit: int, commit: bool) -> int:
        consumer = Consumer({
            "bootstrap.servers": broker.bootstrap, "group.id": group,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "isolation.level": "read_committed"})
        producer = txn_producer(broker.bootstrap, txn_id)
        consumer.subscribe([source])
        done = 0
        try:
            producer.begin_transaction()
            deadline = time.monotonic() + TIMEOUT
            while done < limit:
                assert time.monotonic() < deadline, f"consumed only {done}"
                msg = consumer.poll(0.2)
                if msg is None or msg.error():
                    continue
                producer.produce(sink, key=msg.key(), value=b"x" + msg.value())
                done += 1
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()), consumer.consumer_group_metadata(),
                TIMEOUT)
            if commit:
                producer.commit_transaction(TIMEOUT)
            else:
                producer.abort_transaction(TIMEOUT)
        finally:
            consumer.close()
        return done

    run("ctp", 120, commit=False)  # aborted: neither output nor offsets count
    assert read_all(broker.bootstrap, sink, 2, "read_committed") == []
    check = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    committed = check.committed([TopicPartition(source, p) for p in range(2)], timeout=TIMEOUT)
    assert all(tp.offset < 0 for tp in committed), committed
    run("ctp", 200, commit=True)  # starts over from the group's (absent) offsets
    out = read_all(broker.bootstrap, sink, 2, "read_committed")
    assert values(out) == sorted(b"x%03d" % i for i in range(200))
    committed = check.committed([TopicPartition(source, p) for p in range(2)], timeout=TIMEOUT)
    ends = [check.get_watermark_offsets(TopicPartition(source, p), timeout=TIMEOUT)[1]
            for p in range(2)]
    assert [tp.offset for tp in committed] == ends
    check.close()
    no_dropped_connections(broker)


def test_second_producer_fences_the_first(broker: BrokerProcess) -> None:
    topic = topic_name()
    create_topic(broker.bootstrap, topic)
    txn_id = topic_name("tx")
    zombie = txn_producer(broker.bootstrap, txn_id)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie")
    zombie.flush(TIMEOUT)
    successor = txn_producer(broker.bootstrap, txn_id)  # aborts the zombie's transaction
    successor.begin_transaction()
    successor.produce(topic, value=b"successor")
    successor.commit_transaction(TIMEOUT)
    with pytest.raises(KafkaException) as raised:
        zombie.produce(topic, value=b"late")
        zombie.commit_transaction(TIMEOUT)
    error = raised.value.args[0]
    assert error.fatal(), error
    assert error.code() == KafkaError._FENCED, error
    assert values(read_all(broker.bootstrap, topic, 1, "read_committed")) == [b"successor"]
    no_dropped_connections(broker)


def test_aiokafka_transactions(broker: BrokerProcess) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    topic = topic_name()
    create_topic(broker.bootstrap, topic, partitions=2)

    async def go() -> tuple[list[bytes], list[bytes]]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap,
                                    transactional_id=topic_name("aio"))
        await producer.start()
        try:
            async with producer.transaction():
                for i in range(10):
                    await producer.send(topic, key=b"k%d" % i, value=b"c%d" % i)
            await producer.begin_transaction()
            for i in range(10):
                await producer.send(topic, key=b"k%d" % i, value=b"a%d" % i)
            await producer.flush()
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send(topic, key=b"k", value=b"last")
        finally:
            await producer.stop()
        seen: dict[str, list[bytes]] = {}
        for isolation in ("read_committed", "read_uncommitted"):
            consumer = AIOKafkaConsumer(topic, bootstrap_servers=broker.bootstrap,
                                        isolation_level=isolation, group_id=None,
                                        auto_offset_reset="earliest", fetch_max_wait_ms=100)
            await consumer.start()
            try:
                out: list[bytes] = []
                want = 11 if isolation == "read_committed" else 21
                deadline = time.monotonic() + TIMEOUT
                while len(out) < want and time.monotonic() < deadline:
                    batch = await consumer.getmany(timeout_ms=200)
                    out.extend(m.value for msgs in batch.values() for m in msgs)
                # nothing more arrives
                batch = await consumer.getmany(timeout_ms=300)
                out.extend(m.value for msgs in batch.values() for m in msgs)
            finally:
                await consumer.stop()
            seen[isolation] = sorted(out)
        return seen["read_committed"], seen["read_uncommitted"]

    committed, everything = asyncio.run(asyncio.wait_for(go(), TIMEOUT * 2))
    assert committed == sorted([b"c%d" % i for i in range(10)] + [b"last"])
    assert everything == sorted([b"c%d" % i for i in range(10)] + [b"a%d" % i for i in range(10)]
                                + [b"last"])
    no_dropped_connections(broker)


def test_kafka_python_transactions(broker: BrokerProcess) -> None:
    from kafka import KafkaProducer

    topic = topic_name()
    create_topic(broker.bootstrap, topic)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap,
                             transactional_id=topic_name("kp"))
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, value=b"kept")
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(topic, value=b"dropped")
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close(timeout=10)
    assert values(read_all(broker.bootstrap, topic, 1, "read_committed")) == [b"kept"]
    assert values(read_all(broker.bootstrap, topic, 1, "read_uncommitted")) == [
        b"dropped", b"kept"]


def test_a_timed_out_transaction_is_aborted_and_its_producer_fenced(
        start_broker: StartBroker, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", {
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "100"})
    topic = topic_name()
    create_topic(broker.bootstrap, topic)
    producer = txn_producer(broker.bootstrap, topic_name("tx"),
                            **{"transaction.timeout.ms": 1500})
    producer.begin_transaction()
    producer.produce(topic, value=b"too slow")
    producer.flush(TIMEOUT)
    reader = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": topic_name("g"),
                       "isolation.level": "read_committed"})
    tp = TopicPartition(topic, 0)
    try:
        assert reader.get_watermark_offsets(tp, timeout=TIMEOUT) == (0, 0)
        # the coordinator aborts it: the ABORT marker at offset 1 makes everything stable
        wait_until(lambda: reader.get_watermark_offsets(tp, timeout=TIMEOUT) == (0, 2),
                   what="the timed-out transaction to be aborted")
    finally:
        reader.close()
    assert read_all(broker.bootstrap, topic, 1, "read_committed") == []
    with pytest.raises(KafkaException):
        producer.commit_transaction(TIMEOUT)
    assert "aborted timed-out transaction" in broker.stderr_text()
    no_dropped_connections(broker)


def test_transactions_survive_a_clean_restart(start_broker: StartBroker, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data")
    topic, txn_id = topic_name(), topic_name("tx")
    create_topic(broker.bootstrap, topic)
    producer = txn_producer(broker.bootstrap, txn_id)
    producer.begin_transaction()
    producer.produce(topic, value=b"one")
    producer.commit_transaction(TIMEOUT)
    producer.begin_transaction()
    producer.produce(topic, value=b"open")
    producer.flush(TIMEOUT)
    broker.restart()  # the open transaction stays open across the restart
    assert values(read_all(broker.bootstrap, topic, 1, "read_committed")) == [b"one"]
    successor = txn_producer(broker.bootstrap, txn_id)  # fences and aborts it
    successor.begin_transaction()
    successor.produce(topic, value=b"two")
    successor.commit_transaction(TIMEOUT)
    assert values(read_all(broker.bootstrap, topic, 1, "read_committed")) == [b"one", b"two"]


# --------------------------------------------------------------------------- crash


def test_kill_9_in_the_middle_of_transactions(start_broker: StartBroker, tmp_path: Path) -> None:
    """Producers commit and abort transactions of 20 records over 4 partitions while the
    broker is killed with SIGKILL. After a restart every transaction acknowledged as
    committed is read whole, nothing acknowledged as aborted is read, and a transaction whose
    outcome the crash cut off is either whole or absent."""
    broker = start_broker(tmp_path / "data")
    topic = topic_name("crash")
    create_topic(broker.bootstrap, topic, partitions=4)
    outcome: dict[bytes, str] = {}  # txn tag -> "commit" / "abort" / "unknown"
    lock = threading.Lock()
    stop = threading.Event()
    started = threading.Event()
    txn_ids = [f"crash-{i}" for i in range(3)]

    def work(txn_id: str) -> None:
        rnd = random.Random(txn_id)
        try:
            producer = txn_producer(broker.bootstrap, txn_id,
                                    **{"message.timeout.ms": 10_000, "socket.timeout.ms": 5_000})
        except KafkaException:
            return
        n = 0
        while not stop.is_set():
            tag = b"%s/%05d" % (txn_id.encode(), n)
            n += 1
            commit = rnd.random() < 0.7
            with lock:
                outcome[tag] = "unknown"
            try:
                producer.begin_transaction()
                for i in range(20):
                    producer.produce(topic, key=b"%d" % i, value=tag + b"#%02d" % i)
                if commit:
                    producer.commit_transaction(10)
                else:
                    producer.flush(10)
                    producer.abort_transaction(10)
            except KafkaException:
                return  # the broker is gone: this transaction's outcome is unknown
            with lock:
                outcome[tag] = "commit" if commit else "abort"
            started.set()

    threads = [threading.Thread(target=work, args=(t,), daemon=True) for t in txn_ids]
    for t in threads:
        t.start()
    assert started.wait(TIMEOUT), "no transaction completed"
    wait_until(lambda: sum(v != "unknown" for v in outcome.values()) >= 40, what="40 txns")
    broker.kill()
    stop.set()
    for t in threads:
        t.join(TIMEOUT)
    broker.start()
    # New instances fence the old ones and abort whatever they left open.
    for txn_id in txn_ids:
        txn_producer(broker.bootstrap, txn_id).flush(1)
    records = read_all(broker.bootstrap, topic, 4, "read_committed")
    per_txn = Counter(v.split(b"#")[0] for _, _, v in records)
    assert len(records) == len({v for _, _, v in records}), "a record was read twice"
    for tag, state in outcome.items():
        count = per_txn.get(tag, 0)
        if state == "commit":
            assert count == 20, f"committed {tag!r} has {count} of 20 records"
        elif state == "abort":
            assert count == 0, f"aborted {tag!r} shows {count} records"
        else:
            assert count in (0, 20), f"{tag!r} cut by the crash is partial: {count}"
    assert set(per_txn) <= set(outcome)
    assert sum(s == "commit" for s in outcome.values()) >= 20
