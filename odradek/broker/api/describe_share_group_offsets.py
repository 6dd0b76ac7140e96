"""DescribeShareGroupOffsets (key 90), versions 0-1: a share group's start offsets (KIP-932).

- Per group: GROUP_ID_NOT_FOUND for an unknown id or one of a classic or consumer group. Topics
  null: every topic whose share-partitions the group initialised; otherwise the named ones
  (an unknown name is left out).
- Per share-partition: the share-partition start offset (SPSO) and leader epoch as
  `__share_group_state` holds them (read straight from this node's share coordinator: Kafka's
  group coordinator asks it with ReadShareGroupStateSummary), and (v1, KIP-1226) the lag:
  high watermark - SPSO - the records past the SPSO whose delivery is complete. A
  share-partition without state, or reset to -1 by AlterShareGroupOffsets and not fetched
  since, answers start offset -1 and lag -1, as Kafka.
- Authorization (when an authorizer is on): GROUP DESCRIBE per group, else that group's
  GROUP_AUTHORIZATION_FAILED; TOPIC DESCRIBE per topic: a named topic without it answers
  TOPIC_AUTHORIZATION_FAILED on each partition (existence not checked), and listing every
  topic leaves it out.
"""

from __future__ import annotations

import uuid

from odradek.broker.api._auth import Op, group_allowed, topic_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.group.coordinator import GroupCoordinator
from odradek.coordinator.share.coordinator import ShareCoordinator
from odradek.coordinator.share.partition import RecordState
from odradek.coordinator.share.state import SharePartitionKey
from odradek.wire import ErrorCode
from odradek.wire._generated.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
)

Resp = DescribeShareGroupOffsetsResponse
Req = DescribeShareGroupOffsetsRequest


def _wanted(g: GroupCoordinator, ctx: RequestContext, group: Req.DescribeShareGroupOffsetsRequestGroup,
            ) -> tuple[ErrorCode, str | None, list[tuple[str, uuid.UUID | None, list[int]]]]:
    """The topics to describe; a None id is a named topic the principal may not describe."""
    if not group_allowed(ctx, Op.DESCRIBE, group.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, None, []
    error, message, sg = g.share.describe(group.group_id)
    if sg is None:
        return error, message, []
    out: list[tuple[str, uuid.UUID | None, list[int]]] = []
    if group.topics is None:
        for topic_id, (name, parts) in sorted(sg.state_partitions.initialized.items(),
                                              key=lambda kv: kv[1][0]):
            if topic_allowed(ctx, Op.DESCRIBE, name):
                out.append((name, topic_id, sorted(parts)))
    else:
        for t in group.topics:
            if not topic_allowed(ctx, Op.DESCRIBE, t.topic_name):
                out.append((t.topic_name, None, sorted(t.partitions)))
                continue
            topic = ctx.cluster.get(t.topic_name)
            if topic is not None:
                out.append((t.topic_name, topic.topic_id, sorted(t.partitions)))
    return ErrorCode.NONE, None, out


def _summary(ctx: RequestContext, s: ShareCoordinator, key: SharePartitionKey, name: str,
             ) -> tuple[int, int, int]:
    """(start offset, leader epoch, lag) of one share-partition."""
    state = s.store.read_state(key)
    if state is None:
        return -1, 0, -1
    sp = s.partitions.get(key)
    if sp is None and state.start_offset < 0:
        return -1, state.leader_epoch, -1
    start = sp.start_offset if sp is not None else state.start_offset
    if sp is not None:
        complete = sp.delivery_complete_count()
    elif state.delivery_complete_count >= 0:
        complete = state.delivery_complete_count
    else:
        complete = sum(b.last_offset - max(b.first_offset, start) + 1 for b in state.batches
                       if b.last_offset >= start and RecordState(b.delivery_state).is_terminal)
    plog = ctx.partitions.log(name, key.partition)
    lag = -1 if plog is None else max(plog.high_watermark - start - complete, 0)
    return start, state.leader_epoch, lag


async def handle(ctx: RequestContext, request: DescribeShareGroupOffsetsRequest,
                 ) -> DescribeShareGroupOffsetsResponse:
    wanted = await ctx.groups.read(lambda g: [(grp.group_id, _wanted(g, ctx, grp))
                                               for grp in request.groups])
    groups = []
    for gid, (error, message, topics) in wanted:
        if error != ErrorCode.NONE:
            groups.append(Resp.DescribeShareGroupOffsetsResponseGroup(
                group_id=gid, error_code=error, error_message=message))
            continue
        out_topics = []
        for name, topic_id, parts in topics:
            if topic_id is None:
                out_topics.append(Resp.DescribeShareGroupOffsetsResponseTopic(
                    topic_name=name, topic_id=uuid.UUID(int=0), partitions=[
                        Resp.DescribeShareGroupOffsetsResponsePartition(
                            partition_index=p, start_offset=-1, lag=-1,
                            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                        for p in parts]))
                continue
            keys = [SharePartitionKey(gid, topic_id, p) for p in parts]
            summaries = await ctx.share.read(lambda s, keys=keys, name=name: [  # type: ignore[misc]
                (k.partition, _summary(ctx, s, k, name)) for k in keys])
            out_topics.append(Resp.DescribeShareGroupOffsetsResponseTopic(
                topic_name=name, topic_id=topic_id, partitions=[
                    Resp.DescribeShareGroupOffsetsResponsePartition(
                        partition_index=p, start_offset=start, leader_epoch=epoch, lag=lag)
                    for p, (start, epoch, lag) in summaries]))
        groups.append(Resp.DescribeShareGroupOffsetsResponseGroup(group_id=gid,
                                                                   topics=out_topics))
    return DescribeShareGroupOffsetsResponse(groups=groups)
