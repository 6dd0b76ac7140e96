"""Produce (key 0), versions 3-13.

- `--brokers N` (docs/cluster.md): a partition this broker does not lead is
  NOT_LEADER_OR_FOLLOWER; acks=-1 with an ISR smaller than min.insync.replicas is
  NOT_ENOUGH_REPLICAS (before the append), and waits until the high watermark passes the
  records (REQUEST_TIMED_OUT after timeout_ms; NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR
  shrank below min.insync.replicas meanwhile). Batches carry the partition's leader epoch.
- min.insync.replicas above 1 with one broker: acks=-1 is NOT_ENOUGH_REPLICAS, as on Kafka
  (one replica in the ISR).
- acks 0, 1 and -1 (single node: -1 is satisfied by the local write); acks=0 gets no
  response, and a failed acks=0 request closes the connection, as Kafka does, so the client
  notices. Other acks values: INVALID_REQUIRED_ACKS.
- Each partition's records must be exactly one magic-2 batch (Kafka's rule for v3+), else
  INVALID_RECORD; a CRC mismatch or malformed batch is CORRUPT_MESSAGE; a batch over the
  topic's max.message.bytes is MESSAGE_TOO_LARGE; keyless records on a compacted topic are
  INVALID_RECORD with record_errors (v8+). The batch's partition leader epoch is overwritten,
  never validated.
- Nothing in the batch header is trusted (Kafka's LogValidator.validateBatch, plus the record
  walk Kafka's iterators do): recordsCount must be >= 1, lastOffsetDelta = recordsCount - 1,
  and the records present must be exactly recordsCount records filling the batch; otherwise
  INVALID_RECORD. Offset deltas other than 0..n-1: an uncompressed batch is stored as sent
  (as Kafka does); a compressed one is refused with INVALID_RECORD (Kafka rewrites it; no v2
  client writes one). Every record must be well formed as Kafka's DefaultRecord.readFrom reads
  it (its fields fill its length exactly, no negative headers count or header key length),
  else INVALID_RECORD: keys, values and headers are measured, not copied.
- Compressed records are validated as a stream (64 KiB chunks, one record held at a time) up
  to 16 x the topic's max.message.bytes of decompressed bytes. Kafka 4.x has no cap (it
  decompresses record by record); the bound keeps a small "bomb" from costing the broker
  more than that much work. Past it the batch is MESSAGE_TOO_LARGE, which the Java producer
  answers by splitting the batch and retrying; a corrupt stream is CORRUPT_MESSAGE.
- A zstd batch in Produce v3-v6: UNSUPPORTED_COMPRESSION_TYPE (zstd needs v7+, KIP-110).
- Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION (Produce never auto-creates topics,
  as in Kafka); internal topics: INVALID_TOPIC_EXCEPTION.
- Idempotent and transactional batches go through the partition's producer state (see
  `storage/producer_state.py`): a retried batch is answered with its original offsets and not
  written twice; OUT_OF_ORDER_SEQUENCE_NUMBER; INVALID_PRODUCER_EPOCH for an older producer
  epoch (never a leader-epoch error: clients would retry it until they time out);
  INVALID_TXN_STATE for a non-transactional batch inside an open transaction.
- Transactional records need a transactional id, else every partition is
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED (Kafka's authorization answer); transactional
  batches of more than one producer in one request: INVALID_PRODUCER_ID_MAPPING.
- The first transactional batch of a transaction on a partition goes to the transaction
  coordinator first (Kafka's ReplicaManager/AddPartitionsToTxnManager). v3-11 (KIP-890 part
  1): the partition must have been added by the client's AddPartitionsToTxn, else
  INVALID_TXN_STATE (TRANSACTION_ABORTABLE for v11); v12+ (transactions v2, KIP-890 part 2):
  the partitions are added to the producer's transaction (starting one), CONCURRENT_TRANSACTIONS
  (the previous transaction still completing) retried for up to 100 ms
  (`add.partitions.to.txn.retry.backoff.max.ms`) and then returned. A stale epoch is
  INVALID_PRODUCER_EPOCH, an unknown producer INVALID_PRODUCER_ID_MAPPING; coordinator
  unavailability (and CONCURRENT_TRANSACTIONS before v12) is NOT_ENOUGH_REPLICAS, which
  clients retry. This keeps a zombie producer from opening a transaction that no marker
  would ever close.
- Authorization (when an authorizer is on, `_auth.py`): a transactional id needs
  TRANSACTIONAL_ID WRITE, else every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
  each topic needs TOPIC WRITE, else its partitions are TOPIC_AUTHORIZATION_FAILED (before
  the existence check, as Kafka, so a denied principal cannot probe topic names).
- v13 names topics by id (KIP-516): an unknown id is UNKNOWN_TOPIC_ID.
- Topic configs applied as Kafka's LogValidator does (`_validation.py`): on CreateTime
  topics, `message.timestamp.before.max.ms` / `after.max.ms` (after: one hour by default,
  KIP-1030) bound each record's timestamp around the broker's clock, else INVALID_TIMESTAMP
  with record_errors; `compression.type` other than `producer` recompresses a batch whose
  codec differs, at `compression.<codec>.level` (the rebuilt batch is checked against
  max.message.bytes again). Each record's timestamp is bounded, not the header's
  maxTimestamp, from the span the record walk found (no second walk), and a header
  maxTimestamp other than the records' largest is corrected as Kafka does; a batch in the
  producer's codec is stored as it came.
- A write that fails is undone (the log is as before) and answered KAFKA_STORAGE_ERROR,
  retriable: on a full disk until space is freed, for a failed log dir until a restart (see
  `storage/log.py`).
- Appends wake long-polling fetches.
- Not implemented yet: quotas (throttle_time_ms is 0), Kafka's VerificationGuard (an EndTxn
  landing between the coordinator's answer and the append), v0-2 (legacy message format;
  Kafka 4.4 advertises them for librdkafka, KAFKA-18659, but refuses them).
"""

