"""The classic group coordinator as a sans-IO state machine (Kafka's GroupCoordinator).

A shard of the coordinator runtime (`coordinator/common.py`): time comes from the injected
`Clock` (and the `now` given to `on_timer`), writes to `__consumer_offsets` go out through
`outbox` and are acknowledged through `Write.on_done`, and responses that wait (a JoinGroup
until the join phase ends, a follower's SyncGroup until the leader's assignment is stored, a
commit until its record is written) are `Pending` handles.

Behaviour follows Kafka's classic protocol (states and transitions in `state.py`), with one
deliberate difference: the join phase of a new (Empty) group ends as soon as every known
member has joined and no member id handed out with MEMBER_ID_REQUIRED is still outstanding,
instead of always waiting `group.initial.rebalance.delay.ms`. A lone consumer is answered at
once; consumers that start together still land in one generation because their pending
member ids hold the phase open, for up to the initial delay (extended in steps of the delay
while new members keep arriving, capped by the rebalance timeout, as Kafka's
InitialDelayedJoin does). With the delay at 0 (test set-ups use it) outstanding ids still hold
the phase, in steps of PENDING_MEMBER_HOLD_MS. And the phase never ends before JOIN_SETTLE_MS
after the latest arrival: Odradek answers a join in well under a millisecond, so without it the
first of several consumers started together would complete a generation alone before the
others arrive, and they would pay a full rebalance (the members' next heartbeat, 3 s for
librdkafka) where Kafka, slower to answer, usually gathers them into one generation.

Timers (keys of `Timers`): ("hb", group, member) session expiry (or the 5-minute new-member
join timeout), ("pending", group, member) expiry of an unclaimed MEMBER_ID_REQUIRED id,
("join", group) end of the join phase, ("settle", group) the end of JOIN_SETTLE_MS in a new
group's join phase, ("sync", group) members that got a JoinGroup answer
but never sent SyncGroup, ("expire",) the periodic offset-retention pass.
"""

from __future__ import annotations

import copy
import struct
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from odradek.coordinator.common import Clock, KeyValue, Outbox, Pending, Timers, Write
from odradek.coordinator.group.consumer import records as consumer_records
from odradek.coordinator.group.consumer.coordinator import (
    ConsumerConfig,
    HeartbeatRequest,
    HeartbeatResult,
    NoTopics,
    TopicFilter,
    TopicsView,
)
from odradek.coordinator.group.consumer.model import ConsumerGroup
from odradek.coordinator.group.migration import MigrationOps
from odradek.coordinator.group.model import (
    CommittedOffset,
    FetchedOffset,
    Group,
    GroupDescription,
    GroupOverview,
    JoinMember,
    JoinResult,
    LeaveMemberResult,
    LeaveResult,
    LeavingMember,
    Member,
    MemberDescription,
    SyncResult,
    TopicPartition,
)
from odradek.coordinator.group.records import (
    OFFSETS_TOPIC,
    GroupKey,
    OffsetAndMetadata,
    OffsetKey,
    UnknownKey,
    group_metadata_key,
    group_metadata_value,
    offset_commit_key,
    offset_commit_value,
    parse_group_value,
    parse_key,
    parse_offset_value,
    partition_for,
)
from odradek.coordinator.group.state import (
    COMMIT_ANSWER,
    HEARTBEAT_ANSWER,
    SYNC_ANSWER,
    GroupState,
)
from odradek.coordinator.share import records as share_records
from odradek.coordinator.share.group import (
    Outcome as ShareOutcome,
)
from odradek.coordinator.share.group import (
    ShareGroupConfig,
    ShareGroups,
    ShareHeartbeatRequest,
)
from odradek.coordinator.streams import records as streams_records
from odradek.coordinator.streams.coordinator import (
    DescribedStreamsGroup,
    StreamsConfig,
    StreamsCoordinator,
)
from odradek.coordinator.streams.coordinator import HeartbeatRequest as StreamsHeartbeatRequest
from odradek.coordinator.streams.coordinator import HeartbeatResult as StreamsHeartbeatResult
from odradek.wire import ErrorCode, ProtocolError
from odradek.wire._generated.data import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from odradek.wire._generated.internal import GroupMetadataValue
from odradek.wire.records import CONTROL_COMMIT, RecordBatch

E = GroupState.EMPTY
P = GroupState.PREPARING_REBALANCE
C = GroupState.COMPLETING_REBALANCE
S = GroupState.STABLE
D = GroupState.DEAD

# A new member's JoinGroup may wait this long before the member is dropped (Kafka's value):
# it cannot heartbeat yet, and a client that gave up would otherwise linger forever.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
# How long an outstanding MEMBER_ID_REQUIRED id holds a new group's join phase open when
# group.initial.rebalance.delay.ms is 0: a rejoin is one round trip, even on a loaded machine.
PENDING_MEMBER_HOLD_MS = 500
# The quiet time that ends a new group's join phase once every member is in (see above).
JOIN_SETTLE_MS = 100

_I16 = struct.Struct(">h")
# What a consumer receives when the leader sent nothing for it: a valid empty assignment
# (version 0, no partitions, null user data), which every client decodes.
EMPTY_CONSUMER_ASSIGNMENT = _I16.pack(0) + b"".join(ConsumerProtocolAssignment().encode(0))

TimerKey = tuple[str, ...]

# How a failed append answers a streams heartbeat (as for consumer groups).
_STREAMS_WRITE_ERRORS = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


@dataclass(frozen=True, slots=True)
class GroupConfig:
    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    max_size: int = 2**31 - 1
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    offsets_topic_partitions: int = 50
    # JOIN_SETTLE_MS in the broker; 0 (off) by default so that sans-IO tests of other
    # behaviour see joins answered at once.
    join_settle_ms: int = 0


