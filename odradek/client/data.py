"""Records in and out: produce (one batch per partition), fetch, list offsets; blocking.

Produce sends RecordBatch v2 (`odradek.wire.records.build_batch`) with acks=all and no
idempotence; a record without a partition goes where the Java client's default partitioner
puts it: murmur2 of the key modulo the partition count, or round-robin without a key. Fetch
decodes batches lazily and hides control batches; with read_committed it drops the records of
aborted transactions as Kafka's consumer does (the aborted list of the answer, the ABORT
markers in the log). Versions are capped below the topic-id-only ones (Produce 13, Fetch 13+,
ListOffsets has none) so the same code serves every Kafka 2.x-4.x broker.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from odradek.client.admin import Admin, TopicInfo
from odradek.client.connection import ClientError, KafkaError
from odradek.wire import ErrorCode
from odradek.wire._generated.fetch import FetchRequest, FetchResponse
from odradek.wire._generated.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from odradek.wire._generated.produce import ProduceRequest, ProduceResponse
from odradek.wire.records import Record as WireRecord
from odradek.wire.records import build_batch, iter_batches

__all__ = ["EARLIEST", "LATEST", "ConsumedRecord", "Fetcher", "OutRecord", "list_offsets",
           "murmur2", "produce"]

EARLIEST = -2  # ListOffsets' timestamps for the log start and end
LATEST = -1
_PRODUCE_MAX = 12  # v13 names topics by id only
_FETCH_MAX = 12  # v13+ likewise
_PRODUCE_RETRY = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE,
                            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION})


@dataclass(frozen=True)
class OutRecord:
    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    partition: int | None = None
    timestamp: int | None = None


@dataclass(frozen=True)
class ConsumedRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2), as a signed int32."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest = length % 4
    tail = length - rest
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def _topic_ready(admin: Admin, topic: str, *, create: bool, timeout: float) -> TopicInfo:
    """The topic's metadata; with `create`, let the broker auto-create it (as producers do)."""
    from odradek.wire._generated.metadata import MetadataRequest, MetadataResponse

    deadline = time.monotonic() + timeout
    while True:
        request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                                  allow_auto_topic_creation=create)
        response, _ = admin.conn.call(request, MetadataResponse)
        (t,) = response.topics
        admin.metadata([])  # refresh the broker list too
        retriable = t.error_code in (ErrorCode.LEADER_NOT_AVAILABLE,
                                     ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if create else -999)
        ready = (t.error_code == ErrorCode.NONE and t.partitions
                 and all(p.leader_id >= 0 for p in t.partitions))
        if ready:
            return next(i for i in admin.topics([topic]) if i.name == topic)
        if not retriable and t.error_code != ErrorCode.NONE:
            raise KafkaError(t.error_code, f"topic {topic}")
        if time.monotonic() > deadline:
            raise ClientError(f"topic {topic} has no leader yet")
        time.sleep(0.05)


def produce(admin: Admin, topic: str, records: Sequence[OutRecord], *, acks: int = -1,
            auto_create: bool = True, compression: int = 0,
            timeout: float = 30.0) -> list[tuple[int, int]]:
    """Send `records`, one batch per partition; (partition, offset) of each, in order."""
    info = _topic_ready(admin, topic, create=auto_create, timeout=timeout)
    count = len(info.partitions)
    leaders = {p.partition: p.leader for p in info.partitions}
    robin = itertools.count()
    by_partition: dict[int, list[tuple[int, OutRecord]]] = {}
    for i, rec in enumerate(records):
        if rec.partition is not None:
            if rec.partition not in leaders:
                raise ClientError(f"topic {topic} has no partition {rec.partition} "
                                  f"(partitions 0-{count - 1})")
            part = rec.partition
        elif rec.key is not None:
            part = (murmur2(rec.key) & 0x7FFFFFFF) % count
        else:
            part = next(robin) % count
        by_partition.setdefault(part, []).append((i, rec))
    out: list[tuple[int, int]] = [(-1, -1)] * len(records)
    now = int(time.time() * 1000)
    for part, items in sorted(by_partition.items()):
        wire = [WireRecord(offset_delta=j, timestamp_delta=(r.timestamp or now) - now,
                           key=r.key, value=r.value, headers=list(r.headers))
                for j, (_, r) in enumerate(items)]
        batch = build_batch(wire, base_timestamp=now, compression=compression)
        request = ProduceRequest(acks=acks, timeout_ms=int(timeout * 1000), topic_data=[
            ProduceRequest.TopicProduceData(name=topic, topic_id=info.topic_id, partition_data=[
                ProduceRequest.PartitionProduceData(index=part, records=batch)])])
        if acks == 0:
            raise ClientError("acks=0 is not supported by this client")
        deadline = time.monotonic() + timeout
        while True:
            conn = admin.connection_to(leaders[part])
            response, _ = conn.call(request, ProduceResponse, max_version=_PRODUCE_MAX)
            (result,) = [p for t in response.responses for p in t.partition_responses]
            # Kafka answers these for a moment after it created a topic (the leader learns
            # of its partitions after Metadata shows them) or after leadership moved: ask
            # for the leader again and resend; nothing was written.
            if result.error_code in _PRODUCE_RETRY and time.monotonic() < deadline:
                time.sleep(0.05)
                leaders = {p.partition: p.leader for p in _topic_ready(
                    admin, topic, create=False, timeout=timeout).partitions}
                continue
            break
        if result.error_code != ErrorCode.NONE:
            raise KafkaError(result.error_code, f"produce to {topic}-{part}",
                             result.error_message)
        for j, (i, _) in enumerate(items):
            out[i] = (part, result.base_offset + j)
    return out


