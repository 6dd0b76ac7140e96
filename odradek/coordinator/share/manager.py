"""The broker's share-partitions, sans IO (the bookkeeping half of Kafka's
SharePartitionManager): one `SharePartition` per (group, topic id, partition), created from
its persisted state or from `share.auto.offset.reset`, with the operations that span them.
A log start offset past the persisted start offset (retention ran while the partition was
not loaded) moves the start offset on.

- `load(key, persisted, ...)` makes the share-partition of a key: from the state the share
  coordinator read back, or, without any (start offset -1), at `initial_start_offset`.
- `acknowledge(group, member, {tp: batches}, now)` acknowledges per partition (each
  partition all-or-nothing, as Kafka); a partition this broker does not hold answers
  UNKNOWN_TOPIC_OR_PARTITION.
- `release_member(group, member, now)` releases every record the member holds, in every
  share-partition of the group (its share session closed or was replaced, it left the group,
  its connection closed).
- `next_deadline()` / `on_timer(now)`: the acquisition locks of all share-partitions.

Every operation returns the `StateUpdate`s to persist with their keys, in a stable order;
the caller writes them through the share coordinator (`state.ShareStateStore.write_state`)
and answers once they are written, restoring `copy_of(key)` snapshots if a write fails.

The broker's share coordinator shard (`coordinator.py`) holds one and persists what it
returns; the ShareFetch handler reads the log and passes the batches to `acquire`.

Not implemented yet: removing the share-partitions of deleted topics.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence

from odradek.coordinator.share.offset_reset import OffsetReset, initial_start_offset
from odradek.coordinator.share.partition import (
    AckBatch,
    AckResult,
    SharePartition,
    SharePartitionConfig,
    StateUpdate,
)
from odradek.coordinator.share.state import PersistedState, SharePartitionKey
from odradek.wire import ErrorCode

TopicIdPartition = tuple[uuid.UUID, int]


class SharePartitions:
    def __init__(self, config: Callable[[str], SharePartitionConfig]) -> None:
        # The config of a group's share-partitions (broker settings, later per-group ones).
        self.config = config
        self.partitions: dict[SharePartitionKey, SharePartition] = {}

    def get(self, key: SharePartitionKey) -> SharePartition | None:
        return self.partitions.get(key)

    def reconfigure(self, group_id: str) -> None:
        """The group's config changed: its loaded share-partitions take it at once."""
        cfg = self.config(group_id)
        for key, sp in self.partitions.items():
            if key.group_id == group_id:
                sp.config = cfg

    def load(self, key: SharePartitionKey, persisted: PersistedState | None,
             reset: OffsetReset, log_start_offset: int, log_end_offset: int,
             offset_for_timestamp: Callable[[int], int | None], now: int) -> SharePartition:
        """The share-partition of `key`, built from what the share coordinator holds (as
        Kafka's SharePartition.maybeInitialize) or from the offset-reset strategy."""
        cfg = self.config(key.group_id)
        if persisted is None or persisted.start_offset < 0:
            start = initial_start_offset(reset, log_start_offset, log_end_offset,
                                         offset_for_timestamp, now)
            sp = SharePartition(cfg, start, 0 if persisted is None else persisted.state_epoch)
        else:
            sp = SharePartition.from_state(cfg, persisted.start_offset, persisted.batches,
                                           persisted.state_epoch, persisted.leader_epoch)
            sp.move_log_start(log_start_offset)
        self.partitions[key] = sp
        return sp

    def acknowledge(self, group_id: str, member_id: str,
                    acks: Mapping[TopicIdPartition, Sequence[AckBatch]], now: int,
                    ) -> tuple[dict[TopicIdPartition, AckResult],
                               list[tuple[SharePartitionKey, StateUpdate]]]:
        results: dict[TopicIdPartition, AckResult] = {}
        updates: list[tuple[SharePartitionKey, StateUpdate]] = []
        for tp in sorted(acks):
            key = SharePartitionKey(group_id, tp[0], tp[1])
            sp = self.partitions.get(key)
            if sp is None:
                results[tp] = AckResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                        "The share-partition is not hosted here.", None)
                continue
            res = sp.acknowledge(member_id, acks[tp], now)
            results[tp] = res
            if res.update is not None:
                updates.append((key, res.update))
        return results, updates

    def release_member(self, group_id: str, member_id: str,
                       now: int) -> list[tuple[SharePartitionKey, StateUpdate]]:
        updates = []
        for key in sorted(self.partitions):
            if key.group_id != group_id:
                continue
            update = self.partitions[key].release_member(member_id, now)
            if update is not None:
                updates.append((key, update))
        return updates

    def next_deadline(self) -> int | None:
        deadlines = [d for sp in self.partitions.values()
                     if (d := sp.next_deadline()) is not None]
        return min(deadlines) if deadlines else None

    def on_timer(self, now: int) -> list[tuple[SharePartitionKey, StateUpdate]]:
        updates = []
        for key in sorted(self.partitions):
            update = self.partitions[key].expire(now)
            if update is not None:
                updates.append((key, update))
        return updates

    def copy_of(self, key: SharePartitionKey) -> SharePartition | None:
        sp = self.partitions.get(key)
        return None if sp is None else sp.copy()

    def restore(self, key: SharePartitionKey, snapshot: SharePartition | None) -> None:
        if snapshot is None:
            self.partitions.pop(key, None)
        else:
            self.partitions[key] = snapshot
