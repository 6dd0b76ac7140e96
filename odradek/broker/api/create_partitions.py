"""CreatePartitions (key 37), versions 0-3.

- Raises a topic's partition count; new partition logs exist when the answer is sent
  (`timeout_ms` is ignored). Every requested topic gets a result, in request order.
- A count equal to or below the current one is INVALID_PARTITIONS with Kafka's messages; an
  unknown topic is UNKNOWN_TOPIC_OR_PARTITION; a name given twice is INVALID_REQUEST.
- Assignments, when given (null and empty both mean none), need one entry per new partition, each naming exactly this node
  (INVALID_REPLICA_ASSIGNMENT otherwise, worded as Kafka's controller does).
- validate_only runs every check and changes nothing.
- More than 10,000 new partitions in one request are refused with POLICY_VIOLATION.
- Large requests do not stall other clients: the new logs are created yielding to the
  event loop between chunks, then every new count is saved at once (one topics.json write);
  admin requests that change topics run one at a time. A topic whose new logs cannot be
  created (e.g. out of file descriptors) is answered KAFKA_STORAGE_ERROR and keeps its count.
- Authorization (when an authorizer is on): TOPIC ALTER, else TOPIC_AUTHORIZATION_FAILED
  (no message), checked after the duplicate check and before any other, as Kafka's
  controller does.
Not implemented: controller mutation quotas (throttle_time_ms 0).
"""

from __future__ import annotations

from collections import Counter

import anyio.lowlevel
import structlog

from odradek.broker.api._auth import Op, topic_allowed
from odradek.broker.api._common import MAX_PARTITIONS_PER_REQUEST, ApiError
from odradek.broker.cluster import ClusterError
from odradek.broker.context import RequestContext
from odradek.broker.storage.errors import error_code_for
from odradek.wire import ErrorCode
from odradek.wire._generated.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
)

log = structlog.get_logger("odradek.admin")

Result = CreatePartitionsResponse.CreatePartitionsTopicResult
YIELD_EVERY_TOPICS = 100  # checking topics yields this often (log creation: cluster.YIELD_EVERY)


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


def _check(ctx: RequestContext, want: CreatePartitionsRequest.CreatePartitionsTopic,
           budget: int) -> int:
    """Every check on one topic; returns how many partitions would be added."""
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
        cluster.check_add_partitions(want.name, want.count)
    except ClusterError as e:
        raise ApiError(e.code, e.message) from None
    return additional


async def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
    async with ctx.cluster.lock:
        return await _handle(ctx, request)


async def _handle(ctx: RequestContext, request: CreatePartitionsRequest
                  ) -> CreatePartitionsResponse:
    counts = Counter(t.name for t in request.topics)
    budget = MAX_PARTITIONS_PER_REQUEST
    results: list[Result] = []
    accepted: list[tuple[str, int, int]] = []  # (name, new count, previous count)
    answered: set[str] = set()
    for i, want in enumerate(request.topics):
        if i % YIELD_EVERY_TOPICS == YIELD_EVERY_TOPICS - 1:
            await anyio.lowlevel.checkpoint()
        if want.name in answered:
            continue
        answered.add(want.name)
        if counts[want.name] > 1:
            results.append(Result(name=want.name, error_code=ErrorCode.INVALID_REQUEST,
                                  error_message="Duplicate topic name."))
            continue
        if not topic_allowed(ctx, Op.ALTER, want.name):
            results.append(Result(name=want.name,
                                  error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                  error_message=None))
            continue
        try:
            added = _check(ctx, want, budget)
        except ApiError as e:
            results.append(Result(name=want.name, error_code=e.code, error_message=e.message))
            continue
        budget -= added
        accepted.append((want.name, want.count, want.count - added))
        results.append(Result(name=want.name, error_code=ErrorCode.NONE, error_message=None))
    if request.validate_only or not accepted:
        return CreatePartitionsResponse(results=results)
    outcome = await ctx.cluster.add_partitions_many([(n, c) for n, c, _ in accepted])
    failed: dict[str, OSError] = {}
    for name, count, previous in accepted:
        error = outcome[name]
        if error is None:
            log.info("partitions added", topic=name, partitions=count, previously=previous,
                     client=ctx.client_id)
        else:
            log.warning("partitions not added", topic=name, error=str(error))
            failed[name] = error
    if failed:
        results = [r if r.name not in failed else Result(
            name=r.name, error_code=error_code_for(failed[r.name]),
            error_message=f"Cannot create the partition logs: {failed[r.name]}")
            for r in results]
    return CreatePartitionsResponse(results=results)
