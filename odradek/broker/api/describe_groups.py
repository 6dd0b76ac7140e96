"""DescribeGroups (key 15), versions 0-6.

- State, protocol type, and members (id, v4+ instance id, client id, host) of each group; a
  Stable group also reports its protocol and each member's metadata and assignment (other
  states report neither, as Kafka does). An unknown group is reported as state "Dead" with
  no error at v0-5; v6 (KIP-1043) says GROUP_ID_NOT_FOUND with "Group <id> not found." (still
  state "Dead", as Kafka 4.4 answers).
- v3+ authorized operations: INT32_MIN unless requested; when requested, every group
  operation is allowed (there is no authorizer).
- A KIP-848 consumer group is described as Kafka 4 does at v0-5: state "Dead", no error, no
  members (ConsumerGroupDescribe describes it); v6: GROUP_ID_NOT_FOUND with "Group <id> is
  not a classic group.".
- Not implemented yet: ACLs.
"""

from __future__ import annotations

from odradek.broker.context import RequestContext
from odradek.coordinator.group.state import GroupState
from odradek.wire import ErrorCode
from odradek.wire._generated.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse

Resp = DescribeGroupsResponse

AUTHORIZED_OPS_NOT_REQUESTED = -(2**31)
DEAD = GroupState.DEAD.wire_name
GROUP_OPS_ALL = (1 << 3) | (1 << 6) | (1 << 8)  # READ, DELETE, DESCRIBE (AclOperation bits)


async def handle(ctx: RequestContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    ops = (GROUP_OPS_ALL if ctx.api_version >= 3 and request.include_authorized_operations
           else AUTHORIZED_OPS_NOT_REQUESTED)
    await ctx.groups.ready()
    described = []
    for group_id in request.groups:
        d = ctx.groups.shard.describe_group(group_id)
        error, message = d.error, None
        if ctx.api_version >= 6 and error == ErrorCode.NONE:
            group = ctx.groups.shard.groups.get(group_id)
            if group_id in ctx.groups.shard.streams.groups or (group is not None and group.consumer is not None):
                error, message = ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a classic group."
            elif group is None or d.state == DEAD:
                error, message = ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
        described.append(Resp.DescribedGroup(
            error_code=error, error_message=message, group_id=d.group_id, group_state=d.state,
            protocol_type=d.protocol_type, protocol_data=d.protocol,
            members=[Resp.DescribedGroupMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id,
                client_id=m.client_id, client_host=m.client_host,
                member_metadata=m.metadata, member_assignment=m.assignment)
                for m in d.members],
            authorized_operations=ops))
    return DescribeGroupsResponse(groups=described)
