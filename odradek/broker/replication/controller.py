"""The controller's partition state, without I/O: replica placement, leaders, leader epochs
and ISRs, and the high watermark rule (docs/cluster.md).

Placement is Kafka's striping without racks: partition p of a topic gets the brokers
`start + p, start + p + 1, ...` (mod N) of the sorted node ids, its first replica the
preferred leader. The start index comes from the topic name (crc32), so a restarted process
derives the same lists without storing them.

Leader election takes the first replica (in replica order) that is live and in the ISR, as
Kafka's controller does; with none, the partition has no leader (-1) unless
`unclean` allows a live out-of-sync replica. Every leader change bumps the leader epoch.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

NO_LEADER = -1
TopicPartition = tuple[str, int]


class PlacementError(Exception):
    """The replication factor cannot be met (INVALID_REPLICATION_FACTOR)."""


@dataclass(slots=True)
class PartitionState:
    replicas: tuple[int, ...]
    leader: int
    leader_epoch: int
    isr: list[int] = field(default_factory=list)

    def offline(self, live: set[int]) -> list[int]:
        return [r for r in self.replicas if r not in live]


def place(nodes: Sequence[int], topic: str, partition: int, replication_factor: int
          ) -> tuple[int, ...]:
    """The replicas of `topic`-`partition` over the sorted `nodes`."""
    n = len(nodes)
    if replication_factor < 1 or replication_factor > n:
        raise PlacementError(
            f"Unable to replicate the partition {replication_factor} time(s): The target "
            f"replication factor of {replication_factor} cannot be reached because only "
            f"{n} broker(s) are registered.")
    ordered = sorted(nodes)
    start = zlib.crc32(topic.encode()) % n
    return tuple(ordered[(start + partition + j) % n] for j in range(replication_factor))


class Controller:
    """Partition states of every topic, and which brokers are live."""

    def __init__(self, nodes: Iterable[int], *, unclean: bool = False) -> None:
        self.nodes = sorted(nodes)
        self.live: set[int] = set(self.nodes)
        self.unclean = unclean
        self.partitions: dict[TopicPartition, PartitionState] = {}

    @property
    def controller_id(self) -> int:
        """The KRaft controller clients are told of: the lowest live node (a combined
        broker+controller; the quorum itself is not simulated)."""
        return min(self.live) if self.live else self.nodes[0]

    def add(self, tp: TopicPartition, replicas: Sequence[int], leader_epoch: int = 0,
            leader: int | None = None, isr: Sequence[int] | None = None) -> PartitionState:
        live = [r for r in replicas if r in self.live]
        in_sync = list(isr) if isr is not None else live
        chosen = leader if leader is not None else (in_sync[0] if in_sync else NO_LEADER)
        state = PartitionState(tuple(replicas), chosen, leader_epoch, in_sync)
        self.partitions[tp] = state
        return state

    def remove(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)

    def get(self, tp: TopicPartition) -> PartitionState | None:
        return self.partitions.get(tp)

    def _elect(self, state: PartitionState) -> int:
        for r in state.replicas:
            if r in self.live and r in state.isr:
                return r
        if self.unclean:
            for r in state.replicas:
                if r in self.live:
                    return r
        return NO_LEADER

    def broker_stopped(self, node: int) -> list[TopicPartition]:
        """A controlled shutdown: `node` leaves every ISR (but the last member of one stays
        in it, as Kafka keeps the last ISR member so that no unclean election is needed) and
        its partitions get new leaders. Returns the partitions whose leader changed."""
        self.live.discard(node)
        moved = []
        for tp, state in self.partitions.items():
            if node in state.isr and len(state.isr) > 1:
                state.isr.remove(node)
            if state.leader == node:
                new = self._elect(state)
                state.leader = new
                state.leader_epoch += 1
                if new != NO_LEADER and new not in state.isr:  # unclean
                    state.isr = [new]
                moved.append(tp)
        return moved

    def broker_started(self, node: int) -> list[TopicPartition]:
        """`node` is live again. Partitions without a leader whose ISR names it elect it;
        its other replicas must catch up before they rejoin the ISR (`join_isr`). Returns
        the partitions that got a leader."""
        self.live.add(node)
        elected = []
        for tp, state in self.partitions.items():
            if state.leader == NO_LEADER and node in state.replicas:
                new = self._elect(state)
                if new != NO_LEADER:
                    state.leader = new
                    state.leader_epoch += 1
                    if new not in state.isr:  # unclean: the ISR restarts with it alone
                        state.isr = [new]
                    elected.append(tp)
        return elected

    def join_isr(self, tp: TopicPartition, node: int) -> bool:
        state = self.partitions[tp]
        if node in state.isr or node not in self.live or node not in state.replicas:
            return False
        state.isr.append(node)
        state.isr.sort(key=state.replicas.index)
        return True

    def leave_isr(self, tp: TopicPartition, node: int) -> bool:
        state = self.partitions[tp]
        if node not in state.isr or len(state.isr) <= 1:
            return False
        state.isr.remove(node)
        return True


def high_watermark(state: PartitionState, log_ends: dict[int, int], current: int) -> int:
    """The smallest log end offset among the ISR members, never below `current` (the high
    watermark moves forward only, as Kafka's maybeIncrementLeaderHW)."""
    ends = [log_ends[r] for r in state.isr if r in log_ends]
    if not ends:
        return current
    return max(min(ends), current)
