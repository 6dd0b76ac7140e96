"""What a setting is: its type, where its value came from, how text becomes a value and back.

Shared by the broker and topic tables: `ConfigType` and `ConfigSource` (numbered as Kafka's
DescribeConfigs ids), `ConfigError`, the validators the tables use, `parse_value` and
`format_value` (Kafka's ConfigDef.parseType and convertToString), the DescribeConfigs row
(`ConfigEntry`), and `TypedGetters`, the one way to read a setting as a Python type.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)
SHORT_MAX = 2**15 - 1
SHORT_MIN = -(2**15)

HOUR_MS = 3_600_000
MINUTE_MS = 60_000


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


class Effect(enum.Enum):
    """The decision recorded for every setting (`odradek.config.decisions`).

    IMPLEMENTED: acts as on Kafka. NO_EFFECT: a knob that cannot matter in this design (thread
    pools, replication, the KRaft quorum): accepted silently, described with Kafka's default.
    NOT_SUPPORTED: refused at a value other than its default: INVALID_CONFIG at run time, a
    warning line at start-up. NOT_SUPPORTED_STOP: the same, except that at start-up it stops
    the broker (exit code 2): a value would change what clients see, what is stored or who
    may connect, so it is never stored and silently ignored.
    """

    IMPLEMENTED = "implemented"
    NO_EFFECT = "no effect here"
    NOT_SUPPORTED = "not supported yet"
    NOT_SUPPORTED_STOP = "not supported yet (start refused)"

    @property
    def supported(self) -> bool:
        return self in (Effect.IMPLEMENTED, Effect.NO_EFFECT)

    @property
    def documentation(self) -> str | None:
        """The DescribeConfigs v3+ `documentation` text for a setting with this decision."""
        if self is Effect.NO_EFFECT:
            return "Accepted by Odradek, where it has no effect (see docs/configuration.md)."
        if not self.supported:
            return "Not supported by Odradek yet: only its default value is accepted."
        return None


class ConfigSource(enum.IntEnum):
    """Where a value came from, numbered as DescribeConfigs v1+ `ConfigSource` ids."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


# Parsed values: lists are tuples so a parsed config can be shared without copying.
ConfigValue = bool | int | float | str | tuple[str, ...] | None

# A validator gets a parsed, non-None value and returns why it is invalid, or None; a pair is
# (the value to show in the message, why), for the list validators that name one item.
Validator = Callable[[ConfigValue], str | tuple[str, str] | None]


class SettingDef(Protocol):
    """What parsing needs of a setting's definition (broker `ConfigDef` or `TopicConfigDef`)."""

    @property
    def name(self) -> str: ...
    @property
    def type(self) -> ConfigType: ...
    @property
    def validator(self) -> Validator | None: ...
    @property
    def sensitive(self) -> bool: ...


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
    # Kafka's ValidList: the message shows the bad item, with ValidString's wording.
    def check(value: ConfigValue) -> tuple[str, str] | None:
        assert isinstance(value, tuple)
        for item in value:
            if item not in options:
                return item, f"String must be one of: {', '.join(options)}"
        return None

    return check


def one_of_case_insensitive(*options: str) -> Validator:
    lowered = {o.lower() for o in options}

    def check(value: ConfigValue) -> str | None:
        if not isinstance(value, str) or value.lower() not in lowered:
            return f"String must be one of (case insensitive): {', '.join(options)}"
        return None

    return check


def either_or(minimum: int, maximum: int, extra: int) -> Validator:
    def check(value: ConfigValue) -> str | None:
        assert isinstance(value, int)
        if value != extra and not minimum <= value <= maximum:
            return f"Value must be between {minimum} and {maximum} or equal to {extra}"
        return None

    return check


def _non_empty_string(value: ConfigValue) -> str | None:
    return "String must be non-empty" if isinstance(value, str) and not value.strip() else None


def _non_empty_items(value: ConfigValue) -> str | None:
    assert isinstance(value, tuple)
    return "Empty list element" if any(not item for item in value) else None


_REPLICA = re.compile(r"[0-9]+:[0-9]+")


def throttled_replicas(name: str) -> Validator:
    # Kafka's ThrottledReplicaListValidator: "*" or partition:broker pairs; Java's list
    # rendering in the message.
    def check(value: ConfigValue) -> tuple[str, str] | None:
        assert isinstance(value, tuple)
        if value == ("*",) or all(_REPLICA.fullmatch(item) for item in value):
            return None
        return (f"[{', '.join(value)}]", f"{name} must be the literal '*' or a list of replicas "
                "in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")

    return check


def validator_from_spec(name: str, spec: tuple[object, ...] | None) -> Validator | None:
    """The validator of a `_kafka` row's spec (see tools/kafka_config.py)."""
    if spec is None:
        return None
    kind = spec[0]
    if kind == "range":
        lo, hi = spec[1], spec[2]
        assert lo is None or isinstance(lo, int | float)
        assert hi is None or isinstance(hi, int | float)
        if hi is None:
            return at_least(lo) if lo is not None else None
        return between(lo if lo is not None else -math.inf, hi)
    if kind == "range_or":
        lo, hi, extra = spec[1], spec[2], spec[3]
        assert isinstance(lo, int) and isinstance(hi, int) and isinstance(extra, int)
        return either_or(lo, hi, extra)
    if kind == "choice":
        options = spec[1]
        assert isinstance(options, tuple)
        return one_of_case_insensitive(*options) if spec[2] else one_of(*options)
    if kind == "each":
        options = spec[1]
        assert isinstance(options, tuple)
        return each_one_of(*options)
    if kind == "non_empty_string":
        return _non_empty_string
    if kind == "non_empty_list":
        return _non_empty_items
    if kind == "throttled_replicas":
        return throttled_replicas(name)
    return None  # non_null_string: a parsed value is never null


