"""ShareGroupHeartbeat (key 76), version 1: KIP-932 share groups.

- Join (member epoch 0, the client's own member id), heartbeat and leave (-1) of a share
  group member, as Kafka 4.4's group coordinator (`coordinator/share/group.py`): the group
  epoch moves when a member joins, leaves or changes its topics or the topics change; the
  `simple` assignor gives every subscribed, initialised share-partition to one or more
  members; the answer carries the member epoch, the heartbeat interval
  (`group.share.heartbeat.interval.ms`) and the assignment when it changed.
- A share-partition is assigned only once its state exists in `__share_group_state`: the
  heartbeat that first sees it records it as initialising, and this handler then
  initialises it (start offset from the group's `share.auto.offset.reset`, a GROUP config,
  Kafka's default `latest`: the log end at that moment; 0 for new partitions of a topic the group had) and tells the
  group coordinator, so the member's next heartbeat gets it, as on Kafka.
- Errors as Kafka: INVALID_REQUEST (empty group or member id, empty rack, a join without
  topics, an epoch below -1), GROUP_ID_NOT_FOUND (the id is a classic or consumer group's),
  UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED (`group.share.max.size`),
  COORDINATOR_NOT_AVAILABLE when the records could not be written. Session timeout
  `group.share.session.timeout.ms`; a member that leaves or times out gives back every
  record it holds.
- Not implemented yet: retrying initialisations left pending after a crash (Kafka: every
  `group.share.initialize.retry.interval.ms`), DeleteShareGroupState for topics no longer
  subscribed.
- Authorization (when an authorizer is on), as Kafka 4.4: GROUP READ, else
  GROUP_AUTHORIZATION_FAILED; then (for a request with a member id) TOPIC DESCRIBE on every
  subscribed topic, else TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import uuid

from odradek.broker.api._auth import Op, group_allowed, topic_allowed
from odradek.broker.api.join_group import client_host
from odradek.broker.context import RequestContext
from odradek.coordinator.share.coordinator import LogInfo, resolve_start_offset
from odradek.coordinator.share.group import InitializeTopic, ShareHeartbeatRequest
from odradek.coordinator.share.state import SharePartitionKey
from odradek.wire import ErrorCode
from odradek.wire._generated.share_group_heartbeat import (
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)

Resp = ShareGroupHeartbeatResponse


def log_info(ctx: RequestContext, topic: str, partition: int) -> LogInfo | None:
    plog = ctx.partitions.log(topic, partition)
    if plog is None:
        return None

    def by_time(ts: int) -> int | None:
        found = plog.offset_for_timestamp(ts, upper_bound=plog.high_watermark)
        return None if found is None else found[0]

    return LogInfo(plog.log_start_offset, plog.high_watermark, by_time)


async def initialize(ctx: RequestContext, group_id: str,
                     topics: dict[uuid.UUID, InitializeTopic]) -> None:
    """InitializeShareGroupState for what a heartbeat asked, then report back."""
    now = ctx.clock.now_ms()
    done: dict[uuid.UUID, frozenset[int]] = {}
    failed: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id, init in topics.items():
        for p in sorted(init.partitions):
            key = SharePartitionKey(group_id, topic_id, p)
            start = init.start_offset
            info = log_info(ctx, init.name, p)
            if start < 0:
                start = 0 if info is None else resolve_start_offset(
                    ctx.share.shard.reset_for(group_id), info, now)
            error = await ctx.share.wait(
                lambda s, key=key, start=start: s.initialize(key, start, now))  # type: ignore[misc]
            target = done if error == ErrorCode.NONE else failed
            target[topic_id] = target.get(topic_id, frozenset()) | {p}
    if done:
        await ctx.groups.write(lambda g: g.share_initialize_done(group_id, done, True))
    if failed:
        await ctx.groups.write(lambda g: g.share_initialize_done(group_id, failed, False))


async def handle(ctx: RequestContext,
                 request: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
    if not group_allowed(ctx, Op.READ, request.group_id):
        return ShareGroupHeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if ctx.authorizer is not None and request.member_id and request.subscribed_topic_names \
            and not all(topic_allowed(ctx, Op.DESCRIBE, t)
                        for t in request.subscribed_topic_names):
        return ShareGroupHeartbeatResponse(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    req = ShareHeartbeatRequest(
        group_id=request.group_id, member_id=request.member_id,
        member_epoch=request.member_epoch, rack_id=request.rack_id,
        subscribed_topic_names=request.subscribed_topic_names,
        client_id=ctx.client_id or "", client_host=client_host(ctx.client.address))
    outcome = await ctx.groups.wait(lambda g: g.share_group_heartbeat(req))
    if outcome.initialize:
        await initialize(ctx, req.group_id, outcome.initialize)
    result = outcome.result
    assignment = None
    if result.assignment is not None:
        assignment = Resp.Assignment(topic_partitions=[
            Resp.TopicPartitions(topic_id=t, partitions=sorted(ps))
            for t, ps in sorted(result.assignment.items())])
    error = result.error
    return ShareGroupHeartbeatResponse(
        error_code=error, error_message=result.message,
        member_id=result.member_id if error == ErrorCode.NONE else None,
        member_epoch=result.member_epoch,
        heartbeat_interval_ms=result.heartbeat_interval_ms, assignment=assignment)
