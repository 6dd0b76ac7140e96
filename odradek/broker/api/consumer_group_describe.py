"""ConsumerGroupDescribe (key 69), versions 0-1: KIP-848 consumer groups.

- Per group: state (Empty, Assigning, Reconciling, Stable), group epoch, assignment epoch,
  the assignor in use, and each member's id, instance id, rack, epoch, client id and host,
  subscribed topics and regex, current assignment and target assignment (topic id, name,
  partitions).
  v1 adds each member's type (1: consumer protocol, 0: a classic member of the group,
  which joined with JoinGroup; see coordinator/group/migration.py).
- A group that does not exist, or is a classic group: GROUP_ID_NOT_FOUND with Kafka's
  message ("Group g not found." / "Group g is not a consumer group.").
- Authorization (when an authorizer is on), as Kafka 4.4's KafkaApis: a group without GROUP
  DESCRIBE is answered first, GROUP_AUTHORIZATION_FAILED and nothing else; a group whose
  members' assignment or target assignment names a topic without TOPIC DESCRIBE becomes
  TOPIC_AUTHORIZATION_FAILED with Kafka's message and no members.
- Authorized operations: INT32_MIN unless requested; when requested those the ACLs allow
  (every group operation without an authorizer), for groups found.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, Res, authorized_operations, group_allowed, topic_allowed
from odradek.broker.api.describe_groups import AUTHORIZED_OPS_NOT_REQUESTED, GROUP_OPS_ALL
from odradek.broker.context import RequestContext
from odradek.coordinator.group.consumer.assignors import Assignment
from odradek.wire import ErrorCode
from odradek.wire._generated.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)

Resp = ConsumerGroupDescribeResponse
MEMBER_TYPE_CLASSIC = 0
MEMBER_TYPE_CONSUMER = 1
TOPICS_DENIED = ("The group has described topic(s) that the client is not authorized to "
                 "describe.")


def _assignment(ctx: RequestContext, a: Assignment) -> ConsumerGroupDescribeResponse.Assignment:
    out = []
    for topic_id in sorted(a):
        topic = ctx.cluster.by_id.get(topic_id)
        if topic is None:
            continue  # deleted meanwhile: Kafka leaves it out too
        out.append(Resp.TopicPartitions(topic_id=topic_id, topic_name=topic.name,
                                        partitions=sorted(a[topic_id])))
    return Resp.Assignment(topic_partitions=out)


async def handle(ctx: RequestContext,
                 request: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
    groups = [Resp.DescribedGroup(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=g)
              for g in request.group_ids if not group_allowed(ctx, Op.DESCRIBE, g)]
    wanted = [g for g in request.group_ids if group_allowed(ctx, Op.DESCRIBE, g)]
    found = await ctx.groups.read(lambda g: g.describe_consumer_groups(wanted))
    for d in found:
        ops = AUTHORIZED_OPS_NOT_REQUESTED
        if request.include_authorized_operations and not d.error:
            ops = authorized_operations(ctx, Res.GROUP, d.group_id, GROUP_OPS_ALL)
        members = [Resp.Member(
            member_id=m.member.member_id, instance_id=m.member.instance_id,
            rack_id=m.member.rack_id, member_epoch=m.member.member_epoch,
            client_id=m.member.client_id, client_host=m.member.client_host,
            subscribed_topic_names=list(m.member.subscribed_topic_names),
            subscribed_topic_regex=m.member.subscribed_topic_regex,
            assignment=_assignment(ctx, m.member.assigned),
            target_assignment=_assignment(ctx, m.target),
            member_type=MEMBER_TYPE_CLASSIC if m.member.uses_classic else MEMBER_TYPE_CONSUMER)
            for m in d.members]
        groups.append(Resp.DescribedGroup(
            error_code=d.error, error_message=d.message, group_id=d.group_id,
            group_state=d.state if not d.error else "", group_epoch=d.group_epoch,
            assignment_epoch=d.assignment_epoch, assignor_name=d.assignor, members=members,
            authorized_operations=ops))
        if ctx.authorizer is not None and any(
                not topic_allowed(ctx, Op.DESCRIBE, tp.topic_name)
                for m in members for a in (m.assignment, m.target_assignment)
                for tp in a.topic_partitions):
            groups[-1] = Resp.DescribedGroup(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                             error_message=TOPICS_DENIED, group_id=d.group_id,
                                             members=[])
    return ConsumerGroupDescribeResponse(groups=groups)
