"""OffsetFetch (key 9), versions 0-10.

- Committed offsets (with metadata and, v5+, leader epoch) from the group coordinator; -1
  and empty metadata where nothing is committed, for any group or topic name, as Kafka
  answers. Topics null (v2+) means every partition the group has an offset for.
- v0-7 ask for one group; v8+ batch several groups, each with its own error code.
- require_stable (v7+): a partition with a commit still being written (or, once transactions
  land, a pending transactional commit) answers UNSTABLE_OFFSET_COMMIT so the client retries.
- v0 (ZooKeeper-stored in old Kafka) is served from the same store.
- v9 member id and epoch are checked for KIP-848 consumer groups (group-level
  UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH; a null member id with epoch -1 is an admin read);
  classic groups ignore them, as Kafka does.
- v10 names topics by id only (KIP-848's topic ids): ids are resolved through the cluster's
  topics and the response carries ids, no names. An unknown id (the zero id, or a deleted
  topic's) answers UNKNOWN_TOPIC_ID on each asked partition (offset -1, metadata ""), after
  the known topics, as Kafka 4.4 orders them; a known topic's partition without a commit is
  -1 with no error, whatever the partition. Topics null lists every committed topic by its
  current id (offsets of a deleted topic are dropped with it, so every stored name has one).
  The member checks are v9's, for classic and consumer groups alike.
- Not implemented yet: ACLs, quotas.
"""

from __future__ import annotations

import uuid

from odradek.broker.api._auth import Op, group_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.group.model import FetchedOffset, TopicPartition
from odradek.wire import ErrorCode
from odradek.wire._generated.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from odradek.wire.primitives import ZERO_UUID

Resp = OffsetFetchResponse


def _wanted(topics: list[tuple[str, list[int]]] | None) -> list[TopicPartition] | None:
    if topics is None:
        return None
    return [(name, p) for name, parts in topics for p in parts]


def _by_topic(found: dict[TopicPartition, FetchedOffset]) -> dict[str, list[tuple[int, FetchedOffset]]]:
    out: dict[str, list[tuple[int, FetchedOffset]]] = {}
    for (topic, partition), fetched in found.items():
        out.setdefault(topic, []).append((partition, fetched))
    return out


async def handle(ctx: RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
    v = ctx.api_version
    require_stable = v >= 7 and request.require_stable
    if v < 8:
        if not group_allowed(ctx, Op.DESCRIBE, request.group_id):
            return OffsetFetchResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
        topics = (None if request.topics is None and v >= 2
                  else [(t.name, t.partition_indexes) for t in request.topics or []])
        wanted = _wanted(topics)
        error, found = await ctx.groups.read(
            lambda g: g.fetch_offsets(request.group_id, wanted, require_stable))
        out_topics = []
        for name, parts in _by_topic(found).items():
            out_parts = []
            for partition, f in parts:
                if v < 2 and error != ErrorCode.NONE:  # no top-level error before v2
                    f = FetchedOffset(error=error)
                out_parts.append(Resp.OffsetFetchResponsePartition(
                    partition_index=partition, committed_offset=f.offset,
                    committed_leader_epoch=f.leader_epoch, metadata=f.metadata,
                    error_code=f.error))
            out_topics.append(Resp.OffsetFetchResponseTopic(name=name, partitions=out_parts))
        return OffsetFetchResponse(topics=out_topics, error_code=error)
    out_groups = []
    for group in request.groups:
        if not group_allowed(ctx, Op.DESCRIBE, group.group_id):
            out_groups.append(Resp.OffsetFetchResponseGroup(
                group_id=group.group_id, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        unknown_ids: list[tuple[uuid.UUID, list[int]]] = []
        if group.topics is None:
            topics = None
        elif v >= 10:
            topics = []
            for t in group.topics:
                found_topic = ctx.cluster.by_id.get(t.topic_id)
                if found_topic is None:
                    unknown_ids.append((t.topic_id, t.partition_indexes))
                else:
                    topics.append((found_topic.name, t.partition_indexes))
        else:
            topics = [(t.name, t.partition_indexes) for t in group.topics]
        await ctx.groups.ready()
        error, found = ctx.groups.shard.fetch_offsets(
            group.group_id, _wanted(topics), require_stable,
            member_id=group.member_id if v >= 9 else None,
            member_epoch=group.member_epoch if v >= 9 else -1)
        group_topics: list[Resp.OffsetFetchResponseTopics] = []
        for name, parts in _by_topic(found).items():
            topic_id = ZERO_UUID
            if v >= 10:
                known = ctx.cluster.get(name)
                if known is None:
                    continue  # no id to name it by (its deletion is dropping its offsets)
                topic_id = known.topic_id
            group_topics.append(Resp.OffsetFetchResponseTopics(
                name=name, topic_id=topic_id, partitions=[
                    Resp.OffsetFetchResponsePartitions(
                        partition_index=partition, committed_offset=f.offset,
                        committed_leader_epoch=f.leader_epoch, metadata=f.metadata,
                        error_code=f.error)
                    for partition, f in parts]))
        if error == ErrorCode.NONE:  # a group-level error answers no topics, as Kafka's
            group_topics += [Resp.OffsetFetchResponseTopics(topic_id=tid, partitions=[
                Resp.OffsetFetchResponsePartitions(
                    partition_index=p, committed_offset=-1, metadata="",
                    error_code=ErrorCode.UNKNOWN_TOPIC_ID) for p in parts])
                for tid, parts in unknown_ids]
        out_groups.append(Resp.OffsetFetchResponseGroup(
            group_id=group.group_id, error_code=error, topics=group_topics))
    return OffsetFetchResponse(groups=out_groups)
