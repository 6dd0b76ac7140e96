"""Kafka-named settings: broker configuration, topic configuration, and how they combine.

Everything here is sans-IO except `load_config`, the one function that reads a file. Names,
types and defaults follow Apache Kafka (3.9 line) so that `server.properties` files, admin
tools and DescribeConfigs answers look the same; where Odradek's single-node defaults differ
from Kafka's, the table says so in a comment.

Precedence when loading: built-in defaults < properties file < environment (`ODRADEK_` + the
name upper-cased with dots as underscores, e.g. `ODRADEK_LOG_DIRS`) < `--override key=value`.

Java properties text (`parse_properties`) is parsed as `java.util.Properties.load` does:
- natural lines end in LF, CR or CRLF; a line whose first non-blank character is `#` or `!` is
  a comment; blank lines are skipped;
- a logical line continues onto the next natural line when it ends in an odd number of
  backslashes; leading blanks of the continuation are dropped;
- the key runs to the first unescaped `=`, `:` or blank; blanks, then at most one `=`/`:`, then
  blanks separate it from the value, which runs to the end of the logical line;
- escapes in keys and values: `\\t \\n \\r \\f`, `\\uXXXX` (exactly four hex digits), and `\\c`
  for any other character c. Text is read as UTF-8 (Java's `load(InputStream)` uses Latin-1;
  UTF-8 is a superset for ASCII files and what people write today).
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "BROKER_CONFIGS",
    "ENV_PREFIX",
    "TOPIC_CONFIGS",
    "BrokerConfig",
    "BrokerSynonym",
    "ConfigDef",
    "ConfigEntry",
    "ConfigError",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "ConfigValue",
    "Listener",
    "LogConfig",
    "TopicConfigDef",
    "describe_topic_config",
    "env_to_properties",
    "format_value",
    "load_config",
    "parse_listeners",
    "parse_overrides",
    "parse_properties",
    "parse_value",
    "resolve_topic_config",
    "validate_topic_config",
    "validate_topic_configs",
]

ENV_PREFIX = "ODRADEK_"

INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)
SHORT_MAX = 2**15 - 1
SHORT_MIN = -(2**15)

_HOUR_MS = 3_600_000
_MINUTE_MS = 60_000


class ConfigError(ValueError):
    """A setting that cannot be used; `key` names it (None for file-level problems)."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key
        self.reason = message


class ConfigType(enum.IntEnum):
    """Config value types, numbered as DescribeConfigs v3+ `ConfigType` ids."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """Where a value came from, numbered as DescribeConfigs v1+ `ConfigSource` ids."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


# Parsed values: lists are tuples so a parsed config can be shared without copying.
ConfigValue = bool | int | float | str | tuple[str, ...] | None

# A validator gets a parsed, non-None value and returns why it is invalid, or None.
Validator = Callable[[ConfigValue], str | None]


# --------------------------------------------------------------------------- validators


def at_least(minimum: int | float) -> Validator:
    def check(value: ConfigValue) -> str | None:
        assert isinstance(value, int | float)
        return f"Value must be at least {minimum}" if value < minimum else None

    return check


def between(minimum: int | float, maximum: int | float) -> Validator:
    def check(value: ConfigValue) -> str | None:
        assert isinstance(value, int | float)
        if value < minimum:
            return f"Value must be at least {minimum}"
        if value > maximum:
            return f"Value must be no more than {maximum}"
        return None

    return check


def one_of(*options: str) -> Validator:
    def check(value: ConfigValue) -> str | None:
        if value not in options:
            return f"String must be one of: {', '.join(options)}"
        return None

    return check


def each_one_of(*options: str) -> Validator:
    def check(value: ConfigValue) -> str | None:
        assert isinstance(value, tuple)
        for item in value:
            if item not in options:
                return f"Invalid value {item} in list; allowed: {', '.join(options)}"
        return None

    return check


def _gzip_level(value: ConfigValue) -> str | None:
    # Kafka: 1..9, or -1 for zlib's default.
    assert isinstance(value, int)
    if value != -1 and not 1 <= value <= 9:
        return "Value must be between 1 and 9 or equal to -1"
    return None


COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


# --------------------------------------------------------------------------- definitions


