"""OffsetDelete (key 47), version 0.

- Deletes committed offsets of a group (tombstones in `__consumer_offsets`). An Empty group
  loses any named offsets; a consumer group with members keeps the offsets of topics it is
  subscribed to (GROUP_SUBSCRIBED_TO_TOPIC per partition) and loses the rest; a non-consumer
  group with members answers NON_EMPTY_GROUP. Unknown group: GROUP_ID_NOT_FOUND; unknown
  topic or partition: UNKNOWN_TOPIC_OR_PARTITION per partition.
- Not implemented yet: ACLs, quotas.
"""

from __future__ import annotations

from odradek.broker.context import RequestContext
from odradek.coordinator.group.model import TopicPartition
from odradek.wire import ErrorCode
from odradek.wire._generated.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse

Resp = OffsetDeleteResponse


async def handle(ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    cluster = ctx.cluster
    errors: dict[TopicPartition, ErrorCode] = {}
    known: list[TopicPartition] = []
    for topic in request.topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if cluster.has_partition(*tp):
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
