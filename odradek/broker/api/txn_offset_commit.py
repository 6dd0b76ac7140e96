"""TxnOffsetCommit (key 28), versions 0-6.

- The offsets are written as OffsetCommit records in a transactional batch (the producer's id
  and epoch) to the group's `__consumer_offsets` partition and staged: OffsetFetch does not
  return them (and answers UNSTABLE_OFFSET_COMMIT to require_stable) until EndTxn's marker
  commits them; an abort drops them.
- First, as Kafka's transaction verification, the group's offsets partition must be in the
  producer's open transaction (AddOffsetsToTxn): otherwise INVALID_TXN_STATE, or
  TRANSACTION_ABORTABLE for v4; an unknown producer id is INVALID_PRODUCER_ID_MAPPING and
  another epoch INVALID_PRODUCER_EPOCH. v5+ (transactions v2): the offsets partition is
  added to the transaction instead (the AddOffsetsToTxn the client no longer sends), with
  the same errors; CONCURRENT_TRANSACTIONS (the previous transaction completing) is returned
  for the client to retry.
- Authorization (when an authorizer is on): TRANSACTIONAL_ID WRITE, then GROUP READ, for
  every partition (TRANSACTIONAL_ID_ / GROUP_AUTHORIZATION_FAILED), then TOPIC READ per topic
  (TOPIC_AUTHORIZATION_FAILED).
- v6 names topics by id (KIP-1319): an unknown id is UNKNOWN_TOPIC_ID.
- v3+ may name the group member (generation, member id, instance id), checked as for
  OffsetCommit; unknown topics or partitions: UNKNOWN_TOPIC_OR_PARTITION per partition.
"""

from __future__ import annotations

import uuid

from odradek.broker.api._auth import Op, group_allowed, topic_allowed, txn_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.group.model import TopicPartition
from odradek.coordinator.group.records import OFFSETS_TOPIC, OffsetAndMetadata
from odradek.wire import ErrorCode
from odradek.wire._generated.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)

Resp = TxnOffsetCommitResponse


def _response(errors: dict[TopicPartition, ErrorCode], ids: dict[str, uuid.UUID] | None = None
              ) -> TxnOffsetCommitResponse:
    by_topic: dict[str, list[Resp.TxnOffsetCommitResponsePartition]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append(
            Resp.TxnOffsetCommitResponsePartition(partition_index=partition, error_code=error))
    topics = []
    for t, ps in by_topic.items():
        answer = Resp.TxnOffsetCommitResponseTopic(name=t, partitions=ps)
        if ids is not None:
            answer.topic_id = ids[t]
        topics.append(answer)
    return Resp(topics=topics)


async def handle(ctx: RequestContext, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    v = ctx.api_version
    now = ctx.clock.now_ms()
    errors: dict[TopicPartition, ErrorCode] = {}
    offsets: dict[TopicPartition, OffsetAndMetadata] = {}
    ids: dict[str, uuid.UUID] | None = {} if v >= 6 else None
    # authorization (off: None): TRANSACTIONAL_ID WRITE and GROUP READ for all (Kafka's order),
    # else TOPIC READ per topic
    denied: ErrorCode | None = None
    if ctx.authorizer is not None:
        denied = (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                  if not txn_allowed(ctx, Op.WRITE, request.transactional_id)
                  else ErrorCode.GROUP_AUTHORIZATION_FAILED
                  if not group_allowed(ctx, Op.READ, request.group_id) else ErrorCode.NONE)
    for topic in request.topics:
        name = topic.name
        if ids is not None:
            found = ctx.cluster.by_id.get(topic.topic_id)
            # an unknown id is answered under its id (the name is not in v6+)
            name = found.name if found is not None else f"<unknown {topic.topic_id}>"
            ids[name] = topic.topic_id
            if found is None:
                errors.update({(name, p.partition_index): ErrorCode.UNKNOWN_TOPIC_ID
                               for p in topic.partitions})
                continue
        if denied is not None:
            code = denied or (None if topic_allowed(ctx, Op.READ, name)
                              else ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            if code is not None:
                errors.update({(name, p.partition_index): code for p in topic.partitions})
                continue
        for p in topic.partitions:
            tp = (name, p.partition_index)
            if not ctx.cluster.has_partition(name, p.partition_index):
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            offsets[tp] = OffsetAndMetadata(
                offset=p.committed_offset,
                leader_epoch=p.committed_leader_epoch if v >= 2 else -1,
                metadata=p.committed_metadata or "",
                commit_timestamp=now,
            )
    if offsets:
        if not ctx.groups.ensure_topic():
            errors.update(dict.fromkeys(offsets, ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return _response(errors, ids)
        offsets_tp = (OFFSETS_TOPIC, ctx.groups.shard.partition_for(request.group_id))
        if v >= 5:  # transactions v2: the implicit AddOffsetsToTxn
            error = await ctx.transactions.wait(lambda t: t.add_partitions(
                request.transactional_id, request.producer_id, request.producer_epoch,
                {offsets_tp}, client_tv=2))
        else:
            verified = await ctx.transactions.read(lambda t: t.verify_partitions(
                request.transactional_id, request.producer_id, request.producer_epoch,
                {offsets_tp}))
            error = verified[offsets_tp]
        if error == ErrorCode.TRANSACTION_ABORTABLE and v < 4:
            error = ErrorCode.INVALID_TXN_STATE
        elif error == ErrorCode.PRODUCER_FENCED:
            error = ErrorCode.INVALID_PRODUCER_EPOCH  # what producers expect here (as Kafka)
        if error != ErrorCode.NONE:
            errors.update(dict.fromkeys(offsets, error))
        else:
            member_id = request.member_id if v >= 3 else ""
            instance_id = request.group_instance_id if v >= 3 else None
            # Called GenerationId before Kafka 4 (KIP-848 reuses it for the member epoch).
            generation_id = request.generation_id_or_member_epoch if v >= 3 else -1
            committed = await ctx.groups.wait(lambda g: g.commit_txn_offsets(
                request.group_id, request.producer_id, request.producer_epoch, member_id,
                instance_id, generation_id, offsets))
            errors.update(committed)
    return _response(errors, ids)
