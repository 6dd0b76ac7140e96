"""Per-partition unload of the group and transaction shards (issue #15, coordinator
failover): one internal partition's state goes, the others' stays, and replaying that
partition's log brings it back (Kafka's scheduleUnloadOperation / scheduleLoadOperation)."""

from __future__ import annotations

from odradek.coordinator.group.coordinator import GroupCoordinator
from odradek.wire import ErrorCode
from odradek.wire.records import RecordBatch, build_batch
from tests.unit.coordinator.group.group_testutil import Harness
from tests.unit.coordinator.txn.test_txn_coordinator import begin, coordinator


def _ids_on_two_partitions(partition_for: object, prefix: str) -> tuple[str, str]:
    first = f"{prefix}0"
    p = partition_for(first)  # type: ignore[operator]
    second = next(f"{prefix}{i}" for i in range(1, 1000)
                  if partition_for(f"{prefix}{i}") != p)  # type: ignore[operator]
    return first, second


def test_unloading_a_group_partition_drops_only_its_groups_and_fails_waiting_joins() -> None:
    h = Harness()
    moved, kept = _ids_on_two_partitions(h.coord.partition_for, "g")
    h.stable_group(1, moved)
    h.stable_group(1, kept)
    waiting = h.join_new(moved)  # a second member: the join waits for the rebalance
    assert not waiting.done
    p = h.coord.partition_for(moved)
    assert h.coord.unload_partition(p) == [moved]
    assert moved not in h.coord.groups and kept in h.coord.groups
    assert waiting.done and waiting.result().error == ErrorCode.NOT_COORDINATOR


def test_replaying_one_partition_brings_its_groups_back() -> None:
    h = Harness()
    moved, kept = _ids_on_two_partitions(h.coord.partition_for, "g")
    h.stable_group(1, moved)
    h.stable_group(1, kept)
    generation = h.coord.groups[moved].generation_id
    p = h.coord.partition_for(moved)
    h.coord.unload_partition(p)
    coord: GroupCoordinator = h.coord
    coord.begin_load()
    for offset, rec in enumerate(h.log[p]):
        coord.replay(RecordBatch(build_batch([rec], base_offset=offset,
                                             base_timestamp=h.clock.t)))
    coord.finish_load()
    assert coord.groups[moved].generation_id == generation
    assert kept in coord.groups


def test_unloading_a_transaction_partition_drops_only_its_ids() -> None:
    c, _ports = coordinator()
    moved, kept = _ids_on_two_partitions(c.partition_for, "tx")
    begin(c, moved)
    begin(c, kept)
    assert c.unload_partition(c.partition_for(moved)) == [moved]
    assert moved not in c.txns and kept in c.txns
