"""Handlers on a full disk and on a failed log dir (issue #10): errors codes, never a closed
connection. Produce gets KAFKA_STORAGE_ERROR and resumes once space is back; coordinator
writes get the same treatment; a failed dir's partitions answer KAFKA_STORAGE_ERROR for
produce, fetch and ListOffsets while the other dir works, and DescribeLogDirs reports it;
DeleteTopics frees space on a full disk and the deletion survives a restart even when
`topics.json` could not be rewritten; closing on a full disk raises nothing."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from admin_testutil import call, open_broker, produce

from odradek.broker.broker import Broker
from odradek.broker.cluster import TOMBSTONE_PREFIX
from odradek.broker.storage.errors import AppendFailedError
from odradek.config import BrokerConfig
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.alter_configs import AlterConfigsRequest
from odradek.wire._generated.create_partitions import CreatePartitionsRequest
from odradek.wire._generated.create_topics import CreateTopicsRequest
from odradek.wire._generated.delete_topics import DeleteTopicsRequest
from odradek.wire._generated.describe_log_dirs import DescribeLogDirsRequest
from odradek.wire._generated.fetch import FetchRequest
from odradek.wire._generated.list_offsets import ListOffsetsRequest
from odradek.wire._generated.metadata import MetadataRequest
from odradek.wire._generated.offset_commit import OffsetCommitRequest
from odradek.wire._generated.produce import ProduceRequest
from odradek.wire.records import build_batch, iter_batches


class FullDisk:
    """While on, every `os.write`/`os.pwrite` to a file under `root` whose name ends with
    `suffix` fails with `code` (ENOSPC: a full file system)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path, suffix: str = "",
                 code: int = errno.ENOSPC) -> None:
        self.on = True
        real_write, real_pwrite = os.write, os.pwrite

        def wrap(real: Callable[..., int]) -> Callable[..., int]:
            def wrapped(fd: int, data: Any, *rest: Any) -> int:
                try:
                    path = os.readlink(f"/proc/self/fd/{fd}")
                except OSError:
                    path = ""
                if self.on and path.startswith(str(root)) and path.endswith(suffix):
                    raise OSError(code, os.strerror(code))
                return real(fd, data, *rest)

            return wrapped

        monkeypatch.setattr(os, "write", wrap(real_write))
        monkeypatch.setattr(os, "pwrite", wrap(real_pwrite))


def produce_request(topic: str, partition: int, value: bytes) -> ProduceRequest:
    return ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(
                index=partition, records=build_batch([(b"k", value)], base_timestamp=1000))])])


def send(broker: Broker, topic: str, partition: int, value: bytes) -> tuple[ErrorCode, int]:
    r = call(broker, ApiKey.PRODUCE, 9, produce_request(topic, partition, value))
    part = r.responses[0].partition_responses[0]
    return part.error_code, part.base_offset


def fetch(broker: Broker, topic: str, partition: int) -> tuple[ErrorCode, list[bytes]]:
    req = FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
            FetchRequest.FetchPartition(partition=partition, current_leader_epoch=-1,
                                        fetch_offset=0, log_start_offset=-1,
                                        partition_max_bytes=1 << 20)])])
    part = call(broker, ApiKey.FETCH, 11, req).responses[0].partitions[0]
    values = [r.value for b in iter_batches(memoryview(part.records or b""))
              for r in b.records()]
    return part.error_code, values


def list_latest(broker: Broker, topic: str, partition: int) -> ErrorCode:
    req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
        ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
            ListOffsetsRequest.ListOffsetsPartition(partition_index=partition,
                                                    current_leader_epoch=-1, timestamp=-1)])])
    return call(broker, ApiKey.LIST_OFFSETS, 7, req).topics[0].partitions[0].error_code  # type: ignore[no-any-return]


def delete_topic(broker: Broker, name: str) -> ErrorCode:
    [r] = call(broker, ApiKey.DELETE_TOPICS, 5, DeleteTopicsRequest(topic_names=[name])).responses
    return r.error_code  # type: ignore[no-any-return]


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".lock"}


