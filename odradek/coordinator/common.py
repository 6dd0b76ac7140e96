"""What every coordinator shares (Kafka's coordinator-common, sans IO): the shard contract.

A coordinator is a *shard*: a state machine over one internal compacted topic
(`__consumer_offsets`, `__transaction_state`, later `__share_group_state`). It never touches
sockets, files, tasks or a clock of its own. The broker's `CoordinatorRuntime` hosts it:

- **Load**: `begin_load()`, then `replay(batch)` for every batch of the topic in log order,
  then `finish_load()`. Operations are only called after that.
- **Operations** are plain method calls that return their answer at once, or a `Pending`
  answer completed later (a JoinGroup held until the join phase ends, a commit held until
  its record is written). What an operation must persist it puts in its `Outbox` as `Write`s;
  the runtime appends each as one batch right after the call and reports back through
  `Write.on_done(error, base_offset)`, which may complete `Pending`s and queue more writes.
  So every state change is written before its answer leaves, in the one style for all
  coordinators.
- **Timers**: the runtime calls `on_timer(now)` once `now` reaches `next_deadline()`.

The runtime maps every append failure to one Kafka error code; each coordinator maps that
code to what its protocol answers (Kafka's rules differ per coordinator).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from odradek.wire import ErrorCode
from odradek.wire.records import RecordBatch

T = TypeVar("T")
U = TypeVar("U")
K = TypeVar("K", bound=Hashable)

# (key, value) of one record; a None value is a tombstone.
KeyValue = tuple[bytes, bytes | None]


class Clock(Protocol):
    def now_ms(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Marker:
    """A transaction marker (a COMMIT or ABORT control batch) instead of records."""

    commit: bool
    coordinator_epoch: int
    transaction_version: int = 0  # of the transaction it ends (2: the strict epoch check)


@dataclass(slots=True)
class Write:
    """Records for one partition, appended as one batch with origin COORDINATOR (producer
    epochs are checked, sequences are not). `on_done(error, base_offset)` follows, with
    ErrorCode.NONE on success."""

    topic: str
    partition: int
    records: list[KeyValue]
    on_done: Callable[[ErrorCode, int], None]
    producer_id: int = -1
    producer_epoch: int = -1
    transactional: bool = False
    marker: Marker | None = None


class Outbox:
    """The writes a shard queued since the runtime last took them."""

    __slots__ = ("_writes",)

    def __init__(self) -> None:
        self._writes: list[Write] = []

    def write(self, write: Write) -> None:
        self._writes.append(write)

    def take(self) -> list[Write]:
        out, self._writes = self._writes, []
        return out


class CoordinatorShard(Protocol):
    """What the runtime drives; see the module docstring for the order of calls."""

    outbox: Outbox

    def begin_load(self) -> None: ...

    def replay(self, batch: RecordBatch) -> None:
        """Apply one batch of the internal topic (ProtocolError: the batch is unreadable)."""
        ...

    def finish_load(self) -> None: ...

    def next_deadline(self) -> int | None: ...

    def on_timer(self, now: int) -> None: ...


class Pending(Generic[T]):
    """An answer completed now or later (JoinGroup, SyncGroup, anything awaiting a write).

    The runtime registers `on_resolved` (setting an event the request waits on); callbacks
    must not call back into the coordinator.
    """

    __slots__ = ("_callbacks", "_done", "_value")

    def __init__(self) -> None:
        self._done = False
        self._value: T | None = None
        self._callbacks: list[Callable[[T], None]] = []

    @classmethod
    def resolved(cls, value: T) -> Pending[T]:
        p: Pending[T] = cls()
        p.resolve(value)
        return p

    @property
    def done(self) -> bool:
        return self._done

    def result(self) -> T:
        if not self._done:
            raise RuntimeError("pending response not resolved yet")
        return self._value  # type: ignore[return-value]

    def resolve(self, value: T) -> None:
        if self._done:
            raise RuntimeError("pending response resolved twice")
        self._done, self._value = True, value
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(value)

    def on_resolved(self, cb: Callable[[T], None]) -> None:
        if self._done:
            cb(self._value)  # type: ignore[arg-type]
        else:
            self._callbacks.append(cb)

    def then(self, fn: Callable[[T], U]) -> Pending[U]:
        """A Pending resolved with `fn(value)` once this one resolves."""
        out: Pending[U] = Pending()
        self.on_resolved(lambda value: out.resolve(fn(value)))
        return out


class Timers(Generic[K]):
    """Keyed deadlines: setting a key again moves it; lazily-deleted heap entries."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, K]] = []
        self._live: dict[K, tuple[int, int]] = {}
        self._seq = 0

    def set(self, key: K, deadline: int) -> None:
        self._seq += 1
        self._live[key] = (deadline, self._seq)
        heapq.heappush(self._heap, (deadline, self._seq, key))

    def cancel(self, key: K) -> None:
        self._live.pop(key, None)

    def deadline(self, key: K) -> int | None:
        entry = self._live.get(key)
        return None if entry is None else entry[0]

    def __contains__(self, key: K) -> bool:
        return key in self._live

    def __len__(self) -> int:
        return len(self._live)

    def _prune(self) -> None:
        heap = self._heap
        while heap:
            deadline, seq, key = heap[0]
            if self._live.get(key) == (deadline, seq):
                return
            heapq.heappop(heap)

    def next_deadline(self) -> int | None:
        self._prune()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: int) -> K | None:
        """The earliest key due at `now` (removed), or None."""
        self._prune()
        if not self._heap or self._heap[0][0] > now:
            return None
        _, _, key = heapq.heappop(self._heap)
        del self._live[key]
        return key
