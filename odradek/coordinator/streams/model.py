"""A streams group and its members, as the StreamsGroup* records describe them."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from odradek.coordinator.streams.assignor import EMPTY, TasksTuple
from odradek.coordinator.streams.topology import Topology

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(enum.IntEnum):
    """The State byte of StreamsGroupCurrentMemberAssignment."""

    STABLE = 0
    UNREVOKED_TASKS = 1
    UNRELEASED_TASKS = 2
    UNKNOWN = 127


class GroupState(enum.Enum):
    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """StreamsGroupMemberMetadata: what the member told the coordinator."""

    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class MemberAssignment:
    """StreamsGroupCurrentMemberAssignment: the member's epochs and tasks."""

    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: TasksTuple = EMPTY
    pending_revocation: TasksTuple = EMPTY


@dataclass(slots=True)
class StreamsGroup:
    group_id: str
    epoch: int = 0
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    topology: Topology | None = None
    assignment_epoch: int = 0
    metadata: dict[str, MemberMetadata] = field(default_factory=dict)
    current: dict[str, MemberAssignment] = field(default_factory=dict)
    targets: dict[str, TasksTuple] = field(default_factory=dict)

    def state(self, ready: bool) -> GroupState:
        if not self.metadata:
            return GroupState.EMPTY
        if not ready:
            return GroupState.NOT_READY
        if self.assignment_epoch < self.epoch:
            return GroupState.ASSIGNING
        if any(a.member_epoch != self.assignment_epoch or a.state != MemberState.STABLE
               for a in self.current.values()):
            return GroupState.RECONCILING
        return GroupState.STABLE
