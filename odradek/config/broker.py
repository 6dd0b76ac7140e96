"""The broker's settings: the table of every known broker setting (Kafka's names, types and
defaults), `BrokerConfig` (the parsed, validated values, read through typed getters), and
`load_config`, the one function that reads a file.

Names, types and defaults follow Apache Kafka (3.9 line) so that `server.properties` files,
admin tools and DescribeConfigs answers look the same; where Odradek's single-node defaults
differ from Kafka's, the table says so in a comment.

Precedence when loading: built-in defaults < properties file < environment (`ODRADEK_` + the
name upper-cased with dots as underscores, e.g. `ODRADEK_LOG_DIRS`) < `--override key=value`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from odradek.config.listeners import (
    Listener,
    bound_advertised,
    check_advertised,
    checked_listeners,
    parse_listener_names,
    parse_protocol_map,
)
from odradek.config.properties import env_to_properties, parse_overrides, parse_properties
from odradek.config.synonyms import TOPIC_CONFIG_OF
from odradek.config.types import (
    CLEANUP_POLICIES,
    COMPRESSION_TYPES,
    HOUR_MS,
    INT_MAX,
    LONG_MAX,
    MINUTE_MS,
    SECURITY_PROTOCOLS,
    TIMESTAMP_TYPES,
    ConfigEntry,
    ConfigError,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    ConfigValue,
    Effect,
    TypedGetters,
    Validator,
    at_least,
    between,
    each_one_of,
    format_value,
    gzip_level,
    one_of,
    one_of_ignore_case,
    parse_value,
)


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One broker setting. `default` is the parsed default (None: unset/null).

    `dynamic` marks settings Kafka lets AlterConfigs change on a running broker (informative:
    DescribeConfigs reports the others as read-only). `topic_synonym` is the topic config this
    broker setting is the default for, if any. `effect` says whether Odradek acts on it.
    """

    name: str
    type: ConfigType
    default: ConfigValue
    validator: Validator | None = None
    dynamic: bool = False
    topic_synonym: str | None = None
    effect: Effect = Effect.APPLIED

    @property
    def read_only(self) -> bool:
        return not self.dynamic

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD


def _b(
    name: str,
    type_: ConfigType,
    default: ConfigValue,
    validator: Validator | None = None,
    *,
    dynamic: bool | None = None,
    effect: Effect = Effect.APPLIED,
) -> ConfigDef:
    # Kafka lets AlterConfigs change the topic-default settings at run time.
    topic = TOPIC_CONFIG_OF.get(name)
    return ConfigDef(
        name,
        type_,
        default,
        validator,
        dynamic=(topic is not None) if dynamic is None else dynamic,
        topic_synonym=topic,
        effect=effect,
    )


_T = ConfigType
_NA = Effect.NOT_APPLIED
_NM = Effect.NO_MEANING