# -- a full disk ---------------------------------------------------------------------------------


def test_produce_on_a_full_disk_is_a_storage_error_until_space_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    assert send(broker, "t", 0, b"a") == (ErrorCode.NONE, 0)
    before = files_under(tmp_path / "data" / "t-0")
    disk = FullDisk(monkeypatch, tmp_path)
    for _ in range(3):
        assert send(broker, "t", 0, b"b") == (ErrorCode.KAFKA_STORAGE_ERROR, -1)
    assert files_under(tmp_path / "data" / "t-0") == before
    assert fetch(broker, "t", 0) == (ErrorCode.NONE, [b"a"])  # reads keep being served
    assert broker.logs.is_online(tmp_path / "data")  # a full disk is not a failed dir
    disk.on = False
    assert send(broker, "t", 0, b"c") == (ErrorCode.NONE, 1)
    assert fetch(broker, "t", 0) == (ErrorCode.NONE, [b"a", b"c"])
    broker.close()


def test_coordinator_writes_on_a_full_disk_get_an_error_and_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = open_broker(tmp_path, **{"offsets.topic.num.partitions": "1"})
    broker.cluster.create_topic("t", 1, {})

    def commit(offset: int) -> ErrorCode:
        req = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="",
                                  topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
                                      name="t", partitions=[
                                          OffsetCommitRequest.OffsetCommitRequestPartition(
                                              partition_index=0, committed_offset=offset,
                                              committed_leader_epoch=-1,
                                              committed_metadata="")])])
        resp = call(broker, ApiKey.OFFSET_COMMIT, 8, req)
        return resp.topics[0].partitions[0].error_code  # type: ignore[no-any-return]

    assert commit(1) == ErrorCode.NONE
    offsets_log = broker.partitions.log("__consumer_offsets", 0)
    assert offsets_log is not None
    end = offsets_log.log_end_offset
    disk = FullDisk(monkeypatch, tmp_path)
    with pytest.raises(AppendFailedError):
        broker.partitions.append_internal("__consumer_offsets", 0,
                                          memoryview(bytearray(build_batch([(b"k", b"v")]))),
                                          broker.now_ms())
    # Kafka's mapping for a commit whose write failed: NOT_COORDINATOR, retriable.
    assert commit(2) == ErrorCode.NOT_COORDINATOR
    assert offsets_log.log_end_offset == end
    disk.on = False
    assert commit(3) == ErrorCode.NONE
    assert offsets_log.log_end_offset == end + 1
    broker.close()


def test_delete_topic_on_a_full_disk_frees_the_data_and_stays_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    broker = open_broker(tmp_path)
    gone = broker.cluster.create_topic("gone", 2, {})
    broker.cluster.create_topic("kept", 1, {})
    for p in range(2):
        produce(broker, "gone", p, [1, 2, 3])
    produce(broker, "kept", 0, [1])
    disk = FullDisk(monkeypatch, tmp_path)  # every write fails, topics.json's included
    assert delete_topic(broker, "gone") == ErrorCode.NONE
    assert not (data / "gone-0").exists() and not (data / "gone-1").exists()
    assert broker.cluster.get("gone") is None and broker.partitions.log("gone", 0) is None
    assert broker.cluster.unsaved
    tombstone = data / (TOMBSTONE_PREFIX + gone.topic_id.hex)
    assert tombstone.exists()
    assert "gone" in json.loads((data / "topics.json").read_text())["topics"]
    assert not broker.cluster.save_if_pending()  # still full
    disk.on = False

    # A crash now (nothing more written), then a start: the deletion is completed.
    for plog in broker.logs.logs().values():
        plog.close_without_flush()
    restarted = open_broker(tmp_path)
    assert restarted.cluster.get("gone") is None
    assert restarted.partitions.log("gone", 0) is None
    assert not any(p.name.startswith("gone-") for p in data.iterdir())
    assert "gone" not in json.loads((data / "topics.json").read_text())["topics"]
    assert not tombstone.exists()
    assert restarted.cluster.get("kept") is not None
    # The same name again is a new topic, which a restart keeps.
    again = restarted.cluster.create_topic("gone", 1, {})
    produce(restarted, "gone", 0, [5])
    restarted.close()
    last = open_broker(tmp_path)
    topic = last.cluster.get("gone")
    assert topic is not None and topic.topic_id == again.topic_id
    assert fetch(last, "gone", 0)[1] == [b"v0"]
    last.close()


