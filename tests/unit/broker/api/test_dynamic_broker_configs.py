"""Dynamic broker configs (issue #18, point 4): AlterConfigs and IncrementalAlterConfigs on
BROKER resources, as Kafka: "" for the cluster-wide defaults, the node id for this broker;
DescribeConfigs sources and synonyms; stored across restarts; in effect without a restart."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.config import BrokerConfig, ConfigSource
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.describe_configs import DescribeConfigsRequest
from odradek.wire._generated.incremental_alter_configs import IncrementalAlterConfigsRequest
from odradek.wire.records import build_batch

BROKER = 4
SET, DELETE, APPEND = 0, 1, 2
Res = IncrementalAlterConfigsRequest.AlterConfigsResource
Op = IncrementalAlterConfigsRequest.AlterableConfig


def alter(broker: Broker, name: str, *ops: tuple[str, int, str | None],
          validate_only: bool = False) -> tuple[int, str | None]:
    req = IncrementalAlterConfigsRequest(resources=[Res(
        resource_type=BROKER, resource_name=name,
        configs=[Op(name=k, config_operation=o, value=v) for k, o, v in ops])],
        validate_only=validate_only)
    [r] = call(broker, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, req).responses
    return r.error_code, r.error_message


def describe(broker: Broker, name: str) -> DescribeConfigsRequest:
    req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=BROKER, resource_name="1", configuration_keys=[name])],
        include_synonyms=True)
    [result] = call(broker, ApiKey.DESCRIBE_CONFIGS, 4, req).results
    [row] = result.configs
    return row  # type: ignore[no-any-return]


def test_a_new_cluster_has_kafkas_formatted_min_insync_replicas(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    row = describe(broker, "min.insync.replicas")
    assert (row.value, row.config_source) == ("1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert [(s.name, s.value, s.source) for s in row.synonyms] == [
        ("min.insync.replicas", "1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("min.insync.replicas", "1", ConfigSource.DEFAULT_CONFIG)]
    broker.close()


def test_cluster_default_and_per_broker_take_effect_at_once_and_survive_a_restart(
        tmp_path: Path) -> None:
    broker = open_broker(tmp_path, **{"log.retention.ms": "1000000"})
    broker.cluster.create_topic("t", 1, {})
    assert alter(broker, "", ("log.retention.ms", SET, "2000000")) == (ErrorCode.NONE, None)
    assert broker.partitions.log("t", 0).config.retention_ms == 2000000  # type: ignore[union-attr]
    assert alter(broker, "1", ("log.retention.ms", SET, "3000000")) == (ErrorCode.NONE, None)
    assert broker.partitions.log("t", 0).config.retention_ms == 3000000  # type: ignore[union-attr]
    row = describe(broker, "log.retention.ms")
    assert (row.value, row.config_source, row.read_only) == (
        "3000000", ConfigSource.DYNAMIC_BROKER_CONFIG, False)
    assert [(s.value, s.source) for s in row.synonyms] == [
        ("3000000", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("2000000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("1000000", ConfigSource.STATIC_BROKER_CONFIG)]
    broker.close()

    again = Broker(BrokerConfig({"log.dirs": str(tmp_path / "data"),
                                 "log.retention.ms": "1000000"}))
    assert again.config.get_int("log.retention.ms") == 3000000
    assert again.partitions.log("t", 0).config.retention_ms == 3000000  # type: ignore[union-attr]
    assert alter(again, "1", ("log.retention.ms", DELETE, None)) == (ErrorCode.NONE, None)
    assert again.partitions.log("t", 0).config.retention_ms == 2000000  # type: ignore[union-attr]
    again.close()


def test_the_topic_describes_the_dynamic_synonym(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    assert alter(broker, "", ("log.segment.bytes", SET, "2097152")) == (ErrorCode.NONE, None)
    req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=2, resource_name="t", configuration_keys=["segment.bytes"])],
        include_synonyms=True)
    [row] = call(broker, ApiKey.DESCRIBE_CONFIGS, 4, req).results[0].configs
    assert (row.value, row.config_source) == ("2097152", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert [(s.name, s.value, s.source) for s in row.synonyms] == [
        ("log.segment.bytes", "2097152", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG)]
    assert broker.partitions.log("t", 0).config.segment_bytes == 2097152  # type: ignore[union-attr]
    broker.close()


def test_bad_dynamic_changes_are_refused_whole(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    cases = [
        ((("num.partitions", SET, "3"),), ErrorCode.INVALID_REQUEST,
         "Cannot update these configs dynamically: [num.partitions]"),
        ((("log.segment.bytes", SET, "1048575"),), ErrorCode.INVALID_REQUEST,  # as Kafka 4.4
         "Invalid value 1048575 for configuration log.segment.bytes: "
         "Value must be at least 1048576"),
        ((("log.retention.ms", SET, "5"), ("log.local.retention.ms", SET, "5")),
         ErrorCode.INVALID_CONFIG, "not supported by Odradek yet"),
        ((("listeners", SET, "PLAINTEXT://127.0.0.1:9999"),), ErrorCode.INVALID_CONFIG,
         "cannot change it while it runs yet"),
        ((("no.such.setting", SET, "5"),), ErrorCode.INVALID_CONFIG,
         "Unknown broker config name: no.such.setting"),
    ]
    for ops, code, message in cases:
        got_code, got_message = alter(broker, "1", *ops)
        assert got_code == code and message in (got_message or ""), ops
    assert broker.config.dynamic("broker") == {}  # nothing half applied
    assert alter(broker, "1", ("log.retention.ms", SET, "5"), validate_only=True)[0] == 0
    assert broker.config.dynamic("broker") == {}
    assert alter(broker, "1", ("num.io.threads", SET, "4")) == (ErrorCode.NONE, None)  # no effect
    assert alter(broker, "1", ("log.cleanup.policy", APPEND, "compact")) == (ErrorCode.NONE, None)
    assert broker.config.dynamic("broker") == {"num.io.threads": "4",
                                               "log.cleanup.policy": "delete,compact"}
    broker.close()


def test_connection_limits_and_producer_expiry_apply_at_once(tmp_path: Path) -> None:
    """max.connections and max.connections.per.ip are read at every accept, and
    producer.id.expiration.ms at every expiry pass: changed dynamically (cluster-wide or for
    this broker), they apply without a restart, as on Kafka."""
    broker = open_broker(tmp_path)
    assert alter(broker, "", ("max.connections", SET, "5"),
                 ("producer.id.expiration.ms", SET, "1000")) == (ErrorCode.NONE, None)
    assert alter(broker, "1", ("max.connections.per.ip", SET, "2")) == (ErrorCode.NONE, None)
    assert broker.config.get_int("max.connections") == 5
    assert broker.config.get_int("max.connections.per.ip") == 2
    broker.cluster.create_topic("t", 1, {})
    plog = broker.partitions.log("t", 0)
    assert plog is not None
    plog.append(memoryview(bytearray(build_batch([(b"k", b"v")], producer_id=3,
                                                 producer_epoch=0, base_sequence=0,
                                                 base_timestamp=0))),
                leader_epoch=0, now_ms=0)
    assert broker.expire_producers(999) == 0
    assert broker.expire_producers(1001) == 1  # the default would keep it a day
    broker.close()


def test_cleaner_settings_apply_from_the_next_pass(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The log.cleaner.* settings changed while the cleaner runs are used from its next pass
    (Kafka's LogCleaner.reconfigure), the backoff from its next wait."""
    broker = open_broker(tmp_path)
    waits: list[float] = []

    class Stop(Exception):
        pass

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 1:
            # what IncrementalAlterConfigs on the cluster default does (checked first)
            broker.config.set_dynamic("default", {"log.cleaner.backoff.ms": "2500",
                                                  "log.cleaner.io.max.bytes.per.second": "1000",
                                                  "log.cleaner.dedupe.buffer.size": "2097152"})
            return
        raise Stop

    monkeypatch.setattr(anyio, "sleep", sleep)
    with pytest.raises(Stop):
        anyio.run(broker._cleaner_loop)
    monkeypatch.undo()
    assert waits == [15.0, 2.5]
    assert broker.cleaner is not None
    assert broker.cleaner.max_io_bytes_per_second == 1000
    assert broker.cleaner.cleaner.map_budget == int(2097152 * 0.9)
    broker.close()


def test_listener_settings_are_per_broker_only(tmp_path: Path) -> None:
    """Kafka lets the listener settings change for one broker only (DynamicBrokerConfig's
    per-broker configs); for this broker Odradek cannot apply them while it runs yet."""
    broker = open_broker(tmp_path)
    for name, value in (("listeners", "PLAINTEXT://127.0.0.1:9999"),
                        ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,X:PLAINTEXT")):
        assert alter(broker, "", (name, SET, value)) == (
            ErrorCode.INVALID_REQUEST,
            "Cannot update these configs at default cluster level, broker id must be "
            f"specified: [{name}]")
        code, message = alter(broker, "1", (name, SET, value))
        assert code == ErrorCode.INVALID_CONFIG and "cannot change it while it runs yet" in (
            message or "")
    assert alter(broker, "", ("max.connections", SET, "7")) == (ErrorCode.NONE, None)  # cluster-level
    assert broker.config.dynamic("default") == {"min.insync.replicas": "1", "max.connections": "7"}
    broker.close()
