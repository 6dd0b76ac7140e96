"""InitProducerId (key 22), versions 0-5.

- No transactional id: a new producer id with epoch 0 on every call (idempotent producers;
  Java, librdkafka, franz-go and kafka-python 3 are idempotent by default). The ids survive
  restarts (see `broker/coordinators/producer_ids.py`).
- A transactional id goes through the transaction coordinator: epoch bump (fencing the
  previous producer), abort of its open transaction first (answered CONCURRENT_TRANSACTIONS,
  the client retries), INVALID_TRANSACTION_TIMEOUT beyond `transaction.max.timeout.ms`.
- v3+ may name the producer id and epoch the client holds (KIP-360): both or neither, else
  INVALID_REQUEST; a mismatch is PRODUCER_FENCED, which v0-3 clients get as
  INVALID_PRODUCER_EPOCH (as Kafka answers them).
- Errors carry producer_id -1 and producer_epoch -1.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, idempotent_write_allowed, txn_allowed
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.init_producer_id import InitProducerIdRequest, InitProducerIdResponse


async def handle(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    pid, epoch = request.producer_id, request.producer_epoch
    if (pid == -1) != (epoch == -1):
        return InitProducerIdResponse(error_code=ErrorCode.INVALID_REQUEST, producer_id=-1,
                                      producer_epoch=-1)
    expected = None if pid == -1 else (pid, epoch)
    if ctx.authorizer is not None:
        tid = request.transactional_id
        if tid is not None and not txn_allowed(ctx, Op.WRITE, tid):
            return InitProducerIdResponse(
                error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1,
                producer_epoch=-1)
        if tid is None and not idempotent_write_allowed(ctx):
            return InitProducerIdResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                          producer_id=-1, producer_epoch=-1)
    result = await ctx.transactions.wait(lambda t: t.init_producer_id(
        request.transactional_id, request.transaction_timeout_ms, expected))
    error = result.error
    if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 4:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return InitProducerIdResponse(error_code=error, producer_id=result.producer_id,
                                  producer_epoch=result.producer_epoch)
