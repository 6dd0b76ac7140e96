"""Read-only views for the web console (`odradek.console`): partition offsets (log start, high
watermark, last stable offset) and sizes, a page of records from one partition, and the
producers active on partitions.

Each asks once per leader for all the partitions it is given (a 2,000-partition topic is three
ListOffsets requests per broker, not 6,000), and takes the topic's metadata from the caller so
a page of the partitions table costs no extra Metadata round trip.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from odradek.client.admin import Admin, TopicInfo
from odradek.client.connection import KafkaError
from odradek.client.data import EARLIEST, LATEST, ConsumedRecord, Fetcher
from odradek.wire import ErrorCode
from odradek.wire._generated.list_offsets import ListOffsetsRequest, ListOffsetsResponse

__all__ = ["PartitionOffsets", "Producer", "describe_producers", "log_dir_sizes",
           "offsets_for", "partition_offsets", "read_page"]


@dataclass(frozen=True)
class PartitionOffsets:
    log_start: int
    high_watermark: int
    last_stable: int


@dataclass(frozen=True)
class Producer:
    partition: int
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    txn_start_offset: int  # -1: no open transaction on this partition


def _by_leader(info: TopicInfo, partitions: Sequence[int]) -> dict[int, list[int]]:
    leaders = {p.partition: p.leader for p in info.partitions}
    out: dict[int, list[int]] = {}
    for p in partitions:
        if p not in leaders:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{info.name}-{p}")
        out.setdefault(leaders[p], []).append(p)
    return out


def offsets_for(admin: Admin, info: TopicInfo, partitions: Sequence[int], timestamp: int, *,
                isolation_level: int = 0) -> dict[int, int]:
    """ListOffsets for `timestamp` (EARLIEST, LATEST or ms), one request per leader."""
    out: dict[int, int] = {}
    for leader, parts in _by_leader(info, partitions).items():
        request = ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=info.name, partitions=[
                ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=timestamp,
                                                        current_leader_epoch=-1)
                for p in parts])])
        # v1+: one offset per partition (v0's list is not worth supporting in a console).
        response, _ = admin.connection_to(leader).call(request, ListOffsetsResponse)
        for t in response.topics:
            for r in t.partitions:
                if r.error_code != ErrorCode.NONE:
                    raise KafkaError(r.error_code,
                                     f"list offsets of {info.name}-{r.partition_index}")
                out[r.partition_index] = r.offset
    return out


def partition_offsets(admin: Admin, info: TopicInfo,
                      partitions: Sequence[int]) -> dict[int, PartitionOffsets]:
    """Log start, high watermark and LSO of each partition: three ListOffsets per leader
    (a request may not name a partition twice, so the three cannot share one)."""
    if not partitions:
        return {}
    start = offsets_for(admin, info, partitions, EARLIEST)
    high = offsets_for(admin, info, partitions, LATEST)
    stable = offsets_for(admin, info, partitions, LATEST, isolation_level=1)
    return {p: PartitionOffsets(start[p], high[p], stable[p]) for p in partitions}


def log_dir_sizes(admin: Admin,
                  wanted: Mapping[str, Sequence[int]] | None = None) -> dict[tuple[str, int], int]:
    """Bytes on disk of each (topic, partition), summed over the brokers' log dirs (every
    replica counts: it is the space used); one request per broker. `wanted` None: every
    partition of every topic."""
    from odradek.wire._generated.describe_log_dirs import (
        DescribeLogDirsRequest,
        DescribeLogDirsResponse,
    )

    topics = None if wanted is None else [
        DescribeLogDirsRequest.DescribableLogDirTopic(topic=t, partitions=list(parts))
        for t, parts in wanted.items()]
    out: dict[tuple[str, int], int] = {}
    for node in sorted(admin.brokers()):
        response, _ = admin.connection_to(node).call(DescribeLogDirsRequest(topics=topics),
                                                     DescribeLogDirsResponse)
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(response.error_code, "describe log dirs")
        for result in response.results:
            for t in result.topics:
                for p in t.partitions:
                    if not p.is_future_key:
                        key = (t.name, p.partition_index)
                        out[key] = out.get(key, 0) + p.partition_size
    return out


def read_page(admin: Admin, info: TopicInfo, partition: int, offset: int, limit: int, *,
              isolation_level: int = 0, end: int | None = None) -> list[ConsumedRecord]:
    """Up to `limit` records of one partition from `offset`, stopping at `end` (default:
    the high watermark); a few fetches at most, never a wait for new records."""
    if end is None:
        end = offsets_for(admin, info, [partition], LATEST, isolation_level=isolation_level)[
            partition]
    fetcher = Fetcher(admin, info.name, {partition: offset}, isolation_level=isolation_level,
                      max_wait_ms=0)
    out: list[ConsumedRecord] = []
    for _ in range(20):  # each fetch returns at least one batch; bounded for safety
        if fetcher.positions[partition] >= end or len(out) >= limit:
            break
        before = fetcher.positions[partition]
        for rec in fetcher.poll():
            if rec.offset >= end:
                break
            out.append(rec)
            if len(out) >= limit:
                break
        if fetcher.positions[partition] == before:
            break  # nothing more to read (a gap at the end, or transaction markers only)
    return out[:limit]


def describe_producers(admin: Admin, info: TopicInfo,
                       partitions: Sequence[int]) -> list[Producer]:
    """DescribeProducers at each leader: the producers with state on these partitions."""
    from odradek.wire._generated.describe_producers import (
        DescribeProducersRequest,
        DescribeProducersResponse,
    )

    out: list[Producer] = []
    for leader, parts in _by_leader(info, partitions).items():
        request = DescribeProducersRequest(topics=[DescribeProducersRequest.TopicRequest(
            name=info.name, partition_indexes=parts)])
        response, _ = admin.connection_to(leader).call(request, DescribeProducersResponse)
        for t in response.topics:
            for p in t.partitions:
                if p.error_code != ErrorCode.NONE:
                    raise KafkaError(p.error_code,
                                     f"describe producers of {info.name}-{p.partition_index}",
                                     p.error_message)
                out.extend(Producer(p.partition_index, s.producer_id, s.producer_epoch,
                                    s.last_sequence, s.last_timestamp,
                                    s.current_txn_start_offset)
                           for s in p.active_producers)
    return sorted(out, key=lambda x: (x.partition, x.producer_id))
