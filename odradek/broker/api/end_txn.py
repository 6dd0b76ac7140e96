"""EndTxn (key 26), versions 0-4.

Commits or aborts the producer's transaction: PrepareCommit/PrepareAbort is persisted in
`__transaction_state`, a COMMIT/ABORT marker is appended to every partition of the
transaction (including the group's `__consumer_offsets` partition, which makes staged
TxnOffsetCommit offsets visible or drops them), then CompleteCommit/CompleteAbort; the answer
is sent after all of that. A retry of a completed EndTxn with the same result succeeds.
PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH to v0-1 clients, as Kafka does.
Not served: v5 (KIP-890's epoch bump per transaction; `transaction.version` is not
advertised, so clients use the classic protocol).
"""

from __future__ import annotations

from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.end_txn import EndTxnRequest, EndTxnResponse


async def handle(ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
    error = await ctx.transactions.wait(lambda t: t.end_txn(
        request.transactional_id, request.producer_id, request.producer_epoch,
        request.committed))
    if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 2:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return EndTxnResponse(error_code=error)
