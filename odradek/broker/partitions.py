"""The partitions port: what handlers and coordinators may do with partition logs.

Handlers and the coordinator runtime see partitions only through `Partitions`, a protocol a
test can fake: look a log up (None unless the cluster metadata has the partition), append a
batch the broker itself builds (`append_internal`: transaction markers and coordinator
records, origin COORDINATOR), say that a partition grew, and wait for growth.

`LocalPartitions` implements it over the cluster metadata and the log manager. Appends wake
long-polling fetches through one broker-wide `anyio.Event` that is set and replaced on every
append; waiters re-check their partitions. The per-partition signature of `notify_appended`
leaves room for waking only a partition's watchers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import anyio

from odradek.broker.cluster import LEADER_EPOCH, Cluster
from odradek.broker.storage.errors import UnknownPartitionError
from odradek.broker.storage.log import AppendInfo, PartitionLog
from odradek.broker.storage.manager import LogManager
from odradek.broker.storage.producer_state import Origin

TopicPartition = tuple[str, int]


class Partitions(Protocol):
    def log(self, topic: str, partition: int) -> PartitionLog | None:
        """The partition's log, or None when the topic or partition does not exist."""
        ...

    def append_internal(self, topic: str, partition: int, batch: memoryview,
                        now_ms: int, transaction_version: int = 0) -> AppendInfo:
        """Append a batch the broker built (origin COORDINATOR: producer epochs are checked,
        sequences are not; a marker's `transaction_version` 2 asks for the strict epoch check).
        Raises the storage layer's errors (`storage/errors.py`),
        UnknownPartitionError when the partition does not exist."""
        ...

    def notify_appended(self, topic: str, partition: int) -> None:
        """The partition grew: wake fetches waiting for data."""
        ...

    async def wait_for_append(self, timeout_s: float) -> None:
        """Return after the next append anywhere, or after `timeout_s`."""
        ...

    @property
    def log_dirs(self) -> Sequence[Path]: ...

    def logs(self) -> Mapping[TopicPartition, PartitionLog]: ...

    def log_dir_of(self, topic: str, partition: int) -> Path | None: ...

    def is_log_dir_online(self, log_dir: Path) -> bool:
        """False once the log dir failed (see `storage/manager.py`, log dir health)."""
        ...

    def offline_partitions(self, topic: str, partitions: int) -> frozenset[int]:
        """Which of the topic's first `partitions` partitions live in a failed log dir (none,
        at the cost of one check, while every dir is online)."""
        ...


class LocalPartitions:
    """`Partitions` over this node's cluster metadata and log manager."""

    def __init__(self, cluster: Cluster, logs: LogManager) -> None:
        self._cluster = cluster
        self._logs = logs
        self._appended: anyio.Event | None = None
        self._waiting = 0  # fetches parked on `_appended`: with none, an append costs nothing

    def log(self, topic: str, partition: int) -> PartitionLog | None:
        plog = self._logs.get(topic, partition)
        if plog is None or not self._cluster.has_partition(topic, partition):
            return None
        return plog

    def append_internal(self, topic: str, partition: int, batch: memoryview,
                        now_ms: int, transaction_version: int = 0) -> AppendInfo:
        plog = self.log(topic, partition)
        if plog is None:
            raise UnknownPartitionError(f"no partition {topic}-{partition}")
        return plog.append(batch, leader_epoch=LEADER_EPOCH, now_ms=now_ms,
                           origin=Origin.COORDINATOR, transaction_version=transaction_version)

    def notify_appended(self, topic: str, partition: int) -> None:
        ev = self._appended
        if ev is not None and self._waiting:
            self._appended = anyio.Event()
            ev.set()

    def start(self) -> None:
        """Called on the running event loop: from now on appends wake waiters (before it,
        e.g. for a broker driven directly by tests, waits return at once)."""
        self._appended = anyio.Event()

    async def wait_for_append(self, timeout_s: float) -> None:
        ev = self._appended
        if ev is None or timeout_s <= 0:
            return
        self._waiting += 1
        try:
            with anyio.move_on_after(timeout_s):
                await ev.wait()
        finally:
            self._waiting -= 1

    @property
    def log_dirs(self) -> Sequence[Path]:
        return self._logs.log_dirs

    def logs(self) -> Mapping[TopicPartition, PartitionLog]:
        return self._logs.logs()

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        return self._logs.log_dir_of(topic, partition)

    def is_log_dir_online(self, log_dir: Path) -> bool:
        return self._logs.is_online(log_dir)

    def offline_partitions(self, topic: str, partitions: int) -> frozenset[int]:
        if not self._logs.offline_dirs:
            return frozenset()
        return frozenset(p for p in range(partitions)
                         if (d := self._logs.log_dir_of(topic, p)) is not None
                         and not self._logs.is_online(d))
