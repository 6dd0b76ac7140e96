"""ShareAcknowledge (key 79), versions 1-2: KIP-932 acknowledgements outside a fetch.

- Needs the member's share session (opened by ShareFetch): epoch 0 is
  INVALID_SHARE_SESSION_EPOCH (it cannot open one), no session SHARE_SESSION_NOT_FOUND, a
  wrong epoch INVALID_SHARE_SESSION_EPOCH; -1 acknowledges, then closes the session and
  releases what the member still holds. Empty group or member id: INVALID_REQUEST.
- Per partition, all or none, written to `__share_group_state` before the answer:
  INVALID_RECORD_STATE for a record not acquired by this member, acknowledged already or
  whose lock expired; INVALID_REQUEST for malformed batches or offsets past the in-flight
  records; UNKNOWN_TOPIC_OR_PARTITION for a share-partition not loaded here.
- Authorization (when an authorizer is on), as Kafka 4.4: GROUP READ (after the group id
  check), else the top-level GROUP_AUTHORIZATION_FAILED; TOPIC READ per topic, else its
  partitions are answered TOPIC_AUTHORIZATION_FAILED and not acknowledged.
- Not implemented yet: IsRenewAck semantics beyond RENEW itself.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, group_allowed
from odradek.broker.api._share import TopicIdPartition, ack_batches, check_ids, unreadable
from odradek.broker.context import RequestContext
from odradek.coordinator.share.partition import AckResult
from odradek.wire import ErrorCode
from odradek.wire._generated.share_acknowledge import (
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
)

Resp = ShareAcknowledgeResponse


async def handle(ctx: RequestContext,
                 request: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse:
    now = ctx.clock.now_ms()
    lock_ms = ctx.share.shard.partitions.config(request.group_id or "").record_lock_duration_ms
    if request.group_id and not group_allowed(ctx, Op.READ, request.group_id):
        return ShareAcknowledgeResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                        acquisition_lock_timeout_ms=lock_ms)
    problem = check_ids(request.group_id, request.member_id)
    if problem is not None:
        return ShareAcknowledgeResponse(error_code=ErrorCode.INVALID_REQUEST,
                                        error_message=problem,
                                        acquisition_lock_timeout_ms=lock_ms)
    gid, mid = request.group_id or "", request.member_id or ""
    fc = await ctx.share.write(lambda s: s.sessions.acknowledge(
        gid, mid, request.share_session_epoch, now))
    if fc.error != ErrorCode.NONE:
        return ShareAcknowledgeResponse(error_code=fc.error, error_message=fc.message,
                                        acquisition_lock_timeout_ms=lock_ms)
    acks = {(t.topic_id, p.partition_index): ack_batches(
                (b.first_offset, b.last_offset, b.acknowledge_types)
                for b in p.acknowledgement_batches)
            for t in request.topics for p in t.partitions}
    results: dict[TopicIdPartition, AckResult] = {
        tp: AckResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, None)
        for tp in unreadable(ctx, acks)}
    for tp in results:
        del acks[tp]
    if acks:
        done = await ctx.share.wait(lambda s: s.acknowledge(gid, mid, acks, now))
        results.update(done)
    if fc.final:
        await ctx.share.write(lambda s: s.close_session(gid, mid, now))
    topics: dict[object, list[Resp.PartitionData]] = {}
    for (topic_id, partition), res in results.items():
        topics.setdefault(topic_id, []).append(Resp.PartitionData(
            partition_index=partition, error_code=res.error,
            error_message=res.message if res.error != ErrorCode.NONE else None,
            current_leader=Resp.LeaderIdAndEpoch(leader_id=ctx.node.node_id, leader_epoch=0)))
    return ShareAcknowledgeResponse(
        acquisition_lock_timeout_ms=lock_ms,
        responses=[Resp.ShareAcknowledgeTopicResponse(topic_id=t, partitions=ps)  # type: ignore[arg-type]
                   for t, ps in topics.items()])