@dataclass(frozen=True, slots=True)
class BrokerSynonym:
    """A broker setting that supplies a topic config's default; `scale` converts its unit to
    the topic config's (e.g. hours -> ms)."""

    name: str
    scale: int = 1


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One broker setting. `default` is the parsed default (None: unset/null).

    `dynamic` marks settings Kafka lets AlterConfigs change on a running broker (informative:
    DescribeConfigs reports the others as read-only). `topic_synonym` is the topic config this
    broker setting is the default for, if any.
    """

    name: str
    type: ConfigType
    default: ConfigValue
    validator: Validator | None = None
    dynamic: bool = False
    topic_synonym: str | None = None

    @property
    def read_only(self) -> bool:
        return not self.dynamic

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    """One topic config. `broker_synonyms` lists, highest priority first, the broker settings
    that give it a cluster-wide default (Kafka's ServerTopicConfigSynonyms)."""

    name: str
    type: ConfigType
    default: ConfigValue
    validator: Validator | None = None
    broker_synonyms: tuple[BrokerSynonym, ...] = ()

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD


def _syn(*names: str | tuple[str, int]) -> tuple[BrokerSynonym, ...]:
    return tuple(BrokerSynonym(n) if isinstance(n, str) else BrokerSynonym(*n) for n in names)


_T = ConfigType

_TOPIC_DEFS: tuple[TopicConfigDef, ...] = (
    TopicConfigDef(
        "cleanup.policy",
        _T.LIST,
        ("delete",),
        each_one_of(*CLEANUP_POLICIES),
        _syn("log.cleanup.policy"),
    ),
    TopicConfigDef(
        "compression.type",
        _T.STRING,
        "producer",
        one_of(*COMPRESSION_TYPES),
        _syn("compression.type"),
    ),
    TopicConfigDef(
        "compression.gzip.level", _T.INT, -1, _gzip_level, _syn("compression.gzip.level")
    ),
    TopicConfigDef(
        "compression.lz4.level", _T.INT, 9, between(1, 17), _syn("compression.lz4.level")
    ),
    TopicConfigDef(
        "compression.zstd.level", _T.INT, 3, between(-131072, 22), _syn("compression.zstd.level")
    ),
    TopicConfigDef(
        "delete.retention.ms",
        _T.LONG,
        86_400_000,
        at_least(0),
        _syn("log.cleaner.delete.retention.ms"),
    ),
    TopicConfigDef(
        "file.delete.delay.ms", _T.LONG, 60_000, at_least(0), _syn("log.segment.delete.delay.ms")
    ),
    TopicConfigDef(
        "flush.messages", _T.LONG, LONG_MAX, at_least(1), _syn("log.flush.interval.messages")
    ),
    TopicConfigDef(
        "flush.ms",
        _T.LONG,
        LONG_MAX,
        at_least(0),
        _syn("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    ),
    TopicConfigDef("follower.replication.throttled.replicas", _T.LIST, ()),
    TopicConfigDef(
        "index.interval.bytes", _T.INT, 4096, at_least(0), _syn("log.index.interval.bytes")
    ),
    TopicConfigDef("leader.replication.throttled.replicas", _T.LIST, ()),
    TopicConfigDef(
        "local.retention.bytes", _T.LONG, -2, at_least(-2), _syn("log.local.retention.bytes")
    ),
    TopicConfigDef("local.retention.ms", _T.LONG, -2, at_least(-2), _syn("log.local.retention.ms")),
    TopicConfigDef(
        "max.compaction.lag.ms",
        _T.LONG,
        LONG_MAX,
        at_least(1),
        _syn("log.cleaner.max.compaction.lag.ms"),
    ),
    TopicConfigDef("max.message.bytes", _T.INT, 1_048_588, at_least(0), _syn("message.max.bytes")),
    TopicConfigDef(
        "message.downconversion.enable",
        _T.BOOLEAN,
        True,
        None,
        _syn("log.message.downconversion.enable"),
    ),
    TopicConfigDef(
        "message.format.version", _T.STRING, "3.0-IV1", None, _syn("log.message.format.version")
    ),
    TopicConfigDef(
        "message.timestamp.after.max.ms",
        _T.LONG,
        LONG_MAX,
        at_least(0),
        _syn("log.message.timestamp.after.max.ms"),
    ),
    TopicConfigDef(
        "message.timestamp.before.max.ms",
        _T.LONG,
        LONG_MAX,
        at_least(0),
        _syn("log.message.timestamp.before.max.ms"),
    ),
    TopicConfigDef(
        "message.timestamp.difference.max.ms",
        _T.LONG,
        LONG_MAX,
        at_least(0),
        _syn("log.message.timestamp.difference.max.ms"),
    ),
    TopicConfigDef(
        "message.timestamp.type",
        _T.STRING,
        "CreateTime",
        one_of(*TIMESTAMP_TYPES),
        _syn("log.message.timestamp.type"),
    ),
    TopicConfigDef(
        "min.cleanable.dirty.ratio",
        _T.DOUBLE,
        0.5,
        between(0, 1),
        _syn("log.cleaner.min.cleanable.ratio"),
    ),
    TopicConfigDef(
        "min.compaction.lag.ms", _T.LONG, 0, at_least(0), _syn("log.cleaner.min.compaction.lag.ms")
    ),
    TopicConfigDef("min.insync.replicas", _T.INT, 1, at_least(1), _syn("min.insync.replicas")),
    TopicConfigDef("preallocate", _T.BOOLEAN, False, None, _syn("log.preallocate")),
    TopicConfigDef("remote.log.copy.disable", _T.BOOLEAN, False),
    TopicConfigDef("remote.log.delete.on.disable", _T.BOOLEAN, False),
    TopicConfigDef("remote.storage.enable", _T.BOOLEAN, False),
    TopicConfigDef("retention.bytes", _T.LONG, -1, None, _syn("log.retention.bytes")),
    TopicConfigDef(
        "retention.ms",
        _T.LONG,
        7 * 24 * _HOUR_MS,
        at_least(-1),
        _syn(
            "log.retention.ms",
            ("log.retention.minutes", _MINUTE_MS),
            ("log.retention.hours", _HOUR_MS),
        ),
    ),
    TopicConfigDef("segment.bytes", _T.INT, 1_073_741_824, at_least(14), _syn("log.segment.bytes")),
    TopicConfigDef(
        "segment.index.bytes", _T.INT, 10_485_760, at_least(4), _syn("log.index.size.max.bytes")
    ),
    TopicConfigDef(
        "segment.jitter.ms",
        _T.LONG,
        0,
        at_least(0),
        _syn("log.roll.jitter.ms", ("log.roll.jitter.hours", _HOUR_MS)),
    ),
    TopicConfigDef(
        "segment.ms",
        _T.LONG,
        7 * 24 * _HOUR_MS,
        at_least(1),
        _syn("log.roll.ms", ("log.roll.hours", _HOUR_MS)),
    ),
    TopicConfigDef(
        "unclean.leader.election.enable",
        _T.BOOLEAN,
        False,
        None,
        _syn("unclean.leader.election.enable"),
    ),
)

TOPIC_CONFIGS: Mapping[str, TopicConfigDef] = {d.name: d for d in _TOPIC_DEFS}

_TOPIC_SYNONYM_OF: dict[str, str] = {s.name: d.name for d in _TOPIC_DEFS for s in d.broker_synonyms}


def _b(
    name: str,
    type_: ConfigType,
    default: ConfigValue,
    validator: Validator | None = None,
    *,
    dynamic: bool | None = None,
) -> ConfigDef:
    # Kafka lets AlterConfigs change the topic-default settings at run time.
    topic = _TOPIC_SYNONYM_OF.get(name)
    return ConfigDef(
        name,
        type_,
        default,
        validator,
        dynamic=(topic is not None) if dynamic is None else dynamic,
        topic_synonym=topic,
    )


_BROKER_DEFS: tuple[ConfigDef, ...] = (
    # Identity and listeners. Kafka's node.id has no default (KRaft requires it); a single
    # node broker can simply be 1. broker.id is Kafka's older name for the same thing.
    _b("node.id", _T.INT, 1, at_least(0)),
    _b("broker.id", _T.INT, 1, at_least(0)),
    _b("broker.rack", _T.STRING, None),
    # Kafka's default binds every interface ("PLAINTEXT://:9092"); ours stays on loopback.
    _b("listeners", _T.LIST, ("PLAINTEXT://127.0.0.1:9092",)),
    _b("advertised.listeners", _T.LIST, None),
    _b("listener.security.protocol.map", _T.LIST, tuple(f"{p}:{p}" for p in SECURITY_PROTOCOLS)),
    _b("unstable.api.versions.enable", _T.BOOLEAN, False),
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
    _b("log.flush.offset.checkpoint.interval.ms", _T.INT, 60_000, at_least(0)),
    _b("log.segment.delete.delay.ms", _T.LONG, 60_000, at_least(0)),
    _b("log.preallocate", _T.BOOLEAN, False),
    _b("log.message.format.version", _T.STRING, "3.0-IV1"),
    _b("log.message.timestamp.type", _T.STRING, "CreateTime", one_of(*TIMESTAMP_TYPES)),
    _b("log.message.timestamp.difference.max.ms", _T.LONG, LONG_MAX, at_least(0)),
    _b("log.message.timestamp.before.max.ms", _T.LONG, LONG_MAX, at_least(0)),
    _b("log.message.timestamp.after.max.ms", _T.LONG, LONG_MAX, at_least(0)),
    _b("log.message.downconversion.enable", _T.BOOLEAN, True),
    _b("log.local.retention.ms", _T.LONG, -2, at_least(-2)),
    _b("log.local.retention.bytes", _T.LONG, -2, at_least(-2)),
    _b("log.cleaner.enable", _T.BOOLEAN, True),
    _b("log.cleaner.backoff.ms", _T.LONG, 15_000, at_least(0), dynamic=True),
    _b("log.cleaner.delete.retention.ms", _T.LONG, 86_400_000, at_least(0)),
    _b("log.cleaner.min.compaction.lag.ms", _T.LONG, 0, at_least(0)),
    _b("log.cleaner.max.compaction.lag.ms", _T.LONG, LONG_MAX, at_least(1)),
    _b("log.cleaner.min.cleanable.ratio", _T.DOUBLE, 0.5, between(0, 1)),
    _b("log.cleaner.threads", _T.INT, 1, at_least(0), dynamic=True),
    _b("log.cleaner.dedupe.buffer.size", _T.LONG, 134_217_728, dynamic=True),
    _b("log.cleaner.io.buffer.size", _T.INT, 524_288, at_least(0), dynamic=True),
    _b("log.cleaner.io.buffer.load.factor", _T.DOUBLE, 0.9, dynamic=True),
    _b("log.cleaner.io.max.bytes.per.second", _T.DOUBLE, 1.7976931348623157e308, dynamic=True),
    _b("min.insync.replicas", _T.INT, 1, at_least(1)),
    _b("unclean.leader.election.enable", _T.BOOLEAN, False),
    _b("compression.type", _T.STRING, "producer", one_of(*COMPRESSION_TYPES)),
    _b("compression.gzip.level", _T.INT, -1, _gzip_level),
    _b("compression.lz4.level", _T.INT, 9, between(1, 17)),
    _b("compression.zstd.level", _T.INT, 3, between(-131072, 22)),
    # Requests and connections.
    _b("message.max.bytes", _T.INT, 1_048_588, at_least(0)),
    _b("socket.request.max.bytes", _T.INT, 104_857_600, at_least(1)),
    _b("socket.send.buffer.bytes", _T.INT, 102_400),
    _b("socket.receive.buffer.bytes", _T.INT, 102_400),
    _b("socket.listen.backlog.size", _T.INT, 50, at_least(1)),
    _b("max.connections", _T.INT, INT_MAX, at_least(0), dynamic=True),
    _b("max.connections.per.ip", _T.INT, INT_MAX, at_least(0), dynamic=True),
    _b("connections.max.idle.ms", _T.LONG, 600_000),
    _b("fetch.max.bytes", _T.INT, 57_671_680, at_least(1024)),
    _b("max.incremental.fetch.session.cache.slots", _T.INT, 1000, at_least(0)),
    # Group coordinator. Kafka's replication factors for the internal topics default to 3,
    # which a single node cannot satisfy; ours default to 1.
    _b("offsets.topic.num.partitions", _T.INT, 50, at_least(1)),
    _b("offsets.topic.replication.factor", _T.SHORT, 1, at_least(1)),
    _b("offsets.topic.segment.bytes", _T.INT, 104_857_600, at_least(1)),
    _b("offsets.retention.minutes", _T.INT, 10_080, at_least(1)),
    _b("offsets.retention.check.interval.ms", _T.LONG, 600_000, at_least(1)),
    _b("offsets.commit.timeout.ms", _T.INT, 5000, at_least(1)),
    _b("offset.metadata.max.bytes", _T.INT, 4096),
    _b("group.initial.rebalance.delay.ms", _T.INT, 3000),
    _b("group.min.session.timeout.ms", _T.INT, 6000),
    _b("group.max.session.timeout.ms", _T.INT, 1_800_000),
    _b("group.max.size", _T.INT, INT_MAX, at_least(1)),
    # Transactions and producer ids.
    _b("transaction.max.timeout.ms", _T.INT, 900_000, at_least(1)),
    _b("transactional.id.expiration.ms", _T.INT, 604_800_000, at_least(1)),
    _b("transaction.state.log.num.partitions", _T.INT, 50, at_least(1)),
    _b("transaction.state.log.replication.factor", _T.SHORT, 1, at_least(1)),
    _b("transaction.state.log.min.isr", _T.INT, 1, at_least(1)),
    _b("transaction.state.log.segment.bytes", _T.INT, 104_857_600, at_least(1)),
    _b("transaction.abort.timed.out.transaction.cleanup.interval.ms", _T.INT, 10_000, at_least(1)),
    _b(
        "transaction.remove.expired.transaction.cleanup.interval.ms", _T.INT, 3_600_000, at_least(1)
    ),
    _b("producer.id.expiration.ms", _T.INT, 86_400_000, at_least(1)),
    _b("producer.id.expiration.check.interval.ms", _T.INT, 600_000, at_least(1)),
)

BROKER_CONFIGS: Mapping[str, ConfigDef] = {d.name: d for d in _BROKER_DEFS}

# Every broker synonym named by a topic config must be a broker setting.
assert all(s in BROKER_CONFIGS for s in _TOPIC_SYNONYM_OF), "topic synonym missing"


# --------------------------------------------------------------------------- value parsing

_INT_RE = re.compile(r"[+-]?[0-9]+")
_DOUBLE_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[dDfF]?")
_LIST_SPLIT = re.compile(r"\s*,\s*")
_RANGES = {
    ConfigType.SHORT: (SHORT_MIN, SHORT_MAX),
    ConfigType.INT: (INT_MIN, INT_MAX),
    ConfigType.LONG: (LONG_MIN, LONG_MAX),
}


def _parse_typed(type_: ConfigType, text: str) -> ConfigValue:
    """Kafka's ConfigDef.parseType: trims, then converts; raises ValueError with the reason."""
    if type_ is ConfigType.PASSWORD:
        return text
    trimmed = text.strip()
    if type_ is ConfigType.BOOLEAN:
        low = trimmed.lower()
        if low not in ("true", "false"):
            raise ValueError("Expected value to be either true or false")
        return low == "true"
    if type_ in _RANGES:
        lo, hi = _RANGES[type_]
        if not _INT_RE.fullmatch(trimmed) or not lo <= int(trimmed) <= hi:
            raise ValueError(f"Not a number of type {type_.name}")
        return int(trimmed)
    if type_ is ConfigType.DOUBLE:
        if not _DOUBLE_RE.fullmatch(trimmed):
            raise ValueError("Not a number of type DOUBLE")
        return float(trimmed.rstrip("dDfF"))
    if type_ is ConfigType.LIST:
        return tuple(_LIST_SPLIT.split(trimmed)) if trimmed else ()
    return trimmed  # STRING, CLASS


def parse_value(definition: ConfigDef | TopicConfigDef, text: str) -> ConfigValue:
    """Parse and validate `text` for `definition`; raises ConfigError (with Kafka's wording)."""
    try:
        value = _parse_typed(definition.type, text)
    except ValueError as exc:
        raise ConfigError(_invalid(definition, text, str(exc)), definition.name) from None
    if definition.validator is not None:
        reason = definition.validator(value)
        if reason is not None:
            raise ConfigError(_invalid(definition, text, reason), definition.name)
    return value


def _invalid(definition: ConfigDef | TopicConfigDef, text: str, reason: str) -> str:
    shown = "[hidden]" if definition.sensitive else text
    return f"Invalid value {shown} for configuration {definition.name}: {reason}"


def format_value(value: ConfigValue) -> str | None:
    """Render a parsed value as Kafka's ConfigDef.convertToString does."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 1e7:
            return f"{value:.1f}"
        return repr(value)
    return str(value)


# --------------------------------------------------------------------------- properties text


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str, lineno: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(f"line {lineno}: malformed \\uxxxx escape")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    """Join continued lines; yields (first line number, logical line) minus comments/blanks."""
    natural = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(natural):
        start = i
        line = natural[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        parts: list[str] = []
        while True:
            trailing = len(line) - len(line.rstrip("\\"))
            if trailing % 2 == 1:  # an unescaped backslash joins the next line
                parts.append(line[:-1])
                if i >= len(natural):
                    break
                line = natural[i].lstrip(" \t\f")
                i += 1
            else:
                parts.append(line)
                break
        yield start + 1, "".join(parts)


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java properties text (syntax in the module docstring); later keys win."""
    result: dict[str, str] = {}
    for lineno, line in _logical_lines(text):
        i = 0
        while i < len(line):
            ch = line[i]
            if ch == "\\":
                i += 2
                continue
            if ch in "=: \t\f":
                break
            i += 1
        key = line[:i]
        rest = line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        result[_unescape(key, lineno)] = _unescape(rest, lineno)
    return result


def env_to_properties(environ: Mapping[str, str]) -> dict[str, str]:
    """`ODRADEK_LOG_DIRS=/x` -> `{"log.dirs": "/x"}` for every variable with the prefix."""
    return {
        key[len(ENV_PREFIX) :].lower().replace("_", "."): value
        for key, value in environ.items()
        if key.startswith(ENV_PREFIX) and len(key) > len(ENV_PREFIX)
    }


def parse_overrides(overrides: Sequence[str]) -> dict[str, str]:
    """`["k=v", ...]` as given to `--override`; the value is everything after the first '='."""
    result: dict[str, str] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"override {item!r} is not of the form key=value")
        result[key] = value
    return result


# --------------------------------------------------------------------------- listeners


class Listener(NamedTuple):
    """A listener: normalised (upper-case) name, host ('' = every interface), port (0 = any)."""

    name: str
    host: str
    port: int


_LISTENER_RE = re.compile(
    r"(?P<name>[A-Za-z0-9_\-.]+)://(?:\[(?P<v6>[0-9A-Za-z:.%]*)\]|(?P<host>[0-9A-Za-z\-._]*))"
    r":(?P<port>[0-9]+)"
)


def parse_listeners(items: Iterable[str], key: str = "listeners") -> list[Listener]:
    """Parse `NAME://host:port` entries (IPv6 hosts in brackets). Names must be unique."""
    listeners: list[Listener] = []
    for item in items:
        m = _LISTENER_RE.fullmatch(item.strip())
        if m is None:
            raise ConfigError(
                f"cannot parse listener {item!r}; expected NAME://host:port, e.g. "
                "PLAINTEXT://127.0.0.1:9092 or PLAINTEXT://[::1]:9092",
                key,
            )
        port = int(m["port"])
        if port > 65535:
            raise ConfigError(f"listener {item!r}: port {port} out of range 0-65535", key)
        name = m["name"].upper()
        if any(existing.name == name for existing in listeners):
            raise ConfigError(f"listener name {name} is used more than once", key)
        host = m["v6"] if m["v6"] is not None else m["host"]
        listeners.append(Listener(name, host, port))
    return listeners


def _parse_protocol_map(items: Iterable[str]) -> dict[str, str]:
    key = "listener.security.protocol.map"
    result: dict[str, str] = {}
    for item in items:
        name, sep, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name.strip():
            raise ConfigError(f"entry {item!r} is not of the form LISTENER:PROTOCOL", key)
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(f"unknown security protocol {protocol!r} in {item!r}", key)
        result[name.strip().upper()] = protocol
    return result


# --------------------------------------------------------------------------- broker config


class BrokerConfig:
    """The broker's settings: every known setting parsed and validated, unknown ones kept.

    `explicit` maps names to the text given (file, environment, overrides merged); anything
    not given takes its default. Raises ConfigError naming the key on a bad value.
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
        self._protocols = _parse_protocol_map(self._list("listener.security.protocol.map"))
        self._listeners = self._checked_listeners("listeners")
        if self._values["advertised.listeners"] is None:
            self._advertised = list(self._listeners)
        else:
            self._advertised = self._checked_listeners("advertised.listeners")
            names = {listener.name for listener in self._listeners}
            for listener in self._advertised:
                if listener.name not in names:
                    raise ConfigError(
                        f"advertised listener {listener.name} is not among the listeners",
                        "advertised.listeners",
                    )
                if listener.host in ("0.0.0.0", "::"):
                    raise ConfigError(
                        f"cannot advertise the non-routable address {listener.host}",
                        "advertised.listeners",
                    )
        if not self.log_dirs:
            raise ConfigError("at least one log directory is needed", "log.dirs")

    def _checked_listeners(self, key: str) -> list[Listener]:
        listeners = parse_listeners(self._list(key), key)
        if not listeners:
            raise ConfigError("at least one listener is needed", key)
        for listener in listeners:
            protocol = self._protocols.get(listener.name)
            if protocol is None:
                raise ConfigError(
                    f"no security protocol for listener {listener.name}; add it to "
                    "listener.security.protocol.map",
                    key,
                )
            if protocol != "PLAINTEXT":
                raise ConfigError(
                    f"listener {listener.name} uses {protocol}; only PLAINTEXT is supported "
                    "for now",
                    key,
                )
        return listeners

    # -- generic access ------------------------------------------------------------------

    def get(self, name: str) -> ConfigValue:
        """The parsed value of a known setting (its default when not set)."""
        return self._values[name]

    def is_set(self, name: str) -> bool:
        return name in self._explicit

    def source(self, name: str) -> ConfigSource:
        return (
            ConfigSource.STATIC_BROKER_CONFIG
            if name in self._explicit
            else (ConfigSource.DEFAULT_CONFIG)
        )

    @property
    def explicit(self) -> Mapping[str, str]:
        """Every setting given in the file, environment or overrides, as text."""
        return self._explicit

    # Interim typed getters (the config package brings the real ones).
    def get_int(self, name: str) -> int:
        return self._int(name)

    def get_bool(self, name: str) -> bool:
        return self._bool(name)

    def get_float(self, name: str) -> float:
        value = self._values[name]
        assert isinstance(value, int | float) and not isinstance(value, bool)
        return value

    def _int(self, name: str) -> int:
        value = self._values[name]
        assert isinstance(value, int) and not isinstance(value, bool)
        return value

    def _opt_int(self, name: str) -> int | None:
        value = self._values[name]
        assert value is None or (isinstance(value, int) and not isinstance(value, bool))
        return value

    def _bool(self, name: str) -> bool:
        value = self._values[name]
        assert isinstance(value, bool)
        return value

    def _str(self, name: str) -> str:
        value = self._values[name]
        assert isinstance(value, str)
        return value

    def _list(self, name: str) -> tuple[str, ...]:
        value = self._values[name]
        assert value is None or isinstance(value, tuple)
        return value or ()

    # -- identity and network ------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self._int("node.id")

    @property
    def listeners(self) -> list[Listener]:
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
        hosts = {listener.name: listener.host for listener in self._listeners}
        result: list[Listener] = []
        for listener in self._advertised:
            port = listener.port or bound_ports.get(listener.name, 0)
            host = listener.host
            if host in ("", "0.0.0.0", "::"):
                bound_host = hosts.get(listener.name, "")
                host = bound_host if bound_host not in ("", "0.0.0.0", "::") else fallback_host
            result.append(Listener(listener.name, host, port))
        return result

    @property
    def listener_security_protocol_map(self) -> dict[str, str]:
        return dict(self._protocols)

    @property
    def unstable_api_versions_enable(self) -> bool:
        return self._bool("unstable.api.versions.enable")

    @property
    def socket_request_max_bytes(self) -> int:
        return self._int("socket.request.max.bytes")

    @property
    def max_connections(self) -> int:
        return self._int("max.connections")

    @property
    def message_max_bytes(self) -> int:
        return self._int("message.max.bytes")

    # -- storage -------------------------------------------------------------------------

    @property
    def log_dirs(self) -> list[Path]:
        """log.dirs if set, else log.dir (Kafka's rule)."""
        dirs = self._values["log.dirs"]
        if isinstance(dirs, tuple):
            return [Path(d) for d in dirs if d]
        return [Path(self._str("log.dir"))]

    @property
    def num_partitions(self) -> int:
        return self._int("num.partitions")

    @property
    def default_replication_factor(self) -> int:
        return self._int("default.replication.factor")

    @property
    def auto_create_topics_enable(self) -> bool:
        return self._bool("auto.create.topics.enable")

    @property
    def delete_topic_enable(self) -> bool:
        return self._bool("delete.topic.enable")

    @property
    def log_segment_bytes(self) -> int:
        return self._int("log.segment.bytes")

    @property
    def log_roll_ms(self) -> int:
        """log.roll.ms, else log.roll.hours in ms."""
        ms = self._opt_int("log.roll.ms")
        return ms if ms is not None else self._int("log.roll.hours") * _HOUR_MS

    @property
    def log_retention_ms(self) -> int:
        """ms > minutes > hours, as Kafka; any negative value means unlimited (-1)."""
        ms = self._opt_int("log.retention.ms")
        if ms is None:
            minutes = self._opt_int("log.retention.minutes")
            ms = (
                minutes * _MINUTE_MS
                if minutes is not None
                else self._int("log.retention.hours") * _HOUR_MS
            )
        return -1 if ms < 0 else ms

    @property
    def log_retention_bytes(self) -> int:
        return self._int("log.retention.bytes")

    @property
    def log_retention_check_interval_ms(self) -> int:
        return self._int("log.retention.check.interval.ms")

    @property
    def log_index_interval_bytes(self) -> int:
        return self._int("log.index.interval.bytes")

    @property
    def log_index_size_max_bytes(self) -> int:
        return self._int("log.index.size.max.bytes")

    @property
    def log_flush_interval_messages(self) -> int:
        return self._int("log.flush.interval.messages")

    @property
    def log_flush_interval_ms(self) -> int:
        """log.flush.interval.ms, else log.flush.scheduler.interval.ms (Kafka's fallback)."""
        ms = self._opt_int("log.flush.interval.ms")
        return ms if ms is not None else self._int("log.flush.scheduler.interval.ms")

    @property
    def log_flush_scheduler_interval_ms(self) -> int:
        return self._int("log.flush.scheduler.interval.ms")

    @property
    def log_cleanup_policy(self) -> tuple[str, ...]:
        return self._list("log.cleanup.policy")

    @property
    def log_message_timestamp_type(self) -> str:
        return self._str("log.message.timestamp.type")

    @property
    def compression_type(self) -> str:
        return self._str("compression.type")

    @property
    def min_insync_replicas(self) -> int:
        return self._int("min.insync.replicas")

    # -- coordinators --------------------------------------------------------------------

    @property
    def offsets_topic_num_partitions(self) -> int:
        return self._int("offsets.topic.num.partitions")

    @property
    def offsets_topic_replication_factor(self) -> int:
        return self._int("offsets.topic.replication.factor")

    @property
    def offsets_retention_ms(self) -> int:
        return self._int("offsets.retention.minutes") * _MINUTE_MS

    @property
    def group_initial_rebalance_delay_ms(self) -> int:
        return self._int("group.initial.rebalance.delay.ms")

    @property
    def group_min_session_timeout_ms(self) -> int:
        return self._int("group.min.session.timeout.ms")

    @property
    def group_max_session_timeout_ms(self) -> int:
        return self._int("group.max.session.timeout.ms")

    @property
    def transaction_max_timeout_ms(self) -> int:
        return self._int("transaction.max.timeout.ms")

    @property
    def transactional_id_expiration_ms(self) -> int:
        return self._int("transactional.id.expiration.ms")

    @property
    def transaction_state_log_num_partitions(self) -> int:
        return self._int("transaction.state.log.num.partitions")

    @property
    def producer_id_expiration_ms(self) -> int:
        return self._int("producer.id.expiration.ms")

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
                )
            )
        return entries


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


# --------------------------------------------------------------------------- topic config


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One DescribeConfigs result row. `is_default` is the v0 flag (source is the default)."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    type: ConfigType
    synonyms: tuple[ConfigSynonym, ...] = ()

    @property
    def is_default(self) -> bool:
        return self.source is ConfigSource.DEFAULT_CONFIG


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
                assert isinstance(value, int)
                value = value * synonym.scale if value >= 0 else -1
            return value, ConfigSource.STATIC_BROKER_CONFIG, synonym
    return definition.default, ConfigSource.DEFAULT_CONFIG, None


@dataclass(frozen=True, slots=True)
class LogConfig:
    """A topic's effective configuration (Kafka's LogConfig): topic override > broker setting
    > default, with where each value came from."""

    values: Mapping[str, ConfigValue]
    sources: Mapping[str, ConfigSource]
    overrides: Mapping[str, str] = field(default_factory=dict)

    def __getitem__(self, name: str) -> ConfigValue:
        return self.values[name]

    def _int(self, name: str) -> int:
        value = self.values[name]
        assert isinstance(value, int) and not isinstance(value, bool)
        return value

    def _str(self, name: str) -> str:
        value = self.values[name]
        assert isinstance(value, str)
        return value

    def _bool(self, name: str) -> bool:
        value = self.values[name]
        assert isinstance(value, bool)
        return value

    @property
    def cleanup_policy(self) -> tuple[str, ...]:
        value = self.values["cleanup.policy"]
        assert isinstance(value, tuple)
        return value

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
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def compression_type(self) -> str:
        return self._str("compression.type")

    @property
    def retention_ms(self) -> int:
        return self._int("retention.ms")

    @property
    def retention_bytes(self) -> int:
        return self._int("retention.bytes")

    @property
    def segment_bytes(self) -> int:
        return self._int("segment.bytes")

    @property
    def segment_ms(self) -> int:
        return self._int("segment.ms")

    @property
    def segment_jitter_ms(self) -> int:
        return self._int("segment.jitter.ms")

    @property
    def segment_index_bytes(self) -> int:
        return self._int("segment.index.bytes")

    @property
    def index_interval_bytes(self) -> int:
        return self._int("index.interval.bytes")

    @property
    def flush_messages(self) -> int:
        return self._int("flush.messages")

    @property
    def flush_ms(self) -> int:
        return self._int("flush.ms")

    @property
    def max_message_bytes(self) -> int:
        return self._int("max.message.bytes")

    @property
    def message_timestamp_type(self) -> str:
        return self._str("message.timestamp.type")

    @property
    def message_timestamp_before_max_ms(self) -> int:
        return self._int("message.timestamp.before.max.ms")

    @property
    def message_timestamp_after_max_ms(self) -> int:
        return self._int("message.timestamp.after.max.ms")

    @property
    def min_insync_replicas(self) -> int:
        return self._int("min.insync.replicas")

    @property
    def delete_retention_ms(self) -> int:
        return self._int("delete.retention.ms")

    @property
    def min_compaction_lag_ms(self) -> int:
        return self._int("min.compaction.lag.ms")

    @property
    def max_compaction_lag_ms(self) -> int:
        return self._int("max.compaction.lag.ms")

    @property
    def min_cleanable_dirty_ratio(self) -> float:
        value = self.values["min.cleanable.dirty.ratio"]
        assert isinstance(value, float)
        return value

    @property
    def file_delete_delay_ms(self) -> int:
        return self._int("file.delete.delay.ms")

    @property
    def preallocate(self) -> bool:
        return self._bool("preallocate")


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
            )
        )
    return entries
