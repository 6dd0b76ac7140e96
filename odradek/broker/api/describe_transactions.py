"""DescribeTransactions (key 65), version 0.

Each transactional id's state as the transaction coordinator holds it: state name (Kafka's,
e.g. "Ongoing"), producer id and epoch, timeout, start time (-1 outside a transaction) and
its partitions by topic. Unknown (or expiring) ids: TRANSACTIONAL_ID_NOT_FOUND; "" is
INVALID_REQUEST. With an authorizer: an id without TRANSACTIONAL_ID DESCRIBE gets
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (before the lookup), and only topics the principal may
DESCRIBE are listed (Kafka's KafkaApis).
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, topic_allowed, txn_allowed
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)

Resp = DescribeTransactionsResponse


async def handle(ctx: RequestContext, request: DescribeTransactionsRequest
                 ) -> DescribeTransactionsResponse:
    await ctx.transactions.ready()
    coordinator = ctx.transactions.shard
    states = []
    for tid in request.transactional_ids:
        found = (coordinator.describe(tid) if txn_allowed(ctx, Op.DESCRIBE, tid)
                 else ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if isinstance(found, ErrorCode):
            states.append(Resp.TransactionState(error_code=found, transactional_id=tid,
                                                transaction_state="", producer_id=-1,
                                                producer_epoch=-1))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(found.partitions):
            if not topic_allowed(ctx, Op.DESCRIBE, topic):
                continue
            by_topic.setdefault(topic, []).append(partition)
        states.append(Resp.TransactionState(
            error_code=ErrorCode.NONE, transactional_id=tid,
            transaction_state=found.state.display, transaction_timeout_ms=found.timeout_ms,
            transaction_start_time_ms=found.txn_start_ms, producer_id=found.producer_id,
            producer_epoch=found.producer_epoch,
            topics=[Resp.TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()]))
    return Resp(transaction_states=states)
