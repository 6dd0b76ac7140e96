"""The share coordinator and the broker's share-partitions as one coordinator shard over
`__share_group_state`, sans IO (Kafka's ShareCoordinatorShard plus the state-keeping half
of SharePartitionManager and its ShareSessionCache).

On a Kafka cluster the share-partition leader (a broker) and the share coordinator (the
leader of a `__share_group_state` partition) talk over Initialize/Read/Write/
DeleteShareGroupState. One Odradek node is both, so the share-partitions call the store
directly: those four internal apis are not served. What Kafka's persister would send becomes
a `Write` to `__share_group_state`, at the partition Kafka's share coordinator uses for the
key "group:topicId:partition" (`partition_for`), and the answer waits for it.

- `initialize(key, start_offset)`: InitializeShareGroupState for a share-partition the group
  coordinator asked for (a state already stored counts as initialised, as Kafka answers a
  second initialisation of the same epoch).
- `share_partition(key, log)`: the in-memory `SharePartition` of a key, built from the
  persisted state or, without any, from `share.auto.offset.reset` over the log (`LogInfo`).
- `acquire` / `acknowledge` / `release_member`: every `StateUpdate` they make is written
  before the caller answers (Pending). A failed write restores the share-partition (and the
  store's entry for the key) to what it was before, and the acknowledgement answers the
  write's error.
- Lock timers: `next_deadline` / `on_timer` expire acquisition locks; expired records are
  persisted back as AVAILABLE (or ARCHIVED at the delivery limit).
- Every change persisted may have made records AVAILABLE again: `on_available` tells the
  broker, which wakes the ShareFetches parked on that partition.
- Share sessions (`sessions`) are in memory only, as Kafka's: after a restart a client's
  next fetch gets SHARE_SESSION_NOT_FOUND and opens a new one.

Not implemented yet: DeleteShareGroupState (topics no longer subscribed, deleted groups),
ReadShareGroupStateSummary, pruning `__share_group_state`
(`share.coordinator.state.topic.prune.interval.ms`), per-group configs.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from odradek.coordinator.common import Clock, Outbox, Pending, Write
from odradek.coordinator.group.records import partition_for as hash_partition
from odradek.coordinator.share.manager import SharePartitions, TopicIdPartition
from odradek.coordinator.share.offset_reset import OffsetReset, initial_start_offset
from odradek.coordinator.share.partition import (
    AckBatch,
    AckResult,
    AcquiredRecords,
    AcquireMode,
    SharePartition,
    SharePartitionConfig,
    StateUpdate,
)
from odradek.coordinator.share.session import ShareSessionCache
from odradek.coordinator.share.state import (
    SHARE_STATE_TOPIC,
    PersistedState,
    SharePartitionKey,
    ShareStateStore,
)
from odradek.wire import ErrorCode
from odradek.wire.records import RecordBatch


@dataclass(frozen=True, slots=True)
class LogInfo:
    """What the share-partition's offset reset needs of its log."""

    log_start_offset: int
    log_end_offset: int  # the high watermark
    offset_for_timestamp: Callable[[int], int | None]


