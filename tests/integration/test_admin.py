"""Admin operations with stock clients: create/delete topics, create partitions,
describe/alter configs."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)
from it_support import (
    TIMEOUT,
    BrokerProcess,
    Rec,
    admin,
    confluent_consume_all,
    confluent_consumer,
    confluent_produce,
    create_topic,
    partition_count,
    topic_name,
    wait_until,
)

pytestmark = pytest.mark.timeout(120)


def error_code(future: Any) -> int:
    """The Kafka error code a failed admin future carries (fails if it succeeded)."""
    with pytest.raises(KafkaException) as info:
        future.result(TIMEOUT)
    code: int = info.value.args[0].code()
    return code


def test_create_and_delete_topics(broker: BrokerProcess) -> None:
    client = admin(broker.bootstrap)
    three, compacted = topic_name("three"), topic_name("compacted")
    futures = client.create_topics(
        [
            NewTopic(three, num_partitions=3, replication_factor=1),
            NewTopic(compacted, 1, 1, config={"cleanup.policy": "compact"}),
        ],
        operation_timeout=TIMEOUT,
    )
    for future in futures.values():
        assert future.result(TIMEOUT) is None
    wait_until(lambda: partition_count(client, three) == 3, what="3 partitions")
    wait_until(lambda: partition_count(client, compacted) == 1, what="compacted topic")
    md = client.list_topics(topic=three, timeout=TIMEOUT)
    for p in md.topics[three].partitions.values():
        assert p.leader == next(iter(md.brokers))
        assert p.replicas == [p.leader] and p.isrs == [p.leader]

    again = client.create_topics([NewTopic(three, 1, 1)])[three]
    assert error_code(again) == KafkaError.TOPIC_ALREADY_EXISTS

    confluent_produce(broker.bootstrap, three, [Rec(b"k", b"v%d" % i) for i in range(5)])
    assert client.delete_topics([three], operation_timeout=TIMEOUT)[three].result(TIMEOUT) is None
    wait_until(lambda: partition_count(client, three) is None, what="topic gone")

    missing = client.delete_topics([three], operation_timeout=TIMEOUT)[three]
    assert error_code(missing) == KafkaError.UNKNOWN_TOPIC_OR_PART

    # The name can be used again, and the new topic starts empty.
    create_topic(broker.bootstrap, three, partitions=1)
    assert confluent_consume_all(broker.bootstrap, three, 1) == []


@pytest.mark.parametrize(
    ("new_topic", "expected"),
    [
        (NewTopic("bad-config", 1, 1, config={"retention.ms": "soon"}), KafkaError.INVALID_CONFIG),
        (
            NewTopic("bad-enum", 1, 1, config={"cleanup.policy": "forever"}),
            KafkaError.INVALID_CONFIG,
        ),
        (NewTopic("too-many-replicas", 1, 3), KafkaError.INVALID_REPLICATION_FACTOR),
        (NewTopic("bad name!", 1, 1), KafkaError.TOPIC_EXCEPTION),
    ],
    ids=["bad-config", "bad-enum", "replication-factor", "bad-name"],
)
def test_create_topic_rejections(broker: BrokerProcess, new_topic: NewTopic, expected: int) -> None:
    client = admin(broker.bootstrap)
    future = client.create_topics([new_topic], operation_timeout=TIMEOUT)[new_topic.topic]
    assert error_code(future) == expected
    assert partition_count(client, new_topic.topic) is None


def test_create_topic_validate_only(broker: BrokerProcess) -> None:
    client = admin(broker.bootstrap)
    name = topic_name()
    future = client.create_topics([NewTopic(name, 2, 1)], validate_only=True)[name]
    assert future.result(TIMEOUT) is None
    assert partition_count(client, name) is None


def test_kafka_python_create_and_delete(broker: BrokerProcess) -> None:
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30_000)
    try:
        name = topic_name()
        client.create_topics({name: {"num_partitions": 2, "replication_factor": 1}})
        confluent_admin = admin(broker.bootstrap)
        wait_until(lambda: partition_count(confluent_admin, name) == 2, what="topic")
        assert name in client.list_topics()
        client.delete_topics([name])
        wait_until(lambda: partition_count(confluent_admin, name) is None, what="topic gone")
    finally:
        client.close()


def test_create_partitions(broker: BrokerProcess) -> None:
    client = admin(broker.bootstrap)
    name = topic_name()
    create_topic(broker.bootstrap, name, partitions=2)

    future = client.create_partitions([NewPartitions(name, 4)], operation_timeout=TIMEOUT)[name]
    assert future.result(TIMEOUT) is None
    wait_until(lambda: partition_count(client, name) == 4, what="4 partitions")
    (acked,) = confluent_produce(broker.bootstrap, name, [Rec(b"k", b"v", partition=3)])
    assert (acked.partition, acked.offset) == (3, 0)

    fewer = client.create_partitions([NewPartitions(name, 3)])[name]
    assert error_code(fewer) == KafkaError.INVALID_PARTITIONS
    same = client.create_partitions([NewPartitions(name, 4)])[name]
    assert error_code(same) == KafkaError.INVALID_PARTITIONS
    missing = client.create_partitions([NewPartitions(topic_name(), 4)])
    assert error_code(next(iter(missing.values()))) == KafkaError.UNKNOWN_TOPIC_OR_PART

    dry = client.create_partitions([NewPartitions(name, 6)], validate_only=True)[name]
    assert dry.result(TIMEOUT) is None
    assert partition_count(client, name) == 4


def describe_topic(client: Any, name: str) -> dict[str, ConfigEntry]:
    resource = ConfigResource(ResourceType.TOPIC, name)
    result: dict[str, ConfigEntry] = client.describe_configs([resource])[resource].result(TIMEOUT)
    return result


def test_describe_and_alter_topic_configs(broker: BrokerProcess) -> None:
    client = admin(broker.bootstrap)
    name = topic_name()
    create_topic(broker.bootstrap, name, partitions=1, config={"cleanup.policy": "compact"})

    configs = describe_topic(client, name)
    for key in ("retention.ms", "segment.bytes", "max.message.bytes", "min.insync.replicas"):
        assert key in configs
    retention = configs["retention.ms"]
    assert retention.value == "604800000"
    assert retention.is_default
    assert retention.source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["cleanup.policy"].value == "compact"
    assert configs["cleanup.policy"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert not configs["cleanup.policy"].is_default

    change = ConfigResource(
        ResourceType.TOPIC,
        name,
        incremental_configs=[
            ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    assert client.incremental_alter_configs([change])[change].result(TIMEOUT) is None

    def altered() -> ConfigEntry | None:
        entry = describe_topic(client, name)["retention.ms"]
        return entry if entry.value == "3600000" else None

    entry = wait_until(altered, what="retention.ms=3600000 in DescribeConfigs")
    assert entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value and not entry.is_default
    assert describe_topic(client, name)["cleanup.policy"].value == "compact"  # untouched

    reset = ConfigResource(
        ResourceType.TOPIC,
        name,
        incremental_configs=[
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)
        ],
    )
    assert client.incremental_alter_configs([reset])[reset].result(TIMEOUT) is None
    wait_until(
        lambda: describe_topic(client, name)["retention.ms"].value == "604800000",
        what="retention.ms back to its default",
    )


def test_alter_configs_rejections(broker: BrokerProcess) -> None:
    client = admin(broker.bootstrap)
    name = topic_name()
    create_topic(broker.bootstrap, name)

    bad = ConfigResource(
        ResourceType.TOPIC,
        name,
        incremental_configs=[
            ConfigEntry("retention.ms", "later", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    assert error_code(client.incremental_alter_configs([bad])[bad]) == KafkaError.INVALID_CONFIG
    assert describe_topic(client, name)["retention.ms"].value == "604800000"

    missing = ConfigResource(
        ResourceType.TOPIC,
        topic_name(),
        incremental_configs=[
            ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    code = error_code(client.incremental_alter_configs([missing])[missing])
    assert code == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_kafka_python_legacy_alter_configs(broker: BrokerProcess) -> None:
    from kafka.admin import ConfigResource as KConfigResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    name = topic_name()
    create_topic(broker.bootstrap, name, config={"cleanup.policy": "compact"})
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=30_000)
    try:
        # AlterConfigs (not incremental) replaces a topic's whole override set; kafka-python
        # first reads the other overrides and sends them along, so cleanup.policy stays.
        resource = KConfigResource(ConfigResourceType.TOPIC, name, {"retention.ms": "7200000"})
        client.alter_configs([resource], incremental=False)
    finally:
        client.close()
    confluent_admin = admin(broker.bootstrap)

    def applied() -> dict[str, ConfigEntry] | None:
        configs = describe_topic(confluent_admin, name)
        return configs if configs["retention.ms"].value == "7200000" else None

    configs = wait_until(applied, what="retention.ms=7200000")
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["cleanup.policy"].value == "compact"


def test_describe_broker_configs(broker: BrokerProcess) -> None:
    client = admin(broker.bootstrap)
    md = client.list_topics(timeout=TIMEOUT)
    (node_id,) = md.brokers
    resource = ConfigResource(ResourceType.BROKER, str(node_id))
    configs = client.describe_configs([resource])[resource].result(TIMEOUT)
    assert configs["log.retention.hours"].value == "168"
    assert configs["num.partitions"].value == "1"
    assert configs["log.dirs"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["auto.create.topics.enable"].value == "true"


def test_topic_created_on_metadata_with_auto_create(broker: BrokerProcess) -> None:
    # librdkafka producers ask Metadata to create unknown topics when auto-create is on.
    name = topic_name()
    (acked,) = confluent_produce(broker.bootstrap, name, [Rec(b"k", b"v")])
    assert acked.offset == 0
    consumer = confluent_consumer(broker.bootstrap)
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=TIMEOUT)
        assert (low, high) == (0, 1)
    finally:
        consumer.close()
    assert partition_count(admin(broker.bootstrap), name) == 1  # num.partitions
