"""The group coordinator's data: members, groups, results.

Nothing here does I/O or reads a clock: deadlines are plain millisecond numbers that the
coordinator computes from the `now` it is given.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from odradek.coordinator.common import Pending
from odradek.coordinator.group.consumer.model import ConsumerGroup
from odradek.coordinator.group.records import OffsetAndMetadata
from odradek.coordinator.group.state import GroupState, can_enter
from odradek.wire import ErrorCode

TopicPartition = tuple[str, int]


# -- results -------------------------------------------------------------------------------------


@dataclass(slots=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    members: list[JoinMember] = field(default_factory=list)


@dataclass(slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(slots=True)
class LeavingMember:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(slots=True)
class LeaveMemberResult:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(slots=True)
class LeaveResult:
    error: ErrorCode
    members: list[LeaveMemberResult] = field(default_factory=list)


@dataclass(slots=True)
class FetchedOffset:
    offset: int = -1
    leader_epoch: int = -1
    metadata: str = ""
    error: ErrorCode = ErrorCode.NONE


@dataclass(slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(slots=True)
class GroupDescription:
    error: ErrorCode
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberDescription] = field(default_factory=list)


@dataclass(slots=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


# -- members and groups --------------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_waiter: Pending[JoinResult] | None = None
    sync_waiter: Pending[SyncResult] | None = None
    # A member added by this rebalance: it may time out while its JoinGroup waits (Kafka's
    # new-member join timeout), unlike rejoining members whose waiting counts as liveness.
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise ValueError(f"member {self.member_id} does not support protocol {protocol!r}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among `candidates`."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")


@dataclass(slots=True)
class CommittedOffset:
    value: OffsetAndMetadata
    # Offset of the record in __consumer_offsets: the later record wins when regular and
    # transactional commits interleave (None while a transactional commit is being written).
    record_offset: int | None


class Group:
    """One classic group: members, generation, protocol, committed offsets."""

    def __init__(self, group_id: str, state: GroupState, now: int) -> None:
        self.group_id = group_id
        self.state = state
        self.state_timestamp: int | None = now
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.generation_id = 0
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: set[str] = set()  # ids handed out with MEMBER_ID_REQUIRED
        self.pending_sync: set[str] = set()
        # How many members support each protocol name (a name a member lists twice counts
        # once: else every member could "support" it while the candidates are empty).
        self.supported_protocols: Counter[str] = Counter()
        self.subscribed_topics: set[str] | None = None
        # Initial-join bookkeeping (Kafka's InitialDelayedJoin): another step of delay is
        # granted while new members keep arriving, up to the rebalance timeout.
        self.new_member_added = False
        self.initial_join = False
        self.initial_remaining_ms = 0
        # The initial join phase does not end before this: JOIN_SETTLE_MS after the latest
        # arrival (a new member or a handed-out id), so members started together meet.
        self.settle_until_ms = 0
        self.offsets: dict[TopicPartition, CommittedOffset] = {}
        self.pending_offset_commits: dict[TopicPartition, OffsetAndMetadata] = {}
        self.pending_txn_offsets: dict[int, dict[TopicPartition, CommittedOffset]] = {}
        # A KIP-848 consumer group: its state lives here, the classic fields stay unused
        # (the group stays Empty for the classic protocol) and the offsets stay above.
        self.consumer: ConsumerGroup | None = None
        self._classic_saved: dict[str, object] | None = None

    @property
    def is_empty_classic(self) -> bool:
        """A classic group without members (Kafka converts it when a consumer joins)."""
        return self.consumer is None and self.state is GroupState.EMPTY

    # The classic fields a conversion to a consumer group clears (and a failed write restores).
    _CLASSIC_FIELDS = ("state", "state_timestamp", "generation_id", "protocol_type",
                       "protocol_name", "leader_id", "members", "static_members",
                       "pending_members", "pending_sync", "supported_protocols",
                       "subscribed_topics", "new_member_added", "initial_join",
                       "initial_remaining_ms", "settle_until_ms")

    def convert_to_consumer(self, consumer: ConsumerGroup) -> None:
        """Become a consumer group; a non-empty classic group's members are dropped here (the
        upgrade made consumer-group members of them) and the classic slate left Empty."""
        self._classic_saved = {name: getattr(self, name) for name in self._CLASSIC_FIELDS}
        self.state = GroupState.EMPTY
        self.generation_id, self.protocol_type, self.protocol_name = 0, None, None
        self.leader_id = None
        self.members, self.static_members = {}, {}
        self.pending_members, self.pending_sync = set(), set()
        self.supported_protocols = Counter()
        self.subscribed_topics = None
        self.new_member_added = self.initial_join = False
        self.initial_remaining_ms = self.settle_until_ms = 0
        self.consumer = consumer

    def convert_to_classic(self, *, restore: bool = False) -> None:
        """Drop the consumer group; `restore`: undo a conversion whose write failed."""
        if restore and self._classic_saved is not None:
            for name, value in self._classic_saved.items():
                setattr(self, name, value)
        self._classic_saved = None
        self.consumer = None

    def __repr__(self) -> str:
        return (f"Group({self.group_id!r}, {self.state.value}, gen={self.generation_id}, "
                f"leader={self.leader_id!r}, members={list(self.members)})")

    # -- state ---------------------------------------------------------------------------------

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, target: GroupState, now: int) -> None:
        if not can_enter(target, self.state):
            raise RuntimeError(f"group {self.group_id}: illegal transition {self.state.value} -> "
                               f"{target.value}")
        self.state = target
        self.state_timestamp = now

    @property
    def can_rebalance(self) -> bool:
        return can_enter(GroupState.PREPARING_REBALANCE, self.state)

    # -- members ------------------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.join_waiter is not None)

    @property
    def all_members_joined(self) -> bool:
        return not self.pending_members and all(
            m.join_waiter is not None for m in self.members.values())

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def add(self, member: Member) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise RuntimeError(f"static member {member.group_instance_id} is already in "
                                   f"group {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update({name for name, _ in member.protocols})
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract({name for name, _ in member.protocols})
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync.discard(member_id)
        return member

    def update_protocols(self, member: Member, protocols: list[tuple[str, bytes]]) -> None:
        self.supported_protocols.subtract({name for name, _ in member.protocols})
        member.protocols = protocols
        self.supported_protocols.update({name for name, _ in protocols})

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return member

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick a member that did; False if none did."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.awaiting_join:
                self.leader_id = member_id
                return True
        return False

    # -- protocols ----------------------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        names = {name for name, _ in protocols}
        if self.is_(GroupState.EMPTY):
            return bool(protocol_type) and bool(names)
        n = len(self.members)
        return (self.protocol_type == protocol_type
                and any(self.supported_protocols[name] == n for name in names))

    def select_protocol(self) -> str:
        """The protocol every member supports with the most first-choice votes; ties go to
        the one the earliest-joined member prefers."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise RuntimeError(f"group {self.group_id} has no protocol all members support")
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        best = max(votes.values())
        first = next(iter(self.members.values()))
        for name, _ in first.protocols:
            if votes.get(name) == best:
                return name
        return max(votes, key=lambda name: votes[name])  # pragma: no cover - first covers all

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type == "consumer"

    def is_subscribed_to(self, topic: str) -> bool:
        return True if self.subscribed_topics is None else topic in self.subscribed_topics

    # -- offsets ------------------------------------------------------------------------------

    def has_offsets(self) -> bool:
        return bool(self.offsets or self.pending_offset_commits or self.pending_txn_offsets)

    def has_pending_commit(self, tp: TopicPartition) -> bool:
        return tp in self.pending_offset_commits or any(
            tp in offsets for offsets in self.pending_txn_offsets.values())

    def remove_offsets(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        removed = []
        for tp in tps:
            self.pending_offset_commits.pop(tp, None)
            for offsets in self.pending_txn_offsets.values():
                offsets.pop(tp, None)
            if self.offsets.pop(tp, None) is not None:
                removed.append(tp)
        return removed
