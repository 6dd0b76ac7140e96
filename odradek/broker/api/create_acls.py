"""CreateAcls (key 30), versions 0-3.

There is no authorizer: every creation is answered SECURITY_DISABLED, "No Authorizer is
configured.", as a Kafka broker without one answers. Not implemented: ACLs.
"""

from __future__ import annotations

from odradek.broker.api.describe_acls import NO_AUTHORIZER
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.create_acls import CreateAclsRequest, CreateAclsResponse


async def handle(ctx: RequestContext, request: CreateAclsRequest) -> CreateAclsResponse:
    return CreateAclsResponse(results=[
        CreateAclsResponse.AclCreationResult(error_code=ErrorCode.SECURITY_DISABLED,
                                             error_message=NO_AUTHORIZER)
        for _ in request.creations])
