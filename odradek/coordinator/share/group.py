"""KIP-932 share groups: members, epochs, server-side assignment, session timeouts and the
ShareGroupHeartbeat semantics of Kafka 4.4's GroupMetadataManager, sans IO.

A share group has a *group epoch*, bumped when a member joins, leaves, changes its
subscription (its topic names) or the subscribed topics' metadata changes (the
ShareGroupMetadata record keeps the epoch and a hash of those topics); a *target
assignment* computed by the `simple` assignor at an *assignment epoch*; and per member a
current assignment at its member epoch. Share-group members own nothing exclusively, so
there is no revocation phase: a heartbeat moves the member straight to its target and the
target epoch (Kafka's ShareGroupAssignmentBuilder). Members are always STABLE (state 0).

ShareGroupHeartbeat v1 (`ShareGroups.heartbeat`):
- INVALID_REQUEST: an empty GroupId ("GroupId can't be empty."), an empty MemberId (the
  client makes its own id; "MemberId can't be empty."), an empty RackId, a join (epoch 0)
  without SubscribedTopicNames, an epoch below -1.
- MemberEpoch 0 joins (or rejoins: a known member starts over at the target epoch and gets
  its full assignment); -1 leaves (UNKNOWN_MEMBER_ID for an unknown member; the answer
  carries epoch -1); any other epoch must be the member's, or its previous one when the
  answer bumping it was lost, else FENCED_MEMBER_EPOCH.
- GROUP_ID_NOT_FOUND for a group id held by another kind of group ("Group g is not a share
  group.") or, when not joining, an unknown group; UNKNOWN_MEMBER_ID for a heartbeat of a
  member the group does not know; GROUP_MAX_SIZE_REACHED past `group.share.max.size`.
- The answer gives the heartbeat interval (`group.share.heartbeat.interval.ms`) and the
  assignment when the member joined or its assignment changed (null otherwise).
- A member not heard from for `group.share.session.timeout.ms` is removed (`on_timer`), as
  one that leaves; the group epoch moves, and every other member gets the new target on its
  next heartbeat.

Every change is a record, applied to the group as it is made (`replay` applies the same
records on load), returned for the caller to write; if the write fails the caller restores
the group with `restore(snapshot)`.

Share-partition initialisation (Kafka 4.1+): a partition is assigned only once the share
coordinator initialised its state. A heartbeat records the subscribed share-partitions that
are neither initialised nor initialising as initialising (ShareGroupStatePartitionMetadata)
and returns them in `Outcome.initialize` for the caller to send as InitializeShareGroupState;
`initialize_done` records them as initialised (the next heartbeat bumps the group epoch and
assigns them), `initialize_failed` forgets them so the next heartbeat asks again. So a new
member's first answer has an empty assignment, as on Kafka.

Hosted by the group coordinator shard (`coordinator/group/coordinator.py`: share records sit
in __consumer_offsets beside the consumer-group ones; DeleteGroups and ListGroups there).

Not implemented yet: retrying initialisations left pending (`initializing()` lists them;
Kafka retries after group.share.initialize.retry.interval.ms), deleting the state of topics
no longer subscribed (DeleteShareGroupState, deletingTopics), per-group configs,
ShareGroupDescribe's authorized operations, AlterShareGroupOffsets and
DeleteShareGroupOffsets.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from odradek.coordinator.common import KeyValue, Timers
from odradek.coordinator.group.consumer.assignors import Assignment
from odradek.coordinator.group.consumer.coordinator import TopicsView
from odradek.coordinator.group.modern import metadata_hash
from odradek.coordinator.share import records as rec
from odradek.coordinator.share.assignor import ShareMemberSpec, assign
from odradek.wire import ErrorCode

JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
STABLE = 0  # the only member state a share group uses


class ShareGroupState(enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    session_timeout_ms: int = 45_000  # group.share.session.timeout.ms
    heartbeat_interval_ms: int = 5_000  # group.share.heartbeat.interval.ms
    max_size: int = 200  # group.share.max.size


@dataclass(frozen=True, slots=True)
class ShareGroupMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = STABLE
    assigned: Assignment = field(default_factory=dict)

    def subscription(self) -> rec.MemberSubscription:
        return rec.MemberSubscription(self.rack_id, self.client_id, self.client_host,
                                      self.subscribed_topic_names)

    def current(self) -> rec.CurrentAssignment:
        return rec.CurrentAssignment(self.member_epoch, self.previous_member_epoch,
                                     self.state, self.assigned)


class ShareGroup:
    """One share group, changed only by `apply`ing its records."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.metadata_hash = 0
        self.assignment_epoch = 0
        self.assignment_timestamp = 0
        self.members: dict[str, ShareGroupMember] = {}
        self.targets: dict[str, Assignment] = {}
        self.state_partitions = rec.StatePartitionMetadata()

    def copy(self) -> ShareGroup:
        other = ShareGroup(self.group_id)
        other.group_epoch, other.metadata_hash = self.group_epoch, self.metadata_hash
        other.assignment_epoch = self.assignment_epoch
        other.assignment_timestamp = self.assignment_timestamp
        other.members = dict(self.members)
        other.targets = dict(self.targets)
        other.state_partitions = self.state_partitions
        return other

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ShareGroup):
            return NotImplemented
        return vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def subscribed_topic_names(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}

    def apply(self, key: rec.ShareKey, value: bytes | memoryview | None) -> None:
        """One record of this group (value None: a tombstone)."""
        t, mid = key.record_type, key.member_id
        if t == rec.GROUP_METADATA:
            if value is not None:
                self.group_epoch, self.metadata_hash = rec.parse_group_epoch(value)
        elif t == rec.MEMBER_METADATA:
            if value is None:
                self.members.pop(mid, None)
            else:
                sub = rec.parse_member(value)
                old = self.members.get(mid, ShareGroupMember(mid))
                self.members[mid] = replace(old, rack_id=sub.rack_id, client_id=sub.client_id,
                                            client_host=sub.client_host,
                                            subscribed_topic_names=sub.subscribed_topic_names)
        elif t == rec.TARGET_METADATA:
            if value is None:
                self.assignment_epoch, self.assignment_timestamp = 0, 0
            else:
                self.assignment_epoch, self.assignment_timestamp = (
                    rec.parse_assignment_epoch(value))
        elif t == rec.TARGET_MEMBER:
            if value is None:
                self.targets.pop(mid, None)
            else:
                self.targets[mid] = rec.parse_target(value)
        elif t == rec.CURRENT_ASSIGNMENT:
            if value is None:
                if mid in self.members:
                    self.members[mid] = replace(self.members[mid], member_epoch=0,
                                                previous_member_epoch=0, assigned={})
            else:
                cur = rec.parse_current(value)
                old = self.members.get(mid, ShareGroupMember(mid))
                self.members[mid] = replace(old, member_epoch=cur.member_epoch,
                                            previous_member_epoch=cur.previous_member_epoch,
                                            state=cur.state, assigned=cur.assigned)
        elif t == rec.STATE_PARTITION_METADATA:
            self.state_partitions = (rec.StatePartitionMetadata() if value is None
                                     else rec.parse_state_partition_metadata(value))


