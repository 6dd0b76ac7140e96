"""GROUP config resources through confluent-kafka's AdminClient: what a Kafka 4.4 broker
answers (run the same file with `ODRADEK_IT_SERVER_CMD="python -m
compat_tests.kafka_it_server"` to check it there), and that they survive kill -9."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from it_support import StartBroker, admin, topic_name

SETTINGS = {"group.share.record.lock.duration.ms": "20000"}


def alter(bootstrap: str, group: str, name: str, value: str | None,
          op: AlterConfigOpType = AlterConfigOpType.SET) -> KafkaError | None:
    client = admin(bootstrap)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op)])
    try:
        client.incremental_alter_configs([resource])[resource].result(15)
    except KafkaException as e:
        error: KafkaError = e.args[0]
        return error
    return None


def describe(bootstrap: str, group: str) -> dict[str, tuple[str | None, int]]:
    client = admin(bootstrap)
    resource = ConfigResource(ResourceType.GROUP, group)
    entries = client.describe_configs([resource])[resource].result(15)
    return {k: (v.value, int(v.source)) for k, v in entries.items()}


def test_group_configs_as_kafka_answers(start_broker: StartBroker, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", SETTINGS)
    bs = broker.bootstrap
    group = topic_name("g")
    rows = describe(bs, group)  # a group no one created yet
    assert len(rows) == 21
    assert rows["share.auto.offset.reset"] == ("latest", 5)
    assert rows["share.record.lock.duration.ms"] == ("20000", 4)
    assert alter(bs, group, "share.auto.offset.reset", "earliest") is None
    assert alter(bs, group, "consumer.session.timeout.ms", "50000") is None
    rows = describe(bs, group)
    assert rows["share.auto.offset.reset"] == ("earliest", 8)
    assert rows["consumer.session.timeout.ms"] == ("50000", 8)
    refused = {
        ("no.such", "1"): "Unknown group config name: no.such",
        ("share.record.lock.duration.ms", "10000"):
            "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.",
        ("streams.num.standby.replicas", "3"):
            "streams.num.standby.replicas must be less than or equal to 2",
        ("share.isolation.level", "dirty"):
            "Invalid value dirty for configuration share.isolation.level: String must be one "
            "of: read_committed, read_uncommitted",
    }
    for (name, value), message in refused.items():
        error = alter(bs, group, name, value)
        assert error is not None and error.code() == KafkaError.INVALID_CONFIG, (name, error)
        assert error.str() == message
    error = alter(bs, group, "streams.rack.aware.assignment.tags", "a", AlterConfigOpType.APPEND)
    assert error is not None and error.str() == (
        "Can't APPEND to key streams.rack.aware.assignment.tags because its type is not LIST.")
    assert alter(bs, group, "consumer.session.timeout.ms", None, AlterConfigOpType.DELETE) is None
    assert describe(bs, group)["consumer.session.timeout.ms"] == ("45000", 5)

    broker.restart(hard=True)  # kill -9
    assert describe(broker.bootstrap, group)["share.auto.offset.reset"] == ("earliest", 8)
