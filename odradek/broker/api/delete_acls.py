"""DeleteAcls (key 31), versions 0-3.

Without an authorizer every filter is answered SECURITY_DISABLED, "No Authorizer is
configured.", with no matching ACLs, as a Kafka broker without one answers. With one, the
caller needs CLUSTER ALTER (else CLUSTER_AUTHORIZATION_FAILED per filter); each filter
removes and lists the bindings it matches (MATCH and ANY patterns included); an UNKNOWN enum
is INVALID_REQUEST. The bindings are saved before the answer. Not implemented: nothing known.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, cluster_allowed
from odradek.broker.api.describe_acls import NO_AUTHORIZER, to_filter
from odradek.broker.context import RequestContext
from odradek.coordinator.acl.authorizer import InvalidAcl
from odradek.wire import ErrorCode
from odradek.wire._generated.delete_acls import DeleteAclsRequest, DeleteAclsResponse

Result = DeleteAclsResponse.DeleteAclsFilterResult
Matching = DeleteAclsResponse.DeleteAclsMatchingAcl


async def handle(ctx: RequestContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
    authorizer = ctx.authorizer
    if authorizer is None:
        return DeleteAclsResponse(filter_results=[
            Result(error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER)
            for _ in request.filters])
    if not cluster_allowed(ctx, Op.ALTER):
        return DeleteAclsResponse(filter_results=[
            Result(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED) for _ in request.filters])
    results: list[Result] = []
    changed = False
    for f in request.filters:
        try:
            flt = to_filter(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter,
                            f.principal_filter, f.host_filter, f.operation, f.permission_type)
        except InvalidAcl as e:
            results.append(Result(error_code=ErrorCode.INVALID_REQUEST, error_message=str(e)))
            continue
        gone = authorizer.delete(flt)
        changed |= bool(gone)
        results.append(Result(error_code=ErrorCode.NONE, matching_acls=[
            Matching(error_code=ErrorCode.NONE, resource_type=int(a.resource_type),
                     resource_name=a.resource_name, pattern_type=int(a.pattern_type),
                     principal=a.principal, host=a.host, operation=int(a.operation),
                     permission_type=int(a.permission))
            for a in gone]))
    if changed:
        authorizer.save()
    return DeleteAclsResponse(filter_results=results)
