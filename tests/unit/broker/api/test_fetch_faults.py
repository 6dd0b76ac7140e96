"""Fetch never drops a connection for a storage condition: a topic deleted during the long
poll, a negative partition size, a response bound by the broker's fetch.max.bytes."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import anyio
from admin_testutil import open_broker, produce

from odradek.broker.api import delete_topics, fetch
from odradek.broker.broker import Broker
from odradek.broker.connection import IncomingRequest
from odradek.broker.context import ClientInfo
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.delete_topics import DeleteTopicsRequest
from odradek.wire._generated.fetch import FetchRequest
from odradek.wire.primitives import ZERO_UUID


def _fetch_request(topic: str, *, topic_id: uuid.UUID = ZERO_UUID, offset: int = 0,
                   partition_max_bytes: int = 1 << 20, max_bytes: int = 1 << 24,
                   max_wait_ms: int = 0, min_bytes: int = 1) -> FetchRequest:
    return FetchRequest(
        replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
        isolation_level=0, session_id=0, session_epoch=-1,
        topics=[FetchRequest.FetchTopic(topic=topic, topic_id=topic_id, partitions=[
            FetchRequest.FetchPartition(partition=0, current_leader_epoch=-1,
                                        fetch_offset=offset, log_start_offset=-1,
                                        partition_max_bytes=partition_max_bytes)])],
        forgotten_topics_data=[], rack_id="")


def _ctx(broker: Broker, api_key: int, version: int) -> Any:
    return broker.context(ClientInfo("127.0.0.1:1", "PLAINTEXT"),
                          IncomingRequest(api_key, version, 1, "test", bytearray(), 0))


def test_a_topic_deleted_during_the_long_poll_answers_unknown_topic(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    topic_id = broker.cluster.get("t").topic_id  # type: ignore[union-attr]
    produce(broker, "t", 0, [1000])

    async def run(version: int) -> tuple[Any, float]:
        broker.partitions.start()
        result: list[Any] = []
        request = _fetch_request("t", topic_id=topic_id, offset=1, max_wait_ms=10_000,
                                 min_bytes=1)
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            async def poll() -> None:
                result.append(await fetch.handle(_ctx(broker, ApiKey.FETCH, version), request))

            tg.start_soon(poll)
            await anyio.sleep(0.05)  # let the fetch park in its long poll
            assert not result
            await delete_topics.handle(_ctx(broker, ApiKey.DELETE_TOPICS, 4),
                                       DeleteTopicsRequest(topic_names=["t"], timeout_ms=1000))
        return result[0], time.monotonic() - started

    response, took = anyio.run(run, 12)
    part = response.responses[0].partitions[0]
    assert part.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert part.high_watermark == -1 and len(part.records) == 0
    assert took < 5  # answered when the topic went, not at max_wait_ms


def test_a_topic_deleted_during_the_long_poll_answers_unknown_topic_id(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    topic_id = broker.cluster.get("t").topic_id  # type: ignore[union-attr]

    async def run() -> Any:
        broker.partitions.start()
        result: list[Any] = []
        request = _fetch_request("", topic_id=topic_id, max_wait_ms=10_000)
        async with anyio.create_task_group() as tg:
            async def poll() -> None:
                result.append(await fetch.handle(_ctx(broker, ApiKey.FETCH, 13), request))

            tg.start_soon(poll)
            await anyio.sleep(0.05)
            broker.cluster.delete_topic("t")
            broker.partitions.notify_appended("t", 0)
        return result[0]

    part = anyio.run(run).responses[0].partitions[0]
    assert part.error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_a_negative_partition_max_bytes_is_a_partition_error(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    produce(broker, "t", 0, [1000, 1001])
    request = _fetch_request("t", partition_max_bytes=-1)
    response = anyio.run(fetch.handle, _ctx(broker, ApiKey.FETCH, 12), request)
    part = response.responses[0].partitions[0]
    assert part.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert len(part.records) == 0 and part.high_watermark == -1


def test_fetch_max_bytes_bounds_the_response(tmp_path: Path) -> None:
    broker = open_broker(tmp_path, **{"fetch.max.bytes": "1024"})
    broker.cluster.create_topic("t", 1, {})
    for i in range(20):  # 20 batches of about 90 bytes
        produce(broker, "t", 0, [1000 + i])
    whole = broker.partitions.log("t", 0)
    assert whole is not None and whole.size_in_bytes > 1024
    request = _fetch_request("t", max_bytes=2**31 - 1)
    response = anyio.run(fetch.handle, _ctx(broker, ApiKey.FETCH, 12), request)
    part = response.responses[0].partitions[0]
    assert part.error_code == ErrorCode.NONE
    assert 0 < len(part.records) <= 1024
