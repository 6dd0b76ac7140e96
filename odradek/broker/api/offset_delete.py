"""OffsetDelete (key 47), version 0.

- Deletes committed offsets of a group (tombstones in `__consumer_offsets`). An Empty group
  loses any named offsets; a consumer group with members keeps the offsets of topics it is
  subscribed to (GROUP_SUBSCRIBED_TO_TOPIC per partition) and loses the rest; a non-consumer
  group with members answers NON_EMPTY_GROUP. Unknown group: GROUP_ID_NOT_FOUND; unknown
  topic or partition: UNKNOWN_TOPIC_OR_PARTITION per partition.
- Authorization (when an authorizer is on): GROUP DELETE, else GROUP_AUTHORIZATION_FAILED at
  the top level with no topics; then TOPIC READ per topic, else TOPIC_AUTHORIZATION_FAILED on
  each of its partitions, before the existence check (Kafka's KafkaApis).
- Not implemented yet: quotas.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, group_allowed, topic_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.group.model import TopicPartition
from odradek.wire import ErrorCode
from odradek.wire._generated.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse

Resp = OffsetDeleteResponse


async def handle(ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    if not group_allowed(ctx, Op.DELETE, request.group_id):
        return OffsetDeleteResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, topics=[])
    cluster = ctx.cluster
    errors: dict[TopicPartition, ErrorCode] = {}
    known: list[TopicPartition] = []
    for topic in request.topics:
        readable = topic_allowed(ctx, Op.READ, topic.name)
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if not readable:
                errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif cluster.has_partition(*tp):
                known.append(tp)
            else:
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    error, results = await ctx.groups.write(lambda g: g.delete_offsets(request.group_id, known))
    errors.update(results)
    return OffsetDeleteResponse(error_code=error, topics=[
        Resp.OffsetDeleteResponseTopic(name=topic.name, partitions=[
            Resp.OffsetDeleteResponsePartition(partition_index=p.partition_index,
                                               error_code=errors[(topic.name, p.partition_index)])
            for p in topic.partitions if (topic.name, p.partition_index) in errors])
        for topic in request.topics])
