"""Large admin requests (issue #10): one metadata write per request, however many topics or
partitions it changes, and the event loop is not held for the whole request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from admin_testutil import acall, call, open_broker

from odradek.broker import cluster as cluster_module
from odradek.broker.broker import Broker
from odradek.broker.storage import checkpoint as checkpoint_module
from odradek.broker.storage import files
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.create_partitions import CreatePartitionsRequest
from odradek.wire._generated.create_topics import CreateTopicsRequest
from odradek.wire._generated.delete_topics import DeleteTopicsRequest


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path)
    yield b
    b.close()


def creatable(name: str, partitions: int) -> CreateTopicsRequest.CreatableTopic:
    return CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions,
                                              replication_factor=1)


def create_request(topics: dict[str, int]) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=[creatable(n, p) for n, p in topics.items()])


def count_writes(monkeypatch: pytest.MonkeyPatch, module: Any) -> dict[str, int]:
    """Count `atomic_write` calls made through `module`, by file name."""
    counts: dict[str, int] = {}
    real = module.atomic_write

    def counting(path: Path, data: bytes, **kw: Any) -> None:
        counts[path.name] = counts.get(path.name, 0) + 1
        real(path, data, **kw)

    monkeypatch.setattr(module, "atomic_write", counting)
    return counts


def test_create_topics_writes_topics_json_once(broker: Broker,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    writes = count_writes(monkeypatch, cluster_module)
    wanted = {f"t{i}": 1 + i % 3 for i in range(300)}
    results = call(broker, ApiKey.CREATE_TOPICS, 7, create_request(wanted)).topics
    assert [(r.name, r.error_code, r.num_partitions) for r in results] == [
        (n, ErrorCode.NONE, p) for n, p in wanted.items()]
    assert writes == {"topics.json": 1}
    # Answered before the logs are made (as Kafka): they are listed, made after.
    assert len(broker.pending_logs) == sum(wanted.values())
    assert broker.logs.partitions_of("t0") == []
    broker.pending_logs.make_all()
    for name, partitions in wanted.items():
        assert broker.logs.partitions_of(name) == list(range(partitions))
    # What was written is what a restart reads back.
    broker.close()
    again = open_broker(Path(broker.config.log_dirs[0]).parent)
    assert {t.name: t.partitions for t in again.cluster} == wanted
    again.close()


def test_names_of_one_request_still_collide(broker: Broker) -> None:
    results = call(broker, ApiKey.CREATE_TOPICS, 7,
                   create_request({"a.b": 1, "a_b": 1, "c": 1})).topics
    assert [(r.name, r.error_code) for r in results] == [
        ("a.b", ErrorCode.NONE), ("a_b", ErrorCode.INVALID_TOPIC_EXCEPTION), ("c", ErrorCode.NONE)]
    assert broker.cluster.get("a_b") is None
    # Nothing stays reserved: the refused name is still refused for colliding, the others free.
    assert broker.cluster.check_new_topic("d", 1, {}) is None


def test_create_partitions_writes_topics_json_once(broker: Broker,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    call(broker, ApiKey.CREATE_TOPICS, 7, create_request({f"t{i}": 1 for i in range(100)}))
    broker.pending_logs.make_all()
    writes = count_writes(monkeypatch, cluster_module)
    req = CreatePartitionsRequest(topics=[
        CreatePartitionsRequest.CreatePartitionsTopic(name=f"t{i}", count=3, assignments=None)
        for i in range(100)], timeout_ms=1000, validate_only=False)
    results = call(broker, ApiKey.CREATE_PARTITIONS, 3, req).results
    assert {r.error_code for r in results} == {ErrorCode.NONE}
    assert writes == {"topics.json": 1}
    assert all(broker.logs.partitions_of(f"t{i}") == [0, 1, 2] for i in range(100))


def test_delete_topics_writes_metadata_and_checkpoints_once(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    call(broker, ApiKey.CREATE_TOPICS, 7, create_request({f"t{i}": 2 for i in range(100)}))
    broker.pending_logs.make_some(100)  # half the logs made, the other half still listed
    json_writes = count_writes(monkeypatch, cluster_module)
    checkpoint_writes = count_writes(monkeypatch, checkpoint_module)
    req = DeleteTopicsRequest(topic_names=[f"t{i}" for i in range(0, 100, 2)], timeout_ms=1000)
    results = call(broker, ApiKey.DELETE_TOPICS, 5, req).responses
    assert {r.error_code for r in results} == {ErrorCode.NONE}
    assert json_writes == {"topics.json": 1}
    assert checkpoint_writes == {files.RECOVERY_POINT_CHECKPOINT_FILE: 1,
                                 files.LOG_START_OFFSET_CHECKPOINT_FILE: 1}
    assert sorted(t.name for t in broker.cluster) == sorted(f"t{i}" for i in range(1, 100, 2))
    # The deleted topics' logs, made or still listed, are gone and never made after.
    broker.pending_logs.make_all()
    assert broker.logs.partitions_of("t0") == [] and broker.logs.partitions_of("t1") == [0, 1]
    assert broker.logs.partitions_of("t98") == [] and broker.logs.partitions_of("t99") == [0, 1]
    assert len(broker.logs.logs()) == 100
    assert not any(d.name.startswith("t98-") for d in broker.config.log_dirs[0].iterdir())


@pytest.mark.parametrize("shape", ["partitions", "topics"])
def test_large_requests_yield_to_other_tasks(broker: Broker, shape: str) -> None:
    """Another task gets to run many times while the 400 logs of one CreateTopics are made
    (after its answer), and again while DeleteTopics removes them: neither holds the event
    loop throughout."""
    wanted = {"big": 400} if shape == "partitions" else {f"t{i}": 1 for i in range(400)}
    ticks: list[int] = []

    async def run() -> list[Any]:
        done = anyio.Event()

        async def ticker() -> None:
            count = 0
            while not done.is_set():
                await anyio.lowlevel.checkpoint()
                count += 1
            ticks.append(count)

        answers: list[Any] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            async with anyio.create_task_group() as background:
                background.start_soon(broker.pending_logs.run)
                answers.append(await acall(broker, ApiKey.CREATE_TOPICS, 7,
                                           create_request(wanted)))
                while len(broker.pending_logs):
                    await anyio.sleep(0.01)
                background.cancel_scope.cancel()
            done.set()
        assert len(broker.logs.logs()) == 400
        done = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            answers.append(await acall(broker, ApiKey.DELETE_TOPICS, 5, DeleteTopicsRequest(
                topic_names=list(wanted), timeout_ms=1000)))
            done.set()
        return answers

    created, deleted = anyio.run(run)
    assert [r.error_code for r in created.topics] == [ErrorCode.NONE] * len(wanted)
    assert [r.error_code for r in deleted.responses] == [ErrorCode.NONE] * len(wanted)
    # 400 logs at one yield per YIELD_EVERY: at least that many turns for the other task each time.
    assert ticks[0] >= 400 // cluster_module.YIELD_EVERY
    assert ticks[1] >= 400 // cluster_module.YIELD_EVERY
    assert list(broker.cluster) == []


def test_large_creations_settle_the_heap(broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every heap.SETTLE_EVERY partition logs, the objects so far are frozen (`gc.freeze`),
    so the collector's full passes stop walking every log of the broker."""
    settled: list[int] = []
    monkeypatch.setattr(cluster_module.heap, "settle",
                        lambda: settled.append(len(broker.logs.logs())))
    monkeypatch.setattr(cluster_module.heap, "SETTLE_EVERY", 50)
    call(broker, ApiKey.CREATE_TOPICS, 7, create_request({"wide": 120, "b": 10, "c": 30}))
    broker.pending_logs.make_all()  # the logs CreateTopics left to make after its answer
    grow = CreatePartitionsRequest(topics=[CreatePartitionsRequest.CreatePartitionsTopic(
        name="c", count=80, assignments=None)])
    assert call(broker, ApiKey.CREATE_PARTITIONS, 3, grow).results[0].error_code == (
        ErrorCode.NONE)
    assert settled == [50, 100, 150, 160 + 50]  # counted per request (or background run)
