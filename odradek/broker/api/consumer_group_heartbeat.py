"""ConsumerGroupHeartbeat (key 68), versions 0-1: KIP-848 consumer groups.

- Join (member epoch 0), heartbeat, leave (-1) and static leave (-2) of a consumer-protocol
  member, as Kafka's group coordinator: the group epoch moves when a subscription or the
  subscribed topics change, the server-side assignor (`group.consumer.assignors`, `uniform`
  first by default, or the member's ServerAssignor) computes the target assignment, at most
  once per `group.consumer.assignment.interval.ms` (1 s by default, as Kafka 4.3+: in the
  first heartbeat after it), and each member reconciles towards the last target (revoke
  first; partitions another member still holds are handed out only once released; a member
  that left a topic gives it up at once, before the target moves). The response carries
  the member epoch, the heartbeat interval (`group.consumer.heartbeat.interval.ms`) and the
  assignment when it changed or the request was a full one.
- v1: the member id is the client's (empty: INVALID_REQUEST); v0: an empty id on join gets a
  coordinator-made one.
- Errors as Kafka: INVALID_REQUEST (with Kafka's messages, and an info line "consumer group
  heartbeat refused" naming the check and the fields) for missing join fields,
  UNSUPPORTED_ASSIGNOR, FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
  UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED (`group.consumer.max.size`),
  GROUP_ID_NOT_FOUND (no such consumer group; a classic group with members that
  `group.consumer.migration.policy` does not let the join upgrade), and
  COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR when the write fails. Session timeout
  `group.consumer.session.timeout.ms`; a member that does not revoke within its rebalance
  timeout is fenced.
- v1 SubscribedTopicRegex (Kafka 4's regex subscriptions, RE2/J syntax, full matches against
  every topic name, internal ones included): an invalid regex gets INVALID_REGULAR_EXPRESSION
  "SubscribedTopicRegex `<regex>` is not a valid regular expression: <RE2/J's description>.";
  "" means no regex. The member's topics are its names plus what its regex resolves to,
  resolved just after the heartbeat (as Kafka's background task), again after a topic is
  created or `group.consumer.regex.refresh.interval.ms` (10 min), never within 10 s of the
  last time.
- State is written to `__consumer_offsets` as Kafka's ConsumerGroup* records (resolved
  regexes as ConsumerGroupRegularExpression) and rebuilt from them on start.
- Online migration (`group.consumer.migration.policy`, default bidirectional; see
  `coordinator/group/migration.py`): a join to a non-empty classic group of protocol type
  "consumer" upgrades it to a consumer group, its classic members kept (they go on with
  JoinGroup/SyncGroup/Heartbeat); when the last consumer-protocol member leaves or is fenced
  and only classic members remain, the group is downgraded to a classic group and rebalances.
- Authorization (when an authorizer is on): GROUP READ, else GROUP_AUTHORIZATION_FAILED;
  then TOPIC DESCRIBE on every subscribed topic name, else TOPIC_AUTHORIZATION_FAILED (no
  message, member epoch 0), as Kafka 4.4's KafkaApis. The topics a regex resolves to are
  only those the member whose heartbeat triggered the resolution may DESCRIBE (Kafka's
  TopicRegexResolver, with that member's request context).
- Not implemented yet: the downgrade when a classic static member replaces the last
  consumer-protocol static member, rack-aware assignment, per-group configs (a group's own
  regex refresh interval), quotas.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, describable_topics, group_allowed, topic_allowed
from odradek.broker.api.join_group import client_host
from odradek.broker.context import RequestContext
from odradek.coordinator.group.consumer.coordinator import HeartbeatRequest
from odradek.wire import ErrorCode
from odradek.wire._generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

Resp = ConsumerGroupHeartbeatResponse


async def handle(ctx: RequestContext,
                 request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
    v = ctx.api_version
    if not group_allowed(ctx, Op.READ, request.group_id):
        return ConsumerGroupHeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                              member_epoch=-1, heartbeat_interval_ms=0)
    if ctx.authorizer is not None and request.subscribed_topic_names and not all(
            topic_allowed(ctx, Op.DESCRIBE, t) for t in request.subscribed_topic_names):
        return ConsumerGroupHeartbeatResponse(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    req = HeartbeatRequest(
        group_id=request.group_id,
        member_id=request.member_id,
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=request.subscribed_topic_names,
        subscribed_topic_regex=request.subscribed_topic_regex if v >= 1 else None,
        server_assignor=request.server_assignor,
        topic_partitions=(None if request.topic_partitions is None
                          else [(tp.topic_id, tp.partitions) for tp in request.topic_partitions]),
        client_id=ctx.client_id or "",
        client_host=client_host(ctx.client.address),
        api_version=v,
        describable=describable_topics(ctx),
    )
    result = await ctx.groups.wait(lambda g: g.consumer_group_heartbeat(req))
    assignment = None
    if result.assignment is not None:
        assignment = Resp.Assignment(topic_partitions=[
            Resp.TopicPartitions(topic_id=t, partitions=sorted(ps))
            for t, ps in sorted(result.assignment.items())])
    return ConsumerGroupHeartbeatResponse(
        error_code=result.error, error_message=result.message, member_id=result.member_id,
        member_epoch=result.member_epoch, heartbeat_interval_ms=result.heartbeat_interval_ms,
        assignment=assignment)
