"""DescribeClientQuotas (key 48), versions 0-1.

- The caller needs CLUSTER DESCRIBE_CONFIGS (else CLUSTER_AUTHORIZATION_FAILED, no entries).
- Filter components as Kafka's ClientQuotasImage reads them: MATCH_TYPE_EXACT (0) a name,
  MATCH_TYPE_DEFAULT (1) the type's default entity, MATCH_TYPE_SPECIFIED (2) any entity with
  that type; `strict` leaves out entities with types the filter does not name. An empty or
  repeated entity type, a match string where none belongs (or none where one does), an unknown
  match type, or ip combined with user or client-id: INVALID_REQUEST; a type other than user,
  client-id or ip: UNSUPPORTED_VERSION; each with Kafka's message and null entries.
- Each matching entity with all its values (a default entity's name is null).
Not implemented: ip entities hold nothing (AlterClientQuotas refuses them), so an ip filter
matches nothing.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, cluster_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.quota.configs import QuotaConfigs, QuotaError
from odradek.wire import ErrorCode
from odradek.wire._generated.describe_client_quotas import (
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)

Response = DescribeClientQuotasResponse


def _failed(code: ErrorCode, message: str) -> DescribeClientQuotasResponse:
    response = Response(error_code=code, error_message=message)
    response.entries = None  # null, as in Kafka's error answer
    return response


async def handle(ctx: RequestContext,
                 request: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
    if not cluster_allowed(ctx, Op.DESCRIBE_CONFIGS):
        return _failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    configs = ctx.quotas.configs if ctx.quotas is not None else QuotaConfigs()
    try:
        found = configs.describe([(c.entity_type, c.match_type, c.match)
                                  for c in request.components], request.strict)
    except QuotaError as e:
        code = ErrorCode.UNSUPPORTED_VERSION if e.unsupported else ErrorCode.INVALID_REQUEST
        return _failed(code, str(e))
    return Response(entries=[
        Response.EntryData(
            entity=[Response.EntityData(entity_type=t, entity_name=n) for t, n in entity],
            values=[Response.ValueData(key=k, value=v) for k, v in values.items()])
        for entity, values in found])
