"""DeleteRecords (key 21), versions 0-2.

- Moves each partition's log start offset up to the requested offset (-1 = the high
  watermark) and deletes the segments wholly below it; answers the new low watermark (the log
  start offset). An offset at or below the current start changes nothing and answers the
  current start. Done before answering, so `timeout_ms` is ignored.
- Per partition: unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; an internal topic
  INVALID_TOPIC_EXCEPTION; a topic whose cleanup.policy lacks `delete` POLICY_VIOLATION; an
  offset above the high watermark or negative (other than -1) OFFSET_OUT_OF_RANGE; a
  partition whose log dir failed, or whose new start offset cannot be checkpointed,
  KAFKA_STORAGE_ERROR. Errors carry low watermark -1, as Kafka.
- A partition named twice counts once (the last offset wins), as in Kafka's request map.
- Authorization (when an authorizer is on): TOPIC DELETE, else TOPIC_AUTHORIZATION_FAILED,
  checked before the existence check as in Kafka.
"""

from __future__ import annotations

import structlog

from odradek.broker.api._auth import Op, topic_allowed
from odradek.broker.cluster import INTERNAL_TOPICS
from odradek.broker.context import RequestContext
from odradek.broker.storage.errors import StorageError, error_code_for
from odradek.broker.storage.log import LogClosedError, OffsetOutOfRangeError
from odradek.wire import ErrorCode
from odradek.wire._generated.delete_records import DeleteRecordsRequest, DeleteRecordsResponse

log = structlog.get_logger("odradek.admin")

Resp = DeleteRecordsResponse
HIGH_WATERMARK = -1
INVALID_LOW_WATERMARK = -1


def _delete(ctx: RequestContext, topic: str, partition: int, offset: int) -> tuple[ErrorCode, int]:
    if not topic_allowed(ctx, Op.DELETE, topic):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, INVALID_LOW_WATERMARK
    if topic in INTERNAL_TOPICS:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, INVALID_LOW_WATERMARK
    plog = ctx.partitions.log(topic, partition)
    if plog is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, INVALID_LOW_WATERMARK
    if not ctx.cluster.effective_config(topic).delete:
        return ErrorCode.POLICY_VIOLATION, INVALID_LOW_WATERMARK
    target = plog.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0:
        return ErrorCode.OFFSET_OUT_OF_RANGE, INVALID_LOW_WATERMARK
    before = plog.log_start_offset
    try:
        low = plog.delete_records_before(target)
    except OffsetOutOfRangeError:
        return ErrorCode.OFFSET_OUT_OF_RANGE, INVALID_LOW_WATERMARK
    except LogClosedError:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, INVALID_LOW_WATERMARK
    except (StorageError, OSError) as exc:  # an offline log dir, a checkpoint not written
        log.warning("delete records failed", topic=topic, partition=partition, error=str(exc))
        return error_code_for(exc), INVALID_LOW_WATERMARK
    if low != before:
        log.info("records deleted", topic=topic, partition=partition, log_start_offset=low,
                 previously=before, client=ctx.client_id)
    return ErrorCode.NONE, low


async def handle(ctx: RequestContext, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
    wanted: dict[str, dict[int, int]] = {}
    for t in request.topics:
        parts = wanted.setdefault(t.name, {})
        for p in t.partitions:
            parts[p.partition_index] = p.offset
    topics = []
    for name, parts in wanted.items():
        results = []
        for partition, offset in parts.items():
            code, low = _delete(ctx, name, partition, offset)
            results.append(Resp.DeleteRecordsPartitionResult(
                partition_index=partition, low_watermark=low, error_code=code))
        topics.append(Resp.DeleteRecordsTopicResult(name=name, partitions=results))
    return DeleteRecordsResponse(topics=topics)
