"""The persisted share-partition state of `__share_group_state` (Kafka's share coordinator,
ShareCoordinatorShard and PersisterStateBatchCombiner, sans IO).

Each share-partition (group, topic id, partition) has two keys in the topic (its partition
chosen by the caller, as for every coordinator):

    0  ShareSnapshot  the whole state: snapshot epoch, state epoch, leader epoch, start
                      offset, delivery-complete count (KIP-1226, tag 0), create and write
                      timestamps, and the state batches (first, last, state 0/2/4, count)
    1  ShareUpdate    a change since the last snapshot: snapshot epoch, leader epoch,
                      start offset (-1: unchanged), delivery-complete count, the changed
                      batches

Writing (`ShareStateStore.write_state`, WriteShareGroupState): the first write of a
share-partition, and any write once `share.coordinator.snapshot.update.records.per.snapshot`
updates followed the last snapshot, is a new ShareSnapshot (snapshot epoch + 1, the current
batches combined with the new ones); other writes are a ShareUpdate carrying only the new
batches. A write with an older leader epoch than stored is FENCED_LEADER_EPOCH, with an older
state epoch FENCED_STATE_EPOCH (Kafka's checks).

Replaying (`replay`, `replay_records`): a snapshot replaces the state; an update is combined
into it: later batches win offset by offset, batches below the start offset are dropped,
adjacent batches with the same state and count merge. So the state after replay is exactly
the state the writes produced, which `SharePartition.from_state` turns back into a live
share-partition. `initialize_state` (InitializeShareGroupState) writes a fresh snapshot
with a new state epoch and start offset; `delete_state` tombstones both keys.

Differences from Kafka, on purpose: Kafka counts updates with an off-by-one (the first update
after a fresh key counts as 0); here N means N updates between snapshots (0: every write is
a snapshot).

Not implemented yet: the runtime shard around this (the CoordinatorRuntime hosting of
`__share_group_state`, its partition count `share.coordinator.state.topic.num.partitions`),
ReadShareGroupStateSummary, the cold-partition snapshots and pruning of the topic.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from odradek.coordinator.common import KeyValue
from odradek.coordinator.group.modern import check_value_version, encode_key, encode_value
from odradek.coordinator.share.partition import StateBatch
from odradek.wire import ErrorCode
from odradek.wire._generated.internal_share import (
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
)
from odradek.wire.exceptions import ProtocolError

SHARE_STATE_TOPIC = "__share_group_state"
SNAPSHOT = ShareSnapshotKey.RECORD_TYPE  # 0
UPDATE = ShareUpdateKey.RECORD_TYPE  # 1
_I16 = struct.Struct(">h")


@dataclass(frozen=True, slots=True, order=True)
class SharePartitionKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class PersistedState:
    """What ReadShareGroupState answers for one share-partition."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1
    create_timestamp: int = 0
    write_timestamp: int = 0


def combine(existing: Sequence[StateBatch], new: Sequence[StateBatch],
            start_offset: int) -> tuple[StateBatch, ...]:
    """Kafka's PersisterStateBatchCombiner: `new` overrides `existing` where they overlap
    (and later batches of `new` override earlier ones), nothing below `start_offset` stays,
    neighbours with the same state and count merge. The result is sorted and disjoint."""
    spans: list[StateBatch] = []
    for b in list(existing) + list(new):
        first = max(b.first_offset, start_offset)
        if b.last_offset < first:
            continue
        b = replace(b, first_offset=first)
        cut: list[StateBatch] = []
        for s in spans:
            if s.last_offset < b.first_offset or s.first_offset > b.last_offset:
                cut.append(s)
                continue
            if s.first_offset < b.first_offset:
                cut.append(replace(s, last_offset=b.first_offset - 1))
            if s.last_offset > b.last_offset:
                cut.append(replace(s, first_offset=b.last_offset + 1))
        cut.append(b)
        spans = cut
    spans.sort(key=lambda s: s.first_offset)
    merged: list[StateBatch] = []
    for s in spans:
        if merged:
            p = merged[-1]
            if (p.last_offset + 1 == s.first_offset and p.delivery_state == s.delivery_state
                    and p.delivery_count == s.delivery_count):
                merged[-1] = replace(p, last_offset=s.last_offset)
                continue
        merged.append(s)
    return tuple(merged)


# -- records ------------------------------------------------------------------------------------


def _batches_out(cls: type, batches: Iterable[StateBatch]) -> list[object]:
    return [cls(first_offset=b.first_offset, last_offset=b.last_offset,
                delivery_state=b.delivery_state, delivery_count=b.delivery_count)
            for b in batches]


