"""Fetch (key 1), versions 4-17.

- Long poll: answered once `min_bytes` are available or any partition has an error, else
  after `max_wait_ms`; waiting is on the broker's append event, never by sleeping. A fetch
  naming no partition is answered at once, as Kafka does.
- Bytes: `max_bytes` for the response and `partition_max_bytes` per partition, with KIP-74's
  rule that the first batch of the first non-empty partition is returned whole even when it
  is larger. Whole batches only, starting with the batch that contains the fetch offset.
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

from odradek.broker.cluster import LEADER_EPOCH
from odradek.broker.context import RequestContext
from odradek.broker.storage.log import OffsetOutOfRangeError, PartitionLog
from odradek.wire import ErrorCode
from odradek.wire._generated.fetch import FetchRequest, FetchResponse
from odradek.wire.records import iter_batches

PartitionData = FetchResponse.PartitionData
AbortedTransaction = FetchResponse.AbortedTransaction
READ_COMMITTED = 1

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


def _read_all(request: FetchRequest, resolved: Resolved, read_committed: bool
              ) -> tuple[list[FetchResponse.FetchableTopicResponse], int, bool]:
    """One pass over every partition: (topic responses, bytes gathered, any error)."""
    remaining = max(request.max_bytes, 0)
    total = 0
    errored = False
    responses = []
    for topic, _name, parts in resolved:
        datas = []
        for p, plog, error in parts:
            data = PartitionData(partition_index=p.partition, error_code=error, high_watermark=-1,
                                 last_stable_offset=-1, log_start_offset=-1,
                                 preferred_read_replica=-1, records=b"")
            if plog is not None:
                hw = plog.high_watermark
                lso = plog.last_stable_offset
                data.high_watermark, data.last_stable_offset = hw, lso
                data.log_start_offset = plog.log_start_offset
                data.aborted_transactions = [] if read_committed else None
                if error == ErrorCode.NONE:  # even with no budget left: offsets are checked
                    bound = lso if read_committed else hw
                    limit = max(min(p.partition_max_bytes, remaining), 0)
                    try:
                        records = plog.read(p.fetch_offset, limit, upper_bound=bound,
                                            min_one_message=total == 0)
                    except OffsetOutOfRangeError:
                        data.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
                    else:
                        data.records = records
                        total += len(records)
                        remaining = max(remaining - len(records), 0)
                        if read_committed and records:
                            data.aborted_transactions = _aborted(plog, p.fetch_offset, records)
            errored = errored or data.error_code != ErrorCode.NONE
            datas.append(data)
        responses.append(FetchResponse.FetchableTopicResponse(topic=topic.topic, topic_id=topic.topic_id,
                                                              partitions=datas))
    return responses, total, errored


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
    resolved = _resolve(ctx, request)
    wait_ms = max(request.max_wait_ms, 0) if any(t.partitions for t in request.topics) else 0
    deadline = time.monotonic() + wait_ms / 1000
    while True:
        responses, total, errored = _read_all(request, resolved, read_committed)
        left = deadline - time.monotonic()
        if errored or total >= request.min_bytes or left <= 0:
            return FetchResponse(error_code=ErrorCode.NONE, session_id=0, responses=responses)
        await ctx.partitions.wait_for_append(left)
