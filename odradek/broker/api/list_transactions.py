"""ListTransactions (key 66), versions 0-1.

Every transactional id the coordinator holds, filtered as Kafka filters: by state names
(unknown names are echoed in `unknown_state_filters`), by producer ids, and (v1) by
`duration_filter`: only transactions started more than that many ms ago. Not implemented:
ACLs.
"""

from __future__ import annotations

from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
)

Resp = ListTransactionsResponse


async def handle(ctx: RequestContext, request: ListTransactionsRequest
                 ) -> ListTransactionsResponse:
    duration = request.duration_filter if ctx.api_version >= 1 else -1
    unknown, found = await ctx.transactions.read(lambda t: t.list_transactions(
        request.state_filters, request.producer_id_filters, duration))
    return Resp(error_code=ErrorCode.NONE, unknown_state_filters=unknown,
                transaction_states=[
                    Resp.TransactionState(transactional_id=tid, producer_id=pid,
                                          transaction_state=state.display)
                    for tid, pid, state in found])
