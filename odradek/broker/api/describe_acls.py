"""DescribeAcls (key 29), versions 0-3.

Without an authorizer (`authorizer.class.name` empty) the answer is Kafka's for a broker
without one: SECURITY_DISABLED, "No Authorizer is configured." With one, the caller needs
CLUSTER DESCRIBE (else CLUSTER_AUTHORIZATION_FAILED); the bindings matching the filter are
returned grouped by resource pattern; an UNKNOWN enum in the filter is INVALID_REQUEST.
Not implemented: nothing known.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, cluster_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.acl.authorizer import (
    AclFilter,
    AclOperation,
    InvalidAcl,
    PatternType,
    PermissionType,
    ResourceType,
)
from odradek.wire import ErrorCode
from odradek.wire._generated.describe_acls import DescribeAclsRequest, DescribeAclsResponse

NO_AUTHORIZER = "No Authorizer is configured."


def to_filter(resource_type: int, name: str | None, pattern_type: int, principal: str | None,
              host: str | None, operation: int, permission: int) -> AclFilter:
    """A wire filter as an AclFilter; InvalidAcl for values no enum knows."""
    try:
        flt = AclFilter(ResourceType(resource_type), name, PatternType(pattern_type), principal,
                        host, AclOperation(operation), PermissionType(permission))
    except ValueError:
        raise InvalidAcl("Invalid ACL filter: unknown enum value") from None
    flt.validate()
    return flt


async def handle(ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
    authorizer = ctx.authorizer
    if authorizer is None:
        return DescribeAclsResponse(error_code=ErrorCode.SECURITY_DISABLED,
                                    error_message=NO_AUTHORIZER)
    if not cluster_allowed(ctx, Op.DESCRIBE):
        return DescribeAclsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    try:
        flt = to_filter(request.resource_type_filter, request.resource_name_filter,
                        request.pattern_type_filter, request.principal_filter,
                        request.host_filter, request.operation, request.permission_type)
    except InvalidAcl as e:
        return DescribeAclsResponse(error_code=ErrorCode.INVALID_REQUEST, error_message=str(e))
    grouped: dict[tuple[int, str, int], list[DescribeAclsResponse.AclDescription]] = {}
    for acl in authorizer.describe(flt):
        key = (int(acl.resource_type), acl.resource_name, int(acl.pattern_type))
        grouped.setdefault(key, []).append(DescribeAclsResponse.AclDescription(
            principal=acl.principal, host=acl.host, operation=int(acl.operation),
            permission_type=int(acl.permission)))
    return DescribeAclsResponse(error_code=ErrorCode.NONE, resources=[
        DescribeAclsResponse.DescribeAclsResource(resource_type=rt, resource_name=rn,
                                                  pattern_type=pt, acls=acls)
        for (rt, rn, pt), acls in grouped.items()])
