"""AlterShareGroupOffsets (key 91), version 0: set a share group's start offsets (KIP-932;
`kafka-share-groups.sh --reset-offsets`).

- Top level: GROUP_ID_NOT_FOUND for the id of a classic, consumer or streams group;
  NON_EMPTY_GROUP while the share group has members ("The group is not empty."), as Kafka.
  An id no group has yet gets an empty share group (Kafka 4.4), so start offsets can be set
  before the first member joins; the altered share-partitions count as initialised, so a
  member joining later starts at them, not at share.auto.offset.reset.
- Per partition: UNKNOWN_TOPIC_OR_PARTITION for an unknown topic or partition; otherwise the
  share-partition gets a fresh state in `__share_group_state` at the next state epoch,
  starting at the given offset (nothing in flight, delivery counts gone), and is rebuilt
  from it at the next ShareFetch.
- A start offset of -1 (Kafka 4.4's meaning): the share-partition's state is reset to
  uninitialised; DescribeShareGroupOffsets shows start offset -1 and lag -1 until the next
  ShareFetch initialises it by `share.auto.offset.reset`. Other negative offsets get
  INVALID_REQUEST (Kafka 4.4 stores them unchecked).
- Authorization (when an authorizer is on), as Kafka 4.4: GROUP READ, else the top-level
  GROUP_AUTHORIZATION_FAILED; TOPIC READ per topic, else TOPIC_AUTHORIZATION_FAILED on each
  of its partitions, before the existence check.
"""

from __future__ import annotations

import uuid

from odradek.broker.api._auth import Op, group_allowed, topic_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.share.state import SharePartitionKey
from odradek.wire import ErrorCode
from odradek.wire._generated.alter_share_group_offsets import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
)

Resp = AlterShareGroupOffsetsResponse


async def handle(ctx: RequestContext,
                 request: AlterShareGroupOffsetsRequest) -> AlterShareGroupOffsetsResponse:
    gid = request.group_id
    if not group_allowed(ctx, Op.READ, gid):
        return AlterShareGroupOffsetsResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    error, message, group = await ctx.groups.read(lambda g: g.share.describe(gid))
    taken = await ctx.groups.read(lambda g: g.share.other_group(gid))
    if group is None and taken:
        return AlterShareGroupOffsetsResponse(error_code=error, error_message=message)
    if group is not None and group.members:
        return AlterShareGroupOffsetsResponse(error_code=ErrorCode.NON_EMPTY_GROUP,
                                              error_message="The group is not empty.")
    now = ctx.clock.now_ms()
    topics = []
    altered: dict[uuid.UUID, tuple[str, frozenset[int]]] = {}
    for t in request.topics:
        topic = ctx.cluster.get(t.topic_name)
        parts = []
        readable = topic_allowed(ctx, Op.READ, t.topic_name)
        for p in t.partitions:
            if not readable:
                parts.append(Resp.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index,
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            if topic is None or not 0 <= p.partition_index < topic.partitions:
                parts.append(Resp.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index,
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    error_message="This server does not host this topic-partition."))
                continue
            if p.start_offset < -1:
                parts.append(Resp.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=ErrorCode.INVALID_REQUEST,
                    error_message="The start offset must not be negative."))
                continue
            key = SharePartitionKey(gid, topic.topic_id, p.partition_index)
            code = await ctx.share.wait(
                lambda s, key=key, start=p.start_offset: s.alter_start_offset(key, start, now))  # type: ignore[misc]
            parts.append(Resp.AlterShareGroupOffsetsResponsePartition(
                partition_index=p.partition_index, error_code=code))
            if code == ErrorCode.NONE:
                name, done = altered.get(topic.topic_id, (topic.name, frozenset()))
                altered[topic.topic_id] = (name, done | {p.partition_index})
        topics.append(Resp.AlterShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name,
            topic_id=topic.topic_id if topic and readable else uuid.UUID(int=0),
            partitions=parts))
    if altered or group is None:
        code = await ctx.groups.wait(lambda g: g.share_offsets_altered(gid, altered))
        if code != ErrorCode.NONE:  # the group's record could not be written
            return AlterShareGroupOffsetsResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    return AlterShareGroupOffsetsResponse(responses=topics)
