"""KIP-848 consumer groups: members, epochs, target and current assignments, and the
reconciliation of a member's current assignment towards its target.

A consumer group has a *group epoch* (bumped whenever the subscriptions or the subscribed
topics change), a *target assignment* computed by the server-side assignor at an
*assignment epoch*, and for each member a *current assignment* at the member's own *member
epoch*. `reconcile` moves one member towards its target as Kafka's CurrentAssignmentBuilder
does: partitions the member must give up are revoked first (the member keeps its epoch until
its heartbeat no longer lists them); only then does it advance to the target epoch and get
new partitions, and only those no other member still holds (assigned or pending revocation).

Every field here is what the ConsumerGroup* records of `__consumer_offsets` carry: the
coordinator changes a group only by applying records (`apply_*`), the same calls replay
makes on load, so a rebuilt group is the group that was written. Members and assignments are
immutable values (`dataclasses.replace` makes the next one), so a group can be copied cheaply
and restored when a write fails.
"""

from __future__ import annotations

import base64
import enum
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from odradek.coordinator.group.consumer.assignors import Assignment, TopicId

TopicPartitionId = tuple[TopicId, int]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

EMPTY: Assignment = {}


class MemberState(enum.IntEnum):
    """A member's reconciliation state (the State byte of the current-assignment record)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def from_byte(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


class GroupState(enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class FencedMemberEpoch(Exception):
    """The member must drop its partitions and rejoin with epoch 0."""


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member using the classic protocol (JoinGroup/SyncGroup) inside a consumer group
    keeps (the ClassicMemberMetadata of its subscription record): its session timeout and the
    protocols of its JoinGroup, in its order of preference (name, subscription bytes)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        """The protocol its JoinGroup and SyncGroup answers name (its first choice)."""
        return self.protocols[0][0] if self.protocols else ""


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    # Subscription (ConsumerGroupMemberMetadata record)
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic: ClassicMemberMetadata | None = None  # None: the member uses the consumer protocol
    # Current assignment (ConsumerGroupCurrentMemberAssignment record)
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # The member epoch at which the member got each partition it holds, assigned or pending
    # revocation (KIP-1251's assignment epochs, which fence a commit sent with an older epoch).
    # Derived by `ConsumerGroup.apply_current` from the records in order, not written.
    assignment_epochs: Mapping[TopicPartitionId, int] = field(default_factory=dict)

    @property
    def uses_classic(self) -> bool:
        return self.classic is not None

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == epoch

    def with_epoch(self, epoch: int, **changes: object) -> ConsumerGroupMember:
        """The member at `epoch`, remembering the epoch it had as the previous one."""
        return replace(self, member_epoch=epoch, previous_member_epoch=self.member_epoch,
                       **changes)  # type: ignore[arg-type]

    def subscription_equals(self, other: ConsumerGroupMember) -> bool:
        return (self.instance_id, self.rack_id, self.client_id, self.client_host,
                self.subscribed_topic_names, self.subscribed_topic_regex,
                self.rebalance_timeout_ms, self.server_assignor, self.classic) == (
            other.instance_id, other.rack_id, other.client_id, other.client_host,
            other.subscribed_topic_names, other.subscribed_topic_regex,
            other.rebalance_timeout_ms, other.server_assignor, other.classic)

    def assignment_equals(self, other: ConsumerGroupMember) -> bool:
        return (self.member_epoch, self.previous_member_epoch, self.state, self.assigned,
                self.pending_revocation) == (
            other.member_epoch, other.previous_member_epoch, other.state, other.assigned,
            other.pending_revocation)


def owned_map(owned: Iterable[tuple[TopicId, Iterable[int]]] | None) -> Assignment | None:
    """A heartbeat's TopicPartitions as an assignment (None: the field was not sent)."""
    if owned is None:
        return None
    out: dict[TopicId, set[int]] = {}
    for topic_id, partitions in owned:
        out.setdefault(topic_id, set()).update(partitions)
    return {t: frozenset(p) for t, p in out.items() if p}


def is_subset(owned: Assignment | None, of: Assignment) -> bool:
    if owned is None:
        return False
    return all(ps <= of.get(t, frozenset()) for t, ps in owned.items())


def _owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    """Whether the member still reports any of `partitions` (None: it did not say: assume so)."""
    if owned is None:
        return True
    return any(ps & partitions.get(t, frozenset()) for t, ps in owned.items())


