from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.incremental_alter_configs import IncrementalAlterConfigsRequest

Req = IncrementalAlterConfigsRequest
KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path)
    b.cluster.create_topic("t", 2, {"retention.ms": "1000"})
    yield b
    b.close()


def resource(kind: int, name: str, *ops: tuple[str, int, str | None]) -> Req.AlterConfigsResource:
    return Req.AlterConfigsResource(resource_type=kind, resource_name=name, configs=[
        Req.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])


def alter(broker: Broker, version: int, *resources: Req.AlterConfigsResource,
          validate_only: bool = False):  # type: ignore[no-untyped-def]
    req = Req(resources=list(resources), validate_only=validate_only)
    return call(broker, KEY, version, req).responses


def overrides(broker: Broker) -> dict[str, str]:
    return broker.cluster.get("t").configs  # type: ignore[union-attr]


@pytest.mark.parametrize("version", [0, 1])
def test_set_and_delete_take_effect(broker: Broker, version: int) -> None:
    [r] = alter(broker, version, resource(
        TOPIC, "t", ("segment.bytes", SET, "2097152"), ("max.message.bytes", SET, "5000"),
        ("retention.ms", DELETE, None)))
    assert (r.error_code, r.error_message, r.resource_name) == (ErrorCode.NONE, None, "t")
    assert overrides(broker) == {"segment.bytes": "2097152", "max.message.bytes": "5000"}
    for p in range(2):
        config = broker.partitions.log("t", p).config  # type: ignore[union-attr]
        assert (config.segment_bytes, config.max_message_bytes) == (2097152, 5000)
        assert config.retention_ms == 7 * 24 * 3_600_000


def test_segment_bytes_floor_is_kafka_4s(broker: Broker) -> None:
    [r] = alter(broker, 1, resource(TOPIC, "t", ("segment.bytes", SET, "1048575")))
    assert (r.error_code, r.error_message) == (
        ErrorCode.INVALID_CONFIG,
        "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576")
    assert "segment.bytes" not in overrides(broker)


def test_unsupported_config_is_refused_naming_it(broker: Broker) -> None:
    before = dict(overrides(broker))
    [r] = alter(broker, 1, resource(TOPIC, "t", ("remote.storage.enable", SET, "true"),
                                    ("retention.ms", SET, "5000")))
    assert r.error_code == ErrorCode.INVALID_CONFIG
    assert "remote.storage.enable: not supported by Odradek yet" in (r.error_message or "")
    assert overrides(broker) == before  # nothing half applied


def test_delete_of_absent_override_is_fine(broker: Broker) -> None:
    [r] = alter(broker, 1, resource(TOPIC, "t", ("segment.ms", DELETE, None)))
    assert r.error_code == ErrorCode.NONE
    assert overrides(broker) == {"retention.ms": "1000"}


def test_append_and_subtract_lists(broker: Broker) -> None:
    [r] = alter(broker, 1, resource(TOPIC, "t", ("cleanup.policy", APPEND, "compact")))
    assert r.error_code == ErrorCode.NONE
    assert overrides(broker)["cleanup.policy"] == "delete,compact"  # from the default "delete"
    alter(broker, 1, resource(TOPIC, "t", ("cleanup.policy", APPEND, "compact")))
    assert overrides(broker)["cleanup.policy"] == "delete,compact"  # no duplicates
    alter(broker, 1, resource(TOPIC, "t", ("cleanup.policy", SUBTRACT, "delete")))
    assert overrides(broker)["cleanup.policy"] == "compact"
    assert broker.partitions.log("t", 0).config.cleanup_policy == ("compact",)  # type: ignore[union-attr]
    [bad] = alter(broker, 1, resource(TOPIC, "t", ("retention.ms", APPEND, "5")))
    assert bad.error_code == ErrorCode.INVALID_CONFIG
    assert bad.error_message == "Can't APPEND to key retention.ms because its type is not LIST."


def test_validate_only(broker: Broker) -> None:
    [r] = alter(broker, 1, resource(TOPIC, "t", ("retention.ms", SET, "5")), validate_only=True)
    assert r.error_code == ErrorCode.NONE
    assert overrides(broker) == {"retention.ms": "1000"}
    assert broker.partitions.log("t", 0).config.retention_ms == 1000  # type: ignore[union-attr]


def test_errors(broker: Broker) -> None:
    results = alter(
        broker, 1,
        resource(TOPIC, "missing", ("retention.ms", SET, "5")),
        resource(TOPIC, "t", ("retention.ms", SET, "soon")),
        resource(TOPIC, "t2", ("no.such", SET, "1")),
    )
    assert [r.error_code for r in results] == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_CONFIG, ErrorCode.INVALID_CONFIG]
    cases = [
        resource(TOPIC, "t", ("retention.ms", SET, None)),
        resource(TOPIC, "t", ("retention.ms", 9, "1")),
        resource(TOPIC, "t", ("retention.ms", SET, "1"), ("retention.ms", DELETE, None)),
    ]
    for res in cases:
        [r] = alter(broker, 1, res)
        assert r.error_code == ErrorCode.INVALID_REQUEST, r.error_message
    twice = alter(broker, 1, resource(TOPIC, "t"), resource(TOPIC, "t"))
    assert [r.error_code for r in twice] == [ErrorCode.INVALID_REQUEST] * 2
    assert overrides(broker) == {"retention.ms": "1000"}


def test_a_failing_op_leaves_the_others_unapplied(broker: Broker) -> None:
    [r] = alter(broker, 1, resource(TOPIC, "t", ("segment.ms", SET, "100"),
                                    ("retention.ms", SET, "-7")))
    assert r.error_code == ErrorCode.INVALID_CONFIG
    assert overrides(broker) == {"retention.ms": "1000"}


def test_broker_and_logger_resources(broker: Broker) -> None:
    node = str(broker.node_id)
    cases = [
        (resource(BROKER, node, ("log.retention.ms", DELETE, None)), ErrorCode.NONE),
        (resource(BROKER, "", ("log.retention.ms", SET, "5")), ErrorCode.NONE),  # dynamic
        (resource(BROKER, "", ("log.segment.bytes", SET, "5")), ErrorCode.INVALID_REQUEST),
        (resource(BROKER, node, ("node.id", SET, "3")), ErrorCode.INVALID_REQUEST),
        (resource(BROKER, "7", ("log.retention.ms", DELETE, None)), ErrorCode.INVALID_REQUEST),
        (resource(BROKER_LOGGER, node, ("root", SET, "DEBUG")), ErrorCode.INVALID_REQUEST),
    ]
    for res, code in cases:
        [r] = alter(broker, 1, res)
        assert r.error_code == code, (res.resource_name, r.error_message)
        if res.configs[0].name == "node.id":
            assert r.error_message == "Cannot update these configs dynamically: [node.id]"
