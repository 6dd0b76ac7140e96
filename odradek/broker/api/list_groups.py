"""ListGroups (key 16), versions 0-5.

- Every group this coordinator knows (including offset-only groups, protocol type ""),
  with its state from v4 and its type from v5: "classic", or "consumer" for KIP-848 groups
  (protocol type "consumer", states Empty, Assigning, Reconciling, Stable).
- v4+ states filter and v5+ types filter, both case-insensitive; an empty filter matches
  all; an unknown type matches nothing.
- Authorization (when an authorizer is on): CLUSTER DESCRIBE lists every group, else only
  the groups the caller may DESCRIBE (no error), as Kafka.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, cluster_allowed, group_allowed
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.list_groups import ListGroupsRequest, ListGroupsResponse


async def handle(ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
    v = ctx.api_version
    states = request.states_filter if v >= 4 else []
    types = request.types_filter if v >= 5 else []
    found = await ctx.groups.read(lambda g: g.list_groups(states, types))
    if ctx.authorizer is not None and not cluster_allowed(ctx, Op.DESCRIBE):
        # Kafka: CLUSTER DESCRIBE lists every group, else those the caller may DESCRIBE
        found = [g for g in found if group_allowed(ctx, Op.DESCRIBE, g.group_id)]
    return ListGroupsResponse(error_code=ErrorCode.NONE, groups=[
        ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type,
                                       group_state=g.state, group_type=g.group_type)
        for g in found])
