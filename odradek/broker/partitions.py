"""The partitions port: what handlers and coordinators may do with partition logs.

Handlers and the coordinator runtime see partitions only through `Partitions`, a protocol a
test can fake: look a log up (None unless the cluster metadata has the partition), append a
batch the broker itself builds (`append_internal`: transaction markers and coordinator
records, origin COORDINATOR), say that a partition changed, and wait for such news.

Long-polling fetches are woken per partition, as Kafka's delayed-fetch purgatory (keyed by
partition) and franz-go's kfake do: a fetch that must wait registers a `Watch` on the
partitions it reads (`watch`), and `notify_appended(topic, partition)` fires only the
watches on that partition, so an append costs a dict lookup and wakes nobody else. What
notifies: every append (Produce, the coordinator runtime's records and transaction markers:
the high watermark and the last stable offset move only with them on a single node), a log
start offset moving (DeleteRecords, retention: through the log manager's
`on_partition_changed`), a log dir failing (each of its partitions), and a deleted topic
(each of its partitions).

No lost wake-up: a watch fires whether or not its fetch is parked yet, and stays fired until
the fetch re-arms it just before its next read pass; `changes` counts every notification, so
a fetch compares it across its first read pass and the registration of its watch (anything
notified in between, a window that is empty today since reading does not yield, means read
again rather than park). An append at any moment of a long poll is therefore read by that poll.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
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
        """The partition grew, or its offsets or state changed (log start, dir failure,
        deletion): wake the fetches watching it."""
        ...

    @property
    def changes(self) -> int:
        """How many notifications so far (any partition): unchanged across a read pass and
        a `watch` registration means nothing was missed in between."""
        ...

    def watch(self, keys: Iterable[TopicPartition]) -> Watch:
        """A watch on these partitions, fired by their next notification (close it, or use
        it as a context manager)."""
        ...

    async def wait(self, watch: Watch, timeout_s: float) -> None:
        """Return once `watch` has fired since it was last re-armed (at once if it already
        has), or after `timeout_s`."""
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


class Watch:
    """One long-polling fetch's interest in some partitions (a fetch session's, kept with the
    session across its polls), registered until `close()`."""

    __slots__ = ("_event", "_keys", "_registry", "fired")

    def __init__(self, registry: dict[TopicPartition, list[Watch]],
                 keys: Iterable[TopicPartition]) -> None:
        self._registry = registry
        self._keys = keys = tuple(keys)
        self._event: anyio.Event | None = None
        self.fired = False  # news since the last `rearm`
        get = registry.get
        for key in keys:
            watches = get(key)
            if watches is None:
                registry[key] = [self]
            else:
                watches.append(self)

    def fire(self) -> None:
        self.fired = True
        if self._event is not None:
            self._event.set()

    def rearm(self) -> None:
        """Before a read pass: what fires from now on is news to the next wait."""
        self.fired = False
        if self._event is not None and self._event.is_set():
            self._event = None

    async def wait(self, timeout_s: float) -> None:
        if self.fired or timeout_s <= 0:
            return
        event = self._event
        if event is None:
            event = self._event = anyio.Event()
        with anyio.move_on_after(timeout_s):
            await event.wait()

    def close(self) -> None:
        registry = self._registry
        for key in self._keys:
            watches = registry.get(key)
            if watches is None:
                continue
            if len(watches) == 1:
                if watches[0] is self:
                    del registry[key]
            else:
                with contextlib.suppress(ValueError):
                    watches.remove(self)
        self._keys = ()

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalPartitions:
    """`Partitions` over this node's cluster metadata and log manager."""

    def __init__(self, cluster: Cluster, logs: LogManager,
                 make_missing: Callable[[str, int], PartitionLog | None] | None = None) -> None:
        self._cluster = cluster
        self._logs = logs
        # Makes the log of a partition the metadata names, not made yet (`pending_logs.py`).
        self._make_missing = make_missing
        self._watches: dict[TopicPartition, list[Watch]] = {}
        self._changes = 0
        logs.on_partition_changed = self.notify_appended  # log start moves, dir failures

    def log(self, topic: str, partition: int) -> PartitionLog | None:
        plog = self._logs.get(topic, partition)
        if not self._cluster.has_partition(topic, partition):
            return None
        if plog is None and self._make_missing is not None:
            return self._make_missing(topic, partition)  # created, not answered yet
        return plog

    def append_internal(self, topic: str, partition: int, batch: memoryview,
                        now_ms: int, transaction_version: int = 0) -> AppendInfo:
        plog = self.log(topic, partition)
        if plog is None:
            raise UnknownPartitionError(f"no partition {topic}-{partition}")
        return plog.append(batch, leader_epoch=LEADER_EPOCH, now_ms=now_ms,
                           origin=Origin.COORDINATOR, transaction_version=transaction_version)

    def notify_appended(self, topic: str, partition: int) -> None:
        self._changes += 1
        watches = self._watches.get((topic, partition))
        if watches:
            for w in watches:
                w.fire()

    @property
    def changes(self) -> int:
        return self._changes

    def watch(self, keys: Iterable[TopicPartition]) -> Watch:
        return Watch(self._watches, keys)

    async def wait(self, watch: Watch, timeout_s: float) -> None:
        await watch.wait(timeout_s)

    def watched(self) -> int:
        """How many partitions some fetch watches (for tests and diagnostics)."""
        return len(self._watches)

    def start(self) -> None:
        """Called on the running event loop at start-up; nothing to do (watches make their
        events on the loop that waits), kept for callers."""

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
