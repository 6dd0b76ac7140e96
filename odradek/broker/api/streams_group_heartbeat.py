"""StreamsGroupHeartbeat (key 88), versions 0-1: KIP-1071 streams groups (Kafka Streams
with `group.protocol=streams`).

- Join (member epoch 0, with the topology), heartbeat, leave (-1, and -2 for a static
  member) as Kafka's group coordinator (logic in `coordinator/streams/`): the topology is
  checked (STREAMS_INVALID_TOPOLOGY) and configured against the topics: while source topics
  are missing, internal topics are missing or topics are not copartitioned the response
  carries MISSING_SOURCE_TOPICS / MISSING_INTERNAL_TOPICS / INCORRECTLY_PARTITIONED_TOPICS
  statuses and no tasks. The missing internal topics (repartition and changelog, with the
  partition counts derived from the source topics and the configs the topology declares)
  are created by this handler right after the heartbeat, so the next one finds them.
- The sticky assignor gives every task to one member (`group.streams.num.standby.replicas`
  standbys on other processes); members reconcile towards their target, revoking first.
  The response carries the member epoch, the heartbeat interval
  (`group.streams.heartbeat.interval.ms`), the tasks when they changed, and the partitions
  each user endpoint serves when the member's endpoint-information epoch is behind.
- Errors as Kafka: INVALID_REQUEST (Kafka's messages), STREAMS_INVALID_TOPOLOGY,
  STREAMS_INVALID_TOPOLOGY_EPOCH (a join with a topology epoch below the group's),
  STREAMS_TOPOLOGY_FENCED (a member on an older topology epoch), FENCED_MEMBER_EPOCH,
  UNKNOWN_MEMBER_ID, GROUP_MAX_SIZE_REACHED, GROUP_ID_NOT_FOUND (the id is a classic or
  consumer group), NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE when the write fails.
  Session timeout `group.streams.session.timeout.ms`.
- State is written to `__consumer_offsets` as Kafka's StreamsGroup* records and rebuilt
  from them on start.
- Not implemented yet: static membership (instance ids are stored, not used), warm-up
  tasks and task-lag (TaskOffsets/TaskEndOffsets are ignored), rack/client-tag aware
  standbys, v1 TopologyDescriptionRequired (always false: the topology description of
  StreamsGroupTopologyDescriptionUpdate is not served).
- Authorization (when an authorizer is on), as Kafka 4.4: GROUP READ, else
  GROUP_AUTHORIZATION_FAILED; then TOPIC DESCRIBE on every topic the topology names
  (source, repartition sink and source, changelog), else TOPIC_AUTHORIZATION_FAILED. A
  missing internal topic is created only with CLUSTER CREATE or TOPIC CREATE on it; the
  others are not created and MISSING_INTERNAL_TOPICS says "Unauthorized to CREATE on topics
  a,b." (appended to its detail after "; "), as Kafka 4.4 (KAFKA-19412). Not matched yet:
  for a topology that is both invalid and names a topic the member may not describe,
  Kafka answers STREAMS_INVALID_TOPOLOGY, here TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import structlog

from odradek.broker.api._auth import Op, cluster_allowed, group_allowed, topic_allowed
from odradek.broker.api.join_group import client_host
from odradek.broker.cluster import ClusterError
from odradek.broker.context import RequestContext
from odradek.coordinator.streams.assignor import TaskMap
from odradek.coordinator.streams.coordinator import HeartbeatRequest, HeartbeatResult
from odradek.coordinator.streams.topology import (
    MISSING_INTERNAL_TOPICS,
    CopartitionGroup,
    Subtopology,
    TopicInfo,
    Topology,
)
from odradek.wire import ErrorCode
from odradek.wire._generated.streams_group_heartbeat import (
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
)

Req = StreamsGroupHeartbeatRequest
Resp = StreamsGroupHeartbeatResponse
log = structlog.get_logger("odradek.streams")


def _tasks(ts: list[Req.TaskIds] | None) -> dict[str, frozenset[int]] | None:
    if ts is None:
        return None
    return {t.subtopology_id: frozenset(t.partitions or ()) for t in ts}


def _info(t: Req.TopicInfo) -> TopicInfo:
    return TopicInfo(t.name, t.partitions, t.replication_factor,
                     tuple((c.key, c.value) for c in t.topic_configs or ()))


def _topology(t: Req.Topology | None) -> Topology | None:
    if t is None:
        return None
    return Topology(t.epoch, tuple(Subtopology(
        s.subtopology_id, tuple(s.source_topics or ()), tuple(s.source_topic_regex or ()),
        tuple(_info(i) for i in s.state_changelog_topics or ()),
        tuple(s.repartition_sink_topics or ()),
        tuple(_info(i) for i in s.repartition_source_topics or ()),
        tuple(CopartitionGroup(tuple(g.source_topics or ()), tuple(g.source_topic_regex or ()),
                               tuple(g.repartition_source_topics or ()))
              for g in s.copartition_groups or ()))
        for s in t.subtopologies or ()))


def _create_internal(ctx: RequestContext, result: HeartbeatResult, group_id: str) -> list[str]:
    """Create the internal topics the coordinator asked for (it never touches the cluster);
    the names the principal may not CREATE (neither CLUSTER nor TOPIC CREATE) are left out
    and returned, as Kafka 4.4's KafkaApis does (KAFKA-19412)."""
    may_create_all = ctx.authorizer is None or cluster_allowed(ctx, Op.CREATE)
    unauthorized: list[str] = []
    for t in result.create_topics:
        if t.name in ctx.cluster.topics or t.partitions <= 0:
            continue
        if not may_create_all and not topic_allowed(ctx, Op.CREATE, t.name):
            unauthorized.append(t.name)
            continue
        try:
            ctx.cluster.create_topic(t.name, t.partitions, dict(t.configs))
        except ClusterError as e:
            log.warning("streams internal topic not created", group=group_id, topic=t.name,
                        error=e.message)
            continue
        log.info("streams internal topic created", group=group_id, topic=t.name,
                 partitions=t.partitions)
    if unauthorized:
        log.info("streams internal topics not created: no CREATE", group=group_id,
                 topics=unauthorized)
    return unauthorized