def _batches_in(items: Iterable[object]) -> tuple[StateBatch, ...]:
    return tuple(StateBatch(b.first_offset, b.last_offset, b.delivery_state,  # type: ignore[attr-defined]
                            b.delivery_count)  # type: ignore[attr-defined]
                 for b in items)


def snapshot_key(key: SharePartitionKey) -> bytes:
    return encode_key(SNAPSHOT, ShareSnapshotKey(group_id=key.group_id, topic_id=key.topic_id,
                                                 partition=key.partition))


def update_key(key: SharePartitionKey) -> bytes:
    return encode_key(UPDATE, ShareUpdateKey(group_id=key.group_id, topic_id=key.topic_id,
                                             partition=key.partition))


def snapshot_record(key: SharePartitionKey, state: PersistedState) -> KeyValue:
    value = ShareSnapshotValue(
        snapshot_epoch=state.snapshot_epoch, state_epoch=state.state_epoch,
        leader_epoch=state.leader_epoch, start_offset=state.start_offset,
        delivery_complete_count=state.delivery_complete_count,
        create_timestamp=state.create_timestamp, write_timestamp=state.write_timestamp,
        state_batches=_batches_out(ShareSnapshotValue.StateBatch,  # type: ignore[arg-type]
                                   state.batches))
    return snapshot_key(key), encode_value(value)


@dataclass(frozen=True, slots=True)
class ShareUpdate:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int  # -1: unchanged
    batches: tuple[StateBatch, ...]
    delivery_complete_count: int = -1


def update_record(key: SharePartitionKey, update: ShareUpdate) -> KeyValue:
    value = ShareUpdateValue(
        snapshot_epoch=update.snapshot_epoch, leader_epoch=update.leader_epoch,
        start_offset=update.start_offset,
        delivery_complete_count=update.delivery_complete_count,
        state_batches=_batches_out(ShareUpdateValue.StateBatch,  # type: ignore[arg-type]
                                   update.batches))
    return update_key(key), encode_value(value)


def parse_key(data: bytes | memoryview) -> tuple[int, SharePartitionKey] | None:
    """(record type, key) of a `__share_group_state` key; None for a type it does not hold."""
    if len(data) < 2:
        raise ProtocolError(f"share-state key of {len(data)} bytes has no record type")
    record_type = _I16.unpack_from(data, 0)[0]
    if record_type == SNAPSHOT:
        k: ShareSnapshotKey | ShareUpdateKey = ShareSnapshotKey.decode(data, SNAPSHOT, 2)[0]
    elif record_type == UPDATE:
        k = ShareUpdateKey.decode(data, UPDATE, 2)[0]
    else:
        return None
    return record_type, SharePartitionKey(k.group_id, k.topic_id, k.partition)


def parse_snapshot(data: bytes | memoryview) -> PersistedState:
    check_value_version(data, "ShareSnapshotValue")
    v, _ = ShareSnapshotValue.decode(data, 0, 2)
    return PersistedState(v.snapshot_epoch, v.state_epoch, v.leader_epoch, v.start_offset,
                          _batches_in(v.state_batches), v.delivery_complete_count,
                          v.create_timestamp, v.write_timestamp)


def parse_update(data: bytes | memoryview) -> ShareUpdate:
    check_value_version(data, "ShareUpdateValue")
    v, _ = ShareUpdateValue.decode(data, 0, 2)
    return ShareUpdate(v.snapshot_epoch, v.leader_epoch, v.start_offset,
                       _batches_in(v.state_batches), v.delivery_complete_count)


def apply_update(state: PersistedState, update: ShareUpdate) -> PersistedState:
    """A state with an update applied (Kafka's ShareCoordinatorShard.merge)."""
    start = state.start_offset if update.start_offset == -1 else update.start_offset
    leader = state.leader_epoch if update.leader_epoch == -1 else update.leader_epoch
    complete = (state.delivery_complete_count if update.delivery_complete_count == -1
                else update.delivery_complete_count)
    return replace(state, start_offset=start, leader_epoch=leader,
                   batches=combine(state.batches, update.batches, start),
                   delivery_complete_count=complete)


# -- the store ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WriteResult:
    error: ErrorCode
    records: list[KeyValue]
    message: str | None = None