def test_a_pending_topics_json_rewrite_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    broker = open_broker(tmp_path)
    gone = broker.cluster.create_topic("gone", 1, {})
    disk = FullDisk(monkeypatch, tmp_path, suffix="topics.json.tmp")
    assert delete_topic(broker, "gone") == ErrorCode.NONE
    assert broker.cluster.unsaved
    disk.on = False
    assert broker.cluster.save_if_pending()
    assert not broker.cluster.unsaved
    assert not (data / (TOMBSTONE_PREFIX + gone.topic_id.hex)).exists()
    assert "gone" not in json.loads((data / "topics.json").read_text())["topics"]
    broker.close()


def test_delete_topic_that_cannot_even_be_recorded_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    produce(broker, "t", 0, [1])
    real_open = os.open

    def no_inodes(path: Any, flags: int, *rest: Any) -> int:
        if Path(path).name.startswith(TOMBSTONE_PREFIX):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, flags, *rest)

    monkeypatch.setattr(os, "open", no_inodes)
    assert delete_topic(broker, "t") == ErrorCode.KAFKA_STORAGE_ERROR
    monkeypatch.undo()
    assert broker.cluster.get("t") is not None
    assert fetch(broker, "t", 0) == (ErrorCode.NONE, [b"v0"])
    assert delete_topic(broker, "t") == ErrorCode.NONE
    broker.close()


def test_closing_on_a_full_disk_raises_nothing_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 2, {})
    for p in range(2):
        for _ in range(3):
            assert send(broker, "t", p, b"x")[0] == ErrorCode.NONE
    FullDisk(monkeypatch, tmp_path)
    broker.close()
    monkeypatch.undo()
    again = open_broker(tmp_path)
    for p in range(2):
        assert fetch(again, "t", p) == (ErrorCode.NONE, [b"x"] * 3)
    again.close()


def test_admin_changes_on_a_full_disk_are_refused_whole_and_work_once_space_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    meta = tmp_path / "data" / "topics.json"
    before = meta.read_bytes()
    disk = FullDisk(monkeypatch, tmp_path, suffix="topics.json.tmp")

    create = CreateTopicsRequest(timeout_ms=1000, validate_only=False, topics=[
        CreateTopicsRequest.CreatableTopic(name=n, num_partitions=2, replication_factor=1,
                                           assignments=[], configs=[]) for n in ("a", "b")])
    answers = call(broker, ApiKey.CREATE_TOPICS, 5, create).topics
    assert [(a.name, a.error_code) for a in answers] == [
        ("a", ErrorCode.KAFKA_STORAGE_ERROR), ("b", ErrorCode.KAFKA_STORAGE_ERROR)]
    assert broker.cluster.get("a") is None and broker.cluster.get("b") is None
    assert not (tmp_path / "data" / "a-0").exists()  # no orphaned partition logs

    grow = CreatePartitionsRequest(timeout_ms=1000, validate_only=False, topics=[
        CreatePartitionsRequest.CreatePartitionsTopic(name="t", count=3, assignments=None)])
    result = call(broker, ApiKey.CREATE_PARTITIONS, 2, grow).results[0]
    assert result.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert broker.cluster.get("t").partitions == 1  # type: ignore[union-attr]
    assert not (tmp_path / "data" / "t-1").exists()

    alter = AlterConfigsRequest(validate_only=False, resources=[
        AlterConfigsRequest.AlterConfigsResource(resource_type=2, resource_name="t", configs=[
            AlterConfigsRequest.AlterableConfig(name="retention.ms", value="1000")])])
    response = call(broker, ApiKey.ALTER_CONFIGS, 2, alter).responses[0]
    assert response.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert broker.cluster.get("t").configs == {}  # type: ignore[union-attr]
    assert meta.read_bytes() == before
    assert send(broker, "t", 0, b"still") == (ErrorCode.NONE, 0)  # the broker carries on

    disk.on = False
    answers = call(broker, ApiKey.CREATE_TOPICS, 5, create).topics
    assert [(a.name, a.error_code) for a in answers] == [
        ("a", ErrorCode.NONE), ("b", ErrorCode.NONE)]
    assert call(broker, ApiKey.CREATE_PARTITIONS, 2, grow).results[0].error_code == (
        ErrorCode.NONE)
    assert call(broker, ApiKey.ALTER_CONFIGS, 2, alter).responses[0].error_code == (
        ErrorCode.NONE)
    broker.close()
    again = open_broker(tmp_path)
    assert sorted((t.name, t.partitions) for t in again.cluster) == [
        ("a", 2), ("b", 2), ("t", 3)]
    again.close()


