"""Topic configs: the table of every topic config (Kafka's names, types and defaults), how a
topic's overrides are checked, and its effective config (`LogConfig`: topic override >
broker synonym setting > default) with the DescribeConfigs rows for a TOPIC resource.

This is the one place topic defaults live; `LogConfig.from_overrides` builds a topic's
config from overrides alone (on the default broker settings) for tests and tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from odradek.config.broker import BROKER_CONFIGS, BrokerConfig
from odradek.config.synonyms import TOPIC_SYNONYMS, BrokerSynonym
from odradek.config.types import (
    CLEANUP_POLICIES,
    COMPRESSION_TYPES,
    HOUR_MS,
    LONG_MAX,
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
    parse_value,
)


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    """One topic config. `broker_synonyms` lists, highest priority first, the broker settings
    that give it a cluster-wide default (from `synonyms.TOPIC_SYNONYMS`)."""

    name: str
    type: ConfigType
    default: ConfigValue
    validator: Validator | None = None
    broker_synonyms: tuple[BrokerSynonym, ...] = ()
    effect: Effect = Effect.APPLIED

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD


def _t(
    name: str,
    type_: ConfigType,
    default: ConfigValue,
    validator: Validator | None = None,
    effect: Effect = Effect.APPLIED,
) -> TopicConfigDef:
    return TopicConfigDef(name, type_, default, validator, TOPIC_SYNONYMS.get(name, ()), effect)


_T = ConfigType
_NA = Effect.NOT_APPLIED
_NM = Effect.NO_MEANING

_TOPIC_DEFS: tuple[TopicConfigDef, ...] = (
    _t("cleanup.policy", _T.LIST, ("delete",), each_one_of(*CLEANUP_POLICIES)),
    _t("compression.type", _T.STRING, "producer", one_of(*COMPRESSION_TYPES)),
    _t("compression.gzip.level", _T.INT, -1, gzip_level),
    _t("compression.lz4.level", _T.INT, 9, between(1, 17)),
    _t("compression.zstd.level", _T.INT, 3, between(-131072, 22)),
    _t("delete.retention.ms", _T.LONG, 86_400_000, at_least(0)),
    _t("file.delete.delay.ms", _T.LONG, 60_000, at_least(0)),
    _t("flush.messages", _T.LONG, LONG_MAX, at_least(1)),
    _t("flush.ms", _T.LONG, LONG_MAX, at_least(0)),
    _t("follower.replication.throttled.replicas", _T.LIST, (), effect=_NM),
    _t("index.interval.bytes", _T.INT, 4096, at_least(0)),
    _t("leader.replication.throttled.replicas", _T.LIST, (), effect=_NM),
    _t("local.retention.bytes", _T.LONG, -2, at_least(-2), effect=_NA),
    _t("local.retention.ms", _T.LONG, -2, at_least(-2), effect=_NA),
    _t("max.compaction.lag.ms", _T.LONG, LONG_MAX, at_least(1)),
    _t("max.message.bytes", _T.INT, 1_048_588, at_least(0)),
    _t("message.downconversion.enable", _T.BOOLEAN, True, effect=_NA),
    _t("message.format.version", _T.STRING, "3.0-IV1", effect=_NA),
    _t("message.timestamp.after.max.ms", _T.LONG, LONG_MAX, at_least(0)),
    _t("message.timestamp.before.max.ms", _T.LONG, LONG_MAX, at_least(0)),
    _t("message.timestamp.difference.max.ms", _T.LONG, LONG_MAX, at_least(0)),
    _t("message.timestamp.type", _T.STRING, "CreateTime", one_of(*TIMESTAMP_TYPES)),
    _t("min.cleanable.dirty.ratio", _T.DOUBLE, 0.5, between(0, 1)),
    _t("min.compaction.lag.ms", _T.LONG, 0, at_least(0)),
    _t("min.insync.replicas", _T.INT, 1, at_least(1), effect=_NA),
    _t("preallocate", _T.BOOLEAN, False, effect=_NA),
    _t("remote.log.copy.disable", _T.BOOLEAN, False, effect=_NA),
    _t("remote.log.delete.on.disable", _T.BOOLEAN, False, effect=_NA),
    _t("remote.storage.enable", _T.BOOLEAN, False, effect=_NA),
    _t("retention.bytes", _T.LONG, -1),
    _t("retention.ms", _T.LONG, 7 * 24 * HOUR_MS, at_least(-1)),
    _t("segment.bytes", _T.INT, 1_073_741_824, at_least(14)),
    _t("segment.index.bytes", _T.INT, 10_485_760, at_least(4)),
    _t("segment.jitter.ms", _T.LONG, 0, at_least(0)),
    _t("segment.ms", _T.LONG, 7 * 24 * HOUR_MS, at_least(1)),
    _t("unclean.leader.election.enable", _T.BOOLEAN, False, effect=_NM),
)

TOPIC_CONFIGS: Mapping[str, TopicConfigDef] = {d.name: d for d in _TOPIC_DEFS}

# Every topic config named in the synonym table must be a topic config.
assert all(name in TOPIC_CONFIGS for name in TOPIC_SYNONYMS), "synonym of an unknown topic config"


# --------------------------------------------------------------------------- validation


def validate_topic_config(name: str, value: str | None) -> str | None:
    """Why `name=value` cannot be a topic config (an INVALID_CONFIG message), or None."""
    definition = TOPIC_CONFIGS.get(name)
    if definition is None:
        return f"Unknown topic config name: {name}"
    if value is None:
        return f"Null value not supported for topic config: {name}"
    try:
        parse_value(definition, value)
    except ConfigError as exc:
        return exc.reason
    return None


def validate_topic_configs(
    configs: Mapping[str, str | None], broker: BrokerConfig | None = None
) -> str | None:
    """Check a topic's whole set of overrides: each value, then the combinations Kafka
    rejects (min.compaction.lag.ms above max.compaction.lag.ms)."""
    for name, value in configs.items():
        reason = validate_topic_config(name, value)
        if reason is not None:
            return reason
    checked = {k: v for k, v in configs.items() if v is not None}
    resolved = resolve_topic_config(checked, broker or BrokerConfig())
    lo, hi = resolved.min_compaction_lag_ms, resolved.max_compaction_lag_ms
    if lo > hi:
        return (
            f"conflict topic config setting min.compaction.lag.ms ({lo}) > "
            f"max.compaction.lag.ms ({hi})"
        )
    return None


# --------------------------------------------------------------------------- effective config


@dataclass(frozen=True, slots=True)
class LogConfig(TypedGetters):
    """A topic's effective configuration (Kafka's LogConfig): topic override > broker setting
    > default, with where each value came from.

    Read any topic config with the typed getters (`get_int("segment.bytes")`, ...; see
    `TypedGetters`). The properties are what the storage layer reads
    (`odradek.broker.storage.config.LogSettings`) plus facts derived from cleanup.policy and
    message.timestamp.type.
    """

    values: Mapping[str, ConfigValue]
    sources: Mapping[str, ConfigSource]
    overrides: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_overrides(
        cls, overrides: Mapping[str, str] | None = None, broker: BrokerConfig | None = None
    ) -> LogConfig:
        """The effective config of a topic with these overrides (Kafka names, text values)
        over `broker` (default: the broker defaults). Unlike `resolve_topic_config`, checks
        the overrides first: an unknown name or bad value raises ConfigError."""
        given = dict(overrides or {})
        broker = broker or BrokerConfig()
        reason = validate_topic_configs(given, broker)
        if reason is not None:
            raise ConfigError(reason)
        return resolve_topic_config(given, broker)

    def _declared(self, name: str) -> tuple[ConfigType, ConfigValue]:
        return TOPIC_CONFIGS[name].type, self.values[name]

    def __getitem__(self, name: str) -> ConfigValue:
        return self.values[name]

    # -- derived from cleanup.policy and message.timestamp.type ---------------------------

    @property
    def cleanup_policy(self) -> tuple[str, ...]:
        return self.get_list("cleanup.policy")

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    # The storage layer's names for the same facts.
    compacts = compact
    deletes = delete

    @property
    def log_append_time(self) -> bool:
        return self.get_str("message.timestamp.type") == "LogAppendTime"

    # -- what the storage layer reads (LogSettings) ----------------------------------------

    @property
    def segment_bytes(self) -> int:
        return self.get_int("segment.bytes")

    @property
    def segment_ms(self) -> int:
        return self.get_int("segment.ms")

    @property
    def retention_ms(self) -> int:
        return self.get_int("retention.ms")

    @property
    def retention_bytes(self) -> int:
        return self.get_int("retention.bytes")

    @property
    def index_interval_bytes(self) -> int:
        return self.get_int("index.interval.bytes")

    @property
    def segment_index_bytes(self) -> int:
        return self.get_int("segment.index.bytes")

    @property
    def flush_messages(self) -> int:
        return self.get_int("flush.messages")

    @property
    def flush_ms(self) -> int:
        return self.get_int("flush.ms")

    @property
    def max_message_bytes(self) -> int:
        return self.get_int("max.message.bytes")

    @property
    def delete_retention_ms(self) -> int:
        return self.get_int("delete.retention.ms")

    @property
    def min_compaction_lag_ms(self) -> int:
        return self.get_int("min.compaction.lag.ms")

    @property
    def max_compaction_lag_ms(self) -> int:
        return self.get_int("max.compaction.lag.ms")

    @property
    def min_cleanable_dirty_ratio(self) -> float:
        return self.get_float("min.cleanable.dirty.ratio")

    @property
    def file_delete_delay_ms(self) -> int:
        return self.get_int("file.delete.delay.ms")

    @property
    def segment_jitter_ms(self) -> int:
        return self.get_int("segment.jitter.ms")

    # -- what the produce path reads ---------------------------------------------------------

    @property
    def compression_type(self) -> str:
        """compression.type: `producer` or a codec name (`uncompressed`, `gzip`, ...)."""
        return self.get_str("compression.type")

    @property
    def compression_level(self) -> dict[str, int]:
        """The level of each codec that has one (compression.<codec>.level)."""
        return {
            codec: self.get_int(f"compression.{codec}.level") for codec in ("gzip", "lz4", "zstd")
        }

    @property
    def timestamp_before_max_ms(self) -> int:
        """message.timestamp.before.max.ms; while that is at its default (Long.MAX),
        message.timestamp.difference.max.ms, as Kafka (the deprecated setting's fallback)."""
        before = self.get_int("message.timestamp.before.max.ms")
        return before if before != LONG_MAX else self.get_int("message.timestamp.difference.max.ms")

    @property
    def timestamp_after_max_ms(self) -> int:
        """message.timestamp.after.max.ms, with the same fallback."""
        after = self.get_int("message.timestamp.after.max.ms")
        return after if after != LONG_MAX else self.get_int("message.timestamp.difference.max.ms")


def _broker_default_for(
    definition: TopicConfigDef, broker: BrokerConfig
) -> tuple[ConfigValue, ConfigSource, BrokerSynonym | None]:
    """The first broker synonym that is set, converted to the topic config's unit."""
    for synonym in definition.broker_synonyms:
        if broker.is_set(synonym.name):
            value = broker.get(synonym.name)
            if value is None:
                continue
            if synonym.scale != 1:
                value = broker.get_int(synonym.name)
                value = value * synonym.scale if value >= 0 else -1
            return value, ConfigSource.STATIC_BROKER_CONFIG, synonym
    return definition.default, ConfigSource.DEFAULT_CONFIG, None


def resolve_topic_config(overrides: Mapping[str, str], broker: BrokerConfig) -> LogConfig:
    """Effective config of a topic with these overrides. Unknown override names are ignored
    (validate first with `validate_topic_configs`); a bad value raises ConfigError."""
    values: dict[str, ConfigValue] = {}
    sources: dict[str, ConfigSource] = {}
    for name, definition in TOPIC_CONFIGS.items():
        if name in overrides:
            values[name] = parse_value(definition, overrides[name])
            sources[name] = ConfigSource.DYNAMIC_TOPIC_CONFIG
        else:
            values[name], sources[name], _ = _broker_default_for(definition, broker)
    known = {k: v for k, v in overrides.items() if k in TOPIC_CONFIGS}
    return LogConfig(values, sources, known)


# --------------------------------------------------------------------------- DescribeConfigs


def describe_topic_config(
    overrides: Mapping[str, str], broker: BrokerConfig, include_synonyms: bool = True
) -> list[ConfigEntry]:
    """DescribeConfigs rows for a TOPIC resource, one per topic config, sorted by name.

    Synonyms, as Kafka lists them: the topic override (source 1), each broker synonym that is
    set (source 4, in its own unit), then the default (source 5, under the broker name that
    carries it when there is one)."""
    resolved = resolve_topic_config(overrides, broker)
    entries: list[ConfigEntry] = []
    for name in sorted(TOPIC_CONFIGS):
        definition = TOPIC_CONFIGS[name]
        value = None if definition.sensitive else format_value(resolved.values[name])
        synonyms: list[ConfigSynonym] = []
        if include_synonyms:
            if name in overrides:
                synonyms.append(ConfigSynonym(name, value, ConfigSource.DYNAMIC_TOPIC_CONFIG))
            for synonym in definition.broker_synonyms:
                if broker.is_set(synonym.name):
                    synonyms.append(
                        ConfigSynonym(
                            synonym.name,
                            format_value(broker.get(synonym.name)),
                            ConfigSource.STATIC_BROKER_CONFIG,
                        )
                    )
            carrier = next(
                (
                    s.name
                    for s in definition.broker_synonyms
                    if BROKER_CONFIGS[s.name].default is not None
                ),
                None,
            )
            if carrier is not None:
                synonyms.append(
                    ConfigSynonym(
                        carrier,
                        format_value(BROKER_CONFIGS[carrier].default),
                        ConfigSource.DEFAULT_CONFIG,
                    )
                )
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=resolved.sources[name],
                read_only=False,
                sensitive=definition.sensitive,
                type=definition.type,
                synonyms=tuple(synonyms),
                documentation=definition.effect.documentation,
            )
        )
    return entries
