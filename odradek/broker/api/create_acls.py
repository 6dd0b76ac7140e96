"""CreateAcls (key 30), versions 0-3.

Without an authorizer every creation is answered SECURITY_DISABLED, "No Authorizer is
configured.", as a Kafka broker without one answers. With one, the caller needs CLUSTER
ALTER (else every creation gets CLUSTER_AUTHORIZATION_FAILED); each binding is validated as
Kafka does (UNKNOWN/ANY resource type, operation or permission, a pattern other than LITERAL
or PREFIXED, an empty name, a CLUSTER resource not named kafka-cluster, a principal without
"Type:" are INVALID_REQUEST with Kafka's message); an existing binding is a success. The
bindings are saved (acls.json, atomically) before the answer. Not implemented: nothing known.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, cluster_allowed
from odradek.broker.api.describe_acls import NO_AUTHORIZER
from odradek.broker.context import RequestContext
from odradek.coordinator.acl.authorizer import (
    AclBinding,
    AclOperation,
    InvalidAcl,
    PatternType,
    PermissionType,
    ResourceType,
)
from odradek.wire import ErrorCode
from odradek.wire._generated.create_acls import CreateAclsRequest, CreateAclsResponse

Result = CreateAclsResponse.AclCreationResult


def _binding(c: CreateAclsRequest.AclCreation) -> AclBinding:
    try:
        return AclBinding(ResourceType(c.resource_type), c.resource_name,
                          PatternType(c.resource_pattern_type), c.principal, c.host,
                          AclOperation(c.operation), PermissionType(c.permission_type))
    except ValueError:
        raise InvalidAcl("Invalid ACL: unknown enum value") from None


async def handle(ctx: RequestContext, request: CreateAclsRequest) -> CreateAclsResponse:
    authorizer = ctx.authorizer
    if authorizer is None:
        return CreateAclsResponse(results=[
            Result(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER)
            for _ in request.creations])
    if not cluster_allowed(ctx, Op.ALTER):
        return CreateAclsResponse(results=[
            Result(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            for _ in request.creations])
    results: list[Result] = []
    changed = False
    for creation in request.creations:
        try:
            changed |= authorizer.create(_binding(creation))
        except InvalidAcl as e:
            results.append(Result(error_code=ErrorCode.INVALID_REQUEST, error_message=str(e)))
        else:
            results.append(Result(error_code=ErrorCode.NONE))
    if changed:
        authorizer.save()
    return CreateAclsResponse(results=results)