# -- a failed log dir ----------------------------------------------------------------------------


def test_a_failed_log_dir_answers_storage_errors_and_the_other_keeps_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    broker = Broker(BrokerConfig({"log.dirs": f"{d1},{d2}"}))
    broker.cluster.create_topic("t", 2, {})
    where = {p: broker.partitions.log_dir_of("t", p) for p in range(2)}
    assert set(where.values()) == {d1, d2}
    bad = next(p for p, d in where.items() if d == d2)
    good = 1 - bad
    for p in range(2):
        assert send(broker, "t", p, b"before")[0] == ErrorCode.NONE

    FullDisk(monkeypatch, d2, code=errno.EIO)
    assert send(broker, "t", bad, b"x") == (ErrorCode.KAFKA_STORAGE_ERROR, -1)
    monkeypatch.undo()  # the dir stays offline all the same
    assert send(broker, "t", bad, b"x") == (ErrorCode.KAFKA_STORAGE_ERROR, -1)
    assert fetch(broker, "t", bad)[0] == ErrorCode.KAFKA_STORAGE_ERROR
    assert list_latest(broker, "t", bad) == ErrorCode.KAFKA_STORAGE_ERROR
    assert send(broker, "t", good, b"after")[0] == ErrorCode.NONE
    assert fetch(broker, "t", good) == (ErrorCode.NONE, [b"before", b"after"])
    assert list_latest(broker, "t", good) == ErrorCode.NONE

    every = DescribeLogDirsRequest()
    every.topics = None  # every partition
    results = {r.log_dir: r for r in call(broker, ApiKey.DESCRIBE_LOG_DIRS, 4, every).results}
    assert results[str(d2)].error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert results[str(d2)].topics == []
    assert results[str(d1)].error_code == ErrorCode.NONE
    assert [(t.name, [p.partition_index for p in t.partitions])
            for t in results[str(d1)].topics] == [("t", [good])]

    node = broker.config.get_int("node.id")
    topics = MetadataRequest()
    topics.topics = None
    meta = call(broker, ApiKey.METADATA, 12, topics)
    parts = {p.partition_index: p for t in meta.topics if t.name == "t" for p in t.partitions}
    assert (parts[bad].error_code, parts[bad].leader_id, parts[bad].offline_replicas) == (
        ErrorCode.LEADER_NOT_AVAILABLE, -1, [node])
    assert (parts[good].error_code, parts[good].leader_id, parts[good].offline_replicas) == (
        ErrorCode.NONE, node, [])
    broker.close()

    restarted = Broker(BrokerConfig({"log.dirs": f"{d1},{d2}"}))  # the dir is tried again
    assert fetch(restarted, "t", bad) == (ErrorCode.NONE, [b"before"])
    restarted.close()
