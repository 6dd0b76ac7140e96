"""DescribeAcls (key 29), versions 0-3.

There is no authorizer, so the answer is Kafka's for a broker without one: SECURITY_DISABLED,
"No Authorizer is configured." (admin tools then report that ACLs are off, rather than that
the broker lacks the api). Not implemented: ACLs and authorization.
"""

from __future__ import annotations

from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.describe_acls import DescribeAclsRequest, DescribeAclsResponse

NO_AUTHORIZER = "No Authorizer is configured."


async def handle(ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
    return DescribeAclsResponse(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER)
