"""ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch and ShareAcknowledge on a real Broker
(temp dir, no sockets; through the codec both ways), their error paths, and share state that
survives a broker reopened on the same directory."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from admin_testutil import call, open_broker, produce

from odradek.broker.broker import Broker
from odradek.broker.registry import advertised
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from odradek.wire._generated.share_acknowledge import ShareAcknowledgeRequest
from odradek.wire._generated.share_fetch import ShareFetchRequest
from odradek.wire._generated.share_group_describe import ShareGroupDescribeRequest
from odradek.wire._generated.share_group_heartbeat import ShareGroupHeartbeatRequest

F = ShareFetchRequest
A = ShareAcknowledgeRequest
ACCEPT, RELEASE, REJECT = 1, 2, 3
LOCK_MS = 30_000


class FakeClock:
    def __init__(self) -> None:
        self.now = int(time.time() * 1000)

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def broker(tmp_path: Path, clock: FakeClock) -> Broker:
    return _open(tmp_path, clock)


def _open(tmp_path: Path, clock: FakeClock, **settings: str) -> Broker:
    b = open_broker(tmp_path, **{"offsets.topic.num.partitions": "2",
                                 "share.coordinator.state.topic.num.partitions": "2", **settings})
    b.now_ms = clock  # type: ignore[method-assign]
    if b.cluster.get("t") is None:
        b.cluster.create_topic("t", 1, {})
    return b


def tid(broker: Broker) -> uuid.UUID:
    return broker.cluster.get("t").topic_id  # type: ignore[union-attr]


def hb(broker: Broker, member: str = "m1", epoch: int = 0, group: str = "g") -> Any:
    return call(broker, ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch,
        subscribed_topic_names=["t"] if epoch == 0 else None))


def join(broker: Broker, member: str = "m1", group: str = "g") -> int:
    """Join and heartbeat until the member owns t-0 (the first answer is empty: the
    share-partition is initialised first); returns its epoch."""
    r = hb(broker, member, group=group)
    assert r.error_code == ErrorCode.NONE, r.error_message
    epoch = r.member_epoch
    for _ in range(3):
        if r.assignment is not None and r.assignment.topic_partitions:
            return int(epoch)
        r = hb(broker, member, epoch, group=group)
        assert r.error_code == ErrorCode.NONE
        epoch = r.member_epoch
    if r.assignment is not None and r.assignment.topic_partitions:
        return int(epoch)
    raise AssertionError("never assigned")


def fetch(broker: Broker, epoch: int, member: str = "m1", acks: list[tuple[int, int, int]] = (),  # type: ignore[assignment]
          group: str = "g", v: int = 2, partitions: bool = True, max_records: int = 500) -> Any:
    batches = [F.AcknowledgementBatch(first_offset=a, last_offset=b, acknowledge_types=[t])
               for a, b, t in acks]
    topics = [F.FetchTopic(topic_id=tid(broker), partitions=[F.FetchPartition(
        partition_index=0, acknowledgement_batches=batches)])] if partitions or acks else []
    return call(broker, ApiKey.SHARE_FETCH, v, F(
        group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=0,
        min_bytes=1, max_bytes=1 << 20, max_records=max_records, topics=topics))


def ack(broker: Broker, epoch: int, acks: list[tuple[int, int, int]], member: str = "m1") -> Any:
    return call(broker, ApiKey.SHARE_ACKNOWLEDGE, 2, A(
        group_id="g", member_id=member, share_session_epoch=epoch,
        topics=[A.AcknowledgeTopic(topic_id=tid(broker), partitions=[A.AcknowledgePartition(
            partition_index=0, acknowledgement_batches=[
                A.AcknowledgementBatch(first_offset=a, last_offset=b, acknowledge_types=[t])
                for a, b, t in acks])])]))


def part(resp: Any) -> Any:
    [topic] = resp.responses
    [p] = topic.partitions
    return p


def acquired(resp: Any) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count) for a in part(resp).acquired_records]


def test_share_apis_are_advertised_only_while_share_version_is_finalized() -> None:
    keys = {k for k, _, _ in advertised({"share.version": 2})}
    assert {76, 77, 78, 79} <= keys
    hidden = {k for k, _, _ in advertised({"share.version": 0})}
    assert not {76, 77, 78, 79} & hidden
    assert dict((k, (lo, hi)) for k, lo, hi in advertised())[78] == (1, 2)


def test_join_fetch_accept_describe(broker: Broker) -> None:
    first = hb(broker)
    assert (first.error_code, first.member_id, first.member_epoch) == (ErrorCode.NONE, "m1", 2)
    assert first.assignment is not None and first.assignment.topic_partitions == []
    join(broker)
    produce(broker, "t", 0, [1, 2, 3])
    r = fetch(broker, 0)
    assert (r.error_code, r.acquisition_lock_timeout_ms) == (ErrorCode.NONE, LOCK_MS)
    assert acquired(r) == [(0, 2, 1)]
    assert part(r).records
    r = fetch(broker, 1, acks=[(0, 2, ACCEPT)])
    assert (part(r).error_code, part(r).acknowledge_error_code) == (ErrorCode.NONE, ErrorCode.NONE)
    d = call(broker, ApiKey.SHARE_GROUP_DESCRIBE, 1, ShareGroupDescribeRequest(group_ids=["g", "x"]))
    g, x = d.groups
    assert (g.error_code, g.group_state, g.assignor_name) == (ErrorCode.NONE, "Stable", "simple")
    [m] = g.members
    assert [(tp.topic_name, tp.partitions) for tp in m.assignment.topic_partitions] == [("t", [0])]
    assert (x.error_code, x.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group x not found.")


def test_acknowledging_a_record_not_acquired(broker: Broker) -> None:
    join(broker)
    produce(broker, "t", 0, [1, 2])
    produce(broker, "t", 0, [3, 4])
    # MaxRecords 1 in batch-optimized mode: the first log batch, 0-1.
    assert acquired(fetch(broker, 0, max_records=1)) == [(0, 1, 1)]
    # Past the in-flight records: INVALID_REQUEST.
    r = fetch(broker, 1, acks=[(2, 2, ACCEPT)], max_records=0)
    assert part(r).acknowledge_error_code == ErrorCode.INVALID_REQUEST
    r = ack(broker, 2, [(0, 1, RELEASE)])
    assert part(r).error_code == ErrorCode.NONE
    # Released: AVAILABLE, acquired by nobody.
    r = ack(broker, 3, [(0, 0, ACCEPT)])
    assert (part(r).error_code, part(r).error_message) == (
        ErrorCode.INVALID_RECORD_STATE, part(r).error_message)
    assert part(r).error_message


def test_another_member_cannot_acknowledge(broker: Broker) -> None:
    join(broker, "m1")
    join(broker, "m2")
    produce(broker, "t", 0, [1, 2])
    assert acquired(fetch(broker, 0, "m1")) == [(0, 1, 1)]
    fetch(broker, 0, "m2")
    r = ack(broker, 1, [(0, 1, ACCEPT)], member="m2")
    assert part(r).error_code == ErrorCode.INVALID_RECORD_STATE


def test_an_ack_after_the_lock_expired(broker: Broker, clock: FakeClock) -> None:
    join(broker)
    produce(broker, "t", 0, [1, 2])
    assert acquired(fetch(broker, 0)) == [(0, 1, 1)]
    clock.now += LOCK_MS + 1
    r = fetch(broker, 1, acks=[(0, 1, ACCEPT)])
    assert part(r).acknowledge_error_code == ErrorCode.INVALID_RECORD_STATE
    # The expired records are AVAILABLE again: delivered a second time.
    assert acquired(r) == [(0, 1, 2)]


def test_share_session_epochs(broker: Broker) -> None:
    join(broker)
    assert fetch(broker, 1).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert fetch(broker, 0).error_code == ErrorCode.NONE
    r = fetch(broker, 5)
    assert (r.error_code, r.error_message) == (ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                                               "The share session epoch is 1, not 5.")
    assert fetch(broker, 1).error_code == ErrorCode.NONE
    assert fetch(broker, 1).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH  # replayed
    assert ack(broker, 0, []).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert ack(broker, 7, []).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert fetch(broker, 0, acks=[(0, 0, ACCEPT)]).error_code == ErrorCode.INVALID_REQUEST
    r = call(broker, ApiKey.SHARE_FETCH, 1, F(group_id="g", member_id="", share_session_epoch=0))
    assert r.error_code == ErrorCode.INVALID_REQUEST


def test_final_fetch_releases_what_the_member_holds(broker: Broker) -> None:
    join(broker)
    produce(broker, "t", 0, [1, 2])
    assert acquired(fetch(broker, 0)) == [(0, 1, 1)]
    r = fetch(broker, -1, partitions=False)
    assert r.error_code == ErrorCode.NONE
    assert fetch(broker, 1).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert acquired(fetch(broker, 0)) == [(0, 1, 2)]


def test_a_share_fetch_for_a_consumer_group(broker: Broker) -> None:
    r = call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, ConsumerGroupHeartbeatRequest(
        group_id="cg", member_id="c1", member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=["t"], topic_partitions=[]))
    assert r.error_code == ErrorCode.NONE
    produce(broker, "t", 0, [1])
    r = fetch(broker, 0, member="c1", group="cg")
    assert r.error_code == ErrorCode.NONE
    assert (part(r).error_code, acquired(r)) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
    s = hb(broker, "s1", group="cg")
    assert (s.error_code, s.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                               "Group cg is not a share group.")
    d = call(broker, ApiKey.SHARE_GROUP_DESCRIBE, 1, ShareGroupDescribeRequest(group_ids=["cg"]))
    assert d.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_delivery_limit_archives_and_state_survives_a_reopen(tmp_path: Path,
                                                             clock: FakeClock) -> None:
    broker = _open(tmp_path, clock)
    join(broker)
    produce(broker, "t", 0, [1, 2, 3])
    assert acquired(fetch(broker, 0)) == [(0, 2, 1)]
    r = fetch(broker, 1, acks=[(0, 0, ACCEPT), (1, 1, REJECT), (2, 2, RELEASE)])
    assert part(r).acknowledge_error_code == ErrorCode.NONE
    assert acquired(r) == [(2, 2, 2)]
    epoch = 2
    for count in range(3, 6):
        r = fetch(broker, epoch, acks=[(2, 2, RELEASE)])
        epoch += 1
        assert acquired(r) == [(2, 2, count)]
    r = fetch(broker, epoch, acks=[(2, 2, RELEASE)])  # the 5th delivery ends: archived
    assert part(r).acknowledge_error_code == ErrorCode.NONE and acquired(r) == []
    produce(broker, "t", 0, [4])
    assert acquired(fetch(broker, epoch + 1)) == [(3, 3, 1)]
    broker.close()
    again = _open(tmp_path, clock)
    join(again)
    # Offset 3 was acquired, never acknowledged: back with its count; 0-2 are done.
    assert acquired(fetch(again, 0)) == [(3, 3, 1)]
    again.close()


def test_list_describe_and_delete_a_share_group(tmp_path: Path, clock: FakeClock) -> None:
    from odradek.wire._generated.delete_groups import DeleteGroupsRequest
    from odradek.wire._generated.describe_groups import DescribeGroupsRequest
    from odradek.wire._generated.list_groups import ListGroupsRequest

    broker = _open(tmp_path, clock)
    join(broker)
    produce(broker, "t", 0, [1])
    assert acquired(fetch(broker, 0)) == [(0, 0, 1)]
    listed = call(broker, ApiKey.LIST_GROUPS, 5, ListGroupsRequest(types_filter=["share"]))
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type)
            for g in listed.groups] == [("g", "share", "Stable", "share")]
    assert call(broker, ApiKey.LIST_GROUPS, 5,
                ListGroupsRequest(types_filter=["consumer"])).groups == []
    d = call(broker, ApiKey.DESCRIBE_GROUPS, 6, DescribeGroupsRequest(groups=["g"]))
    assert (d.groups[0].error_code, d.groups[0].error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group g is not a classic group.")
    r = call(broker, ApiKey.DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=["g", "nope"]))
    assert [(x.group_id, x.error_code) for x in r.results] == [
        ("g", ErrorCode.NON_EMPTY_GROUP), ("nope", ErrorCode.GROUP_ID_NOT_FOUND)]
    assert hb(broker, "m1", -1).error_code == ErrorCode.NONE
    r = call(broker, ApiKey.DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=["g"]))
    assert [(x.group_id, x.error_code) for x in r.results] == [("g", ErrorCode.NONE)]
    broker.close()
    again = _open(tmp_path, clock)
    d2 = call(again, ApiKey.SHARE_GROUP_DESCRIBE, 1, ShareGroupDescribeRequest(group_ids=["g"]))
    assert d2.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    anyio.run(again.share.ready)
    assert not again.share.shard.store.states  # the share-partition state went too
    again.close()


# -- the settings, each shown to act (tests/unit/config/test_effects_proven.py) ----------------


def test_the_configured_lock_duration_expires_acquired_records(tmp_path: Path,
                                                               clock: FakeClock) -> None:
    broker = _open(tmp_path, clock, **{"group.share.record.lock.duration.ms": "20000"})
    join(broker)
    produce(broker, "t", 0, [1])
    r = fetch(broker, 0)
    assert (acquired(r), r.acquisition_lock_timeout_ms) == ([(0, 0, 1)], 20000)
    clock.now += 20_001  # past 20 s, well before the default 30 s
    r = fetch(broker, 1, acks=[(0, 0, ACCEPT)])
    assert part(r).acknowledge_error_code == ErrorCode.INVALID_RECORD_STATE
    broker.close()


def test_the_configured_delivery_limit_archives(tmp_path: Path, clock: FakeClock) -> None:
    broker = _open(tmp_path, clock, **{"group.share.delivery.count.limit": "2"})
    join(broker)
    produce(broker, "t", 0, [1])
    assert acquired(fetch(broker, 0)) == [(0, 0, 1)]
    assert acquired(fetch(broker, 1, acks=[(0, 0, RELEASE)])) == [(0, 0, 2)]
    # The second delivery was the last (the default limit 5 would deliver it again).
    assert acquired(fetch(broker, 2, acks=[(0, 0, RELEASE)])) == []
    broker.close()


def test_the_configured_partition_record_locks_bound_acquisition(tmp_path: Path,
                                                                 clock: FakeClock) -> None:
    broker = _open(tmp_path, clock, **{"group.share.partition.max.record.locks": "100"})
    join(broker)
    for _ in range(3):
        produce(broker, "t", 0, list(range(1, 61)))  # three batches of 60
    r = fetch(broker, 0, max_records=1000)
    # Whole log batches up to the bound: 60 + 40 of the second (a batch end past it is cut).
    assert sum(last - first + 1 for first, last, _ in acquired(r)) <= 120
    assert fetch(broker, 1, max_records=1000).responses == []  # nothing more: at the bound
    broker.close()


def test_the_configured_heartbeat_interval_session_timeout_and_max_size(
        tmp_path: Path, clock: FakeClock) -> None:
    broker = _open(tmp_path, clock, **{"group.share.heartbeat.interval.ms": "1234",
                                       "group.share.session.timeout.ms": "46000",
                                       "group.share.max.size": "1"})
    r = hb(broker)
    assert r.heartbeat_interval_ms == 1234
    full = hb(broker, "m2")
    assert (full.error_code, full.error_message) == (
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        "The share group has reached its maximum capacity of 1 members.")
    broker.groups.fire_timers(clock.now + 45_999)  # the default 45 s has passed
    assert hb(broker, "m1", r.member_epoch).error_code == ErrorCode.NONE
    broker.groups.fire_timers(clock.now + 46_001)
    assert hb(broker, "m1", r.member_epoch).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    broker.close()


def test_the_configured_share_session_limit(tmp_path: Path, clock: FakeClock) -> None:
    broker = _open(tmp_path, clock, **{"group.share.max.share.sessions": "1"})
    join(broker, "m1")
    join(broker, "m2")
    assert fetch(broker, 0, "m1").error_code == ErrorCode.NONE
    assert fetch(broker, 0, "m2").error_code == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    broker.close()


def test_describe_share_group_offsets(broker: Broker) -> None:
    from odradek.wire._generated.describe_share_group_offsets import (
        DescribeShareGroupOffsetsRequest as D,
    )

    join(broker)
    produce(broker, "t", 0, [1, 2, 3, 4])
    assert acquired(fetch(broker, 0)) == [(0, 3, 1)]
    fetch(broker, 1, acks=[(0, 0, ACCEPT), (2, 2, ACCEPT)])
    groups = [D.DescribeShareGroupOffsetsRequestGroup(group_id=gid) for gid in ("g", "nope")]
    for grp in groups:
        grp.topics = None  # null: every topic (the constructor makes None an empty list)
    r = call(broker, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, D(groups=groups))
    g, nope = r.groups
    [t] = g.topics
    [p] = t.partitions
    # SPSO 1 (offset 0 done); of 1-3, offset 2 is complete: lag 4 - 1 - 1.
    assert (t.topic_name, p.partition_index, p.start_offset, p.lag) == ("t", 0, 1, 2)
    assert nope.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_alter_share_group_offsets(broker: Broker) -> None:
    from odradek.wire._generated.alter_share_group_offsets import (
        AlterShareGroupOffsetsRequest as Alt,
    )

    def alter(offset: int, topic: str = "t", partition: int = 0) -> Any:
        return call(broker, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, Alt(group_id="g", topics=[
            Alt.AlterShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[
                Alt.AlterShareGroupOffsetsRequestPartition(partition_index=partition,
                                                           start_offset=offset)])]))

    join(broker)
    produce(broker, "t", 0, [1, 2, 3, 4])
    assert acquired(fetch(broker, 0)) == [(0, 3, 1)]
    fetch(broker, 1, acks=[(0, 3, ACCEPT)])
    assert alter(0).error_code == ErrorCode.NON_EMPTY_GROUP
    assert hb(broker, "m1", -1).error_code == ErrorCode.NONE
    r = alter(1)
    assert r.error_code == ErrorCode.NONE
    assert r.responses[0].partitions[0].error_code == ErrorCode.NONE
    assert alter(1, "nope").responses[0].partitions[0].error_code == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert alter(1, "t", 5).responses[0].partitions[0].error_code == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    join(broker, "m2")
    # From offset 1 again: 1-3 are delivered once more, as new records (count 1).
    assert acquired(fetch(broker, 0, "m2")) == [(1, 3, 1)]


def test_alter_share_group_offsets_of_a_new_group_sets_where_it_starts(broker: Broker) -> None:
    """Kafka 4.4: a group id no group has gets an empty share group; its first member
    starts at the altered offset, not at share.auto.offset.reset (latest)."""
    from odradek.wire._generated.alter_share_group_offsets import (
        AlterShareGroupOffsetsRequest as Alt,
    )

    produce(broker, "t", 0, [1, 2, 3, 4])
    r = call(broker, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, Alt(group_id="fresh", topics=[
        Alt.AlterShareGroupOffsetsRequestTopic(topic_name="t", partitions=[
            Alt.AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=2)])]))
    assert (r.error_code, r.responses[0].partitions[0].error_code) == (ErrorCode.NONE,
                                                                       ErrorCode.NONE)
    join(broker, "m1", group="fresh")
    assert acquired(fetch(broker, 0, group="fresh")) == [(2, 3, 1)]


def test_alter_share_group_offsets_to_minus_one_uninitialises(broker: Broker) -> None:
    # Kafka 4.4 (checked with raw requests): -1 is accepted and DescribeShareGroupOffsets then
    # shows start offset -1, lag -1, as for a share-partition never fetched; the next fetch
    # initialises it by share.auto.offset.reset, as any uninitialised share-partition.
    from odradek.wire._generated.alter_share_group_offsets import (
        AlterShareGroupOffsetsRequest as Alt,
    )
    from odradek.wire._generated.describe_share_group_offsets import (
        DescribeShareGroupOffsetsRequest as D,
    )

    def alter(offset: int) -> Any:
        return call(broker, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, Alt(group_id="g", topics=[
            Alt.AlterShareGroupOffsetsRequestTopic(topic_name="t", partitions=[
                Alt.AlterShareGroupOffsetsRequestPartition(partition_index=0,
                                                           start_offset=offset)])]))

    def described() -> tuple[int, int]:
        r = call(broker, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, D(groups=[
            D.DescribeShareGroupOffsetsRequestGroup(group_id="g", topics=[
                D.DescribeShareGroupOffsetsRequestTopic(topic_name="t", partitions=[0])])]))
        p = r.groups[0].topics[0].partitions[0]
        return p.start_offset, p.lag

    join(broker)
    produce(broker, "t", 0, [1, 2, 3, 4])
    assert acquired(fetch(broker, 0)) == [(0, 3, 1)]
    fetch(broker, 1, acks=[(0, 3, ACCEPT)])
    assert hb(broker, "m1", -1).error_code == ErrorCode.NONE
    assert alter(1).responses[0].partitions[0].error_code == ErrorCode.NONE
    assert described() == (1, 3)
    assert alter(-1).responses[0].partitions[0].error_code == ErrorCode.NONE
    assert described() == (-1, -1)
    bad = alter(-2).responses[0].partitions[0]
    assert bad.error_code == ErrorCode.INVALID_REQUEST
    assert described() == (-1, -1)
    # The next member starts by share.auto.offset.reset (latest: after the 4 records).
    join(broker, "m2")
    assert acquired(fetch(broker, 0, "m2")) == []
    produce(broker, "t", 0, [5, 6])
    assert acquired(fetch(broker, 1, "m2")) == [(4, 5, 1)]


def test_delete_share_group_offsets(broker: Broker) -> None:
    from odradek.wire._generated.delete_share_group_offsets import (
        DeleteShareGroupOffsetsRequest as Del,
    )

    def delete(*topics: str) -> Any:
        return call(broker, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, Del(group_id="g", topics=[
            Del.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics]))

    join(broker)
    produce(broker, "t", 0, [1, 2])
    assert acquired(fetch(broker, 0)) == [(0, 1, 1)]
    assert delete("t").error_code == ErrorCode.NON_EMPTY_GROUP
    assert hb(broker, "m1", -1).error_code == ErrorCode.NONE
    r = delete("t", "nope")
    assert [(x.topic_name, x.error_code) for x in r.responses] == [
        ("t", ErrorCode.NONE), ("nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    anyio.run(broker.share.ready)
    assert not broker.share.shard.store.states
    assert broker.groups.shard.share.groups["g"].state_partitions.initialized == {}
    # A new member initialises the share-partition again (latest: after the 2 records).
    join(broker, "m2")
    assert fetch(broker, 0, "m2").responses[0].partitions[0].acquired_records == []
    produce(broker, "t", 0, [3])
    assert acquired(fetch(broker, 1, "m2")) == [(2, 2, 1)]


def test_a_parked_share_fetch_wakes_when_records_are_released(broker: Broker) -> None:
    from admin_testutil import acall

    join(broker, "m1")
    join(broker, "m2")
    produce(broker, "t", 0, [1, 2])
    assert acquired(fetch(broker, 0, "m1")) == [(0, 1, 1)]
    assert fetch(broker, 0, "m2").error_code == ErrorCode.NONE  # m2's session, epoch 1
    waited: list[float] = []
    result: list[Any] = []

    async def run() -> None:
        async def parked() -> None:
            start = time.monotonic()
            result.append(await acall(broker, ApiKey.SHARE_FETCH, 2, F(
                group_id="g", member_id="m2", share_session_epoch=1, max_wait_ms=5000,
                min_bytes=1, max_bytes=1 << 20, max_records=500, topics=[])))
            waited.append(time.monotonic() - start)

        async with anyio.create_task_group() as tg:
            tg.start_soon(parked)
            await anyio.sleep(0.3)
            await acall(broker, ApiKey.SHARE_ACKNOWLEDGE, 2, A(
                group_id="g", member_id="m1", share_session_epoch=1,
                topics=[A.AcknowledgeTopic(topic_id=tid(broker), partitions=[
                    A.AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                        A.AcknowledgementBatch(first_offset=0, last_offset=1,
                                               acknowledge_types=[RELEASE])])])]))

    anyio.run(run)
    assert acquired(result[0]) == [(0, 1, 2)]
    assert waited[0] < 3  # woken by the release, not the 5 s MaxWaitMs


def test_a_share_group_id_is_no_consumer_or_classic_group(broker: Broker) -> None:
    from odradek.wire._generated.join_group import JoinGroupRequest

    join(broker)
    r = call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, ConsumerGroupHeartbeatRequest(
        group_id="g", member_id="c1", member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=["t"], topic_partitions=[]))
    assert (r.error_code, r.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                               "Group g is not a consumer group.")
    j = call(broker, ApiKey.JOIN_GROUP, 5, JoinGroupRequest(
        group_id="g", session_timeout_ms=30_000, rebalance_timeout_ms=30_000, member_id="",
        protocol_type="consumer", protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
            name="range", metadata=b"")]))
    assert j.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert broker.groups.shard.groups.get("g") is None


def test_group_config_earliest_starts_a_new_share_partition_at_the_log_start(
        broker: Broker) -> None:
    """kgo's TestShareGroupETL (issue #14): records are in the topic before the group's
    first member joins; the group's `share.auto.offset.reset` = earliest, set as a GROUP
    config, must put the share-partition's start at the log start, not at the high
    watermark of the moment it is initialised (the broker default, latest). A broker that
    ignored the group config lost every record produced before level 2 joined."""
    from odradek.wire._generated.incremental_alter_configs import (
        IncrementalAlterConfigsRequest as Inc,
    )

    produce(broker, "t", 0, [1, 2, 3, 4, 5])
    req = Inc(resources=[Inc.AlterConfigsResource(
        resource_type=32, resource_name="g", configs=[Inc.AlterableConfig(
            name="share.auto.offset.reset", config_operation=0, value="earliest")])])
    [res] = call(broker, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, req).responses
    assert res.error_code == ErrorCode.NONE, res.error_message
    join(broker, group="g")
    assert acquired(fetch(broker, 0, group="g")) == [(0, 4, 1)]
    # A group without the override starts at the high watermark (Kafka's default, latest).
    join(broker, member="m2", group="other")
    assert acquired(fetch(broker, 0, member="m2", group="other")) == []
    produce(broker, "t", 0, [6])
    assert acquired(fetch(broker, 1, member="m2", group="other")) == [(5, 5, 1)]