def gzip_level(value: ConfigValue) -> str | None:
    # Kafka: 1..9, or -1 for zlib's default.
    assert isinstance(value, int)
    if value != -1 and not 1 <= value <= 9:
        return "Value must be between 1 and 9 or equal to -1"
    return None


COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


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


def parse_value(definition: SettingDef, text: str) -> ConfigValue:
    """Parse and validate `text` for `definition`; raises ConfigError (with Kafka's wording)."""
    try:
        value = _parse_typed(definition.type, text)
    except ValueError as exc:
        raise ConfigError(_invalid(definition, text, str(exc)), definition.name) from None
    if definition.validator is not None:
        reason = definition.validator(value)
        if isinstance(reason, tuple):
            shown, why = reason
            raise ConfigError(_invalid(definition, shown, why), definition.name)
        if reason is not None:
            # Kafka's message shows the parsed value (`-1.0` for a DOUBLE given as `-1`).
            parsed = format_value(value)
            raise ConfigError(_invalid(definition, text if parsed is None else parsed, reason),
                              definition.name)
    return value


def _invalid(definition: SettingDef, text: str, reason: str) -> str:
    shown = "[hidden]" if definition.sensitive else text
    return f"Invalid value {shown} for configuration {definition.name}: {reason}"


def _java_double(value: float) -> str:
    """Java's Double.toString: plain between 10^-3 and 10^7, else `1.7976931348623157E308`."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    text = repr(value)
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        if "e" in text:
            text = f"{value:f}".rstrip("0")
        return text + "0" if text.endswith(".") else text
    from decimal import Decimal  # lazily: only DescribeConfigs renders such values

    sign, digits, exponent = Decimal(text).normalize().as_tuple()
    assert isinstance(exponent, int)
    shown = "".join(map(str, digits))
    mantissa = f"{shown[0]}.{shown[1:] or '0'}"
    return f"{'-' if sign else ''}{mantissa}E{exponent + len(digits) - 1}"


def format_value(value: ConfigValue) -> str | None:
    """Render a parsed value as Kafka's ConfigDef.convertToString does."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, float):
        return _java_double(value)
    return str(value)


# --------------------------------------------------------------------------- typed reading

_BOOLEAN = frozenset({ConfigType.BOOLEAN})
_INTEGER = frozenset({ConfigType.SHORT, ConfigType.INT, ConfigType.LONG})
_DOUBLE = frozenset({ConfigType.DOUBLE})
_STRING = frozenset({ConfigType.STRING, ConfigType.CLASS, ConfigType.PASSWORD})
_LIST = frozenset({ConfigType.LIST})


class TypedGetters:
    """Read a setting by name as the Python type its declared ConfigType gives.

    Each getter checks the setting's declared type and raises TypeError on a mismatch (a
    BOOLEAN setting is never read as an int, an INT never as a float), KeyError on an unknown
    name. `get_int` & co. need a value; settings whose default is null (e.g. `log.roll.ms`)
    are read with the `get_optional_*` getters, which return None while unset.

    A subclass supplies `_declared(name)`: the setting's declared type and parsed value.
    """

    __slots__ = ()

    def _declared(self, name: str) -> tuple[ConfigType, ConfigValue]:
        raise NotImplementedError

    def _read(self, name: str, types: frozenset[ConfigType], kind: str) -> ConfigValue:
        type_, value = self._declared(name)
        if type_ not in types:
            raise TypeError(f"setting {name} is of type {type_.name}, not read by get_{kind}")
        return value

    @staticmethod
    def _unset(name: str, kind: str) -> TypeError:
        return TypeError(f"setting {name} has no value; read it with get_optional_{kind}")

    def get_bool(self, name: str) -> bool:
        """A BOOLEAN setting."""
        value = self._read(name, _BOOLEAN, "bool")
        assert isinstance(value, bool), (name, value)
        return value

    def get_optional_int(self, name: str) -> int | None:
        """A SHORT, INT or LONG setting; None while it has no value."""
        value = self._read(name, _INTEGER, "int")
        assert value is None or (type(value) is int), (name, value)
        return value

    def get_int(self, name: str) -> int:
        """A SHORT, INT or LONG setting."""
        value = self.get_optional_int(name)
        if value is None:
            raise self._unset(name, "int")
        return value

    def get_float(self, name: str) -> float:
        """A DOUBLE setting."""
        value = self._read(name, _DOUBLE, "float")
        assert isinstance(value, float), (name, value)
        return value

    def get_optional_str(self, name: str) -> str | None:
        """A STRING, CLASS or PASSWORD setting; None while it has no value."""
        value = self._read(name, _STRING, "str")
        assert value is None or isinstance(value, str), (name, value)
        return value

    def get_str(self, name: str) -> str:
        """A STRING, CLASS or PASSWORD setting."""
        value = self.get_optional_str(name)
        if value is None:
            raise self._unset(name, "str")
        return value

    def get_optional_list(self, name: str) -> tuple[str, ...] | None:
        """A LIST setting; None while it has no value."""
        value = self._read(name, _LIST, "list")
        assert value is None or isinstance(value, tuple), (name, value)
        return value

    def get_list(self, name: str) -> tuple[str, ...]:
        """A LIST setting: its items, trimmed (an empty text is the empty tuple)."""
        value = self.get_optional_list(name)
        if value is None:
            raise self._unset(name, "list")
        return value


# --------------------------------------------------------------------------- DescribeConfigs


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
    documentation: str | None = None

    @property
    def is_default(self) -> bool:
        return self.source is ConfigSource.DEFAULT_CONFIG
