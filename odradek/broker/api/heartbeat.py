"""Heartbeat (key 12), versions 0-4.

- Keeps a member's session alive. REBALANCE_IN_PROGRESS while the group is preparing a
  rebalance (the member must rejoin), ILLEGAL_GENERATION for another generation,
  UNKNOWN_MEMBER_ID for a member the group does not have, FENCED_INSTANCE_ID (v3+) for a
  static member whose instance id now belongs to a newer member id.
- A classic member of a KIP-848 consumer group (online migration): ILLEGAL_GENERATION
  unless the generation is its member epoch; REBALANCE_IN_PROGRESS when the group epoch
  moved past it or it must revoke partitions (it rejoins within its rebalance timeout or is
  fenced). After a downgrade to a classic group a member at the last group epoch gets
  REBALANCE_IN_PROGRESS and one behind it ILLEGAL_GENERATION, as on Kafka 4.4.
- Not implemented yet: ACLs, quotas.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, group_allowed
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.heartbeat import HeartbeatRequest, HeartbeatResponse


async def handle(ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
    if not group_allowed(ctx, Op.READ, request.group_id):
        return HeartbeatResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    instance_id = request.group_instance_id if ctx.api_version >= 3 else None
    error = await ctx.groups.write(lambda g: g.heartbeat(
        request.group_id, request.member_id, instance_id, request.generation_id))
    return HeartbeatResponse(error_code=error)