from __future__ import annotations

import anyio
import structlog

from odradek.broker.api._auth import Op, topic_allowed, txn_allowed
from odradek.broker.api._validation import check_timestamps, corrected_max_timestamp, recompress
from odradek.broker.cluster import INTERNAL_TOPICS, LEADER_EPOCH
from odradek.broker.connection import CloseConnection
from odradek.broker.context import RequestContext
from odradek.broker.storage.errors import (
    MessageTooLargeError,
    ProducerStateError,
    StorageError,
    error_code_for,
)
from odradek.broker.storage.log import PartitionLog
from odradek.wire import ErrorCode, RecordBatchError
from odradek.wire._generated.produce import ProduceRequest, ProduceResponse
from odradek.wire.compression import CompressionType
from odradek.wire.exceptions import DecompressedTooLargeError, InvalidRecordError
from odradek.wire.records import LEGACY_MAGIC_OFFSET, RecordBatch, iter_batches, set_max_timestamp

log = structlog.get_logger("odradek.produce")

ZSTD_MIN_PRODUCE_VERSION = 7  # KIP-110: older requests may not carry zstd batches

PartitionResponse = ProduceResponse.PartitionProduceResponse

# Compressed records are validated up to this many times the topic's max.message.bytes of
# decompressed bytes (see the module docstring).
DECOMPRESSED_LIMIT_FACTOR = 16


