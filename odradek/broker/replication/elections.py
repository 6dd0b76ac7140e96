"""Requested leader elections (ElectLeaders), without I/O, as Kafka 4.4's controller decides
them (ReplicationControlManager.electLeader with PartitionChangeBuilder):

- PREFERRED: ELECTION_NOT_NEEDED when the first replica leads already; else the first
  replica if it is live and in the ISR; else, if the current leader is still valid, nothing
  changes (PREFERRED_LEADER_NOT_AVAILABLE); else the next live ISR member in replica order.
- UNCLEAN: ELECTION_NOT_NEEDED while the partition has a leader; else the first live ISR
  member, or failing that the first live replica outside the ISR (an unclean election: the
  ISR restarts with it alone); with no live replica ELIGIBLE_LEADERS_NOT_AVAILABLE.

Every change bumps the leader epoch. Eligible leader replicas (KIP-966) are not modelled:
with Kafka's default min.insync.replicas=1 the ISR never shrinks below one member, so they
change no outcome here.
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.broker.replication.controller import NO_LEADER, Controller, TopicPartition
from odradek.wire import ErrorCode

PREFERRED = 0
UNCLEAN = 1


@dataclass(frozen=True, slots=True)
class Election:
    error: ErrorCode
    message: str | None = None
    unclean: bool = False  # the new leader was outside the ISR: the others truncate to it

    @property
    def changed(self) -> bool:
        return self.error == ErrorCode.NONE


def _valid(controller: Controller, isr: list[int], replica: int) -> bool:
    return replica != NO_LEADER and replica in isr and replica in controller.live


def elect(controller: Controller, tp: TopicPartition, election_type: int) -> Election:
    """Decide and apply one requested election of `tp` (its state must exist)."""
    state = controller.partitions[tp]
    preferred = state.replicas[0]
    if election_type == PREFERRED:
        if state.leader == preferred:
            return Election(ErrorCode.ELECTION_NOT_NEEDED)
        if _valid(controller, state.isr, preferred):
            new = preferred
        elif _valid(controller, state.isr, state.leader):
            return Election(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)
        else:
            new = next((r for r in state.replicas[1:] if _valid(controller, state.isr, r)),
                       NO_LEADER)
            if new == NO_LEADER:
                return Election(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)
        unclean = False
    else:
        if state.leader != NO_LEADER:
            return Election(ErrorCode.ELECTION_NOT_NEEDED)
        new = next((r for r in state.replicas if _valid(controller, state.isr, r)), NO_LEADER)
        unclean = False
        if new == NO_LEADER:
            new = next((r for r in state.replicas if r in controller.live), NO_LEADER)
            unclean = True
        if new == NO_LEADER:
            return Election(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)
    state.leader = new
    state.leader_epoch += 1
    if unclean:
        state.isr = [new]
    return Election(ErrorCode.NONE, unclean=unclean)