_BROKER_DEFS: tuple[ConfigDef, ...] = (
    # Identity and listeners. Kafka's node.id has no default (KRaft requires it); a single
    # node broker can simply be 1. broker.id is Kafka's older name for the same thing.
    _b("node.id", _T.INT, 1, at_least(0)),
    _b("broker.id", _T.INT, 1, at_least(0)),
    _b("broker.rack", _T.STRING, None, effect=_NA),
    # Kafka's default binds every interface ("PLAINTEXT://:9092"); ours stays on loopback.
    _b("listeners", _T.LIST, ("PLAINTEXT://127.0.0.1:9092",)),
    _b("advertised.listeners", _T.LIST, None),
    _b("listener.security.protocol.map", _T.LIST, tuple(f"{p}:{p}" for p in SECURITY_PROTOCOLS)),
    _b("unstable.api.versions.enable", _T.BOOLEAN, False, effect=_NA),
    # KRaft: a stock Kafka server.properties runs one combined broker+controller process.
    # Odradek is that one process, so it only reads controller.listener.names (those
    # listeners are the controller's: not served as client ports); the rest mean nothing to
    # a single process and are accepted silently (`effect=NO_MEANING`).
    _b("process.roles", _T.LIST, (), each_one_of("broker", "controller"), effect=_NM),
    _b("controller.listener.names", _T.STRING, None),
    _b("controller.quorum.voters", _T.LIST, (), effect=_NM),
    _b("controller.quorum.bootstrap.servers", _T.LIST, (), effect=_NM),
    _b("inter.broker.listener.name", _T.STRING, None, effect=_NM),
    _b("metadata.log.dir", _T.STRING, None, effect=_NM),
    _b("num.network.threads", _T.INT, 3, at_least(1), dynamic=True, effect=_NM),
    _b("num.io.threads", _T.INT, 8, at_least(1), dynamic=True, effect=_NM),
    _b("num.recovery.threads.per.data.dir", _T.INT, 1, at_least(1), dynamic=True, effect=_NM),
    _b("num.replica.fetchers", _T.INT, 1, dynamic=True, effect=_NM),
    _b("background.threads", _T.INT, 10, at_least(1), dynamic=True, effect=_NM),
    _b("queued.max.requests", _T.INT, 500, at_least(1), effect=_NM),
    _b("share.coordinator.state.topic.replication.factor", _T.SHORT, 3, at_least(1),
       effect=_NM),
    _b("share.coordinator.state.topic.min.isr", _T.SHORT, 2, at_least(1), effect=_NM),
    # Storage. Kafka's log.dir default is /tmp/kafka-logs; ours is under the working dir.
    _b("log.dirs", _T.LIST, None),
    _b("log.dir", _T.STRING, "./odradek-data"),
    _b("num.partitions", _T.INT, 1, at_least(1)),
    _b("default.replication.factor", _T.INT, 1),
    _b("auto.create.topics.enable", _T.BOOLEAN, True),
    _b("delete.topic.enable", _T.BOOLEAN, True),
    _b("log.segment.bytes", _T.INT, 1_073_741_824, at_least(14)),
    _b("log.roll.ms", _T.LONG, None, at_least(1)),
    _b("log.roll.hours", _T.INT, 168, at_least(1), dynamic=False),
    _b("log.roll.jitter.ms", _T.LONG, None, at_least(0)),
    _b("log.roll.jitter.hours", _T.INT, 0, at_least(0), dynamic=False),
    _b("log.retention.ms", _T.LONG, None, at_least(-1)),
    _b("log.retention.minutes", _T.INT, None, at_least(-1), dynamic=False),
    _b("log.retention.hours", _T.INT, 168, at_least(-1), dynamic=False),
    _b("log.retention.bytes", _T.LONG, -1),
    _b("log.retention.check.interval.ms", _T.LONG, 300_000, at_least(1)),
    _b("log.cleanup.policy", _T.LIST, ("delete",), each_one_of(*CLEANUP_POLICIES)),
    _b("log.index.size.max.bytes", _T.INT, 10_485_760, at_least(4)),
    _b("log.index.interval.bytes", _T.INT, 4096, at_least(0)),
    _b("log.flush.interval.messages", _T.LONG, LONG_MAX, at_least(1)),
    _b("log.flush.interval.ms", _T.LONG, None, at_least(0)),
    _b("log.flush.scheduler.interval.ms", _T.LONG, LONG_MAX, at_least(0), dynamic=False),
    _b("log.flush.offset.checkpoint.interval.ms", _T.INT, 60_000, at_least(0), effect=_NA),
    _b("log.segment.delete.delay.ms", _T.LONG, 60_000, at_least(0)),
    _b("log.preallocate", _T.BOOLEAN, False, effect=_NA),
    _b("log.message.format.version", _T.STRING, "3.0-IV1", effect=_NA),
    _b("log.message.timestamp.type", _T.STRING, "CreateTime", one_of(*TIMESTAMP_TYPES)),
    _b("log.message.timestamp.difference.max.ms", _T.LONG, LONG_MAX, at_least(0)),
    _b("log.message.timestamp.before.max.ms", _T.LONG, LONG_MAX, at_least(0)),
    _b("log.message.timestamp.after.max.ms", _T.LONG, LONG_MAX, at_least(0)),
    _b("log.message.downconversion.enable", _T.BOOLEAN, True, effect=_NA),
    _b("log.local.retention.ms", _T.LONG, -2, at_least(-2), effect=_NA),
    _b("log.local.retention.bytes", _T.LONG, -2, at_least(-2), effect=_NA),
    _b("log.cleaner.enable", _T.BOOLEAN, True),
    _b("log.cleaner.backoff.ms", _T.LONG, 15_000, at_least(0), dynamic=True),
    _b("log.cleaner.delete.retention.ms", _T.LONG, 86_400_000, at_least(0)),
    _b("log.cleaner.min.compaction.lag.ms", _T.LONG, 0, at_least(0)),
    _b("log.cleaner.max.compaction.lag.ms", _T.LONG, LONG_MAX, at_least(1)),
    _b("log.cleaner.min.cleanable.ratio", _T.DOUBLE, 0.5, between(0, 1)),
    _b("log.cleaner.threads", _T.INT, 1, at_least(0), dynamic=True, effect=_NA),
    _b("log.cleaner.dedupe.buffer.size", _T.LONG, 134_217_728, dynamic=True),
    _b("log.cleaner.io.buffer.size", _T.INT, 524_288, at_least(0), dynamic=True),
    _b("log.cleaner.io.buffer.load.factor", _T.DOUBLE, 0.9, dynamic=True),
    _b("log.cleaner.io.max.bytes.per.second", _T.DOUBLE, 1.7976931348623157e308, dynamic=True),
    _b("min.insync.replicas", _T.INT, 1, at_least(1), effect=_NA),
    _b("unclean.leader.election.enable", _T.BOOLEAN, False, effect=_NM),
    _b("compression.type", _T.STRING, "producer", one_of(*COMPRESSION_TYPES)),
    _b("compression.gzip.level", _T.INT, -1, gzip_level),
    _b("compression.lz4.level", _T.INT, 9, between(1, 17)),
    _b("compression.zstd.level", _T.INT, 3, between(-131072, 22)),
    # Requests and connections.
    _b("message.max.bytes", _T.INT, 1_048_588, at_least(0)),
    _b("socket.request.max.bytes", _T.INT, 104_857_600, at_least(1)),
    _b("socket.send.buffer.bytes", _T.INT, 102_400, effect=_NA),
    _b("socket.receive.buffer.bytes", _T.INT, 102_400, effect=_NA),
    _b("socket.listen.backlog.size", _T.INT, 50, at_least(1), effect=_NA),
    _b("max.connections", _T.INT, INT_MAX, at_least(0), dynamic=True),
    _b("max.connections.per.ip", _T.INT, INT_MAX, at_least(0), dynamic=True),
    _b("connections.max.idle.ms", _T.LONG, 600_000),
    _b("max.request.partition.size.limit", _T.INT, 2000, at_least(1)),
    # Memory for requests being read, across connections; -1 = unbounded (Kafka's default).
    _b("queued.max.request.bytes", _T.LONG, -1),
    _b("fetch.max.bytes", _T.INT, 57_671_680, at_least(1024)),
    # Fetch sessions (KIP-227): how many the broker keeps; 0 keeps none. Read at start-up.
    _b("max.incremental.fetch.session.cache.slots", _T.INT, 1000, at_least(0)),
    # Group coordinator. Kafka's replication factors for the internal topics default to 3,
    # which a single node cannot satisfy; ours default to 1.
    _b("offsets.topic.num.partitions", _T.INT, 50, at_least(1)),
    _b("offsets.topic.replication.factor", _T.SHORT, 1, at_least(1), effect=_NM),
    _b("offsets.topic.segment.bytes", _T.INT, 104_857_600, at_least(1)),
    _b("offsets.retention.minutes", _T.INT, 10_080, at_least(1)),
    _b("offsets.retention.check.interval.ms", _T.LONG, 600_000, at_least(1)),
    _b("offsets.commit.timeout.ms", _T.INT, 5000, at_least(1), effect=_NM),
    _b("offset.metadata.max.bytes", _T.INT, 4096),
    _b("group.initial.rebalance.delay.ms", _T.INT, 3000),
    _b("group.min.session.timeout.ms", _T.INT, 6000),
    _b("group.max.session.timeout.ms", _T.INT, 1_800_000),
    _b("group.max.size", _T.INT, INT_MAX, at_least(1)),
    # KIP-848 consumer groups (group.protocol=consumer).
    _b("group.consumer.session.timeout.ms", _T.INT, 45_000, at_least(1)),
    _b("group.consumer.heartbeat.interval.ms", _T.INT, 5_000, at_least(1)),
    _b("group.consumer.max.size", _T.INT, INT_MAX, at_least(1)),
    _b("group.consumer.regex.refresh.interval.ms", _T.INT, 600_000, at_least(10_000)),
    _b("group.consumer.assignors", _T.LIST, ("uniform", "range"), each_one_of(
        "uniform", "range", "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
        "org.apache.kafka.coordinator.group.assignor.RangeAssignor")),
    # Online migration between the classic and consumer protocols (Kafka's
    # ConsumerGroupMigrationPolicy; case insensitive).
    _b("group.consumer.migration.policy", _T.STRING, "bidirectional", one_of_ignore_case(
        "bidirectional", "upgrade", "downgrade", "disabled")),
    # Transactions and producer ids.
    _b("transaction.max.timeout.ms", _T.INT, 900_000, at_least(1)),
    _b("transactional.id.expiration.ms", _T.INT, 604_800_000, at_least(1)),
    _b("transaction.state.log.num.partitions", _T.INT, 50, at_least(1)),
    _b("transaction.state.log.replication.factor", _T.SHORT, 1, at_least(1), effect=_NM),
    _b("transaction.state.log.min.isr", _T.INT, 1, at_least(1), effect=_NM),
    _b("transaction.state.log.segment.bytes", _T.INT, 104_857_600, at_least(1)),
    _b("transaction.abort.timed.out.transaction.cleanup.interval.ms", _T.INT, 10_000, at_least(1)),
    _b(
        "transaction.remove.expired.transaction.cleanup.interval.ms", _T.INT, 3_600_000, at_least(1)
    ),
    _b("producer.id.expiration.ms", _T.INT, 86_400_000, at_least(1)),
    # The finalized transaction.version feature level (Kafka sets it once with
    # `kafka-storage format --feature transaction.version=N`, later with kafka-features.sh):
    # 2 (Kafka 4.x's default) lets clients use transactions v2 (KIP-890), 1 or 0 emulate a
    # cluster where they use the classic protocol. Not a Kafka broker setting.
    _b("transaction.version", _T.SHORT, 2, between(0, 2)),
    _b("producer.id.expiration.check.interval.ms", _T.INT, 600_000, at_least(1)),
)

