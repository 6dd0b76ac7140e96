"""Log compaction on a running broker: a compacted topic with small segments ends up with the
last value of each key at its original offset, and `__consumer_offsets` shrinks after many
commits of one group while the committed offsets stay right across a restart."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from it_support import (
    TIMEOUT,
    BrokerProcess,
    Rec,
    StartBroker,
    confluent_consume_all,
    confluent_produce,
    create_topic,
    topic_name,
    wait_until,
)

from odradek.wire.records import iter_batches

pytestmark = pytest.mark.timeout(240)

FAST_CLEANER = {"log.cleaner.backoff.ms": "50"}


def records_on_disk(partition_dir: Path) -> int:
    """Records in a partition's `.log` files (what a restart replays). Tolerates a segment
    being swapped while it is read."""
    count = 0
    for path in sorted(partition_dir.glob("*.log")):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        for batch in iter_batches(memoryview(data), allow_partial_tail=True):
            count += batch.records_count
    return count


def latest_by_key(recs: list[Rec]) -> dict[bytes | None, Rec]:
    out: dict[bytes | None, Rec] = {}
    for rec in recs:
        out[rec.key] = rec
    return out


def test_compacted_topic_keeps_the_last_value_per_key(
    start_broker: StartBroker, tmp_path: Path
) -> None:
    broker = start_broker(tmp_path / "data", FAST_CLEANER)
    name = topic_name("compacted")
    create_topic(
        broker.bootstrap,
        name,
        config={"cleanup.policy": "compact", "internal.segment.bytes": "2048"},
    )
    keys = [f"key-{k}".encode() for k in range(8)]
    updates = [Rec(keys[i % len(keys)], f"value-{i}".encode(), partition=0) for i in range(480)]
    sent = confluent_produce(broker.bootstrap, name, updates[:240])
    sent += confluent_produce(broker.bootstrap, name, updates[240:], compression="lz4")
    # Unique keys after the updates roll the last values out of the active segment.
    fillers = [Rec(f"filler-{i}".encode(), b"x" * 40, partition=0) for i in range(80)]
    sent += confluent_produce(broker.bootstrap, name, fillers)
    expected = latest_by_key([r for r in sent if r.key in keys])
    assert len(expected) == len(keys)

    def compacted() -> list[Rec] | None:
        got = confluent_consume_all(broker.bootstrap, name, 1)
        return got if len([r for r in got if r.key in keys]) == len(keys) else None

    got = wait_until(compacted, timeout=60, what="the compacted topic to hold one value per key")
    assert got is not None
    updated = [r for r in got if r.key in keys]
    # the latest value of each key, at the offset it was written to
    assert {r.key: (r.offset, r.value) for r in updated} == {
        k: (r.offset, r.value) for k, r in expected.items()
    }
    # every record left is one that was written, at its offset; offsets stay sparse
    by_offset = {r.offset: r for r in sent}
    assert all(
        by_offset[r.offset].key == r.key and by_offset[r.offset].value == r.value for r in got
    )
    assert [r.offset for r in got] == sorted(r.offset for r in got)
    assert len(got) < len(sent)

    # Appends continue at the log end; a restart keeps the compacted log as it is.
    more = confluent_produce(broker.bootstrap, name, [Rec(keys[0], b"after", partition=0)])
    assert more[0].offset == sent[-1].offset + 1
    before_restart = confluent_consume_all(broker.bootstrap, name, 1)
    assert broker.stop() in broker.clean_exit_codes
    broker.start()
    assert confluent_consume_all(broker.bootstrap, name, 1) == before_restart


def commit(consumer: Consumer, topic: str, offset: int) -> None:
    consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)


def committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [tp] = consumer.committed([TopicPartition(topic, 0)], timeout=TIMEOUT)
        return int(tp.offset)
    finally:
        consumer.close()


def test_consumer_offsets_shrink_after_many_commits(
    start_broker: StartBroker, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    broker: BrokerProcess = start_broker(
        data_dir,
        {
            **FAST_CLEANER,
            "offsets.topic.num.partitions": "1",
            "offsets.topic.segment.bytes": "4096",
        },
    )
    name = topic_name("source")
    create_topic(broker.bootstrap, name)
    confluent_produce(broker.bootstrap, name, [Rec(b"k", b"v", partition=0)])
    group = topic_name("group")
    other = topic_name("other-group")
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    commits = 600
    try:
        for offset in range(1, commits + 1):
            commit(consumer, name, offset)
    finally:
        consumer.close()
    keep = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": other, "enable.auto.commit": False}
    )
    try:
        commit(keep, name, 7)
    finally:
        keep.close()
    offsets_dir = data_dir / "__consumer_offsets-0"
    # the commits rolled many segments: the active one starts far into the log
    assert max(int(p.name.split(".")[0]) for p in offsets_dir.glob("*.log")) > commits // 2

    wait_until(
        lambda: records_on_disk(offsets_dir) < commits // 4,
        timeout=60,
        what="__consumer_offsets to be compacted",
    )
    assert committed(broker.bootstrap, group, name) == commits
    assert committed(broker.bootstrap, other, name) == 7

    assert broker.stop() in broker.clean_exit_codes
    replayed = records_on_disk(offsets_dir)
    assert replayed < commits // 4  # what the restart replays
    broker.start()
    assert committed(broker.bootstrap, group, name) == commits
    assert committed(broker.bootstrap, other, name) == 7
