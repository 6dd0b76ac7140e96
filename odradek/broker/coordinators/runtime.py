"""The coordinator runtime (after Kafka's CoordinatorRuntime): one component hosting any
sans-IO coordinator shard (`odradek/coordinator/common.py`) over its internal topic.

For its shard the runtime:
- **creates the internal topic** on first need (`InternalTopic`: name, partition count,
  configs such as `cleanup.policy=compact`); an existing topic keeps its partition count;
- **replays it** at start, partition by partition in chunks of `LOAD_CHUNK_BYTES`, yielding to
  the event loop between chunks so connections are served while it loads; requests wait for
  the load (`ready()`); an unreadable batch is skipped with a log line, an unreadable
  partition stops being read (what could be read is served rather than nothing);
- **writes what operations return**: after every call into the shard, `flush()` appends each
  queued `Write` as one batch (records, or a transaction marker) with origin COORDINATOR,
  synchronously, maps any failure to one Kafka error code (`error_code_for`), reports it through
  `Write.on_done`, repeats while acknowledgements queue more writes, then wakes fetchers of
  the partitions that grew. One event loop and no await inside a shard call: calls never
  interleave, and an answer leaves only after its records are in the log;
- **answers requests that wait**: `wait(op)` awaits the `Pending` an operation returned;
- **fires timers**: a task sleeps until the shard's `next_deadline()`, or until a call moved
  that deadline earlier, then calls `on_timer(now)`.

A runtime driven without its task (tests that build a Broker and call handlers directly)
loads synchronously on the first request instead.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import anyio
import anyio.lowlevel
import structlog

from odradek.broker.cluster import ClusterError, Topic
from odradek.broker.partitions import Partitions
from odradek.broker.storage.errors import CodedError, StorageError, error_code_for
from odradek.coordinator.common import Clock, CoordinatorShard, Pending, Write
from odradek.wire import ErrorCode, ProtocolError
from odradek.wire.records import build_batch, build_control_batch, iter_batches

log = structlog.get_logger("odradek.coordinator")

S = TypeVar("S", bound=CoordinatorShard)
T = TypeVar("T")

LOAD_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class InternalTopic:
    name: str
    partitions: int  # for a new topic; an existing one keeps its count
    configs: Mapping[str, str]


class TopicCreator(Protocol):
    def get(self, name: str) -> Topic | None: ...

    def create_topic(self, name: str, partitions: int, configs: Mapping[str, str | None]
                     ) -> Topic: ...


class CoordinatorRuntime(Generic[S]):
    def __init__(self, name: str, shard: S, topic: InternalTopic, partitions: Partitions,
                 topics: TopicCreator, clock: Clock, *,
                 load_after: Sequence[Callable[[], Awaitable[None]]] = (),
                 on_written: Callable[[Write], None] | None = None) -> None:
        """`load_after`: what must be ready before this shard loads (the transaction
        coordinator's recovery writes markers the group coordinator must see).
        `on_written`: told of every write that succeeded, after its `on_done`."""
        self.name = name
        self.shard = shard
        self.topic = topic
        self._partitions = partitions
        self._topics = topics
        self._clock = clock
        self._load_after = load_after
        self._on_written = on_written
        self._loaded = False
        self._running = False
        self._ready: anyio.Event | None = None
        self._wake: anyio.Event | None = None
        self._sleep_until: int | None = None

    # -- the internal topic ---------------------------------------------------------------------

    def ensure_topic(self) -> bool:
        """Create the internal topic if missing; False if that failed."""
        if self._topics.get(self.topic.name) is not None:
            return True
        try:
            created = self._topics.create_topic(self.topic.name, self.topic.partitions,
                                                dict(self.topic.configs))
        except (ClusterError, OSError) as exc:
            log.error("cannot create internal topic", coordinator=self.name,
                      topic=self.topic.name, error=str(exc))
            return False
        log.info("created internal topic", coordinator=self.name, topic=self.topic.name,
                 partitions=created.partitions)
        return True

    # -- load -------------------------------------------------------------------------------

    async def ready(self) -> None:
        """Return once the internal topic has been replayed."""
        if self._loaded:
            return
        if not self._running:
            for dependency in self._load_after:
                await dependency()
            self.shard.begin_load()
            try:
                for _ in self._replay():
                    pass
            finally:
                self._finish_load()
            return
        if self._ready is None:
            self._ready = anyio.Event()
        await self._ready.wait()

    async def _load(self) -> None:
        self.shard.begin_load()
        try:
            for _ in self._replay():
                await anyio.lowlevel.checkpoint()  # let connections in while loading
        finally:
            self._finish_load()  # whatever happened, requests must not wait forever

    def move_partition(self, partition: int) -> bool:
        """The leader of internal partition `partition` changed (`--brokers N`): drop its
        state and replay the new leader's own replica of it (Kafka unloads on the old host and
        loads from the new host's local log, so what the new leader lacks is gone). Nothing to
        do before the first load, or for a shard without per-partition unload. Synchronous."""
        unload = getattr(self.shard, "unload_partition", None)
        if not self._loaded or unload is None:
            return False
        unload(partition)
        self.shard.begin_load()
        try:
            for _ in self._replay((partition,)):
                pass
        finally:
            self.shard.finish_load()
        self.flush()
        log.info("coordinator partition reloaded", coordinator=self.name,
                 topic=self.topic.name, partition=partition)
        return True

    def _replay(self, only: Sequence[int] | None = None) -> Iterator[None]:
        """Replay every partition of the internal topic (or `only` those), yielding between
        chunks."""
        topic = self._topics.get(self.topic.name)
        for partition in (only if only is not None else range(topic.partitions if topic else 0)):
            plog = self._partitions.log(self.topic.name, partition)
            if plog is None:
                continue
            offset = plog.log_start_offset
            while offset < plog.log_end_offset:
                try:
                    batches = list(iter_batches(plog.read(offset, LOAD_CHUNK_BYTES)))
                except (StorageError, OSError, ProtocolError) as exc:
                    log.error("cannot read internal topic; the rest of this partition is not "
                              "loaded", coordinator=self.name, topic=self.topic.name,
                              partition=partition, offset=offset, error=str(exc))
                    break
                if not batches:
                    break
                for batch in batches:
                    try:
                        self.shard.replay(batch)
                    except ProtocolError as exc:
                        log.error("skipping unreadable internal batch", coordinator=self.name,
                                  topic=self.topic.name, partition=partition,
                                  offset=batch.base_offset, error=str(exc))
                    offset = batch.next_offset
                yield

    def _finish_load(self) -> None:
        self.shard.finish_load()
        self._loaded = True
        if self._ready is not None:
            self._ready.set()
        self.flush()

    # -- calls ----------------------------------------------------------------------------------

    async def read(self, op: Callable[[S], T]) -> T:
        """Run an operation that writes nothing (describe, list, fetch offsets)."""
        await self.ready()
        return op(self.shard)

    async def write(self, op: Callable[[S], T]) -> T:
        """Run an operation, then write what it queued before returning its answer."""
        await self.ready()
        result = op(self.shard)
        self.flush()
        return result

    async def wait(self, op: Callable[[S], Pending[T]]) -> T:
        """Run an operation whose answer may come later, and wait for it."""
        pending = await self.write(op)
        if not pending.done:
            event = anyio.Event()
            pending.on_resolved(lambda _: event.set())
            await event.wait()
        return pending.result()

    def call_loaded(self, op: Callable[[S], object]) -> bool:
        """Run a notification from another part of the broker at once (a deleted topic, a
        marker written), if the shard is loaded; False if it is not (replay will see it)."""
        if not self._loaded:
            return False
        op(self.shard)
        self.flush()
        return True

    # -- writes ---------------------------------------------------------------------------------

    def flush(self) -> None:
        """Append what the shard queued; acknowledgements may queue more."""
        grown: set[tuple[str, int]] = set()
        while writes := self.shard.outbox.take():
            for w in writes:
                error, base_offset = self._append(w)
                w.on_done(error, base_offset)
                if error == ErrorCode.NONE:
                    grown.add((w.topic, w.partition))
                    if self._on_written is not None:
                        self._on_written(w)
        for topic, partition in grown:
            self._partitions.notify_appended(topic, partition)
        self._reschedule()

    def _append(self, w: Write) -> tuple[ErrorCode, int]:
        if w.topic == self.topic.name and not self.ensure_topic():
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
        now = self._clock.now_ms()
        if w.marker is not None:
            raw = build_control_batch(commit=w.marker.commit, producer_id=w.producer_id,
                                      producer_epoch=w.producer_epoch,
                                      coordinator_epoch=w.marker.coordinator_epoch,
                                      timestamp_ms=now)
        else:
            raw = build_batch(w.records, base_timestamp=now, producer_id=w.producer_id,
                              producer_epoch=w.producer_epoch, base_sequence=-1,
                              is_transactional=w.transactional)
        try:
            info = self._partitions.append_internal(
                w.topic, w.partition, memoryview(bytearray(raw)), now,
                w.marker.transaction_version if w.marker is not None else 0)
        except Exception as exc:
            code = error_code_for(exc)
            if isinstance(exc, CodedError | OSError):
                log.warning("coordinator write failed", coordinator=self.name, topic=w.topic,
                            partition=w.partition, marker=w.marker is not None,
                            error=code.name, reason=str(exc))
            else:  # a bug: the write fails, the broker goes on
                log.exception("coordinator write failed unexpectedly", coordinator=self.name,
                              topic=w.topic, partition=w.partition)
            return code, -1
        return ErrorCode.NONE, info.first_offset

    # -- timers ---------------------------------------------------------------------------------

    def fire_timers(self, now: int | None = None) -> None:
        """Run the shard's timers due at `now` (default: the clock) and write what they queued."""
        self.shard.on_timer(self._clock.now_ms() if now is None else now)
        self.flush()

    def _reschedule(self) -> None:
        wake = self._wake
        deadline = self.shard.next_deadline() if self._loaded else None
        if (wake is not None and deadline is not None
                and (self._sleep_until is None or deadline < self._sleep_until)):
            wake.set()  # the timer task sleeps too long now

    async def run(self) -> None:
        """Load the internal topic, then fire the shard's timers forever."""
        self._running = True
        if self._ready is None:
            self._ready = anyio.Event()
        for dependency in self._load_after:
            await dependency()
        if not self._loaded:
            await self._load()
        while True:
            wake = self._wake = anyio.Event()
            deadline = self.shard.next_deadline()
            self._sleep_until = deadline
            delay = (None if deadline is None
                     else max(0.0, (deadline - self._clock.now_ms()) / 1000))
            with anyio.move_on_after(delay):
                await wake.wait()
            self._sleep_until = None
            try:
                self.fire_timers()
            except Exception:
                log.exception("coordinator timer failed", coordinator=self.name)
