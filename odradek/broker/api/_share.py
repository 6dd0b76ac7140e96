"""What ShareFetch and ShareAcknowledge share: reading share-partitions, applying
acknowledgements, the request checks."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from odradek.broker.api._auth import Op, topic_allowed
from odradek.broker.api.share_group_heartbeat import log_info
from odradek.broker.context import ClientInfo, RequestContext
from odradek.broker.storage.errors import OffsetOutOfRangeError
from odradek.coordinator.share.coordinator import ShareCoordinator
from odradek.coordinator.share.partition import AckBatch, AcquiredRecords, AcquireMode
from odradek.coordinator.share.state import SharePartitionKey
from odradek.wire import ErrorCode
from odradek.wire.records import iter_batches

TopicIdPartition = tuple[uuid.UUID, int]

# Kafka's default ShareFetch MaxRecords when a v1 client sends none (max.poll.records).
DEFAULT_MAX_RECORDS = 500


@dataclass(slots=True)
class Read:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    records: bytes = b""
    acquired: list[AcquiredRecords] = field(default_factory=list)


def connection_id(client: ClientInfo) -> str:
    """A share session's connection (`ClientInfo.connection_id`)."""
    return client.connection_id


def unreadable(ctx: RequestContext, tps: Iterable[TopicIdPartition]) -> set[TopicIdPartition]:
    """The share-partitions of known topics the principal may not READ (Kafka answers each
    TOPIC_AUTHORIZATION_FAILED; unknown topic ids keep their own error)."""
    if ctx.authorizer is None:
        return set()
    by_id = ctx.cluster.by_id
    return {tp for tp in tps
            if tp[0] in by_id and not topic_allowed(ctx, Op.READ, by_id[tp[0]].name)}


def check_ids(group_id: str | None, member_id: str | None) -> str | None:
    """Kafka's ShareRequestMetadata checks: a group id, a member id."""
    if not group_id:
        return "The group id cannot be empty."
    if not member_id:
        return "The member id cannot be empty."
    return None


def ack_batches(batches: Iterable[tuple[int, int, Sequence[int]]]) -> list[AckBatch]:
    return [AckBatch(first, last, tuple(types)) for first, last, types in batches]


def read_partitions(ctx: RequestContext, s: ShareCoordinator, group_id: str, member_id: str,
                    tps: Sequence[TopicIdPartition], max_records: int, max_bytes: int,
                    mode: AcquireMode, batch_size: int, now: int) -> dict[TopicIdPartition, Read]:
    """One read pass over the session's share-partitions, acquiring what the member may
    have, inside one shard call (no other request interleaves between read and acquire)."""
    out: dict[TopicIdPartition, Read] = {}
    budget, bytes_left = max_records, max_bytes
    for tp in tps:
        topic_id, partition = tp
        topic = ctx.cluster.by_id.get(topic_id)
        if topic is None:
            out[tp] = Read(ErrorCode.UNKNOWN_TOPIC_ID, "The topic id is not known.")
            continue
        plog = ctx.partitions.log(topic.name, partition)
        info = log_info(ctx, topic.name, partition)
        if plog is None or info is None:
            out[tp] = Read(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                           "The partition is not hosted here.")
            continue
        key = SharePartitionKey(group_id, topic_id, partition)
        if s.partitions.get(key) is None and s.store.read_state(key) is None:
            # Not initialised by the group coordinator (not a share group's partition, or
            # not assigned yet): Kafka's share coordinator has no state to read.
            out[tp] = Read(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                           "The share-partition state is not initialised.")
            continue
        sp = s.share_partition(key, info, now)
        if sp.start_offset < plog.log_start_offset:
            sp.move_log_start(plog.log_start_offset)
        read = out[tp] = Read()
        if budget <= 0 or bytes_left <= 0 or not sp.can_acquire():
            continue
        offset = sp.next_fetch_offset()
        hw = plog.high_watermark
        if offset >= hw:
            continue
        try:
            data = plog.read(offset, bytes_left, upper_bound=hw, min_one_message=True)
        except OffsetOutOfRangeError:
            sp.move_log_start(plog.log_start_offset)
            continue
        spans: list[tuple[int, int, int]] = []  # (base, last, end byte)
        pos = 0
        for batch in iter_batches(data, allow_partial_tail=True):
            pos += batch.size
            spans.append((batch.base_offset, batch.base_offset + batch.last_offset_delta, pos))
        if not spans:
            continue
        acquired = s.acquire(key, member_id, [(b, last) for b, last, _ in spans], budget, now,
                             mode, batch_size)
        if not acquired:
            continue
        last_acquired = max(a.last_offset for a in acquired)
        first_acquired = min(a.first_offset for a in acquired)
        start = 0
        end = pos
        for base, last, end_byte in spans:
            if last < first_acquired:
                start = end_byte
            if base <= last_acquired:
                end = end_byte
        read.records = bytes(data[start:end])
        read.acquired = list(acquired)
        budget -= sum(a.last_offset - a.first_offset + 1 for a in acquired)
        bytes_left -= end - start
    return out