@dataclass(slots=True)
class ShareHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: list[str] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(slots=True)
class ShareHeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@dataclass(frozen=True, slots=True)
class InitializeTopic:
    name: str
    partitions: frozenset[int]
    # -1: a topic the group never had: share.auto.offset.reset decides; 0: new partitions of
    # a topic it has, which start at the beginning so nothing produced to them is skipped
    # (KAFKA-20742).
    start_offset: int


@dataclass(slots=True)
class Outcome:
    """An operation's answer and the records it made (already applied)."""

    result: ShareHeartbeatResult
    records: list[KeyValue]
    # The group before, for `restore` when `records` could not be written (None: the
    # operation created the group).
    snapshot: ShareGroup | None
    group_id: str = ""
    # Share-partitions to initialise (InitializeShareGroupState), now recorded as
    # initialising: the caller asks the share coordinator, then reports back with
    # `initialize_done` or `initialize_failed`.
    initialize: dict[uuid.UUID, InitializeTopic] = field(default_factory=dict)


class _Fail(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error, self.message = error, message


class _Changes:
    def __init__(self, group: ShareGroup) -> None:
        self.group = group
        self.records: list[KeyValue] = []
        self.initialize: dict[uuid.UUID, InitializeTopic] = {}

    def add(self, record: KeyValue) -> None:
        self.records.append(record)
        self.group.apply(rec.parse_key(record[0]), record[1])

    def remove_member(self, member_id: str) -> None:
        gid = self.group.group_id
        self.add(rec.tombstone(rec.CURRENT_ASSIGNMENT, gid, member_id))
        self.add(rec.tombstone(rec.TARGET_MEMBER, gid, member_id))
        self.add(rec.tombstone(rec.MEMBER_METADATA, gid, member_id))


class ShareGroups:
    """The share groups of one `__consumer_offsets` shard: heartbeats, session timers and
    replay. `other_group(group_id)` says whether the id is taken by a classic or consumer
    group of the same shard."""

    def __init__(self, config: ShareGroupConfig, topics: TopicsView,
                 other_group: Callable[[str], bool] = lambda _gid: False) -> None:
        self.config = config
        # A group's own config (the GROUP resource's overrides); the broker's by default.
        self.config_for: Callable[[str], ShareGroupConfig] = lambda _gid: self.config
        self.topics = topics
        self.other_group = other_group
        self.groups: dict[str, ShareGroup] = {}
        self.timers: Timers[tuple[str, str]] = Timers()

    # -- load -----------------------------------------------------------------------------------

    def replay(self, key: bytes | memoryview, value: bytes | memoryview | None) -> None:
        k = rec.parse_key(key)
        group = self.groups.get(k.group)
        if group is None:
            if value is None:
                return
            group = self.groups[k.group] = ShareGroup(k.group)
        group.apply(k, value)
        if k.record_type == rec.GROUP_METADATA and value is None:
            del self.groups[k.group]

    def finish_load(self, now: int) -> None:
        """Every member loaded gets a fresh session (Kafka schedules one per member)."""
        for gid, group in self.groups.items():
            for mid in group.members:
                self.timers.set((gid, mid), now + self.config_for(gid).session_timeout_ms)

    def restore(self, group_id: str, snapshot: ShareGroup | None) -> None:
        """Undo an operation whose records could not be written."""
        if snapshot is None:
            self.groups.pop(group_id, None)
        else:
            self.groups[group_id] = snapshot

    # -- timers ---------------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def on_timer(self, now: int) -> list[Outcome]:
        """Remove the members whose session expired."""
        out = []
        while (due := self.timers.pop_due(now)) is not None:
            gid, mid = due
            group = self.groups.get(gid)
            if group is None or mid not in group.members:
                continue
            snapshot = group.copy()
            changes = _Changes(group)
            self._fence(changes, mid)
            out.append(Outcome(ShareHeartbeatResult(ErrorCode.NONE), changes.records, snapshot,
                               gid))
        return out

    # -- ShareGroupHeartbeat --------------------------------------------------------------------

    def heartbeat(self, req: ShareHeartbeatRequest, now: int) -> Outcome:
        try:
            self._validate(req)
            if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                return self._leave(req)
            return self._heartbeat(req, now)
        except _Fail as fail:
            return Outcome(ShareHeartbeatResult(fail.error, fail.message), [], None,
                           req.group_id)

    @staticmethod
    def _validate(req: ShareHeartbeatRequest) -> None:
        def bad(message: str) -> _Fail:
            return _Fail(ErrorCode.INVALID_REQUEST, message)

        if req.group_id == "":
            raise bad("GroupId can't be empty.")
        if req.rack_id == "":
            raise bad("RackId can't be empty.")
        if req.member_id == "":
            raise bad("MemberId can't be empty.")
        if req.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if not req.subscribed_topic_names:
                raise bad("SubscribedTopicNames must be set in first request.")
        elif req.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            raise bad("MemberEpoch is invalid.")

    def _group(self, group_id: str, create: bool) -> tuple[ShareGroup, bool]:
        if self.other_group(group_id):
            raise _Fail(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        group = self.groups.get(group_id)
        if group is not None:
            return group, False
        if not create:
            raise _Fail(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        group = self.groups[group_id] = ShareGroup(group_id)
        # Kafka 4.4 starts a new share group at epoch 1 (ModernGroup's constructor), so the
        # join that creates it writes epoch 2 (checked with raw heartbeats to the oracle).
        group.group_epoch = 1
        return group, True

    def _leave(self, req: ShareHeartbeatRequest) -> Outcome:
        group, _ = self._group(req.group_id, create=False)
        if req.member_id not in group.members:
            raise _Fail(ErrorCode.UNKNOWN_MEMBER_ID,
                        f"Member {req.member_id} is not a member of group {req.group_id}.")
        snapshot = group.copy()
        changes = _Changes(group)
        self._fence(changes, req.member_id)
        return Outcome(ShareHeartbeatResult(ErrorCode.NONE, member_id=req.member_id,
                                            member_epoch=LEAVE_GROUP_MEMBER_EPOCH),
                       changes.records, snapshot, req.group_id)

    def _fence(self, changes: _Changes, member_id: str) -> None:
        """Remove a member (left or timed out) and bump the group epoch."""
        group = changes.group
        changes.remove_member(member_id)
        self.timers.cancel((group.group_id, member_id))
        changes.add(rec.group_epoch_record(group.group_id, group.group_epoch + 1,
                                           self._hash(group.subscribed_topic_names())))

    def _hash(self, names: set[str]) -> int:
        found = []
        for name in names:
            info = self.topics.topic_info(name)
            if info is not None:
                found.append((name, info[0], info[1]))
        return metadata_hash(found) if found else 0

    def _heartbeat(self, req: ShareHeartbeatRequest, now: int) -> Outcome:
        cfg = self.config_for(req.group_id)
        joining = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        group, created = self._group(req.group_id, create=joining)
        snapshot = None if created else group.copy()
        try:
            result, changes = self._changes(group, req, now)
        except _Fail:
            self.restore(req.group_id, snapshot)
            raise
        self.timers.set((req.group_id, req.member_id), now + cfg.session_timeout_ms)
        return Outcome(result, changes.records, snapshot, req.group_id, changes.initialize)

    def _changes(self, group: ShareGroup, req: ShareHeartbeatRequest,
                 now: int) -> tuple[ShareHeartbeatResult, _Changes]:
        cfg = self.config_for(group.group_id)
        gid, mid = group.group_id, req.member_id
        joining = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        member = group.members.get(mid)
        if member is None and len(group.members) >= cfg.max_size:
            raise _Fail(ErrorCode.GROUP_MAX_SIZE_REACHED,
                        f"The share group has reached its maximum capacity of "
                        f"{cfg.max_size} members.")
        if member is None:
            if not joining:
                raise _Fail(ErrorCode.UNKNOWN_MEMBER_ID,
                            f"Member {mid} is not a member of group {gid}.")
            member = ShareGroupMember(mid)
        elif not joining:
            self._check_epoch(member, req.member_epoch)
        changes = _Changes(group)
        is_new = mid not in group.members
        updated = replace(
            member,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            subscribed_topic_names=(tuple(sorted(set(req.subscribed_topic_names)))
                                    if req.subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            client_id=req.client_id, client_host=req.client_host)
        bump = False
        if is_new or updated.subscription() != member.subscription():
            changes.add(rec.member_record(gid, mid, updated.subscription()))
            # Kafka bumps for a new member or new topic names; a rack or client change is
            # only recorded (the simple assignor is not rack-aware).
            bump = is_new or updated.subscribed_topic_names != member.subscribed_topic_names
        new_hash = self._hash(group.subscribed_topic_names())
        subscribed = self._subscribed_partitions(group)
        initialize = self._start_initializing(group, changes, subscribed)
        assignable = {t: parts & group.state_partitions.initialized.get(t, ("", frozenset()))[1]
                      for t, (_, parts) in subscribed.items()}
        assigned = {(t, p) for a in group.targets.values() for t, ps in a.items()
                    if t in subscribed for p in ps}
        # Newly initialised partitions not in the target yet: assign again (Kafka compares
        # the initialised subscribed partitions with the assigned ones).
        pending = assigned != {(t, p) for t, ps in assignable.items() for p in ps}
        if bump or new_hash != group.metadata_hash or (
                pending and group.group_epoch == group.assignment_epoch):
            changes.add(rec.group_epoch_record(gid, group.group_epoch + 1, new_hash))
        if group.group_epoch > group.assignment_epoch:
            self._update_targets(group, changes, assignable, now)
        before = group.members[mid]
        target = group.targets.get(mid, {})
        epoch = group.assignment_epoch
        current = before
        if joining or before.member_epoch != epoch or before.assigned != target:
            current = replace(before, member_epoch=epoch,
                              previous_member_epoch=(before.member_epoch if not joining
                                                     else before.previous_member_epoch),
                              state=STABLE, assigned=target)
            if current.current() != before.current():
                changes.add(rec.current_record(gid, mid, current.current()))
        full = joining or current.assigned != member.assigned
        changes.initialize = initialize
        return ShareHeartbeatResult(
            ErrorCode.NONE, member_id=mid, member_epoch=current.member_epoch,
            heartbeat_interval_ms=cfg.heartbeat_interval_ms,
            assignment=current.assigned if full else None), changes

    @staticmethod
    def _check_epoch(member: ShareGroupMember, received: int) -> None:
        if received > member.member_epoch:
            raise _Fail(ErrorCode.FENCED_MEMBER_EPOCH,
                        f"The share group member has a greater member epoch ({received}) than "
                        f"the one known by the group coordinator ({member.member_epoch}). The "
                        f"member must abandon all its partitions and rejoin.")
        if received < member.member_epoch and received != member.previous_member_epoch:
            raise _Fail(ErrorCode.FENCED_MEMBER_EPOCH,
                        f"The share group member has a smaller member epoch ({received}) than "
                        f"the one known by the group coordinator ({member.member_epoch}). The "
                        f"member must abandon all its partitions and rejoin.")

    def _subscribed_partitions(self, group: ShareGroup,
                               ) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
        """Every existing subscribed topic: id -> (name, all its partitions)."""
        out = {}
        for name in group.subscribed_topic_names():
            info = self.topics.topic_info(name)
            if info is not None:
                topic_id, partitions = info
                out[topic_id] = (name, frozenset(range(partitions)))
        return out

    @staticmethod
    def _start_initializing(group: ShareGroup, changes: _Changes,
                            subscribed: dict[uuid.UUID, tuple[str, frozenset[int]]],
                            ) -> dict[uuid.UUID, InitializeTopic]:
        """Record the subscribed share-partitions neither initialised nor initialising as
        initialising (ShareGroupStatePartitionMetadata), and say which to initialise."""
        md = group.state_partitions
        empty: tuple[str, frozenset[int]] = ("", frozenset())
        out: dict[uuid.UUID, InitializeTopic] = {}
        for topic_id, (name, parts) in sorted(subscribed.items()):
            have = md.initialized.get(topic_id, empty)[1] | md.initializing.get(topic_id, empty)[1]
            missing = parts - have
            if missing:
                known = topic_id in md.initialized or topic_id in md.initializing
                out[topic_id] = InitializeTopic(name, missing, 0 if known else -1)
        if out:
            initializing = dict(md.initializing)
            for topic_id, init in out.items():
                initializing[topic_id] = (init.name, initializing.get(topic_id, empty)[1]
                                          | init.partitions)
            changes.add(rec.state_partition_metadata_record(
                group.group_id, replace(md, initializing=initializing)))
        return out

    def _update_targets(self, group: ShareGroup, changes: _Changes,
                        assignable: dict[uuid.UUID, frozenset[int]], now: int) -> None:
        ids: dict[str, uuid.UUID] = {}
        for name in group.subscribed_topic_names():
            info = self.topics.topic_info(name)
            if info is not None:
                ids[name] = info[0]
        specs = {m.member_id: ShareMemberSpec(
                    m.member_id,
                    frozenset(ids[n] for n in m.subscribed_topic_names if n in ids),
                    group.targets.get(m.member_id, {}))
                 for m in group.members.values()}
        targets = assign(specs, assignable)
        for mid in sorted(targets):
            if mid not in group.targets or targets[mid] != group.targets[mid]:
                changes.add(rec.target_record(group.group_id, mid, targets[mid]))
        changes.add(rec.assignment_epoch_record(group.group_id, group.group_epoch, now))

    # -- share-partition initialisation ---------------------------------------------------------

    def initializing(self, group_id: str) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
        """The share-partitions recorded as initialising (after a load: to send again)."""
        group = self.groups.get(group_id)
        return {} if group is None else dict(group.state_partitions.initializing)

    def initialize_done(self, group_id: str,
                        topics: dict[uuid.UUID, frozenset[int]]) -> Outcome:
        """The share coordinator initialised these share-partitions: they become
        assignable (the next heartbeat assigns them). Kafka's initializeShareGroupState."""
        return self._move_initializing(group_id, topics, done=True)

    def initialize_failed(self, group_id: str,
                          topics: dict[uuid.UUID, frozenset[int]]) -> Outcome:
        """The initialisation failed: forget that it was under way, so the next heartbeat
        asks again. Kafka's uninitializeShareGroupState."""
        return self._move_initializing(group_id, topics, done=False)

    def _move_initializing(self, group_id: str, topics: dict[uuid.UUID, frozenset[int]],
                           done: bool) -> Outcome:
        group = self.groups.get(group_id)
        if group is None:
            return Outcome(ShareHeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND,
                                                f"Share group {group_id} not found."),
                           [], None, group_id)
        md = group.state_partitions
        initializing = dict(md.initializing)
        initialized = dict(md.initialized)
        for topic_id, parts in topics.items():
            name, pending = initializing.get(topic_id, ("", frozenset()))
            moved = parts & pending
            if not moved:
                continue
            rest = pending - moved
            if rest:
                initializing[topic_id] = (name, rest)
            else:
                del initializing[topic_id]
            if done:
                old = initialized.get(topic_id, (name, frozenset()))[1]
                initialized[topic_id] = (name, old | moved)
        new = replace(md, initializing=initializing, initialized=initialized)
        if new == md:
            return Outcome(ShareHeartbeatResult(ErrorCode.NONE), [], None, group_id)
        snapshot = group.copy()
        changes = _Changes(group)
        changes.add(rec.state_partition_metadata_record(group_id, new))
        return Outcome(ShareHeartbeatResult(ErrorCode.NONE), changes.records, snapshot,
                       group_id)

    def offsets_altered(self, group_id: str,
                        topics: dict[uuid.UUID, tuple[str, frozenset[int]]]) -> Outcome:
        """AlterShareGroupOffsets wrote these share-partitions' state: they count as
        initialised (a member joining later must not start them over from
        share.auto.offset.reset). A group that does not exist yet is created empty, as
        Kafka 4.4 does, so a group's start offsets can be set before its first member."""
        try:
            group, created = self._group(group_id, create=True)
        except _Fail as e:
            return Outcome(ShareHeartbeatResult(e.error, e.message), [], None, group_id)
        snapshot = None if created else group.copy()
        changes = _Changes(group)
        if created:  # at the epoch a new group starts at, written so a restart has it
            changes.add(rec.group_epoch_record(group_id, group.group_epoch, 0))
        md = group.state_partitions
        initializing, initialized = dict(md.initializing), dict(md.initialized)
        for topic_id, (name, parts) in topics.items():
            name_was, pending = initializing.get(topic_id, (name, frozenset()))
            if pending - parts:
                initializing[topic_id] = (name_was, pending - parts)
            else:
                initializing.pop(topic_id, None)
            old = initialized.get(topic_id, (name, frozenset()))[1]
            initialized[topic_id] = (name, old | parts)
        new = replace(md, initializing=initializing, initialized=initialized)
        if new != md:
            changes.add(rec.state_partition_metadata_record(group_id, new))
        return Outcome(ShareHeartbeatResult(ErrorCode.NONE), changes.records, snapshot,
                       group_id)

    def forget_topics(self, group_id: str, topic_ids: set[uuid.UUID]) -> Outcome:
        """DeleteShareGroupOffsets: these topics' share-partitions are neither initialised
        nor initialising any more (their state is deleted; a later subscription starts them
        over)."""
        group = self.groups.get(group_id)
        if group is None:
            return Outcome(ShareHeartbeatResult(ErrorCode.GROUP_ID_NOT_FOUND,
                                                f"Share group {group_id} not found."),
                           [], None, group_id)
        md = group.state_partitions
        new = replace(md, initialized={t: v for t, v in md.initialized.items()
                                       if t not in topic_ids},
                      initializing={t: v for t, v in md.initializing.items()
                                    if t not in topic_ids})
        if new == md:
            return Outcome(ShareHeartbeatResult(ErrorCode.NONE), [], None, group_id)
        snapshot = group.copy()
        changes = _Changes(group)
        changes.add(rec.state_partition_metadata_record(group_id, new))
        return Outcome(ShareHeartbeatResult(ErrorCode.NONE), changes.records, snapshot,
                       group_id)

    # -- ShareGroupDescribe ---------------------------------------------------------------------

    def describe(self, group_id: str) -> tuple[ErrorCode, str | None, ShareGroup | None]:
        """The group ShareGroupDescribe lists (GROUP_ID_NOT_FOUND if it is not one)."""
        if self.other_group(group_id):
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.", None
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None
        return ErrorCode.NONE, None, group
