"""ListTransactions (key 66), versions 0-2.

Every transactional id the coordinator holds, filtered as Kafka filters: by state names
(unknown names are echoed in `unknown_state_filters`), by producer ids, (v1) by
`duration_filter`: only transactions started more than that many ms ago, and (v2, KIP-1152)
by `transactional_id_pattern`: null or "" keeps all; otherwise a regular expression in
RE2/J's syntax (as Kafka 4.4 compiles it) that must match the *whole* id (`txn-.*` matches
`txn-a`, `txn` does not), `.` not matching a newline unless `(?s)`. A pattern RE2/J refuses
(`[`, backreferences, possessive quantifiers) answers INVALID_REGULAR_EXPRESSION with no
transactions. With an authorizer, only ids the principal may DESCRIBE (TRANSACTIONAL_ID) are
listed, no error (Kafka's KafkaApis).
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, txn_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.group.consumer.regex import InvalidRegex, compile_regex
from odradek.wire import ErrorCode
from odradek.wire._generated.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
)

Resp = ListTransactionsResponse


async def handle(ctx: RequestContext, request: ListTransactionsRequest
                 ) -> ListTransactionsResponse:
    duration = request.duration_filter if ctx.api_version >= 1 else -1
    pattern = request.transactional_id_pattern if ctx.api_version >= 2 else None
    compiled = None
    if pattern:
        try:
            # The consumer groups' RE2/J-syntax checker: Kafka uses RE2/J for both.
            compiled = compile_regex(pattern)
        except InvalidRegex:
            return Resp(error_code=ErrorCode.INVALID_REGULAR_EXPRESSION)
    unknown, found = await ctx.transactions.read(lambda t: t.list_transactions(
        request.state_filters, request.producer_id_filters, duration))
    if compiled is not None:
        found = [f for f in found if compiled.fullmatch(f[0]) is not None]
    if ctx.authorizer is not None:
        found = [f for f in found if txn_allowed(ctx, Op.DESCRIBE, f[0])]
    return Resp(error_code=ErrorCode.NONE, unknown_state_filters=unknown,
                transaction_states=[
                    Resp.TransactionState(transactional_id=tid, producer_id=pid,
                                          transaction_state=state.display)
                    for tid, pid, state in found])
