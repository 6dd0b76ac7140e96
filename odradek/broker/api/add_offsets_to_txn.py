"""AddOffsetsToTxn (key 25), versions 0-4.

Adds the group's `__consumer_offsets` partition (`abs(javaHash(group id)) % partitions`) to
the transaction, so its TxnOffsetCommit records get the transaction's marker; the topic is
created on first use. Coordinator errors as AddPartitionsToTxn; PRODUCER_FENCED is sent as
INVALID_PRODUCER_EPOCH to v0-1 clients, as Kafka does. Not implemented: ACLs.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, group_allowed, txn_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.group.records import OFFSETS_TOPIC
from odradek.wire import ErrorCode
from odradek.wire._generated.add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
)


async def handle(ctx: RequestContext, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    if not txn_allowed(ctx, Op.WRITE, request.transactional_id):
        return AddOffsetsToTxnResponse(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not group_allowed(ctx, Op.READ, request.group_id):
        return AddOffsetsToTxnResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not ctx.groups.ensure_topic():
        return AddOffsetsToTxnResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    offsets_tp = (OFFSETS_TOPIC, ctx.groups.shard.partition_for(request.group_id))
    error = await ctx.transactions.wait(lambda t: t.add_partitions(
        request.transactional_id, request.producer_id, request.producer_epoch, {offsets_tp}))
    if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 2:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return AddOffsetsToTxnResponse(error_code=error)
