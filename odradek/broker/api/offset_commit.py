"""OffsetCommit (key 8), versions 0-10.

- Offsets are written as OffsetCommit records to `__consumer_offsets` and acknowledged only
  once the record is in the log; OffsetFetch then returns them, across broker restarts.
- Generation and member checks as Kafka's classic coordinator: a commit with generation -1
  and no member id is accepted while the group is Empty ("simple" groups used only for
  offsets, created on first commit); otherwise the member must be known (UNKNOWN_MEMBER_ID,
  FENCED_INSTANCE_ID for a stale static member) and in the current generation
  (ILLEGAL_GENERATION). The previous generation may commit while the group prepares a
  rebalance; REBALANCE_IN_PROGRESS once the new generation is formed but not yet synced.
- Unknown topics or partitions: UNKNOWN_TOPIC_OR_PARTITION; metadata longer than
  `offset.metadata.max.bytes`: OFFSET_METADATA_TOO_LARGE, per partition.
- v1's per-partition commit timestamp (-1: now) and v2-4's retention time (an explicit
  expiry) are kept; v6+ leader epochs round-trip. v0 (ZooKeeper-stored in old Kafka) is served
  from the same store. v9 classic groups use `generation_id_or_member_epoch` as the
  generation.
- KIP-848 consumer groups: v9's `generation_id_or_member_epoch` is the member epoch; an
  unknown member gets UNKNOWN_MEMBER_ID, another epoch STALE_MEMBER_EPOCH, a consumer-protocol
  member below v9 UNSUPPORTED_VERSION; epoch -1 commits only while the group is empty. v9
  with an epoch for a group that does not exist: GROUP_ID_NOT_FOUND.
- v10 names topics by id only (KIP-848's topic ids; the name field is gone from the wire):
  each id is resolved through the cluster's topics, and the response carries the ids back.
  An id we do not know, the zero id included, is UNKNOWN_TOPIC_ID for each of its partitions
  (nothing is committed for them, and a commit naming only such ids does not create the
  group, as Kafka 4.4 does); a known topic's missing partition is UNKNOWN_TOPIC_OR_PARTITION.
  Offsets are stored by name, as the older versions store them, so v9 and v10 read each
  other's commits.
- Not implemented yet: ACLs, quotas.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, group_allowed, topic_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.group.model import TopicPartition
from odradek.coordinator.group.records import OffsetAndMetadata
from odradek.wire import ErrorCode
from odradek.wire._generated.offset_commit import OffsetCommitRequest, OffsetCommitResponse

Resp = OffsetCommitResponse


def _int64(n: int) -> int:
    return (n + 2**63) % 2**64 - 2**63


async def handle(ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
    v = ctx.api_version
    now = ctx.clock.now_ms()
    # Java's long arithmetic wraps; so does ours (a huge retention must not fail the encode).
    expire = (_int64(now + request.retention_time_ms)
              if 2 <= v <= 4 and request.retention_time_ms != -1 else None)
    errors: dict[TopicPartition, ErrorCode] = {}
    offsets: dict[TopicPartition, OffsetAndMetadata] = {}
    by_id = v >= 10
    names: list[str | None] = []  # per request topic: its name, None for an unknown id
    # authorization (off: None): GROUP READ for all, else TOPIC READ per topic (Kafka's order)
    denied: ErrorCode | None = None
    if ctx.authorizer is not None:
        denied = (ErrorCode.NONE if group_allowed(ctx, Op.READ, request.group_id)
                  else ErrorCode.GROUP_AUTHORIZATION_FAILED)
    for topic in request.topics:
        if by_id:
            found = ctx.cluster.by_id.get(topic.topic_id)
            name = None if found is None else found.name
        else:
            name = topic.name
        names.append(name)
        if name is None:
            continue
        if denied is not None:
            code = denied or (None if topic_allowed(ctx, Op.READ, name)
                              else ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            if code is not None:
                errors.update({(name, p.partition_index): code for p in topic.partitions})
                continue
        for p in topic.partitions:
            tp = (name, p.partition_index)
            if not ctx.cluster.has_partition(name, p.partition_index):
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            commit_ts = p.commit_timestamp if v == 1 and p.commit_timestamp != -1 else now
            offsets[tp] = OffsetAndMetadata(
                offset=p.committed_offset,
                leader_epoch=p.committed_leader_epoch if v >= 6 else -1,
                metadata=p.committed_metadata or "",
                commit_timestamp=commit_ts,
                expire_timestamp=expire,
            )
    if offsets:
        member_id = request.member_id if v >= 1 else ""
        instance_id = request.group_instance_id if v >= 7 else None
        generation_id = request.generation_id_or_member_epoch if v >= 1 else -1
        committed = await ctx.groups.wait(lambda g: g.commit_offsets(
            request.group_id, member_id, instance_id, generation_id, offsets, v))
        errors.update(committed)
    return OffsetCommitResponse(topics=[
        Resp.OffsetCommitResponseTopic(name=topic.name, topic_id=topic.topic_id, partitions=[
            Resp.OffsetCommitResponsePartition(
                partition_index=p.partition_index,
                error_code=(ErrorCode.UNKNOWN_TOPIC_ID if name is None
                            else errors[(name, p.partition_index)]))
            for p in topic.partitions])
        for topic, name in zip(request.topics, names, strict=True)])
