"""StreamsGroupHeartbeat and StreamsGroupDescribe: the sans-IO streams-group coordinator.

A heartbeat follows Kafka's GroupMetadataManager.streamsGroupHeartbeat: validate (INVALID_REQUEST
with Kafka's messages), then (1) create or update the member and, on a join, the topology
(a topology of a lower epoch than the group's: STREAMS_INVALID_TOPOLOGY_EPOCH; a malformed one:
STREAMS_INVALID_TOPOLOGY), bumping the group epoch when the member's assignment inputs, the
topology or the topics it reads changed; (2) configure the topology against the cluster
(`topology.configure`): while it is not ready the heartbeat carries the status codes and the
internal topics to create, which the broker shell creates and reports back by calling
`topics_changed`; (3) when the group epoch passed the assignment epoch, compute a new target
with the sticky assignor (`group.streams.num.standby.replicas`); (4) reconcile the member
towards its target: tasks it must give up are revoked first (its epoch stays until it
reports them gone); active tasks another member still holds are handed out once released.

Every change is a StreamsGroup* record (`records.py`), applied to the live state through the
same `records.apply` that replays `__consumer_offsets`, so a replayed group equals the live
one. Time comes from the caller; `expire(now)` fences members past their session timeout
(`group.streams.session.timeout.ms`) or that did not revoke within their rebalance timeout.

Not implemented yet: static membership (an instance id is stored, not used to replace a
member), warm-up tasks, rack- and client-tag-aware standby placement, task offsets (lag).
"""

from __future__ import annotations

import hashlib
import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Protocol

from odradek.coordinator.streams import records as rec
from odradek.coordinator.streams.assignor import (
    EMPTY,
    MemberSpec,
    TaskMap,
    TasksTuple,
    assign,
    inter,
    minus,
    norm,
    union,
)
from odradek.coordinator.streams.model import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    GroupState,
    MemberAssignment,
    MemberMetadata,
    MemberState,
    StreamsGroup,
)
from odradek.coordinator.streams.topology import (
    SHUTDOWN_APPLICATION,
    ConfiguredTopology,
    Status,
    TopicInfo,
    Topology,
    check,
    configure,
)
from odradek.wire import ErrorCode

NEW_GROUP_EPOCH = 1  # the epoch of a group no record wrote yet, as in Kafka


class TopicsView(Protocol):
    def topic_info(self, name: str) -> tuple[uuid.UUID, int] | None:
        """(topic id, partition count) of an existing topic."""
        ...

    def topic_names(self) -> Iterable[str]: ...


@dataclass(frozen=True, slots=True)
class StreamsConfig:
    session_timeout_ms: int = 45_000  # group.streams.session.timeout.ms
    heartbeat_interval_ms: int = 5_000  # group.streams.heartbeat.interval.ms
    num_standby_replicas: int = 0  # group.streams.num.standby.replicas
    max_size: int = 2**31 - 1  # group.streams.max.size


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    endpoint_information_epoch: int = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Topology | None = None
    active_tasks: TaskMap | None = None
    standby_tasks: TaskMap | None = None
    warmup_tasks: TaskMap | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] | None = None
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class HeartbeatResult:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    statuses: tuple[Status, ...] = ()
    tasks: TasksTuple | None = None  # None: unchanged since the last response
    endpoint_information_epoch: int = 0
    # endpoint -> (active, standby) partitions by topic, when the epoch the member knew is old.
    partitions_by_endpoint: dict[tuple[str, int], tuple[dict[str, list[int]],
                                                        dict[str, list[int]]]] | None = None
    create_topics: tuple[TopicInfo, ...] = ()  # internal topics the broker must create


@dataclass(frozen=True, slots=True)
class DescribedStreamsGroup:
    group_id: str
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    group: StreamsGroup | None = None
    state: str = ""
    configured: ConfiguredTopology | None = None


class Fail(Exception):
    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.error, self.message = error, message


def _invalid(message: str) -> Fail:
    return Fail(ErrorCode.INVALID_REQUEST, message)


