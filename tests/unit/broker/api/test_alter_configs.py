from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.broker.storage.log import MessageTooLargeError
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.alter_configs import AlterConfigsRequest
from odradek.wire.records import build_batch

Req = AlterConfigsRequest
KEY = ApiKey.ALTER_CONFIGS
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path)
    b.cluster.create_topic("t", 2, {"retention.ms": "1000", "segment.ms": "5000"})
    yield b
    b.close()


def resource(kind: int, name: str, configs: dict[str, str | None]) -> Req.AlterConfigsResource:
    return Req.AlterConfigsResource(resource_type=kind, resource_name=name, configs=[
        Req.AlterableConfig(name=k, value=v) for k, v in configs.items()])


def alter(broker: Broker, version: int, *resources: Req.AlterConfigsResource,
          validate_only: bool = False):  # type: ignore[no-untyped-def]
    req = Req(resources=list(resources), validate_only=validate_only)
    return call(broker, KEY, version, req).responses


@pytest.mark.parametrize("version", range(3))
def test_replaces_whole_override_set_and_takes_effect(broker: Broker, version: int) -> None:
    [r] = alter(broker, version, resource(TOPIC, "t", {"max.message.bytes": "200"}))
    assert (r.error_code, r.error_message, r.resource_type, r.resource_name) == (
        ErrorCode.NONE, None, TOPIC, "t")
    assert broker.cluster.get("t").configs == {"max.message.bytes": "200"}  # type: ignore[union-attr]
    for p in range(2):
        config = broker.partitions.log("t", p).config  # type: ignore[union-attr]
        assert config.max_message_bytes == 200
        assert config.retention_ms == 7 * 24 * 3_600_000  # the removed override is gone
    big = bytearray(build_batch([(b"k", b"x" * 300)], base_timestamp=1))
    with pytest.raises(MessageTooLargeError):
        broker.partitions.log("t", 0).append(  # type: ignore[union-attr]
            memoryview(big), leader_epoch=0, now_ms=1)


def test_validate_only_changes_nothing(broker: Broker) -> None:
    [r] = alter(broker, 1, resource(TOPIC, "t", {"retention.ms": "5"}), validate_only=True)
    assert r.error_code == ErrorCode.NONE
    assert broker.cluster.get("t").configs == {"retention.ms": "1000", "segment.ms": "5000"}  # type: ignore[union-attr]
    [bad] = alter(broker, 1, resource(TOPIC, "t", {"retention.ms": "x"}), validate_only=True)
    assert bad.error_code == ErrorCode.INVALID_CONFIG


def test_topic_errors(broker: Broker) -> None:
    results = alter(
        broker, 2,
        resource(TOPIC, "missing", {"retention.ms": "5"}),
        resource(TOPIC, "bad name!", {}),
        resource(TOPIC, "t", {"retention.ms": "-5"}),
    )
    assert [r.error_code for r in results] == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_TOPIC_EXCEPTION,
        ErrorCode.INVALID_CONFIG]
    [unknown] = alter(broker, 2, resource(TOPIC, "t", {"no.such": "1"}))
    assert unknown.error_code == ErrorCode.INVALID_CONFIG
    [null] = alter(broker, 2, resource(TOPIC, "t", {"retention.ms": None}))
    assert null.error_code == ErrorCode.INVALID_REQUEST
    assert broker.cluster.get("t").configs == {"retention.ms": "1000", "segment.ms": "5000"}  # type: ignore[union-attr]


def test_duplicates(broker: Broker) -> None:
    dup = Req.AlterConfigsResource(resource_type=TOPIC, resource_name="t", configs=[
        Req.AlterableConfig(name="retention.ms", value="1"),
        Req.AlterableConfig(name="retention.ms", value="2")])
    [keys] = alter(broker, 2, dup)
    assert (keys.error_code, keys.error_message) == (
        ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    twice = alter(broker, 2, resource(TOPIC, "t", {}), resource(TOPIC, "t", {}))
    assert [r.error_code for r in twice] == [ErrorCode.INVALID_REQUEST] * 2
    assert broker.cluster.get("t").configs == {"retention.ms": "1000", "segment.ms": "5000"}  # type: ignore[union-attr]


def test_broker_resource(broker: Broker) -> None:
    node = str(broker.node_id)
    cases = [
        (resource(BROKER, node, {}), ErrorCode.NONE),
        (resource(BROKER, "", {"num.partitions": "3"}), ErrorCode.INVALID_REQUEST),
        (resource(BROKER, node, {"log.retention.ms": "100"}), ErrorCode.NONE),  # dynamic
        (resource(BROKER, node, {"log.segment.bytes": "5"}), ErrorCode.INVALID_REQUEST),
        (resource(BROKER, "42", {}), ErrorCode.INVALID_REQUEST),
        (resource(BROKER_LOGGER, node, {}), ErrorCode.INVALID_REQUEST),
    ]
    for res, code in cases:
        [r] = alter(broker, 2, res)
        assert r.error_code == code, (res.resource_name, r.error_message)
        if res.configs and res.configs[0].name == "num.partitions":
            assert r.error_message == "Cannot update these configs dynamically: [num.partitions]"
    assert broker.config.get_int("num.partitions") == 1
