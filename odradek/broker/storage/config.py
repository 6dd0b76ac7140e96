"""Per-log settings, under Kafka's topic-level config names and with Kafka's defaults.

`LogConfig.from_topic_configs({"retention.ms": "1000"}, defaults)` overlays a topic's
configs (strings, as CreateTopics/AlterConfigs carry them) on the broker-wide defaults.
Unknown names are ignored here (the cluster layer decides which names it accepts); a known
name with an invalid value raises `InvalidConfigError`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

LONG_MAX = 2**63 - 1


class LogSettings(Protocol):
    """What the storage layer reads from a log's config. `LogConfig` below provides it, and so
    may any other config object (e.g. the broker's resolved topic config)."""

    @property
    def segment_bytes(self) -> int: ...
    @property
    def segment_ms(self) -> int: ...
    @property
    def retention_ms(self) -> int: ...
    @property
    def retention_bytes(self) -> int: ...
    @property
    def index_interval_bytes(self) -> int: ...
    @property
    def segment_index_bytes(self) -> int: ...
    @property
    def flush_messages(self) -> int: ...
    @property
    def flush_ms(self) -> int: ...
    @property
    def max_message_bytes(self) -> int: ...
    @property
    def log_append_time(self) -> bool: ...
    @property
    def deletes(self) -> bool: ...


class InvalidConfigError(ValueError):
    """A topic config value that is not acceptable (answered with INVALID_CONFIG)."""


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1024 * 1024 * 1024  # segment.bytes
    segment_ms: int = 7 * 24 * 60 * 60 * 1000  # segment.ms
    retention_ms: int = 7 * 24 * 60 * 60 * 1000  # retention.ms; -1 = unlimited
    retention_bytes: int = -1  # retention.bytes; -1 = unlimited
    index_interval_bytes: int = 4096  # index.interval.bytes
    segment_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes
    flush_messages: int = LONG_MAX  # flush.messages; LONG_MAX = never fsync on count
    flush_ms: int = LONG_MAX  # flush.ms; LONG_MAX = never fsync on time
    cleanup_policy: str = "delete"  # cleanup.policy: delete, compact or compact,delete
    max_message_bytes: int = 1048588  # max.message.bytes: largest batch accepted
    message_timestamp_type: str = "CreateTime"  # message.timestamp.type
    message_timestamp_before_max_ms: int = LONG_MAX  # message.timestamp.before.max.ms
    message_timestamp_after_max_ms: int = LONG_MAX  # message.timestamp.after.max.ms
    min_insync_replicas: int = 1  # min.insync.replicas
    compression_type: str = "producer"  # compression.type
    file_delete_delay_ms: int = 60000  # file.delete.delay.ms
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    delete_retention_ms: int = 24 * 60 * 60 * 1000  # delete.retention.ms

    @property
    def deletes(self) -> bool:
        """True when old segments are removed by retention (`delete` in cleanup.policy)."""
        return "delete" in self.cleanup_policy.split(",")

    @property
    def compacts(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @classmethod
    def from_topic_configs(
        cls, configs: Mapping[str, str | None], defaults: LogConfig | None = None
    ) -> LogConfig:
        base = defaults if defaults is not None else cls()
        changes: dict[str, Any] = {}
        for name, raw in configs.items():
            spec = _SPECS.get(name)
            if spec is None or raw is None:
                continue
            field_name, parse = spec
            try:
                changes[field_name] = parse(raw.strip())
            except ValueError as exc:
                raise InvalidConfigError(f"invalid value {raw!r} for {name}: {exc}") from None
        return dataclasses.replace(base, **changes) if changes else base

    def to_topic_configs(self) -> dict[str, str]:
        """Every setting under its Kafka name, as DescribeConfigs reports them."""
        out: dict[str, str] = {}
        for name, (field_name, _) in _SPECS.items():
            value = getattr(self, field_name)
            out[name] = str(value)
        return out


def _int(minimum: int, maximum: int = LONG_MAX) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        value = int(raw)
        if not minimum <= value <= maximum:
            raise ValueError(f"must be in [{minimum}, {maximum}]")
        return value

    return parse


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if raw not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return raw

    return parse


def _cleanup_policy(raw: str) -> str:
    parts = [p.strip() for p in raw.split(",") if p.strip()]
    if not parts or any(p not in ("delete", "compact") for p in parts):
        raise ValueError("must be a list of delete, compact")
    return ",".join(dict.fromkeys(parts))


def _ratio(raw: str) -> float:
    value = float(raw)
    if not 0.0 <= value <= 1.0:
        raise ValueError("must be in [0, 1]")
    return value


_INT_MAX = 2**31 - 1

# Kafka name -> (LogConfig field, parser); minima as Kafka's LogConfig validators.
_SPECS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "segment.bytes": ("segment_bytes", _int(14, _INT_MAX)),
    "segment.ms": ("segment_ms", _int(1)),
    "retention.ms": ("retention_ms", _int(-1)),
    "retention.bytes": ("retention_bytes", _int(-1)),
    "index.interval.bytes": ("index_interval_bytes", _int(0, _INT_MAX)),
    "segment.index.bytes": ("segment_index_bytes", _int(4, _INT_MAX)),
    "flush.messages": ("flush_messages", _int(1)),
    "flush.ms": ("flush_ms", _int(0)),
    "cleanup.policy": ("cleanup_policy", _cleanup_policy),
    "max.message.bytes": ("max_message_bytes", _int(0, _INT_MAX)),
    "message.timestamp.type": ("message_timestamp_type", _choice("CreateTime", "LogAppendTime")),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", _int(0)),
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", _int(0)),
    "min.insync.replicas": ("min_insync_replicas", _int(1, _INT_MAX)),
    "compression.type": (
        "compression_type",
        _choice("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    ),
    "file.delete.delay.ms": ("file_delete_delay_ms", _int(0)),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", _ratio),
    "delete.retention.ms": ("delete_retention_ms", _int(0)),
}

TOPIC_CONFIG_NAMES = frozenset(_SPECS)
