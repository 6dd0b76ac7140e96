"""ListGroups (key 16), versions 0-5.

- Every group this coordinator knows (including offset-only groups, protocol type ""),
  with its state from v4 and its type ("classic") from v5.
- v4+ states filter and v5+ types filter, both case-insensitive; an empty filter matches
  all. A types filter without "classic" matches nothing (there are no other group types).
- Not implemented yet: ACLs (every group is listed).
"""

from __future__ import annotations

from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.list_groups import ListGroupsRequest, ListGroupsResponse

GROUP_TYPE = "classic"


async def handle(ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
    v = ctx.api_version
    states = request.states_filter if v >= 4 else []
    types = request.types_filter if v >= 5 else []
    found = await ctx.groups.read(lambda g: g.list_groups(states, types))
    return ListGroupsResponse(error_code=ErrorCode.NONE, groups=[
        ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type=g.protocol_type,
                                       group_state=g.state, group_type=GROUP_TYPE)
        for g in found])
