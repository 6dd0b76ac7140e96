from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.delete_topics import DeleteTopicsRequest
from odradek.wire.primitives import ZERO_UUID

Req = DeleteTopicsRequest
KEY = ApiKey.DELETE_TOPICS


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path)
    yield b
    b.close()


def by_names(broker: Broker, version: int, *names: str):  # type: ignore[no-untyped-def]
    if version >= 6:
        req = Req(topics=[Req.DeleteTopicState(name=n, topic_id=ZERO_UUID) for n in names])
    else:
        req = Req(topic_names=list(names))
    return call(broker, KEY, version, req).responses


def by_ids(broker: Broker, *ids: uuid.UUID):  # type: ignore[no-untyped-def]
    req = Req(topics=[Req.DeleteTopicState(name=None, topic_id=i) for i in ids])
    return call(broker, KEY, 6, req).responses


@pytest.mark.parametrize("version", range(7))
def test_delete_by_name(broker: Broker, version: int) -> None:
    t = broker.cluster.create_topic("gone", 3, {})
    dirs = [broker.partitions.log("gone", p).directory for p in range(3)]  # type: ignore[union-attr]
    broker.cluster.create_topic("kept", 1, {})
    [r] = by_names(broker, version, "gone")
    assert (r.name, r.error_code) == ("gone", ErrorCode.NONE)
    assert broker.cluster.get("gone") is None
    assert broker.cluster.get("kept") is not None
    assert all(broker.partitions.log("gone", p) is None for p in range(3))
    assert not any(d.exists() for d in dirs)
    if version >= 5:
        assert r.error_message is None
    assert r.topic_id == (t.topic_id if version >= 6 else ZERO_UUID)


@pytest.mark.parametrize("version", [0, 4, 5, 6])
def test_unknown_name(broker: Broker, version: int) -> None:
    [r] = by_names(broker, version, "missing")
    assert (r.name, r.error_code) == ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def test_delete_by_id(broker: Broker) -> None:
    t = broker.cluster.create_topic("by-id", 2, {})
    unknown = uuid.uuid4()
    ok, missing = by_ids(broker, t.topic_id, unknown)
    assert (ok.name, ok.topic_id, ok.error_code) == ("by-id", t.topic_id, ErrorCode.NONE)
    assert (missing.name, missing.topic_id, missing.error_code) == (
        None, unknown, ErrorCode.UNKNOWN_TOPIC_ID)
    assert broker.cluster.get("by-id") is None
    assert t.topic_id not in broker.cluster.by_id


def test_invalid_combinations(broker: Broker) -> None:
    a = broker.cluster.create_topic("a", 1, {})
    b = broker.cluster.create_topic("b", 1, {})
    c = broker.cluster.create_topic("c", 1, {})
    req = Req(topics=[
        Req.DeleteTopicState(name="a", topic_id=a.topic_id),  # both
        Req.DeleteTopicState(name=None, topic_id=ZERO_UUID),  # neither
        Req.DeleteTopicState(name="b", topic_id=ZERO_UUID),  # twice by name
        Req.DeleteTopicState(name="b", topic_id=ZERO_UUID),
        Req.DeleteTopicState(name="c", topic_id=ZERO_UUID),  # by name and by its id
        Req.DeleteTopicState(name=None, topic_id=c.topic_id),
    ])
    results = call(broker, KEY, 6, req).responses
    assert [r.error_code for r in results] == [ErrorCode.INVALID_REQUEST] * 5
    assert results[0].error_message == "You may not specify both topic name and topic id."
    assert results[1].error_message == "Neither topic name nor id were specified."
    assert results[2].error_message == "Duplicate topic name."
    for name in "abc":
        assert broker.cluster.get(name) is not None
    assert b.topic_id in broker.cluster.by_id


def test_mixed_request_keeps_order(broker: Broker) -> None:
    broker.cluster.create_topic("x", 1, {})
    y = broker.cluster.create_topic("y", 1, {})
    req = Req(topics=[Req.DeleteTopicState(name="x", topic_id=ZERO_UUID),
                      Req.DeleteTopicState(name="nope", topic_id=ZERO_UUID),
                      Req.DeleteTopicState(name=None, topic_id=y.topic_id)])
    results = call(broker, KEY, 6, req).responses
    assert [(r.name, r.error_code) for r in results] == [
        ("x", ErrorCode.NONE), ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), ("y", ErrorCode.NONE)]


@pytest.mark.parametrize(("version", "code"), [
    (1, ErrorCode.INVALID_REQUEST), (2, ErrorCode.INVALID_REQUEST),
    (3, ErrorCode.TOPIC_DELETION_DISABLED), (6, ErrorCode.TOPIC_DELETION_DISABLED)])
def test_deletion_disabled(tmp_path: Path, version: int, code: ErrorCode) -> None:
    b = open_broker(tmp_path, **{"delete.topic.enable": "false"})
    try:
        b.cluster.create_topic("stay", 1, {})
        [r] = by_names(b, version, "stay")
        assert (r.name, r.error_code) == ("stay", code)
        assert b.cluster.get("stay") is not None
    finally:
        b.close()


def test_recreate_after_delete_starts_empty(broker: Broker) -> None:
    from admin_testutil import produce

    broker.cluster.create_topic("again", 1, {})
    produce(broker, "again", 0, [1, 2, 3])
    by_names(broker, 6, "again")
    broker.cluster.create_topic("again", 1, {})
    assert broker.partitions.log("again", 0).log_end_offset == 0  # type: ignore[union-attr]
