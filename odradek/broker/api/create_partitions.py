"""CreatePartitions (key 37), versions 0-3.

- Raises a topic's partition count; new partition logs exist when the answer is sent
  (`timeout_ms` is ignored). Every requested topic gets a result, in request order.
- A count equal to or below the current one is INVALID_PARTITIONS with Kafka's messages; an
  unknown topic is UNKNOWN_TOPIC_OR_PARTITION; a name given twice is INVALID_REQUEST.
- Assignments, when given (null and empty both mean none), need one entry per new partition, each naming exactly this node
  (INVALID_REPLICA_ASSIGNMENT otherwise, worded as Kafka's controller does).
- validate_only runs every check and changes nothing.
- More than 10,000 new partitions in one request are refused with POLICY_VIOLATION.
Not implemented: controller mutation quotas (throttle_time_ms 0), authorization.
"""

from __future__ import annotations

from collections import Counter

import structlog

from odradek.broker.api._common import MAX_PARTITIONS_PER_REQUEST, ApiError
from odradek.broker.cluster import ClusterError
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
)

log = structlog.get_logger("odradek.admin")

Result = CreatePartitionsResponse.CreatePartitionsTopicResult


def _check_assignment(broker_ids: list[int], node: int) -> None:
    """Kafka's validateManualPartitionAssignment with one registered broker and replication
    factor 1 (every existing partition has exactly this node as replica)."""
    if not broker_ids:
        raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                       "The manual partition assignment includes an empty replica list.")
    for b in sorted(broker_ids):
        if b != node:
            raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"The manual partition assignment includes broker {b}, but no such "
                           "broker is registered.")
    if len(broker_ids) > 1:
        raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                       f"The manual partition assignment includes the broker {node} more than "
                       "once.")


def _add(ctx: RequestContext, want: CreatePartitionsRequest.CreatePartitionsTopic,
         validate_only: bool, budget: int) -> int:
    """Add the partitions (or just check); returns how many were (or would be) added."""
    cluster = ctx.cluster
    topic = cluster.get(want.name)
    if topic is None:
        raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                       f"The topic '{want.name}' does not exist.")
    current = topic.partitions
    if want.count == current:
        raise ApiError(ErrorCode.INVALID_PARTITIONS,
                       f"Topic already has {current} partition(s).")
    if want.count < current:
        raise ApiError(ErrorCode.INVALID_PARTITIONS,
                       f"The topic {want.name} currently has {current} partition(s); "
                       f"{want.count} would not be an increase.")
    additional = want.count - current
    # An empty list is read as "no assignments" (Kafka refuses it; no valid request has one).
    if want.assignments:
        if len(want.assignments) != additional:
            raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"Attempted to add {additional} additional partition(s), but only "
                           f"{len(want.assignments)} assignment(s) were specified.")
        for a in want.assignments:
            _check_assignment(a.broker_ids, ctx.node.node_id)
    if additional > budget:
        raise ApiError(ErrorCode.POLICY_VIOLATION,
                       "Unable to perform excessively large batch operation.")
    try:
        cluster.add_partitions(want.name, want.count, validate_only=validate_only)
    except ClusterError as e:
        raise ApiError(e.code, e.message) from None
    if not validate_only:
        log.info("partitions added", topic=want.name, partitions=want.count, previously=current,
                 client=ctx.client_id)
    return additional


async def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
    counts = Counter(t.name for t in request.topics)
    budget = MAX_PARTITIONS_PER_REQUEST
    results: list[Result] = []
    answered: set[str] = set()
    for want in request.topics:
        if want.name in answered:
            continue
        answered.add(want.name)
        if counts[want.name] > 1:
            results.append(Result(name=want.name, error_code=ErrorCode.INVALID_REQUEST,
                                  error_message="Duplicate topic name."))
            continue
        try:
            budget -= _add(ctx, want, request.validate_only, budget)
        except ApiError as e:
            results.append(Result(name=want.name, error_code=e.code, error_message=e.message))
            continue
        results.append(Result(name=want.name, error_code=ErrorCode.NONE, error_message=None))
    return CreatePartitionsResponse(results=results)
