"""The group coordinator's shell: replay, timers and `__consumer_offsets` writes.

The sans-IO `GroupCoordinator` does the thinking; this module gives it a clock (the broker's),
a task that fires its timers, and storage:

- `__consumer_offsets` is created on first use (FindCoordinator for a group, or the first
  write) with `offsets.topic.num.partitions` partitions, `cleanup.policy=compact` and
  `segment.bytes=offsets.topic.segment.bytes`; an existing topic keeps its partition count.
  A group lives in partition `abs(javaHash(group id)) % partitions`, as in Kafka.
- On start the timer task first replays every partition of the topic into the coordinator
  (requests wait on an Event until that is done), then sleeps until the coordinator's next
  deadline or until a request moved that deadline earlier.
- Handlers call the coordinator directly from their connection tasks. There is one event loop
  and no await inside a coordinator call, so calls never interleave; after each call `_drain`
  appends what the coordinator wrote (one batch per `Append`, synchronously: a commit is
  acknowledged only after its record is in the log) and acknowledges it. Responses that wait
  (JoinGroup, a follower's SyncGroup) await an anyio Event set when their `Pending` resolves.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.abc
import anyio.lowlevel
import structlog

from odradek.broker.cluster import LEADER_EPOCH, ClusterError
from odradek.broker.storage.log import (
    LogClosedError,
    MessageTooLargeError,
    PartitionLog,
    StorageError,
)
from odradek.broker.storage.producer_state import (
    InvalidProducerEpochError,
    Origin,
    ProducerStateError,
)
from odradek.coordinator.group.coordinator import (
    Append,
    GroupConfig,
    GroupCoordinator,
    JoinRequest,
    SyncRequest,
)
from odradek.coordinator.group.model import (
    FetchedOffset,
    GroupDescription,
    GroupOverview,
    JoinResult,
    LeaveResult,
    LeavingMember,
    Pending,
    SyncResult,
    TopicPartition,
)
from odradek.coordinator.group.records import OFFSETS_TOPIC, OffsetAndMetadata
from odradek.wire import ErrorCode, ProtocolError
from odradek.wire.records import build_batch, iter_batches

if TYPE_CHECKING:
    from odradek.broker.broker import Broker

log = structlog.get_logger("odradek.groups")

T = TypeVar("T")

LOAD_CHUNK_BYTES = 1 << 20


def client_host(address: str) -> str:
    """Kafka reports a member's host as Java's InetAddress.toString: "/" + ip."""
    host = address.rsplit(":", 1)[0] if ":" in address else address
    return "/" + host.strip("[]")


def _int_setting(broker: Broker, name: str) -> int:
    value = broker.config.get(name)
    if not isinstance(value, int):
        raise TypeError(f"setting {name} is not an integer: {value!r}")
    return value


class GroupShell:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        cfg = broker.config
        existing = broker.cluster.get(OFFSETS_TOPIC)
        partitions = existing.partitions if existing else cfg.offsets_topic_num_partitions
        self.coordinator = GroupCoordinator(
            GroupConfig(
                initial_rebalance_delay_ms=cfg.group_initial_rebalance_delay_ms,
                min_session_timeout_ms=cfg.group_min_session_timeout_ms,
                max_session_timeout_ms=cfg.group_max_session_timeout_ms,
                max_size=_int_setting(broker, "group.max.size"),
                offsets_retention_ms=cfg.offsets_retention_ms,
                offsets_retention_check_interval_ms=_int_setting(
                    broker, "offsets.retention.check.interval.ms"),
                offset_metadata_max_bytes=_int_setting(broker, "offset.metadata.max.bytes"),
                offsets_topic_partitions=partitions,
            ),
            clock=broker,
            log=self._log,
        )
        self._loaded = False
        self._running = False
        self._ready: anyio.Event | None = None
        self._wake: anyio.Event | None = None
        self._sleep_until: int | None = None

    @staticmethod
    def _log(event: str, **kw: object) -> None:
        log.info(event, **kw)

    # -- lifecycle ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Replay `__consumer_offsets`, then fire the coordinator's timers forever."""
        self._running = True
        if self._ready is None:
            self._ready = anyio.Event()
        if not self._loaded:
            await self._load()
        coord = self.coordinator
        while True:
            wake = self._wake = anyio.Event()
            deadline = coord.next_deadline()
            self._sleep_until = deadline
            delay = None if deadline is None else max(0.0, (deadline - coord.now()) / 1000)
            with anyio.move_on_after(delay):
                await wake.wait()
            self._sleep_until = None
            try:
                coord.on_timer(coord.now())
                self._drain()
            except Exception:
                log.exception("group coordinator timer failed")

    async def ready(self) -> None:
        """Return once the offsets topic has been replayed."""
        if self._loaded:
            return
        if not self._running:
            # No timer task (e.g. a broker driven directly in tests): load here.
            self.coordinator.begin_load()
            for p in self._offsets_partitions():
                for _ in self._load_partition(p):
                    pass
            self._finish_load()
            return
        if self._ready is None:
            self._ready = anyio.Event()
        await self._ready.wait()

    async def _load(self) -> None:
        self.coordinator.begin_load()
        try:
            for p in self._offsets_partitions():
                for _ in self._load_partition(p):
                    await anyio.lowlevel.checkpoint()  # let connections in while loading
        finally:
            self._finish_load()  # whatever happened, requests must not wait forever

    def _offsets_partitions(self) -> list[int]:
        topic = self.broker.cluster.get(OFFSETS_TOPIC)
        return list(range(topic.partitions)) if topic else []

    def _load_partition(self, partition: int) -> Iterable[None]:
        """Replay one partition, yielding between chunks."""
        plog = self.broker.partition_log(OFFSETS_TOPIC, partition)
        if plog is None:
            return
        offset = plog.log_start_offset
        while offset < plog.log_end_offset:
            try:
                data = plog.read(offset, LOAD_CHUNK_BYTES)
                batches = list(iter_batches(data))
            except (StorageError, OSError, ProtocolError) as e:
                # Serve what could be read rather than keep every group waiting.
                log.error("cannot read __consumer_offsets; the rest of this partition is "
                          "not loaded", partition=partition, offset=offset, error=str(e))
                return
            if not batches:
                return
            for batch in batches:
                try:
                    self.coordinator.load_batch(batch)
                except ProtocolError as e:
                    log.error("skipping unreadable __consumer_offsets batch", partition=partition,
                              offset=batch.base_offset, error=str(e))
                offset = batch.next_offset
            yield

    def _finish_load(self) -> None:
        self.coordinator.finish_load()
        self._loaded = True
        groups = self.coordinator.groups
        log.info("group coordinator loaded", groups=len(groups),
                 offsets=sum(len(g.offsets) for g in groups.values()))
        if self._ready is not None:
            self._ready.set()
        self._drain()

    # -- storage --------------------------------------------------------------------------------

    def ensure_offsets_topic(self) -> bool:
        """Create `__consumer_offsets` if missing; False if that failed."""
        cluster = self.broker.cluster
        if cluster.get(OFFSETS_TOPIC) is not None:
            return True
        cfg = self.broker.config
        configs: dict[str, str | None] = {
            "cleanup.policy": "compact",
            "compression.type": "producer",
            "segment.bytes": str(_int_setting(self.broker, "offsets.topic.segment.bytes")),
        }
        try:
            topic = cluster.create_topic(OFFSETS_TOPIC, cfg.offsets_topic_num_partitions, configs)
        except (ClusterError, OSError) as e:
            log.error("cannot create __consumer_offsets", error=str(e))
            return False
        log.info("created __consumer_offsets", partitions=topic.partitions)
        return True

    def _offsets_log(self, partition: int) -> PartitionLog | None:
        if not self.ensure_offsets_topic():
            return None
        return self.broker.partition_log(OFFSETS_TOPIC, partition)

    def _drain(self) -> None:
        """Write what the coordinator produced; acknowledgements may produce more."""
        appended = False
        while appends := self.coordinator.take_appends():
            for a in appends:
                appended = self._append(a) or appended
        if appended:
            self.broker.notify_appended()
        wake = self._wake
        deadline = self.coordinator.next_deadline()
        if (wake is not None and deadline is not None
                and (self._sleep_until is None or deadline < self._sleep_until)):
            wake.set()  # the timer task sleeps too long now

    def _append(self, a: Append) -> bool:
        now = self.broker.now_ms()
        plog = self._offsets_log(a.partition)
        if plog is None:
            a.on_done(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
            return False
        # Transactional offset commits carry the producer's id and epoch but no sequence: the
        # partition checks their epoch only (origin COORDINATOR), as Kafka's group coordinator.
        raw = build_batch(a.records, base_timestamp=now, producer_id=a.producer_id,
                          producer_epoch=a.producer_epoch, base_sequence=-1,
                          is_transactional=a.transactional)
        try:
            info = plog.append(memoryview(bytearray(raw)), leader_epoch=LEADER_EPOCH, now_ms=now,
                               origin=Origin.COORDINATOR)
        except ProducerStateError as e:  # a fenced producer: an error answer, not a crash
            log.info("__consumer_offsets append refused", partition=a.partition, error=str(e))
            a.on_done(ErrorCode.INVALID_PRODUCER_EPOCH if isinstance(e, InvalidProducerEpochError)
                      else ErrorCode.INVALID_TXN_STATE, -1)
            return False
        except MessageTooLargeError as e:
            log.error("__consumer_offsets append too large", partition=a.partition, error=str(e))
            a.on_done(ErrorCode.MESSAGE_TOO_LARGE, -1)
            return False
        except LogClosedError as e:
            log.error("__consumer_offsets log closed", partition=a.partition, error=str(e))
            a.on_done(ErrorCode.NOT_LEADER_OR_FOLLOWER, -1)
            return False
        except (StorageError, OSError) as e:
            log.error("__consumer_offsets append failed", partition=a.partition, error=str(e))
            a.on_done(ErrorCode.KAFKA_STORAGE_ERROR, -1)
            return False
        a.on_done(ErrorCode.NONE, info.first_offset)
        return True

    @staticmethod
    async def _wait(pending: Pending[T]) -> T:
        if not pending.done:
            event = anyio.Event()
            pending.on_resolved(lambda _: event.set())
            await event.wait()
        return pending.result()

    # -- the api the handlers use ---------------------------------------------------------------

    async def join(self, req: JoinRequest) -> JoinResult:
        await self.ready()
        pending = self.coordinator.join_group(req)
        self._drain()
        return await self._wait(pending)

    async def sync(self, req: SyncRequest) -> SyncResult:
        await self.ready()
        pending = self.coordinator.sync_group(req)
        self._drain()
        return await self._wait(pending)

    async def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None,
                        generation_id: int) -> ErrorCode:
        await self.ready()
        error = self.coordinator.heartbeat(group_id, member_id, group_instance_id, generation_id)
        self._drain()
        return error

    async def leave(self, group_id: str, members: list[LeavingMember]) -> LeaveResult:
        await self.ready()
        result = self.coordinator.leave_group(group_id, members)
        self._drain()
        return result

    async def commit(self, group_id: str, member_id: str, group_instance_id: str | None,
                     generation_id: int, offsets: dict[TopicPartition, OffsetAndMetadata],
                     ) -> dict[TopicPartition, ErrorCode]:
        await self.ready()
        pending = self.coordinator.commit_offsets(group_id, member_id, group_instance_id,
                                                  generation_id, offsets)
        self._drain()
        return await self._wait(pending)

    async def commit_txn(self, group_id: str, producer_id: int, producer_epoch: int,
                         member_id: str, group_instance_id: str | None, generation_id: int,
                         offsets: dict[TopicPartition, OffsetAndMetadata],
                         ) -> dict[TopicPartition, ErrorCode]:
        """TxnOffsetCommit (called by the transaction handlers): the offsets are staged until
        the transaction's marker reaches `__consumer_offsets`."""
        await self.ready()
        pending = self.coordinator.commit_txn_offsets(group_id, producer_id, producer_epoch,
                                                      member_id, group_instance_id,
                                                      generation_id, offsets)
        self._drain()
        return await self._wait(pending)

    def topics_deleted(self, topics: Iterable[str]) -> None:
        """Drop every group's committed offsets for deleted topics (Kafka does this when a
        topic is deleted, so a re-created topic does not inherit stale positions)."""
        if self._loaded:
            self.coordinator.delete_topic_offsets(set(topics))
            self._drain()

    async def fetch(self, group_id: str, partitions: list[TopicPartition] | None,
                    require_stable: bool) -> tuple[ErrorCode, dict[TopicPartition, FetchedOffset]]:
        await self.ready()
        return self.coordinator.fetch_offsets(group_id, partitions, require_stable)

    async def describe(self, group_id: str) -> GroupDescription:
        await self.ready()
        return self.coordinator.describe_group(group_id)

    async def list_groups(self, states: Iterable[str], types: Iterable[str]) -> list[GroupOverview]:
        await self.ready()
        return self.coordinator.list_groups(states, types)

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        await self.ready()
        result = self.coordinator.delete_groups(group_ids)
        self._drain()
        return result

    async def delete_offsets(self, group_id: str, partitions: list[TopicPartition],
                             ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        await self.ready()
        result = self.coordinator.delete_offsets(group_id, partitions)
        self._drain()
        return result


_SHELLS: weakref.WeakKeyDictionary[Broker, GroupShell] = weakref.WeakKeyDictionary()


def shell(broker: Broker) -> GroupShell:
    """The broker's group coordinator shell (created on first use)."""
    found = _SHELLS.get(broker)
    if found is None:
        found = _SHELLS[broker] = GroupShell(broker)
    return found


async def start(broker: Broker, tg: anyio.abc.TaskGroup) -> None:
    """Broker start-up hook: replay `__consumer_offsets` and run the timers in `tg`."""
    tg.start_soon(shell(broker).run, name="group-coordinator")
