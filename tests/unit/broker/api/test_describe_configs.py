from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.config import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigSource, ConfigType
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.describe_configs import DescribeConfigsRequest

# Kafka never describes its internal settings.
PUBLIC_TOPIC = {n for n, d in TOPIC_CONFIGS.items() if not d.internal}
PUBLIC_BROKER = {n for n, d in BROKER_CONFIGS.items() if not d.internal}

Req = DescribeConfigsRequest
KEY = ApiKey.DESCRIBE_CONFIGS
TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path, **{"log.retention.hours": "48", "num.partitions": "2"})
    b.cluster.create_topic("t", 1, {"retention.ms": "1000", "cleanup.policy": "compact,delete"})
    yield b
    b.close()


def describe(broker: Broker, version: int, *resources: tuple[int, str, list[str] | None],
             synonyms: bool = False, docs: bool = False):  # type: ignore[no-untyped-def]
    res = []
    for kind, name, keys in resources:
        r = Req.DescribeConfigsResource(resource_type=kind, resource_name=name)
        r.configuration_keys = keys
        res.append(r)
    req = Req(resources=res, include_synonyms=synonyms, include_documentation=docs)
    return call(broker, KEY, version, req).results


@pytest.mark.parametrize("version", range(5))
def test_topic_every_config(broker: Broker, version: int) -> None:
    [r] = describe(broker, version, (TOPIC, "t", None), synonyms=True, docs=True)
    assert (r.error_code, r.resource_type, r.resource_name) == (ErrorCode.NONE, TOPIC, "t")
    rows = {c.name: c for c in r.configs}
    assert set(rows) == PUBLIC_TOPIC
    retention, policy, segment = rows["retention.ms"], rows["cleanup.policy"], rows["segment.bytes"]
    assert (retention.value, policy.value, segment.value) == ("1000", "compact,delete", "1073741824")
    assert not any(c.read_only for c in r.configs)
    if version == 0:
        assert not retention.is_default and segment.is_default
    else:
        assert retention.config_source == ConfigSource.DYNAMIC_TOPIC_CONFIG
        assert segment.config_source == ConfigSource.DEFAULT_CONFIG
        # as Kafka 4.4, only the main broker synonym (log.retention.ms: unset, no default)
        assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
            ("retention.ms", "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ]
    if version >= 3:
        assert retention.config_type == ConfigType.LONG
        assert policy.config_type == ConfigType.LIST
        assert retention.documentation is None


def test_topic_broker_sourced_value(broker: Broker) -> None:
    broker.cluster.create_topic("plain", 1, {})
    [r] = describe(broker, 4, (TOPIC, "plain", ["retention.ms"]))
    [row] = r.configs
    assert (row.value, row.config_source) == (str(48 * 3_600_000), ConfigSource.STATIC_BROKER_CONFIG)
    assert row.synonyms == []  # not asked for


def test_configuration_keys_filter(broker: Broker) -> None:
    [some, all_, empty] = describe(broker, 2, (TOPIC, "t", ["segment.ms", "nope", "retention.ms"]),
                                   (TOPIC, "t", None), (TOPIC, "t", []))
    assert sorted(c.name for c in some.configs) == ["retention.ms", "segment.ms"]
    assert len(all_.configs) == len(empty.configs) == len(PUBLIC_TOPIC) == 37


def test_topic_errors(broker: Broker) -> None:
    missing, illegal = describe(broker, 4, (TOPIC, "missing", None), (TOPIC, "bad/name", None))
    assert (missing.error_code, missing.configs) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
    assert illegal.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert illegal.error_message


@pytest.mark.parametrize("version", [0, 1, 3, 4])
def test_broker_resource(broker: Broker, version: int) -> None:
    [r] = describe(broker, version, (BROKER, str(broker.node_id), None), synonyms=True)
    assert r.error_code == ErrorCode.NONE
    rows = {c.name: c for c in r.configs}
    assert set(rows) == PUBLIC_BROKER
    assert rows["num.partitions"].value == "2"
    assert rows["node.id"].read_only
    assert not rows["log.retention.ms"].read_only
    if version >= 1:
        assert rows["num.partitions"].config_source == ConfigSource.STATIC_BROKER_CONFIG
        assert rows["delete.topic.enable"].config_source == ConfigSource.DEFAULT_CONFIG
        assert [s.source for s in rows["num.partitions"].synonyms] == [
            ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG]
    else:
        assert not rows["num.partitions"].is_default
        assert rows["delete.topic.enable"].is_default
    if version >= 3:
        assert rows["num.partitions"].config_type == ConfigType.INT


def test_broker_resource_names(broker: Broker) -> None:
    default, other, junk = describe(broker, 4, (BROKER, "", None), (BROKER, "99", None),
                                    (BROKER, "x", None))
    assert (default.error_code, default.configs) == (ErrorCode.NONE, [])
    assert other.error_code == junk.error_code == ErrorCode.INVALID_REQUEST
    assert other.error_message == (
        f"Unexpected broker id, expected {broker.node_id} or empty string, but received 99")


def test_logger_and_unsupported_types(broker: Broker) -> None:
    ours, empty, other, group, unknown = describe(
        broker, 4, (BROKER_LOGGER, str(broker.node_id), None), (BROKER_LOGGER, "", None),
        (BROKER_LOGGER, "5", None), (GROUP, "g", None), (77, "x", None))
    assert (ours.error_code, ours.configs) == (ErrorCode.NONE, [])
    assert empty.error_code == other.error_code == ErrorCode.INVALID_REQUEST
    assert unknown.error_code == ErrorCode.INVALID_REQUEST
    assert group.error_code == ErrorCode.NONE  # group configs: test_group_configs.py
    assert len(group.configs) == 21
    assert (unknown.resource_type, unknown.resource_name) == (77, "x")


def test_results_follow_request_order(broker: Broker) -> None:
    results = describe(broker, 4, (BROKER, "1", ["num.partitions"]), (TOPIC, "missing", None),
                       (TOPIC, "t", ["retention.ms"]))
    assert [(r.resource_type, r.resource_name) for r in results] == [
        (BROKER, "1"), (TOPIC, "missing"), (TOPIC, "t")]


def test_settings_not_applied_say_so_in_their_documentation(broker: Broker) -> None:
    # Issues #10, #18: a setting without effect or not supported yet says so (v3+).
    [topic, node] = describe(broker, 3, (TOPIC, "t", ["preallocate", "segment.jitter.ms",
                                                      "compression.type"]),
                             (BROKER, "1", ["socket.send.buffer.bytes", "num.io.threads",
                                            "message.max.bytes"]), docs=True)
    docs = {c.name: c.documentation for c in topic.configs + node.configs}
    assert docs["preallocate"] is not None and "no effect" in docs["preallocate"]
    assert "Not supported by Odradek yet" in docs["socket.send.buffer.bytes"]
    assert "no effect" in docs["num.io.threads"]
    for applied in ("segment.jitter.ms", "compression.type", "message.max.bytes"):
        assert docs[applied] is None
    [again] = describe(broker, 3, (TOPIC, "t", ["preallocate"]), docs=False)
    assert again.configs[0].documentation is None  # only when asked, as Kafka
