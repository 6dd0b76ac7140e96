from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_testutil import call, open_broker, produce

from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.list_offsets import ListOffsetsRequest

Req = ListOffsetsRequest
KEY = ApiKey.LIST_OFFSETS
LATEST, EARLIEST, MAX_TS, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
EARLIEST_PENDING_UPLOAD = -6


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path)
    b.cluster.create_topic("t", 2, {"segment.bytes": "200"})
    produce(b, "t", 0, [1000, 1001, 1002])  # offsets 0-2
    produce(b, "t", 0, [2000, 1500])  # 3-4: timestamps out of order inside a batch
    produce(b, "t", 0, [3000])  # 5
    produce(b, "t", 0, [2500, 3000])  # 6-7: the max timestamp again, later
    yield b
    b.close()


def query(broker: Broker, version: int, *parts: tuple[str, int, int], epoch: int = -1,
          isolation: int = 0, replica: int = -1) -> dict[tuple[str, int], object]:
    topics: dict[str, list[Req.ListOffsetsPartition]] = {}
    for name, p, ts in parts:
        topics.setdefault(name, []).append(
            Req.ListOffsetsPartition(partition_index=p, timestamp=ts, current_leader_epoch=epoch))
    req = Req(replica_id=replica, isolation_level=isolation,
              topics=[Req.ListOffsetsTopic(name=n, partitions=ps) for n, ps in topics.items()])
    resp = call(broker, KEY, version, req)
    return {(t.name, p.partition_index): p for t in resp.topics for p in t.partitions}


def one(broker: Broker, version: int, ts: int, partition: int = 0, **kw: int):  # type: ignore[no-untyped-def]
    [p] = query(broker, version, ("t", partition, ts), **kw).values()
    return p


@pytest.mark.parametrize("version", range(1, 12))
def test_latest_and_earliest(broker: Broker, version: int) -> None:
    latest, earliest = one(broker, version, LATEST), one(broker, version, EARLIEST)
    assert (latest.error_code, latest.offset, latest.timestamp) == (ErrorCode.NONE, 8, -1)
    assert (earliest.error_code, earliest.offset, earliest.timestamp) == (ErrorCode.NONE, 0, -1)
    if version >= 4:
        assert latest.leader_epoch == earliest.leader_epoch == 0
    empty = one(broker, version, LATEST, partition=1)
    assert (empty.offset, one(broker, version, EARLIEST, partition=1).offset) == (0, 0)


@pytest.mark.parametrize(("ts", "offset", "found_ts"), [
    (0, 0, 1000), (1000, 0, 1000), (1001, 1, 1001), (1003, 3, 2000), (1600, 3, 2000),
    (2001, 5, 3000), (2400, 5, 3000), (3000, 5, 3000), (3001, -1, -1)])
def test_by_timestamp(broker: Broker, ts: int, offset: int, found_ts: int) -> None:
    p = one(broker, 5, ts)
    assert (p.error_code, p.offset, p.timestamp) == (ErrorCode.NONE, offset, found_ts)
    assert p.leader_epoch == (0 if offset >= 0 else -1)


def test_by_timestamp_after_log_start_moved(broker: Broker) -> None:
    broker.partitions.log("t", 0).delete_records_before(4)  # type: ignore[union-attr]
    assert one(broker, 4, 1000).offset == 4  # record 4 (ts 1500) is the first one left >= 1000
    assert one(broker, 4, EARLIEST).offset == 4


@pytest.mark.parametrize("version", [7, 10])
def test_max_timestamp(broker: Broker, version: int) -> None:
    p = one(broker, version, MAX_TS)
    assert (p.error_code, p.offset, p.timestamp, p.leader_epoch) == (ErrorCode.NONE, 5, 3000, 0)
    empty = one(broker, version, MAX_TS, partition=1)
    assert (empty.error_code, empty.offset, empty.timestamp) == (ErrorCode.NONE, -1, -1)


def test_leader_epoch_is_the_batchs(broker: Broker) -> None:
    broker.cluster.create_topic("e", 1, {})
    produce(broker, "e", 0, [100], epoch=0)
    produce(broker, "e", 0, [200], epoch=3)
    [first] = query(broker, 6, ("e", 0, 100)).values()
    [second] = query(broker, 6, ("e", 0, 150)).values()
    [earliest] = query(broker, 6, ("e", 0, EARLIEST)).values()
    assert (first.offset, first.leader_epoch) == (0, 0)  # type: ignore[attr-defined]
    assert (second.offset, second.leader_epoch) == (1, 3)  # type: ignore[attr-defined]
    assert earliest.leader_epoch == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize(("version", "ts"), [(6, MAX_TS), (1, MAX_TS), (7, EARLIEST_LOCAL),
                                             (8, LATEST_TIERED), (10, EARLIEST_PENDING_UPLOAD),
                                             (10, -100), (11, -7), (11, -100)])
def test_timestamps_unknown_at_version(broker: Broker, version: int, ts: int) -> None:
    p = one(broker, version, ts)
    assert (p.error_code, p.offset) == (ErrorCode.UNSUPPORTED_VERSION, -1)


def test_earliest_local_and_latest_tiered(broker: Broker) -> None:
    broker.partitions.log("t", 0).delete_records_before(2)  # type: ignore[union-attr]
    local = one(broker, 8, EARLIEST_LOCAL)
    assert (local.offset, local.timestamp, local.leader_epoch) == (2, -1, 0)
    tiered = one(broker, 9, LATEST_TIERED)
    assert (tiered.error_code, tiered.offset, tiered.timestamp, tiered.leader_epoch) == (
        ErrorCode.NONE, -1, -1, -1)


