"""AlterClientQuotas (key 49), versions 0-1.

- The caller needs CLUSTER ALTER_CONFIGS (else every entry CLUSTER_AUTHORIZATION_FAILED).
- Validated per entity as Kafka's controller does (`coordinator/quota/configs.py`): entity
  types user and client-id, a null name for the default entity, an empty name, a repeated
  type, an unknown type or key, a value not above 0 or a fractional byte rate are
  INVALID_REQUEST with Kafka's message; that entity changes nothing, the others apply. A
  repeated entity or key answers "Ignoring duplicate entity". `remove` deletes a key.
- `validate_only` checks without changing. Changes are saved (quotas.json, atomically)
  before the answer and take effect on the next request.
Not implemented: ip entities (connection_creation_rate) are refused as an unknown entity
type is ("Unhandled client quota entity type: ip").
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, cluster_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.quota.configs import Op as QuotaOp
from odradek.wire import ErrorCode
from odradek.wire._generated.alter_client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
)

Response = AlterClientQuotasResponse


def _entity(pairs: list[tuple[str, str | None]]) -> list[Response.EntityData]:
    return [Response.EntityData(entity_type=t, entity_name=n) for t, n in pairs]


async def handle(ctx: RequestContext,
                 request: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    quotas = ctx.quotas
    if quotas is None or not cluster_allowed(ctx, Op.ALTER_CONFIGS):
        code = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED if quotas is not None
                else ErrorCode.UNKNOWN_SERVER_ERROR)
        return Response(entries=[
            Response.EntryData(error_code=code, error_message=None, entity=_entity(
                [(e.entity_type, e.entity_name) for e in entry.entity]))
            for entry in request.entries])
    results, changed = quotas.configs.alter(
        [([(e.entity_type, e.entity_name) for e in entry.entity],
          [QuotaOp(op.key, None if op.remove else op.value) for op in entry.ops])
         for entry in request.entries],
        request.validate_only)
    if changed:
        quotas.save()
    return Response(entries=[
        Response.EntryData(
            error_code=ErrorCode.NONE if error is None else ErrorCode.INVALID_REQUEST,
            error_message=None if error is None else str(error),
            entity=_entity(list(entity)))
        for entity, error in results])
