"""AddOffsetsToTxn (key 25), versions 0-4.

Adds the group's `__consumer_offsets` partition (`abs(javaHash(group id)) % partitions`) to
the transaction, so its TxnOffsetCommit records get the transaction's marker; the topic is
created on first use. Coordinator errors as AddPartitionsToTxn; PRODUCER_FENCED is sent as
INVALID_PRODUCER_EPOCH to v0-1 clients, as Kafka does. Not implemented: ACLs.
"""

from __future__ import annotations

from odradek.broker import groups, transactions
from odradek.broker.context import RequestContext
from odradek.coordinator.group.records import OFFSETS_TOPIC
from odradek.wire import ErrorCode
from odradek.wire._generated.add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
)


async def handle(ctx: RequestContext, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    group_shell = groups.shell(ctx.broker)
    if not group_shell.ensure_offsets_topic():
        return AddOffsetsToTxnResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    partition = group_shell.coordinator.partition_for(request.group_id)
    error = transactions.shell(ctx.broker).coordinator.add_partitions(
        request.transactional_id, request.producer_id, request.producer_epoch,
        {(OFFSETS_TOPIC, partition)})
    if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 2:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return AddOffsetsToTxnResponse(error_code=error)
