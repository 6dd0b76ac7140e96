"""ListOffsets (key 2), versions 0-11.

Per partition, by the requested timestamp:
- -1 LATEST: the high watermark, or with isolation_level 1 (read_committed, v2+) the last
  stable offset (the log's `last_stable_offset` when it tracks one, else the high watermark);
  a request from a replica (replica_id != -1) gets the log end. Timestamp -1, leader epoch the
  current one.
- -2 EARLIEST and -4 EARLIEST_LOCAL (v8+; no tiered storage, so the same): the log start
  offset, timestamp -1, the epoch of the oldest leader epoch entry when it covers the start.
- -3 MAX_TIMESTAMP (v7+): the first record carrying the largest timestamp in the log, with
  that timestamp and the epoch of its batch.
- -5 LATEST_TIERED (v9+) and -6 EARLIEST_PENDING_UPLOAD (v11+, KIP-1023: the first offset
  not yet copied to remote storage): no tiered storage, so offset -1, timestamp -1, epoch -1,
  no error (Kafka 4.4's answer for a topic without remote storage).
- Authorization (when an authorizer is on): TOPIC DESCRIBE, else TOPIC_AUTHORIZATION_FAILED.
- v10's timeout_ms bounds remote-storage lookups only: nothing here waits, so it is unused.
- t >= 0: the first record with timestamp >= t, found through the time index, with its
  timestamp and the leader epoch of its batch; none (or only beyond the last fetchable
  offset): offset -1, timestamp -1.
Errors per partition: UNKNOWN_TOPIC_OR_PARTITION; current_leader_epoch (v4+) older than ours
FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH; a partition named twice INVALID_REQUEST (one
result for it); a negative timestamp unknown at this version UNSUPPORTED_VERSION.
Results are grouped by topic in the order topics first appear.
v0 (old sarama configurations) answers in `old_style_offsets`: the one offset v1 would give
(none when it is -1), cut to `max_num_offsets`. Kafka's v0 listed segment base offsets
before the timestamp instead; for LATEST and EARLIEST, what clients ask, the answers agree.
`--brokers N` (docs/cluster.md): answered by the partition's leader only (else
NOT_LEADER_OR_FOLLOWER), with its current leader epoch.
Not implemented: tiered storage, authorization.
"""

from __future__ import annotations

from collections import Counter

import structlog

from odradek.broker.api._auth import Op, topic_allowed
from odradek.broker.api._common import (
    NO_EPOCH,
    NO_OFFSET,
    NO_TIMESTAMP,
    leader_epoch,
    replica_error,
)
from odradek.broker.cluster import LEADER_EPOCH
from odradek.broker.context import RequestContext
from odradek.broker.storage.errors import CodedError, error_code_for
from odradek.broker.storage.log import PartitionLog
from odradek.wire import ErrorCode, RecordBatchError
from odradek.wire._generated.list_offsets import ListOffsetsRequest, ListOffsetsResponse

log = structlog.get_logger("odradek.list_offsets")

Resp = ListOffsetsResponse
Part = Resp.ListOffsetsPartitionResponse

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
EARLIEST_PENDING_UPLOAD = -6
# The first version that knows each special timestamp (Kafka's ReplicaManager table).
_MIN_VERSION = {EARLIEST: 0, LATEST: 0, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9,
                EARLIEST_PENDING_UPLOAD: 11}
# Answered from remote storage in Kafka; with none, there is no such offset.
_TIERED = (LATEST_TIERED, EARLIEST_PENDING_UPLOAD)
CONSUMER_REPLICA_ID = -1
READ_COMMITTED = 1




def _lookup(plog: PartitionLog, timestamp: int, last_fetchable: int,
            current: int = LEADER_EPOCH) -> tuple[int, int, int]:
    """(offset, timestamp, leader epoch) answered for `timestamp`; `current`: the
    partition's leader epoch."""
    if timestamp == LATEST:
        return last_fetchable, NO_TIMESTAMP, current
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        epoch = plog.earliest_epoch(leader_epoch=current)
        return plog.log_start_offset, NO_TIMESTAMP, NO_EPOCH if epoch is None else epoch
    if timestamp in _TIERED:
        return NO_OFFSET, NO_TIMESTAMP, NO_EPOCH
    found = plog.max_timestamp_offset() if timestamp == MAX_TIMESTAMP else (
        plog.offset_for_timestamp(timestamp, upper_bound=last_fetchable))
    if found is None or found[0] >= last_fetchable:
        return NO_OFFSET, NO_TIMESTAMP, NO_EPOCH
    offset, ts = found
    epoch = plog.epoch_for_offset(offset, leader_epoch=current)
    return offset, ts, NO_EPOCH if epoch is None else epoch


def _partition(ctx: RequestContext, request: ListOffsetsRequest, topic: str,
               want: ListOffsetsRequest.ListOffsetsPartition) -> Part:
    def error(code: ErrorCode) -> Part:
        return Part(partition_index=want.partition_index, error_code=code)

    version = ctx.api_version
    ts = want.timestamp
    if ts < 0 and version < _MIN_VERSION.get(ts, version + 1):
        return error(ErrorCode.UNSUPPORTED_VERSION)
    plog = ctx.partitions.log(topic, want.partition_index)
    if plog is None or not ctx.cluster.has_partition(topic, want.partition_index):
        return error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    fenced = replica_error(ctx, topic, want.partition_index, want.current_leader_epoch)
    if fenced != ErrorCode.NONE:
        return error(fenced)
    if plog.offline:  # its log dir failed (storage/manager.py)
        return error(ErrorCode.KAFKA_STORAGE_ERROR)
    if request.replica_id != CONSUMER_REPLICA_ID:
        last_fetchable = plog.log_end_offset
    elif request.isolation_level == READ_COMMITTED:
        last_fetchable = plog.last_stable_offset
    else:
        last_fetchable = plog.high_watermark
    try:
        offset, found_ts, epoch = _lookup(plog, ts, last_fetchable,
                                          leader_epoch(ctx, topic, want.partition_index))
    except (RecordBatchError, CodedError, OSError) as exc:  # a stored batch that cannot be read
        log.error("list offsets read failed", topic=topic, partition=want.partition_index,
                  timestamp=ts, error=str(exc))
        return error(error_code_for(exc))
    if version == 0:
        old_style = [offset][: max(want.max_num_offsets, 0)] if offset >= 0 else []
        return Part(partition_index=want.partition_index, error_code=ErrorCode.NONE,
                    old_style_offsets=old_style)
    return Part(partition_index=want.partition_index, error_code=ErrorCode.NONE,
                timestamp=found_ts, offset=offset, leader_epoch=epoch)


async def handle(ctx: RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse:
    counts = Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    by_topic: dict[str, list[Part]] = {}
    answered: set[tuple[str, int]] = set()
    for t in request.topics:
        parts = by_topic.setdefault(t.name, [])
        for want in t.partitions:
            key = (t.name, want.partition_index)
            if key in answered:
                continue
            answered.add(key)
            if counts[key] > 1:
                parts.append(Part(partition_index=want.partition_index,
                                  error_code=ErrorCode.INVALID_REQUEST))
            elif ctx.authorizer is not None and not topic_allowed(ctx, Op.DESCRIBE, t.name):
                parts.append(Part(partition_index=want.partition_index,
                                  error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            else:
                parts.append(_partition(ctx, request, t.name, want))
    return ListOffsetsResponse(topics=[Resp.ListOffsetsTopicResponse(name=n, partitions=ps)
                                       for n, ps in by_topic.items()])