BROKER_CONFIGS: Mapping[str, ConfigDef] = {d.name: d for d in _BROKER_DEFS}

# Every broker synonym named by a topic config must be a broker setting.
assert all(s in BROKER_CONFIGS for s in TOPIC_CONFIG_OF), "topic synonym missing"


class BrokerConfig(TypedGetters):
    """The broker's settings: every known setting parsed and validated, unknown ones kept.

    `explicit` maps names to the text given (file, environment, overrides merged); anything
    not given takes its default. Raises ConfigError naming the key on a bad value.

    Read a setting with the typed getters (`get_int("num.partitions")`, `get_bool(...)`,
    `get_float`, `get_str`, `get_list` and `get_optional_*` for settings that default to
    null; see `TypedGetters`). Properties are kept only for values derived beyond their type:
    listeners, the protocol map, log dirs as Paths, and settings with unit synonyms or
    fallbacks (`log_roll_ms`, `log_retention_ms`, `log_flush_interval_ms`,
    `offsets_retention_ms`). `get(name)` gives the untyped value, for code that handles any
    setting alike (DescribeConfigs, topic synonyms).
    """

    __slots__ = ("_advertised", "_explicit", "_listeners", "_protocols", "_values", "unknown")

    def __init__(self, explicit: Mapping[str, str] | None = None) -> None:
        given = dict(explicit or {})
        # node.id and broker.id are one setting under two names (as in Kafka's KRaft mode).
        if "node.id" in given and "broker.id" not in given:
            given["broker.id"] = given["node.id"]
        elif "broker.id" in given and "node.id" not in given:
            given["node.id"] = given["broker.id"]
        self._explicit: dict[str, str] = given
        self.unknown: dict[str, str] = {k: v for k, v in given.items() if k not in BROKER_CONFIGS}
        self._values: dict[str, ConfigValue] = {}
        for name, definition in BROKER_CONFIGS.items():
            self._values[name] = (
                parse_value(definition, given[name]) if name in given else definition.default
            )
        if self._values["node.id"] != self._values["broker.id"]:
            raise ConfigError(
                f"node.id ({self._values['node.id']}) and broker.id "
                f"({self._values['broker.id']}) must be equal when both are set",
                "node.id",
            )
        self._protocols = parse_protocol_map(self.get_list("listener.security.protocol.map"))
        controllers = parse_listener_names(self.get_optional_str("controller.listener.names"))
        self._listeners = checked_listeners(
            self.get_list("listeners"), self._protocols, "listeners", controllers
        )
        advertised = self.get_optional_list("advertised.listeners")
        if advertised is None:
            self._advertised = list(self._listeners)
        else:
            self._advertised = checked_listeners(
                advertised, self._protocols, "advertised.listeners", controllers
            )
            check_advertised(self._advertised, self._listeners)
        if not self.log_dirs:
            raise ConfigError("at least one log directory is needed", "log.dirs")

    # -- generic access ------------------------------------------------------------------

    def _declared(self, name: str) -> tuple[ConfigType, ConfigValue]:
        return BROKER_CONFIGS[name].type, self._values[name]

    def get(self, name: str) -> ConfigValue:
        """The parsed value of a known setting (its default when not set), untyped: for code
        that treats every setting alike. Read one setting with a typed getter instead."""
        return self._values[name]

    def is_set(self, name: str) -> bool:
        return name in self._explicit

    def source(self, name: str) -> ConfigSource:
        return (
            ConfigSource.STATIC_BROKER_CONFIG
            if name in self._explicit
            else (ConfigSource.DEFAULT_CONFIG)
        )

    # -- derived values ------------------------------------------------------------------

    @property
    def listeners(self) -> list[Listener]:
        """The client listeners: those of `listeners` not named in controller.listener.names
        (a stock KRaft file's CONTROLLER listener is the controller's, not a client port)."""
        return list(self._listeners)

    @property
    def advertised_listeners(self) -> list[Listener]:
        """As configured; may hold port 0 or an empty host: see `advertised_for`."""
        return list(self._advertised)

    def advertised_for(
        self, bound_ports: Mapping[str, int], fallback_host: str = "127.0.0.1"
    ) -> list[Listener]:
        """Advertised listeners once bound: port 0 becomes the listener's real port (by name),
        an empty or wildcard host becomes the listener's host or else `fallback_host`."""
        return bound_advertised(self._advertised, self._listeners, bound_ports, fallback_host)

    @property
    def listener_security_protocol_map(self) -> dict[str, str]:
        return dict(self._protocols)

    @property
    def log_dirs(self) -> list[Path]:
        """log.dirs if set, else log.dir (Kafka's rule)."""
        dirs = self.get_optional_list("log.dirs")
        if dirs is not None:
            return [Path(d) for d in dirs if d]
        return [Path(self.get_str("log.dir"))]

    @property
    def log_roll_ms(self) -> int:
        """log.roll.ms, else log.roll.hours in ms."""
        ms = self.get_optional_int("log.roll.ms")
        return ms if ms is not None else self.get_int("log.roll.hours") * HOUR_MS

    @property
    def log_retention_ms(self) -> int:
        """ms > minutes > hours, as Kafka; any negative value means unlimited (-1)."""
        ms = self.get_optional_int("log.retention.ms")
        if ms is None:
            minutes = self.get_optional_int("log.retention.minutes")
            ms = (
                minutes * MINUTE_MS
                if minutes is not None
                else self.get_int("log.retention.hours") * HOUR_MS
            )
        return -1 if ms < 0 else ms

    @property
    def log_flush_interval_ms(self) -> int:
        """log.flush.interval.ms, else log.flush.scheduler.interval.ms (Kafka's fallback)."""
        ms = self.get_optional_int("log.flush.interval.ms")
        return ms if ms is not None else self.get_int("log.flush.scheduler.interval.ms")

    @property
    def offsets_retention_ms(self) -> int:
        """offsets.retention.minutes in ms."""
        return self.get_int("offsets.retention.minutes") * MINUTE_MS

    # -- DescribeConfigs -----------------------------------------------------------------

    def describe(self) -> list[ConfigEntry]:
        """Every known broker setting for a DescribeConfigs BROKER resource, sorted by name."""
        entries: list[ConfigEntry] = []
        for name in sorted(BROKER_CONFIGS):
            definition = BROKER_CONFIGS[name]
            value = None if definition.sensitive else format_value(self._values[name])
            source = self.source(name)
            synonyms: list[ConfigSynonym] = []
            if source is ConfigSource.STATIC_BROKER_CONFIG:
                synonyms.append(ConfigSynonym(name, value, source))
            if definition.default is not None:
                synonyms.append(
                    ConfigSynonym(
                        name, format_value(definition.default), ConfigSource.DEFAULT_CONFIG
                    )
                )
            entries.append(
                ConfigEntry(
                    name=name,
                    value=value,
                    source=source,
                    read_only=definition.read_only,
                    sensitive=definition.sensitive,
                    type=definition.type,
                    synonyms=tuple(synonyms),
                    documentation=definition.effect.documentation,
                )
            )
        return entries

    # ------------------------------------------------------------------------------------


def load_config(
    properties_path: Path | None, overrides: Sequence[str], environ: Mapping[str, str]
) -> BrokerConfig:
    """Defaults < properties file < `ODRADEK_*` environment < `--override key=value`."""
    merged: dict[str, str] = {}
    if properties_path is not None:
        try:
            text = properties_path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"cannot read config file {properties_path}: {exc.strerror}"
            ) from None
        except UnicodeDecodeError:
            raise ConfigError(f"config file {properties_path} is not UTF-8 text") from None
        merged.update(parse_properties(text))
    merged.update(env_to_properties(environ))
    merged.update(parse_overrides(overrides))
    return BrokerConfig(merged)