def _validate(records: memoryview, compacted: bool, max_message_bytes: int
              ) -> tuple[ErrorCode, str | None, list[int], RecordBatch | None]:
    """Kafka's ProduceRequest.validateRecords plus the cheap per-batch checks of LogValidator.

    Returns (error, message, indexes of bad records, the batch when it is valid). Every
    batch's records are walked once (`RecordBatch.check_records`: lengths, offset deltas and,
    on compacted topics, key lengths; values and headers are skipped), after the size and
    CRC checks, as Kafka's LogValidator iterates them."""
    if len(records) > LEGACY_MAGIC_OFFSET and records[LEGACY_MAGIC_OFFSET] != 2:
        return (ErrorCode.INVALID_RECORD,
                f"Produce requests with version 3+ are only allowed to contain record batches "
                f"with magic version 2, got magic {records[LEGACY_MAGIC_OFFSET]}", [], None)
    batches = list(iter_batches(records))  # RecordBatchError propagates: CORRUPT_MESSAGE
    if len(batches) != 1:
        return (ErrorCode.INVALID_RECORD,
                "Produce requests with version 3+ are only allowed to contain exactly one "
                f"record batch per partition, got {len(batches)}", [], None)
    batch: RecordBatch = batches[0]
    if batch.is_control:
        return ErrorCode.INVALID_RECORD, "Clients may not produce control batches", [], None
    if batch.size > max_message_bytes:  # Kafka checks the size before any record
        return (ErrorCode.MESSAGE_TOO_LARGE,
                f"The batch of {batch.size} bytes is larger than max.message.bytes "
                f"({max_message_bytes})", [], None)
    if not batch.crc_ok():  # Kafka checks the CRC before it reads any record
        return (ErrorCode.CORRUPT_MESSAGE,
                f"Record batch is corrupt (stored crc = {batch.crc}, computed crc = "
                f"{batch.compute_crc()})", [], None)
    try:
        keyless = batch.check_records(DECOMPRESSED_LIMIT_FACTOR * max_message_bytes,
                                      keys_required=compacted)
    except DecompressedTooLargeError as e:
        return (ErrorCode.MESSAGE_TOO_LARGE,
                f"The batch decompresses to more than {DECOMPRESSED_LIMIT_FACTOR} times "
                f"max.message.bytes ({max_message_bytes}): {e}", [], None)
    except InvalidRecordError as e:
        return ErrorCode.INVALID_RECORD, f"Invalid record batch: {e}", [], None
    if compacted and keyless:
        return (ErrorCode.INVALID_RECORD,
                "Compacted topic cannot accept message without key in topic partition",
                keyless, None)
    return ErrorCode.NONE, None, [], batch


def _verify_transaction(ctx: RequestContext, topic: str, partition: int, plog: PartitionLog,
                        batch: RecordBatch, transactional_id: str | None) -> ErrorCode:
    if not batch.is_transactional or transactional_id is None:
        return ErrorCode.NONE
    entry = plog.producer_state.last_entry(batch.producer_id)
    if entry is not None and entry.current_txn_first_offset is not None:
        return ErrorCode.NONE  # its transaction is already open here
    tp = (topic, partition)
    error = ctx.transactions.shard.verify_partitions(
        transactional_id, batch.producer_id, batch.producer_epoch, {tp})[tp]
    if error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if error == ErrorCode.TRANSACTION_ABORTABLE and ctx.api_version <= 10:
        return ErrorCode.INVALID_TXN_STATE
    return error


def _check_partition(ctx: RequestContext, topic: str, data: ProduceRequest.PartitionProduceData
                     ) -> PartitionResponse | tuple[PartitionLog, memoryview, RecordBatch]:
    """The checks before any transaction is consulted: the partition and its one valid
    batch (Kafka's ProduceRequest.validateRecords and LogValidator's batch checks)."""
    resp = PartitionResponse(index=data.index, base_offset=-1, log_start_offset=-1)
    if topic in INTERNAL_TOPICS:
        resp.error_code = ErrorCode.INVALID_TOPIC_EXCEPTION
        return resp
    plog = ctx.partitions.log(topic, data.index)
    if plog is None:
        resp.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return resp
    records = data.records
    if records is None or len(records) == 0:
        resp.error_code = ErrorCode.INVALID_RECORD
        resp.error_message = "Produce request has no record batch for this partition"
        return resp
    # Offsets are patched in place: a read-only buffer (not the server's) is copied first.
    if isinstance(records, memoryview) and not records.readonly:
        view = records
    else:
        view = memoryview(bytearray(records))
    try:
        code, message, bad, batch = _validate(view, plog.config.compacts,
                                              plog.config.max_message_bytes)
    except RecordBatchError as e:
        resp.error_code, resp.error_message = error_code_for(e), str(e)
        log.warning("produce rejected", topic=topic, partition=data.index,
                    error=resp.error_code.name, reason=str(e), client=ctx.client_id)
        return resp
    if batch is None:
        resp.error_code, resp.error_message = code, message
        resp.record_errors = [
            ProduceResponse.BatchIndexAndErrorMessage(batch_index=i,
                                                      batch_index_error_message=message)
            for i in bad]
        log.warning("produce rejected", topic=topic, partition=data.index,
                    error=code.name, reason=message, client=ctx.client_id)
        return resp
    if batch.compression == CompressionType.ZSTD and ctx.api_version < ZSTD_MIN_PRODUCE_VERSION:
        resp.error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE  # as Kafka (KIP-110)
        log.warning("produce rejected", topic=topic, partition=data.index,
                    error=resp.error_code.name, reason="zstd needs Produce v7+",
                    client=ctx.client_id)
        return resp
    return plog, view, batch


