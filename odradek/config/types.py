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
    """What Odradek does with a setting it accepts.

    APPLIED: it acts on it as Kafka does. NOT_APPLIED: accepted and reported (DescribeConfigs
    says so in its documentation field) but not acted on; the broker logs one warning the
    first time it is set. NO_MEANING: it means nothing for one single-node process (KRaft
    quorum, thread pools, replication): accepted silently.
    """

    APPLIED = "applied"
    NOT_APPLIED = "not applied"
    NO_MEANING = "no meaning"

    @property
    def documentation(self) -> str | None:
        """The DescribeConfigs v3+ `documentation` text for a setting with this effect."""
        if self is Effect.NOT_APPLIED:
            return "Accepted and reported by Odradek, but not applied: setting it changes nothing."
        if self is Effect.NO_MEANING:
            return (
                "Accepted by Odradek, which ignores it: it has no meaning for one single-node "
                "process."
            )
        return None


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


def one_of_ignore_case(*options: str) -> Validator:
    """Kafka's CaseInsensitiveValidString (the options given in lower case)."""
    def check(value: ConfigValue) -> str | None:
        assert isinstance(value, str)
        if value.lower() not in options:
            return f"String must be one of (case insensitive): {', '.join(options)}"
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
        if reason is not None:
            raise ConfigError(_invalid(definition, text, reason), definition.name)
    return value


def _invalid(definition: SettingDef, text: str, reason: str) -> str:
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
