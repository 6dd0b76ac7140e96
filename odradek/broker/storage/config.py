"""What the storage layer reads from a log's config (`LogSettings`), and `LogConfig`, a plain
record of it with Kafka's defaults for tests and tools.

The broker passes `odradek.config.LogConfig` (the topic's effective config, parsed and
validated from Kafka's property names there); this module parses nothing itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

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
    @property
    def compacts(self) -> bool: ...
    # Compaction (cleaner/) and the removal of replaced segments.
    @property
    def delete_retention_ms(self) -> int: ...
    @property
    def min_compaction_lag_ms(self) -> int: ...
    @property
    def max_compaction_lag_ms(self) -> int: ...
    @property
    def min_cleanable_dirty_ratio(self) -> float: ...
    @property
    def file_delete_delay_ms(self) -> int: ...


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
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_compaction_lag_ms: int = LONG_MAX  # max.compaction.lag.ms

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