def _append_partition(ctx: RequestContext, topic: str, index: int, plog: PartitionLog,
                      view: memoryview, batch: RecordBatch, now_ms: int) -> PartitionResponse:
    resp = PartitionResponse(index=index, base_offset=-1, log_start_offset=-1)
    try:
        rejected = check_timestamps(batch, plog.config, now_ms)
        if rejected is not None:
            resp.error_code, resp.error_message = rejected.code, rejected.message
            resp.record_errors = [
                ProduceResponse.BatchIndexAndErrorMessage(batch_index=i,
                                                          batch_index_error_message=m)
                for i, m in rejected.records]
            log.info("produce rejected", topic=topic, partition=index,
                     error=rejected.code.name, reason=rejected.records[0][1],
                     client=ctx.client_id)
            return resp
        if not plog.config.log_append_time:  # LogAppendTime: the log stamps the batch itself
            fixed = corrected_max_timestamp(batch)
            if fixed is not None:  # the header's maxTimestamp is not its records' (re-CRCs)
                set_max_timestamp(view, 0, 0, fixed)
                batch = RecordBatch(view)  # the header as it now is
        rebuilt = recompress(batch, plog.config)
        if rebuilt is not None:
            if len(rebuilt) > plog.config.max_message_bytes:
                raise MessageTooLargeError(
                    f"Message batch size is {len(rebuilt)} bytes in append to partition "
                    f"{topic}-{index} which exceeds the maximum configured size of "
                    f"{plog.config.max_message_bytes}.")
            view = memoryview(rebuilt)
        epoch = LEADER_EPOCH if ctx.replicas is None else ctx.replicas.leader_epoch(topic, index)
        info = plog.append(view, leader_epoch=epoch, now_ms=now_ms,
                           verify_crc=False)  # _validate checked it
    except (RecordBatchError, MessageTooLargeError, ProducerStateError) as e:
        code = error_code_for(e)  # CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, the producer's error
        resp.error_code, resp.error_message = code, str(e)
        # A refused producer (sequence, epoch, transaction) is routine; a bad batch is not.
        report = log.info if isinstance(e, ProducerStateError) else log.warning
        report("produce rejected", topic=topic, partition=index, error=code.name,
               reason=str(e), client=ctx.client_id)
        return resp
    except StorageError as e:
        # Nothing was written (a full disk: the log logs it once) or the log dir is offline;
        # KAFKA_STORAGE_ERROR is retriable. A log closed meanwhile: NOT_LEADER_OR_FOLLOWER.
        resp.error_code, resp.error_message = error_code_for(e), str(e)
        return resp
    resp.error_code = ErrorCode.NONE
    resp.base_offset = info.first_offset
    resp.log_append_time_ms = info.log_append_time
    resp.log_start_offset = info.log_start_offset
    return resp


# Coordinator answers a client would not retry well, sent as NOT_ENOUGH_REPLICAS (retriable,
# no metadata refresh), as Kafka's ReplicaManager does.
_RETRIABLE_AS_NOT_ENOUGH_REPLICAS = frozenset({
    ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
})
ADD_PARTITIONS_RETRY_BACKOFF_MS = 20  # add.partitions.to.txn.retry.backoff.ms
ADD_PARTITIONS_RETRY_MAX_MS = 100  # add.partitions.to.txn.retry.backoff.max.ms


