"""LeaveGroup (key 13), versions 0-5.

- v0-2 remove one `member_id`; the single error is the response's error code.
- v3+ remove a batch of members, each answered on its own; a member named only by its
  `group_instance_id` (empty member id) is an admin removal of that static member.
- A leaving member triggers a rebalance of the rest (or empties the group). v5 reasons are
  logged. A classic member of a KIP-848 consumer group (online migration) is removed and the
  group epoch bumped; it is answered before that write lands (a failed write restores the
  group). Not implemented yet: ACLs, quotas.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, group_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.group.model import LeavingMember
from odradek.wire import ErrorCode
from odradek.wire._generated.leave_group import LeaveGroupRequest, LeaveGroupResponse


async def handle(ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
    v = ctx.api_version
    if not group_allowed(ctx, Op.READ, request.group_id):
        return LeaveGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if v < 3:
        leaving = [LeavingMember(request.member_id)]
    else:
        leaving = [LeavingMember(m.member_id, m.group_instance_id,
                                 m.reason if v >= 5 else None) for m in request.members]
    result = await ctx.groups.write(lambda g: g.leave_group(request.group_id, leaving))
    if v < 3:
        error = result.error
        if error == ErrorCode.NONE:
            error = next((m.error for m in result.members if m.error != ErrorCode.NONE),
                         ErrorCode.NONE)
        return LeaveGroupResponse(error_code=error)
    return LeaveGroupResponse(error_code=result.error, members=[
        LeaveGroupResponse.MemberResponse(member_id=m.member_id,
                                          group_instance_id=m.group_instance_id,
                                          error_code=m.error)
        for m in result.members])
