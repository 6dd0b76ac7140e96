"""AddPartitionsToTxn (key 24), versions 0-5.

- v0-3 (clients): one transaction, `v3_and_below_*` fields; every partition is answered with
  the transaction's outcome. v4+ (KIP-890, meant for brokers) batches transactions, each with
  its own result, and `verify_only` asks whether the partitions are already in the
  transaction (TRANSACTION_ABORTABLE for those that are not) without adding them.
- Before the coordinator is asked, every partition must exist (else
  UNKNOWN_TOPIC_OR_PARTITION) and internal topics cannot be added directly (as Kafka's
  authorizer: TOPIC_AUTHORIZATION_FAILED; offsets go through AddOffsetsToTxn); one bad
  partition fails the whole transaction, the others answered OPERATION_NOT_ATTEMPTED.
- A v4+ add (VerifyOnly false, what brokers send for a Produce v12+) is a transactions v2
  add: the transaction remembers client transaction version 2, as Kafka's
  transactionVersionForAddPartitionsToTxn decides; v0-3 adds are classic.
- Coordinator errors as in `coordinator/txn/coordinator.py`; PRODUCER_FENCED is sent as
  INVALID_PRODUCER_EPOCH to v0-1 clients, as Kafka does.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, topic_allowed, txn_allowed
from odradek.broker.cluster import INTERNAL_TOPICS
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
)

Req = AddPartitionsToTxnRequest
Resp = AddPartitionsToTxnResponse
TopicPartition = tuple[str, int]


def _results(errors: dict[TopicPartition, ErrorCode]
             ) -> list[Resp.AddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[Resp.AddPartitionsToTxnPartitionResult]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append(Resp.AddPartitionsToTxnPartitionResult(
            partition_index=partition, partition_error_code=error))
    return [Resp.AddPartitionsToTxnTopicResult(name=t, results_by_partition=ps)
            for t, ps in by_topic.items()]


async def _one(ctx: RequestContext, txn_id: str, producer_id: int, producer_epoch: int,
         topics: list[Req.AddPartitionsToTxnTopic], verify_only: bool
         ) -> dict[TopicPartition, ErrorCode]:
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    refused: dict[TopicPartition, ErrorCode] = {}
    if ctx.authorizer is not None and ctx.api_version < 4:  # v4+ is broker-to-broker
        if not txn_allowed(ctx, Op.WRITE, txn_id):
            return dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        refused = {(t, p): ErrorCode.TOPIC_AUTHORIZATION_FAILED for t, p in wanted
                   if not topic_allowed(ctx, Op.WRITE, t)}
    for topic, partition in wanted:
        if (topic, partition) in refused:
            continue
        if topic in INTERNAL_TOPICS and ctx.api_version < 4:
            refused[(topic, partition)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif not ctx.cluster.has_partition(topic, partition):
            refused[(topic, partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if refused:
        return {tp: refused.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in wanted}
    if verify_only:
        return await ctx.transactions.read(lambda t: t.verify_partitions(
            txn_id, producer_id, producer_epoch, set(wanted)))
    client_tv = 2 if ctx.api_version >= 4 else 0
    error = await ctx.transactions.wait(lambda t: t.add_partitions(
        txn_id, producer_id, producer_epoch, set(wanted), client_tv))
    if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < 2:
        error = ErrorCode.INVALID_PRODUCER_EPOCH
    return dict.fromkeys(wanted, error)


async def handle(ctx: RequestContext, request: AddPartitionsToTxnRequest
                 ) -> AddPartitionsToTxnResponse:
    if ctx.api_version < 4:
        errors = await _one(ctx, request.v3_and_below_transactional_id,
                      request.v3_and_below_producer_id, request.v3_and_below_producer_epoch,
                      request.v3_and_below_topics, verify_only=False)
        return Resp(results_by_topic_v3_and_below=_results(errors))
    results = []
    for txn in request.transactions:
        errors = await _one(ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch,
                      txn.topics, txn.verify_only)
        results.append(Resp.AddPartitionsToTxnResult(transactional_id=txn.transactional_id,
                                                     topic_results=_results(errors)))
    return Resp(error_code=ErrorCode.NONE, results_by_transaction=results)
