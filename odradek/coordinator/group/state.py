"""Group states and the tables that drive them.

`TRANSITIONS` is the state machine: for each target state, the states a group may enter it
from (Kafka's `validPreviousStates`). `Group.transition_to` refuses anything else, so a
coordinator bug surfaces as an exception rather than as a silently corrupted group.

The per-request tables say what each state answers when the request itself is valid
(known member, right generation); `None` means "handled by the coordinator's own logic".
"""

from __future__ import annotations

import enum
from typing import Final

from odradek.wire import ErrorCode


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def wire_name(self) -> str:
        """The name DescribeGroups and ListGroups report (Kafka's `toString`)."""
        return self.value


E, P, C, S, D = (
    GroupState.EMPTY,
    GroupState.PREPARING_REBALANCE,
    GroupState.COMPLETING_REBALANCE,
    GroupState.STABLE,
    GroupState.DEAD,
)

# target state -> states it may be entered from
TRANSITIONS: Final[dict[GroupState, frozenset[GroupState]]] = {
    # a member joins an empty group; a member joins/leaves/fails in a formed group
    P: frozenset({S, C, E}),
    # the join phase ended with at least one member
    C: frozenset({P}),
    # the leader's assignment was stored
    S: frozenset({C}),
    # the join phase ended with no member left
    E: frozenset({P}),
    # deleted (DeleteGroups, last offsets expired) or unloaded
    D: frozenset({S, P, C, E, D}),
}

# Heartbeat from a valid member of the current generation.
HEARTBEAT_ANSWER: Final[dict[GroupState, ErrorCode]] = {
    E: ErrorCode.UNKNOWN_MEMBER_ID,
    P: ErrorCode.REBALANCE_IN_PROGRESS,  # the member must rejoin
    C: ErrorCode.NONE,  # members may heartbeat between their JoinGroup and SyncGroup
    S: ErrorCode.NONE,
    D: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}

# SyncGroup from a valid member of the current generation (None: parked or answered with the
# member's assignment by the coordinator).
SYNC_ANSWER: Final[dict[GroupState, ErrorCode | None]] = {
    E: ErrorCode.UNKNOWN_MEMBER_ID,
    P: ErrorCode.REBALANCE_IN_PROGRESS,
    C: None,  # parked until the leader's assignment is stored
    S: None,  # answered at once with the stored assignment
    D: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}

# OffsetCommit from a member that passed the generation checks (None: stored).
COMMIT_ANSWER: Final[dict[GroupState, ErrorCode | None]] = {
    E: None,
    P: None,  # the previous generation may still commit while the others rejoin
    C: ErrorCode.REBALANCE_IN_PROGRESS,  # it has a new generation but no assignment yet
    S: None,
    D: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}


def can_enter(target: GroupState, current: GroupState) -> bool:
    return current in TRANSITIONS[target]
