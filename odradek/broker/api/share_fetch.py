"""ShareFetch (key 78), versions 1-2: KIP-932 share consumers read and acknowledge.

- Share sessions (`coordinator/share/session.py`): ShareSessionEpoch 0 opens one (no
  acknowledgements allowed: INVALID_REQUEST; an older session of the member is replaced and
  its records released), -1 acknowledges and closes it (releasing what the member still
  holds; no partitions to add or forget: INVALID_REQUEST), n continues it
  (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH; the epoch moves on).
  SHARE_SESSION_LIMIT_REACHED past `group.share.max.share.sessions`. A session is dropped,
  and its records released, when its connection closes. Empty group or member id:
  INVALID_REQUEST.
- Acknowledgements (ACCEPT, RELEASE, REJECT, GAP; RENEW refused unless
  `share.renew.acknowledge.enable`) are applied per partition, all or none, and written to
  `__share_group_state` before the answer; their outcome is the partition's
  AcknowledgeErrorCode: INVALID_RECORD_STATE for a record not acquired by this member,
  acknowledged already or whose acquisition lock expired; INVALID_REQUEST for malformed
  batches or offsets past the in-flight records.
- Records: each share-partition of the session is read from its next fetch offset up to the
  high watermark and what may be acquired is acquired for the member under a lock of
  `group.share.record.lock.duration.ms` (AcquisitionLockTimeoutMs); MaxRecords bounds the
  records acquired (soft in batch-optimized mode, exact with ShareAcquireMode 1, KIP-1206),
  BatchSize cuts new acquisitions; MaxBytes bounds the bytes. Whole log batches go back with
  the AcquiredRecords ranges (offsets, delivery count) the client delivers.
- Long polling: with nothing acquired the fetch waits up to MaxWaitMs on the partitions'
  watches, woken by appends and by records becoming available again (released,
  acknowledged with RELEASE, a lock expired), then answers empty.
- A share-partition whose state the group coordinator never initialised (a partition not
  yet assigned to the group, or a group that is not a share group) answers
  UNKNOWN_TOPIC_OR_PARTITION; an unknown topic id UNKNOWN_TOPIC_ID.
- Authorization (when an authorizer is on), as Kafka 4.4: GROUP READ (after the group id
  check), else the top-level GROUP_AUTHORIZATION_FAILED; TOPIC READ per topic, else its
  partitions are answered TOPIC_AUTHORIZATION_FAILED (and their acknowledgements'
  AcknowledgeErrorCode too), nothing read or acknowledged for them.
- Not implemented yet: read_committed (share.isolation.level), IsRenewAck fetches
  answering without records, the member's group membership is not checked.
"""

from __future__ import annotations

import time

import structlog

from odradek.broker.api._auth import Op, group_allowed
from odradek.broker.api._share import (
    DEFAULT_MAX_RECORDS,
    Read,
    TopicIdPartition,
    ack_batches,
    check_ids,
    connection_id,
    read_partitions,
    unreadable,
)
from odradek.broker.context import RequestContext
from odradek.coordinator.share.partition import AckResult, AcquireMode
from odradek.wire import ErrorCode
from odradek.wire._generated.share_fetch import ShareFetchRequest, ShareFetchResponse

Resp = ShareFetchResponse
log = structlog.get_logger("odradek.share")