def validate(req: HeartbeatRequest) -> None:
    """Kafka's request checks (INVALID_REQUEST)."""
    if not req.group_id:
        raise _invalid("GroupId can't be empty.")
    if not req.member_id:
        raise _invalid("MemberId can't be empty.")
    if req.instance_id is not None and not req.instance_id:
        raise _invalid("InstanceId can't be empty.")
    if req.rack_id is not None and not req.rack_id:
        raise _invalid("RackId can't be empty.")
    if req.member_epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise _invalid("RebalanceTimeoutMs must be provided when joining.")
        if req.topology is None:
            raise _invalid("Topology must be non-null when joining.")
        if not req.process_id:
            raise _invalid("ProcessId can't be empty.")
        for name, tasks in (("ActiveTasks", req.active_tasks),
                            ("StandbyTasks", req.standby_tasks),
                            ("WarmupTasks", req.warmup_tasks)):
            if tasks is None or any(tasks.values()):
                raise _invalid(f"{name} must be empty when (re-)joining.")
    elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if req.instance_id is None:
            raise _invalid("InstanceId can't be null.")
    elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise _invalid(f"MemberEpoch is {req.member_epoch}, but must be greater than or "
                       "equal to -2.")
    if req.process_id is not None and not req.process_id and req.member_epoch != 0:
        raise _invalid("ProcessId can't be empty.")
    if req.active_tasks is not None and any(p < 0 for ps in req.active_tasks.values()
                                            for p in ps):
        raise _invalid("Task partitions can't be negative.")


def reconcile(a: MemberAssignment, target: TasksTuple, target_epoch: int,
              held_by_others: TaskMap, reported_active: TaskMap | None) -> MemberAssignment:
    """The member's next assignment: revoke first, then take the target's tasks, active
    ones only once no other member holds them (Kafka's streams CurrentAssignmentBuilder)."""
    if a.state == MemberState.UNREVOKED_TASKS:
        if reported_active is None or inter(a.pending_revocation.active, reported_active):
            return a  # still holds a task it must give up
        a = replace(a, pending_revocation=EMPTY)
    assigned = a.assigned
    revoke = TasksTuple(minus(assigned.active, target.active),
                        minus(assigned.standby, target.standby),
                        minus(assigned.warmup, target.warmup))
    if not revoke.is_empty():
        kept = TasksTuple(inter(assigned.active, target.active),
                          inter(assigned.standby, target.standby),
                          inter(assigned.warmup, target.warmup))
        return replace(a, state=MemberState.UNREVOKED_TASKS, assigned=kept,
                       pending_revocation=revoke)
    active = minus(target.active, held_by_others)
    state = MemberState.STABLE if active == norm(target.active) else \
        MemberState.UNRELEASED_TASKS
    previous = a.member_epoch if a.member_epoch != target_epoch else a.previous_member_epoch
    return MemberAssignment(target_epoch, previous, state,
                            TasksTuple(active, norm(target.standby), norm(target.warmup)),
                            EMPTY)


@dataclass(slots=True)
class _Ctx:
    records: list[rec.KeyValue] = field(default_factory=list)


