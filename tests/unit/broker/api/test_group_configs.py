"""GROUP config resources through DescribeConfigs / IncrementalAlterConfigs / AlterConfigs,
their persistence, and what the coordinators read of them. The expected messages and rows
are Apache Kafka 4.4's (tests/integration/test_group_configs.py runs the same on Kafka)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.coordinator.share.offset_reset import EARLIEST, LATEST
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.alter_configs import AlterConfigsRequest
from odradek.wire._generated.describe_configs import DescribeConfigsRequest
from odradek.wire._generated.incremental_alter_configs import IncrementalAlterConfigsRequest

Inc = IncrementalAlterConfigsRequest
GROUP = 32
SET, DELETE, APPEND = 0, 1, 2


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path, **{"group.share.record.lock.duration.ms": "20000"})
    yield b
    b.close()


def alter(broker: Broker, group: str, *ops: tuple[str, int, str | None],
          validate_only: bool = False) -> tuple[int, str | None]:
    req = Inc(validate_only=validate_only, resources=[Inc.AlterConfigsResource(
        resource_type=GROUP, resource_name=group,
        configs=[Inc.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])])
    [r] = call(broker, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, req).responses
    return r.error_code, r.error_message


def describe(broker: Broker, group: str) -> dict[str, tuple[str | None, int, list[tuple[str, str | None, int]]]]:
    req = DescribeConfigsRequest(include_synonyms=True, resources=[
        DescribeConfigsRequest.DescribeConfigsResource(resource_type=GROUP, resource_name=group,
                                                       configuration_keys=None)])
    [r] = call(broker, ApiKey.DESCRIBE_CONFIGS, 4, req).results
    assert r.error_code == ErrorCode.NONE, r.error_message
    return {c.name: (c.value, c.config_source, [(s.name, s.value, s.source) for s in c.synonyms])
            for c in r.configs}


def test_a_group_that_does_not_exist_describes_its_defaults(broker: Broker) -> None:
    rows = describe(broker, "nobody")
    assert len(rows) == 21
    assert rows["share.auto.offset.reset"] == ("latest", 5, [("share.auto.offset.reset", "latest", 5)])
    # from the broker setting (source 4); the synonym shows the setting at its default
    assert rows["share.record.lock.duration.ms"] == (
        "20000", 4, [("group.share.record.lock.duration.ms", "30000", 5)])
    assert rows["streams.assignor.name"] == ("sticky", 5, [("group.streams.assignors", "sticky", 5)])


def test_set_describe_delete_and_restart(broker: Broker, tmp_path: Path) -> None:
    assert alter(broker, "g", ("share.auto.offset.reset", SET, "earliest"),
                 ("consumer.session.timeout.ms", SET, "50000")) == (ErrorCode.NONE, None)
    rows = describe(broker, "g")
    assert rows["share.auto.offset.reset"] == (
        "earliest", 8, [("share.auto.offset.reset", "earliest", 8),
                        ("share.auto.offset.reset", "latest", 5)])
    assert rows["consumer.session.timeout.ms"][:2] == ("50000", 8)
    assert broker.group_configs.offset_reset("g").strategy == EARLIEST
    assert broker.group_configs.offset_reset("other").strategy == LATEST
    assert alter(broker, "g", ("consumer.session.timeout.ms", DELETE, None)) == (ErrorCode.NONE, None)
    broker.close()
    again = open_broker(tmp_path, **{"group.share.record.lock.duration.ms": "20000"})
    try:
        rows = describe(again, "g")
        assert rows["share.auto.offset.reset"][:2] == ("earliest", 8)
        assert rows["consumer.session.timeout.ms"][:2] == ("45000", 5)
    finally:
        again.close()


@pytest.mark.parametrize(("ops", "message"), [
    ((("no.such", SET, "1"),), "Unknown group config name: no.such"),
    ((("share.auto.offset.reset", SET, "foo"),),
     "Invalid value foo for configuration share.auto.offset.reset: Invalid value `foo` for "
     "configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' "
     "or of the format 'by_duration:<PnDTnHnMn.nS.>'."),
    ((("share.record.lock.duration.ms", SET, "500"),),
     "Invalid value 500 for configuration share.record.lock.duration.ms: Value must be at least 1000"),
    ((("share.record.lock.duration.ms", SET, "10000"),),
     "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."),
    ((("consumer.heartbeat.interval.ms", SET, "50000"),),
     "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."),
    ((("streams.num.standby.replicas", SET, "3"),),
     "streams.num.standby.replicas must be less than or equal to 2"),
    ((("streams.task.offset.interval.ms", SET, "1000"),),
     "streams.task.offset.interval.ms must be greater than or equal to 15000"),
    ((("streams.assignor.name", SET, "foo"),),
     "streams.assignor.name 'foo' is not a registered task assignor. Registered assignors are: [sticky]."),
    ((("streams.rack.aware.assignment.tags", APPEND, "a"),),
     "Can't APPEND to key streams.rack.aware.assignment.tags because its type is not LIST."),
    ((("consumer.session.timeout.ms", SET, "abc"),),
     "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"),
])
def test_refused_as_kafka_refuses(broker: Broker, ops: tuple[tuple[str, int, str | None], ...],
                                  message: str) -> None:
    assert alter(broker, "g", *ops) == (ErrorCode.INVALID_CONFIG, message)
    assert broker.group_configs.overrides("g") == {}


def test_validate_only_changes_nothing(broker: Broker) -> None:
    assert alter(broker, "g", ("share.delivery.count.limit", SET, "3"),
                 validate_only=True) == (ErrorCode.NONE, None)
    assert describe(broker, "g")["share.delivery.count.limit"][:2] == ("5", 5)


def test_legacy_alter_configs_replaces_the_whole_set(broker: Broker) -> None:
    assert alter(broker, "g", ("share.delivery.count.limit", SET, "3")) == (ErrorCode.NONE, None)
    req = AlterConfigsRequest(resources=[AlterConfigsRequest.AlterConfigsResource(
        resource_type=GROUP, resource_name="g",
        configs=[AlterConfigsRequest.AlterableConfig(name="share.isolation.level",
                                                     value="read_committed")])])
    [r] = call(broker, ApiKey.ALTER_CONFIGS, 2, req).responses
    assert r.error_code == ErrorCode.NONE
    assert broker.group_configs.overrides("g") == {"share.isolation.level": "read_committed"}


def test_the_coordinators_read_the_group_values(broker: Broker) -> None:
    assert alter(broker, "g", ("share.record.lock.duration.ms", SET, "40000"),
                 ("share.delivery.count.limit", SET, "3"),
                 ("share.session.timeout.ms", SET, "50000"),
                 ("consumer.heartbeat.interval.ms", SET, "6000")) == (ErrorCode.NONE, None)
    partitions = broker.share.shard.partitions
    assert (partitions.config("g").record_lock_duration_ms,
            partitions.config("g").delivery_count_limit) == (40000, 3)
    assert partitions.config("other").record_lock_duration_ms == 20000
    groups = broker.groups.shard
    assert groups.share.config_for("g").session_timeout_ms == 50000
    assert groups.share.config_for("other").session_timeout_ms == 45000
    assert groups.consumer_config_for("g").heartbeat_interval_ms == 6000
    assert groups.consumer_config_for("other").heartbeat_interval_ms == 5000


def test_a_loaded_share_partition_takes_a_change_at_once(broker: Broker) -> None:
    import uuid

    from odradek.coordinator.share.state import SharePartitionKey

    partitions = broker.share.shard.partitions
    key = SharePartitionKey("g", uuid.uuid4(), 0)
    sp = partitions.load(key, None, broker.group_configs.offset_reset("g"), 0, 0,
                         lambda _ts: None, 0)
    assert (sp.config.record_lock_duration_ms, sp.config.renew_enabled) == (20000, True)
    assert alter(broker, "g", ("share.record.lock.duration.ms", SET, "45000"),
                 ("share.renew.acknowledge.enable", SET, "false")) == (ErrorCode.NONE, None)
    assert (sp.config.record_lock_duration_ms, sp.config.renew_enabled) == (45000, False)


@pytest.mark.parametrize("config", [
    n for n, d in __import__("odradek.config.group", fromlist=["GROUP_CONFIGS"]).GROUP_CONFIGS.items()
    if d.bounds != (None, None)])
def test_the_broker_settings_bound_group_configs(tmp_path: Path, config: str) -> None:
    """Moving a bound setting moves what an override may be (one side at a time)."""
    from odradek.config.group import GROUP_CONFIGS

    low_key, high_key = GROUP_CONFIGS[config].bounds
    for key in (k for k in (low_key, high_key) if k):
        base = open_broker(tmp_path / "base")
        default = base.config.get_int(key)
        base.close()
        moved = default + 1 if key == low_key else max(default - 1, 0)
        probe = str(moved - 1 if key == low_key else moved + 1)  # outside only when moved
        b = open_broker(tmp_path / key, **{key: str(moved)})
        try:
            error, message = alter(b, "g", (config, SET, probe))
            assert error == ErrorCode.INVALID_CONFIG, (key, probe)
            assert message is not None and config in message and str(moved) in message
        finally:
            b.close()
        b = open_broker(tmp_path / f"{key}-default")
        try:  # at the default bound the same value is allowed
            assert alter(b, "g", (config, SET, probe))[0] == ErrorCode.NONE, (key, probe)
        finally:
            b.close()
