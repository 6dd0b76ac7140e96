"""EndTxn (key 26), versions 0-5.

Commits or aborts the producer's transaction: PrepareCommit/PrepareAbort is persisted in
`__transaction_state`, then a COMMIT/ABORT marker goes to every partition of the transaction
(including the group's `__consumer_offsets` partition, which makes staged TxnOffsetCommit
offsets visible or drops them), then CompleteCommit/CompleteAbort. Kafka answers once the
Prepare record is written; so do we (the markers are written in the same flush, so they are
normally in the log before the answer leaves; a failed marker is retried by the timer).
- v0-4 (the classic protocol): a retry of a completed EndTxn with the same result succeeds,
  the other result is INVALID_TXN_STATE. PRODUCER_FENCED is sent as INVALID_PRODUCER_EPOCH to
  v0-1 clients, as Kafka does.
- v5 (transactions v2, KIP-890 part 2): the epoch is bumped with every end and returned
  (ProducerId, ProducerEpoch; the next producer id at epoch 0 once the epoch runs out); a
  retry one epoch behind succeeds, an abort with no transaction open bumps the epoch too;
  see `coordinator/txn/coordinator.py`. Errors carry producer id and epoch -1.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, txn_allowed
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.end_txn import EndTxnRequest, EndTxnResponse


async def handle(ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
    if not txn_allowed(ctx, Op.WRITE, request.transactional_id):
        return EndTxnResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                              producer_id=-1, producer_epoch=-1)
    client_tv = 2 if ctx.api_version >= 5 else 0  # Kafka's transactionVersionForEndTxn
    result = await ctx.transactions.wait(lambda t: t.end_transaction(
        request.transactional_id, request.producer_id, request.producer_epoch,
        request.committed, client_tv))
    error = result.error
    if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 2:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return EndTxnResponse(error_code=error, producer_id=result.producer_id,
                          producer_epoch=result.producer_epoch)