class StreamsCoordinator:
    """Every streams group of one `__consumer_offsets` shard."""

    def __init__(self, config: StreamsConfig | None = None,
                 topics: TopicsView | None = None) -> None:
        self.config = config or StreamsConfig()
        self.topics = topics
        self.groups: dict[str, StreamsGroup] = {}
        self.session_deadlines: dict[tuple[str, str], int] = {}
        self.revocation_deadlines: dict[tuple[str, str], int] = {}
        self.shutdown_requested: set[str] = set()
        self.endpoint_epochs: dict[str, int] = {}

    # -- records --------------------------------------------------------------------------

    def _emit(self, ctx: _Ctx, record: rec.KeyValue) -> None:
        rec.apply(self.groups, record[0], record[1])
        ctx.records.append(record)

    def replay(self, key: bytes | memoryview, value: bytes | memoryview | None) -> None:
        rec.apply(self.groups, key, value)

    def schedule_loaded(self, now: int) -> None:
        """After replay: every member gets a fresh session (as Kafka on load)."""
        for gid, g in self.groups.items():
            for mid in g.metadata:
                self.session_deadlines[(gid, mid)] = now + self.config.session_timeout_ms

    # -- cluster metadata ---------------------------------------------------------------------

    def _partitions_of(self, name: str) -> int | None:
        info = self.topics.topic_info(name) if self.topics is not None else None
        return None if info is None else info[1]

    def _names(self) -> list[str]:
        return list(self.topics.topic_names()) if self.topics is not None else []

    def configured(self, g: StreamsGroup) -> ConfiguredTopology | None:
        if g.topology is None:
            return None
        return configure(g.topology, self._partitions_of, self._names())

    def _hash(self, g: StreamsGroup, c: ConfiguredTopology | None) -> int:
        if g.topology is None or c is None:
            return 0
        names = set(c.source_topics)
        for s in g.topology.subtopologies:
            names.update(t.name for t in (*s.repartition_source_topics,
                                          *s.state_changelog_topics))
        h = hashlib.blake2b(digest_size=8)
        for n in sorted(names):
            h.update(n.encode() + b"\0" + struct.pack(">i", self._partitions_of(n) or -1))
        return int.from_bytes(h.digest(), "big", signed=True)

    # -- heartbeat ----------------------------------------------------------------------------

    def heartbeat(self, req: HeartbeatRequest, now: int, other_kind: str | None = None,
                  ) -> tuple[list[rec.KeyValue], HeartbeatResult]:
        """Handle one heartbeat; `other_kind` names the kind of a non-streams group holding
        the id. Returns the records written (already applied) and the answer."""
        ctx = _Ctx()
        try:
            validate(req)
            if other_kind is not None:
                raise Fail(ErrorCode.GROUP_ID_NOT_FOUND,
                           f"Group {req.group_id} is not a streams group.")
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return ctx.records, self._leave(ctx, req)
            return ctx.records, self._heartbeat(ctx, req, now)
        except Fail as f:
            return ctx.records, HeartbeatResult(f.error, f.message, req.member_id,
                                                req.member_epoch)

    def _heartbeat(self, ctx: _Ctx, req: HeartbeatRequest, now: int) -> HeartbeatResult:
        gid, mid = req.group_id, req.member_id
        g = self.groups.get(gid)
        joining = req.member_epoch == 0
        if g is None or mid not in g.metadata:
            if not joining:
                raise Fail(ErrorCode.UNKNOWN_MEMBER_ID,
                           f"Member {mid} is not a member of group {gid}.")
            if g is not None and len(g.metadata) >= self.config.max_size:
                raise Fail(ErrorCode.GROUP_MAX_SIZE_REACHED,
                           f"The streams group has reached its maximum capacity of "
                           f"{self.config.max_size} members.")
        if g is not None and mid in g.current and not joining:
            cur = g.current[mid]
            if req.member_epoch > cur.member_epoch:
                raise Fail(ErrorCode.FENCED_MEMBER_EPOCH,
                           f"The streams group member has a greater member epoch "
                           f"({req.member_epoch}) than the one known by the group "
                           f"coordinator ({cur.member_epoch}). The member must abandon all "
                           "its partitions and rejoin.")
            if req.member_epoch < cur.member_epoch and not (
                    req.member_epoch == cur.previous_member_epoch
                    and req.active_tasks is not None
                    and not minus(req.active_tasks, cur.assigned.active)):
                raise Fail(ErrorCode.FENCED_MEMBER_EPOCH,
                           f"The streams group member has a smaller member epoch "
                           f"({req.member_epoch}) than the one known by the group "
                           f"coordinator ({cur.member_epoch}). The member must abandon all "
                           "its partitions and rejoin.")
        bump = False
        topology = g.topology if g is not None else None
        if req.topology is not None:
            problem = check(req.topology)
            if problem is not None:
                raise Fail(ErrorCode.STREAMS_INVALID_TOPOLOGY, problem)
            if topology is not None and req.topology.epoch < topology.epoch:
                raise Fail(ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH,
                           f"Topology epoch {req.topology.epoch} is lower than the group's "
                           f"topology epoch {topology.epoch}.")
            if g is None:
                g = self._new_group(gid)
            if topology is None or req.topology.epoch > topology.epoch:
                self._emit(ctx, rec.topology(gid, req.topology))
                bump = True
        elif g is not None and mid in g.metadata and g.topology is not None \
                and g.metadata[mid].topology_epoch < g.topology.epoch:
            raise Fail(ErrorCode.STREAMS_TOPOLOGY_FENCED,
                       f"The member's topology epoch {g.metadata[mid].topology_epoch} is "
                       f"behind the group's topology epoch {g.topology.epoch}.")
        if g is None:
            g = self._new_group(gid)
        old = g.metadata.get(mid)
        base = old or MemberMetadata()
        meta = MemberMetadata(
            instance_id=req.instance_id if req.instance_id is not None else base.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else base.rack_id,
            client_id=req.client_id, client_host=req.client_host,
            rebalance_timeout_ms=(req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1
                                  else base.rebalance_timeout_ms),
            topology_epoch=(req.topology.epoch if req.topology is not None
                            else base.topology_epoch),
            process_id=req.process_id if req.process_id is not None else base.process_id,
            user_endpoint=(req.user_endpoint if req.user_endpoint is not None
                           else base.user_endpoint),
            client_tags=req.client_tags if req.client_tags is not None else base.client_tags)
        if meta != old:
            self._emit(ctx, rec.member_metadata(gid, mid, meta))
            if old is None or (old.process_id, old.rack_id, old.client_tags,
                               old.topology_epoch) != (meta.process_id, meta.rack_id,
                                                       meta.client_tags, meta.topology_epoch):
                bump = True
            if old is None or old.user_endpoint != meta.user_endpoint:
                self._bump_endpoints(gid)
        configured = self.configured(g)
        digest = self._hash(g, configured)
        ready_epoch = g.topology.epoch if configured is not None and \
            configured.partitions is not None and g.topology is not None else -1
        if bump or digest != g.metadata_hash or g.epoch == 0 \
                or ready_epoch != g.validated_topology_epoch:
            self._emit(ctx, rec.group_epoch(gid, g.epoch + 1, digest, ready_epoch))
        if g.epoch > g.assignment_epoch:
            self._compute_targets(ctx, g, configured, now)
        if req.shutdown_application:
            self.shutdown_requested.add(gid)

        before = g.current.get(mid)
        cur = before if before is not None and not joining else MemberAssignment()
        held = self._held_by_others(g, mid)
        reported = req.active_tasks if not joining else {}
        nxt = reconcile(cur, g.targets.get(mid, EMPTY), g.assignment_epoch, held, reported)
        if nxt != before:
            self._emit(ctx, rec.current(gid, mid, nxt))
            self._bump_endpoints(gid)
        key = (gid, mid)
        self.session_deadlines[key] = now + self.config.session_timeout_ms
        if nxt.state == MemberState.UNREVOKED_TASKS:
            self.revocation_deadlines.setdefault(key, now + max(meta.rebalance_timeout_ms, 0))
        else:
            self.revocation_deadlines.pop(key, None)

        statuses = list(configured.statuses) if configured is not None else []
        if gid in self.shutdown_requested:
            statuses.append(Status(SHUTDOWN_APPLICATION,
                                   "A KafkaStreams instance requested the application to "
                                   "shut down."))
        full = joining or (req.active_tasks is None and before is None)
        changed = nxt != before or full or (req.active_tasks is not None and (
            norm(req.active_tasks) != nxt.assigned.active))
        endpoint_epoch = self.endpoint_epochs.get(gid, 0)
        by_endpoint = None
        if meta.user_endpoint is not None and req.endpoint_information_epoch < endpoint_epoch:
            by_endpoint = self._partitions_by_endpoint(g, configured)
        return HeartbeatResult(
            ErrorCode.NONE, None, mid, nxt.member_epoch, self.config.heartbeat_interval_ms,
            tuple(statuses), nxt.assigned if changed else None, endpoint_epoch, by_endpoint,
            configured.to_create if configured is not None else ())

    def _new_group(self, gid: str) -> StreamsGroup:
        """Kafka 4.4 starts a new streams group at epoch 1 (StreamsGroup's constructor), so the
        join that creates it writes epoch 2, as kafka-streams-groups.sh shows on Kafka."""
        g = self.groups.get(gid)
        if g is None:
            g = self.groups[gid] = StreamsGroup(gid, epoch=NEW_GROUP_EPOCH)
        return g

    def _bump_endpoints(self, gid: str) -> None:
        self.endpoint_epochs[gid] = self.endpoint_epochs.get(gid, 0) + 1

    @staticmethod
    def _held_by_others(g: StreamsGroup, mid: str) -> dict[str, frozenset[int]]:
        held: dict[str, frozenset[int]] = {}
        for other, a in g.current.items():
            if other != mid:
                held = union(held, union(a.assigned.active, a.pending_revocation.active))
        return held

    def _compute_targets(self, ctx: _Ctx, g: StreamsGroup,
                         configured: ConfiguredTopology | None, now: int) -> None:
        tasks = configured.partitions if configured is not None else None
        specs = {m: MemberSpec(md.process_id, g.current.get(m, MemberAssignment()).assigned)
                 for m, md in g.metadata.items()}
        targets = assign(specs, tasks or {}, self.config.num_standby_replicas) if tasks \
            else {m: EMPTY for m in specs}
        for m in sorted(targets):
            if g.targets.get(m) != targets[m]:
                self._emit(ctx, rec.target_member(g.group_id, m, targets[m]))
        self._emit(ctx, rec.target_epoch(g.group_id, g.epoch, now))

    def _partitions_by_endpoint(self, g: StreamsGroup, c: ConfiguredTopology | None,
                                ) -> dict[tuple[str, int], tuple[dict[str, list[int]],
                                                                 dict[str, list[int]]]]:
        """Which input partitions each endpoint serves (interactive queries): a task (s, p)
        covers partition p of each source and repartition source topic of subtopology s."""
        out: dict[tuple[str, int], tuple[dict[str, list[int]], dict[str, list[int]]]] = {}
        if g.topology is None or c is None:
            return out
        inputs = {s.subtopology_id: [*s.source_topics, *(t.name for t in
                                                         s.repartition_source_topics)]
                  for s in g.topology.subtopologies}
        for mid, md in sorted(g.metadata.items()):
            if md.user_endpoint is None:
                continue
            a = g.current.get(mid, MemberAssignment()).assigned
            act, stb = out.setdefault(md.user_endpoint, ({}, {}))
            for tasks, dest in ((a.active, act), (a.standby, stb)):
                for s, ps in tasks.items():
                    for topic in inputs.get(s, []):
                        dest[topic] = sorted(set(dest.get(topic, [])) | set(ps))
        return out

    # -- leaving and fencing -----------------------------------------------------------------

    def _leave(self, ctx: _Ctx, req: HeartbeatRequest) -> HeartbeatResult:
        g = self.groups.get(req.group_id)
        if g is None or req.member_id not in g.metadata:
            raise Fail(ErrorCode.UNKNOWN_MEMBER_ID,
                       f"Member {req.member_id} is not a member of group {req.group_id}.")
        self._remove(ctx, g, req.member_id)
        return HeartbeatResult(ErrorCode.NONE, None, req.member_id, req.member_epoch,
                               self.config.heartbeat_interval_ms)

    def _remove(self, ctx: _Ctx, g: StreamsGroup, mid: str) -> None:
        for r in rec.member_tombstones(g.group_id, mid):
            self._emit(ctx, r)
        self._emit(ctx, rec.group_epoch(g.group_id, g.epoch + 1, g.metadata_hash,
                                        g.validated_topology_epoch))
        self.session_deadlines.pop((g.group_id, mid), None)
        self.revocation_deadlines.pop((g.group_id, mid), None)
        self._bump_endpoints(g.group_id)
        if not g.metadata:
            self.shutdown_requested.discard(g.group_id)

    def expire(self, now: int) -> list[rec.KeyValue]:
        """Fence the members whose session or revocation deadline passed."""
        ctx = _Ctx()
        due = sorted({k for d in (self.session_deadlines, self.revocation_deadlines)
                      for k, t in d.items() if t <= now})
        for gid, mid in due:
            g = self.groups.get(gid)
            if g is not None and mid in g.metadata:
                self._remove(ctx, g, mid)
        return ctx.records

    # -- admin --------------------------------------------------------------------------------

    def describe(self, group_ids: Iterable[str]) -> list[DescribedStreamsGroup]:
        out = []
        for gid in group_ids:
            g = self.groups.get(gid)
            if g is None:
                out.append(DescribedStreamsGroup(gid, ErrorCode.GROUP_ID_NOT_FOUND,
                                                 f"Group {gid} not found."))
                continue
            c = self.configured(g)
            out.append(DescribedStreamsGroup(gid, group=g, state=self.state(g, c).value,
                                             configured=c))
        return out

    def state(self, g: StreamsGroup, c: ConfiguredTopology | None = None) -> GroupState:
        c = c if c is not None else self.configured(g)
        return g.state(c is not None and c.partitions is not None)

    def delete(self, gid: str) -> tuple[ErrorCode, list[rec.KeyValue]]:
        """DeleteGroups: only an empty group goes (NON_EMPTY_GROUP otherwise)."""
        g = self.groups.get(gid)
        if g is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        if g.metadata:
            return ErrorCode.NON_EMPTY_GROUP, []
        ctx = _Ctx()
        for r in rec.group_tombstones(gid):
            self._emit(ctx, r)
        self.groups.pop(gid, None)
        return ErrorCode.NONE, ctx.records
