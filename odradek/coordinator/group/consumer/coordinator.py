"""ConsumerGroupHeartbeat and ConsumerGroupDescribe: the KIP-848 half of the group shard.

`ConsumerGroupOps` is mixed into the group coordinator, so classic and consumer groups share
one shard over `__consumer_offsets` (one replay, one group-id namespace, one offset store):
a consumer group is a classic `Group` entry whose `consumer` field holds the
`ConsumerGroup`; its committed offsets stay on the `Group` as for classic groups.

A heartbeat follows Kafka's GroupMetadataManager: validate, then (1) create or update the
member, bumping the group epoch when its subscription or the subscribed topics' metadata
changed; (2) compute a new target assignment when the group epoch passed the assignment
epoch and `group.consumer.assignment.interval.ms` passed since the last computation (Kafka
4.3+; no timer: the first heartbeat after it does); (3) reconcile the member towards its
(last) target, giving up at once the topics it no longer subscribes to; answer its epoch,
the heartbeat interval and, when it changed (or the request was a full one), its
assignment. Every change is a record applied to the group and written; if the write fails
the group is restored and the member gets the mapped error.

Timers: ("cg-session", group, member) session expiry (`group.consumer.session.timeout.ms`),
("cg-rebalance", group, member) a member that does not revoke within its rebalance timeout;
either fences (removes) the member; ("cg-regex", group, "") resolves the group's regexes.

SubscribedTopicRegex (RE2/J syntax, `regex.py`): a member's regex is checked when no other
member uses it (INVALID_REGULAR_EXPRESSION), and the group's regexes are resolved against every
topic name (full matches, internal topics included, as Kafka) when one is new or unresolved, a
topic was created since (`topics_created`, Kafka's lastMetadataImageWithNewTopics) or
`group.consumer.regex.refresh.interval.ms` passed, never within 10 s of the last resolution.
Each resolution is a ConsumerGroupRegularExpression record; the member's topics are its names
plus its regex's topics; the regex is tombstoned when its last member goes. As Kafka's
background task, the resolution runs after the heartbeat that asked for it (a timer due at
once) and bumps the group epoch when it changed the topics, so the topics come with the
member's next heartbeat. With an authorizer, the resolution keeps only the topics the member
whose heartbeat asked for it may DESCRIBE (the request's `describable`), for every regex of
the group, as Kafka resolves them with that member's request context; while one is pending,
other members' heartbeats do not ask again (so a group whose members have different
principals gets the topics of whichever member triggered the last resolution, as on Kafka).

Classic members (JoinGroup/SyncGroup clients) inside consumer groups and the conversions
between the two kinds of group are in `group/migration.py` (hooks `_try_upgrade`,
`_maybe_downgrade` and their undo halves, called from here).

Not implemented yet: rack-aware assignment, per-group configs (KIP-848 dynamic group configs).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from odradek.coordinator.common import Outbox, Pending, Timers, Write
from odradek.coordinator.group.consumer import records as rec
from odradek.coordinator.group.consumer.assignors import (
    ASSIGNORS,
    Assignment,
    MemberSpec,
    TopicId,
    assign,
)
from odradek.coordinator.group.consumer.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroup,
    ConsumerGroupMember,
    FencedMemberEpoch,
    MemberState,
    ResolvedRegex,
    is_subset,
    new_member_id,
    owned_map,
    reconcile,
)
from odradek.coordinator.group.consumer.regex import (
    InvalidRegex,
    compile_regex,
    invalid_regex_message,
    resolve,
)
from odradek.coordinator.group.modern import metadata_hash
from odradek.coordinator.group.records import OFFSETS_TOPIC, group_metadata_key
from odradek.wire import ErrorCode

if TYPE_CHECKING:
    from odradek.coordinator.group.model import Group

INT_MAX = 2**31 - 1

# How a failed append answers a heartbeat (Kafka's GroupCoordinatorService mapping).
_WRITE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


class TopicsView(Protocol):
    """The cluster metadata the consumer groups need (the broker's Cluster provides it)."""

    def topic_info(self, name: str) -> tuple[uuid.UUID, int] | None:
        """(topic id, partition count) of an existing topic."""
        ...

    def topic_name(self, topic_id: uuid.UUID) -> str | None: ...

    def topic_names(self) -> Iterable[str]:
        """Every topic's name, internal ones included (what a regex is resolved against)."""
        ...


class NoTopics:
    def topic_info(self, name: str) -> tuple[uuid.UUID, int] | None:
        return None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return None

    def topic_names(self) -> Iterable[str]:
        return ()


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = INT_MAX
    assignors: tuple[str, ...] = ASSIGNORS  # the first is the default
    # group.consumer.regex.refresh.interval.ms: a group's regexes are resolved again at a
    # heartbeat this long after their last resolution, even without new topics.
    regex_refresh_interval_ms: int = 600_000
    # group.consumer.migration.policy: bidirectional | upgrade | downgrade | disabled.
    migration_policy: str = "bidirectional"
    # group.consumer.assignment.interval.ms: the least time between two computations of a
    # group's target assignment. Kafka's default is 1000 (the broker passes the setting);
    # 0 here, so a coordinator built without it computes the target at every change.
    assignment_interval_ms: int = 0

    @property
    def upgrade_enabled(self) -> bool:
        return self.migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("bidirectional", "downgrade")


# Which of the given topics the requesting member may DESCRIBE (the broker's authorizer with the
# member's principal and host, consulted when the regexes are resolved); None: no authorizer.
TopicFilter = Callable[[set[str]], set[str]]

# The least time between two resolutions of one group's regexes (Kafka's
# REGEX_BATCH_REFRESH_MIN_INTERVAL_MS): a heartbeat within it never resolves them again.
REGEX_REFRESH_MIN_INTERVAL_MS = 10_000


@dataclass(slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: list[tuple[uuid.UUID, list[int]]] | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1
    describable: TopicFilter | None = None


@dataclass(slots=True)
class HeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@dataclass(slots=True)
class DescribedMember:
    member: ConsumerGroupMember
    target: Assignment


@dataclass(slots=True)
class DescribedConsumerGroup:
    group_id: str
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    state: str = "Dead"
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: list[DescribedMember] = field(default_factory=list)


class _Fail(Exception):
    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.error, self.message = error, message


class _Changes:
    """Records for one operation, each applied to the group as it is made (as replay does)."""

    def __init__(self, group_id: str, cg: ConsumerGroup) -> None:
        self.gid, self.cg = group_id, cg
        self.records: list[rec.KeyValue] = []
        # The operation turned the group into a classic one (its records are in `records`).
        self.downgraded = False

    def member(self, m: ConsumerGroupMember) -> None:
        self.records.append(rec.member_record(self.gid, m))
        self.cg.apply_member(m.member_id, m)

    def epoch(self, epoch: int, metadata_hash: int) -> None:
        self.records.append(rec.group_epoch_record(self.gid, epoch, metadata_hash))
        self.cg.apply_epoch(epoch, metadata_hash)

    def target(self, member_id: str, target: Assignment) -> None:
        self.records.append(rec.target_record(self.gid, member_id, target))
        self.cg.apply_target(member_id, target)

    def assignment_epoch(self, epoch: int, now: int) -> None:
        self.records.append(rec.assignment_epoch_record(self.gid, epoch, now))
        self.cg.apply_assignment_epoch(epoch, now)

    def current(self, m: ConsumerGroupMember) -> None:
        self.records.append(rec.current_record(self.gid, m))
        self.cg.apply_current(m.member_id, m)

    def regex(self, regex: str, resolved: ResolvedRegex | None) -> None:
        self.records.append(rec.regex_record(self.gid, regex, resolved) if resolved is not None
                            else rec.regex_tombstone(self.gid, regex))
        self.cg.apply_regex(regex, resolved)

    def remove_member(self, member_id: str) -> None:
        self.records += [rec.current_tombstone(self.gid, member_id),
                         rec.target_tombstone(self.gid, member_id),
                         rec.member_tombstone(self.gid, member_id)]
        self.cg.apply_current(member_id, None)
        self.cg.apply_target(member_id, None)
        self.cg.apply_member(member_id, None)


class ConsumerGroupOps:
    """The KIP-848 operations; mixed into GroupCoordinator (which provides these fields)."""

    groups: dict[str, Group]
    outbox: Outbox
    _timers: Timers[tuple[str, ...]]
    consumer_config: ConsumerConfig
    topics: TopicsView
    _log: Callable[..., None]
    # The metadata version of the latest topic creation (Kafka's
    # lastMetadataImageWithNewTopics): a group whose regexes were resolved at an older one
    # resolves them again at its next heartbeat. Set by `topics_created`.
    topics_version: int = -1
    # A group's config with its own overrides (the GROUP config resource), set by the broker.
    consumer_overrides: Callable[[str], ConsumerConfig] | None = None

    def consumer_config_for(self, group_id: str) -> ConsumerConfig:
        """The broker's config, or the group's own when `consumer_overrides` is set."""
        overrides = self.consumer_overrides
        return self.consumer_config if overrides is None else overrides(group_id)

    def now(self) -> int:  # pragma: no cover - GroupCoordinator's
        raise NotImplementedError

    def partition_for(self, group_id: str) -> int:  # pragma: no cover - GroupCoordinator's
        raise NotImplementedError

    def _add_group(self, group_id: str, now: int) -> Group:  # pragma: no cover
        raise NotImplementedError

    # Online migration hooks (MigrationOps in group/migration.py provides them).
    def _try_upgrade(self, group: Group, records: list[rec.KeyValue]) -> bool:
        return False  # pragma: no cover

    def _undo_upgrade(self, group: Group) -> None:  # pragma: no cover
        pass

    def _maybe_downgrade(self, group: Group, cg: ConsumerGroup, changes: _Changes,
                         leaving_id: str) -> bool:
        return False  # pragma: no cover

    def _undo_downgrade(self, group: Group, snapshot: ConsumerGroup) -> None:  # pragma: no cover
        pass

    # -- notifications ------------------------------------------------------------------------

    def topics_created(self, now: int | None = None) -> None:
        """Topics were created (the broker calls this; load calls it for every topic): regexes
        resolved before now are stale. The version is the clock, kept increasing, so versions
        written by an earlier run compare correctly."""
        at = self.now() if now is None else now
        self.topics_version = max(at, self.topics_version + 1)

    # -- lookups ----------------------------------------------------------------------------

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        group = self.groups.get(group_id)
        return None if group is None else group.consumer

    def _subscribed_ids(self, names: Iterable[str]) -> dict[TopicId, int]:
        out: dict[TopicId, int] = {}
        for name in names:
            info = self.topics.topic_info(name)
            if info is not None:
                out[info[0]] = info[1]
        return out

    def _metadata_hash(self, names: Iterable[str]) -> int:
        found = []
        for name in set(names):
            info = self.topics.topic_info(name)
            if info is not None:
                found.append((name, info[0], info[1]))
        return metadata_hash(found)

    # -- ConsumerGroupHeartbeat -------------------------------------------------------------

    def consumer_group_heartbeat(self, req: HeartbeatRequest) -> Pending[HeartbeatResult]:
        try:
            self._validate_heartbeat(req)
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._consumer_leave(req)
            return self._consumer_heartbeat(req)
        except _Fail as fail:
            if fail.error == ErrorCode.INVALID_REQUEST:
                # A fatal error for the client: say which check refused which fields.
                self._log("consumer group heartbeat refused", group=req.group_id,
                          member=req.member_id, epoch=req.member_epoch, reason=fail.message,
                          rebalance_timeout_ms=req.rebalance_timeout_ms,
                          topic_names=req.subscribed_topic_names,
                          topic_regex=req.subscribed_topic_regex,
                          topic_partitions=(None if req.topic_partitions is None
                                            else len(req.topic_partitions)))
            return Pending.resolved(HeartbeatResult(fail.error, fail.message))

    def _validate_heartbeat(self, req: HeartbeatRequest) -> None:
        def bad(message: str) -> _Fail:
            return _Fail(ErrorCode.INVALID_REQUEST, message)

        needs_id = (req.api_version >= 1 or req.member_epoch > 0
                    or req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH))
        if needs_id and req.member_id == "":
            raise bad("MemberId can't be empty.")
        if req.group_id == "":
            raise bad("GroupId can't be empty.")
        if req.instance_id == "":
            raise bad("InstanceId can't be empty.")
        if req.rack_id == "":
            raise bad("RackId can't be empty.")
        if req.member_epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise bad("RebalanceTimeoutMs must be provided in first request.")
            if req.topic_partitions is None or req.topic_partitions:
                raise bad("TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise bad("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null "
                          "when (re-)joining.")
        elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if req.instance_id is None:
                raise bad("InstanceId can't be null.")
        elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise bad("MemberEpoch is invalid.")
        assignors = self.consumer_config.assignors
        if req.server_assignor is not None and req.server_assignor not in assignors:
            raise _Fail(ErrorCode.UNSUPPORTED_ASSIGNOR,
                        f"ServerAssignor {req.server_assignor} is not supported. "
                        f"Supported assignors: {', '.join(assignors)}.")

    def _existing_consumer_group(self, group_id: str) -> tuple[Group, ConsumerGroup]:
        group = self.groups.get(group_id)
        if group is None or group.consumer is None:
            if group is not None and group.protocol_type is not None:
                raise _Fail(ErrorCode.GROUP_ID_NOT_FOUND,
                            f"Group {group_id} is not a consumer group.")
            raise _Fail(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        return group, group.consumer

    def _consumer_heartbeat(self, req: HeartbeatRequest) -> Pending[HeartbeatResult]:
        now = self.now()
        gid = req.group_id
        joining = req.member_epoch == 0
        group = self.groups.get(gid)
        created = ""  # "new": a new group; "converted": was an empty classic group
        pre: list[rec.KeyValue] = []
        if group is not None and group.consumer is None and joining and group.is_empty_classic:
            # An empty classic group (offsets only, or all members gone) becomes a consumer
            # group; its committed offsets stay.
            if group.generation_id > 0:
                pre.append((group_metadata_key(gid), None))
            group.convert_to_consumer(ConsumerGroup(gid))
            created = "converted"
        elif (group is not None and group.consumer is None and joining
              and self._try_upgrade(group, pre)):
            created = "upgraded"  # a non-empty classic group, its members kept
        elif group is None or group.consumer is None:
            if not joining or group is not None:
                self._existing_consumer_group(gid)  # raises
            group = self._add_group(gid, now)
            group.convert_to_consumer(ConsumerGroup(gid))
            created = "new"
        cg = group.consumer
        assert cg is not None
        snapshot = None if created else cg.copy()
        try:
            result, changes = self._heartbeat_changes(group, cg, req, now)
        except _Fail:
            self._restore(group, snapshot, created)
            raise
        except FencedMemberEpoch as exc:
            self._restore(group, snapshot, created)
            raise _Fail(ErrorCode.FENCED_MEMBER_EPOCH, str(exc)) from None
        return self._commit(group, snapshot, created, pre + changes.records, result)

    def _restore(self, group: Group, snapshot: ConsumerGroup | None, created: str) -> None:
        if created == "upgraded":
            self._undo_upgrade(group)
        elif created:
            group.convert_to_classic(restore=True)
            if created == "new" and self.groups.get(group.group_id) is group:
                del self.groups[group.group_id]
        elif snapshot is not None:
            group.consumer = snapshot

    def _commit(self, group: Group, snapshot: ConsumerGroup | None, created: str,
                records: list[rec.KeyValue], result: HeartbeatResult,
                downgraded: bool = False) -> Pending[HeartbeatResult]:
        if not records:
            return Pending.resolved(result)
        pending: Pending[HeartbeatResult] = Pending()

        def done(error: ErrorCode, offset: int) -> None:
            if error == ErrorCode.NONE:
                pending.resolve(result)
                return
            if self.groups.get(group.group_id) is not group:
                pass
            elif downgraded and snapshot is not None:
                self._undo_downgrade(group, snapshot)
            elif group.consumer is not None:
                self._restore(group, snapshot, created)
            pending.resolve(HeartbeatResult(_WRITE_ERRORS.get(error, error)))

        self.outbox.write(Write(OFFSETS_TOPIC, self.partition_for(group.group_id), records, done))
        return pending

    def _heartbeat_changes(self, group: Group, cg: ConsumerGroup, req: HeartbeatRequest,
                           now: int) -> tuple[HeartbeatResult, _Changes]:
        cfg = self.consumer_config_for(req.group_id)
        gid = req.group_id
        changes = _Changes(gid, cg)
        member_id = req.member_id
        if len(cg.members) >= cfg.max_size and (member_id == "" or member_id not in cg.members):
            raise _Fail(ErrorCode.GROUP_MAX_SIZE_REACHED,
                        f"The consumer group has reached its maximum capacity of "
                        f"{cfg.max_size} members.")
        if member_id == "":
            member_id = new_member_id()  # v0 only: later versions must send their own
        owned = owned_map(None if req.topic_partitions is None
                          else [(t, ps) for t, ps in req.topic_partitions])
        joining = req.member_epoch == 0
        if req.instance_id is None:
            existing = cg.members.get(member_id)
            if existing is None:
                if not joining:
                    raise _Fail(ErrorCode.UNKNOWN_MEMBER_ID,
                                f"Member {member_id} is not a member of group {gid}.")
                member = ConsumerGroupMember(member_id)
            else:
                member = existing
            self._check_epoch(member, req.member_epoch, owned)
        else:
            static = cg.static_member(req.instance_id)
            if joining:
                if static is None:
                    member = cg.members.get(member_id) or ConsumerGroupMember(member_id)
                else:
                    if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                        raise _Fail(ErrorCode.UNRELEASED_INSTANCE_ID,
                                    f"Static member {member_id} with instance id "
                                    f"{req.instance_id} cannot join the group because the "
                                    f"instance id is owned by {static.member_id} member.")
                    member = replace(static, member_id=member_id, member_epoch=0,
                                     previous_member_epoch=0, assignment_epochs={})
                    target = cg.targets.get(static.member_id, {})
                    changes.remove_member(static.member_id)
                    self._cancel_member_timers(gid, static.member_id)
                    changes.member(member)
                    changes.target(member_id, target)
                    changes.current(member)
            else:
                if static is None:
                    raise _Fail(ErrorCode.UNKNOWN_MEMBER_ID,
                                f"Instance id {req.instance_id} is unknown.")
                if static.member_id != member_id:
                    raise _Fail(ErrorCode.FENCED_INSTANCE_ID,
                                f"Static member {member_id} with instance id {req.instance_id} "
                                f"was fenced by member {static.member_id}.")
                member = static
                self._check_epoch(member, req.member_epoch, owned)
        is_new = member_id not in cg.members

        updated = replace(
            member,
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            server_assignor=(req.server_assignor if req.server_assignor is not None
                             else member.server_assignor),
            subscribed_topic_names=(tuple(sorted(set(req.subscribed_topic_names)))
                                    if req.subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            # "" clears the regex (librdkafka sends "" beside its topic names); null keeps it.
            subscribed_topic_regex=((req.subscribed_topic_regex or None)
                                    if req.subscribed_topic_regex is not None
                                    else member.subscribed_topic_regex),
            client_id=req.client_id, client_host=req.client_host, classic=None)
        current = self._update_member(cg, changes, member, updated, owned, is_new, now,
                                      req.describable)
        self._timers.set(("cg-session", gid, member_id), now + cfg.session_timeout_ms)

        full = joining or (req.rebalance_timeout_ms != -1
                           and (req.subscribed_topic_names is not None
                                or req.subscribed_topic_regex is not None)
                           and req.topic_partitions is not None)
        changed = current.assigned != member.assigned
        return HeartbeatResult(
            ErrorCode.NONE, None, member_id, current.member_epoch, cfg.heartbeat_interval_ms,
            current.assigned if full or changed else None), changes

    def _update_member(self, cg: ConsumerGroup, changes: _Changes, member: ConsumerGroupMember,
                       updated: ConsumerGroupMember, owned: Assignment | None, is_new: bool,
                       now: int, describable: TopicFilter | None = None) -> ConsumerGroupMember:
        """Steps 1-3 of a heartbeat (or of a classic member's JoinGroup): `updated` is the
        member with its request's subscription; returns it reconciled."""
        gid, member_id = cg.group_id, updated.member_id
        # 1. The member's subscription; the group epoch if it or the topics changed.
        bump = False
        if is_new or not updated.subscription_equals(member):
            changes.member(updated)
            if updated.subscribed_topic_names != member.subscribed_topic_names:
                bump = True
        if self._update_regexes(cg, changes, member, updated, now, describable):
            bump = True
        new_hash = self._metadata_hash(cg.subscribed_topic_names())
        if new_hash != cg.metadata_hash:
            bump = True
        if bump:
            changes.epoch(cg.group_epoch + 1, new_hash)
            self._log("consumer group epoch bumped", group=gid, epoch=cg.group_epoch)

        # 2. A new target assignment when the group epoch moved past it, at most once per
        # group.consumer.assignment.interval.ms (Kafka 4.3+): until then the members
        # reconcile towards the last one, and a later heartbeat computes it.
        if cg.group_epoch > cg.assignment_epoch and self._may_compute_target(cg, now):
            self._update_targets(cg, changes, now)
        target = cg.targets.get(member_id, {})

        # 3. Reconcile the member towards its target; a member whose topics changed gives up
        # those it left at once, even while the target waits for the interval.
        current = cg.members[member_id]
        subscription_changed = (
            updated.subscribed_topic_names != member.subscribed_topic_names
            or updated.subscribed_topic_regex != member.subscribed_topic_regex)
        if subscription_changed or not current.is_reconciled_to(cg.assignment_epoch):
            subscribed = self._subscribed_ids(cg.member_topic_names(current))
            nxt = reconcile(current, cg.assignment_epoch, target, cg.partition_epoch, owned,
                            subscribed, subscription_changed)
            if not nxt.assignment_equals(current):
                changes.current(nxt)
                if nxt.uses_classic:
                    pass  # a classic member's deadline is its join timeout (Kafka's)
                elif nxt.state is MemberState.UNREVOKED_PARTITIONS:
                    self._timers.set(("cg-rebalance", gid, member_id),
                                     now + max(nxt.rebalance_timeout_ms, 0))
                    self._rebalance_epochs[(gid, member_id)] = nxt.member_epoch
                else:
                    self._cancel_rebalance_timer(gid, member_id)
            current = cg.members[member_id]
        return current

    def _update_regexes(self, cg: ConsumerGroup, changes: _Changes,
                        member: ConsumerGroupMember, updated: ConsumerGroupMember,
                        now: int, describable: TopicFilter | None = None) -> bool:
        """The group's resolved regexes after this member's heartbeat (Kafka's
        maybeUpdateRegularExpressions); True if the group epoch must move.

        A regex no other member uses is checked (INVALID_REGULAR_EXPRESSION) and resolved; one
        the member alone used is tombstoned. All the group's regexes are resolved again when
        one is unresolved, a topic was created since the last resolution, or the refresh
        interval passed, but never within REGEX_REFRESH_MIN_INTERVAL_MS of the last one.
        Kafka resolves in a background task and bumps the epoch when it completes; here the
        topics are in memory, so the resolution is made at once, in the same write."""
        old, new = member.subscribed_topic_regex, updated.subscribed_topic_regex
        others = cg.subscribed_regexes(exclude=updated.member_id)
        bump = refresh = False
        if old != new:
            if old and others.get(old, 0) == 0 and old in cg.resolved_regexes:
                changes.regex(old, None)
            if new:
                if others.get(new, 0) == 0:
                    try:
                        compile_regex(new)
                    except InvalidRegex as exc:
                        raise _Fail(ErrorCode.INVALID_REGULAR_EXPRESSION,
                                    invalid_regex_message(new, exc.description)) from None
                    refresh = True
                else:
                    bump = new in cg.resolved_regexes
        subscribed = dict(others)
        if new:
            subscribed[new] = subscribed.get(new, 0) + 1
        if not subscribed:
            return bump
        key = ("cg-regex", cg.group_id, "")
        if key in self._timers:
            return bump  # pending: it resolves with the context of the member that asked
        last = cg.last_regex_refresh_ms()
        if last >= 0 and now <= last + REGEX_REFRESH_MIN_INTERVAL_MS:
            return bump
        refresh = (refresh or set(subscribed) != set(cg.resolved_regexes)
                   or cg.last_regex_version() < self.topics_version
                   or now >= last + self.consumer_config.regex_refresh_interval_ms)
        if refresh:
            # As Kafka, the resolution runs after this heartbeat (a timer due now) and bumps
            # the group epoch when it changes the topics: this answer assigns only what is
            # already resolved, the next heartbeat brings the new topics (librdkafka's
            # 0045_resubscribe_with_regex expects its literal topic first, then the regex's).
            self._timers.set(key, now)
            self._regex_describable[cg.group_id] = describable
        return bump

    def _resolve_regexes(self, gid: str) -> None:
        """The ("cg-regex", group) timer: resolve every regex of the group, write them and,
        if their topics changed, bump the group epoch (Kafka's background resolution)."""
        describable = self._regex_describable.pop(gid, None)
        group = self.groups.get(gid)
        cg = None if group is None else group.consumer
        if group is None or cg is None:
            return
        subscribed = cg.subscribed_regexes()
        if not subscribed:
            return
        now = self.now()
        snapshot = cg.copy()
        changes = _Changes(gid, cg)
        bump = False
        resolved = resolve(subscribed, self.topics.topic_names())
        if describable is not None:
            # Kafka's filterTopicDescribeAuthorizedTopics: each matched topic is checked once;
            # a denied one leaves every regex.
            allowed = describable(set().union(*resolved.values()))
            resolved = {r: topics & allowed for r, topics in resolved.items()}
        for regex, topics in sorted(resolved.items()):
            before = cg.resolved_regexes.get(regex)
            if before is None or before.topics != topics:
                bump = True
            changes.regex(regex, ResolvedRegex(topics, self.topics_version, now))
        if bump:
            changes.epoch(cg.group_epoch + 1, self._metadata_hash(cg.subscribed_topic_names()))
        self._log("consumer group regexes resolved", group=gid, regexes=sorted(subscribed),
                  epoch=cg.group_epoch)
        self._commit(group, snapshot, "", changes.records, HeartbeatResult(ErrorCode.NONE))

    @staticmethod
    def _check_epoch(member: ConsumerGroupMember, received: int, owned: Assignment | None) -> None:
        if received > member.member_epoch:
            raise FencedMemberEpoch(
                f"The consumer group member has a greater member epoch ({received}) than the "
                f"one known by the group coordinator ({member.member_epoch}). The member must "
                f"abandon all its partitions and rejoin.")
        if received < member.member_epoch and (
                received != member.previous_member_epoch or not is_subset(owned, member.assigned)):
            raise FencedMemberEpoch(
                f"The consumer group member has a smaller member epoch ({received}) than the "
                f"one known by the group coordinator ({member.member_epoch}). The member must "
                f"abandon all its partitions and rejoin.")

    def _may_compute_target(self, cg: ConsumerGroup, now: int) -> bool:
        """Whether a new target assignment may be computed now (Kafka's
        canComputeNextTargetAssignment): never computed (or converted), no interval, or
        `group.consumer.assignment.interval.ms` passed since the last computation."""
        interval = self.consumer_config.assignment_interval_ms
        last = cg.assignment_timestamp
        return last == 0 or interval == 0 or now >= last + interval

    def _update_targets(self, cg: ConsumerGroup, changes: _Changes, now: int) -> None:
        specs = {}
        for mid, m in cg.members.items():
            ids = self._subscribed_ids(cg.member_topic_names(m))
            specs[mid] = MemberSpec(mid, m.instance_id, frozenset(ids), cg.targets.get(mid, {}))
        counts = self._subscribed_ids(cg.subscribed_topic_names())
        name = cg.preferred_assignor() or self.consumer_config.assignors[0]
        targets = assign(name, specs, counts)
        for mid in sorted(targets):
            if targets[mid] != cg.targets.get(mid, {}) or mid not in cg.targets:
                changes.target(mid, targets[mid])
        changes.assignment_epoch(cg.group_epoch, now)
        self._log("consumer group target assignment computed", group=cg.group_id,
                  epoch=cg.group_epoch, assignor=name)

    # -- leaving and fencing ----------------------------------------------------------------

    def _consumer_leave(self, req: HeartbeatRequest) -> Pending[HeartbeatResult]:
        group, cg = self._existing_consumer_group(req.group_id)
        gid = req.group_id
        snapshot = cg.copy()
        changes = _Changes(gid, cg)
        result = HeartbeatResult(ErrorCode.NONE, None, req.member_id, req.member_epoch)
        if req.instance_id is None:
            if req.member_id not in cg.members:
                raise _Fail(ErrorCode.UNKNOWN_MEMBER_ID,
                            f"Member {req.member_id} is not a member of group {gid}.")
            self._log("consumer group member left", group=gid, member=req.member_id)
            self._fence(cg, changes, req.member_id)
        else:
            static = cg.static_member(req.instance_id)
            if static is None:
                raise _Fail(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if static.member_id != req.member_id:
                raise _Fail(ErrorCode.FENCED_INSTANCE_ID,
                            f"Static member {req.member_id} with instance id {req.instance_id} "
                            f"was fenced by member {static.member_id}.")
            if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                # Temporarily away: keeps its partitions until its session expires.
                self._log("static consumer group member left temporarily", group=gid,
                          member=req.member_id)
                changes.current(replace(static, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                        pending_revocation={}))
                self._cancel_rebalance_timer(gid, static.member_id)
                result.member_id = static.member_id
                result.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            else:
                self._log("static consumer group member left", group=gid, member=req.member_id)
                self._fence(cg, changes, static.member_id)
        return self._commit(group, snapshot, "", changes.records, result, changes.downgraded)

    def _fence(self, cg: ConsumerGroup, changes: _Changes, member_id: str) -> None:
        """Remove a member (it left, or a timeout fenced it); if only classic members remain,
        the group becomes a classic group instead (Kafka's consumerGroupFenceMember)."""
        group = self.groups.get(cg.group_id)
        if group is not None and group.consumer is cg and self._maybe_downgrade(
                group, cg, changes, member_id):
            changes.downgraded = True
            return
        regex = cg.members[member_id].subscribed_topic_regex
        changes.remove_member(member_id)
        if regex and regex in cg.resolved_regexes and regex not in cg.subscribed_regexes():
            changes.regex(regex, None)  # the last member using it is gone
        changes.epoch(cg.group_epoch + 1, self._metadata_hash(cg.subscribed_topic_names()))
        if cg.is_empty:
            # As Kafka 4.4: the last member gone, the (empty) target is at the new epoch and
            # timestamp 0, so the next member to join gets a target at once, not an interval
            # after the last one.
            changes.assignment_epoch(cg.group_epoch, 0)
        self._cancel_member_timers(cg.group_id, member_id)

    def _cancel_member_timers(self, gid: str, member_id: str) -> None:
        self._timers.cancel(("cg-session", gid, member_id))
        self._timers.cancel(("cg-join", gid, member_id))
        self._timers.cancel(("cg-sync", gid, member_id))
        self._cancel_rebalance_timer(gid, member_id)

    def _cancel_rebalance_timer(self, gid: str, member_id: str) -> None:
        self._timers.cancel(("cg-rebalance", gid, member_id))
        self._rebalance_epochs.pop((gid, member_id), None)

    @property
    def _regex_describable(self) -> dict[str, TopicFilter | None]:
        """The pending ("cg-regex", group) resolutions' topic filters, by group."""
        filters: dict[str, TopicFilter | None] | None = getattr(self, "_cg_regex_filters", None)
        if filters is None:
            filters = {}
            self._cg_regex_filters = filters
        return filters

    @property
    def _rebalance_epochs(self) -> dict[tuple[str, str], int]:
        epochs: dict[tuple[str, str], int] | None = getattr(self, "_cg_rebalance_epochs", None)
        if epochs is None:
            epochs = {}
            self._cg_rebalance_epochs = epochs
        return epochs

    def on_consumer_timer(self, key: tuple[str, ...]) -> None:
        kind, gid, member_id = key[0], key[1], key[2]
        if kind == "cg-regex":
            self._resolve_regexes(gid)
            return
        group = self.groups.get(gid)
        cg = None if group is None else group.consumer
        if group is None or cg is None or member_id not in cg.members:
            self._rebalance_epochs.pop((gid, member_id), None)
            return
        if kind == "cg-rebalance":
            epoch = self._rebalance_epochs.pop((gid, member_id), None)
            if epoch != cg.members[member_id].member_epoch:
                return
            self._log("consumer group member did not revoke in time; fenced", group=gid,
                      member=member_id, epoch=epoch)
        elif kind == "cg-join":
            self._log("classic member of a consumer group did not rejoin in time; fenced",
                      group=gid, member=member_id)
        elif kind == "cg-sync":
            self._log("classic member of a consumer group did not sync in time; fenced",
                      group=gid, member=member_id)
        else:
            self._log("consumer group member session expired", group=gid, member=member_id)
        snapshot = cg.copy()
        changes = _Changes(gid, cg)
        self._fence(cg, changes, member_id)
        self._commit(group, snapshot, "", changes.records, HeartbeatResult(ErrorCode.NONE),
                     changes.downgraded)

    def consumer_group_tombstones(self, cg: ConsumerGroup) -> list[rec.KeyValue]:
        """Every record of a deleted consumer group, tombstoned (Kafka's order)."""
        gid = cg.group_id
        out: list[rec.KeyValue] = []
        for member_id in cg.members:
            out += [rec.current_tombstone(gid, member_id), rec.target_tombstone(gid, member_id),
                    rec.member_tombstone(gid, member_id)]
        out += [rec.assignment_epoch_tombstone(gid), rec.partition_metadata_tombstone(gid)]
        out += [rec.regex_tombstone(gid, regex) for regex in sorted(cg.resolved_regexes)]
        out.append(rec.group_epoch_tombstone(gid))
        return out

    def schedule_loaded_consumer_members(self, now: int) -> None:
        """After load: every member gets a session to come back; unrevoked ones a deadline."""
        for gid, group in self.groups.items():
            cg = group.consumer
            if cg is None:
                continue
            for mid, m in cg.members.items():
                session = (m.classic.session_timeout_ms if m.classic is not None
                           else self.consumer_config_for(gid).session_timeout_ms)
                self._timers.set(("cg-session", gid, mid), now + session)
                if m.state is MemberState.UNREVOKED_PARTITIONS:
                    self._timers.set(("cg-rebalance", gid, mid),
                                     now + max(m.rebalance_timeout_ms, 0))
                    self._rebalance_epochs[(gid, mid)] = m.member_epoch

    # -- ConsumerGroupDescribe --------------------------------------------------------------

    def describe_consumer_groups(self, group_ids: list[str]) -> list[DescribedConsumerGroup]:
        out = []
        for gid in group_ids:
            group = self.groups.get(gid)
            cg = None if group is None else group.consumer
            if cg is None:
                message = (f"Group {gid} is not a consumer group."
                           if group is not None and group.protocol_type is not None
                           else f"Group {gid} not found.")
                out.append(DescribedConsumerGroup(gid, ErrorCode.GROUP_ID_NOT_FOUND, message))
                continue
            out.append(DescribedConsumerGroup(
                gid, ErrorCode.NONE, None, cg.state.value, cg.group_epoch, cg.assignment_epoch,
                cg.preferred_assignor() or self.consumer_config.assignors[0],
                [DescribedMember(m, cg.targets.get(m.member_id, {})) for m in cg.members.values()]))
        return out

    # -- offsets ------------------------------------------------------------------------------

    def validate_consumer_commit(self, cg: ConsumerGroup, member_id: str, member_epoch: int,
                                 transactional: bool, api_version: int,
                                 partitions: Iterable[tuple[str, int]] = ()) -> ErrorCode | None:
        """The error that refuses a whole (Txn)OffsetCommit of `partitions` (topic name,
        partition), or None. The member's own epoch commits anything; a newer one is stale;
        an older one (KIP-1251, Kafka 4.3+) commits only partitions the member has held
        since that epoch or before (Kafka's createAssignmentEpochValidator), so a commit
        sent just before a heartbeat moved the epoch still lands."""
        if member_epoch < 0 and cg.is_empty:
            return None
        if transactional and member_id == "" and member_epoch < 0:
            return None  # a transactional producer without the consumer's group metadata
        member = cg.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and not member.uses_classic and api_version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        # A classic member's generation is its member epoch; TxnOffsetCommit has no
        # STALE_MEMBER_EPOCH: Kafka answers ILLEGAL_GENERATION for both.
        stale = (ErrorCode.ILLEGAL_GENERATION if member.uses_classic or transactional
                 else ErrorCode.STALE_MEMBER_EPOCH)
        if member_epoch > member.member_epoch:
            return stale
        if member_epoch < member.member_epoch:
            for name, partition in partitions:
                info = self.topics.topic_info(name)
                assigned_at = None if info is None else member.assignment_epochs.get((info[0], partition))
                if assigned_at is None or assigned_at > member_epoch:
                    return stale
        return None

    @staticmethod
    def validate_consumer_fetch(cg: ConsumerGroup, member_id: str | None,
                                member_epoch: int) -> ErrorCode | None:
        if member_id is None and member_epoch < 0:
            return None
        member = cg.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return (ErrorCode.ILLEGAL_GENERATION if member.uses_classic
                    else ErrorCode.STALE_MEMBER_EPOCH)
        return None

