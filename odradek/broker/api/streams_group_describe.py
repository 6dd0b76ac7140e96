"""StreamsGroupDescribe (key 89), versions 0-1: KIP-1071 streams groups.

- Per group: state (Empty, NotReady, Assigning, Reconciling, Stable), group epoch,
  assignment epoch, the topology (epoch; per subtopology its source topics, repartition sink
  topics, changelog and repartition source topics with the partition counts and configs they
  are configured with), and each member's id, epoch, instance id, rack, client id and host,
  topology epoch, process id, user endpoint, client tags, current and target tasks (active,
  standby, warm-up). v1's AssignorName is "sticky".
- A group that does not exist: GROUP_ID_NOT_FOUND "Group g not found."; a classic or consumer
  group: GROUP_ID_NOT_FOUND "Group g is not a streams group.".
- Authorized operations: INT32_MIN unless requested; when requested every group operation.
- Not implemented yet: task offsets and end offsets (always empty), v1's TopologyDescription
  (null: StreamsGroupTopologyDescriptionUpdate is not served), ACLs.
"""

from __future__ import annotations

from odradek.broker.api.describe_groups import AUTHORIZED_OPS_NOT_REQUESTED, GROUP_OPS_ALL
from odradek.broker.context import RequestContext
from odradek.coordinator.streams.assignor import TaskMap, TasksTuple
from odradek.coordinator.streams.coordinator import DescribedStreamsGroup
from odradek.coordinator.streams.model import MemberAssignment
from odradek.coordinator.streams.topology import TopicInfo
from odradek.wire._generated.streams_group_describe import (
    StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
)

Resp = StreamsGroupDescribeResponse
ASSIGNOR = "sticky"


def _ids(m: TaskMap) -> list[Resp.TaskIds]:
    return [Resp.TaskIds(subtopology_id=s, partitions=sorted(m[s])) for s in sorted(m)]


def _assignment(t: TasksTuple) -> Resp.Assignment:
    return Resp.Assignment(active_tasks=_ids(t.active), standby_tasks=_ids(t.standby),
                           warmup_tasks=_ids(t.warmup))


def _info(t: TopicInfo, partitions: int) -> Resp.TopicInfo:
    return Resp.TopicInfo(name=t.name, partitions=partitions,
                          replication_factor=t.replication_factor,
                          topic_configs=[Resp.KeyValue(key=k, value=v) for k, v in t.configs])


def _group(d: DescribedStreamsGroup, ops: int) -> Resp.DescribedGroup:
    g = d.group
    if g is None:
        return Resp.DescribedGroup(error_code=d.error, error_message=d.message,
                                   group_id=d.group_id, group_state="", members=[],
                                   authorized_operations=ops)
    tasks = d.configured.partitions if d.configured is not None else None
    topology = None
    if g.topology is not None:
        topology = Resp.Topology(epoch=g.topology.epoch, subtopologies=[Resp.Subtopology(
            subtopology_id=s.subtopology_id, source_topics=list(s.source_topics),
            repartition_sink_topics=list(s.repartition_sink_topics),
            state_changelog_topics=[_info(t, t.partitions or (tasks or {}).get(
                s.subtopology_id, 0)) for t in s.state_changelog_topics],
            repartition_source_topics=[_info(t, t.partitions) for t in
                                       s.repartition_source_topics])
            for s in g.topology.subtopologies])
    members = []
    for mid, md in sorted(g.metadata.items()):
        cur = g.current.get(mid, MemberAssignment())
        members.append(Resp.Member(
            member_id=mid, member_epoch=cur.member_epoch, instance_id=md.instance_id,
            rack_id=md.rack_id, client_id=md.client_id, client_host=md.client_host,
            topology_epoch=md.topology_epoch, process_id=md.process_id,
            user_endpoint=None if md.user_endpoint is None else Resp.Endpoint(
                host=md.user_endpoint[0], port=md.user_endpoint[1]),
            client_tags=[Resp.KeyValue(key=k, value=v) for k, v in md.client_tags],
            task_offsets=[], task_end_offsets=[], assignment=_assignment(cur.assigned),
            target_assignment=_assignment(g.targets.get(mid, TasksTuple())),
            is_classic=False))
    return Resp.DescribedGroup(
        error_code=d.error, error_message=d.message, group_id=d.group_id, group_state=d.state,
        group_epoch=g.epoch, assignment_epoch=g.assignment_epoch, topology=topology,
        members=members, authorized_operations=ops, assignor_name=ASSIGNOR)


async def handle(ctx: RequestContext,
                 request: StreamsGroupDescribeRequest) -> StreamsGroupDescribeResponse:
    ops = GROUP_OPS_ALL if request.include_authorized_operations else AUTHORIZED_OPS_NOT_REQUESTED
    found = await ctx.groups.read(lambda g: g.describe_streams_groups(request.group_ids))
    return StreamsGroupDescribeResponse(groups=[_group(d, ops) for d in found])
