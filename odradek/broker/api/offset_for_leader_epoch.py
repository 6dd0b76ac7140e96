"""OffsetForLeaderEpoch (key 23), versions 0-4.

- For each partition, the end offset of the requested leader epoch, from the partition's
  leader epoch history as Kafka's LeaderEpochFileCache answers: the current (latest) epoch
  ends at the log end; an older epoch ends where the next known one starts, reported with the
  largest known epoch <= the requested one; an epoch older than all known ones gets the start
  of the first known one; an unknown newer epoch or -1 gets epoch -1 and offset -1 (the
  lookup is storage's, `PartitionLog.end_offset_for_epoch`). On this single node the current
  epoch is 0, known from the log end on even before a batch of it, so a consumer validating
  its position after epoch 0 gets the log end offset.
- current_leader_epoch (v2+): -1 skips the check; older than ours FENCED_LEADER_EPOCH, newer
  UNKNOWN_LEADER_EPOCH. Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION.
- replica_id (v3+) is ignored: this node leads every partition, so followers and consumers
  get the same answer. v0 results carry no leader epoch.
- Authorization (when an authorizer is on): CLUSTER CLUSTER_ACTION allows every topic;
  else TOPIC DESCRIBE per topic (KIP-320), TOPIC_AUTHORIZATION_FAILED on each partition of a
  topic without it, before the existence check.
- `--brokers N` (docs/cluster.md): answered by the partition's leader only (else
  NOT_LEADER_OR_FOLLOWER), with its current leader epoch.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, cluster_allowed, topic_allowed
from odradek.broker.api._common import leader_epoch, replica_error
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)

Resp = OffsetForLeaderEpochResponse


def _partition(ctx: RequestContext, topic: str,
               want: OffsetForLeaderEpochRequest.OffsetForLeaderPartition) -> Resp.EpochEndOffset:
    p = want.partition
    plog = ctx.partitions.log(topic, p)
    if plog is None or not ctx.cluster.has_partition(topic, p):
        return Resp.EpochEndOffset(partition=p, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    fenced = replica_error(ctx, topic, p, want.current_leader_epoch)
    if fenced != ErrorCode.NONE:
        return Resp.EpochEndOffset(partition=p, error_code=fenced)
    epoch, end = plog.end_offset_for_epoch(want.leader_epoch,
                                           leader_epoch=leader_epoch(ctx, topic, p))
    return Resp.EpochEndOffset(partition=p, error_code=ErrorCode.NONE, leader_epoch=epoch,
                               end_offset=end)


async def handle(ctx: RequestContext,
                 request: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    every = ctx.authorizer is None or cluster_allowed(ctx, Op.CLUSTER_ACTION)
    return OffsetForLeaderEpochResponse(topics=[
        Resp.OffsetForLeaderTopicResult(
            topic=t.topic, partitions=[_partition(ctx, t.topic, p) for p in t.partitions])
        if every or topic_allowed(ctx, Op.DESCRIBE, t.topic) else
        Resp.OffsetForLeaderTopicResult(topic=t.topic, partitions=[
            Resp.EpochEndOffset(partition=p.partition,
                                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            for p in t.partitions])
        for t in request.topics])
