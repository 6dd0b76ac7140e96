"""DescribeProducers (key 61), version 0.

The producers each requested partition knows (from its producer state): id, epoch, last
sequence, last timestamp, the coordinator epoch of its last marker and the first offset of
its open transaction (-1 when none), as Kafka's TransactionsCommand shows them. Unknown topics
or partitions: UNKNOWN_TOPIC_OR_PARTITION per partition. With an authorizer, a topic without
READ gets TOPIC_AUTHORIZATION_FAILED on every partition, before the existence check (Kafka).
An illegal name gets INVALID_TOPIC_EXCEPTION on every partition first, with Kafka 4.4's
"Topic name is invalid: ..." messages (measured on a 4.4.0 broker).
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, topic_allowed
from odradek.broker.cluster import MAX_TOPIC_NAME, topic_name_error
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
)

Resp = DescribeProducersResponse


def _invalid_name(name: str) -> str | None:
    """Kafka 4.4's DescribeProducers message for an illegal topic name, or None."""
    if topic_name_error(name) is None:
        return None
    head = "Topic name is invalid: "
    if not name:
        return head + "the empty string is not allowed"
    if name in (".", ".."):
        return head + f"'{name}' is not allowed"
    if len(name) > MAX_TOPIC_NAME:
        return head + (f"the length of '{name}' is longer than the max allowed length "
                       f"{MAX_TOPIC_NAME}")
    return head + (f"'{name}' contains one or more characters other than ASCII "
                   "alphanumerics, '.', '_' and '-'")


async def handle(ctx: RequestContext, request: DescribeProducersRequest
                 ) -> DescribeProducersResponse:
    topics = []
    for topic in request.topics:
        partitions = []
        invalid = _invalid_name(topic.name)
        if invalid is not None:
            topics.append(Resp.TopicResponse(name=topic.name, partitions=[
                Resp.PartitionResponse(partition_index=index,
                                       error_code=ErrorCode.INVALID_TOPIC_EXCEPTION,
                                       error_message=invalid)
                for index in topic.partition_indexes]))
            continue
        if not topic_allowed(ctx, Op.READ, topic.name):
            topics.append(Resp.TopicResponse(name=topic.name, partitions=[
                Resp.PartitionResponse(partition_index=index,
                                       error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                for index in topic.partition_indexes]))
            continue
        for index in topic.partition_indexes:
            plog = ctx.partitions.log(topic.name, index)
            if plog is None:
                partitions.append(Resp.PartitionResponse(
                    partition_index=index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    error_message="This server does not host this topic-partition."))
                continue
            active = [
                Resp.ProducerState(
                    producer_id=pid, producer_epoch=e.producer_epoch, last_sequence=e.last_seq,
                    last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                    current_txn_start_offset=(-1 if e.current_txn_first_offset is None
                                              else e.current_txn_first_offset))
                for pid, e in sorted(plog.producer_state.producers.items())]
            partitions.append(Resp.PartitionResponse(partition_index=index,
                                                     error_code=ErrorCode.NONE,
                                                     active_producers=active))
        topics.append(Resp.TopicResponse(name=topic.name, partitions=partitions))
    return Resp(topics=topics)
