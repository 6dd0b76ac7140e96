"""Broker and topic configuration: properties syntax, precedence, listeners, topic configs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from odradek.config import (
    BROKER_CONFIGS,
    LONG_MAX,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigError,
    ConfigSource,
    ConfigType,
    Listener,
    LogConfig,
    describe_topic_config,
    env_to_properties,
    format_value,
    load_config,
    parse_listeners,
    parse_overrides,
    parse_properties,
    parse_value,
    resolve_topic_config,
    validate_topic_config,
    validate_topic_configs,
)

# ----------------------------------------------------------------------------- properties


def test_properties_separators_and_comments() -> None:
    text = (
        "# a comment\n"
        "! another comment\n"
        "\n"
        "   \n"
        "a=1\n"
        "b = 2\n"
        "c: 3\n"
        "d 4\n"
        "  e\t=\t5  \n"
        "f\n"
        "g==x\n"
        "h = a b c\n"
    )
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "4",
        "e": "5  ",  # Java keeps trailing blanks of the value
        "f": "",
        "g": "=x",
        "h": "a b c",
    }


def test_properties_continuations() -> None:
    text = "listeners=PLAINTEXT://127.0.0.1:9092,\\\n    PLAINTEXT2://127.0.0.1:9093\nx=1\\\n"
    assert parse_properties(text) == {
        "listeners": "PLAINTEXT://127.0.0.1:9092,PLAINTEXT2://127.0.0.1:9093",
        "x": "1",
    }


def test_properties_even_backslashes_do_not_continue() -> None:
    assert parse_properties("a=x\\\\\nb=y\n") == {"a": "x\\", "b": "y"}


def test_properties_comment_line_ending_in_backslash_does_not_continue() -> None:
    assert parse_properties("# comment \\\nkey=v\n") == {"key": "v"}


def test_properties_continuation_line_starting_with_hash_is_not_a_comment() -> None:
    assert parse_properties("a=1,\\\n  #2\n") == {"a": "1,#2"}


def test_properties_escapes() -> None:
    text = "k\\:ey\\=x\\ y=v\\tw\\n\\u0041\\q\n"
    assert parse_properties(text) == {"k:ey=x y": "v\tw\nAq"}


def test_properties_line_endings_and_later_keys_win() -> None:
    assert parse_properties("a=1\r\nb=2\rc=3\na=4") == {"a": "4", "b": "2", "c": "3"}


def test_properties_malformed_unicode_escape() -> None:
    with pytest.raises(ConfigError, match="line 2"):
        parse_properties("ok=1\nbad=\\u12g4\n")


def test_env_to_properties() -> None:
    env = {
        "ODRADEK_LOG_DIRS": "/x",
        "ODRADEK_NUM_PARTITIONS": "3",
        "HOME": "/root",
        "ODRADEK_": "z",
    }
    assert env_to_properties(env) == {"log.dirs": "/x", "num.partitions": "3"}


def test_parse_overrides() -> None:
    assert parse_overrides(["a=1", " b =x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}
    with pytest.raises(ConfigError, match="key=value"):
        parse_overrides(["novalue"])
    with pytest.raises(ConfigError, match="key=value"):
        parse_overrides(["=1"])


# ----------------------------------------------------------------------------- loading


def test_defaults() -> None:
    c = BrokerConfig()
    assert c.get_int("node.id") == 1
    assert c.listeners == [Listener("PLAINTEXT", "127.0.0.1", 9092)]
    assert c.advertised_listeners == c.listeners
    assert c.log_dirs == [Path("./odradek-data")]
    assert c.get_int("num.partitions") == 1
    assert c.get_int("default.replication.factor") == 1
    assert c.get_bool("auto.create.topics.enable") is True
    assert c.get_bool("delete.topic.enable") is True
    assert c.get_int("log.segment.bytes") == 1_073_741_824
    assert c.log_roll_ms == 168 * 3_600_000
    assert c.log_retention_ms == 168 * 3_600_000
    assert c.get_int("log.retention.bytes") == -1
    assert c.get_int("log.retention.check.interval.ms") == 300_000
    assert c.get_int("log.index.interval.bytes") == 4096
    assert c.get_int("log.index.size.max.bytes") == 10_485_760
    assert c.get_int("log.flush.interval.messages") == LONG_MAX
    assert c.log_flush_interval_ms == LONG_MAX
    assert c.get_list("log.cleanup.policy") == ("delete",)
    assert c.get_int("message.max.bytes") == 1_048_588
    assert c.get_int("socket.request.max.bytes") == 104_857_600
    assert c.get_int("max.connections") == 2_147_483_647
    assert c.get_int("offsets.topic.num.partitions") == 50
    assert c.get_int("offsets.topic.replication.factor") == 1
    assert c.offsets_retention_ms == 10_080 * 60_000
    assert c.get_int("group.initial.rebalance.delay.ms") == 3000
    assert c.get_int("group.min.session.timeout.ms") == 6000
    assert c.get_int("group.max.session.timeout.ms") == 1_800_000
    assert c.get_int("transaction.max.timeout.ms") == 900_000
    assert c.get_int("transactional.id.expiration.ms") == 604_800_000
    assert c.get_int("transaction.state.log.num.partitions") == 50
    assert c.get_int("producer.id.expiration.ms") == 86_400_000
    assert c.get_int("min.insync.replicas") == 1
    assert c.get_str("log.message.timestamp.type") == "CreateTime"
    assert c.get_str("compression.type") == "producer"
    assert c.get_bool("unstable.api.versions.enable") is False
    assert c.unknown == {}
    assert "cluster.id" not in BROKER_CONFIGS


def test_every_default_is_valid() -> None:
    for table in (BROKER_CONFIGS, TOPIC_CONFIGS):
        for name, definition in table.items():
            text = format_value(definition.default)
            if text is not None:
                assert parse_value(definition, text) == definition.default, name


def test_broker_settings_name_their_topic_synonym() -> None:
    assert BROKER_CONFIGS["log.retention.hours"].topic_synonym == "retention.ms"
    assert BROKER_CONFIGS["message.max.bytes"].topic_synonym == "max.message.bytes"
    assert BROKER_CONFIGS["log.segment.bytes"].topic_synonym == "segment.bytes"
    assert BROKER_CONFIGS["num.partitions"].topic_synonym is None
    assert BROKER_CONFIGS["log.segment.bytes"].dynamic
    assert not BROKER_CONFIGS["listeners"].read_only  # dynamic on Kafka 4.4
    assert BROKER_CONFIGS["node.id"].read_only


def test_precedence_file_env_override(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("num.partitions=2\nlog.segment.bytes=1048576\nnode.id=7\nfoo.bar=baz\n")
    env = {"ODRADEK_NUM_PARTITIONS": "3", "ODRADEK_LOG_SEGMENT_BYTES": "2000000"}
    c = load_config(props, ["log.segment.bytes=3000000"], env)
    assert c.get_int("num.partitions") == 3  # env beats file
    assert c.get_int("log.segment.bytes") == 3000000  # override beats env
    assert c.get_int("node.id") == 7  # file beats default
    assert c.unknown == {"foo.bar": "baz"}
    assert c.source("num.partitions") is ConfigSource.STATIC_BROKER_CONFIG
    assert c.source("num.recovery.threads") is ConfigSource.DEFAULT_CONFIG
    assert c.is_set("node.id") and not c.is_set("log.dir")


def test_load_without_file() -> None:
    c = load_config(None, [], {})
    assert c.get_int("node.id") == 1


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "nope.properties", [], {})


def test_bad_value_names_the_key() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, ["num.partitions=0"], {})
    assert info.value.key == "num.partitions"
    assert "at least 1" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load_config(None, [], {"ODRADEK_AUTO_CREATE_TOPICS_ENABLE": "maybe"})
    assert info.value.key == "auto.create.topics.enable"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("num.partitions", "abc"),
        ("num.partitions", "2147483648"),
        ("num.partitions", "1.5"),
        ("num.partitions", "1_0"),
        ("log.retention.bytes", "9223372036854775808"),
        ("log.cleaner.min.cleanable.ratio", "1.5"),
        ("log.cleaner.min.cleanable.ratio", "nan"),
        ("log.message.timestamp.type", "createtime"),
        ("log.cleanup.policy", "delete,forever"),
        ("compression.type", "brotli"),
        ("compression.gzip.level", "0"),
        ("log.retention.ms", ""),
        ("group.consumer.migration.policy", "sideways"),
    ],
)
def test_invalid_values(name: str, text: str) -> None:
    with pytest.raises(ConfigError, match=f"Invalid value .* for configuration {name}"):
        BrokerConfig({name: text})


def test_migration_policy_is_case_insensitive_like_kafka() -> None:
    assert BrokerConfig({}).get_str("group.consumer.migration.policy") == "bidirectional"
    assert BrokerConfig({"group.consumer.migration.policy": "Upgrade"}).get_str(
        "group.consumer.migration.policy") == "Upgrade"  # the broker lower-cases it
    with pytest.raises(ConfigError, match="case insensitive"):
        BrokerConfig({"group.consumer.migration.policy": "both"})


def test_value_parsing_is_lenient_like_kafka() -> None:
    c = BrokerConfig(
        {
            "auto.create.topics.enable": " FALSE ",
            "num.partitions": " +3 ",
            "log.cleanup.policy": "compact , delete",
            "log.cleaner.min.cleanable.ratio": "0.25",
        }
    )
    assert c.get_bool("auto.create.topics.enable") is False
    assert c.get_int("num.partitions") == 3
    assert c.get_list("log.cleanup.policy") == ("compact", "delete")
    assert c.get_float("log.cleaner.min.cleanable.ratio") == 0.25


def test_retention_precedence() -> None:
    assert BrokerConfig({"log.retention.hours": "1"}).log_retention_ms == 3_600_000
    both = {"log.retention.hours": "1", "log.retention.minutes": "2"}
    assert BrokerConfig(both).log_retention_ms == 120_000
    assert BrokerConfig({**both, "log.retention.ms": "5"}).log_retention_ms == 5
    assert BrokerConfig({"log.retention.ms": "-1"}).log_retention_ms == -1
    assert BrokerConfig({"log.retention.hours": "-1"}).log_retention_ms == -1


def test_roll_and_flush_fallbacks() -> None:
    assert BrokerConfig({"log.roll.hours": "2"}).log_roll_ms == 7_200_000
    assert BrokerConfig({"log.roll.hours": "2", "log.roll.ms": "9"}).log_roll_ms == 9
    assert BrokerConfig({"log.flush.scheduler.interval.ms": "50"}).log_flush_interval_ms == 50
    c = BrokerConfig({"log.flush.scheduler.interval.ms": "50", "log.flush.interval.ms": "7"})
    assert c.log_flush_interval_ms == 7


def test_log_dirs_over_log_dir() -> None:
    assert BrokerConfig({"log.dir": "/a"}).log_dirs == [Path("/a")]
    c = BrokerConfig({"log.dir": "/a", "log.dirs": "/b, /c"})
    assert c.log_dirs == [Path("/b"), Path("/c")]
    with pytest.raises(ConfigError, match="log directory"):
        BrokerConfig({"log.dirs": ""})


def test_node_id_and_broker_id_are_one_setting() -> None:
    assert BrokerConfig({"broker.id": "4"}).get_int("node.id") == 4
    assert BrokerConfig({"node.id": "5"}).get_int("broker.id") == 5
    assert BrokerConfig({"node.id": "5", "broker.id": "5"}).get_int("node.id") == 5
    with pytest.raises(ConfigError, match=r"node\.id"):
        BrokerConfig({"node.id": "5", "broker.id": "6"})


def test_typed_getters_read_each_declared_type() -> None:
    c = BrokerConfig({"log.roll.ms": "9", "advertised.listeners": "PLAINTEXT://h:1",
                      "log.dirs": "/a,/b", "ssl.keystore.type": "JKS"})
    assert c.get_int("num.partitions") == 1
    assert c.get_int("offsets.topic.replication.factor") == 1  # SHORT
    assert c.get_int("log.retention.bytes") == -1  # LONG
    assert c.get_bool("delete.topic.enable") is True
    assert c.get_float("log.cleaner.min.cleanable.ratio") == 0.5
    assert c.get_list("log.dir") == ("./odradek-data",)  # a LIST in Kafka 4.4
    assert c.get_str("ssl.keystore.type") == "JKS"
    assert c.get_list("log.cleanup.policy") == ("delete",)
    assert c.get_optional_int("log.roll.ms") == 9
    assert c.get_optional_list("advertised.listeners") == ("PLAINTEXT://h:1",)
    assert c.get_optional_list("log.dirs") == ("/a", "/b")


def test_optional_getters_read_null_defaults() -> None:
    c = BrokerConfig()
    assert c.get_optional_int("log.roll.ms") is None
    assert c.get_optional_str("broker.rack") is None
    assert c.get_optional_list("advertised.listeners") is None
    assert c.get_optional_int("num.partitions") == 1
    with pytest.raises(TypeError, match="get_optional_int"):
        c.get_int("log.roll.ms")
    with pytest.raises(TypeError, match="get_optional_str"):
        c.get_str("broker.rack")
    with pytest.raises(TypeError, match="get_optional_list"):
        c.get_list("log.dirs")


@pytest.mark.parametrize(
    ("getter", "name"),
    [
        ("get_int", "auto.create.topics.enable"),  # a bool is never an int
        ("get_optional_int", "delete.topic.enable"),
        ("get_int", "log.cleaner.min.cleanable.ratio"),
        ("get_int", "log.dir"),
        ("get_bool", "num.partitions"),
        ("get_float", "num.partitions"),
        ("get_str", "listeners"),
        ("get_list", "listener.security.protocol.map"),  # a STRING in Kafka 4.4
    ],
)
def test_typed_getters_check_the_declared_type(getter: str, name: str) -> None:
    with pytest.raises(TypeError, match=re.escape(name)):
        getattr(BrokerConfig(), getter)(name)


def test_typed_getters_on_unknown_names() -> None:
    with pytest.raises(KeyError):
        BrokerConfig().get_int("no.such.setting")
    with pytest.raises(KeyError):
        BrokerConfig({"no.such.setting": "1"}).get_int("no.such.setting")


# ----------------------------------------------------------------------------- listeners


def test_parse_listeners_forms() -> None:
    assert parse_listeners(
        ["PLAINTEXT://127.0.0.1:9092", "v6://[::1]:0", "ALL://:9094", "NAMED://localhost:1"]
    ) == [
        Listener("PLAINTEXT", "127.0.0.1", 9092),
        Listener("V6", "::1", 0),
        Listener("ALL", "", 9094),
        Listener("NAMED", "localhost", 1),
    ]


@pytest.mark.parametrize(
    "text",
    ["127.0.0.1:9092", "PLAINTEXT://127.0.0.1", "PLAINTEXT://h:99999", "PLAINTEXT://h:-1", "x"],
)
def test_bad_listener(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        BrokerConfig({"listeners": text})
    assert info.value.key == "listeners"


def test_duplicate_listener_names() -> None:
    with pytest.raises(ConfigError, match="more than once"):
        BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:1,plaintext://127.0.0.1:2"})


def test_every_kafka_security_protocol_is_a_listener() -> None:
    config = BrokerConfig({
        "listeners": "SSL://127.0.0.1:9093,SECURE://127.0.0.1:9094,S://127.0.0.1:9095",
        "listener.security.protocol.map": "SSL:SSL,SECURE:SASL_SSL,S:SASL_PLAINTEXT"})
    assert [lst.name for lst in config.listeners] == ["SSL", "SECURE", "S"]
    with pytest.raises(ConfigError, match="unknown security protocol"):
        BrokerConfig({"listeners": "X://127.0.0.1:9093",
                      "listener.security.protocol.map": "X:KERBEROS"})


def test_custom_listener_names_via_protocol_map() -> None:
    c = BrokerConfig(
        {
            "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://[::1]:0",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
        }
    )
    assert [x.name for x in c.listeners] == ["INTERNAL", "EXTERNAL"]
    assert c.listener_security_protocol_map == {"INTERNAL": "PLAINTEXT", "EXTERNAL": "PLAINTEXT"}
    with pytest.raises(ConfigError, match="no security protocol"):
        BrokerConfig({"listeners": "INTERNAL://127.0.0.1:0"})


def test_advertised_listeners() -> None:
    c = BrokerConfig({"listeners": "PLAINTEXT://127.0.0.1:0"})
    assert c.advertised_for({"PLAINTEXT": 41231}) == [Listener("PLAINTEXT", "127.0.0.1", 41231)]
    c = BrokerConfig(
        {"listeners": "PLAINTEXT://:0", "advertised.listeners": "PLAINTEXT://kafka.local:9092"}
    )
    assert c.advertised_for({"PLAINTEXT": 5}) == [Listener("PLAINTEXT", "kafka.local", 9092)]
    c = BrokerConfig({"listeners": "PLAINTEXT://:0"})
    assert c.advertised_for({"PLAINTEXT": 5}, fallback_host="h") == [Listener("PLAINTEXT", "h", 5)]
    with pytest.raises(ConfigError, match="non-routable"):
        BrokerConfig({"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"})
    with pytest.raises(ConfigError, match="not among the listeners"):
        BrokerConfig(
            {
                "advertised.listeners": "OTHER://h:1",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
            }
        )


KRAFT_SERVER_PROPERTIES = Path(__file__).parents[2] / "data" / "kafka-kraft-server.properties"


def test_stock_kraft_server_properties_are_understood() -> None:
    # Issue #10: Kafka's stock KRaft file: no setting is unknown, CONTROLLER is not a client
    # listener (nor advertised), PLAINTEXT is.
    c = load_config(KRAFT_SERVER_PROPERTIES, [], {})
    assert c.unknown == {}
    assert c.listeners == [Listener("PLAINTEXT", "", 9092)]
    assert c.advertised_listeners == [Listener("PLAINTEXT", "localhost", 9092)]
    assert c.get_list("process.roles") == ("broker", "controller")
    assert c.get_int("num.io.threads") == 8


def test_controller_listeners_are_not_client_listeners() -> None:
    c = BrokerConfig(
        {
            "listeners": "CONTROLLER://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092",
            "controller.listener.names": "controller",
            # a controller listener needs no PLAINTEXT protocol: it is not served
            "listener.security.protocol.map": "CONTROLLER:SSL,PLAINTEXT:PLAINTEXT",
        }
    )
    assert c.listeners == [Listener("PLAINTEXT", "127.0.0.1", 9092)]
    with pytest.raises(ConfigError, match="at least one client listener"):
        BrokerConfig(
            {"listeners": "CONTROLLER://127.0.0.1:9093", "controller.listener.names": "CONTROLLER",
             "listener.security.protocol.map": "CONTROLLER:PLAINTEXT"}
        )


# ----------------------------------------------------------------------------- topic configs


def test_topic_config_table_matches_kafka_names() -> None:
    expected = {
        "cleanup.policy",
        "compression.type",
        "retention.ms",
        "retention.bytes",
        "segment.bytes",
        "segment.ms",
        "segment.index.bytes",
        "index.interval.bytes",
        "flush.messages",
        "flush.ms",
        "max.message.bytes",
        "message.timestamp.type",
        "min.insync.replicas",
        "delete.retention.ms",
        "min.compaction.lag.ms",
        "max.compaction.lag.ms",
        "min.cleanable.dirty.ratio",
        "file.delete.delay.ms",
        "preallocate",
        "unclean.leader.election.enable",
        "message.timestamp.before.max.ms",
        "message.timestamp.after.max.ms",
        # added in Kafka 4.2-4.4
        "errors.deadletterqueue.group.enable",
        "max.decompressed.message.bytes",
        "remote.copy.lag.bytes",
        "remote.copy.lag.ms",
    }
    assert expected <= set(TOPIC_CONFIGS)
    # removed in Kafka 4.0
    assert not {"message.downconversion.enable", "message.format.version",
                "message.timestamp.difference.max.ms"} & set(TOPIC_CONFIGS)
    assert TOPIC_CONFIGS["retention.ms"].default == 604_800_000
    assert TOPIC_CONFIGS["max.message.bytes"].default == 1_048_588
    assert TOPIC_CONFIGS["cleanup.policy"].type is ConfigType.LIST


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("retention.ms", "abc", "Not a number of type LONG"),
        ("retention.ms", "-2", "at least -1"),
        ("segment.bytes", "1048575", "Value must be at least 1048576"),
        ("segment.bytes", "14", "Value must be at least 1048576"),
        ("cleanup.policy", "delete,forever", "forever"),
        ("compression.type", "brotli", "String must be one of"),
        ("message.timestamp.type", "Now", "String must be one of"),
        ("min.cleanable.dirty.ratio", "2", "no more than 1"),
        ("preallocate", "yes", "true or false"),
        ("no.such.config", "1", "Unknown topic config name: no.such.config"),
        ("retention.ms", None, "Null value"),
    ],
)
def test_validate_topic_config_rejects(name: str, value: str | None, fragment: str) -> None:
    reason = validate_topic_config(name, value)
    assert reason is not None and fragment in reason


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("retention.ms", "-1"),
        ("retention.ms", "1000"),
        ("cleanup.policy", "compact,delete"),
        ("cleanup.policy", "compact"),
        ("compression.type", "zstd"),
        ("min.cleanable.dirty.ratio", "0.1"),
        ("preallocate", "TRUE"),
        ("message.timestamp.type", "LogAppendTime"),
    ],
)
def test_validate_topic_config_accepts(name: str, value: str) -> None:
    assert validate_topic_config(name, value) is None


def test_validate_topic_configs_cross_check() -> None:
    assert validate_topic_configs({"retention.ms": "1", "internal.segment.bytes": "1000"}) is None
    reason = validate_topic_configs({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
    assert reason is not None and "min.compaction.lag.ms" in reason
    assert validate_topic_configs({"x": "1"}) == "Unknown topic config name: x"


def test_effective_topic_config_precedence() -> None:
    broker = BrokerConfig(
        {"log.retention.minutes": "2", "message.max.bytes": "5000", "log.flush.interval.ms": "9"}
    )
    resolved = resolve_topic_config({"segment.bytes": "2097152"}, broker)
    assert resolved.segment_bytes == 2097152
    assert resolved.sources["segment.bytes"] is ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert resolved.retention_ms == 120_000
    assert resolved.sources["retention.ms"] is ConfigSource.STATIC_BROKER_CONFIG
    assert resolved.max_message_bytes == 5000
    assert resolved.flush_ms == 9
    assert resolved.segment_ms == 604_800_000
    assert resolved.sources["segment.ms"] is ConfigSource.DEFAULT_CONFIG
    assert resolved.delete and not resolved.compact
    assert resolved.overrides == {"segment.bytes": "2097152"}

    overridden = resolve_topic_config({"retention.ms": "10", "cleanup.policy": "compact"}, broker)
    assert overridden.retention_ms == 10
    assert overridden.compact and not overridden.delete


def test_effective_topic_config_typed_accessors_on_defaults() -> None:
    resolved = resolve_topic_config({}, BrokerConfig())
    assert resolved.retention_bytes == -1
    assert resolved.segment_index_bytes == 10_485_760
    assert resolved.index_interval_bytes == 4096
    assert resolved.flush_messages == LONG_MAX
    assert resolved.get_str("message.timestamp.type") == "CreateTime"
    assert resolved.get_str("compression.type") == "producer"
    assert resolved.get_int("min.insync.replicas") == 1
    assert resolved.min_cleanable_dirty_ratio == 0.5
    assert resolved.delete_retention_ms == 86_400_000
    assert resolved.file_delete_delay_ms == 60_000
    assert resolved.get_bool("preallocate") is False
    assert resolved["unclean.leader.election.enable"] is False


def test_topic_typed_getters_check_the_declared_type() -> None:
    resolved = resolve_topic_config({"segment.jitter.ms": "5"}, BrokerConfig())
    assert resolved.get_int("segment.jitter.ms") == 5
    assert resolved.get_list("follower.replication.throttled.replicas") == ()
    with pytest.raises(TypeError, match="preallocate"):
        resolved.get_int("preallocate")
    with pytest.raises(TypeError, match=r"segment\.bytes"):
        resolved.get_float("segment.bytes")


def test_log_config_from_overrides() -> None:
    assert LogConfig.from_overrides().values == resolve_topic_config({}, BrokerConfig()).values
    config = LogConfig.from_overrides({"segment.bytes": "2097152", "index.interval.bytes": "100"})
    assert (config.segment_bytes, config.index_interval_bytes) == (2097152, 100)
    assert config.sources["segment.bytes"] is ConfigSource.DYNAMIC_TOPIC_CONFIG
    # Kafka's internal test hook below the 1 MiB floor wins over segment.bytes
    small = LogConfig.from_overrides({"internal.segment.bytes": "2048"})
    assert small.segment_bytes == 2048
    assert config.retention_ms == 604_800_000
    broker = BrokerConfig({"log.retention.hours": "1"})
    assert LogConfig.from_overrides({}, broker).retention_ms == 3_600_000
    with pytest.raises(ConfigError, match=r"Unknown topic config name: segment\.byte$"):
        LogConfig.from_overrides({"segment.byte": "2048"})
    with pytest.raises(ConfigError, match="at least 1048576"):
        LogConfig.from_overrides({"segment.bytes": "10"})
    with pytest.raises(ConfigError, match=r"min\.compaction\.lag\.ms"):
        LogConfig.from_overrides({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})


def test_describe_topic_config() -> None:
    broker = BrokerConfig({"log.retention.hours": "2"})
    entries = {e.name: e for e in describe_topic_config({"retention.ms": "1000"}, broker)}
    assert set(entries) == {n for n, d in TOPIC_CONFIGS.items() if not d.internal}
    assert "internal.segment.bytes" not in entries

    retention = entries["retention.ms"]
    assert retention.value == "1000"
    assert retention.source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert not retention.is_default and not retention.read_only
    assert [(s.name, s.value, s.source) for s in retention.synonyms] == [
        ("retention.ms", "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG),
    ]  # Kafka lists only the main synonym, log.retention.ms (unset, no default)
    timestamps = entries["message.timestamp.after.max.ms"]
    assert timestamps.value == "3600000"  # KIP-1030's default
    assert [(s.name, s.value, s.source) for s in timestamps.synonyms] == [
        ("log.message.timestamp.after.max.ms", "3600000", ConfigSource.DEFAULT_CONFIG)]

    segment = entries["segment.bytes"]
    assert segment.value == "1073741824" and segment.is_default
    assert segment.type is ConfigType.INT

    policy = entries["cleanup.policy"]
    assert policy.value == "delete"

    no_synonyms = describe_topic_config({}, broker, include_synonyms=False)
    assert all(e.synonyms == () for e in no_synonyms)
    by_name = {e.name: e for e in no_synonyms}
    assert by_name["retention.ms"].value == "7200000"
    assert by_name["retention.ms"].source is ConfigSource.STATIC_BROKER_CONFIG


def test_describe_broker_config() -> None:
    entries = {e.name: e for e in BrokerConfig({"num.partitions": "3"}).describe()}
    assert set(entries) == {n for n, d in BROKER_CONFIGS.items() if not d.internal}
    assert len(entries) == 350  # every public Kafka 4.4 broker setting
    assert "unstable.api.versions.enable" not in entries
    assert "log.message.format.version" not in entries
    assert entries["num.partitions"].value == "3"
    assert entries["num.partitions"].source is ConfigSource.STATIC_BROKER_CONFIG
    assert entries["log.retention.ms"].value is None
    assert entries["log.retention.hours"].value == "168"
    assert entries["log.retention.hours"].is_default
    assert not entries["listeners"].read_only
    assert entries["listener.security.protocol.map"].type is ConfigType.STRING
    assert entries["log.dir"].type is ConfigType.LIST


def test_format_value() -> None:
    assert format_value(True) == "true"
    assert format_value(("compact", "delete")) == "compact,delete"
    assert format_value(0.5) == "0.5"
    assert format_value(1.0) == "1.0"
    assert format_value(LONG_MAX) == "9223372036854775807"
    assert format_value(None) is None
