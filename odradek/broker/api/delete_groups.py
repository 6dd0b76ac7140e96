"""DeleteGroups (key 42), versions 0-3.

- An Empty group is deleted with its committed offsets (tombstones are written to
  `__consumer_offsets`); a group with members answers NON_EMPTY_GROUP; an unknown group
  GROUP_ID_NOT_FOUND. A group named twice is answered once.
- v3 adds a per-group error_message; Kafka 4.4 leaves it null for every answer above
  (NON_EMPTY_GROUP and GROUP_ID_NOT_FOUND included), and so does Odradek: it never answers
  GROUP_DELETION_FAILED, the error the field was made for.
- Authorization (when an authorizer is on): GROUP DELETE, else GROUP_AUTHORIZATION_FAILED.
- Not implemented yet: quotas.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, group_allowed
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse


async def handle(ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    names = list(dict.fromkeys(request.groups_names))
    denied = {n for n in names if not group_allowed(ctx, Op.DELETE, n)}
    allowed = [n for n in names if n not in denied]
    results = await ctx.groups.write(lambda g: g.delete_groups(allowed)) if allowed else {}
    results.update(dict.fromkeys(denied, ErrorCode.GROUP_AUTHORIZATION_FAILED))
    return DeleteGroupsResponse(results=[
        DeleteGroupsResponse.DeletableGroupResult(group_id=name, error_code=results[name])
        for name in names])