def list_offsets(admin: Admin, topic: str, partitions: Sequence[int], timestamp: int, *,
                 isolation_level: int = 0) -> dict[int, int]:
    """The offset per partition for `timestamp` (EARLIEST, LATEST, or ms: the first offset
    at or after it; -1 when there is none)."""
    info = next((t for t in admin.topics([topic]) if t.name == topic), None)
    if info is None or info.error != ErrorCode.NONE:
        raise KafkaError(info.error if info else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         f"topic {topic}")
    leaders = {p.partition: p.leader for p in info.partitions}
    by_leader: dict[int, list[int]] = {}
    for p in partitions:
        if p not in leaders:
            raise ClientError(f"topic {topic} has no partition {p}")
        by_leader.setdefault(leaders[p], []).append(p)
    out: dict[int, int] = {}
    for leader, parts in by_leader.items():
        request = ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=timestamp)
                for p in parts])])
        response, version = admin.connection_to(leader).call(request, ListOffsetsResponse)
        for t in response.topics:
            for r in t.partitions:
                if r.error_code != ErrorCode.NONE:
                    raise KafkaError(r.error_code, f"list offsets of {topic}-{r.partition_index}")
                offset = r.offset if version >= 1 else (
                    r.old_style_offsets[0] if r.old_style_offsets else -1)
                out[r.partition_index] = offset
    return out


class Fetcher:
    """Reads partitions of one topic from given offsets; `poll()` yields what arrived."""

    def __init__(self, admin: Admin, topic: str, positions: dict[int, int], *,
                 isolation_level: int = 0, max_wait_ms: int = 500) -> None:
        self.admin = admin
        self.topic = topic
        self.positions = dict(positions)
        self.isolation_level = isolation_level
        self.max_wait_ms = max_wait_ms
        self.high_watermarks: dict[int, int] = {}
        info = next((t for t in admin.topics([topic]) if t.name == topic), None)
        if info is None or info.error != ErrorCode.NONE:
            raise KafkaError(info.error if info else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             f"topic {topic}")
        self.info = info
        self.leaders = {p.partition: p.leader for p in info.partitions}

    def poll(self) -> Iterator[ConsumedRecord]:
        by_leader: dict[int, list[int]] = {}
        for p in sorted(self.positions):
            by_leader.setdefault(self.leaders[p], []).append(p)
        for leader, parts in by_leader.items():
            request = FetchRequest(
                replica_id=-1, max_wait_ms=self.max_wait_ms, min_bytes=1, max_bytes=16 << 20,
                isolation_level=self.isolation_level, session_id=0, session_epoch=-1,
                topics=[FetchRequest.FetchTopic(
                    topic=self.topic, topic_id=self.info.topic_id, partitions=[
                        FetchRequest.FetchPartition(partition=p, fetch_offset=self.positions[p],
                                                    partition_max_bytes=1 << 20)
                        for p in parts])])
            conn = self.admin.connection_to(leader)
            conn.set_timeout(self.admin.timeout + self.max_wait_ms / 1000)
            response, _ = conn.call(request, FetchResponse, max_version=_FETCH_MAX)
            if response.error_code != ErrorCode.NONE:
                raise KafkaError(response.error_code, f"fetch from {self.topic}")
            for t in response.responses:
                for pd in t.partitions:
                    yield from self._partition(pd)

    def _partition(self, pd: FetchResponse.PartitionData) -> Iterator[ConsumedRecord]:
        part = pd.partition_index
        if pd.error_code != ErrorCode.NONE:
            raise KafkaError(pd.error_code, f"fetch from {self.topic}-{part}")
        self.high_watermarks[part] = (pd.last_stable_offset if self.isolation_level
                                      and pd.last_stable_offset >= 0 else pd.high_watermark)
        if not pd.records:
            return
        position = self.positions[part]
        aborted = sorted((a.first_offset, a.producer_id) for a in pd.aborted_transactions or ())
        live_aborts: set[int] = set()  # producers whose aborted transaction we are inside
        for batch in iter_batches(pd.records, allow_partial_tail=True):
            while aborted and aborted[0][0] <= batch.last_offset:
                live_aborts.add(aborted.pop(0)[1])
            if batch.is_control:
                if batch.control_type() == 0:  # an ABORT marker ends that transaction
                    live_aborts.discard(batch.producer_id)
                position = max(position, batch.next_offset)
                continue
            skip = (self.isolation_level == 1 and batch.is_transactional
                    and batch.producer_id in live_aborts)
            if not skip:
                log_append = batch.timestamp_type == 1
                for rec in batch.records():
                    offset = batch.base_offset + rec.offset_delta
                    if offset < position:
                        continue
                    ts = batch.max_timestamp if log_append else (
                        batch.base_timestamp + rec.timestamp_delta)
                    yield ConsumedRecord(self.topic, part, offset, ts, int(log_append),
                                         rec.key, rec.value, rec.headers)
            position = max(position, batch.next_offset)
        self.positions[part] = position

    def at_end(self) -> bool:
        """Every partition has been read up to the high watermark (LSO) of the last fetch."""
        return all(self.positions[p] >= self.high_watermarks.get(p, 1 << 62)
                   for p in self.positions)
