"""OffsetFetch (key 9), versions 0-9.

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
- Not implemented yet: v10 (topic ids), ACLs, quotas.
"""

from __future__ import annotations

from odradek.broker.context import RequestContext
from odradek.coordinator.group.model import FetchedOffset, TopicPartition
from odradek.wire import ErrorCode
from odradek.wire._generated.offset_fetch import OffsetFetchRequest, OffsetFetchResponse

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
        topics = (None if group.topics is None
                  else [(t.name, t.partition_indexes) for t in group.topics])
        await ctx.groups.ready()
        error, found = ctx.groups.shard.fetch_offsets(
            group.group_id, _wanted(topics), require_stable,
            member_id=group.member_id if v >= 9 else None,
            member_epoch=group.member_epoch if v >= 9 else -1)
        out_groups.append(Resp.OffsetFetchResponseGroup(
            group_id=group.group_id, error_code=error,
            topics=[Resp.OffsetFetchResponseTopics(name=name, partitions=[
                Resp.OffsetFetchResponsePartitions(
                    partition_index=partition, committed_offset=f.offset,
                    committed_leader_epoch=f.leader_epoch, metadata=f.metadata,
                    error_code=f.error)
                for partition, f in parts])
                for name, parts in _by_topic(found).items()]))
    return OffsetFetchResponse(groups=out_groups)
