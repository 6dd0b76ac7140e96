"""DescribeGroups (key 15), versions 0-6.

- State, protocol type, and members (id, v4+ instance id, client id, host) of each group; a
  Stable group also reports its protocol and each member's metadata and assignment (other
  states report neither, as Kafka does). An unknown group is reported as state "Dead" with
  no error at v0-5; v6 (KIP-1043) says GROUP_ID_NOT_FOUND with "Group <id> not found." (still
  state "Dead", as Kafka 4.4 answers).
- v3+ authorized operations: INT32_MIN unless requested; when requested, every group
  operation without an authorizer, else the caller's allowed ones.
- Authorization (when an authorizer is on): GROUP DESCRIBE, else GROUP_AUTHORIZATION_FAILED.
- A KIP-848 consumer group is described as Kafka 4 does at v0-5: state "Dead", no error, no
  members (ConsumerGroupDescribe describes it); v6: GROUP_ID_NOT_FOUND with "Group <id> is
  not a classic group.". A KIP-932 share group likewise (ShareGroupDescribe describes it).
- Not implemented yet: ACLs.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, Res, authorized_operations, group_allowed
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
        if ctx.authorizer is not None and not group_allowed(ctx, Op.DESCRIBE, group_id):
            described.append(Resp.DescribedGroup(
                error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, group_id=group_id,
                group_state="", protocol_type="", protocol_data="",
                authorized_operations=AUTHORIZED_OPS_NOT_REQUESTED))
            continue
        d = ctx.groups.shard.describe_group(group_id)
        error, message = d.error, None
        if ctx.api_version >= 6 and error == ErrorCode.NONE:
            group = ctx.groups.shard.groups.get(group_id)
            if ((group is not None and group.consumer is not None)
                    or group_id in ctx.groups.shard.share.groups
                    or group_id in ctx.groups.shard.streams.groups):
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
            authorized_operations=ops if ctx.authorizer is None or ops == AUTHORIZED_OPS_NOT_REQUESTED
            else authorized_operations(ctx, Res.GROUP, group_id, ops)))
    return DescribeGroupsResponse(groups=described)
