"""CreateTopics answers before the partition logs exist (as Kafka): the logs are listed in
`broker.pending_logs` and made after, or on the first request for the partition."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
from admin_testutil import call, open_broker

from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.create_topics import CreateTopicsRequest
from odradek.wire._generated.delete_topics import DeleteTopicsRequest
from odradek.wire._generated.fetch import FetchRequest
from odradek.wire._generated.produce import ProduceRequest
from odradek.wire.records import Record, build_batch, iter_batches


def create(broker: Any, name: str, partitions: int, **configs: str) -> ErrorCode:
    topic = CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1,
        configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                 for k, v in configs.items()])
    return call(broker, ApiKey.CREATE_TOPICS, 7,
                CreateTopicsRequest(topics=[topic])).topics[0].error_code


def send(broker: Any, topic: str, partition: int, value: bytes) -> tuple[int, int]:
    batch = bytes(build_batch([Record(0, 0, None, value, [])], base_timestamp=1000))
    req = ProduceRequest(transactional_id=None, acks=-1, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=partition, records=batch)])])
    part = call(broker, ApiKey.PRODUCE, 9, req).responses[0].partition_responses[0]
    return part.error_code, part.base_offset


def read(broker: Any, topic: str, partition: int) -> tuple[int, list[bytes | None]]:
    req = FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
            FetchRequest.FetchPartition(partition=partition, current_leader_epoch=-1,
                                        fetch_offset=0, log_start_offset=-1,
                                        partition_max_bytes=1 << 20)])])
    part = call(broker, ApiKey.FETCH, 11, req).responses[0].partitions[0]
    return part.error_code, [r.value for b in iter_batches(memoryview(part.records or b""))
                             for r in b.records()]


def test_a_partition_is_usable_right_after_the_answer(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    try:
        assert create(broker, "t", 50) == ErrorCode.NONE
        assert len(broker.pending_logs) == 50 and broker.logs.logs() == {}
        assert send(broker, "t", 7, b"v") == (ErrorCode.NONE, 0)  # made on first use
        assert read(broker, "t", 7) == (ErrorCode.NONE, [b"v"])
        assert read(broker, "t", 8) == (ErrorCode.NONE, [])
        assert sorted(broker.logs.logs()) == [("t", 7), ("t", 8)]
        broker.pending_logs.make_all()
        assert len(broker.pending_logs) == 0
        assert broker.logs.partitions_of("t") == list(range(50))
        assert read(broker, "t", 7) == (ErrorCode.NONE, [b"v"])  # not made twice
    finally:
        broker.close()


def test_deleted_and_recreated_before_its_logs_were_made(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    try:
        assert create(broker, "t", 20) == ErrorCode.NONE
        broker.pending_logs.make_some(5)
        req = DeleteTopicsRequest(topic_names=["t"], timeout_ms=1000)
        assert call(broker, ApiKey.DELETE_TOPICS, 5, req).responses[0].error_code == 0
        assert len(broker.pending_logs) == 0 and broker.logs.logs() == {}
        assert create(broker, "t", 3, **{"retention.ms": "12345"}) == ErrorCode.NONE
        broker.pending_logs.make_all()
        assert broker.logs.partitions_of("t") == [0, 1, 2]
        plog = broker.logs.get("t", 2)
        assert plog is not None and plog.config.retention_ms == 12345
        dirs = sorted(d.name for d in broker.config.log_dirs[0].iterdir() if d.is_dir())
        assert dirs == ["t-0", "t-1", "t-2"]
    finally:
        broker.close()


def test_a_start_makes_the_logs_a_previous_run_left_unmade(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    assert create(broker, "t", 30) == ErrorCode.NONE
    assert send(broker, "t", 0, b"kept") == (ErrorCode.NONE, 0)
    broker.close()  # as if killed: 29 logs were never made
    again = open_broker(tmp_path)
    try:
        assert {t.name: t.partitions for t in again.cluster} == {"t": 30}
        assert len(again.pending_logs) == 29
        assert read(again, "t", 0) == (ErrorCode.NONE, [b"kept"])
        assert send(again, "t", 29, b"x") == (ErrorCode.NONE, 0)
        again.pending_logs.make_all()
        assert again.logs.partitions_of("t") == list(range(30))
    finally:
        again.close()


def test_a_log_that_cannot_be_made_yet_is_retried(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    broker = open_broker(tmp_path)
    try:
        assert create(broker, "t", 2) == ErrorCode.NONE
        real = broker.logs.create

        def out_of_descriptors(*a: Any, **kw: Any) -> Any:
            raise OSError(errno.EMFILE, "Too many open files")

        monkeypatch.setattr(broker.logs, "create", out_of_descriptors)
        assert not broker.pending_logs.make_some(10)
        assert len(broker.pending_logs) == 2
        assert send(broker, "t", 0, b"v")[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        monkeypatch.setattr(broker.logs, "create", real)
        assert send(broker, "t", 0, b"v") == (ErrorCode.NONE, 0)
        assert broker.pending_logs.make_some(10)
        assert len(broker.pending_logs) == 0 and broker.logs.partitions_of("t") == [0, 1]
    finally:
        broker.close()
