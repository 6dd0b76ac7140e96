"""ShareGroupDescribe (key 77), version 1: KIP-932 share groups.

- Each group: its state (Empty / Stable), group epoch, assignment epoch, assignor `simple`,
  and per member its id, rack, epoch, client id and host, subscribed topic names and
  current assignment (topic ids with their names).
- GROUP_ID_NOT_FOUND for an unknown id ("Group g not found.") and for a classic or
  consumer group's ("Group g is not a share group."), as Kafka 4.4.
- Not implemented yet: IncludeAuthorizedOperations (no ACLs: the field stays at Kafka's
  "not asked" value).
"""

from __future__ import annotations

from odradek.broker.context import RequestContext
from odradek.coordinator.group.coordinator import GroupCoordinator
from odradek.wire import ErrorCode
from odradek.wire._generated.share_group_describe import (
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
)

Resp = ShareGroupDescribeResponse


async def handle(ctx: RequestContext,
                 request: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse:
    def describe(g: GroupCoordinator) -> list[Resp.DescribedGroup]:
        out = []
        for gid in request.group_ids:
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

    return ShareGroupDescribeResponse(groups=await ctx.groups.read(describe))