def _statuses(result: HeartbeatResult, unauthorized: list[str]) -> list[Resp.Status]:
    """The coordinator's statuses; internal topics left uncreated for want of CREATE are
    added to MISSING_INTERNAL_TOPICS' detail (or make that status), as Kafka 4.4's."""
    out = [Resp.Status(status_code=s.code, status_detail=s.detail) for s in result.statuses]
    if unauthorized:
        note = f"Unauthorized to CREATE on topics {','.join(unauthorized)}."
        missing = next((s for s in out if s.status_code == MISSING_INTERNAL_TOPICS), None)
        if missing is not None:
            missing.status_detail = f"{missing.status_detail}; {note}"
        else:
            out.append(Resp.Status(status_code=MISSING_INTERNAL_TOPICS, status_detail=note))
    return out


def _resp_tasks(m: TaskMap) -> list[Resp.TaskIds]:
    return [Resp.TaskIds(subtopology_id=s, partitions=sorted(m[s])) for s in sorted(m)]


def _topology_denied(ctx: RequestContext, request: StreamsGroupHeartbeatRequest) -> bool:
    """Whether the topology names a topic the principal may not DESCRIBE (Kafka 4.4)."""
    if ctx.authorizer is None or request.topology is None:
        return False
    return any(not topic_allowed(ctx, Op.DESCRIBE, name)
               for s in request.topology.subtopologies or ()
               for name in (*s.source_topics, *s.repartition_sink_topics,
                            *(t.name for t in s.repartition_source_topics),
                            *(t.name for t in s.state_changelog_topics)))


async def handle(ctx: RequestContext,
                 request: StreamsGroupHeartbeatRequest) -> StreamsGroupHeartbeatResponse:
    if not group_allowed(ctx, Op.READ, request.group_id):
        return StreamsGroupHeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if _topology_denied(ctx, request):
        return StreamsGroupHeartbeatResponse(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    ep = request.user_endpoint
    req = HeartbeatRequest(
        group_id=request.group_id, member_id=request.member_id,
        member_epoch=request.member_epoch,
        endpoint_information_epoch=request.endpoint_information_epoch,
        instance_id=request.instance_id, rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        topology=_topology(request.topology),
        active_tasks=_tasks(request.active_tasks), standby_tasks=_tasks(request.standby_tasks),
        warmup_tasks=_tasks(request.warmup_tasks), process_id=request.process_id,
        user_endpoint=None if ep is None else (ep.host, ep.port),
        client_tags=(None if request.client_tags is None
                     else tuple((kv.key, kv.value) for kv in request.client_tags)),
        shutdown_application=request.shutdown_application,
        client_id=ctx.client_id or "", client_host=client_host(ctx.client.address))
    result = await ctx.groups.wait(lambda g: g.streams_group_heartbeat(req))
    if result.error:
        log.info("streams group heartbeat refused", group=req.group_id, member=req.member_id,
                 error=result.error.name, message=result.message)
    unauthorized = _create_internal(ctx, result, req.group_id) if result.create_topics else []
    tasks = result.tasks
    by_endpoint = None
    if result.partitions_by_endpoint is not None:
        by_endpoint = [Resp.EndpointToPartitions(
            user_endpoint=Resp.Endpoint(host=host, port=port),
            active_partitions=[Resp.TopicPartition(topic=t, partitions=ps)
                               for t, ps in sorted(act.items())],
            standby_partitions=[Resp.TopicPartition(topic=t, partitions=ps)
                                for t, ps in sorted(stb.items())])
            for (host, port), (act, stb) in sorted(result.partitions_by_endpoint.items())]
    return StreamsGroupHeartbeatResponse(
        error_code=result.error, error_message=result.message, member_id=result.member_id,
        member_epoch=result.member_epoch, heartbeat_interval_ms=result.heartbeat_interval_ms,
        acceptable_recovery_lag_legacy=10_000, acceptable_recovery_lag=10_000,
        task_offset_interval_ms=60_000,
        status=None if result.error else _statuses(result, unauthorized),
        active_tasks=None if tasks is None else _resp_tasks(tasks.active),
        standby_tasks=None if tasks is None else _resp_tasks(tasks.standby),
        warmup_tasks=None if tasks is None else _resp_tasks(tasks.warmup),
        endpoint_information_epoch=result.endpoint_information_epoch,
        partitions_by_user_endpoint=by_endpoint)
