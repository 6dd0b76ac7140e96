"""StreamsGroupDescribe (key 89), versions 0-1: KIP-1071 streams groups.

- Per group: state (Empty, NotReady, Assigning, Reconciling, Stable), group epoch,
  assignment epoch, the topology (epoch; per subtopology its source topics, repartition sink
  topics, changelog and repartition source topics with the partition counts and configs they
  are configured with), and each member's id, epoch, instance id, rack, client id and host,
  topology epoch, process id, user endpoint, client tags, current and target tasks (active,
  standby, warm-up). v1's AssignorName is "sticky".
- A group that does not exist: GROUP_ID_NOT_FOUND "Group g not found."; a classic or consumer
  group: GROUP_ID_NOT_FOUND "Group g is not a streams group.".
- Authorization (when an authorizer is on), as Kafka 4.4: a group without GROUP DESCRIBE is
  answered first with GROUP_AUTHORIZATION_FAILED; a group whose topology names a topic
  (source, repartition sink or source, changelog) without TOPIC DESCRIBE becomes
  TOPIC_AUTHORIZATION_FAILED with Kafka's message, no members and no topology.
- Authorized operations: INT32_MIN unless requested; when requested, for groups found, those
  the ACLs allow (every group operation without an authorizer).
- Not implemented yet: task offsets and end offsets (always empty), v1's TopologyDescription
  (null: StreamsGroupTopologyDescriptionUpdate is not served).
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, Res, authorized_operations, group_allowed, topic_allowed
from odradek.broker.api.describe_groups import AUTHORIZED_OPS_NOT_REQUESTED, GROUP_OPS_ALL
from odradek.broker.context import RequestContext
from odradek.coordinator.streams.assignor import TaskMap, TasksTuple
from odradek.coordinator.streams.coordinator import DescribedStreamsGroup
from odradek.coordinator.streams.model import MemberAssignment
from odradek.coordinator.streams.topology import TopicInfo
from odradek.wire import ErrorCode
from odradek.wire._generated.streams_group_describe import (
    StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
)

Resp = StreamsGroupDescribeResponse
ASSIGNOR = "sticky"
TOPICS_DENIED = "The described group uses topics that the client is not authorized to describe."


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
    groups = [Resp.DescribedGroup(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=g)
              for g in request.group_ids if not group_allowed(ctx, Op.DESCRIBE, g)]
    wanted = [g for g in request.group_ids if group_allowed(ctx, Op.DESCRIBE, g)]
    found = await ctx.groups.read(lambda g: g.describe_streams_groups(wanted))
    for d in found:
        ops = AUTHORIZED_OPS_NOT_REQUESTED
        if request.include_authorized_operations and not d.error:
            ops = authorized_operations(ctx, Res.GROUP, d.group_id, GROUP_OPS_ALL)
        described = _group(d, ops)
        if ctx.authorizer is not None and described.topology is not None and any(
                not topic_allowed(ctx, Op.DESCRIBE, name)
                for s in described.topology.subtopologies or ()
                for name in (*s.source_topics, *s.repartition_sink_topics,
                             *(t.name for t in s.repartition_source_topics),
                             *(t.name for t in s.state_changelog_topics))):
            described = Resp.DescribedGroup(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                            error_message=TOPICS_DENIED, group_id=d.group_id,
                                            members=[], topology=None)
        groups.append(described)
    return StreamsGroupDescribeResponse(groups=groups)
