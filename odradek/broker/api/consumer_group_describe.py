"""ConsumerGroupDescribe (key 69), versions 0-1: KIP-848 consumer groups.

- Per group: state (Empty, Assigning, Reconciling, Stable), group epoch, assignment epoch,
  the assignor in use, and each member's id, instance id, rack, epoch, client id and host,
  subscribed topics and regex, current assignment and target assignment (topic id, name,
  partitions).
  v1 adds each member's type (1: consumer protocol, 0: a classic member of the group,
  which joined with JoinGroup; see coordinator/group/migration.py).
- A group that does not exist, or is a classic group: GROUP_ID_NOT_FOUND with Kafka's
  message ("Group g not found." / "Group g is not a consumer group.").
- Authorized operations: INT32_MIN unless requested; when requested every group operation is
  allowed (there is no authorizer).
- Not implemented yet: ACLs.
"""

from __future__ import annotations

from odradek.broker.api.describe_groups import AUTHORIZED_OPS_NOT_REQUESTED, GROUP_OPS_ALL
from odradek.broker.context import RequestContext
from odradek.coordinator.group.consumer.assignors import Assignment
from odradek.wire._generated.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)

Resp = ConsumerGroupDescribeResponse
MEMBER_TYPE_CLASSIC = 0
MEMBER_TYPE_CONSUMER = 1


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
    ops = GROUP_OPS_ALL if request.include_authorized_operations else AUTHORIZED_OPS_NOT_REQUESTED
    found = await ctx.groups.read(lambda g: g.describe_consumer_groups(request.group_ids))
    groups = []
    for d in found:
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
    return ConsumerGroupDescribeResponse(groups=groups)