async def handle(ctx: RequestContext, request: ShareFetchRequest) -> ShareFetchResponse:
    now = ctx.clock.now_ms()
    lock_ms = ctx.share.shard.partitions.config(request.group_id or "").record_lock_duration_ms

    def top(error: ErrorCode, message: str | None) -> ShareFetchResponse:
        return ShareFetchResponse(error_code=error, error_message=message,
                                  acquisition_lock_timeout_ms=lock_ms)

    if request.group_id and not group_allowed(ctx, Op.READ, request.group_id):
        return top(ErrorCode.GROUP_AUTHORIZATION_FAILED, None)
    problem = check_ids(request.group_id, request.member_id)
    if problem is not None:
        return top(ErrorCode.INVALID_REQUEST, problem)
    gid, mid = request.group_id or "", request.member_id or ""
    epoch = request.share_session_epoch
    wanted = [(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions]
    forgotten = [(t.topic_id, p) for t in request.forgotten_topics_data for p in t.partitions]
    acks = {(t.topic_id, p.partition_index): ack_batches(
                (b.first_offset, b.last_offset, b.acknowledge_types)
                for b in p.acknowledgement_batches)
            for t in request.topics for p in t.partitions if p.acknowledgement_batches}
    conn = connection_id(ctx.client)
    fc = await ctx.share.write(lambda s: s.sessions.fetch(gid, mid, epoch, wanted, forgotten,
                                                          bool(acks), now, conn))
    if fc.error != ErrorCode.NONE or fc.session is None:
        ctx_log(ctx, "share fetch refused", gid, mid, epoch, fc.error, fc.message)
        return top(fc.error, fc.message)
    if fc.replaced is not None:
        await ctx.share.write(lambda s: s.release_member(gid, mid, now))
    ack_results: dict[TopicIdPartition, AckResult] = {}
    denied = unreadable(ctx, [*fc.session.partitions, *acks])
    for tp in denied & set(acks):
        del acks[tp]
        ack_results[tp] = AckResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, None)
    if acks:
        done = await ctx.share.wait(lambda s: s.acknowledge(gid, mid, acks, now))
        ack_results.update(done)
    if fc.final:
        await ctx.share.write(lambda s: s.close_session(gid, mid, now))
        return _response(ctx, lock_ms, {}, ack_results, [])
    session = fc.session
    tps = [tp for tp in session.partitions if tp not in denied]
    max_records = request.max_records if request.max_records > 0 else DEFAULT_MAX_RECORDS
    mode = (AcquireMode.RECORD_LIMIT if request.share_acquire_mode == 1
            else AcquireMode.BATCH_OPTIMIZED)
    max_bytes = request.max_bytes if request.max_bytes > 0 else 2**31 - 1
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    keys = [(ctx.cluster.by_id[t].name, p) for t, p in tps if t in ctx.cluster.by_id]
    with ctx.partitions.watch(keys) as watch:
        while True:
            watch.rearm()
            reads = await ctx.share.write(lambda s: read_partitions(
                ctx, s, gid, mid, tps, max_records, max_bytes, mode, request.batch_size,
                ctx.clock.now_ms()))
            reads |= {tp: Read(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                      for tp in session.partitions if tp in denied}
            got = any(r.acquired or r.error != ErrorCode.NONE for r in reads.values())
            left = deadline - time.monotonic()
            if got or ack_results or left <= 0:
                break
            await ctx.partitions.wait(watch, left)
    listed = list(session.partitions) if fc.full else [tp for tp, r in reads.items()
                                  if r.acquired or r.error != ErrorCode.NONE]
    return _response(ctx, lock_ms, reads, ack_results, listed)


def ctx_log(ctx: RequestContext, event: str, gid: str, mid: str, epoch: int,
            error: ErrorCode, message: str | None) -> None:
    log.info(event, group=gid, member=mid, epoch=epoch,
                                               error=error.name, reason=message,
                                               client=ctx.client.address)


def _response(ctx: RequestContext, lock_ms: int, reads: dict[TopicIdPartition, Read],
              acks: dict[TopicIdPartition, AckResult],
              listed: list[TopicIdPartition]) -> ShareFetchResponse:
    order = list(dict.fromkeys([*listed, *acks]))
    topics: dict[object, list[Resp.PartitionData]] = {}
    for tp in order:
        r = reads.get(tp, Read())
        a = acks.get(tp)
        topics.setdefault(tp[0], []).append(Resp.PartitionData(
            partition_index=tp[1], error_code=r.error, error_message=r.message,
            acknowledge_error_code=a.error if a else ErrorCode.NONE,
            acknowledge_error_message=a.message if a and a.error != ErrorCode.NONE else None,
            current_leader=Resp.LeaderIdAndEpoch(leader_id=ctx.node.node_id, leader_epoch=0),
            records=r.records,
            acquired_records=[Resp.AcquiredRecords(first_offset=x.first_offset,
                                                   last_offset=x.last_offset,
                                                   delivery_count=x.delivery_count)
                              for x in r.acquired]))
    return ShareFetchResponse(
        acquisition_lock_timeout_ms=lock_ms,
        responses=[Resp.ShareFetchableTopicResponse(topic_id=t, partitions=ps)  # type: ignore[arg-type]
                   for t, ps in topics.items()])
