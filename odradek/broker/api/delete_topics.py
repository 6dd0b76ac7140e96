"""DeleteTopics (key 20), versions 0-6.

- Topics by name (`topic_names`, v0-5; `topics[].name`, v6) or by id (`topics[].topic_id`,
  v6). Deletion is synchronous: the answer comes after the topic's partition directories are
  gone, so `timeout_ms` is ignored. Long-polling fetches are woken so they notice.
- `delete.topic.enable=false`: every topic gets INVALID_REQUEST (v0-2) or
  TOPIC_DELETION_DISABLED (v3+), as Kafka.
- Per topic (Kafka's controller checks): unknown name UNKNOWN_TOPIC_OR_PARTITION; unknown id
  UNKNOWN_TOPIC_ID (name null); both or neither of name and id, a name or id given twice, or a
  name and the id it maps to both given: INVALID_REQUEST. Results carry the name and the id
  (v6) of each deleted topic; error messages from v5.
- Internal topics (`__consumer_offsets`, `__transaction_state`) can be deleted, as in Kafka's
  KRaft mode; a warning is logged.
- Large requests do not stall other clients: the logs are deleted yielding to the event loop
  between chunks, and topics.json is written once; admin requests that change topics run one
  at a time.
- On a full disk a deletion still frees the topic's space: it is recorded by a tombstone
  file, the data deleted, and `topics.json` rewritten last (retried later if that fails; the
  deletion stands, answered NONE). Only a topic whose tombstone cannot be written is
  answered KAFKA_STORAGE_ERROR, nothing of it deleted (see `cluster.py`).
Not implemented: controller mutation quotas (throttle_time_ms 0), authorization.
"""

from __future__ import annotations

import uuid
from collections import Counter

import structlog

from odradek.broker.api._auth import Op, topic_allowed
from odradek.broker.cluster import ClusterError, Topic
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from odradek.wire.primitives import ZERO_UUID

log = structlog.get_logger("odradek.admin")

Result = DeleteTopicsResponse.DeletableTopicResult


def _requested(ctx: RequestContext, request: DeleteTopicsRequest) -> list[tuple[str | None, uuid.UUID]]:
    if ctx.api_version < 6:
        return [(name, ZERO_UUID) for name in request.topic_names]
    return [(t.name, t.topic_id) for t in request.topics]


def _error(name: str | None, topic_id: uuid.UUID, code: ErrorCode, message: str) -> Result:
    return Result(name=name, topic_id=topic_id, error_code=code, error_message=message)


async def handle(ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    async with ctx.cluster.lock:
        return await _handle(ctx, request)


async def _handle(ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    cluster = ctx.cluster
    wanted = _requested(ctx, request)
    if not ctx.config.get_bool("delete.topic.enable"):
        code = ErrorCode.INVALID_REQUEST if ctx.api_version < 3 else ErrorCode.TOPIC_DELETION_DISABLED
        return DeleteTopicsResponse(responses=[
            _error(name, tid, code, "Topic deletion is disabled.") for name, tid in wanted])

    names = Counter(n for n, tid in wanted if n is not None and tid == ZERO_UUID)
    ids = Counter(tid for n, tid in wanted if n is None and tid != ZERO_UUID)
    # A name whose topic's id is also given: Kafka refuses both rather than guess.
    clashing: set[uuid.UUID] = set()
    for n in names:
        t = cluster.get(n)
        if t is not None and t.topic_id in ids:
            clashing.add(t.topic_id)
    # Results keep the request's order; a deletion's slot is filled once it is done.
    results: list[Result | None] = []
    to_delete: list[tuple[int, Topic, str | None]] = []  # (slot, topic, name to echo)
    answered_names: set[str] = set()
    answered_ids: set[uuid.UUID] = set()
    for name, tid in wanted:
        if name is not None and tid != ZERO_UUID:
            results.append(_error(name, tid, ErrorCode.INVALID_REQUEST,
                                  "You may not specify both topic name and topic id."))
        elif name is None and tid == ZERO_UUID:
            results.append(_error(None, ZERO_UUID, ErrorCode.INVALID_REQUEST,
                                  "Neither topic name nor id were specified."))
        elif name is not None:
            if name in answered_names:
                continue
            answered_names.add(name)
            topic = cluster.get(name)
            if names[name] > 1:
                results.append(_error(name, ZERO_UUID, ErrorCode.INVALID_REQUEST,
                                      "Duplicate topic name."))
            elif topic is None:
                results.append(_error(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                      "This server does not host this topic-partition."))
            elif not topic_allowed(ctx, Op.DELETE, name):
                results.append(_error(name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                      "Authorization failed."))
            elif topic.topic_id in clashing:
                results.append(_error(name, topic.topic_id, ErrorCode.INVALID_REQUEST,
                                      "The provided topic name maps to an ID that was already "
                                      "supplied."))
            else:
                to_delete.append((len(results), topic, name))
                results.append(None)
        else:
            if tid in answered_ids:
                continue
            answered_ids.add(tid)
            found = cluster.by_id.get(tid)
            if ids[tid] > 1:
                results.append(_error(None, tid, ErrorCode.INVALID_REQUEST, "Duplicate topic id."))
            elif found is None:
                results.append(_error(None, tid, ErrorCode.UNKNOWN_TOPIC_ID,
                                      "This server does not host this topic ID."))
            elif not topic_allowed(ctx, Op.DELETE, found.name):
                results.append(_error(None, tid, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                      "Authorization failed."))
            elif tid in clashing:
                results.append(_error(found.name, tid, ErrorCode.INVALID_REQUEST,
                                      "The provided topic name maps to an ID that was already "
                                      "supplied."))
            else:
                to_delete.append((len(results), found, found.name))
                results.append(None)

    outcome = await cluster.delete_topics([t.name for _, t, _ in to_delete])
    for slot, topic, echo in to_delete:
        done = outcome.get(topic.name)
        if done is None:
            results[slot] = _error(echo, topic.topic_id, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                   "This server does not host this topic-partition.")
            continue
        if isinstance(done, ClusterError):  # its deletion could not be recorded (disk)
            results[slot] = _error(echo, topic.topic_id, done.code, done.message)
            continue
        if topic.internal:
            log.warning("internal topic deleted", topic=topic.name, client=ctx.client_id)
        log.info("topic deleted", topic=topic.name, topic_id=str(topic.topic_id),
                 partitions=topic.partitions, client=ctx.client_id)
        results[slot] = Result(name=echo, topic_id=topic.topic_id, error_code=ErrorCode.NONE,
                               error_message=None)
    for _slot, topic, _echo in to_delete:  # fetches waiting on them answer now
        for partition in range(topic.partitions):
            ctx.partitions.notify_appended(topic.name, partition)
    return DeleteTopicsResponse(responses=[r for r in results if r is not None])