def reconcile(member: ConsumerGroupMember, target_epoch: int, target: Assignment,
              partition_epoch: Callable[[TopicId, int], int],
              owned: Assignment | None, subscribed: Iterable[TopicId] | None = None,
              subscription_changed: bool = False) -> ConsumerGroupMember:
    """The member's next current assignment (Kafka 4.4's CurrentAssignmentBuilder).

    `partition_epoch(topic, partition)` is the epoch of the member holding it, -1 if free.
    `owned` is what the member's heartbeat says it owns (None: not sent). `subscribed` is the
    ids of the topics the member subscribes to now (its names and its regex's topics; None:
    every topic of the target): a target partition of another topic is never given, and one
    the member holds is revoked. `subscription_changed`: this heartbeat changed the member's
    topic names or regex, so even a member reconciled to the target (whose recomputation
    `group.consumer.assignment.interval.ms` may put off) gives up the topics it left at once.
    """
    topics = None if subscribed is None else frozenset(subscribed)
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, partition_epoch,
                         owned, topics)
        if subscription_changed:
            return _drop_unsubscribed(member, topics, owned)
        return member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            if subscription_changed:
                return _drop_unsubscribed(member, topics, owned)
            return member
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch,
                     owned, topics)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, partition_epoch,
                     owned, topics)
    # UNKNOWN: written by a newer coordinator; start the member over from nothing.
    if owned is None or owned:
        raise FencedMemberEpoch("The consumer group member is in a unknown state. "
                                "The member must abandon all its partitions and rejoin.")
    return _next(member, target_epoch, target_epoch, target, partition_epoch, owned, topics)


def _drop_unsubscribed(member: ConsumerGroupMember, topics: frozenset[TopicId] | None,
                       owned: Assignment | None) -> ConsumerGroupMember:
    """The member without the topics it no longer subscribes to, at its own epoch (Kafka's
    updateCurrentAssignment): they go to pending revocation while its heartbeat still lists
    any of those, else they are simply dropped."""
    if topics is None:
        return member
    gone = {t: ps for t, ps in member.assigned.items() if t not in topics}
    if not gone:
        return member
    assigned = {t: ps for t, ps in member.assigned.items() if t in topics}
    pending = dict(member.pending_revocation)
    for t, ps in gone.items():
        pending[t] = pending.get(t, frozenset()) | ps
    if _owns_any(owned, pending):
        return member.with_epoch(member.member_epoch, state=MemberState.UNREVOKED_PARTITIONS,
                                 assigned=assigned, pending_revocation=pending)
    return member.with_epoch(member.member_epoch, assigned=assigned)


def _next(member: ConsumerGroupMember, epoch: int, target_epoch: int, target: Assignment,
          partition_epoch: Callable[[TopicId, int], int],
          owned: Assignment | None,
          topics: frozenset[TopicId] | None = None) -> ConsumerGroupMember:
    keep: dict[TopicId, frozenset[int]] = {}
    revoke: dict[TopicId, frozenset[int]] = {}
    add: dict[TopicId, frozenset[int]] = {}
    unreleased = False
    for topic in set(target) | set(member.assigned):
        wanted = (target.get(topic, frozenset()) if topics is None or topic in topics
                  else frozenset())
        current = member.assigned.get(topic, frozenset())
        kept = current & wanted
        gone = current - kept
        # A partition is free when no member holds it, or when this member holds it only
        # as one it is revoking (Kafka: its own pending revocation does not block it).
        mine = member.pending_revocation.get(topic, frozenset())
        new = frozenset(p for p in wanted - kept
                        if partition_epoch(topic, p) == -1 or p in mine)
        if len(new) < len(wanted - kept):
            unreleased = True
        if kept:
            keep[topic] = kept
        if gone:
            revoke[topic] = gone
        if new:
            add[topic] = new
    def held_since(*parts: Assignment) -> dict[TopicPartitionId, int]:
        return {(t, p): member.assignment_epochs.get((t, p), member.member_epoch)
                for a in parts for t, ps in a.items() for p in ps}

    if revoke and _owns_any(owned, revoke):
        # Revocation first: the member stays in its epoch until it has let go.
        return replace(member.with_epoch(epoch), state=MemberState.UNREVOKED_PARTITIONS,
                       assigned=keep, pending_revocation=revoke,
                       assignment_epochs=held_since(keep, revoke))
    epochs = held_since(keep)
    if add:
        for topic, partitions in add.items():
            keep[topic] = keep.get(topic, frozenset()) | partitions
            epochs.update(((topic, p), target_epoch) for p in partitions)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return replace(member.with_epoch(target_epoch), state=state, assigned=keep,
                   pending_revocation={}, assignment_epochs=epochs)


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    """A subscribed regex's topics (ConsumerGroupRegularExpression record): the names it
    matched at metadata `version`, resolved at `timestamp` (ms)."""

    topics: frozenset[str]
    version: int
    timestamp: int


