"""The StreamsGroup* records of `__consumer_offsets` (Kafka's formats, generated structs):

    17  StreamsGroupMetadata                group -> epoch, metadata hash, validated topology epoch
    19  StreamsGroupMemberMetadata          group, member -> process, endpoint, tags, client
    20  StreamsGroupTargetAssignmentMetadata  group -> assignment epoch
    21  StreamsGroupTargetAssignmentMember  group, member -> target tasks
    22  StreamsGroupCurrentMemberAssignment group, member -> epochs, state, tasks, pending
    23  StreamsGroupTopology                group -> the topology

Keys are `int16 record type | struct`, values `int16 0 | struct`; a null value is a tombstone.
`apply` replays one record onto a dict of groups: the live coordinator changes state only
through it, so a replayed group equals the live one by construction.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from odradek.coordinator.group.modern import check_value_version, encode_key, encode_value
from odradek.coordinator.streams.assignor import TaskMap, TasksTuple
from odradek.coordinator.streams.model import (
    MemberAssignment,
    MemberMetadata,
    MemberState,
    StreamsGroup,
)
from odradek.coordinator.streams.topology import (
    CopartitionGroup,
    Subtopology,
    TopicInfo,
    Topology,
)
from odradek.wire._generated.internal_streams import (
    StreamsGroupCurrentMemberAssignmentKey as CurKey,
)
from odradek.wire._generated.internal_streams import (
    StreamsGroupCurrentMemberAssignmentValue as CurVal,
)
from odradek.wire._generated.internal_streams import (
    StreamsGroupMemberMetadataKey as MemKey,
)
from odradek.wire._generated.internal_streams import (
    StreamsGroupMemberMetadataValue as MemVal,
)
from odradek.wire._generated.internal_streams import StreamsGroupMetadataKey as GrpKey
from odradek.wire._generated.internal_streams import StreamsGroupMetadataValue as GrpVal
from odradek.wire._generated.internal_streams import (
    StreamsGroupTargetAssignmentMemberKey as TgtKey,
)
from odradek.wire._generated.internal_streams import (
    StreamsGroupTargetAssignmentMemberValue as TgtVal,
)
from odradek.wire._generated.internal_streams import (
    StreamsGroupTargetAssignmentMetadataKey as TgtMetaKey,
)
from odradek.wire._generated.internal_streams import (
    StreamsGroupTargetAssignmentMetadataValue as TgtMetaVal,
)
from odradek.wire._generated.internal_streams import StreamsGroupTopologyKey as TopoKey
from odradek.wire._generated.internal_streams import StreamsGroupTopologyValue as TopoVal

KeyValue = tuple[bytes, bytes | None]
_I16 = struct.Struct(">h")

GROUP_METADATA = GrpKey.RECORD_TYPE
MEMBER_METADATA = MemKey.RECORD_TYPE
TARGET_METADATA = TgtMetaKey.RECORD_TYPE
TARGET_MEMBER = TgtKey.RECORD_TYPE
CURRENT_ASSIGNMENT = CurKey.RECORD_TYPE
TOPOLOGY = TopoKey.RECORD_TYPE
KEY_TYPES = frozenset({GROUP_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER,
                       CURRENT_ASSIGNMENT, TOPOLOGY})
_KEYS: dict[int, Any] = {GROUP_METADATA: GrpKey, MEMBER_METADATA: MemKey,
                         TARGET_METADATA: TgtMetaKey, TARGET_MEMBER: TgtKey,
                         CURRENT_ASSIGNMENT: CurKey, TOPOLOGY: TopoKey}
_VALUES: dict[int, Any] = {GROUP_METADATA: GrpVal, MEMBER_METADATA: MemVal,
                           TARGET_METADATA: TgtMetaVal, TARGET_MEMBER: TgtVal,
                           CURRENT_ASSIGNMENT: CurVal, TOPOLOGY: TopoVal}


def _key(rtype: int, group: str, member: str | None = None) -> bytes:
    cls = _KEYS[rtype]
    k = cls(group_id=group) if member is None else cls(group_id=group, member_id=member)
    return encode_key(rtype, k)


def _tasks(cls: Any, m: TaskMap) -> list[Any]:
    return [cls(subtopology_id=s, partitions=sorted(m[s])) for s in sorted(m) if m[s]]


def _untasks(ts: list[Any] | None) -> dict[str, frozenset[int]]:
    return {str(t.subtopology_id): frozenset(t.partitions or ())
            for t in ts or () if t.partitions}


def group_epoch(group: str, epoch: int, metadata_hash: int,
                validated_topology_epoch: int) -> KeyValue:
    return (_key(GROUP_METADATA, group), encode_value(GrpVal(
        epoch=epoch, metadata_hash=metadata_hash,
        validated_topology_epoch=validated_topology_epoch)))


def member_metadata(group: str, member: str, m: MemberMetadata) -> KeyValue:
    return (_key(MEMBER_METADATA, group, member), encode_value(MemVal(
        instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
        client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
        topology_epoch=m.topology_epoch, process_id=m.process_id,
        user_endpoint=None if m.user_endpoint is None else MemVal.Endpoint(
            host=m.user_endpoint[0], port=m.user_endpoint[1]),
        client_tags=[MemVal.KeyValue(key=k, value=v) for k, v in m.client_tags])))


def target_member(group: str, member: str, t: TasksTuple) -> KeyValue:
    return (_key(TARGET_MEMBER, group, member), encode_value(TgtVal(
        active_tasks=_tasks(TgtVal.TaskIds, t.active),
        standby_tasks=_tasks(TgtVal.TaskIds, t.standby),
        warmup_tasks=_tasks(TgtVal.TaskIds, t.warmup))))


def target_epoch(group: str, epoch: int, now: int) -> KeyValue:
    return (_key(TARGET_METADATA, group),
            encode_value(TgtMetaVal(assignment_epoch=epoch, assignment_timestamp=now)))


def current(group: str, member: str, a: MemberAssignment) -> KeyValue:
    T = CurVal.TaskIds
    return (_key(CURRENT_ASSIGNMENT, group, member), encode_value(CurVal(
        member_epoch=a.member_epoch, previous_member_epoch=a.previous_member_epoch,
        state=int(a.state),
        active_tasks=_tasks(T, a.assigned.active), standby_tasks=_tasks(T, a.assigned.standby),
        warmup_tasks=_tasks(T, a.assigned.warmup),
        active_tasks_pending_revocation=_tasks(T, a.pending_revocation.active),
        standby_tasks_pending_revocation=_tasks(T, a.pending_revocation.standby),
        warmup_tasks_pending_revocation=_tasks(T, a.pending_revocation.warmup))))


def topology(group: str, t: Topology) -> KeyValue:
    def info(i: TopicInfo) -> Any:
        return TopoVal.TopicInfo(name=i.name, partitions=i.partitions,
                                 replication_factor=i.replication_factor,
                                 topic_configs=[TopoVal.TopicConfig(key=k, value=v)
                                                for k, v in i.configs])
    subs = [TopoVal.Subtopology(
        subtopology_id=s.subtopology_id, source_topics=list(s.source_topics),
        source_topic_regex=list(s.source_topic_regex),
        state_changelog_topics=[info(i) for i in s.state_changelog_topics],
        repartition_sink_topics=list(s.repartition_sink_topics),
        repartition_source_topics=[info(i) for i in s.repartition_source_topics],
        copartition_groups=[TopoVal.CopartitionGroup(
            source_topics=list(g.source_topics), source_topic_regex=list(g.source_topic_regex),
            repartition_source_topics=list(g.repartition_source_topics))
            for g in s.copartition_groups]) for s in t.subtopologies]
    return (_key(TOPOLOGY, group), encode_value(TopoVal(epoch=t.epoch, subtopologies=subs)))


def tombstone(rtype: int, group: str, member: str | None = None) -> KeyValue:
    return (_key(rtype, group, member), None)


def member_tombstones(group: str, member: str) -> list[KeyValue]:
    """Removing a member: its current assignment, target, then metadata (Kafka's order)."""
    return [tombstone(CURRENT_ASSIGNMENT, group, member), tombstone(TARGET_MEMBER, group, member),
            tombstone(MEMBER_METADATA, group, member)]


def group_tombstones(group: str) -> list[KeyValue]:
    return [tombstone(TARGET_METADATA, group), tombstone(TOPOLOGY, group),
            tombstone(GROUP_METADATA, group)]


def record_type(key: bytes | memoryview) -> int:
    rtype: int = _I16.unpack_from(key, 0)[0]
    return rtype


def _topology(v: Any) -> Topology:
    def info(i: Any) -> TopicInfo:
        return TopicInfo(str(i.name), int(i.partitions), int(i.replication_factor),
                         tuple((str(c.key), str(c.value)) for c in i.topic_configs or ()))
    return Topology(int(v.epoch), tuple(Subtopology(
        str(s.subtopology_id), tuple(s.source_topics or ()), tuple(s.source_topic_regex or ()),
        tuple(info(i) for i in s.state_changelog_topics or ()),
        tuple(s.repartition_sink_topics or ()),
        tuple(info(i) for i in s.repartition_source_topics or ()),
        tuple(CopartitionGroup(tuple(g.source_topics or ()), tuple(g.source_topic_regex or ()),
                               tuple(g.repartition_source_topics or ()))
              for g in s.copartition_groups or ())) for s in v.subtopologies or ()))


def apply(groups: dict[str, StreamsGroup], key: bytes | memoryview,
          value: bytes | memoryview | None) -> None:
    """Replay one StreamsGroup* record (ProtocolError on a malformed one)."""
    rtype = record_type(key)
    k, _ = _KEYS[rtype].decode(key, rtype, 2)
    gid = str(k.group_id)
    member = str(getattr(k, "member_id", ""))
    if value is None:
        g = groups.get(gid)
        if g is None:
            return
        if rtype == GROUP_METADATA:
            del groups[gid]
        elif rtype == MEMBER_METADATA:
            g.metadata.pop(member, None)
        elif rtype == CURRENT_ASSIGNMENT:
            g.current.pop(member, None)
        elif rtype == TARGET_MEMBER:
            g.targets.pop(member, None)
        elif rtype == TOPOLOGY:
            g.topology = None
        elif rtype == TARGET_METADATA:
            g.assignment_epoch = 0
        return
    check_value_version(value, f"streams group record {rtype}")
    v, _ = _VALUES[rtype].decode(value, 0, 2)
    g = groups.setdefault(gid, StreamsGroup(gid))
    if rtype == GROUP_METADATA:
        g.epoch, g.metadata_hash = int(v.epoch), int(v.metadata_hash)
        g.validated_topology_epoch = int(v.validated_topology_epoch)
    elif rtype == MEMBER_METADATA:
        ep = v.user_endpoint
        g.metadata[member] = MemberMetadata(
            v.instance_id, v.rack_id, str(v.client_id), str(v.client_host),
            int(v.rebalance_timeout_ms), int(v.topology_epoch), str(v.process_id),
            None if ep is None else (str(ep.host), int(ep.port)),
            tuple((str(t.key), str(t.value)) for t in v.client_tags or ()))
    elif rtype == TARGET_METADATA:
        g.assignment_epoch = int(v.assignment_epoch)
    elif rtype == TARGET_MEMBER:
        g.targets[member] = TasksTuple(_untasks(v.active_tasks), _untasks(v.standby_tasks),
                                       _untasks(v.warmup_tasks))
    elif rtype == CURRENT_ASSIGNMENT:
        g.current[member] = MemberAssignment(
            int(v.member_epoch), int(v.previous_member_epoch), MemberState(int(v.state)),
            TasksTuple(_untasks(v.active_tasks), _untasks(v.standby_tasks),
                       _untasks(v.warmup_tasks)),
            TasksTuple(_untasks(v.active_tasks_pending_revocation),
                       _untasks(v.standby_tasks_pending_revocation),
                       _untasks(v.warmup_tasks_pending_revocation)))
    elif rtype == TOPOLOGY:
        g.topology = _topology(v)


def replay(records: list[KeyValue], groups: Mapping[str, StreamsGroup] | None = None,
           ) -> dict[str, StreamsGroup]:
    out = dict(groups or {})
    for k, v in records:
        apply(out, k, v)
    return out


def group_of(key: bytes | memoryview) -> str:
    rtype = record_type(key)
    k, _ = _KEYS[rtype].decode(key, rtype, 2)
    return str(k.group_id)
