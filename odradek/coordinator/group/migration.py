"""Online migration between the classic and the consumer (KIP-848) group protocols.

Follows Kafka's GroupMetadataManager (`group.consumer.migration.policy`: bidirectional, the
default, upgrade, downgrade or disabled):

- Upgrade: a ConsumerGroupHeartbeat join (epoch 0) to a non-empty classic group whose protocol
  type is "consumer" (and no larger than `group.consumer.max.size`) turns it into a consumer
  group: waiting JoinGroup/SyncGroup calls get REBALANCE_IN_PROGRESS, the GroupMetadata record
  is tombstoned and the consumer group is written (every member's subscription, the group
  epoch, target assignments and their epoch, current assignments), all at the classic
  generation with each member's last classic assignment, all Stable. The joining member then
  bumps the epoch as any new member does. Not allowed: GROUP_ID_NOT_FOUND "Group <id> is not a
  consumer group." (as before).
- Classic members inside a consumer group (its ConsumerGroupMemberMetadata carries their
  session timeout and JoinGroup protocols): JoinGroup updates the member like a heartbeat
  (subscription and owned partitions from the ConsumerProtocol subscription) and answers at
  once with generation = member epoch, never as the leader; SyncGroup answers the member's
  current assignment in the ConsumerProtocol assignment format (the version of its first
  protocol's subscription); Heartbeat answers REBALANCE_IN_PROGRESS while the group epoch is
  ahead of the member, it must revoke, or a partition it waits for was released; LeaveGroup
  removes it and bumps the epoch; OffsetCommit checks generation = member epoch
  (ILLEGAL_GENERATION). Timers: ("cg-session", ...) with the member's own session timeout,
  ("cg-join", ...) the rebalance timeout to rejoin after REBALANCE_IN_PROGRESS, ("cg-sync", ...)
  the rebalance timeout to send SyncGroup after its JoinGroup; each fences the member.
- Downgrade: when a member using the consumer protocol is fenced (left, session or rebalance
  timeout) and every other member uses the classic protocol (at least one, at most
  `group.max.size`), the group becomes a classic one instead: the consumer-group records are
  tombstoned (Kafka's order) and a GroupMetadata record written, Stable at generation = the
  group epoch with each member's target assignment, then a rebalance is prepared, so the
  members' next heartbeats get REBALANCE_IN_PROGRESS and they rejoin.

Classic JoinGroup calls to a non-empty consumer group are served unless the policy is
`disabled` (then INCONSISTENT_GROUP_PROTOCOL, as Kafka 4.4); `upgrade` and `downgrade` only
govern the conversions. Not implemented: the downgrade Kafka
makes when a classic static member replaces the last consumer-protocol static member.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import replace

from odradek.coordinator.common import Pending, Write
from odradek.coordinator.group.consumer import records as rec
from odradek.coordinator.group.consumer.assignors import Assignment, TopicId
from odradek.coordinator.group.consumer.coordinator import (
    _WRITE_ERRORS,
    ConsumerGroupOps,
    HeartbeatResult,
    TopicFilter,
    _Changes,
    _Fail,
)
from odradek.coordinator.group.consumer.model import (
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    new_member_id,
)
from odradek.coordinator.group.model import (
    Group,
    JoinResult,
    LeaveMemberResult,
    LeaveResult,
    LeavingMember,
    Member,
    SyncResult,
)
from odradek.coordinator.group.records import (
    OFFSETS_TOPIC,
    group_metadata_key,
)
from odradek.coordinator.group.state import GroupState
from odradek.wire import ErrorCode, ProtocolError
from odradek.wire._generated.data import ConsumerProtocolAssignment, ConsumerProtocolSubscription

_I16 = struct.Struct(">h")
CONSUMER_PROTOCOL_TYPE = "consumer"


def decode_subscription(data: bytes) -> ConsumerProtocolSubscription:
    """A ConsumerProtocol subscription, read at its own version (a newer one as the newest
    we know, as Kafka's ConsumerProtocol does). Raises ProtocolError/ValueError if malformed."""
    if len(data) < 2:
        raise ProtocolError("subscription has no version")
    version = _I16.unpack_from(data, 0)[0]
    if version < 0:
        raise ProtocolError(f"subscription version {version}")
    sub, _ = ConsumerProtocolSubscription.decode(
        data, min(version, ConsumerProtocolSubscription.MAX_VERSION), 2)
    return sub


def _version(data: bytes) -> int:
    version = _I16.unpack_from(data, 0)[0] if len(data) >= 2 else 0
    return max(0, min(version, ConsumerProtocolAssignment.MAX_VERSION))


class MigrationOps(ConsumerGroupOps):
    """Conversions and classic members of consumer groups; mixed into GroupCoordinator."""

    _new_uuid: Callable[[], str]

    # GroupCoordinator's classic machinery (declared for the type checker).
    def _prepare_rebalance(self, group: Group, now: int, reason: str) -> None:
        raise NotImplementedError  # pragma: no cover

    def _schedule_heartbeat(self, group: Group, member: Member, now: int) -> None:
        raise NotImplementedError  # pragma: no cover

    def _group_record(self, group: Group, assignment: dict[str, bytes],
                      ) -> tuple[bytes, bytes | None]:
        raise NotImplementedError  # pragma: no cover

    def _drop_member(self, group: Group, member_id: str) -> None:
        raise NotImplementedError  # pragma: no cover

    # -- topic ids <-> names ------------------------------------------------------------------

    def _to_ids(self, parts: list[ConsumerProtocolSubscription.TopicPartition]
                | list[ConsumerProtocolAssignment.TopicPartition]) -> Assignment:
        out: dict[TopicId, set[int]] = {}
        for tp in parts:
            info = self.topics.topic_info(tp.topic)
            if info is not None and tp.partitions:  # unknown topics are left out, as Kafka
                out.setdefault(info[0], set()).update(tp.partitions)
        return {t: frozenset(ps) for t, ps in out.items()}

    def _assignment_bytes(self, assignment: Assignment, version_of: bytes) -> bytes:
        parts = []
        for topic_id in sorted(assignment):
            name = self.topics.topic_name(topic_id)
            if name is not None:
                parts.append(ConsumerProtocolAssignment.TopicPartition(
                    topic=name, partitions=sorted(assignment[topic_id])))
        version = _version(version_of)
        body = ConsumerProtocolAssignment(assigned_partitions=parts).encode(version)
        return _I16.pack(version) + b"".join(bytes(b) for b in body)

    # -- upgrade ------------------------------------------------------------------------------

    def _try_upgrade(self, group: Group, records: list[rec.KeyValue]) -> bool:
        """Turn a non-empty classic group into a consumer group (Kafka 4.4's
        validateOnlineUpgrade + convertToConsumerGroup); its records go to `records`. A group
        the policy, its protocol type or its size keeps classic answers GROUP_ID_NOT_FOUND
        with Kafka's reason."""
        gid = group.group_id
        if group.is_(GroupState.DEAD) or group.is_(GroupState.EMPTY):
            return False
        why = None
        if not self.consumer_config.upgrade_enabled:
            why = "online upgrade is disabled"
        elif group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            why = "the group does not use the consumer embedded protocol"
        elif len(group.members) > self.consumer_config.max_size:
            why = "the group size exceeds the consumer group maximum size"
        if why is not None:
            self._log("classic group cannot be upgraded", group=gid, reason=why,
                      policy=self.consumer_config.migration_policy)
            raise _Fail(ErrorCode.GROUP_ID_NOT_FOUND,
                        f"Cannot upgrade classic group {gid} to consumer group because {why}.")
        protocol = group.protocol_name
        members: list[ConsumerGroupMember] = []
        try:
            for m in group.members.values():
                sub = decode_subscription(m.metadata(protocol) if protocol is not None
                                          else m.protocols[0][1])
                assigned: Assignment = {}
                if len(m.assignment) >= 2:
                    a, _ = ConsumerProtocolAssignment.decode(m.assignment, _version(m.assignment), 2)
                    assigned = self._to_ids(a.assigned_partitions)
                members.append(ConsumerGroupMember(
                    m.member_id, instance_id=m.group_instance_id, rack_id=sub.rack_id,
                    client_id=m.client_id, client_host=m.client_host,
                    subscribed_topic_names=tuple(sorted(set(sub.topics))),
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    classic=ClassicMemberMetadata(m.session_timeout_ms, tuple(m.protocols)),
                    member_epoch=group.generation_id,
                    previous_member_epoch=group.generation_id,
                    state=MemberState.STABLE, assigned=assigned))
        except (ProtocolError, ValueError, struct.error) as exc:
            raise _Fail(ErrorCode.GROUP_ID_NOT_FOUND,
                        f"Cannot upgrade the classic group {gid} to consumer group because "
                        f"the embedded consumer protocol is malformed.") from exc
        # Whoever waits in a rebalance must rejoin: the group is a consumer group now.
        for classic in list(group.members.values()):
            self._resolve_classic_waiters(classic, ErrorCode.REBALANCE_IN_PROGRESS)
            self._timers.cancel(("hb", gid, classic.member_id))
        for pending_id in group.pending_members:
            self._timers.cancel(("pending", gid, pending_id))
        for kind in ("join", "sync", "settle"):
            self._timers.cancel((kind, gid))
        records.append((group_metadata_key(gid), None))
        cg = ConsumerGroup(gid)
        group.convert_to_consumer(cg)
        changes = _Changes(gid, cg)
        epoch = group._classic_saved["generation_id"] if group._classic_saved else 0
        assert isinstance(epoch, int)
        for cm in members:
            changes.member(cm)
        changes.epoch(epoch, self._metadata_hash(cg.subscribed_topic_names()))
        for cm in members:
            changes.target(cm.member_id, cm.assigned)
        # Timestamp 0, as Kafka's conversion writes: the next heartbeat may compute a target
        # at once (group.consumer.assignment.interval.ms counts from a real computation).
        changes.assignment_epoch(epoch, 0)
        for cm in members:
            changes.current(cm)
        records += changes.records
        now = self.now()
        for cm in members:
            assert cm.classic is not None
            self._timers.set(("cg-session", gid, cm.member_id),
                             now + cm.classic.session_timeout_ms)
        self._log("classic group upgraded to a consumer group", group=gid, epoch=epoch,
                  members=len(members))
        return True

    def _undo_upgrade(self, group: Group) -> None:
        """The upgrade's write failed: the classic group as it was (its waiters already got
        REBALANCE_IN_PROGRESS), with its members' sessions."""
        cg = group.consumer
        if cg is not None:
            for member_id in cg.members:
                self._cancel_member_timers(group.group_id, member_id)
        group.convert_to_classic(restore=True)
        now = self.now()
        for m in group.members.values():
            self._schedule_heartbeat(group, m, now)
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._timers.set(("join", group.group_id), now + group.rebalance_timeout_ms)

    @staticmethod
    def _resolve_classic_waiters(member: Member, error: ErrorCode) -> None:
        join, member.join_waiter = member.join_waiter, None
        if join is not None and not join.done:
            join.resolve(JoinResult(error, member.member_id))
        sync, member.sync_waiter = member.sync_waiter, None
        if sync is not None and not sync.done:
            sync.resolve(SyncResult(error))

    # -- downgrade ----------------------------------------------------------------------------

    def _maybe_downgrade(self, group: Group, cg: ConsumerGroup, changes: _Changes,
                         leaving_id: str) -> bool:
        """Kafka's validateOnlineDowngradeWithFencedMember + convertToClassicGroup."""
        gid = group.group_id
        if not cg.all_classic_except(leaving_id) or len(cg.members) <= 1:
            return False
        if not self.consumer_config.downgrade_enabled:
            self._log("consumer group cannot be downgraded: the policy does not allow it",
                      group=gid, policy=self.consumer_config.migration_policy)
            return False
        if len(cg.members) - 1 > self._classic_max_size():
            self._log("consumer group cannot be downgraded: too many members", group=gid)
            return False
        now = self.now()
        # Tombstones in Kafka's order (createGroupTombstoneRecords), then the classic group.
        out = changes.records
        out += [rec.current_tombstone(gid, mid) for mid in cg.members]
        out += [rec.target_tombstone(gid, mid) for mid in cg.members]
        out.append(rec.assignment_epoch_tombstone(gid))
        out += [rec.member_tombstone(gid, mid) for mid in cg.members]
        out += [rec.regex_tombstone(gid, regex) for regex in sorted(cg.resolved_regexes)]
        out.append(rec.partition_metadata_tombstone(gid))
        out.append(rec.group_epoch_tombstone(gid))
        for member_id in cg.members:
            self._cancel_member_timers(gid, member_id)
        group.consumer = None
        group._classic_saved = None
        group.state = GroupState.STABLE
        group.state_timestamp = now
        group.generation_id = cg.group_epoch
        group.protocol_type = CONSUMER_PROTOCOL_TYPE
        group.leader_id = None
        for mid, m in cg.members.items():
            if mid == leaving_id or m.classic is None:
                continue
            group.add(Member(mid, m.instance_id, m.client_id, m.client_host,
                             m.rebalance_timeout_ms, m.classic.session_timeout_ms,
                             CONSUMER_PROTOCOL_TYPE, list(m.classic.protocols)))
        group.protocol_name = group.select_protocol()
        group.subscribed_topics = {t for m in cg.members.values() if m.member_id != leaving_id
                                   for t in m.subscribed_topic_names}
        assignment = {}
        for member in group.members.values():
            member.assignment = self._assignment_bytes(
                cg.targets.get(member.member_id, {}), member.metadata(group.protocol_name))
            assignment[member.member_id] = member.assignment
        out.append(self._group_record(group, assignment))
        for member in group.members.values():
            self._schedule_heartbeat(group, member, now)
        self._log("consumer group downgraded to a classic group", group=gid,
                  generation=group.generation_id, members=len(group.members))
        self._prepare_rebalance(group, now, f"Downgrade group {gid} from consumer to classic.")
        return True

    def _classic_max_size(self) -> int:
        return 2**31 - 1  # pragma: no cover - GroupCoordinator's group.max.size

    def _undo_downgrade(self, group: Group, snapshot: ConsumerGroup) -> None:
        """The downgrade's write failed: back to the consumer group it was."""
        gid = group.group_id
        for member_id in list(group.members):
            self._drop_member(group, member_id)
        for kind in ("join", "sync", "settle"):
            self._timers.cancel((kind, gid))
        group.state = GroupState.EMPTY
        group.generation_id, group.protocol_type, group.protocol_name = 0, None, None
        group.leader_id = None
        group.subscribed_topics = None
        group.consumer = snapshot
        now = self.now()
        for mid, m in snapshot.members.items():
            session = (m.classic.session_timeout_ms if m.classic is not None
                       else self.consumer_config.session_timeout_ms)
            self._timers.set(("cg-session", gid, mid), now + session)

    # -- classic members in a consumer group --------------------------------------------------

    def _classic_member(self, cg: ConsumerGroup, member_id: str,
                        instance_id: str | None) -> ConsumerGroupMember:
        """Kafka's validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol."""
        if instance_id is None:
            member = cg.members.get(member_id)
            if member is None:
                raise _Fail(ErrorCode.UNKNOWN_MEMBER_ID)
        else:
            member = cg.static_member(instance_id)
            if member is None:
                raise _Fail(ErrorCode.UNKNOWN_MEMBER_ID)
            if member.member_id != member_id:
                raise _Fail(ErrorCode.FENCED_INSTANCE_ID)
        if member.classic is None:
            raise _Fail(ErrorCode.UNKNOWN_MEMBER_ID)
        return member

    def _rejoin_deadline(self, gid: str, member: ConsumerGroupMember) -> None:
        key = ("cg-join", gid, member.member_id)
        if key not in self._timers:
            self._timers.set(key, self.now() + max(member.rebalance_timeout_ms, 0))

    def classic_join_consumer_group(self, group: Group, cg: ConsumerGroup, member_id: str,
                                    instance_id: str | None, protocol_type: str,
                                    protocols: list[tuple[str, bytes]], session_timeout_ms: int,
                                    rebalance_timeout_ms: int, client_id: str, client_host: str,
                                    require_known_member_id: bool,
                                    describable: TopicFilter | None = None
                                    ) -> Pending[JoinResult]:
        """A JoinGroup to a non-empty consumer group (Kafka's classicGroupJoinToConsumerGroup);
        refused with INCONSISTENT_GROUP_PROTOCOL when the migration policy is `disabled`
        (Kafka 4.4's throwIfClassicMemberCannotJoinConsumerGroup)."""
        if self.consumer_config.migration_policy == "disabled":
            self._log("classic member cannot join a consumer group: migration disabled",
                      group=group.group_id, member=member_id)
            return Pending.resolved(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
        try:
            return self._classic_join(group, cg, member_id, instance_id, protocol_type,
                                      protocols, session_timeout_ms, rebalance_timeout_ms,
                                      client_id, client_host, require_known_member_id,
                                      describable)
        except _Fail as fail:
            return Pending.resolved(JoinResult(fail.error, member_id))

    def _classic_join(self, group: Group, cg: ConsumerGroup, member_id: str,
                      instance_id: str | None, protocol_type: str,
                      protocols: list[tuple[str, bytes]], session_timeout_ms: int,
                      rebalance_timeout_ms: int, client_id: str, client_host: str,
                      require_known_member_id: bool,
                      describable: TopicFilter | None) -> Pending[JoinResult]:
        now = self.now()
        gid = group.group_id
        unknown = member_id == ""
        if unknown:
            member_id = new_member_id()
        if len(cg.members) >= self.consumer_config.max_size and member_id not in cg.members:
            raise _Fail(ErrorCode.GROUP_MAX_SIZE_REACHED)
        if not cg.supports_classic_protocols(protocol_type, {n for n, _ in protocols}):
            raise _Fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if unknown and require_known_member_id:
            self._log("classic member joins a consumer group; member id handed out", group=gid,
                      member=member_id)
            return Pending.resolved(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id))
        try:
            sub = decode_subscription(protocols[0][1])
        except (ProtocolError, ValueError, struct.error):
            raise _Fail(ErrorCode.UNKNOWN_SERVER_ERROR) from None
        snapshot = cg.copy()
        changes = _Changes(gid, cg)
        if instance_id is None:
            member = cg.members.get(member_id) or ConsumerGroupMember(member_id)
        elif not unknown:
            member = self._classic_member_static_known(cg, member_id, instance_id)
        else:
            static = cg.static_member(instance_id)
            if static is None:
                member = ConsumerGroupMember(member_id)
            else:
                # The instance comes back with a new member id: it takes the old one's place.
                member = replace(static, member_id=member_id, member_epoch=0,
                                 previous_member_epoch=0, assignment_epochs={})
                target = cg.targets.get(static.member_id, {})
                changes.remove_member(static.member_id)
                self._cancel_member_timers(gid, static.member_id)
                changes.member(member)
                changes.target(member_id, target)
                changes.current(member)
        is_new = member_id not in cg.members
        updated = replace(
            member, instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=sub.rack_id if sub.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(rebalance_timeout_ms if rebalance_timeout_ms != -1
                                  else member.rebalance_timeout_ms),
            subscribed_topic_names=tuple(sorted(set(sub.topics))),
            subscribed_topic_regex=None,  # the classic protocol has none (Kafka 4.4 clears it)
            client_id=client_id, client_host=client_host,
            classic=ClassicMemberMetadata(session_timeout_ms, tuple(protocols)))
        try:
            current = self._update_member(cg, changes, member, updated,
                                          self._to_ids(sub.owned_partitions), is_new, now,
                                          describable)
        except _Fail:
            group.consumer = snapshot
            raise
        assert current.classic is not None
        result = JoinResult(ErrorCode.NONE, member_id, current.member_epoch,
                            CONSUMER_PROTOCOL_TYPE, current.classic.protocol_name, "")
        self._log("classic member joined a consumer group", group=gid, member=member_id,
                  epoch=current.member_epoch, group_epoch=cg.group_epoch)
        pending: Pending[JoinResult] = Pending()

        def done(error: ErrorCode, offset: int) -> None:
            if error != ErrorCode.NONE:
                if group.consumer is cg and self.groups.get(gid) is group:
                    group.consumer = snapshot
                pending.resolve(JoinResult(_WRITE_ERRORS.get(error, error), member_id))
                return
            at = self.now()
            self._timers.cancel(("cg-join", gid, member_id))
            self._timers.set(("cg-session", gid, member_id), at + session_timeout_ms)
            self._timers.set(("cg-sync", gid, member_id), at + max(rebalance_timeout_ms, 0))
            pending.resolve(result)

        if changes.records:
            self.outbox.write(Write(OFFSETS_TOPIC, self.partition_for(gid), changes.records,
                                    done))
        else:
            done(ErrorCode.NONE, -1)
        return pending

    @staticmethod
    def _classic_member_static_known(cg: ConsumerGroup, member_id: str,
                                     instance_id: str) -> ConsumerGroupMember:
        static = cg.static_member(instance_id)
        if static is None:
            raise _Fail(ErrorCode.UNKNOWN_MEMBER_ID)
        if static.member_id != member_id:
            raise _Fail(ErrorCode.FENCED_INSTANCE_ID)
        return static

    def classic_sync_consumer_group(self, group: Group, cg: ConsumerGroup, member_id: str,
                                    instance_id: str | None, generation_id: int,
                                    protocol_type: str | None,
                                    protocol_name: str | None) -> SyncResult:
        """Kafka's classicGroupSyncToConsumerGroup: the member's current assignment."""
        gid = group.group_id
        if cg.is_empty:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        try:
            member = self._classic_member(cg, member_id, instance_id)
        except _Fail as fail:
            return SyncResult(fail.error)
        assert member.classic is not None
        if generation_id != member.member_epoch:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        if ((protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE)
                or (protocol_name is not None and protocol_name != member.classic.protocol_name)):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if (cg.group_epoch > member.member_epoch
                and member.state is not MemberState.UNREVOKED_PARTITIONS):
            self._rejoin_deadline(gid, member)
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        now = self.now()
        self._timers.cancel(("cg-sync", gid, member.member_id))
        self._timers.set(("cg-session", gid, member.member_id),
                         now + member.classic.session_timeout_ms)
        return SyncResult(ErrorCode.NONE, protocol_type, protocol_name, self._assignment_bytes(
            member.assigned, member.classic.protocols[0][1]))

    def classic_heartbeat_consumer_group(self, group: Group, cg: ConsumerGroup, member_id: str,
                                         instance_id: str | None,
                                         generation_id: int) -> ErrorCode:
        """Kafka's classicGroupHeartbeatToConsumerGroup."""
        gid = group.group_id
        try:
            member = self._classic_member(cg, member_id, instance_id)
        except _Fail as fail:
            return fail.error
        assert member.classic is not None
        if generation_id != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        self._timers.set(("cg-session", gid, member.member_id),
                         self.now() + member.classic.session_timeout_ms)
        if (member.member_epoch < cg.group_epoch
                or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not cg.waiting_on_unreleased_partition(member))):
            self._rejoin_deadline(gid, member)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def classic_leave_consumer_group(self, group: Group, cg: ConsumerGroup,
                                     leaving: list[LeavingMember]) -> LeaveResult:
        """Kafka's classicGroupLeaveToConsumerGroup: each member is removed, then the group
        epoch bumped once. Answered before the write (a failed write restores the group)."""
        gid = group.group_id
        snapshot = cg.copy()
        changes = _Changes(gid, cg)
        results = []
        for m in leaving:
            member_id = m.member_id
            try:
                if m.group_instance_id is None:
                    found = cg.members.get(member_id)
                    if found is None or found.classic is None:
                        raise _Fail(ErrorCode.UNKNOWN_MEMBER_ID)
                else:
                    found = cg.static_member(m.group_instance_id)
                    if found is None:
                        raise _Fail(ErrorCode.UNKNOWN_MEMBER_ID)
                    if member_id != "" and found.member_id != member_id:
                        raise _Fail(ErrorCode.FENCED_INSTANCE_ID)
                    if found.classic is None:
                        raise _Fail(ErrorCode.UNKNOWN_MEMBER_ID)
                    member_id = found.member_id
                self._log("classic member left a consumer group", group=gid, member=member_id,
                          reason=m.reason)
                regex = found.subscribed_topic_regex
                changes.remove_member(member_id)
                if regex and regex in cg.resolved_regexes and regex not in cg.subscribed_regexes():
                    changes.regex(regex, None)
                self._cancel_member_timers(gid, member_id)
                results.append(LeaveMemberResult(member_id, m.group_instance_id, ErrorCode.NONE))
            except _Fail as fail:
                results.append(LeaveMemberResult(member_id, m.group_instance_id, fail.error))
        if changes.records:
            changes.epoch(cg.group_epoch + 1, self._metadata_hash(cg.subscribed_topic_names()))
            self._commit(group, snapshot, "", changes.records, HeartbeatResult(ErrorCode.NONE))
        return LeaveResult(ErrorCode.NONE, results)
