"""Fault injection (issue #16): the sans-IO rules engine, and dispatch applying a rule.

The dispatch tests send real encoded requests through `dispatch`, so the error lands where a
client reads it (Produce's partition error, Metadata's topic error, a top-level error_code).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from admin_testutil import open_broker

from odradek.broker.broker import Broker
from odradek.broker.connection import CloseConnection, IncomingRequest
from odradek.broker.context import ClientInfo
from odradek.broker.dispatch import dispatch
from odradek.broker.fault_inject import can_error
from odradek.broker.fault_rules import Action, FaultRules, FaultSpecError, parse_api, parse_error
from odradek.wire import ApiKey, ErrorCode
from odradek.wire.headers import response_header_version
from odradek.wire.registry import api_classes

NO_TARGETS: Any = lambda: ()  # noqa: E731


def test_names_and_numbers_of_apis_and_errors() -> None:
    assert parse_api("Produce") == parse_api("produce") == parse_api(0) == ApiKey.PRODUCE
    assert parse_api("FindCoordinator") == parse_api("find_coordinator") == 10
    assert parse_error("NOT_LEADER_OR_FOLLOWER") == parse_error("6") == 6
    for bad in ("Prodce", 9999, "", None):
        with pytest.raises(FaultSpecError, match="unknown api"):
            parse_api(bad)
    for bad_error in ("NOT_A_THING", 12345):
        with pytest.raises(FaultSpecError, match="unknown error"):
            parse_error(bad_error)


@pytest.mark.parametrize("spec, message", [
    ({"error": "NOT_LEADER_OR_FOLLOWER"}, "needs an api"),
    ({"api": "Produce"}, "unknown action"),
    ({"api": "Produce", "action": "error"}, "needs an error"),
    ({"api": "Produce", "error": "NONE"}, "NONE is not an error"),
    ({"api": "Produce", "action": "delay"}, "needs delay_ms"),
    ({"api": "Produce", "error": 6, "count": 0}, "count must be"),
    ({"api": "Produce", "error": 6, "probability": 0}, "probability must be in"),
    ({"api": "Produce", "error": 6, "colour": "red"}, "unknown rule field"),
])
def test_bad_rules_are_one_clear_line(spec: dict[str, object], message: str) -> None:
    with pytest.raises(FaultSpecError, match=message):
        FaultRules().add(spec)


def test_the_next_n_requests_then_the_rule_is_gone() -> None:
    rules = FaultRules()
    assert not rules.active
    rule = rules.add({"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 2})
    assert rules.active and rule.action is Action.ERROR
    assert rules.match(ApiKey.FETCH, None, NO_TARGETS) is None  # another api
    assert rules.match(ApiKey.PRODUCE, None, NO_TARGETS) is rule
    assert rules.match(ApiKey.PRODUCE, None, NO_TARGETS) is rule
    assert rules.match(ApiKey.PRODUCE, None, NO_TARGETS) is None
    assert not rules.active  # the dispatcher's check is off again
    assert rule.injected == 2 and rules.injected == 2
    assert rules.describe()[0]["exhausted"] is True


def test_topic_partition_and_client_filters() -> None:
    rules = FaultRules()
    rules.add({"api": "Produce", "error": 6, "topic": "a", "partition": 1, "client_id": "me"})
    assert rules.match(0, "me", lambda: [("a", 0), ("b", 1)]) is None
    assert rules.match(0, "you", lambda: [("a", 1)]) is None
    assert rules.match(0, "me", lambda: [("b", 0), ("a", 1)]) is not None


def test_a_seeded_fraction_is_repeatable() -> None:
    def run() -> list[bool]:
        rules = FaultRules()
        rules.add({"api": "Fetch", "action": "drop", "probability": 0.3, "seed": 42})
        return [rules.match(1, None, NO_TARGETS) is not None for _ in range(1000)]

    first = run()
    assert first == run()
    assert 250 < sum(first) < 350


def test_rules_are_removed_and_cleared() -> None:
    rules = FaultRules()
    a = rules.add({"api": "Produce", "action": "close"})
    rules.add({"api": "Fetch", "action": "delay", "delay_ms": 10})
    assert rules.remove(a.rule_id) and not rules.remove(a.rule_id)
    assert rules.match(0, None, NO_TARGETS) is None and rules.active
    assert rules.clear() == 1 and not rules.active and rules.describe() == []


def test_apis_without_an_error_field_take_only_other_actions() -> None:
    assert can_error(ApiKey.PRODUCE) and can_error(ApiKey.FIND_COORDINATOR)
    assert not can_error(ApiKey.ALTER_CLIENT_QUOTAS + 1000)  # no such api
    rules = FaultRules(can_error)
    # The engine asks the check it was given: with none allowed, only other actions pass.
    assert FaultRules(lambda key: False).add({"api": "Produce", "action": "drop"})
    with pytest.raises(FaultSpecError, match="errors cannot be injected into Produce yet"):
        FaultRules(lambda key: False).add({"api": "Produce", "error": 6})
    with pytest.raises(FaultSpecError, match="into CreateTopics"):
        rules.add({"api": "CreateTopics", "error": "INVALID_TOPIC_EXCEPTION"})
    assert rules.add({"api": "FindCoordinator", "error": "COORDINATOR_NOT_AVAILABLE"})


# -- through dispatch ----------------------------------------------------------------------------


def _send(broker: Broker, api_key: int, version: int, request: Any) -> Any:
    frame = b"".join(bytes(p) for p in request.encode(version))
    incoming = IncomingRequest(api_key, version, 7, "test-client", bytearray(frame), 0)

    async def run() -> Any:
        return await dispatch(broker.context(ClientInfo("127.0.0.1:1", "PLAINTEXT"), incoming),
                              incoming)

    out = anyio.run(run)
    if out is None:
        return None
    data = b"".join(bytes(p) for p in out)[4:]  # size prefix
    _, response_cls = api_classes(api_key)
    header_len = 4 if response_header_version(api_key, version) == 0 else 5
    return response_cls.decode(data, version, header_len)[0]


def _produce(topic: str) -> Any:
    request_cls, _ = api_classes(ApiKey.PRODUCE)
    return request_cls(acks=-1, timeout_ms=1000, topic_data=[request_cls.TopicProduceData(
        name=topic, partition_data=[request_cls.PartitionProduceData(index=0, records=b"")])])


def test_a_produce_error_is_each_partition_s_and_nothing_is_written(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.faults.add({"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 1})
    resp = _send(broker, ApiKey.PRODUCE, 9, _produce("never-created"))
    [topic] = resp.responses
    assert topic.name == "never-created"
    assert [p.error_code for p in topic.partition_responses] == [
        ErrorCode.NOT_LEADER_OR_FOLLOWER]
    assert broker.cluster.get("never-created") is None  # the handler did not run
    assert not broker.faults.active


def test_metadata_topics_and_top_level_errors(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    request_cls, _ = api_classes(ApiKey.METADATA)
    broker.faults.add({"api": "Metadata", "error": "UNKNOWN_TOPIC_OR_PARTITION", "count": 1})
    resp = _send(broker, ApiKey.METADATA, 12, request_cls(
        topics=[request_cls.MetadataRequestTopic(name="x")]))
    assert [(t.name, t.error_code) for t in resp.topics] == [
        ("x", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    fc_cls, _ = api_classes(ApiKey.FIND_COORDINATOR)
    broker.faults.add({"api": "FindCoordinator", "error": "COORDINATOR_NOT_AVAILABLE"})
    resp = _send(broker, ApiKey.FIND_COORDINATOR, 2, fc_cls(key="g"))
    assert resp.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_batched_apis_get_the_error_per_key_or_group(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    fc_cls, _ = api_classes(ApiKey.FIND_COORDINATOR)
    broker.faults.add({"api": "FindCoordinator", "error": "COORDINATOR_NOT_AVAILABLE"})
    resp = _send(broker, ApiKey.FIND_COORDINATOR, 4, fc_cls(coordinator_keys=["a", "b"]))
    assert [(c.key, c.error_code) for c in resp.coordinators] == [
        ("a", ErrorCode.COORDINATOR_NOT_AVAILABLE), ("b", ErrorCode.COORDINATOR_NOT_AVAILABLE)]
    of_cls, _ = api_classes(ApiKey.OFFSET_FETCH)
    broker.faults.add({"api": "OffsetFetch", "error": "COORDINATOR_LOAD_IN_PROGRESS"})
    resp = _send(broker, ApiKey.OFFSET_FETCH, 8, of_cls(groups=[
        of_cls.OffsetFetchRequestGroup(group_id="g")]))
    assert [(g.group_id, g.error_code) for g in resp.groups] == [
        ("g", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)]
    resp = _send(broker, ApiKey.OFFSET_FETCH, 1, of_cls(group_id="g", topics=[
        of_cls.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])]))
    assert [p.error_code for t in resp.topics for p in t.partitions] == [
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS] * 2
    dg_cls, _ = api_classes(ApiKey.DESCRIBE_GROUPS)
    broker.faults.add({"api": "DescribeGroups", "error": "NOT_COORDINATOR"})
    resp = _send(broker, ApiKey.DESCRIBE_GROUPS, 5, dg_cls(groups=["g"]))
    assert [(g.group_id, g.error_code) for g in resp.groups] == [("g", ErrorCode.NOT_COORDINATOR)]


def test_drop_close_and_delay(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    fc_cls, _ = api_classes(ApiKey.FIND_COORDINATOR)
    broker.faults.add({"api": "FindCoordinator", "action": "drop", "count": 1})
    assert _send(broker, ApiKey.FIND_COORDINATOR, 2, fc_cls(key="g")) is None
    broker.faults.add({"api": "FindCoordinator", "action": "close", "count": 1})
    with pytest.raises(CloseConnection, match="fault rule"):
        _send(broker, ApiKey.FIND_COORDINATOR, 2, fc_cls(key="g"))
    broker.faults.add({"api": "FindCoordinator", "action": "delay", "delay_ms": 200,
                       "count": 1})
    started = time.monotonic()
    resp = _send(broker, ApiKey.FIND_COORDINATOR, 2, fc_cls(key="g"))
    assert time.monotonic() - started >= 0.2
    assert resp.error_code == ErrorCode.NONE  # delayed, then handled
    started = time.monotonic()
    _send(broker, ApiKey.FIND_COORDINATOR, 2, fc_cls(key="g"))
    assert time.monotonic() - started < 0.2  # the rule was for one request
