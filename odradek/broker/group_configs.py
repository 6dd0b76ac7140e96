"""Group configs on disk and what the coordinators read of them (the GROUP config resource).

A group's overrides (`odradek.config.group`) are set by IncrementalAlterConfigs or AlterConfigs
on a GROUP resource, for any group name: like Kafka, which keeps them as metadata records
apart from the group, a group need not exist yet (a share consumer's
`share.auto.offset.reset` is set before it first joins). They live in `group-configs.json`
in the first log dir, replaced atomically (file and directory fsync) before the answer, so a
kill -9 after the response loses nothing.

What the coordinators apply (per group, read when used, so a change acts at once):
share.auto.offset.reset (where a new share-partition starts), share.record.lock.duration.ms,
share.delivery.count.limit, share.partition.max.record.locks, share.renew.acknowledge.enable
(the share-partitions of the group, loaded ones included), share.session.timeout.ms and share.heartbeat.interval.ms, consumer.session.timeout.ms
and consumer.heartbeat.interval.ms (KIP-848 groups). The others are stored and described but
not applied yet: share.isolation.level (share groups read uncommitted), the assignment
intervals and offload switches, the streams.* configs, the dead-letter-queue configs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import structlog

from odradek.broker.storage.files import atomic_write
from odradek.config import BrokerConfig, ConfigError
from odradek.config.group import check_overrides, effective
from odradek.coordinator.group.consumer.coordinator import ConsumerConfig
from odradek.coordinator.share.group import ShareGroupConfig
from odradek.coordinator.share.offset_reset import (
    InvalidOffsetReset,
    OffsetReset,
    parse_offset_reset,
)
from odradek.coordinator.share.partition import SharePartitionConfig

log = structlog.get_logger("odradek.group_configs")

GROUP_CONFIG_FILE = "group-configs.json"


def _offset_reset_reason(text: str) -> str | None:
    try:
        parse_offset_reset(text)
    except InvalidOffsetReset:
        return (f"Invalid value `{text}` for configuration share.auto.offset.reset. The value "
                "must be either 'earliest', 'latest' or of the format "
                "'by_duration:<PnDTnHnMn.nS.>'.")
    return None


VALUE_CHECKS = {"share.auto.offset.reset": _offset_reset_reason}


class GroupConfigs:
    def __init__(self, path: Path, broker: BrokerConfig) -> None:
        self.path = path
        self.broker = broker
        self._overrides: dict[str, dict[str, str]] = {}
        if path.exists():
            raw = json.loads(path.read_bytes())
            self._overrides = {g: {k: str(v) for k, v in c.items()} for g, c in raw.items()}
        self._effective: dict[str, dict[str, object]] = {}
        # told of the group whose overrides changed (the share-partitions take them at once)
        self.on_change: Callable[[str], None] = lambda _gid: None

    def configured(self) -> list[str]:
        """The groups with overrides (ListConfigResources lists these, as Kafka)."""
        return sorted(self._overrides)

    def overrides(self, group_id: str) -> dict[str, str]:
        return dict(self._overrides.get(group_id, {}))

    def check(self, overrides: Mapping[str, str]) -> None:
        """Raises ConfigError with Kafka's message unless `overrides` are valid."""
        check_overrides(overrides, self.broker, VALUE_CHECKS)

    def replace(self, group_id: str, overrides: Mapping[str, str]) -> None:
        """The group's overrides become `overrides` (checked first), saved before return."""
        self.check(overrides)
        new = dict(self._overrides)
        if overrides:
            new[group_id] = dict(overrides)
        else:
            new.pop(group_id, None)
        atomic_write(self.path, json.dumps(new, sort_keys=True, indent=1).encode())
        self._overrides = new
        self._effective.pop(group_id, None)
        self.on_change(group_id)
        log.info("group configs altered", group=group_id, configs=dict(overrides))

    def _value(self, group_id: str, name: str) -> object:
        values = self._effective.get(group_id)
        if values is None:
            try:
                values = dict(effective(self._overrides.get(group_id, {}), self.broker))
            except ConfigError:  # a file edited by hand: its group falls back to the settings
                log.warning("group configs unreadable, using the broker settings",
                            group=group_id)
                values = dict(effective({}, self.broker))
            self._effective[group_id] = values
        return values[name]

    def _int(self, group_id: str, name: str) -> int:
        value = self._value(group_id, name)
        assert isinstance(value, int)
        return value

    # -- what the coordinators read -------------------------------------------------------------

    def offset_reset(self, group_id: str) -> OffsetReset:
        value = self._value(group_id, "share.auto.offset.reset")
        assert isinstance(value, str)
        return parse_offset_reset(value)

    def share_partition_config(self, group_id: str,
                               base: SharePartitionConfig) -> SharePartitionConfig:
        if group_id not in self._overrides:
            return base
        return replace(base,
                       record_lock_duration_ms=self._int(group_id, "share.record.lock.duration.ms"),
                       delivery_count_limit=self._int(group_id, "share.delivery.count.limit"),
                       max_record_locks=self._int(group_id, "share.partition.max.record.locks"),
                       renew_enabled=bool(self._value(group_id, "share.renew.acknowledge.enable")))

    def share_group_config(self, group_id: str, base: ShareGroupConfig) -> ShareGroupConfig:
        if group_id not in self._overrides:
            return base
        return replace(base,
                       session_timeout_ms=self._int(group_id, "share.session.timeout.ms"),
                       heartbeat_interval_ms=self._int(group_id, "share.heartbeat.interval.ms"))

    def consumer_config(self, group_id: str, base: ConsumerConfig) -> ConsumerConfig:
        if group_id not in self._overrides:
            return base
        return replace(base,
                       session_timeout_ms=self._int(group_id, "consumer.session.timeout.ms"),
                       heartbeat_interval_ms=self._int(group_id, "consumer.heartbeat.interval.ms"))