def _needs_transaction(plog: PartitionLog, batch: RecordBatch) -> bool:
    """A transactional batch whose producer has no transaction open on this partition yet
    (Kafka's maybeStartTransactionVerification)."""
    if not batch.is_transactional:
        return False
    entry = plog.producer_state.last_entry(batch.producer_id)
    return entry is None or entry.current_txn_first_offset is None


def _produce_error(error: ErrorCode, version: int) -> tuple[ErrorCode, str | None]:
    """A coordinator answer as Produce sends it (AddPartitionsToTxnManager, ReplicaManager)."""
    if error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH, None
    if error == ErrorCode.TRANSACTION_ABORTABLE and version <= 10:
        return ErrorCode.INVALID_TXN_STATE, None
    if error == ErrorCode.INVALID_TXN_STATE:
        return error, "Partition was not added to the transaction"
    if error in _RETRIABLE_AS_NOT_ENOUGH_REPLICAS or (
            error == ErrorCode.CONCURRENT_TRANSACTIONS and version <= 11):
        return (ErrorCode.NOT_ENOUGH_REPLICAS,
                "Unable to verify the partition has been added to the transaction. "
                f"Underlying error: {error.name}")
    return error, None


async def _add_or_verify(ctx: RequestContext, transactional_id: str, producer_id: int,
                         producer_epoch: int, partitions: set[tuple[str, int]]
                         ) -> dict[tuple[str, int], ErrorCode]:
    """v12+ (transactions v2): add the partitions to the producer's transaction, retrying
    CONCURRENT_TRANSACTIONS (a commit finishing) for up to 100 ms as Kafka does; v11 and
    older: verify they were added (AddPartitionsToTxn by the client)."""
    if ctx.api_version <= 11:
        return ctx.transactions.shard.verify_partitions(
            transactional_id, producer_id, producer_epoch, partitions)
    deadline = ctx.clock.now_ms() + ADD_PARTITIONS_RETRY_MAX_MS
    while True:
        error = await ctx.transactions.wait(lambda t: t.add_partitions(
            transactional_id, producer_id, producer_epoch, partitions, client_tv=2))
        if error != ErrorCode.CONCURRENT_TRANSACTIONS or ctx.clock.now_ms() >= deadline:
            return dict.fromkeys(partitions, error)
        await anyio.sleep(ADD_PARTITIONS_RETRY_BACKOFF_MS / 1000)


def _failed(topics: list[tuple[str, ProduceRequest.TopicProduceData]], error: ErrorCode
            ) -> dict[tuple[str, int], PartitionResponse]:
    return {(name, d.index): PartitionResponse(index=d.index, error_code=error, base_offset=-1,
                                               log_start_offset=-1)
            for name, topic in topics for d in topic.partition_data}