def kafka_uuid(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: url-safe base64 without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def _no_log(event: str, **kw: object) -> None:
    pass


class ShareCoordinator:
    def __init__(self, partition_config: SharePartitionConfig, reset: OffsetReset,
                 state_partitions: int, clock: Clock, *, updates_per_snapshot: int = 500,
                 max_sessions: int = 2_000,
                 log: Callable[..., None] = _no_log) -> None:
        self.partition_config = partition_config
        self.reset = reset
        self.state_partitions = state_partitions
        self.store = ShareStateStore(updates_per_snapshot)
        self.partitions = SharePartitions(lambda _gid: partition_config)
        # where a group's new share-partitions start (its share.auto.offset.reset)
        self.reset_for: Callable[[str], OffsetReset] = lambda _gid: reset
        self.sessions = ShareSessionCache(max_sessions)
        self.outbox = Outbox()
        self._clock = clock
        self._log = log
        # Told of a share-partition whose records may have become AVAILABLE (a release, a
        # lock expiry, a restart): the broker wakes the ShareFetches parked on it.
        self.on_available: Callable[[uuid.UUID, int], None] = lambda _t, _p: None

    # -- runtime interface ----------------------------------------------------------------------

    def begin_load(self) -> None:
        pass

    def replay(self, batch: RecordBatch) -> None:
        if batch.is_control:
            return
        for record in batch.records():
            if record.key is not None:
                self.store.replay(record.key, record.value)

    def finish_load(self) -> None:
        pass

    def next_deadline(self) -> int | None:
        return self.partitions.next_deadline()

    def on_timer(self, now: int) -> None:
        self._persist(self.partitions.on_timer(now), {}, now, lambda _e: None)

    def partition_for(self, key: SharePartitionKey) -> int:
        """Kafka's share coordinator partition of a share-partition key."""
        return hash_partition(f"{key.group_id}:{kafka_uuid(key.topic_id)}:{key.partition}",
                              self.state_partitions)

    # -- initialisation -------------------------------------------------------------------------

    def initialize(self, key: SharePartitionKey, start_offset: int,
                   now: int) -> Pending[ErrorCode]:
        pending: Pending[ErrorCode] = Pending()
        if self.store.read_state(key) is not None:
            pending.resolve(ErrorCode.NONE)
            return pending
        result = self.store.initialize_state(key, 0, start_offset, now)
        if result.error != ErrorCode.NONE or not result.records:
            pending.resolve(result.error)
            return pending

        def done(error: ErrorCode, _offset: int) -> None:
            if error != ErrorCode.NONE:
                self.store.states.pop(key, None)
                self.store.updates_since_snapshot.pop(key, None)
            pending.resolve(error)

        self.outbox.write(Write(SHARE_STATE_TOPIC, self.partition_for(key), result.records,
                                done))
        return pending

    # -- share-partitions -----------------------------------------------------------------------

    def share_partition(self, key: SharePartitionKey, log: LogInfo, now: int) -> SharePartition:
        sp = self.partitions.get(key)
        if sp is None:
            persisted: PersistedState | None = self.store.read_state(key)
            sp = self.partitions.load(key, persisted, self.reset_for(key.group_id),
                                      log.log_start_offset,
                                      log.log_end_offset, log.offset_for_timestamp, now)
        return sp

    def acquire(self, key: SharePartitionKey, member_id: str,
                fetched: Sequence[tuple[int, int]], max_records: int, now: int,
                mode: AcquireMode, batch_size: int) -> tuple[AcquiredRecords, ...]:
        """Acquire from log batches read at the share-partition's next fetch offset.
        Acquisitions are not persisted (as Kafka); locks that expired on the way are."""
        sp = self.partitions.get(key)
        if sp is None:
            return ()
        before = sp.copy()
        res = sp.acquire(member_id, fetched, max_records, now, mode, batch_size)
        if res.update is not None:
            self._persist([(key, res.update)], {key: before}, now, lambda _e: None)
        return res.records

    def acknowledge(self, group_id: str, member_id: str,
                    acks: Mapping[TopicIdPartition, Sequence[AckBatch]],
                    now: int) -> Pending[dict[TopicIdPartition, AckResult]]:
        snapshots = {k: self.partitions.copy_of(k)
                     for k in (SharePartitionKey(group_id, t, p) for t, p in acks)}
        results, updates = self.partitions.acknowledge(group_id, member_id, acks, now)
        pending: Pending[dict[TopicIdPartition, AckResult]] = Pending()

        def done(failed: dict[SharePartitionKey, ErrorCode]) -> None:
            for key, error in failed.items():
                tp = (key.topic_id, key.partition)
                results[tp] = AckResult(error, "The share-partition state was not written.",
                                        None)
            pending.resolve(results)

        self._persist(updates, snapshots, now, done)
        return pending

    def release_member(self, group_id: str, member_id: str, now: int) -> None:
        keys = [k for k in self.partitions.partitions if k.group_id == group_id]
        snapshots = {k: self.partitions.copy_of(k) for k in keys}
        self._persist(self.partitions.release_member(group_id, member_id, now), snapshots,
                      now, lambda _e: None)

    def close_session(self, group_id: str, member_id: str, now: int) -> None:
        """A share session ended (final epoch, replaced, or its connection closed): the
        records the member holds go back (Kafka releases them at once)."""
        self.sessions.remove(group_id, member_id)
        self.release_member(group_id, member_id, now)

    def close_connection(self, connection_id: str, now: int) -> None:
        for session in self.sessions.remove_connection(connection_id):
            self.release_member(session.group_id, session.member_id, now)

    def alter_start_offset(self, key: SharePartitionKey, start_offset: int,
                           now: int) -> Pending[ErrorCode]:
        """AlterShareGroupOffsets: a fresh state at a newer state epoch starting at
        `start_offset`, as Kafka's group coordinator asks with InitializeShareGroupState; the
        in-memory share-partition is dropped, to be rebuilt from it."""
        pending: Pending[ErrorCode] = Pending()
        current = self.store.read_state(key)
        previous = current
        count = self.store.updates_since_snapshot.get(key)
        result = self.store.initialize_state(
            key, 0 if current is None else current.state_epoch + 1, start_offset, now)
        if result.error != ErrorCode.NONE:
            pending.resolve(result.error)
            return pending
        dropped = self.partitions.copy_of(key)
        self.partitions.restore(key, None)

        def done(error: ErrorCode, _offset: int) -> None:
            if error != ErrorCode.NONE:
                if previous is None:
                    self.store.states.pop(key, None)
                else:
                    self.store.states[key] = previous
                if count is not None:
                    self.store.updates_since_snapshot[key] = count
                self.partitions.restore(key, dropped)
            pending.resolve(error)

        self.outbox.write(Write(SHARE_STATE_TOPIC, self.partition_for(key), result.records,
                                done))
        return pending

    def delete_topic_state(self, group_id: str, topic_id: uuid.UUID) -> None:
        """DeleteShareGroupOffsets: the group's share-partitions of one topic and their
        persisted states go."""
        for key in [k for k in self.partitions.partitions
                    if k.group_id == group_id and k.topic_id == topic_id]:
            self.partitions.restore(key, None)
        for key in [k for k in self.store.states
                    if k.group_id == group_id and k.topic_id == topic_id]:
            result = self.store.delete_state(key)
            if result.records:
                self.outbox.write(Write(SHARE_STATE_TOPIC, self.partition_for(key),
                                        result.records, lambda _e, _o: None))

    def delete_group(self, group_id: str) -> None:
        """A share group was deleted: its share-partitions and their persisted states go
        (DeleteShareGroupState: tombstones for both record keys)."""
        for key in [k for k in self.partitions.partitions if k.group_id == group_id]:
            self.partitions.restore(key, None)
        for key in [k for k in self.store.states if k.group_id == group_id]:
            result = self.store.delete_state(key)
            if result.records:
                self.outbox.write(Write(SHARE_STATE_TOPIC, self.partition_for(key),
                                        result.records, lambda _e, _o: None))
        for session in [s for s in self.sessions.sessions.values() if s.group_id == group_id]:
            self.sessions.remove(session.group_id, session.member_id)

    # -- persistence ----------------------------------------------------------------------------

    def _persist(self, updates: list[tuple[SharePartitionKey, StateUpdate]],
                 snapshots: Mapping[SharePartitionKey, SharePartition | None], now: int,
                 done: Callable[[dict[SharePartitionKey, ErrorCode]], None]) -> None:
        """Write each update as WriteShareGroupState would; `done` gets the keys whose write
        failed (their share-partitions restored from `snapshots`)."""
        failed: dict[SharePartitionKey, ErrorCode] = {}
        left = len(updates)
        if left == 0:
            done(failed)
            return

        def one_done(key: SharePartitionKey, previous: PersistedState | None,
                     count: int | None, error: ErrorCode) -> None:
            nonlocal left
            if error != ErrorCode.NONE:
                failed[key] = error
                self._log("share state write failed", group=key.group_id,
                          topic_id=str(key.topic_id), partition=key.partition,
                          error=error.name)
                if previous is None:
                    self.store.states.pop(key, None)
                else:
                    self.store.states[key] = previous
                if count is not None:
                    self.store.updates_since_snapshot[key] = count
                if key in snapshots:
                    self.partitions.restore(key, snapshots[key])
            left -= 1
            if left == 0:
                done(failed)

        for key in {k for k, _ in updates}:
            self.on_available(key.topic_id, key.partition)
        for key, update in updates:
            sp = self.partitions.get(key)
            previous = self.store.read_state(key)
            count = self.store.updates_since_snapshot.get(key)
            result = self.store.write_state(
                key, sp.state_epoch if sp else -1, sp.leader_epoch if sp else -1,
                update.start_offset, update.batches, now, update.delivery_complete_count)
            if result.error != ErrorCode.NONE:
                one_done(key, previous, count, result.error)
                continue
            self.outbox.write(Write(
                SHARE_STATE_TOPIC, self.partition_for(key), result.records,
                lambda error, _offset, key=key, previous=previous, count=count:  # type: ignore[misc]
                    one_done(key, previous, count, error)))


def resolve_start_offset(reset: OffsetReset, log: LogInfo, now: int) -> int:
    """Start offset -1 of an initialisation: what share.auto.offset.reset picks now."""
    return initial_start_offset(reset, log.log_start_offset, log.log_end_offset,
                                log.offset_for_timestamp, now)
