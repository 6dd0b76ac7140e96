"""Fetch (key 1), versions 4-18.

- Long poll: answered once `min_bytes` are available or any partition has an error, else
  after `max_wait_ms`. A fetch that must wait watches its partitions (`Partitions.watch`, as
  Kafka's delayed-fetch purgatory keyed by partition): an append there, a log start offset
  moving, its log dir failing or its topic being deleted wakes it, appends elsewhere do not;
  never by sleeping. An append at any point of the poll is read by that poll (see
  `broker/partitions.py`). A fetch naming no partition is answered at once, as Kafka does.
- Authorization (when an authorizer is on): each topic needs TOPIC READ, else its
  partitions answer TOPIC_AUTHORIZATION_FAILED at once (also for a session's partitions).
- Bytes: `max_bytes` for the response (capped by the broker's `fetch.max.bytes`, as Kafka)
  and `partition_max_bytes` per partition, with KIP-74's rule that the first batch of the
  first non-empty partition is returned whole even when it is larger. Whole batches only,
  starting with the batch that contains the fetch offset. A negative `partition_max_bytes`
  gets UNKNOWN_SERVER_ERROR on that partition (Kafka's log read refuses it the same way).
- Partitions are looked up again on every pass of the long poll: a topic deleted while the
  fetch waits answers UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID for v13+) at once; a read
  that fails in storage answers KAFKA_STORAGE_ERROR for that partition. Never a dropped
  connection.
- A full fetch answers exactly the requested partitions, in request order.
- Fetch sessions (KIP-227, v7+; rules in `broker/fetch_sessions.py`): epoch 0 creates a
  session caching the requested partitions (its id in the response; 0 when the cache of
  `max.incremental.fetch.session.cache.slots` has no room), epoch -1 is sessionless, any
  other epoch is an incremental fetch of the whole session, changed by the partitions the
  request names and `forgotten_topics_data`, answered with only the partitions that have
  records, an error, or a new high watermark or log start offset. Such a fetch long-polls on
  all of its session's partitions. An unknown session answers FETCH_SESSION_ID_NOT_FOUND, a
  wrong epoch INVALID_FETCH_SESSION_EPOCH (also, at once, when a newer request moves the
  session on while the fetch waits), a v13+ session used below v13 or the reverse FETCH_SESSION_TOPIC_ID_ERROR: session
  id 0, no partitions. A session partition keeps its topic name once known: a deleted topic
  answers UNKNOWN_TOPIC_OR_PARTITION there (UNKNOWN_TOPIC_ID while the id was never known),
  and one re-created under the name INCONSISTENT_TOPIC_ID, as from Kafka.
- v18 adds the follower's high watermark per partition (KIP-1166), accepted and unused:
  followers are served as consumers.
- Offsets outside [log start, log end]: OFFSET_OUT_OF_RANGE, also for partitions after the
  response's byte budget is spent (Kafka reads them with 0 bytes). v13+ topics are named by id
  (UNKNOWN_TOPIC_ID for an unknown id, UNKNOWN_TOPIC_OR_PARTITION for a partition the topic
  lacks). current_leader_epoch above ours: UNKNOWN_LEADER_EPOCH.
- read_committed (isolation_level 1) reads up to the last stable offset (the first offset of
  the earliest open transaction, else the high watermark) and lists the aborted transactions
  overlapping the returned batches (from the `.txnindex` files), sorted by first offset, so
  each producer's come in order; read_uncommitted gets a null list, as from Kafka.
  Transaction markers are control batches: they occupy offsets and are returned as batches.
- Zero copy (issue #12): on a plain socket (`ClientInfo.zero_copy`) a partition's records are a
  `FileRegion` of its segment (`PartitionLog.read_region`: a dup of the descriptor, so a roll,
  a compaction or retention deleting the segment before the response is sent changes nothing;
  its length fixed by the high watermark or LSO when the response is built), sent by the server
  with `os.sendfile`. Sizing is the same as the copying path; read_committed reads one batch
  header more for the upper offset of the aborted-transaction search. Any other transport (TLS,
  when it comes; the handler tests) leaves `zero_copy` off and gets the bytes read with
  `os.pread` (the copying path).
- Empty records are sent as zero length, never null; preferred_read_replica is -1;
  throttle_time_ms is 0.
- Not implemented: follower fetching (replica_id >= 0 is served as a consumer; its sessions
  are privileged in the cache, as in Kafka), rack-aware replica selection, KIP-405 tiered
  storage, divergence checks on last_fetched_epoch, KIP-1166's early answer to a follower
  whose high watermark is behind.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Protocol

import structlog

from odradek.broker.api._auth import Op, topic_allowed
from odradek.broker.api._common import replica_error
from odradek.broker.cluster import LEADER_EPOCH, Cluster
from odradek.broker.context import RequestContext
from odradek.broker.fetch_sessions import (
    INVALID_SESSION_ID,
    CachedPartition,
    FetchSession,
    FullFetch,
    IncrementalFetch,
    Key,
    SessionError,
)
from odradek.broker.partitions import Watch
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
from odradek.wire.regions import as_records

PartitionData = FetchResponse.PartitionData
AbortedTransaction = FetchResponse.AbortedTransaction
READ_COMMITTED = 1

log = structlog.get_logger("odradek.fetch")

Resolved = list[tuple[FetchRequest.FetchTopic, str | None,
                      list[tuple[FetchRequest.FetchPartition, PartitionLog | None, ErrorCode]]]]


class Wanted(Protocol):
    """A partition to read: a request's FetchPartition, or a session's CachedPartition."""

    @property
    def partition(self) -> int: ...
    @property
    def fetch_offset(self) -> int: ...
    @property
    def partition_max_bytes(self) -> int: ...


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
        parts: list[tuple[FetchRequest.FetchPartition, PartitionLog | None, ErrorCode]] = []
        if (ctx.authorizer is not None and name is not None
                and not topic_allowed(ctx, Op.READ, name)):
            parts = [(p, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in topic.partitions]
            out.append((topic, name, parts))
            continue
        for p in topic.partitions:
            plog = ctx.partitions.log(name, p.partition) if name is not None else None
            if plog is None:
                parts.append((p, None, missing))
            elif ctx.replicas is not None and name is not None:
                parts.append((p, plog, replica_error(ctx, name, p.partition,
                                                     p.current_leader_epoch)))
            elif p.current_leader_epoch > LEADER_EPOCH:
                parts.append((p, plog, ErrorCode.UNKNOWN_LEADER_EPOCH))
            else:
                parts.append((p, plog, ErrorCode.NONE))
        out.append((topic, name, parts))
    return out


def _read_all(request: FetchRequest, resolved: Resolved, read_committed: bool, max_bytes: int,
              missing: ErrorCode, zero_copy: bool = False
              ) -> tuple[list[FetchResponse.FetchableTopicResponse], int, bool]:
    """One pass over every partition: (topic responses, bytes gathered, any error). The
    sessionless hot path, inlined (`_read_partition` is the same per partition)."""
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
                    size = _fill(data, p, plog, error, read_committed, remaining, total == 0,
                                 zero_copy)
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


def _read_partition(p: Wanted, plog: PartitionLog | None, error: ErrorCode, name: str | None,
                    read_committed: bool, remaining: int, first: bool,
                    missing: ErrorCode = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    zero_copy: bool = False) -> tuple[PartitionData, int]:
    """One partition's response data and the record bytes read; `error` is what resolving
    it found (its log is None when it has none)."""
    data = PartitionData(partition_index=p.partition, error_code=error, high_watermark=-1,
                         last_stable_offset=-1, log_start_offset=-1,
                         preferred_read_replica=-1, records=b"")
    if plog is None:
        return data, 0
    if error == ErrorCode.NONE and p.partition_max_bytes < 0:
        # Kafka's log read refuses a negative size; the partition gets its generic error.
        log.warning("fetch with a negative partition_max_bytes", topic=name,
                    partition=p.partition, partition_max_bytes=p.partition_max_bytes)
        data.error_code = ErrorCode.UNKNOWN_SERVER_ERROR
        return data, 0
    try:
        return data, _fill(data, p, plog, error, read_committed, remaining, first, zero_copy)
    except LogClosedError:  # deleted since it was resolved
        return PartitionData(partition_index=p.partition, error_code=missing,
                             high_watermark=-1, last_stable_offset=-1,
                             log_start_offset=-1, preferred_read_replica=-1,
                             records=b""), 0
    except (StorageError, OSError) as e:
        # An offline log dir was reported once, when it failed.
        report = log.debug if isinstance(e, LogDirOfflineError) else log.error
        report("fetch read failed", topic=name, partition=p.partition, error=str(e))
        return PartitionData(partition_index=p.partition,
                             error_code=ErrorCode.KAFKA_STORAGE_ERROR,
                             high_watermark=-1, last_stable_offset=-1,
                             log_start_offset=-1, preferred_read_replica=-1,
                             records=b""), 0


def _fill(data: PartitionData, p: Wanted, plog: PartitionLog, error: ErrorCode,
          read_committed: bool, remaining: int, first: bool, zero_copy: bool = False) -> int:
    """The partition's offsets and, when it has no error and bytes remain, its records;
    returns how many record bytes were read. With `zero_copy` the records are a `FileRegion`
    of the segment (sent with sendfile by the server), else bytes read from it."""
    hw = plog.high_watermark
    lso = plog.last_stable_offset
    data.high_watermark, data.last_stable_offset = hw, lso
    data.log_start_offset = plog.log_start_offset
    data.aborted_transactions = [] if read_committed else None
    if error != ErrorCode.NONE:
        return 0
    bound = lso if read_committed else hw
    size = max(min(p.partition_max_bytes, remaining), 0)
    if zero_copy:
        try:  # as below; the region ends where the bound was when it was built
            region, upper = plog.read_region(p.fetch_offset, size, upper_bound=bound,
                                             min_one_message=first, with_upper=read_committed)
        except OffsetOutOfRangeError:
            data.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
            return 0
        if region is None:
            return 0
        data.records = region if isinstance(region, bytes) else as_records(region)
        if read_committed:
            data.aborted_transactions = _aborted_below(plog, p.fetch_offset, upper)
        return len(region)
    try:  # read even with no budget left (a 0-byte read): the offset is still checked
        records = plog.read(p.fetch_offset, size,
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
    return _aborted_below(plog, fetch_offset, upper)


def _aborted_below(plog: PartitionLog, fetch_offset: int, upper: int) -> list[AbortedTransaction]:
    found = plog.collect_aborted_txns(fetch_offset, upper)
    return [AbortedTransaction(producer_id=t.producer_id, first_offset=t.first_offset)
            for t in sorted(found, key=lambda t: (t.first_offset, t.producer_id))]


def _session_entries(version: int, resolved: Resolved,
                     responses: list[FetchResponse.FetchableTopicResponse]
                     ) -> Iterator[tuple[Key, CachedPartition]]:
    """A new session's partitions: each requested one with what the full response said
    (a partition answered with an error caches no high watermark, so it is sent again)."""
    by_id = version >= 13
    for (topic, name, parts), answered in zip(resolved, responses, strict=True):
        tkey = topic.topic_id if by_id else topic.topic
        for (p, _, _), data in zip(parts, answered.partitions, strict=True):
            key = (tkey, p.partition)
            hw = data.high_watermark if data.error_code == ErrorCode.NONE else -1
            yield key, CachedPartition(key, name, topic.topic_id, p, hw, data.log_start_offset)


def _read_session(ctx: RequestContext, session: FetchSession, read_committed: bool,
                  max_bytes: int, zero_copy: bool = False) -> tuple[list[tuple[CachedPartition, PartitionData]], int, bool]:
    """One pass over an incremental fetch's session: the partitions its response must carry
    (with their data), bytes gathered, any error. A partition with no news costs a few
    comparisons and no response object."""
    remaining = max(max_bytes, 0)
    total = 0
    errored = False
    picked = []
    uses_ids = session.uses_topic_ids
    logs = ctx.partitions
    cluster = ctx.cluster
    auth = ctx.authorizer
    topic_ok: dict[str, bool] = {}  # v13+: the name still belongs to the session's topic id
    for cp in session.partitions.values():
        name = cp.topic
        plog = None
        if name is None:  # an id not known when cached, nor since
            error = ErrorCode.UNKNOWN_TOPIC_ID
        elif auth is not None and not topic_allowed(ctx, Op.READ, name):
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        else:
            plog = logs.log(name, cp.partition)
            if plog is None:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif uses_ids and not _same_topic(cluster, topic_ok, name, cp):
                # re-created under the same name since the session cached it (Kafka's
                # ReplicaManager refuses the read the same way)
                error = ErrorCode.INCONSISTENT_TOPIC_ID
                plog = None
            elif ctx.replicas is not None and (error := replica_error(
                    ctx, name, cp.partition, cp.current_leader_epoch)) != ErrorCode.NONE:
                pass
            elif ctx.replicas is None and cp.current_leader_epoch > LEADER_EPOCH:
                error = ErrorCode.UNKNOWN_LEADER_EPOCH
            else:
                error = ErrorCode.NONE
                offset = cp.fetch_offset
                hw = plog.high_watermark
                start = plog.log_start_offset
                if (hw == cp.high_watermark and start == cp.local_log_start_offset
                        and start <= offset <= plog.log_end_offset
                        and offset >= (plog.last_stable_offset if read_committed else hw)
                        and cp.partition_max_bytes >= 0):
                    continue  # no records to read and nothing the fetcher does not know
        data, size = _read_partition(cp, plog, error, name, read_committed, remaining,
                                     total == 0, zero_copy=zero_copy)
        total += size
        remaining = max(remaining - size, 0)
        if data.error_code != ErrorCode.NONE:
            errored = True
        if cp.must_respond(data, update=False):
            picked.append((cp, data))
    return picked, total, errored


def _session_keys(session: FetchSession) -> Iterator[tuple[str, int]]:
    """The (topic name, partition) of each session partition whose topic has a name."""
    for cp in session.partitions.values():
        if cp.topic is not None:
            yield cp.topic, cp.partition


def _same_topic(cluster: Cluster, seen: dict[str, bool], name: str, cp: CachedPartition) -> bool:
    ok = seen.get(name)
    if ok is None:
        topic = cluster.get(name)
        ok = seen[name] = topic is not None and topic.topic_id == cp.topic_id
    return ok


def _incremental_response(inc: IncrementalFetch,
                          picked: list[tuple[CachedPartition, PartitionData]]) -> FetchResponse:
    """The partitions that must be sent, remembered in the session; consecutive partitions
    of one topic share a topic entry, as in Kafka's responses."""
    session = inc.session
    if not inc.still_current():
        log.info("fetch session moved on while a fetch on it waited (a duplicate request?)",
                 session_id=session.id, expected_epoch=inc.expected_epoch, epoch=session.epoch)
        return FetchResponse(error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                             session_id=session.id)
    responses: list[FetchResponse.FetchableTopicResponse] = []
    last: object = None
    datas: list[PartitionData] = []
    for cp, data in picked:
        cp.must_respond(data, update=True)
        inc.sent(cp, bool(data.records))
        tkey = cp.key[0]
        if tkey != last:
            last = tkey
            datas = []
            responses.append(FetchResponse.FetchableTopicResponse(
                topic=cp.topic or "", topic_id=cp.topic_id, partitions=datas))
        datas.append(data)
    return FetchResponse(error_code=ErrorCode.NONE, session_id=session.id, responses=responses)


