"""DeleteAcls (key 31), versions 0-3.

There is no authorizer: every filter is answered SECURITY_DISABLED, "No Authorizer is
configured.", with no matching ACLs, as a Kafka broker without one answers. Not
implemented: ACLs.
"""

from __future__ import annotations

from odradek.broker.api.describe_acls import NO_AUTHORIZER
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.delete_acls import DeleteAclsRequest, DeleteAclsResponse


async def handle(ctx: RequestContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
    return DeleteAclsResponse(filter_results=[
        DeleteAclsResponse.DeleteAclsFilterResult(error_code=ErrorCode.SECURITY_DISABLED,
                                                  error_message=NO_AUTHORIZER)
        for _ in request.filters])
