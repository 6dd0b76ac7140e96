"""JoinGroup (key 11), versions 0-9.

- Classic group protocol, coordinator in `odradek.coordinator.group`: the response waits
  until the join phase ends (every known member joined, or the rebalance timeout), without
  blocking other connections.
- v4+ dynamic members first get MEMBER_ID_REQUIRED with their id (KIP-394); static members
  (`group_instance_id`, v5+) join at once and keep their assignment across restarts
  (KIP-345); a duplicate instance is fenced with FENCED_INSTANCE_ID.
- A new group's join phase ends as soon as all its known members joined and no handed-out
  member id is outstanding: a lone consumer is answered at once rather than after
  `group.initial.rebalance.delay.ms` (which still bounds the wait for outstanding ids).
- v0 has no rebalance timeout: the session timeout is used, as Kafka does. v7+ may return a
  null protocol name on errors; older versions get "". v9 `skip_assignment` is set for a
  static leader that rejoins a stable group.
- A JoinGroup to a non-empty KIP-848 consumer group makes the caller a classic member of it
  (online migration, `coordinator/group/migration.py`, as Kafka 4 does whatever
  `group.consumer.migration.policy` says): answered at once, generation = its member epoch,
  never the leader, no member list; INCONSISTENT_GROUP_PROTOCOL unless the protocol type is
  "consumer" and a protocol is shared with the group's other classic members.
- Authorization (when an authorizer is on): GROUP READ, else GROUP_AUTHORIZATION_FAILED; a
  classic member joining a consumer group may trigger the resolution of its regexes, which
  then keeps the topics this member may DESCRIBE, as Kafka.
- Not implemented yet: quotas (throttle_time_ms is 0).
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, describable_topics, group_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.group.coordinator import JoinRequest
from odradek.wire import ErrorCode
from odradek.wire._generated.join_group import JoinGroupRequest, JoinGroupResponse


def client_host(address: str) -> str:
    """Kafka reports a member's host as Java's InetAddress.toString: "/" + ip."""
    host = address.rsplit(":", 1)[0] if ":" in address else address
    return "/" + host.strip("[]")


async def handle(ctx: RequestContext, request: JoinGroupRequest) -> JoinGroupResponse:
    v = ctx.api_version
    if not group_allowed(ctx, Op.READ, request.group_id):
        return JoinGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                 generation_id=-1, member_id="",
                                 protocol_name=None if v >= 7 else "")
    instance_id = request.group_instance_id if v >= 5 else None
    join = JoinRequest(
        group_id=request.group_id,
        member_id=request.member_id,
        protocol_type=request.protocol_type,
        protocols=[(p.name, p.metadata) for p in request.protocols],
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=request.rebalance_timeout_ms if v >= 1 else request.session_timeout_ms,
        group_instance_id=instance_id,
        client_id=ctx.client_id or "",
        client_host=client_host(ctx.client.address),
        require_known_member_id=v >= 4 and instance_id is None,
        support_skip_assignment=v >= 9,
        reason=request.reason if v >= 8 else None,
        describable=describable_topics(ctx),
    )
    result = await ctx.groups.wait(lambda g: g.join_group(join))
    protocol_name = result.protocol_name
    if protocol_name is None and v < 7:
        protocol_name = ""
    return JoinGroupResponse(
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type,
        protocol_name=protocol_name,
        leader=result.leader_id,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=[JoinGroupResponse.JoinGroupResponseMember(
            member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata)
            for m in result.members],
    )
