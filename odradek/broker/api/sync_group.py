"""SyncGroup (key 14), versions 0-5.

- The leader's assignments are stored (as a GroupMetadata record in `__consumer_offsets`)
  and every member gets exactly the bytes the leader sent for it; followers that sync first
  wait for the leader. A member the leader left out gets an empty assignment (for protocol
  type "consumer" a well-formed empty ConsumerProtocolAssignment, so every client decodes it).
- ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID (v3+ static members),
  REBALANCE_IN_PROGRESS while members are rejoining; v5 checks protocol type and name
  (INCONSISTENT_GROUP_PROTOCOL) and returns them.
- A classic member of a KIP-848 consumer group (online migration) gets its current
  assignment from the server-side assignor, in the ConsumerProtocolAssignment format at its
  subscription's version; REBALANCE_IN_PROGRESS when the group epoch moved past it.
- Not implemented yet: ACLs, quotas.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, group_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.group.coordinator import SyncRequest
from odradek.wire import ErrorCode
from odradek.wire._generated.sync_group import SyncGroupRequest, SyncGroupResponse


async def handle(ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
    v = ctx.api_version
    if not group_allowed(ctx, Op.READ, request.group_id):
        return SyncGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, assignment=b"")
    sync = SyncRequest(
        group_id=request.group_id,
        generation_id=request.generation_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id if v >= 3 else None,
        protocol_type=request.protocol_type if v >= 5 else None,
        protocol_name=request.protocol_name if v >= 5 else None,
        assignments={a.member_id: a.assignment for a in request.assignments},
    )
    result = await ctx.groups.wait(lambda g: g.sync_group(sync))
    return SyncGroupResponse(error_code=result.error, protocol_type=result.protocol_type,
                             protocol_name=result.protocol_name, assignment=result.assignment)
