"""Fetch (key 1), versions 4-17.

- Long poll: answered once `min_bytes` are available or any partition has an error, else
  after `max_wait_ms`; waiting is on the broker's append event, never by sleeping. A fetch
  naming no partition is answered at once, as Kafka does.
- Bytes: `max_bytes` for the response (capped by the broker's `fetch.max.bytes`, as Kafka)
  and `partition_max_bytes` per partition, with KIP-74's rule that the first batch of the
  first non-empty partition is returned whole even when it is larger. Whole batches only,
  starting with the batch that contains the fetch offset. A negative `partition_max_bytes`
  gets UNKNOWN_SERVER_ERROR on that partition (Kafka's log read refuses it the same way).
- Partitions are looked up again on every pass of the long poll: a topic deleted while the
  fetch waits answers UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID for v13+) at once; a read
  that fails in storage answers KAFKA_STORAGE_ERROR for that partition. Never a dropped
  connection.
- A full fetch answers exactly the requested partitions, in request order. Fetch sessions
  (KIP-227) are not kept: session_id is always 0, which clients accept as sessionless; a
  request naming a session id gets FETCH_SESSION_ID_NOT_FOUND.
- Offsets outside [log start, log end]: OFFSET_OUT_OF_RANGE, also for partitions after the
  response's byte budget is spent (Kafka reads them with 0 bytes). v13+ topics are named by id
  (UNKNOWN_TOPIC_ID for an unknown id, UNKNOWN_TOPIC_OR_PARTITION for a partition the topic
  lacks). current_leader_epoch above ours: UNKNOWN_LEADER_EPOCH.
- read_committed (isolation_level 1) reads up to the last stable offset (the first offset of
  the earliest open transaction, else the high watermark) and lists the aborted transactions
  overlapping the returned batches (from the `.txnindex` files), sorted by first offset, so
  each producer's come in order; read_uncommitted gets a null list, as from Kafka.
  Transaction markers are control batches: they occupy offsets and are returned as batches.
- Empty records are sent as zero length, never null; preferred_read_replica is -1;
  throttle_time_ms is 0.
- Not implemented: fetch sessions, follower fetching (replica_id >= 0 is served as a consumer),
  rack-aware replica selection, KIP-405 tiered storage, divergence checks on last_fetched_epoch.
"""

from __future__ import annotations

import time

import structlog

from odradek.broker.cluster import LEADER_EPOCH
from odradek.broker.context import RequestContext
from odradek.broker.storage.errors import LogDirOfflineError
from odradek.broker.storage.log import (
    LogClosedError,
    OffsetOutOfRangeError,
    PartitionLog,
    StorageError,
)
from odradek.wire import ErrorCode
from odradek.wire._generated.fetch import FetchRequest, FetchResponse
from odradek.wire.records import iter_batches

PartitionData = FetchResponse.PartitionData
AbortedTransaction = FetchResponse.AbortedTransaction
READ_COMMITTED = 1

log = structlog.get_logger("odradek.fetch")

Wanted = tuple[FetchRequest.FetchPartition, PartitionLog | None, ErrorCode]
Resolved = list[tuple[FetchRequest.FetchTopic, str | None, list[Wanted]]]