class ConsumerGroup:
    """One consumer group's state, changed only through the `apply_*` record calls."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.assignment_epoch = 0
        # When the target assignment was last computed (ms; 0: never, or by a conversion):
        # group.consumer.assignment.interval.ms counts from it.
        self.assignment_timestamp = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.targets: dict[str, Assignment] = {}
        self.partition_epochs: dict[TopicPartitionId, int] = {}
        self.resolved_regexes: dict[str, ResolvedRegex] = {}

    def copy(self) -> ConsumerGroup:
        other = ConsumerGroup(self.group_id)
        other.group_epoch, other.metadata_hash = self.group_epoch, self.metadata_hash
        other.assignment_epoch = self.assignment_epoch
        other.assignment_timestamp = self.assignment_timestamp
        other.members = dict(self.members)
        other.static_members = dict(self.static_members)
        other.targets = dict(self.targets)
        other.partition_epochs = dict(self.partition_epochs)
        other.resolved_regexes = dict(self.resolved_regexes)
        return other

    def __repr__(self) -> str:
        return (f"ConsumerGroup({self.group_id!r}, {self.state.value}, epoch={self.group_epoch}, "
                f"assignment_epoch={self.assignment_epoch}, members={list(self.members)})")

    # -- derived ------------------------------------------------------------------------------

    @property
    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return GroupState.RECONCILING
        return GroupState.STABLE

    @property
    def is_empty(self) -> bool:
        return not self.members

    def subscribed_topic_names(self) -> set[str]:
        """The topics the group subscribes to: every member's names plus what the group's
        resolved regexes matched (Kafka's subscribedTopicNames counts both)."""
        names = {t for m in self.members.values() for t in m.subscribed_topic_names}
        for resolved in self.resolved_regexes.values():
            names |= resolved.topics
        return names

    def member_topic_names(self, member: ConsumerGroupMember) -> set[str]:
        """One member's topics: its names plus what its regex resolved to (nothing yet if
        the regex is unresolved)."""
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            resolved = self.resolved_regexes.get(member.subscribed_topic_regex)
            if resolved is not None:
                names |= resolved.topics
        return names

    def is_subscribed_to(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    def subscribed_regexes(self, exclude: str | None = None) -> dict[str, int]:
        """Each regex the members subscribe to and how many do (`exclude`: one member id
        left out of the count)."""
        counts: dict[str, int] = {}
        for mid, m in self.members.items():
            if m.subscribed_topic_regex and mid != exclude:
                counts[m.subscribed_topic_regex] = counts.get(m.subscribed_topic_regex, 0) + 1
        return counts

    def last_regex_refresh_ms(self) -> int:
        """When the group's regexes were last resolved (-1: never, or none is left)."""
        return max((r.timestamp for r in self.resolved_regexes.values()), default=-1)

    def last_regex_version(self) -> int:
        """The metadata version the group's regexes were last resolved at (-1: none)."""
        return max((r.version for r in self.resolved_regexes.values()), default=-1)

    def preferred_assignor(self, members: Mapping[str, ConsumerGroupMember] | None = None,
                           ) -> str | None:
        """The server assignor most members name (ties: Kafka picks by hash order; here
        the first by name)."""
        counts: dict[str, int] = {}
        for m in (self.members if members is None else members).values():
            if m.server_assignor is not None:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return None
        best = max(counts.values())
        return min(name for name, n in counts.items() if n == best)

    # -- members using the classic protocol ---------------------------------------------------

    def classic_members(self) -> list[ConsumerGroupMember]:
        return [m for m in self.members.values() if m.classic is not None]

    def supports_classic_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """Whether a classic JoinGroup with these protocols may join (Kafka's
        supportsClassicProtocols: type "consumer", and, with classic members present, a
        protocol every one of them supports)."""
        if protocol_type != "consumer":
            return False
        if self.is_empty:
            return bool(names)
        classic = self.classic_members()
        counts: dict[str, int] = {}
        for m in classic:
            assert m.classic is not None
            for name in {n for n, _ in m.classic.protocols}:
                counts[name] = counts.get(name, 0) + 1
        return any(counts.get(name, 0) == len(classic) for name in names)

    def all_classic_except(self, member_id: str) -> bool:
        """Whether every member but `member_id` uses the classic protocol and it does not."""
        member = self.members.get(member_id)
        return (member is not None and member.classic is None
                and len(self.classic_members()) == len(self.members) - 1)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Whether a member in UNRELEASED_PARTITIONS still waits for a partition another
        member holds (else its next JoinGroup would get it)."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic, partitions in self.targets.get(member.member_id, {}).items():
            have = member.assigned.get(topic, frozenset())
            if any(p not in have and self.partition_epoch(topic, p) != -1 for p in partitions):
                return True
        return False

    def partition_epoch(self, topic: TopicId, partition: int) -> int:
        return self.partition_epochs.get((topic, partition), -1)

    def static_member(self, instance_id: str) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    # -- applying records ---------------------------------------------------------------------

    def apply_epoch(self, epoch: int, metadata_hash: int) -> None:
        self.group_epoch, self.metadata_hash = epoch, metadata_hash

    def apply_member(self, member_id: str, subscription: ConsumerGroupMember | None) -> None:
        """ConsumerGroupMemberMetadata: the subscription fields of `subscription` (None:
        the member is gone; its assignment records are tombstoned first)."""
        old = self.members.get(member_id)
        if subscription is None:
            if old is not None:
                self._drop_epochs(old)
                del self.members[member_id]
                if old.instance_id is not None and self.static_members.get(
                        old.instance_id) == member_id:
                    del self.static_members[old.instance_id]
            return
        base = old if old is not None else ConsumerGroupMember(member_id)
        member = replace(
            base, instance_id=subscription.instance_id, rack_id=subscription.rack_id,
            client_id=subscription.client_id, client_host=subscription.client_host,
            subscribed_topic_names=subscription.subscribed_topic_names,
            subscribed_topic_regex=subscription.subscribed_topic_regex,
            rebalance_timeout_ms=subscription.rebalance_timeout_ms,
            server_assignor=subscription.server_assignor, classic=subscription.classic)
        if old is not None and old.instance_id is not None and old.instance_id != member.instance_id:
            self.static_members.pop(old.instance_id, None)
        self.members[member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member_id

    def apply_current(self, member_id: str, current: ConsumerGroupMember | None) -> None:
        """ConsumerGroupCurrentMemberAssignment: epochs, state and partitions of `current`
        (None: tombstone, the member keeps its subscription until that is tombstoned)."""
        old = self.members.get(member_id)
        if old is None and current is None:
            return
        base = old if old is not None else ConsumerGroupMember(member_id)
        self._drop_epochs(base)
        if current is None:
            member = replace(base, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                             previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                             state=MemberState.STABLE, assigned={}, pending_revocation={},
                             assignment_epochs={})
        else:
            # A partition the member already held keeps its assignment epoch; a new one gets
            # the member's epoch (Kafka 4.4 writes these in the record; the 4.0 record Odradek
            # writes has no such field, so they are derived the same way on replay).
            held = base.assignment_epochs
            epochs = {(topic, p): held.get((topic, p), current.member_epoch)
                      for assignment in (current.assigned, current.pending_revocation)
                      for topic, partitions in assignment.items() for p in partitions}
            member = replace(base, member_epoch=current.member_epoch,
                             previous_member_epoch=current.previous_member_epoch,
                             state=current.state, assigned=current.assigned,
                             pending_revocation=current.pending_revocation,
                             assignment_epochs=epochs)
        self.members[member_id] = member
        if member.instance_id is not None:
            self.static_members.setdefault(member.instance_id, member_id)
        for assignment in (member.assigned, member.pending_revocation):
            for topic, partitions in assignment.items():
                for p in partitions:
                    self.partition_epochs[(topic, p)] = member.member_epoch

    def _drop_epochs(self, member: ConsumerGroupMember) -> None:
        for assignment in (member.assigned, member.pending_revocation):
            for topic, partitions in assignment.items():
                for p in partitions:
                    if self.partition_epochs.get((topic, p)) == member.member_epoch:
                        del self.partition_epochs[(topic, p)]

    def apply_target(self, member_id: str, target: Assignment | None) -> None:
        if target is None:
            self.targets.pop(member_id, None)
        else:
            self.targets[member_id] = target

    def apply_assignment_epoch(self, epoch: int, timestamp: int = 0) -> None:
        self.assignment_epoch, self.assignment_timestamp = epoch, timestamp

    def apply_regex(self, regex: str, resolved: ResolvedRegex | None) -> None:
        """ConsumerGroupRegularExpression: a regex's topics (None: tombstone, no member
        subscribes to it any more)."""
        if resolved is None:
            self.resolved_regexes.pop(regex, None)
        else:
            self.resolved_regexes[regex] = resolved


def new_member_id() -> str:
    """A member id as Kafka's coordinator makes one for v0 clients (Uuid.toString: 22
    url-safe base64 characters)."""
    raw = uuid.uuid4().bytes
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