@pytest.mark.parametrize("ts", [LATEST_TIERED, EARLIEST_PENDING_UPLOAD])
def test_v11_tiered_timestamps_have_no_offset_without_remote_storage(broker: Broker,
                                                                     ts: int) -> None:
    # KIP-1023's earliest pending upload, like v9's latest tiered: Kafka 4.4 answers a topic
    # without remote storage with no offset and no error.
    p = one(broker, 11, ts)
    assert (p.error_code, p.offset, p.timestamp, p.leader_epoch) == (ErrorCode.NONE, -1, -1, -1)
    assert one(broker, 11, EARLIEST).offset == 0 and one(broker, 11, LATEST).offset == 8


def test_unknown_partitions(broker: Broker) -> None:
    got = query(broker, 3, ("t", 2, LATEST), ("missing", 0, LATEST), ("t", 0, LATEST))
    assert got[("t", 2)].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # type: ignore[attr-defined]
    assert got[("missing", 0)].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # type: ignore[attr-defined]
    assert got[("t", 0)].error_code == ErrorCode.NONE  # type: ignore[attr-defined]


@pytest.mark.parametrize(("epoch", "code"), [
    (-1, ErrorCode.NONE), (0, ErrorCode.NONE), (1, ErrorCode.UNKNOWN_LEADER_EPOCH),
    (-2, ErrorCode.FENCED_LEADER_EPOCH)])
def test_current_leader_epoch(broker: Broker, epoch: int, code: ErrorCode) -> None:
    assert one(broker, 4, LATEST, epoch=epoch).error_code == code
    # before v4 the field does not exist: never fenced
    assert one(broker, 3, LATEST, epoch=epoch).error_code == ErrorCode.NONE


def test_duplicate_partition(broker: Broker) -> None:
    req = Req(replica_id=-1, topics=[
        Req.ListOffsetsTopic(name="t", partitions=[
            Req.ListOffsetsPartition(partition_index=0, timestamp=LATEST),
            Req.ListOffsetsPartition(partition_index=1, timestamp=LATEST)]),
        Req.ListOffsetsTopic(name="t", partitions=[
            Req.ListOffsetsPartition(partition_index=0, timestamp=EARLIEST)])])
    resp = call(broker, KEY, 5, req)
    [t] = resp.topics
    assert [(p.partition_index, p.error_code) for p in t.partitions] == [
        (0, ErrorCode.INVALID_REQUEST), (1, ErrorCode.NONE)]


def test_isolation_and_replica_bounds(broker: Broker) -> None:
    plog = broker.partitions.log("t", 0)
    assert plog is not None
    plog.high_watermark = 4  # as if offsets 4-7 were not yet replicated
    assert one(broker, 2, LATEST).offset == 4
    assert one(broker, 2, LATEST, isolation=1).offset == 4  # no transactions: LSO == HW
    assert one(broker, 2, LATEST, replica=1).offset == 8  # a replica sees the log end
    assert one(broker, 2, 2001).offset == -1  # offset 5 is beyond the high watermark
    assert one(broker, 2, 2001, replica=1).offset == 5
    assert one(broker, 7, MAX_TS).offset == -1


def test_v0_answers_old_style_offset_lists(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("old", 1, {})
    produce(broker, "old", 0, [1000, 2000, 3000])

    def ask(timestamp: int, max_num: int = 1) -> list[int]:
        request = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
            name="old", partitions=[ListOffsetsRequest.ListOffsetsPartition(
                partition_index=0, timestamp=timestamp, max_num_offsets=max_num)])])
        part = call(broker, ApiKey.LIST_OFFSETS, 0, request).topics[0].partitions[0]
        assert part.error_code == ErrorCode.NONE
        return list(part.old_style_offsets)

    assert ask(-1) == [3]
    assert ask(-2) == [0]
    assert ask(2000) == [1]
    assert ask(9999) == []
    assert ask(-1, max_num=0) == []


def test_a_stored_batch_that_cannot_be_read_is_a_partition_error(tmp_path: Path) -> None:
    """The fuzzer's F1b: a timestamp lookup over a batch whose payload does not decompress
    raised out of the handler and the connection was closed; it is an error code now."""
    import struct
    import time

    import crc32c

    from odradek.broker.cluster import LEADER_EPOCH
    from odradek.wire.records import ATTRIBUTES_OFFSET, CRC_OFFSET, build_batch

    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    now = int(time.time() * 1000)
    raw = bytearray(build_batch([(b"k", b"v" * 100)], base_timestamp=now))
    struct.pack_into(">h", raw, ATTRIBUTES_OFFSET, 3)  # claims lz4 over plain records
    struct.pack_into(">I", raw, CRC_OFFSET, crc32c.crc32c(bytes(raw[ATTRIBUTES_OFFSET:])))
    plog = broker.partitions.log("t", 0)
    assert plog is not None
    plog.append(memoryview(raw), leader_epoch=LEADER_EPOCH, now_ms=now)  # storage trusts it
    request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name="t", partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=now - 1000)])])
    part = call(broker, ApiKey.LIST_OFFSETS, 7, request).topics[0].partitions[0]
    assert part.error_code == ErrorCode.CORRUPT_MESSAGE