def _resolve(ctx: RequestContext, request: FetchRequest) -> Resolved:
    """Per requested topic: its name (None if unknown) and each partition's log or error."""
    by_id = ctx.api_version >= 13
    out: Resolved = []
    for topic in request.topics:
        if by_id:
            found = ctx.cluster.by_id.get(topic.topic_id)
            name = found.name if found else None
        else:
            name = topic.topic
        # an unknown id is UNKNOWN_TOPIC_ID; a known topic's missing partition is not
        missing = (ErrorCode.UNKNOWN_TOPIC_ID if name is None
                   else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        parts: list[Wanted] = []
        for p in topic.partitions:
            plog = ctx.partitions.log(name, p.partition) if name is not None else None
            if plog is None:
                parts.append((p, None, missing))
            elif p.current_leader_epoch > LEADER_EPOCH:
                parts.append((p, plog, ErrorCode.UNKNOWN_LEADER_EPOCH))
            else:
                parts.append((p, plog, ErrorCode.NONE))
        out.append((topic, name, parts))
    return out


def _read_all(request: FetchRequest, resolved: Resolved, read_committed: bool, max_bytes: int,
              missing: ErrorCode) -> tuple[list[FetchResponse.FetchableTopicResponse], int, bool]:
    """One pass over every partition: (topic responses, bytes gathered, any error)."""
    remaining = max(max_bytes, 0)
    total = 0
    errored = False
    responses = []
    for topic, name, parts in resolved:
        datas = []
        for p, plog, error in parts:
            data = PartitionData(partition_index=p.partition, error_code=error, high_watermark=-1,
                                 last_stable_offset=-1, log_start_offset=-1,
                                 preferred_read_replica=-1, records=b"")
            if plog is not None and error == ErrorCode.NONE and p.partition_max_bytes < 0:
                # Kafka's log read refuses a negative size; the partition gets its generic error.
                log.warning("fetch with a negative partition_max_bytes", topic=name,
                            partition=p.partition, partition_max_bytes=p.partition_max_bytes)
                data.error_code = ErrorCode.UNKNOWN_SERVER_ERROR
            elif plog is not None:
                try:
                    size = _fill(data, p, plog, error, read_committed, remaining, total == 0)
                except LogClosedError:  # deleted since it was resolved
                    data = PartitionData(partition_index=p.partition, error_code=missing,
                                         high_watermark=-1, last_stable_offset=-1,
                                         log_start_offset=-1, preferred_read_replica=-1,
                                         records=b"")
                except (StorageError, OSError) as e:
                    # An offline log dir was reported once, when it failed.
                    report = log.debug if isinstance(e, LogDirOfflineError) else log.error
                    report("fetch read failed", topic=name, partition=p.partition, error=str(e))
                    data = PartitionData(partition_index=p.partition,
                                         error_code=ErrorCode.KAFKA_STORAGE_ERROR,
                                         high_watermark=-1, last_stable_offset=-1,
                                         log_start_offset=-1, preferred_read_replica=-1,
                                         records=b"")
                else:
                    total += size
                    remaining = max(remaining - size, 0)
            errored = errored or data.error_code != ErrorCode.NONE
            datas.append(data)
        responses.append(FetchResponse.FetchableTopicResponse(topic=topic.topic, topic_id=topic.topic_id,
                                                              partitions=datas))
    return responses, total, errored


def _fill(data: PartitionData, p: FetchRequest.FetchPartition, plog: PartitionLog,
          error: ErrorCode, read_committed: bool, remaining: int, first: bool) -> int:
    """The partition's offsets and, when it has no error and bytes remain, its records;
    returns how many record bytes were read."""
    hw = plog.high_watermark
    lso = plog.last_stable_offset
    data.high_watermark, data.last_stable_offset = hw, lso
    data.log_start_offset = plog.log_start_offset
    data.aborted_transactions = [] if read_committed else None
    if error != ErrorCode.NONE:
        return 0
    bound = lso if read_committed else hw
    try:  # read even with no budget left (a 0-byte read): the offset is still checked
        records = plog.read(p.fetch_offset, max(min(p.partition_max_bytes, remaining), 0),
                            upper_bound=bound, min_one_message=first)
    except OffsetOutOfRangeError:
        data.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
        return 0
    data.records = records
    if read_committed and records:
        data.aborted_transactions = _aborted(plog, p.fetch_offset, records)
    return len(records)


def _aborted(plog: PartitionLog, fetch_offset: int, records: bytes) -> list[AbortedTransaction]:
    """Aborted transactions overlapping the fetched batches, by first offset."""
    upper = fetch_offset
    for batch in iter_batches(records, allow_partial_tail=True):
        upper = batch.next_offset
    found = plog.collect_aborted_txns(fetch_offset, upper)
    return [AbortedTransaction(producer_id=t.producer_id, first_offset=t.first_offset)
            for t in sorted(found, key=lambda t: (t.first_offset, t.producer_id))]


async def handle(ctx: RequestContext, request: FetchRequest) -> FetchResponse:
    if ctx.api_version >= 7 and request.session_id != 0:
        return FetchResponse(error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND, session_id=0)
    read_committed = request.isolation_level == READ_COMMITTED
    # As Kafka: the response is bounded by the broker's fetch.max.bytes too.
    max_bytes = min(request.max_bytes, ctx.config.get_int("fetch.max.bytes"))
    missing = (ErrorCode.UNKNOWN_TOPIC_ID if ctx.api_version >= 13
               else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    wait_ms = max(request.max_wait_ms, 0) if any(t.partitions for t in request.topics) else 0
    deadline = time.monotonic() + wait_ms / 1000
    while True:
        # Resolved on every pass: a topic deleted (or re-created) while this fetch waits
        # answers with its error instead of reading a closed log.
        resolved = _resolve(ctx, request)
        responses, total, errored = _read_all(request, resolved, read_committed, max_bytes,
                                              missing)
        left = deadline - time.monotonic()
        if errored or total >= request.min_bytes or left <= 0:
            return FetchResponse(error_code=ErrorCode.NONE, session_id=0, responses=responses)
        await ctx.partitions.wait_for_append(left)
