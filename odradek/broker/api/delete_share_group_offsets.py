"""DeleteShareGroupOffsets (key 92), version 0: forget a share group's state for some topics
(KIP-932; `kafka-share-groups.sh --delete-offsets`).

- Top level: GROUP_ID_NOT_FOUND for an unknown id or one of a classic or consumer group;
  NON_EMPTY_GROUP while the share group has members ("The group is not empty.").
- Per topic: UNKNOWN_TOPIC_OR_PARTITION for an unknown name; otherwise the states of the
  group's share-partitions of the topic are deleted from `__share_group_state` (tombstones,
  Kafka's DeleteShareGroupState) and the topic leaves the group's share-partition metadata,
  so a later subscription initialises it again from `share.auto.offset.reset`.
- Authorization (when an authorizer is on), as Kafka 4.4: GROUP DELETE, else the top-level
  GROUP_AUTHORIZATION_FAILED; TOPIC READ per topic, else that topic's
  TOPIC_AUTHORIZATION_FAILED, before the existence check.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, group_allowed, topic_allowed
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.delete_share_group_offsets import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
)

Resp = DeleteShareGroupOffsetsResponse


async def handle(ctx: RequestContext,
                 request: DeleteShareGroupOffsetsRequest) -> DeleteShareGroupOffsetsResponse:
    gid = request.group_id
    if not group_allowed(ctx, Op.DELETE, gid):
        return DeleteShareGroupOffsetsResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error, message, group = await ctx.groups.read(lambda g: g.share.describe(gid))
    if group is None:
        return DeleteShareGroupOffsetsResponse(error_code=error, error_message=message)
    if group.members:
        return DeleteShareGroupOffsetsResponse(error_code=ErrorCode.NON_EMPTY_GROUP,
                                               error_message="The group is not empty.")
    out, found = [], set()
    for t in request.topics:
        if not topic_allowed(ctx, Op.READ, t.topic_name):
            out.append(Resp.DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        topic = ctx.cluster.get(t.topic_name)
        if topic is None:
            out.append(Resp.DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                error_message="This server does not host this topic-partition."))
            continue
        found.add(topic.topic_id)
        tid = topic.topic_id
        await ctx.share.write(lambda s, tid=tid: s.delete_topic_state(gid, tid))  # type: ignore[misc]
        out.append(Resp.DeleteShareGroupOffsetsResponseTopic(topic_name=t.topic_name,
                                                             topic_id=tid))
    if found:
        code = await ctx.groups.wait(lambda g: g.share_forget_topics(gid, found))
        if code != ErrorCode.NONE:
            return DeleteShareGroupOffsetsResponse(error_code=code)
    return DeleteShareGroupOffsetsResponse(responses=out)