async def handle(ctx: RequestContext, request: ProduceRequest) -> ProduceResponse | None:
    now_ms = ctx.clock.now_ms()
    if request.transactional_id is not None:
        await ctx.transactions.ready()  # verification below reads the coordinator's state
    by_id = ctx.api_version >= 13
    topics: list[tuple[str, ProduceRequest.TopicProduceData]] = []
    names: list[str | None] = []  # per request topic; None: an unknown topic id (v13+)
    answers: dict[tuple[str, int], PartitionResponse] = {}
    for topic in request.topic_data:
        if by_id:
            found = ctx.cluster.by_id.get(topic.topic_id)
            names.append(None if found is None else found.name)
            if found is not None:
                topics.append((found.name, topic))
        else:
            names.append(topic.name)
            topics.append((topic.name, topic))
    checked: dict[tuple[str, int], tuple[PartitionLog, memoryview, RecordBatch]] = {}
    denied: set[str] = set()
    if ctx.authorizer is not None:  # off: no cost beyond this test
        if request.transactional_id is not None and not txn_allowed(
                ctx, Op.WRITE, request.transactional_id):
            answers = _failed(topics, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            denied = {name for name, _ in topics}
        else:
            denied = {name for name, _ in topics if not topic_allowed(ctx, Op.WRITE, name)}
            answers.update(_failed([t for t in topics if t[0] in denied],
                                   ErrorCode.TOPIC_AUTHORIZATION_FAILED))
    for name, topic in topics:
        if name in denied:
            continue
        for data in topic.partition_data:
            if request.acks not in (-1, 0, 1):
                answers[(name, data.index)] = PartitionResponse(
                    index=data.index, error_code=ErrorCode.INVALID_REQUIRED_ACKS, base_offset=-1)
                continue
            result = _check_partition(ctx, name, data)
            if isinstance(result, PartitionResponse):
                answers[(name, data.index)] = result
            elif (request.acks == -1 and ctx.replicas is None
                  and getattr(result[0].config, "min_insync_replicas", 1) > 1):
                # one broker: the ISR is this one replica (Kafka's Partition check)
                answers[(name, data.index)] = PartitionResponse(
                    index=data.index, error_code=ErrorCode.NOT_ENOUGH_REPLICAS, base_offset=-1,
                    log_start_offset=-1)
            elif ctx.replicas is not None and (refused := ctx.replicas.produce_error(
                    name, data.index, ctx.node.node_id, request.acks)) is not None:
                answers[(name, data.index)] = PartitionResponse(
                    index=data.index, error_code=refused, base_offset=-1, log_start_offset=-1)
            else:
                checked[(name, data.index)] = result
    transactional = {(b.producer_id, b.producer_epoch)
                     for _, _, b in checked.values() if b.is_transactional}
    if transactional and request.transactional_id is None:
        # Kafka: transactional records need a transactional id (its authorization).
        answers.update(_failed([t for t in topics if t[0] not in denied],
                               ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
        checked = {}
    elif len(transactional) > 1:
        answers = _failed(topics, ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        checked = {}
    elif transactional and request.transactional_id is not None:
        (pid, epoch), = transactional
        wanted = {tp for tp, (plog, _, batch) in checked.items()
                  if _needs_transaction(plog, batch)}
        if wanted:
            errors = await _add_or_verify(ctx, request.transactional_id, pid, epoch, wanted)
            for tp, error in errors.items():
                if error == ErrorCode.NONE:
                    continue
                code, message = _produce_error(error, ctx.api_version)
                answers[tp] = PartitionResponse(index=tp[1], error_code=code, base_offset=-1,
                                                log_start_offset=-1, error_message=message)
                del checked[tp]
                log.info("produce rejected", topic=tp[0], partition=tp[1], error=code.name,
                         reason="transaction verification failed", client=ctx.client_id)
    failed = (None in names
              or any(a.error_code != ErrorCode.NONE for a in answers.values()))
    for (name, index), (plog, view, batch) in checked.items():
        part = _append_partition(ctx, name, index, plog, view, batch, now_ms)
        answers[(name, index)] = part
        if part.error_code == ErrorCode.NONE:
            ctx.partitions.notify_appended(name, index)
        else:
            failed = True
    if request.acks == -1 and ctx.replicas is not None and checked:
        # --brokers N: acknowledged once the ISR holds the records (docs/cluster.md)
        targets = {tp: plog.log_end_offset for tp, (plog, _, _) in checked.items()
                   if answers[tp].error_code == ErrorCode.NONE}
        for tp, code in (await ctx.replicas.wait_acks_all(targets, request.timeout_ms)).items():
            if code != ErrorCode.NONE:
                answers[tp].error_code = code
    if request.acks == 0:
        if failed:
            raise CloseConnection("acks=0 produce request failed on at least one partition")
        return None
    responses = []
    for topic, resolved in zip(request.topic_data, names, strict=True):
        if resolved is None:  # Kafka: UNKNOWN_TOPIC_ID for an id it does not know
            parts = [PartitionResponse(index=d.index, error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                                       base_offset=-1, log_start_offset=-1)
                     for d in topic.partition_data]
        else:
            parts = [answers[(resolved, d.index)] for d in topic.partition_data]
        responses.append(ProduceResponse.TopicProduceResponse(
            name=topic.name, topic_id=topic.topic_id, partition_responses=parts))
    return ProduceResponse(responses=responses)