async def _long_poll_session(ctx: RequestContext, inc: IncrementalFetch, request: FetchRequest,
                             read_committed: bool, max_bytes: int) -> FetchResponse:
    """An incremental fetch: read the session until min_bytes, an error, max_wait or a newer
    request on the session. The session keeps the watch on its partitions across polls
    (made here the first time one waits); a fetch on a session no longer cached watches on
    its own, for this poll only."""
    partitions = ctx.partitions
    session = inc.session
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000
    own: Watch | None = None
    try:
        while True:
            watch = session.watch if own is None else own
            if watch is not None:
                watch.rearm()
            seen = partitions.changes
            picked, total, errored = _read_session(ctx, session, read_committed, max_bytes,
                                                   ctx.client.zero_copy)
            left = deadline - time.monotonic()
            if errored or total >= request.min_bytes or left <= 0 or not inc.still_current():
                return _incremental_response(inc, picked)
            if watch is None:  # too little, nobody watches: watch, then park
                watch = partitions.watch(_session_keys(session))
                if session.cached_size == -1:  # evicted or closed meanwhile
                    own = watch
                else:
                    session.watch = watch
                if partitions.changes != seen:
                    continue  # news during the pass: read again
            await partitions.wait(watch, left)
            if not inc.still_current():  # before re-arming: the newer request's watch now
                return _incremental_response(inc, [])
    finally:
        if own is not None:
            own.close()


