"""Topic configs: the table of every topic config (Kafka's names, types and defaults), how a
topic's overrides are checked, and its effective config (`LogConfig`: topic override >
broker synonym setting > default) with the DescribeConfigs rows for a TOPIC resource.

This is the one place topic defaults live; `LogConfig.from_overrides` builds a topic's
config from overrides alone (on the default broker settings) for tests and tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from odradek.config import _kafka, decisions
from odradek.config.broker import BrokerConfig
from odradek.config.synonyms import TOPIC_SYNONYMS, BrokerSynonym
from odradek.config.types import (
    ConfigEntry,
    ConfigError,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    ConfigValue,
    Effect,
    TypedGetters,
    Validator,
    format_value,
    parse_value,
    validator_from_spec,
)


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    """One topic config. `broker_synonyms` lists, highest priority first, the broker settings
    that give it a cluster-wide default (from `synonyms.TOPIC_SYNONYMS`); `effect` and `why`
    its decision (`decisions.TOPIC`); `internal` ones are accepted but never described."""

    name: str
    type: ConfigType
    default: ConfigValue
    validator: Validator | None = None
    broker_synonyms: tuple[BrokerSynonym, ...] = ()
    effect: Effect = Effect.IMPLEMENTED
    why: str = ""
    internal: bool = False

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD


def _topic_table() -> dict[str, TopicConfigDef]:
    table: dict[str, TopicConfigDef] = {}
    for name, type_name, internal, default, spec in _kafka.TOPIC:
        decision = decisions.TOPIC.get(name, (Effect.NOT_SUPPORTED_STOP, "no decision yet"))
        effect, why = decision if isinstance(decision, tuple) else (decision, "")
        table[name] = TopicConfigDef(
            name, ConfigType[type_name], default, validator_from_spec(name, spec),
            TOPIC_SYNONYMS.get(name, ()), effect, why, internal)
    return table


TOPIC_CONFIGS: Mapping[str, TopicConfigDef] = _topic_table()

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
        parsed = parse_value(definition, value)
    except ConfigError as exc:
        return exc.reason
    if not definition.effect.supported and parsed != definition.default:
        # Never stored and silently ignored: refused, naming the setting (issue #18).
        return (
            f"Invalid value {value} for configuration {name}: not supported by Odradek yet "
            f"({definition.why}); only its default {format_value(definition.default)} is accepted"
        )
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
        """segment.bytes, or internal.segment.bytes when set: Kafka's internal setting for
        segments below segment.bytes' 1 MiB floor (tests), never described."""
        internal = self.get_optional_int("internal.segment.bytes")
        return internal if internal is not None else self.get_int("segment.bytes")

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
    def min_insync_replicas(self) -> int:
        return self.get_int("min.insync.replicas")

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
        """message.timestamp.before.max.ms (Kafka 4.0 removed the difference.max.ms fallback)."""
        return self.get_int("message.timestamp.before.max.ms")

    @property
    def timestamp_after_max_ms(self) -> int:
        """message.timestamp.after.max.ms: one hour by default since Kafka 4.0 (KIP-1030)."""
        return self.get_int("message.timestamp.after.max.ms")


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
            return value, broker.source(synonym.name), synonym
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

    Synonyms, as Kafka 4.4 lists them: the topic override (source 1), then the main broker
    synonym's values: per-broker (2), cluster default (3), server.properties (4) and its
    default (5) when not null."""
    resolved = resolve_topic_config(overrides, broker)
    entries: list[ConfigEntry] = []
    for name in sorted(TOPIC_CONFIGS):
        definition = TOPIC_CONFIGS[name]
        if definition.internal:
            continue
        value = None if definition.sensitive else format_value(resolved.values[name])
        synonyms: list[ConfigSynonym] = []
        if include_synonyms:
            if name in overrides:
                synonyms.append(ConfigSynonym(name, value, ConfigSource.DYNAMIC_TOPIC_CONFIG))
            # Kafka lists only the first (main) broker synonym: its dynamic and static values
            # if set, then its default if it has one (so retention.ms, whose log.retention.ms
            # defaults to null, lists none unless it is set).
            if definition.broker_synonyms:
                main = definition.broker_synonyms[0].name
                synonyms.extend(ConfigSynonym(main, text, level)
                                for text, level in broker.layers(main))
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
