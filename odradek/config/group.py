"""Group configs (KIP-848, KIP-932, KIP-1071): the GROUP resource of DescribeConfigs and
(Incremental)AlterConfigs, as a Kafka 4.4 broker serves it.

The table is Kafka 4.4's GroupConfig ConfigDef (names, types, defaults, validators, and the
broker setting each one defaults from), read from the kafka 4.4.0 jars. A group's value is
its own override, else the broker setting it is a synonym of, else the default. Overrides
are checked as Kafka checks them: the ConfigDef validator first ("Invalid value ... for
configuration ..."), then the bounds the broker's group.*.min/max.* settings put on them
("... must be in the range A to B inclusive.", "... must be less than or equal to N"). APPEND
and SUBTRACT are refused for every group config, LIST ones included, as Kafka 4.4 does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from odradek.config.broker import BrokerConfig
from odradek.config.types import (
    ConfigEntry,
    ConfigError,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    ConfigValue,
    Validator,
    at_least,
    format_value,
    one_of,
    parse_value,
)


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    name: str
    type: ConfigType
    default: ConfigValue
    validator: Validator | None = None
    broker_synonym: str | None = None  # the broker setting the group value defaults from
    # the broker settings bounding an override: (min setting or None, max setting or None)
    bounds: tuple[str | None, str | None] = (None, None)

    @property
    def sensitive(self) -> bool:
        return False


def _def(name: str, type_: ConfigType, default: ConfigValue, validator: Validator | None = None,
         synonym: bool = True, bounds: tuple[str | None, str | None] = (None, None),
         synonym_name: str | None = None) -> GroupConfigDef:
    return GroupConfigDef(name, type_, default, validator,
                          synonym_name or (f"group.{name}" if synonym else None), bounds)


def _range(kind: str, what: str) -> tuple[str, str]:
    return f"group.{kind}.min.{what}", f"group.{kind}.max.{what}"


_INT, _BOOL, _STR, _LONG, _LIST = (ConfigType.INT, ConfigType.BOOLEAN, ConfigType.STRING,
                                   ConfigType.LONG, ConfigType.LIST)

GROUP_CONFIGS: Mapping[str, GroupConfigDef] = {d.name: d for d in (
    _def("consumer.session.timeout.ms", _INT, 45000, at_least(1),
         bounds=_range("consumer", "session.timeout.ms")),
    _def("consumer.heartbeat.interval.ms", _INT, 5000, at_least(1),
         bounds=_range("consumer", "heartbeat.interval.ms")),
    _def("consumer.assignment.interval.ms", _INT, 1000, at_least(0),
         bounds=_range("consumer", "assignment.interval.ms")),
    _def("consumer.assignor.offload.enable", _BOOL, True),
    _def("share.session.timeout.ms", _INT, 45000, at_least(1),
         bounds=_range("share", "session.timeout.ms")),
    _def("share.heartbeat.interval.ms", _INT, 5000, at_least(1),
         bounds=_range("share", "heartbeat.interval.ms")),
    _def("share.record.lock.duration.ms", _INT, 30000, at_least(1000),
         bounds=_range("share", "record.lock.duration.ms")),
    _def("share.delivery.count.limit", _INT, 5, at_least(2),
         bounds=_range("share", "delivery.count.limit")),
    _def("share.partition.max.record.locks", _INT, 2000, at_least(100),
         bounds=_range("share", "partition.max.record.locks")),
    # checked by the caller's `value_checks` (the parser lives with the share coordinator)
    _def("share.auto.offset.reset", _STR, "latest", synonym=False),
    _def("share.isolation.level", _STR, "read_uncommitted",
         one_of("read_committed", "read_uncommitted"), synonym=False),
    _def("share.renew.acknowledge.enable", _BOOL, True, synonym=False),
    _def("share.assignment.interval.ms", _INT, 1000, at_least(0),
         bounds=_range("share", "assignment.interval.ms")),
    _def("share.assignor.offload.enable", _BOOL, True),
    _def("streams.session.timeout.ms", _INT, 45000, at_least(1),
         bounds=_range("streams", "session.timeout.ms")),
    _def("streams.heartbeat.interval.ms", _INT, 5000, at_least(1),
         bounds=_range("streams", "heartbeat.interval.ms")),
    _def("streams.num.standby.replicas", _INT, 0, at_least(0),
         bounds=(None, "group.streams.max.standby.replicas")),
    _def("streams.initial.rebalance.delay.ms", _INT, 3000, at_least(0)),
    _def("streams.assignment.interval.ms", _INT, 1000, at_least(0),
         bounds=_range("streams", "assignment.interval.ms")),
    _def("streams.assignor.offload.enable", _BOOL, True),
    _def("streams.task.offset.interval.ms", _INT, 60000, at_least(1),
         bounds=("group.streams.min.task.offset.interval.ms", None)),
    _def("streams.num.warmup.replicas", _INT, 2, at_least(0),
         bounds=(None, "group.streams.max.warmup.replicas")),
    _def("streams.rack.aware.assignment.tags", _LIST, ()),
    _def("streams.acceptable.recovery.lag", _LONG, 10000, at_least(0)),
    _def("streams.assignor.name", _STR, None, synonym_name="group.streams.assignors"),
    _def("errors.deadletterqueue.topic.name", _STR, "", synonym=False),
    _def("errors.deadletterqueue.copy.record.enable", _BOOL, False, synonym=False),
)}

# What Kafka 4.4's DescribeConfigs lists for a group (the two hidden ones are internal there).
DESCRIBED = tuple(n for n in GROUP_CONFIGS if n not in (
    "consumer.assignor.offload.enable", "share.assignor.offload.enable",
    "streams.assignor.offload.enable", "streams.task.offset.interval.ms",
    "streams.num.warmup.replicas", "streams.acceptable.recovery.lag"))
STREAMS_ASSIGNORS = ("sticky",)


def _broker_value(definition: GroupConfigDef, broker: BrokerConfig) -> ConfigValue:
    if definition.broker_synonym is None:
        return definition.default
    value = broker.get(definition.broker_synonym)
    if definition.type is not ConfigType.LIST and isinstance(value, tuple):
        return value[0] if value else None  # group.streams.assignors: the first is used
    return value


def check_overrides(overrides: Mapping[str, str], broker: BrokerConfig,
                    value_checks: Mapping[str, Callable[[str], str | None]] | None = None) -> None:
    """Raises ConfigError (Kafka's message) unless every override is a valid group config.
    `value_checks` adds a check by name (it returns why a value is invalid, or None)."""
    for name, text in overrides.items():
        definition = GROUP_CONFIGS.get(name)
        if definition is None:
            raise ConfigError(f"Unknown group config name: {name}", name)
        value = parse_value(definition, text)
        check = (value_checks or {}).get(name)
        reason = check(text) if check is not None else None
        if reason is not None:
            raise ConfigError(f"Invalid value {text} for configuration {name}: {reason}", name)
        if name == "streams.assignor.name" and value not in (None, *STREAMS_ASSIGNORS):
            raise ConfigError(
                f"{name} '{value}' is not a registered task assignor. Registered assignors "
                f"are: [{', '.join(STREAMS_ASSIGNORS)}].", name)
        _check_bounds(definition, value, broker)


def _check_bounds(definition: GroupConfigDef, value: ConfigValue, broker: BrokerConfig) -> None:
    low_key, high_key = definition.bounds
    if not isinstance(value, int) or (low_key is None and high_key is None):
        return
    name = definition.name
    low = broker.get_int(low_key) if low_key else None
    high = broker.get_int(high_key) if high_key else None
    if low is not None and high is not None:
        if not low <= value <= high:
            raise ConfigError(f"{name} must be in the range {low} to {high} inclusive.", name)
    elif high is not None and value > high:
        raise ConfigError(f"{name} must be less than or equal to {high}", name)
    elif low is not None and value < low:
        raise ConfigError(f"{name} must be greater than or equal to {low}", name)


def effective(overrides: Mapping[str, str], broker: BrokerConfig) -> dict[str, ConfigValue]:
    """Every group config's value for a group with `overrides` (checked ones)."""
    out: dict[str, ConfigValue] = {}
    for name, definition in GROUP_CONFIGS.items():
        text = overrides.get(name)
        out[name] = (parse_value(definition, text) if text is not None
                     else _broker_value(definition, broker))
    return out


def describe_group_config(overrides: Mapping[str, str], broker: BrokerConfig,
                          include_synonyms: bool) -> list[ConfigEntry]:
    """DescribeConfigs rows of a GROUP resource, as Kafka 4.4: a value's source is the group
    override (8), the broker setting when set (4, or a dynamic source), else the default; the
    synonyms are the override, then the broker setting (or the config itself) at its default."""
    rows: list[ConfigEntry] = []
    for name in DESCRIBED:
        definition = GROUP_CONFIGS[name]
        text = overrides.get(name)
        synonym_name = definition.broker_synonym or name
        base = (ConfigSynonym(synonym_name, format_value(definition.default)
                              if definition.broker_synonym is None
                              else format_value(_default_of(definition)),
                              ConfigSource.DEFAULT_CONFIG),)
        synonyms: tuple[ConfigSynonym, ...]
        if text is not None:
            value: str | None = format_value(parse_value(definition, text))
            source = ConfigSource.GROUP_CONFIG
            synonyms = (ConfigSynonym(name, value, source), *base)
        else:
            value = format_value(_broker_value(definition, broker))
            source = (broker.source(definition.broker_synonym) if definition.broker_synonym
                      else ConfigSource.DEFAULT_CONFIG)
            synonyms = base
        rows.append(ConfigEntry(name, value, source, False, False, definition.type,
                                synonyms if include_synonyms else ()))
    return rows


def _default_of(definition: GroupConfigDef) -> ConfigValue:
    from odradek.config.broker import BROKER_CONFIGS

    assert definition.broker_synonym is not None
    default = BROKER_CONFIGS[definition.broker_synonym].default
    if definition.type is not ConfigType.LIST and isinstance(default, tuple):
        return default[0] if default else None
    return default