async def handle(ctx: RequestContext, request: FetchRequest) -> FetchResponse:
    version = ctx.api_version
    replica_id = request.replica_state.replica_id if version >= 15 else request.replica_id
    by_id = ctx.cluster.by_id

    def names(topic_id: uuid.UUID) -> str | None:
        topic = by_id.get(topic_id)
        return topic.name if topic is not None else None

    session = ctx.fetch_sessions.new_context(version, request, privileged=replica_id >= 0,
                                             names=names, now_ms=ctx.clock.now_ms())
    if isinstance(session, SessionError):
        return FetchResponse(error_code=session.error, session_id=INVALID_SESSION_ID)
    read_committed = request.isolation_level == READ_COMMITTED
    # As Kafka: the response is bounded by the broker's fetch.max.bytes too.
    max_bytes = min(request.max_bytes, ctx.config.get_int("fetch.max.bytes"))
    if isinstance(session, IncrementalFetch):  # the session has partitions: it may wait
        return await _long_poll_session(ctx, session, request, read_committed, max_bytes)
    missing = ErrorCode.UNKNOWN_TOPIC_ID if version >= 13 else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    zero_copy = ctx.client.zero_copy
    wait_ms = max(request.max_wait_ms, 0) if any(t.partitions for t in request.topics) else 0
    deadline = time.monotonic() + wait_ms / 1000
    partitions = ctx.partitions
    watch = None
    try:
        while True:
            seen = partitions.changes
            # Resolved on every pass: a topic deleted (or re-created) while this fetch waits
            # answers with its error instead of reading a closed log.
            resolved = _resolve(ctx, request)
            responses, total, errored = _read_all(request, resolved, read_committed,
                                                  max_bytes, missing, zero_copy)
            left = deadline - time.monotonic()
            if errored or total >= request.min_bytes or left <= 0:
                break
            if watch is None:  # the first pass found too little: watch, then park
                watch = partitions.watch((name, p.partition) for _, name, parts in resolved
                                         if name is not None for p, _, _ in parts)
                if partitions.changes != seen:
                    continue  # news during the pass: read again
            await partitions.wait(watch, left)
            watch.rearm()
    finally:
        if watch is not None:
            watch.close()
    session_id = INVALID_SESSION_ID
    if isinstance(session, FullFetch):
        count = sum(len(parts) for _, _, parts in resolved)
        session_id = session.create_session(
            ctx.clock.now_ms(), count, lambda: _session_entries(version, resolved, responses))
    return FetchResponse(error_code=ErrorCode.NONE, session_id=session_id, responses=responses)
