"""DescribeTopicPartitions (key 75), version 0 (KIP-966): topics and their partitions, paged.

What Java's admin client (3.8+) uses for `describeTopics`, answered as Kafka's broker does
(DescribeTopicPartitionsRequestHandler over the metadata cache):
- `topics` empty: every topic; else the named ones (duplicates answered once). Either way
  only names at or after the cursor's topic (`cursor.topic_name`, by string order), sorted.
- At most max(min(`max.request.partition.size.limit`, `response_partition_limit`), 1)
  partitions; the cursor's topic starts at `cursor.partition_index`. A topic cut short sets
  `next_cursor` to its next partition; when the limit is used up exactly, `next_cursor`
  names the next topic at partition 0.
- A named topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION
  for an illegal name), no partitions; unknown names are skipped when listing every topic.
- A cursor whose topic is not among the named topics, or whose partition index is
  negative: INVALID_REQUEST for every named topic (Kafka's error response).
- Each partition: this node leads at epoch 0 and is the only replica and ISR member; no
  eligible leader replicas (empty lists). A partition in a failed log dir has no leader
  (-1) and this node in offline_replicas, as in Metadata.
- Authorization (when an authorizer is on): TOPIC DESCRIBE. Listing every topic hides the
  others; a named one without it is answered after the rest with TOPIC_AUTHORIZATION_FAILED,
  a zero id and no partitions, whether it exists or not, and takes no part in the paging.
- topic_authorized_operations: those the ACLs allow (every topic operation without an
  authorizer), on every answered topic but the unauthorized ones (INT32_MIN).
Not implemented: racks.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, Res, authorized_operations, topic_allowed
from odradek.broker.api.metadata import TOPIC_OPS_ALL
from odradek.broker.cluster import INTERNAL_TOPICS, LEADER_EPOCH, Topic, topic_name_error
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.describe_topic_partitions import (
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
)
from odradek.wire.primitives import ZERO_UUID

Resp = DescribeTopicPartitionsResponse
NO_LEADER = -1
# Kafka's Topic.isInternal, which also counts the share-group state topic.
KAFKA_INTERNAL_TOPICS = INTERNAL_TOPICS | {"__share_group_state"}


def _partitions(ctx: RequestContext, topic: Topic, first: int,
                end: int) -> list[Resp.DescribeTopicPartitionsResponsePartition]:
    node = ctx.node.node_id
    offline = ctx.partitions.offline_partitions(topic.name, topic.partitions)
    return [Resp.DescribeTopicPartitionsResponsePartition(
        error_code=ErrorCode.NONE, partition_index=p,
        leader_id=NO_LEADER if p in offline else node, leader_epoch=LEADER_EPOCH,
        replica_nodes=[node], isr_nodes=[node], eligible_leader_replicas=[],
        last_known_elr=[], offline_replicas=[node] if p in offline else [])
        for p in range(first, end)]


def _error_response(request: DescribeTopicPartitionsRequest,
                    code: ErrorCode) -> DescribeTopicPartitionsResponse:
    return Resp(topics=[Resp.DescribeTopicPartitionsResponseTopic(
        error_code=code, name=want.name, topic_id=ZERO_UUID, is_internal=False, partitions=[])
        for want in request.topics])


async def handle(ctx: RequestContext,
                 request: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
    cursor = request.cursor
    after = cursor.topic_name if cursor is not None else ""
    every = not request.topics
    if every:
        names = {t.name for t in ctx.cluster if t.name >= after}
    else:
        names = {want.name for want in request.topics if want.name >= after}
        if cursor is not None and cursor.topic_name not in names:
            return _error_response(request, ErrorCode.INVALID_REQUEST)
    if cursor is not None and cursor.partition_index < 0:
        return _error_response(request, ErrorCode.INVALID_REQUEST)
    denied: list[Resp.DescribeTopicPartitionsResponseTopic] = []
    if ctx.authorizer is not None:
        hidden = {n for n in names if not topic_allowed(ctx, Op.DESCRIBE, n)}
        names -= hidden
        if not every:  # existence is not disclosed
            denied = [Resp.DescribeTopicPartitionsResponseTopic(
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=n, topic_id=ZERO_UUID,
                is_internal=False, partitions=[]) for n in sorted(hidden)]
    limit = ctx.config.get_int("max.request.partition.size.limit")
    remaining = max(min(limit, request.response_partition_limit), 1)
    topics: list[Resp.DescribeTopicPartitionsResponseTopic] = []
    next_cursor: Resp.Cursor | None = None
    for name in sorted(names):
        if remaining == 0:  # the previous topics took the whole limit
            next_cursor = Resp.Cursor(topic_name=name, partition_index=0)
            break
        topic = ctx.cluster.get(name)
        if topic is None:
            if not every:
                code = (ErrorCode.INVALID_TOPIC_EXCEPTION if topic_name_error(name)
                        else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                topics.append(Resp.DescribeTopicPartitionsResponseTopic(
                    error_code=code, name=name, topic_id=ZERO_UUID,
                    is_internal=name in KAFKA_INTERNAL_TOPICS, partitions=[],
                    topic_authorized_operations=authorized_operations(
                        ctx, Res.TOPIC, name, TOPIC_OPS_ALL)))
            continue
        first = cursor.partition_index if cursor is not None and name == after else 0
        end = min(topic.partitions, first + remaining)
        partitions = _partitions(ctx, topic, first, end)
        topics.append(Resp.DescribeTopicPartitionsResponseTopic(
            error_code=ErrorCode.NONE, name=name, topic_id=topic.topic_id,
            is_internal=topic.internal, partitions=partitions,
            topic_authorized_operations=authorized_operations(ctx, Res.TOPIC, name,
                                                              TOPIC_OPS_ALL)))
        if end < topic.partitions:
            next_cursor = Resp.Cursor(topic_name=name, partition_index=end)
            break
        remaining -= len(partitions)
    return Resp(topics=topics + denied, next_cursor=next_cursor)
