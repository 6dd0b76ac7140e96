"""ShareGroupDescribe (key 77), version 1: KIP-932 share groups.

- Each group: its state (Empty / Stable), group epoch, assignment epoch, assignor `simple`,
  and per member its id, rack, epoch, client id and host, subscribed topic names and
  current assignment (topic ids with their names).
- GROUP_ID_NOT_FOUND for an unknown id ("Group g not found.") and for a classic or
  consumer group's ("Group g is not a share group."), as Kafka 4.4.
- Authorization (when an authorizer is on), as Kafka 4.4: a group without GROUP DESCRIBE is
  answered first with GROUP_AUTHORIZATION_FAILED; a group whose members' assignments name a
  topic without TOPIC DESCRIBE becomes TOPIC_AUTHORIZATION_FAILED with Kafka's message and
  no members.
- Authorized operations: INT32_MIN unless requested; when requested, for groups found, those
  the ACLs allow (every group operation without an authorizer).
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, Res, authorized_operations, group_allowed, topic_allowed
from odradek.broker.api.describe_groups import GROUP_OPS_ALL
from odradek.broker.context import RequestContext
from odradek.coordinator.group.coordinator import GroupCoordinator
from odradek.wire import ErrorCode
from odradek.wire._generated.share_group_describe import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)

Resp = ShareGroupDescribeResponse
TOPICS_DENIED = ("The group has described topic(s) that the client is not authorized to "
                 "describe.")


async def handle(ctx: RequestContext,
                 request: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse:
    denied = [Resp.DescribedGroup(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=g)
              for g in request.group_ids if not group_allowed(ctx, Op.DESCRIBE, g)]
    wanted = [g for g in request.group_ids if group_allowed(ctx, Op.DESCRIBE, g)]

    def describe(g: GroupCoordinator) -> list[Resp.DescribedGroup]:
        out = []
        for gid in wanted:
            error, message, group = g.share.describe(gid)
            if group is None or error != ErrorCode.NONE:
                out.append(Resp.DescribedGroup(error_code=error, error_message=message,
                                               group_id=gid))
                continue
            members = []
            for m in group.members.values():
                tps = [Resp.TopicPartitions(topic_id=t, topic_name=ctx.cluster.by_id[t].name
                                            if t in ctx.cluster.by_id else "",
                                            partitions=sorted(ps))
                       for t, ps in sorted(m.assigned.items())]
                members.append(Resp.Member(
                    member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                    client_id=m.client_id, client_host=m.client_host,
                    subscribed_topic_names=list(m.subscribed_topic_names),
                    assignment=Resp.Assignment(topic_partitions=tps)))
            out.append(Resp.DescribedGroup(
                group_id=gid, group_state=group.state.value, group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch, assignor_name="simple",
                members=members))
        return out

    groups = denied + await ctx.groups.read(describe)
    for i, d in enumerate(groups):
        if d.error_code != ErrorCode.NONE:
            continue
        if request.include_authorized_operations:
            d.authorized_operations = authorized_operations(ctx, Res.GROUP, d.group_id,
                                                            GROUP_OPS_ALL)
        if ctx.authorizer is not None and any(
                not topic_allowed(ctx, Op.DESCRIBE, tp.topic_name)
                for m in d.members for tp in m.assignment.topic_partitions):
            groups[i] = Resp.DescribedGroup(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                            error_message=TOPICS_DENIED, group_id=d.group_id,
                                            members=[])
    return ShareGroupDescribeResponse(groups=groups)