@dataclass(slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    require_known_member_id: bool = True  # JoinGroup v4+ for dynamic members
    support_skip_assignment: bool = False  # JoinGroup v9+
    reason: str | None = None
    # The topics the member may DESCRIBE (consumer/coordinator.py TopicFilter): a classic
    # member joining a consumer group may trigger its regexes' resolution.
    describable: TopicFilter | None = None


@dataclass(slots=True)
class SyncRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None  # v5+
    protocol_name: str | None = None  # v5+
    assignments: dict[str, bytes] = field(default_factory=dict)


_COMMIT_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}
_STORE_GROUP_ERRORS = {
    **_COMMIT_ERRORS,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.REBALANCE_IN_PROGRESS,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def _no_log(event: str, **kw: Any) -> None:
    pass


def _join_error(error: ErrorCode, member_id: str = "") -> Pending[JoinResult]:
    return Pending.resolved(JoinResult(error, member_id))


class _Loader:
    """State collected while replaying `__consumer_offsets` (Kafka's doLoadGroupsAndOffsets)."""

    def __init__(self) -> None:
        self.offsets: dict[tuple[str, TopicPartition], CommittedOffset] = {}
        self.pending: dict[int, dict[tuple[str, TopicPartition], CommittedOffset]] = {}
        self.groups: dict[str, tuple[int, GroupMetadataValue]] = {}
        self.removed: set[str] = set()
        self.consumer: dict[str, ConsumerGroup] = {}
        self.unknown_keys = 0


class GroupCoordinator(MigrationOps):
    def __init__(self, config: GroupConfig, clock: Clock, *,
                 new_uuid: Callable[[], str] = lambda: str(uuid.uuid4()),
                 log: Callable[..., None] = _no_log,
                 consumer_config: ConsumerConfig | None = None,
                 topics: TopicsView | None = None,
                 share_config: ShareGroupConfig | None = None,
                 streams_config: StreamsConfig | None = None) -> None:
        self.config = config
        self.consumer_config = consumer_config or ConsumerConfig()
        self.topics = topics or NoTopics()
        # Streams groups (KIP-1071) share the shard and the group-id namespace.
        self.streams = StreamsCoordinator(streams_config, self.topics)
        self._clock = clock
        self._new_uuid = new_uuid
        self._log = log
        self.groups: dict[str, Group] = {}
        self._timers: Timers[TimerKey] = Timers()
        self.outbox = Outbox()
        self._loader: _Loader | None = None
        self._timers.set(("expire",), clock.now_ms() + config.offsets_retention_check_interval_ms)
        # KIP-932 share groups live beside the classic and consumer groups (their records,
        # types 10-15, share __consumer_offsets); a group id names one kind of group only.
        self.share = ShareGroups(share_config or ShareGroupConfig(), self.topics,
                                 other_group=self._taken_by_other_kind)
        # Told of every share member that left or timed out (the broker releases the
        # records it holds in every share-partition).
        self.on_share_member_removed: Callable[[str, str], None] = lambda _g, _m: None
        # Told of a deleted share group and its topics (the broker deletes their state).
        self.on_share_group_deleted: Callable[[str, set[uuid.UUID]], None] = (
            lambda _g, _t: None)

    # -- runtime interface ----------------------------------------------------------------------

    def now(self) -> int:
        return self._clock.now_ms()

    def next_deadline(self) -> int | None:
        own, share = self._timers.next_deadline(), self.share.next_deadline()
        return share if own is None else own if share is None else min(own, share)

    def _taken_by_other_kind(self, group_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and not group.is_(D)

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.offsets_topic_partitions)

    def on_timer(self, now: int | None = None) -> None:
        """Fire every timer due at `now` (default: the clock)."""
        now = self.now() if now is None else now
        for outcome in self.share.on_timer(now):
            self._write_share(outcome, lambda _error: None)
            for record in outcome.records:
                k = share_records.parse_key(record[0])
                if k.record_type == share_records.MEMBER_METADATA and record[1] is None:
                    self.on_share_member_removed(k.group, k.member_id)
        while (key := self._timers.pop_due(now)) is not None:
            kind = key[0]
            if kind in ("cg-session", "cg-rebalance", "cg-regex", "cg-join", "cg-sync"):
                self.on_consumer_timer(key)
                continue
            if kind == "sg-expire":
                self._write_streams(self.streams.expire(now), None)
                self._schedule_streams()
                continue
            if kind == "expire":
                self._timers.set(("expire",), now + self.config.offsets_retention_check_interval_ms)
                self.expire_offsets(now)
                continue
            group = self.groups.get(key[1])
            if group is None or group.is_(D):
                continue
            if kind == "hb":
                self._on_session_timeout(group, key[2], now)
            elif kind == "pending":
                if key[2] in group.pending_members:
                    self._log("pending member expired", group=group.group_id, member=key[2])
                    self._remove_pending_member(group, key[2], now)
            elif kind == "join":
                if group.is_(P):
                    self._on_join_timer(group, now)
            elif kind == "settle":
                self._try_complete_join(group, now)
            elif kind == "sync":
                self._on_sync_timeout(group, now)

    # -- JoinGroup ----------------------------------------------------------------------------

    def consumer_group_heartbeat(self, req: HeartbeatRequest) -> Pending[HeartbeatResult]:
        # one namespace: a share or streams group's id is not a consumer group's
        if req.group_id in self.share.groups or req.group_id in self.streams.groups:
            return Pending.resolved(HeartbeatResult(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a consumer group."))
        return super().consumer_group_heartbeat(req)

    def join_group(self, req: JoinRequest) -> Pending[JoinResult]:
        now = self.now()
        if not req.group_id:
            return _join_error(ErrorCode.INVALID_GROUP_ID, req.member_id)
        if req.group_id in self.share.groups:  # a share group's id: no classic member joins
            return _join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id)
        if not (self.config.min_session_timeout_ms <= req.session_timeout_ms
                <= self.config.max_session_timeout_ms):
            return _join_error(ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id)
        is_unknown = req.member_id == ""
        group = self.groups.get(req.group_id)
        if group is None:
            if not is_unknown:
                return _join_error(ErrorCode.UNKNOWN_MEMBER_ID, req.member_id)
            group = self._add_group(req.group_id, now)
        if group.consumer is not None:
            if not group.consumer.is_empty:
                # A classic member in a consumer group (migration.py).
                return self.classic_join_consumer_group(
                    group, group.consumer, req.member_id, req.group_instance_id,
                    req.protocol_type, req.protocols, req.session_timeout_ms,
                    req.rebalance_timeout_ms, req.client_id, req.client_host,
                    req.require_known_member_id, req.describable)
            # An empty consumer group is deleted and the group starts over as a classic one.
            self._write_tombstones(group.group_id,
                                   self.consumer_group_tombstones(group.consumer))
            group.convert_to_classic()
        pending: Pending[JoinResult] = Pending()
        if not self._accept_joining_member(group, req.member_id):
            self._drop_member(group, req.member_id)
            pending.resolve(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, ""))
        elif is_unknown:
            self._join_new_member(group, req, pending, now)
        else:
            self._join_current_member(group, req, pending, now)
        if group.is_(P):
            self._try_complete_join(group, now)
        return pending

    def _accept_joining_member(self, group: Group, member_id: str) -> bool:
        if group.state in (E, D):
            return True
        member = group.members.get(member_id)
        if group.is_(P):
            return ((member is not None and member.awaiting_join)
                    or group.num_awaiting_join < self.config.max_size)
        return member is not None or len(group.members) < self.config.max_size

    def _join_new_member(self, group: Group, req: JoinRequest, pending: Pending[JoinResult],
                         now: int) -> None:
        if group.is_(D):
            pending.resolve(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not group.supports_protocols(req.protocol_type, req.protocols):
            pending.resolve(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        new_id = f"{req.group_instance_id or req.client_id}-{self._new_uuid()}"
        instance_id = req.group_instance_id
        if instance_id is not None:
            old_id = group.static_members.get(instance_id)
            if old_id is not None:
                self._log("static member rejoins with a new member id", group=group.group_id,
                          instance=instance_id, old=old_id, new=new_id)
                self._update_static_member(group, old_id, new_id, req, pending, now)
            else:
                self._add_member_and_rebalance(group, new_id, req, pending, now)
        elif req.require_known_member_id:
            # KIP-394: hand out the id first, admit the member when it comes back with it.
            group.pending_members.add(new_id)
            self._note_arrival(group, now)
            self._timers.set(("pending", group.group_id, new_id), now + req.session_timeout_ms)
            pending.resolve(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member_and_rebalance(group, new_id, req, pending, now)

    def _join_current_member(self, group: Group, req: JoinRequest,
                             pending: Pending[JoinResult], now: int) -> None:
        member_id = req.member_id
        if group.is_(D):
            pending.resolve(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(req.protocol_type, req.protocols):
            pending.resolve(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_members:
            if req.group_instance_id is not None:
                # Pending ids are only handed to dynamic members.
                pending.resolve(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
                return
            self._timers.cancel(("pending", group.group_id, member_id))
            self._add_member_and_rebalance(group, member_id, req, pending, now)
            return
        error = self._validate_member(group, member_id, req.group_instance_id)
        if error is not None:
            pending.resolve(JoinResult(error, member_id))
            return
        member = group.members[member_id]
        if group.is_(P):
            self._update_member_and_rebalance(group, member, req, pending, now)
        elif group.is_(C):
            if member.matches(req.protocols):
                # A retry of a JoinGroup whose answer was lost: repeat the answer.
                pending.resolve(self._join_answer(group, member_id))
            else:
                self._update_member_and_rebalance(group, member, req, pending, now)
        elif group.is_(S):
            if group.is_leader(member_id) or not member.matches(req.protocols):
                # A leader's JoinGroup always rebalances (it may have seen metadata change).
                self._update_member_and_rebalance(group, member, req, pending, now)
            else:
                pending.resolve(self._join_answer(group, member_id, with_members=False))
        else:
            pending.resolve(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _join_answer(self, group: Group, member_id: str, *, with_members: bool = True,
                     leader_id: str | None = None, skip_assignment: bool = False) -> JoinResult:
        members: list[JoinMember] = []
        if with_members and group.is_leader(member_id):
            members = self._member_metadata(group)
        return JoinResult(
            ErrorCode.NONE, member_id, group.generation_id, group.protocol_type,
            group.protocol_name, (group.leader_id or "") if leader_id is None else leader_id,
            skip_assignment, members)

    @staticmethod
    def _member_metadata(group: Group) -> list[JoinMember]:
        protocol = group.protocol_name or ""
        return [JoinMember(m.member_id, m.group_instance_id, m.metadata(protocol))
                for m in group.members.values()]

    def _validate_member(self, group: Group, member_id: str,
                         instance_id: str | None) -> ErrorCode | None:
        """A static member must map to this member id (else fenced); a dynamic one must exist."""
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                self._log("static member fenced", group=group.group_id, instance=instance_id,
                          member=member_id, current=current)
                return ErrorCode.FENCED_INSTANCE_ID
            return None
        return None if group.has(member_id) else ErrorCode.UNKNOWN_MEMBER_ID

    def _add_member_and_rebalance(self, group: Group, member_id: str, req: JoinRequest,
                                  pending: Pending[JoinResult], now: int) -> None:
        member = Member(member_id, req.group_instance_id, req.client_id, req.client_host,
                        req.rebalance_timeout_ms, req.session_timeout_ms, req.protocol_type,
                        list(req.protocols), join_waiter=pending, is_new=True)
        if group.is_(P) and group.generation_id == 0:
            group.new_member_added = True
        self._note_arrival(group, now)
        group.add(member)
        self._timers.set(("hb", group.group_id, member_id), now + NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, now, f"adding member {member_id}")

    def _update_member_and_rebalance(self, group: Group, member: Member, req: JoinRequest,
                                     pending: Pending[JoinResult], now: int) -> None:
        group.update_protocols(member, list(req.protocols))
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        self._set_join_waiter(member, pending)
        self._maybe_prepare_rebalance(group, now, f"member {member.member_id} rejoins")

    @staticmethod
    def _set_join_waiter(member: Member, pending: Pending[JoinResult]) -> None:
        old = member.join_waiter
        if old is not None and old is not pending and not old.done:
            # An earlier JoinGroup (a retry on another connection) must not hang forever.
            old.resolve(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        member.join_waiter = pending

    def _update_static_member(self, group: Group, old_id: str, new_id: str, req: JoinRequest,
                              pending: Pending[JoinResult], now: int) -> None:
        instance_id = req.group_instance_id
        assert instance_id is not None
        current_leader = group.leader_id
        old = group.members[old_id]
        # Whoever still holds the old id is a zombie or duplicate: fence its waiting calls.
        self._resolve_join(old, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
        self._resolve_sync(old, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        member = group.replace_static_member(instance_id, old_id, new_id)
        self._timers.cancel(("hb", group.group_id, old_id))
        self._schedule_heartbeat(group, member, now)
        old_protocols = member.protocols
        old_timeouts = (member.rebalance_timeout_ms, member.session_timeout_ms)
        group.update_protocols(member, list(req.protocols))
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        member.join_waiter = pending
        if group.is_(S):
            if group.protocol_name == group.select_protocol():
                # KIP-345: same protocol, no rebalance; persist the new member id only.
                generation = group.generation_id

                def stored(error: ErrorCode) -> None:
                    if error != ErrorCode.NONE:
                        group.update_protocols(member, old_protocols)
                        member.rebalance_timeout_ms, member.session_timeout_ms = old_timeouts
                        member.join_waiter = None
                        if group.has(new_id):
                            back = group.replace_static_member(instance_id, new_id, old_id)
                            self._timers.cancel(("hb", group.group_id, new_id))
                            self._schedule_heartbeat(group, back, now)
                        pending.resolve(JoinResult(
                            error, "", generation, group.protocol_type, group.protocol_name,
                            current_leader or ""))
                    elif req.support_skip_assignment:
                        # v9: the leader learns it leads, but must not run its assignor.
                        is_leader = group.is_leader(new_id)
                        self._resolve_join(member, self._join_answer(
                            group, new_id, with_members=is_leader, skip_assignment=is_leader))
                    else:
                        # Older clients: report the old leader id so a returning leader does
                        # not compute an assignment the stable group would ignore.
                        self._resolve_join(member, self._join_answer(
                            group, new_id, with_members=False, leader_id=current_leader or ""))

                self._store_group(group, {m.member_id: m.assignment
                                          for m in group.members.values()}, stored)
            else:
                self._maybe_prepare_rebalance(group, now, "static member changed protocols")
        elif group.is_(C):
            # The leader may already be assigning with the old id: start over.
            self._prepare_rebalance(group, now, f"static member {instance_id} rejoined")
        # PreparingRebalance: the member simply waits for the join phase to end.

    # -- rebalance ------------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group, now: int, reason: str) -> None:
        if group.can_rebalance:
            self._prepare_rebalance(group, now, reason)

    def _initial_join_step_ms(self, group: Group) -> int:
        """One step of a new group's join phase: the initial delay, or, when that is 0 and
        member ids are outstanding, the time their owners get to come back with them."""
        delay = self.config.initial_rebalance_delay_ms
        if delay == 0 and group.pending_members:
            return PENDING_MEMBER_HOLD_MS
        return delay

    def _prepare_rebalance(self, group: Group, now: int, reason: str) -> None:
        if group.is_(C):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS, now)
        self._clear_pending_sync(group)
        if group.is_(E):
            delay = self._initial_join_step_ms(group)
            group.initial_join = True
            group.initial_remaining_ms = max(group.rebalance_timeout_ms - delay, 0)
            deadline = now + delay
        else:
            group.initial_join = False
            deadline = now + group.rebalance_timeout_ms
        self._log("preparing to rebalance", group=group.group_id, state=group.state.value,
                  generation=group.generation_id, reason=reason)
        group.transition_to(P, now)
        self._timers.set(("join", group.group_id), deadline)
        self._try_complete_join(group, now)

    def _note_arrival(self, group: Group, now: int) -> None:
        """A member or a handed-out id arrived: a new group's join phase settles after it."""
        if group.is_(E) or (group.is_(P) and group.initial_join):
            group.settle_until_ms = now + self.config.join_settle_ms

    def _try_complete_join(self, group: Group, now: int) -> None:
        if group.is_(P) and group.all_members_joined:
            if group.initial_join and now < group.settle_until_ms:
                self._timers.set(("settle", group.group_id), group.settle_until_ms)
                return
            self._complete_join(group, now)

    def _on_join_timer(self, group: Group, now: int) -> None:
        if group.initial_join and now < group.settle_until_ms:
            self._timers.set(("join", group.group_id), group.settle_until_ms)
            return
        if group.initial_join and group.new_member_added and group.initial_remaining_ms > 0:
            group.new_member_added = False
            delay = min(self._initial_join_step_ms(group), group.initial_remaining_ms)
            group.initial_remaining_ms = max(group.initial_remaining_ms - delay, 0)
            self._timers.set(("join", group.group_id), now + delay)
            return
        self._complete_join(group, now)

    def _complete_join(self, group: Group, now: int) -> None:
        gid = group.group_id
        self._timers.cancel(("join", gid))
        self._timers.cancel(("settle", gid))
        group.initial_join = group.new_member_added = False
        for member in [m for m in group.members.values() if not m.awaiting_join and not m.is_static]:
            self._log("member did not rejoin in time", group=gid, member=member.member_id)
            self._drop_member(group, member.member_id)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined (only static members remain): wait for their session timeouts.
            self._timers.set(("join", gid), now + group.rebalance_timeout_ms)
            return
        self._init_next_generation(group, now)
        if group.is_(E):
            self._log("group is now empty", group=gid, generation=group.generation_id)
            self._store_group(group, {}, lambda error: None)
            return
        self._log("group rebalanced", group=gid, generation=group.generation_id,
                  protocol=group.protocol_name, leader=group.leader_id,
                  members=len(group.members))
        for member in group.members.values():
            self._resolve_join(member, self._join_answer(group, member.member_id))
            self._schedule_heartbeat(group, member, now)
            member.is_new = False
            group.pending_sync.add(member.member_id)
        self._timers.set(("sync", gid), now + group.rebalance_timeout_ms)

    def _init_next_generation(self, group: Group, now: int) -> None:
        group.generation_id += 1
        if group.members:
            group.protocol_name = group.select_protocol()
            group.subscribed_topics = _subscribed_topics(group)
            group.transition_to(C, now)
        else:
            group.protocol_name = None
            group.subscribed_topics = _subscribed_topics(group)
            group.transition_to(E, now)
        group.pending_sync.clear()

    def _clear_pending_sync(self, group: Group) -> None:
        group.pending_sync.clear()
        self._timers.cancel(("sync", group.group_id))

    def _on_sync_timeout(self, group: Group, now: int) -> None:
        if group.state not in (C, S) or not group.pending_sync:
            return
        missing = sorted(group.pending_sync)
        self._log("members never sent SyncGroup; removing them", group=group.group_id,
                  members=missing)
        for member_id in missing:
            self._drop_member(group, member_id)
        self._prepare_rebalance(group, now, f"no SyncGroup from {missing}")

    def _on_session_timeout(self, group: Group, member_id: str, now: int) -> None:
        member = group.members.get(member_id)
        if member is None:
            return
        if not member.is_new and (member.awaiting_join or member.awaiting_sync):
            return  # waiting in a rebalance counts as alive; rescheduled when answered
        self._log("member session expired" if not member.is_new else "new member join timed out",
                  group=group.group_id, member=member_id)
        self._remove_member_and_update_group(group, member, now)

    def _schedule_heartbeat(self, group: Group, member: Member, now: int) -> None:
        self._timers.set(("hb", group.group_id, member.member_id), now + member.session_timeout_ms)

    # -- waiters ------------------------------------------------------------------------------

    @staticmethod
    def _resolve_join(member: Member, result: JoinResult) -> None:
        waiter, member.join_waiter = member.join_waiter, None
        if waiter is not None and not waiter.done:
            waiter.resolve(result)

    @staticmethod
    def _resolve_sync(member: Member, result: SyncResult) -> bool:
        waiter, member.sync_waiter = member.sync_waiter, None
        if waiter is not None and not waiter.done:
            waiter.resolve(result)
            return True
        return False

    def _reset_and_propagate_assignment_error(self, group: Group, error: ErrorCode,
                                              now: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error, now)

    def _propagate_assignment(self, group: Group, error: ErrorCode, now: int) -> None:
        ok = error == ErrorCode.NONE
        for member in group.members.values():
            result = SyncResult(error, group.protocol_type if ok else None,
                                group.protocol_name if ok else None, member.assignment)
            if self._resolve_sync(member, result):
                self._schedule_heartbeat(group, member, now)

    # -- members leaving ----------------------------------------------------------------------

    def _drop_member(self, group: Group, member_id: str) -> None:
        """Remove without rebalancing (the caller decides what happens next)."""
        member = group.remove(member_id)
        self._timers.cancel(("hb", group.group_id, member_id))
        self._timers.cancel(("pending", group.group_id, member_id))
        if member is not None:
            self._resolve_join(member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, ""))
            self._resolve_sync(member, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))

    def _remove_member_and_update_group(self, group: Group, member: Member, now: int) -> None:
        self._drop_member(group, member.member_id)
        if group.state in (S, C):
            self._maybe_prepare_rebalance(group, now, f"member {member.member_id} left")
        elif group.is_(P):
            self._try_complete_join(group, now)

    def _remove_pending_member(self, group: Group, member_id: str, now: int) -> None:
        self._drop_member(group, member_id)
        if group.is_(P):
            self._try_complete_join(group, now)

    # -- SyncGroup ------------------------------------------------------------------------------

    def sync_group(self, req: SyncRequest) -> Pending[SyncResult]:
        now = self.now()
        if not req.group_id:
            return Pending.resolved(SyncResult(ErrorCode.INVALID_GROUP_ID))
        group = self.groups.get(req.group_id)
        if group is not None and group.consumer is not None:
            return Pending.resolved(self.classic_sync_consumer_group(
                group, group.consumer, req.member_id, req.group_instance_id, req.generation_id,
                req.protocol_type, req.protocol_name))
        if group is None:
            return Pending.resolved(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        if group.is_(D):
            return Pending.resolved(SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        error = self._validate_member(group, req.member_id, req.group_instance_id)
        if error is None and req.generation_id != group.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        if error is None and (
                (req.protocol_type is not None and req.protocol_type != group.protocol_type)
                or (req.protocol_name is not None and req.protocol_name != group.protocol_name)):
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if error is None:
            error = SYNC_ANSWER[group.state]
        if error is not None:
            return Pending.resolved(SyncResult(error))
        member = group.members[req.member_id]
        if group.is_(S):
            self._remove_pending_sync(group, req.member_id)
            self._schedule_heartbeat(group, member, now)
            return Pending.resolved(SyncResult(ErrorCode.NONE, group.protocol_type,
                                               group.protocol_name, member.assignment))
        # CompletingRebalance: park until the leader's assignment is stored.
        pending: Pending[SyncResult] = Pending()
        if member.sync_waiter is not None and not member.sync_waiter.done:
            member.sync_waiter.resolve(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_waiter = pending
        self._remove_pending_sync(group, req.member_id)
        if group.is_leader(req.member_id):
            self._on_leader_sync(group, req.assignments)
        return pending

    def _remove_pending_sync(self, group: Group, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            self._timers.cancel(("sync", group.group_id))

    def _on_leader_sync(self, group: Group, assignments: dict[str, bytes]) -> None:
        filler = EMPTY_CONSUMER_ASSIGNMENT if group.is_consumer_group else b""
        assignment = {member_id: assignments.get(member_id, filler) for member_id in group.members}
        missing = [m for m in group.members if m not in assignments]
        if missing:
            self._log("leader sent no assignment for some members", group=group.group_id,
                      members=missing)
        generation = group.generation_id

        def stored(error: ErrorCode) -> None:
            now = self.now()
            if not (group.is_(C) and group.generation_id == generation):
                return  # something rejoined or left meanwhile; that rebalance answers everyone
            if error != ErrorCode.NONE:
                self._reset_and_propagate_assignment_error(group, error, now)
                self._maybe_prepare_rebalance(group, now, f"storing the assignment failed: "
                                                          f"{error.name}")
            else:
                for member in group.members.values():
                    member.assignment = assignment[member.member_id]
                self._propagate_assignment(group, ErrorCode.NONE, now)
                group.transition_to(S, now)

        self._store_group(group, assignment, stored)

    # -- Heartbeat ------------------------------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None,
                  generation_id: int) -> ErrorCode:
        now = self.now()
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID
        group = self.groups.get(group_id)
        if group is not None and group.consumer is not None:
            return self.classic_heartbeat_consumer_group(group, group.consumer, member_id,
                                                         group_instance_id, generation_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(D):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self._validate_member(group, member_id, group_instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state in (P, C, S):
            self._schedule_heartbeat(group, group.members[member_id], now)
        return HEARTBEAT_ANSWER[group.state]

    # -- LeaveGroup -----------------------------------------------------------------------------

    def leave_group(self, group_id: str, leaving: list[LeavingMember]) -> LeaveResult:
        now = self.now()
        if not group_id:
            return LeaveResult(ErrorCode.INVALID_GROUP_ID)
        group = self.groups.get(group_id)
        if group is not None and group.consumer is not None:
            return self.classic_leave_consumer_group(group, group.consumer, leaving)
        if group is None:
            return LeaveResult(ErrorCode.NONE, [
                LeaveMemberResult(m.member_id, m.group_instance_id, ErrorCode.UNKNOWN_MEMBER_ID)
                for m in leaving])
        if group.is_(D):
            return LeaveResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        results = []
        for m in leaving:
            error = ErrorCode.NONE
            if m.member_id == "":
                # Admin removal of a static member by its instance id (KIP-345).
                current = (group.static_members.get(m.group_instance_id)
                           if m.group_instance_id is not None else None)
                if current is None:
                    error = ErrorCode.UNKNOWN_MEMBER_ID
                else:
                    self._leave(group, current, m.reason, now)
            elif m.member_id in group.pending_members:
                self._remove_pending_member(group, m.member_id, now)
            else:
                found = self._validate_member(group, m.member_id, m.group_instance_id)
                if found is not None:
                    error = found
                else:
                    self._leave(group, m.member_id, m.reason, now)
            results.append(LeaveMemberResult(m.member_id, m.group_instance_id, error))
        return LeaveResult(ErrorCode.NONE, results)

    def _leave(self, group: Group, member_id: str, reason: str | None, now: int) -> None:
        self._log("member left", group=group.group_id, member=member_id, reason=reason)
        self._remove_member_and_update_group(group, group.members[member_id], now)

    # -- offsets --------------------------------------------------------------------------------

    def commit_offsets(self, group_id: str, member_id: str, group_instance_id: str | None,
                       generation_id: int, offsets: dict[TopicPartition, OffsetAndMetadata],
                       api_version: int = 8) -> Pending[dict[TopicPartition, ErrorCode]]:
        """`generation_id` is the member epoch for consumer groups (OffsetCommit v9+)."""
        now = self.now()
        group = self.groups.get(group_id)
        if group_id in self.streams.groups:
            serror = self._validate_streams_offsets(group_id, member_id, generation_id, False)
            if serror is not None:
                return _all(offsets, serror)
            return self._store_offsets(group or self._add_group(group_id, now), offsets)
        if group is not None and group.consumer is not None:
            cerror = self.validate_consumer_commit(group.consumer, member_id, generation_id,
                                                   False, api_version, self._checked(offsets))
            if cerror is not None:
                return _all(offsets, cerror)
            return self._store_offsets(group, offsets)
        if group is None:
            if generation_id >= 0 and api_version >= 9:
                return _all(offsets, ErrorCode.GROUP_ID_NOT_FOUND)
            if generation_id >= 0:
                # A commit from an older incarnation of a group that no longer exists.
                return _all(offsets, ErrorCode.ILLEGAL_GENERATION)
            group = self._add_group(group_id, now)  # a "simple" group: offsets only
        error = self._validate_commit(group, generation_id, member_id, group_instance_id,
                                      transactional=False)
        if error is None:
            error = COMMIT_ANSWER[group.state]
        if error is not None:
            return _all(offsets, error)
        if group.state in (S, P):
            self._schedule_heartbeat(group, group.members[member_id], now)
        return self._store_offsets(group, offsets)

    def commit_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                           member_id: str, group_instance_id: str | None, generation_id: int,
                           offsets: dict[TopicPartition, OffsetAndMetadata],
                           ) -> Pending[dict[TopicPartition, ErrorCode]]:
        """TxnOffsetCommit: staged until `complete_txn` (the transaction's marker)."""
        group = self.groups.get(group_id) or self._add_group(group_id, self.now())
        if group_id in self.streams.groups:
            serror = self._validate_streams_offsets(group_id, member_id, generation_id, True)
            if serror is not None:
                return _all(offsets, serror)
            return self._store_offsets(group, offsets, producer_id, producer_epoch)
        if group.consumer is not None:
            cerror = self.validate_consumer_commit(group.consumer, member_id, generation_id,
                                                   True, 0, self._checked(offsets))
            if cerror is not None:
                return _all(offsets, cerror)
            return self._store_offsets(group, offsets, producer_id, producer_epoch)
        error = self._validate_commit(group, generation_id, member_id, group_instance_id,
                                      transactional=True)
        if error is not None:
            return _all(offsets, error)
        return self._store_offsets(group, offsets, producer_id, producer_epoch)

    def _checked(self, offsets: dict[TopicPartition, OffsetAndMetadata]) -> list[TopicPartition]:
        """The partitions of a commit whose epoch Kafka checks: not those it refuses first
        for their metadata's size."""
        limit = self.config.offset_metadata_max_bytes
        return [tp for tp, om in offsets.items() if len(om.metadata) <= limit]

    def _validate_commit(self, group: Group, generation_id: int, member_id: str,
                         instance_id: str | None, *, transactional: bool) -> ErrorCode | None:
        if group.is_(D):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_(E):
            return None  # admin tools and consumers without group management
        if generation_id >= 0 or member_id != "" or instance_id is not None:
            error = self._validate_member(group, member_id, instance_id)
            if error is None and generation_id != group.generation_id:
                error = ErrorCode.ILLEGAL_GENERATION
            return error
        if not transactional and not group.is_(E):
            return ErrorCode.UNKNOWN_MEMBER_ID  # only members commit to a non-empty group
        return None

    def _store_offsets(self, group: Group, offsets: dict[TopicPartition, OffsetAndMetadata],
                       producer_id: int = -1, producer_epoch: int = -1,
                       ) -> Pending[dict[TopicPartition, ErrorCode]]:
        limit = self.config.offset_metadata_max_bytes
        accepted = {tp: om for tp, om in offsets.items() if len(om.metadata) <= limit}
        if not accepted:
            return _all(offsets, ErrorCode.OFFSET_METADATA_TOO_LARGE)
        transactional = producer_id >= 0
        gid = group.group_id
        if transactional:
            staged = group.pending_txn_offsets.setdefault(producer_id, {})
            for tp, om in accepted.items():
                staged[tp] = CommittedOffset(om, None)
        else:
            group.pending_offset_commits.update(accepted)
        pending: Pending[dict[TopicPartition, ErrorCode]] = Pending()

        def done(error: ErrorCode, base_offset: int) -> None:
            if error == ErrorCode.NONE:
                if not group.is_(D):
                    for tp, om in accepted.items():
                        if transactional:
                            self._on_txn_commit_append(group, producer_id, tp, om, base_offset)
                        else:
                            self._on_commit_append(group, tp, om, base_offset)
                answer = ErrorCode.NONE
            else:
                if not group.is_(D):
                    for tp, om in accepted.items():
                        if transactional:
                            txn = group.pending_txn_offsets.get(producer_id, {})
                            txn.pop(tp, None)
                            if not txn:
                                group.pending_txn_offsets.pop(producer_id, None)
                        elif group.pending_offset_commits.get(tp) is om:
                            del group.pending_offset_commits[tp]
                answer = _COMMIT_ERRORS.get(error, error)
            pending.resolve({tp: answer if tp in accepted else ErrorCode.OFFSET_METADATA_TOO_LARGE
                             for tp in offsets})

        records: list[tuple[bytes, bytes | None]] = [
            (offset_commit_key(gid, tp[0], tp[1]), offset_commit_value(om))
            for tp, om in accepted.items()]
        self.outbox.write(Write(OFFSETS_TOPIC, self.partition_for(gid), records, done,
                                producer_id, producer_epoch, transactional))
        return pending

    @staticmethod
    def _on_commit_append(group: Group, tp: TopicPartition, om: OffsetAndMetadata,
                          record_offset: int) -> None:
        if tp in group.pending_offset_commits:  # not deleted while being written
            committed = CommittedOffset(om, record_offset)
            if _newer(committed, group.offsets.get(tp)):
                group.offsets[tp] = committed
        if group.pending_offset_commits.get(tp) is om:
            del group.pending_offset_commits[tp]

    @staticmethod
    def _on_txn_commit_append(group: Group, producer_id: int, tp: TopicPartition,
                              om: OffsetAndMetadata, record_offset: int) -> None:
        staged = group.pending_txn_offsets.get(producer_id, {}).get(tp)
        if staged is not None and staged.value is om:
            staged.record_offset = record_offset

    def complete_txn(self, producer_id: int, commit: bool) -> None:
        """A transaction's marker was written: its staged offsets become committed (or go)."""
        for group in self.groups.values():
            staged = group.pending_txn_offsets.pop(producer_id, None)
            if not staged or not commit:
                continue
            for tp, committed in staged.items():
                if committed.record_offset is None:
                    continue  # its record never made it to the log
                if _newer(committed, group.offsets.get(tp)):
                    group.offsets[tp] = committed

    def fetch_offsets(self, group_id: str, partitions: list[TopicPartition] | None,
                      require_stable: bool = False, member_id: str | None = None,
                      member_epoch: int = -1,
                      ) -> tuple[ErrorCode, dict[TopicPartition, FetchedOffset]]:
        """Committed offsets (-1 where none) of `partitions`, or of every partition with one.
        `member_id` and `member_epoch` (OffsetFetch v9+) are checked for consumer groups."""
        group = self.groups.get(group_id)
        if group is None or group.is_(D):
            return ErrorCode.NONE, {tp: FetchedOffset() for tp in partitions or []}
        if group_id in self.streams.groups and (member_id is not None or member_epoch >= 0):
            serror = self._validate_streams_offsets(group_id, member_id or "", member_epoch,
                                                    False, fetch=True)
            if serror is not None:
                return serror, {}
        if group.consumer is not None:
            cerror = self.validate_consumer_fetch(group.consumer, member_id, member_epoch)
            if cerror is not None:
                return cerror, {}
        tps = sorted(group.offsets) if partitions is None else partitions
        out: dict[TopicPartition, FetchedOffset] = {}
        for tp in tps:
            if require_stable and group.has_pending_commit(tp):
                out[tp] = FetchedOffset(error=ErrorCode.UNSTABLE_OFFSET_COMMIT)
                continue
            committed = group.offsets.get(tp)
            if committed is None:
                out[tp] = FetchedOffset()
            else:
                om = committed.value
                out[tp] = FetchedOffset(om.offset, om.leader_epoch, om.metadata)
        return ErrorCode.NONE, out

    def delete_offsets(self, group_id: str, partitions: list[TopicPartition],
                       ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, {}
        group = self.groups.get(group_id)
        if group is None or group.is_(D):
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        errors: dict[TopicPartition, ErrorCode] = {}
        cg = group.consumer
        if cg is not None:
            eligible = []
            for tp in partitions:
                if cg.is_subscribed_to(tp[0]):
                    errors[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        elif group.is_(E):
            eligible = list(partitions)
        elif group.is_consumer_group:
            eligible = []
            for tp in partitions:
                if group.is_subscribed_to(tp[0]):
                    errors[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        else:
            return ErrorCode.NON_EMPTY_GROUP, {}
        if eligible:
            self._cleanup([group], lambda g: g.remove_offsets(eligible), self.now())
            for tp in eligible:
                errors[tp] = ErrorCode.NONE
        return ErrorCode.NONE, {tp: errors[tp] for tp in partitions}

    def expire_offsets(self, now: int) -> int:
        """Drop offsets past `offsets.retention.ms` and groups left with nothing (Kafka's rules:
        an Empty group's clock starts when it became empty; a Stable consumer group keeps the
        offsets of topics it is subscribed to; other states keep everything)."""
        return self._cleanup(list(self.groups.values()),
                             lambda g: self._expired_offsets(g, now), now)

    def _expired_offsets(self, group: Group, now: int) -> list[TopicPartition]:
        retention = self.config.offsets_retention_ms
        cg = group.consumer

        def expired(base: Callable[[CommittedOffset], int],
                    keep_topics: set[str] | frozenset[str] = frozenset()) -> list[TopicPartition]:
            out = []
            for tp, committed in group.offsets.items():
                if tp[0] in keep_topics or tp in group.pending_offset_commits:
                    continue
                expire_at = committed.value.expire_timestamp
                if (now >= expire_at if expire_at is not None
                        else now - base(committed) >= retention):
                    out.append(tp)
            return out

        if cg is not None:
            # Kafka's consumer groups: by commit time, never a topic the group subscribes to.
            return group.remove_offsets(expired(lambda c: c.value.commit_timestamp,
                                                cg.subscribed_topic_names()))
        if group.protocol_type is not None and group.is_(E):
            state_ts = group.state_timestamp
            return group.remove_offsets(expired(
                lambda c: state_ts if state_ts is not None else c.value.commit_timestamp))
        if group.is_consumer_group and group.subscribed_topics is not None and group.is_(S):
            return group.remove_offsets(expired(lambda c: c.value.commit_timestamp,
                                                group.subscribed_topics))
        if group.protocol_type is None:
            return group.remove_offsets(expired(lambda c: c.value.commit_timestamp))
        return []

    def delete_topic_offsets(self, topics: set[str]) -> int:
        """Forget committed offsets of deleted topics (Kafka's handleDeletedPartitions)."""
        return self._cleanup(list(self.groups.values()),
                             lambda g: g.remove_offsets([tp for tp in g.offsets if tp[0] in topics]),
                             self.now())

    def _cleanup(self, groups: Iterable[Group], select: Callable[[Group], list[TopicPartition]],
                 now: int) -> int:
        """Remove the offsets `select` picks, write their tombstones; an Empty group left
        without offsets dies (with a tombstone for its metadata if it ever had a generation)."""
        removed_total = 0
        for group in groups:
            gid = group.group_id
            removed = select(group)
            cg = group.consumer
            if group.is_(E) and not group.has_offsets() and (cg is None or cg.is_empty):
                group.transition_to(D, now)
            tombstones: list[tuple[bytes, bytes | None]] = [
                (offset_commit_key(gid, t, p), None) for t, p in removed]
            if group.is_(D) and self.groups.get(gid) is group:
                self._forget_group(group)
                if cg is not None:
                    tombstones += self.consumer_group_tombstones(cg)
                elif group.generation_id > 0:
                    tombstones.append((group_metadata_key(gid), None))
            if tombstones:
                # Fire and forget, as in Kafka: a lost tombstone is written again next pass.
                self.outbox.write(Write(OFFSETS_TOPIC, self.partition_for(gid), tombstones,
                                        lambda error, offset: None))
            removed_total += len(removed)
        return removed_total

    def _forget_group(self, group: Group) -> None:
        gid = group.group_id
        del self.groups[gid]
        self._timers.cancel(("join", gid))
        self._timers.cancel(("settle", gid))
        self._timers.cancel(("sync", gid))
        for member_id in list(group.members) + list(group.pending_members):
            self._timers.cancel(("hb", gid, member_id))
            self._timers.cancel(("pending", gid, member_id))
        if group.consumer is not None:
            for member_id in group.consumer.members:
                self._cancel_member_timers(gid, member_id)

    def _write_tombstones(self, group_id: str, records: list[tuple[bytes, bytes | None]]) -> None:
        if records:
            # Fire and forget, as Kafka's cleanup: a lost tombstone is written again later.
            self.outbox.write(Write(OFFSETS_TOPIC, self.partition_for(group_id), records,
                                    lambda error, offset: None))

    # -- group admin ----------------------------------------------------------------------------

    # -- share groups (KIP-932) -------------------------------------------------------------------

    def share_group_heartbeat(self, req: ShareHeartbeatRequest) -> Pending[ShareOutcome]:
        """A ShareGroupHeartbeat, answered once its records are written (on a failed write
        the group is restored and the answer is COORDINATOR_NOT_AVAILABLE, as Kafka maps
        a failed append)."""
        outcome = self.share.heartbeat(req, self.now())
        pending: Pending[ShareOutcome] = Pending()

        def written(error: ErrorCode) -> None:
            if error != ErrorCode.NONE:
                outcome.result.error = ErrorCode.COORDINATOR_NOT_AVAILABLE
                outcome.result.message = None
                outcome.initialize = {}
            pending.resolve(outcome)

        if req.member_epoch == -1 and outcome.result.error == ErrorCode.NONE:
            self.on_share_member_removed(req.group_id, req.member_id)
        self._write_share(outcome, written)
        return pending

    def share_initialize_done(self, group_id: str, topics: dict[uuid.UUID, frozenset[int]],
                              ok: bool) -> None:
        """The share coordinator initialised (or failed to) these share-partitions."""
        outcome = (self.share.initialize_done(group_id, topics) if ok
                   else self.share.initialize_failed(group_id, topics))
        self._write_share(outcome, lambda _error: None)

    def share_offsets_altered(self, group_id: str,
                              topics: dict[uuid.UUID, tuple[str, frozenset[int]]],
                              ) -> Pending[ErrorCode]:
        """AlterShareGroupOffsets' group half (ShareGroups.offsets_altered), written before
        the answer."""
        pending: Pending[ErrorCode] = Pending()
        outcome = self.share.offsets_altered(group_id, topics)
        if outcome.result.error != ErrorCode.NONE:
            pending.resolve(outcome.result.error)
            return pending
        self._write_share(outcome, pending.resolve)
        return pending

    def share_forget_topics(self, group_id: str,
                            topic_ids: set[uuid.UUID]) -> Pending[ErrorCode]:
        """DeleteShareGroupOffsets' group half: the topics leave the group's share-partition
        metadata (written before the answer)."""
        pending: Pending[ErrorCode] = Pending()
        outcome = self.share.forget_topics(group_id, topic_ids)
        if outcome.result.error != ErrorCode.NONE:
            pending.resolve(outcome.result.error)
            return pending
        self._write_share(outcome, pending.resolve)
        return pending

    def _write_share(self, outcome: ShareOutcome, done: Callable[[ErrorCode], None]) -> None:
        if not outcome.records:
            done(ErrorCode.NONE)
            return
        gid = outcome.group_id

        def appended(error: ErrorCode, _offset: int) -> None:
            if error != ErrorCode.NONE:
                self._log("share group write failed", group=gid, error=error.name)
                self.share.restore(gid, outcome.snapshot)
            done(error)

        self.outbox.write(Write(OFFSETS_TOPIC, self.partition_for(gid), list(outcome.records),
                                appended))

    def describe_group(self, group_id: str) -> GroupDescription:
        group = self.groups.get(group_id)
        if group is None or group.consumer is not None or group_id in self.streams.groups:
            # Kafka 4's DescribeGroups v0-5 on a consumer or streams group: as if it did not
            # exist.
            return GroupDescription(ErrorCode.NONE, group_id, D.wire_name, "", "")
        stable = group.is_(S)
        protocol = (group.protocol_name or "") if stable else ""
        members = [
            MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                              m.metadata(protocol) if stable else b"",
                              m.assignment if stable else b"")
            for m in group.members.values()]
        return GroupDescription(ErrorCode.NONE, group_id, group.state.wire_name,
                                group.protocol_type or "", protocol, members)

    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = (),
                    ) -> list[GroupOverview]:
        wanted_states = {s.lower().strip() for s in states}
        wanted_types = {t.lower().strip() for t in types}
        out = []
        for gid, sg in self.share.groups.items():
            if ((not wanted_states or sg.state.value.lower() in wanted_states)
                    and (not wanted_types or "share" in wanted_types)):
                out.append(GroupOverview(gid, "share", sg.state.value, "share"))
        overviews = [GroupOverview(sg.group_id, "streams", self.streams.state(sg).value,
                                   "streams") for sg in self.streams.groups.values()]
        for g in self.groups.values():
            if g.is_(D) or g.group_id in self.streams.groups:
                continue  # a streams group's offsets holder
            if g.consumer is not None:
                overview = GroupOverview(g.group_id, "consumer", g.consumer.state.value,
                                         "consumer")
            else:
                overview = GroupOverview(g.group_id, g.protocol_type or "", g.state.wire_name)
            if wanted_states and overview.state.lower() not in wanted_states:
                continue
            if wanted_types and overview.group_type not in wanted_types:
                continue
            out.append(overview)
        for overview in overviews:
            if wanted_states and overview.state.lower() not in wanted_states:
                continue
            if wanted_types and overview.group_type not in wanted_types:
                continue
            out.append(overview)
        return out

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        now = self.now()
        results: dict[str, ErrorCode] = {}
        eligible: list[Group] = []
        for gid in group_ids:
            group = self.groups.get(gid)
            if gid in self.streams.groups:
                error, tombstones = self.streams.delete(gid)
                if error != ErrorCode.NONE:
                    results[gid] = error
                    continue
                self._write_tombstones(gid, tombstones)
                results[gid] = ErrorCode.NONE
                if group is not None and group.is_(E):  # its offsets go too
                    group.transition_to(D, now)
                    eligible.append(group)
                continue
            if (group is None or group.is_(D)) and gid in self.share.groups:
                results[gid] = self._delete_share_group(gid)
            elif group is None or group.is_(D):
                results[gid] = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.consumer is not None and not group.consumer.is_empty:
                results[gid] = ErrorCode.NON_EMPTY_GROUP
            elif group.is_(E):
                group.transition_to(D, now)
                eligible.append(group)
            else:
                results[gid] = ErrorCode.NON_EMPTY_GROUP
        if eligible:
            self._cleanup(eligible, lambda g: g.remove_offsets(list(g.offsets)), now)
            for group in eligible:
                results[group.group_id] = ErrorCode.NONE
        return results

    def _delete_share_group(self, group_id: str) -> ErrorCode:
        """DeleteGroups of an empty share group: tombstones for its records, and its
        share-partition states go (`on_share_group_deleted`, Kafka's DeleteShareGroupState)."""
        group = self.share.groups[group_id]
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        r = share_records
        tombstones = [r.tombstone(r.STATE_PARTITION_METADATA, group_id),
                      r.tombstone(r.TARGET_METADATA, group_id),
                      r.tombstone(r.GROUP_METADATA, group_id)]
        snapshot = group.copy()
        topics = {t for t, _ in group.state_partitions.initialized.items()} | {
            t for t, _ in group.state_partitions.initializing.items()}
        del self.share.groups[group_id]

        def appended(error: ErrorCode, _offset: int) -> None:
            if error != ErrorCode.NONE:
                self.share.restore(group_id, snapshot)
            else:
                self.on_share_group_deleted(group_id, topics)

        self.outbox.write(Write(OFFSETS_TOPIC, self.partition_for(group_id), tombstones,
                                appended))
        return ErrorCode.NONE

    def _add_group(self, group_id: str, now: int) -> Group:
        group = Group(group_id, E, now)
        self.groups[group_id] = group
        return group

    # -- persistence ----------------------------------------------------------------------------

    def _store_group(self, group: Group, assignment: dict[str, bytes],
                     callback: Callable[[ErrorCode], None]) -> None:
        record = self._group_record(group, assignment)
        self.outbox.write(Write(
            OFFSETS_TOPIC, self.partition_for(group.group_id), [record],
            lambda error, offset: callback(_STORE_GROUP_ERRORS.get(error, error))))

    def _classic_max_size(self) -> int:
        return self.config.max_size

    def _group_record(self, group: Group, assignment: dict[str, bytes],
                      ) -> tuple[bytes, bytes | None]:
        """The GroupMetadata record of `group` with these assignments."""
        protocol = group.protocol_name
        value = GroupMetadataValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation_id,
            protocol=protocol,
            leader=group.leader_id,
            current_state_timestamp=-1 if group.state_timestamp is None else group.state_timestamp,
            members=[GroupMetadataValue.MemberMetadata(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata(protocol or ""),
                assignment=assignment[m.member_id],
            ) for m in group.members.values()],
        )
        return (group_metadata_key(group.group_id), group_metadata_value(value))

    def begin_load(self) -> None:
        self._loader = _Loader()

    def unload_partition(self, partition: int) -> list[str]:
        """Drop the groups of one `__consumer_offsets` partition (its leadership moved away,
        as Kafka's scheduleUnloadOperation): waiting joins and syncs get NOT_COORDINATOR so
        their members find the new coordinator. Returns the group ids dropped."""
        gone = [gid for gid in self.groups if self.partition_for(gid) == partition]
        for gid in gone:
            for member in self.groups.pop(gid).members.values():
                join, sync = member.join_waiter, member.sync_waiter
                member.join_waiter = member.sync_waiter = None
                if join is not None and not join.done:
                    join.resolve(JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
                if sync is not None and not sync.done:
                    sync.resolve(SyncResult(ErrorCode.NOT_COORDINATOR))
        for kind in (self.streams.groups, self.share.groups):
            for gid in [g for g in kind if self.partition_for(g) == partition]:
                del kind[gid]
                gone.append(gid)
        return gone

    # -- streams groups (KIP-1071; the logic is coordinator/streams) --------------------------

    def _schedule_streams(self) -> None:
        deadlines = [*self.streams.session_deadlines.values(),
                     *self.streams.revocation_deadlines.values()]
        self._timers.cancel(("sg-expire",))
        if deadlines:
            self._timers.set(("sg-expire",), min(deadlines))

    def _write_streams(self, records: list[KeyValue], pending: Pending[StreamsHeartbeatResult]
                       | None, result: StreamsHeartbeatResult | None = None,
                       group_id: str = "", undo: Callable[[], None] | None = None) -> None:
        if not records:
            if pending is not None and result is not None:
                pending.resolve(result)
            return

        def done(error: ErrorCode, offset: int) -> None:
            if error != ErrorCode.NONE and undo is not None:
                undo()
            if pending is None or result is None:
                return
            if error == ErrorCode.NONE:
                pending.resolve(result)
            else:
                pending.resolve(StreamsHeartbeatResult(_STREAMS_WRITE_ERRORS.get(
                    error, ErrorCode.COORDINATOR_NOT_AVAILABLE), None, result.member_id))

        gid = group_id or streams_records.group_of(records[0][0])
        self.outbox.write(Write(OFFSETS_TOPIC, self.partition_for(gid), records, done))

    def _validate_streams_offsets(self, group_id: str, member_id: str, member_epoch: int,
                                  transactional: bool, fetch: bool = False) -> ErrorCode | None:
        """Kafka's StreamsGroup.validateOffsetCommit / validateOffsetFetch: a member commits
        at its own epoch; admin commits (epoch < 0) only to an empty group."""
        g = self.streams.groups[group_id]
        if member_epoch < 0 and not member_id and (not g.metadata or transactional or fetch):
            return None
        if member_id not in g.metadata:
            return ErrorCode.UNKNOWN_MEMBER_ID
        current = g.current.get(member_id)
        if current is None or member_epoch != current.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION if transactional else \
                ErrorCode.STALE_MEMBER_EPOCH
        return None

    def _group_kind(self, group_id: str) -> str | None:
        group = self.groups.get(group_id)
        if group is None or group.is_(D):
            return None
        if group.consumer is None and group.is_(E) and not group.members:
            return None  # an empty classic group (or offsets only): a streams join takes it
        return "consumer" if group.consumer is not None else "classic"

    def streams_group_heartbeat(self, req: StreamsHeartbeatRequest,
                                ) -> Pending[StreamsHeartbeatResult]:
        snapshot = copy.deepcopy(self.streams.groups.get(req.group_id))
        records, result = self.streams.heartbeat(req, self.now(), self._group_kind(req.group_id))
        pending: Pending[StreamsHeartbeatResult] = Pending()

        def undo() -> None:  # the write failed: the group is as before the heartbeat
            if snapshot is None:
                self.streams.groups.pop(req.group_id, None)
            else:
                self.streams.groups[req.group_id] = snapshot

        self._write_streams(records, pending, result, req.group_id, undo)
        self._schedule_streams()
        return pending

    def describe_streams_groups(self, group_ids: list[str]) -> list[DescribedStreamsGroup]:
        out = []
        for d in self.streams.describe(group_ids):
            if d.error == ErrorCode.GROUP_ID_NOT_FOUND and self._group_kind(d.group_id):
                d = DescribedStreamsGroup(d.group_id, ErrorCode.GROUP_ID_NOT_FOUND,
                                          f"Group {d.group_id} is not a streams group.")
            out.append(d)
        return out

    def replay(self, batch: RecordBatch) -> None:
        """Replay one batch of `__consumer_offsets` (between `begin_load` and `finish_load`)."""
        loader = self._loader
        if loader is None:
            raise RuntimeError("replay outside begin_load/finish_load")
        if batch.is_control:
            staged = loader.pending.pop(batch.producer_id, {})
            if batch.control_type() == CONTROL_COMMIT:
                for gtp, committed in staged.items():
                    if _newer(committed, loader.offsets.get(gtp)):
                        loader.offsets[gtp] = committed
            return
        transactional = batch.is_transactional
        for record in batch.records():
            if record.key is None:
                raise ProtocolError(f"__consumer_offsets record at offset "
                                    f"{batch.base_offset + record.offset_delta} has no key")
            key = parse_key(record.key)
            if isinstance(key, OffsetKey):
                gtp = (key.group, (key.topic, key.partition))
                target = (loader.pending.setdefault(batch.producer_id, {}) if transactional
                          else loader.offsets)
                if record.value is None:
                    target.pop(gtp, None)
                else:
                    target[gtp] = CommittedOffset(parse_offset_value(record.value),
                                                  batch.base_offset)
            elif isinstance(key, GroupKey):
                if record.value is None:
                    loader.groups.pop(key.group, None)
                    loader.removed.add(key.group)
                else:
                    loader.groups[key.group] = parse_group_value(record.value)
                    loader.removed.discard(key.group)
            elif key.version in share_records.KEY_TYPES:
                self.share.replay(record.key, record.value)
            elif key.version in consumer_records.KEY_TYPES:
                self._replay_consumer(loader, key, record.key, record.value)
            elif key.version in streams_records.KEY_TYPES:
                self.streams.replay(record.key, record.value)
            else:
                loader.unknown_keys += 1

    @staticmethod
    def _replay_consumer(loader: _Loader, key: UnknownKey, raw_key: bytes | memoryview,
                         value: bytes | memoryview | None) -> None:
        """One KIP-848 record, applied as the live coordinator applied it."""
        r = consumer_records
        ckey = r.parse_key(raw_key, key.version)
        gid, kind = ckey.group, ckey.record_type
        cg = loader.consumer.get(gid)
        if cg is None:
            if value is None or kind == r.PARTITION_METADATA:
                return  # a tombstone for a group already gone; metadata Kafka < 4.1 kept
            cg = loader.consumer[gid] = ConsumerGroup(gid)
        if kind == r.GROUP_METADATA:
            if value is None:
                del loader.consumer[gid]
            else:
                cg.apply_epoch(*r.parse_group_epoch(value))
        elif kind == r.MEMBER_METADATA:
            cg.apply_member(ckey.member_id,
                            None if value is None else r.parse_member(ckey.member_id, value))
        elif kind == r.TARGET_MEMBER:
            cg.apply_target(ckey.member_id, None if value is None else r.parse_target(value))
        elif kind == r.TARGET_METADATA:
            cg.apply_assignment_epoch(*((-1, 0) if value is None
                                        else r.parse_assignment_epoch(value)))
        elif kind == r.CURRENT_ASSIGNMENT:
            cg.apply_current(ckey.member_id,
                             None if value is None else r.parse_current(ckey.member_id, value))
        elif kind == r.REGULAR_EXPRESSION:
            cg.apply_regex(ckey.member_id, None if value is None else r.parse_regex(value))
        # PARTITION_METADATA (Kafka < 4.1): nothing Odradek keeps.

    def finish_load(self) -> None:
        loader, self._loader = self._loader, None
        if loader is None:
            raise RuntimeError("finish_load without begin_load")
        now = self.now()
        for gid, (version, value) in loader.groups.items():
            self.groups[gid] = self._group_from_record(gid, version, value, now)
        for gid, cg in loader.consumer.items():
            group = self.groups.get(gid) or self._add_group(gid, now)
            group.convert_to_consumer(cg)
        for (gid, tp), committed in loader.offsets.items():
            group = self.groups.get(gid) or self._add_group(gid, now)
            group.offsets[tp] = committed
        for producer_id, staged in loader.pending.items():
            for (gid, tp), committed in staged.items():
                group = self.groups.get(gid) or self._add_group(gid, now)
                group.pending_txn_offsets.setdefault(producer_id, {})[tp] = committed
        for group in self.groups.values():
            for member in group.members.values():
                # Members of a loaded group keep their ids: they get a session to come back.
                self._schedule_heartbeat(group, member, now)
        self.schedule_loaded_consumer_members(now)
        self.share.finish_load(now)
        self.streams.schedule_loaded(now)
        self._schedule_streams()
        # Every topic is new to a freshly loaded coordinator (as Kafka's first metadata image):
        # resolved regexes are refreshed at their groups' next heartbeats.
        self.topics_created(now)
        if loader.unknown_keys:
            self._log("skipped records with unknown key versions", count=loader.unknown_keys)

    @staticmethod
    def _group_from_record(gid: str, version: int, value: GroupMetadataValue, now: int) -> Group:
        group = Group(gid, S if value.members else E, now)
        group.generation_id = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        group.leader_id = value.leader
        group.state_timestamp = (None if value.current_state_timestamp == -1
                                 else value.current_state_timestamp)
        protocol = value.protocol or ""
        for m in value.members:
            group.add(Member(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.session_timeout if version == 0 else m.rebalance_timeout, m.session_timeout,
                value.protocol_type, [(protocol, m.subscription)], m.assignment))
        if value.leader is None and group.members:
            group.leader_id = next(iter(group.members))
        group.subscribed_topics = _subscribed_topics(group)
        return group


def _newer(candidate: CommittedOffset, current: CommittedOffset | None) -> bool:
    """Whether `candidate` supersedes `current`: the later record in the log wins."""
    if current is None or current.record_offset is None:
        return True
    return candidate.record_offset is not None and candidate.record_offset > current.record_offset


def _all(offsets: dict[TopicPartition, OffsetAndMetadata],
         error: ErrorCode) -> Pending[dict[TopicPartition, ErrorCode]]:
    return Pending.resolved(dict.fromkeys(offsets, error))


def _subscribed_topics(group: Group) -> set[str] | None:
    """Topics a consumer group's members subscribe to (None: not a consumer group, or the
    metadata does not parse; then every topic counts as subscribed)."""
    if group.protocol_type != "consumer":
        return None
    if not group.members:
        return set()
    if group.protocol_name is None:
        return None
    topics: set[str] = set()
    try:
        for member in group.members.values():
            data = member.metadata(group.protocol_name)
            # Every version of the subscription starts with version 0's fields.
            sub, _ = ConsumerProtocolSubscription.decode(data, 0, 2)
            topics.update(sub.topics)
    except (ProtocolError, ValueError):
        return None
    return topics