class ShareStateStore:
    """Every share-partition state of the `__share_group_state` partitions a shard owns,
    changed only by replaying records (writes replay what they produce)."""

    def __init__(self, updates_per_snapshot: int = 500) -> None:
        # share.coordinator.snapshot.update.records.per.snapshot
        self.updates_per_snapshot = updates_per_snapshot
        self.states: dict[SharePartitionKey, PersistedState] = {}
        self.updates_since_snapshot: dict[SharePartitionKey, int] = {}

    def replay(self, key: bytes | memoryview, value: bytes | memoryview | None) -> None:
        parsed = parse_key(key)
        if parsed is None:
            return
        record_type, pk = parsed
        if value is None:
            if record_type == SNAPSHOT:
                self.states.pop(pk, None)
                self.updates_since_snapshot.pop(pk, None)
            return
        if record_type == SNAPSHOT:
            self.states[pk] = parse_snapshot(value)
            self.updates_since_snapshot[pk] = 0
            return
        update = parse_update(value)
        current = self.states.get(pk)
        if current is None:
            # An update without a snapshot (its snapshot was compacted away cannot happen:
            # the snapshot key is written first): start from the update alone.
            current = PersistedState(update.snapshot_epoch, 0, update.leader_epoch,
                                     max(update.start_offset, 0))
        self.states[pk] = apply_update(current, update)
        self.updates_since_snapshot[pk] = self.updates_since_snapshot.get(pk, 0) + 1

    def _emit(self, records: list[KeyValue]) -> WriteResult:
        for k, v in records:
            self.replay(k, v)
        return WriteResult(ErrorCode.NONE, records)

    def read_state(self, key: SharePartitionKey) -> PersistedState | None:
        return self.states.get(key)

    def write_state(self, key: SharePartitionKey, state_epoch: int, leader_epoch: int,
                    start_offset: int, batches: Sequence[StateBatch], now: int,
                    delivery_complete_count: int = -1) -> WriteResult:
        """WriteShareGroupState for one share-partition: the record it appends (already
        applied here; the caller restores `copy()` if the append fails)."""
        current = self.states.get(key)
        if current is not None:
            if current.leader_epoch > leader_epoch != -1:
                return WriteResult(ErrorCode.FENCED_LEADER_EPOCH, [],
                                   "The leader epoch is older than the stored one.")
            if current.state_epoch > state_epoch != -1:
                return WriteResult(ErrorCode.FENCED_STATE_EPOCH, [],
                                   "The state epoch is older than the stored one.")
        if current is None:
            start = max(start_offset, 0)
            state = PersistedState(0, max(state_epoch, 0), max(leader_epoch, 0), start,
                                   combine((), batches, start), delivery_complete_count,
                                   now, now)
            return self._emit([snapshot_record(key, state)])
        if self.updates_since_snapshot.get(key, 0) >= self.updates_per_snapshot:
            start = current.start_offset if start_offset == -1 else start_offset
            state = PersistedState(
                current.snapshot_epoch + 1,
                current.state_epoch if state_epoch == -1 else state_epoch,
                current.leader_epoch if leader_epoch == -1 else leader_epoch,
                start, combine(current.batches, batches, start),
                (current.delivery_complete_count if delivery_complete_count == -1
                 else delivery_complete_count),
                current.create_timestamp, now)
            return self._emit([snapshot_record(key, state)])
        update = ShareUpdate(current.snapshot_epoch, leader_epoch, start_offset,
                             combine((), batches, max(start_offset, 0)), delivery_complete_count)
        return self._emit([update_record(key, update)])

    def initialize_state(self, key: SharePartitionKey, state_epoch: int, start_offset: int,
                         now: int) -> WriteResult:
        """InitializeShareGroupState: a fresh snapshot at `state_epoch` (FENCED_STATE_EPOCH
        if an equal or newer one is stored)."""
        current = self.states.get(key)
        if current is not None and current.state_epoch >= state_epoch:
            return WriteResult(ErrorCode.FENCED_STATE_EPOCH, [],
                               "The state epoch is not newer than the stored one.")
        snapshot_epoch = 0 if current is None else current.snapshot_epoch + 1
        leader = 0 if current is None else current.leader_epoch
        state = PersistedState(snapshot_epoch, state_epoch, leader, start_offset, (), -1,
                               now, now)
        return self._emit([snapshot_record(key, state)])

    def delete_state(self, key: SharePartitionKey) -> WriteResult:
        if key not in self.states:
            return WriteResult(ErrorCode.NONE, [])
        return self._emit([(update_key(key), None), (snapshot_key(key), None)])

    def copy(self) -> ShareStateStore:
        other = ShareStateStore(self.updates_per_snapshot)
        other.states = dict(self.states)
        other.updates_since_snapshot = dict(self.updates_since_snapshot)
        return other


def replay_records(records: Iterable[KeyValue],
                   updates_per_snapshot: int = 500) -> dict[SharePartitionKey, PersistedState]:
    """The state of every share-partition after `records` (in log order)."""
    store = ShareStateStore(updates_per_snapshot)
    for k, v in records:
        store.replay(k, v)
    return store.states
