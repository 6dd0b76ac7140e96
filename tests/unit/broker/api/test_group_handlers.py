"""The group api handlers on a real Broker (temp dir, no sockets), through the codec at every
version: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete, and replay of
`__consumer_offsets` by a broker reopened on the same directory."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from admin_testutil import call, open_broker

import odradek.coordinator.group.coordinator
from odradek.broker.broker import Broker
from odradek.coordinator.group.records import OFFSETS_TOPIC, partition_for
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.data import ConsumerProtocolSubscription
from odradek.wire._generated.delete_groups import DeleteGroupsRequest
from odradek.wire._generated.describe_groups import DescribeGroupsRequest
from odradek.wire._generated.find_coordinator import FindCoordinatorRequest
from odradek.wire._generated.heartbeat import HeartbeatRequest
from odradek.wire._generated.join_group import JoinGroupRequest
from odradek.wire._generated.leave_group import LeaveGroupRequest
from odradek.wire._generated.list_groups import ListGroupsRequest
from odradek.wire._generated.offset_commit import OffsetCommitRequest
from odradek.wire._generated.offset_delete import OffsetDeleteRequest
from odradek.wire._generated.offset_fetch import OffsetFetchRequest
from odradek.wire._generated.sync_group import SyncGroupRequest

SUB = struct.pack(">h", 0) + b"".join(ConsumerProtocolSubscription(topics=["t"]).encode(0))
PARTITIONS = 4  # offsets.topic.num.partitions for these tests: quick to create


@pytest.fixture(autouse=True)
def _joins_answered_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing fires coordinator timers in these in-process calls, so a new group's join
    phase must not wait for its settle timer (tests/unit/coordinator covers that timer)."""
    monkeypatch.setattr(odradek.coordinator.group.coordinator, "JOIN_SETTLE_MS", 0)


@pytest.fixture
def broker(tmp_path: Path) -> Broker:
    b = open_broker(tmp_path, **{"offsets.topic.num.partitions": str(PARTITIONS)})
    b.cluster.create_topic("t", 3, {})
    return b


def join(broker: Broker, v: int, group: str, member_id: str = "",
         instance: str | None = None) -> JoinGroupRequest:
    req = JoinGroupRequest(group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=30_000,
                           member_id=member_id, group_instance_id=instance,
                           protocol_type="consumer", protocols=[
                               JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=SUB)])
    resp = call(broker, ApiKey.JOIN_GROUP, v, req)
    return resp  # type: ignore[no-any-return]


def join_alone(broker: Broker, v: int, group: str) -> tuple[str, int]:
    resp = join(broker, v, group)
    if v >= 4:
        assert resp.error_code == ErrorCode.MEMBER_ID_REQUIRED
        assert resp.member_id.startswith("test-client-")
        resp = join(broker, v, group, resp.member_id)
    assert resp.error_code == ErrorCode.NONE
    assert resp.leader == resp.member_id and resp.generation_id == 1
    assert resp.protocol_name == "range"
    assert [(m.member_id, m.metadata) for m in resp.members] == [(resp.member_id, SUB)]
    return resp.member_id, resp.generation_id


def commit(broker: Broker, v: int, group: str, offsets: dict[tuple[str, int], int],
           member: str = "", generation: int = -1, metadata: str | None = "m") -> dict[tuple[str, int], int]:
    by_topic: dict[str, list[OffsetCommitRequest.OffsetCommitRequestPartition]] = {}
    for (topic, p), o in offsets.items():
        by_topic.setdefault(topic, []).append(OffsetCommitRequest.OffsetCommitRequestPartition(
            partition_index=p, committed_offset=o, committed_leader_epoch=3,
            committed_metadata=metadata))
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation,
                              member_id=member, topics=[
                                  OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps)
                                  for t, ps in by_topic.items()])
    resp = call(broker, ApiKey.OFFSET_COMMIT, v, req)
    return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


def fetch(broker: Broker, v: int, group: str,
          wanted: list[tuple[str, int]] | None) -> dict[tuple[str, int], tuple[int, int, str | None, int]]:
    if v >= 8:
        topics = None if wanted is None else [
            OffsetFetchRequest.OffsetFetchRequestTopics(name=t, partition_indexes=[p])
            for t, p in wanted]
        grp = OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=topics)
        grp.topics = topics  # the constructor turns None into []
        req = OffsetFetchRequest(groups=[grp])
        resp = call(broker, ApiKey.OFFSET_FETCH, v, req)
        (g,) = resp.groups
        assert g.group_id == group and g.error_code == ErrorCode.NONE
        topics_out = [(t.name, t.partitions) for t in g.topics]
    else:
        req = OffsetFetchRequest(group_id=group)
        req.topics = None if wanted is None else [  # the constructor turns None into []
            OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=[p])
            for t, p in wanted]
        resp = call(broker, ApiKey.OFFSET_FETCH, v, req)
        if v >= 2:
            assert resp.error_code == ErrorCode.NONE
        topics_out = [(t.name, t.partitions) for t in resp.topics]
    return {(name, p.partition_index): (p.committed_offset, p.committed_leader_epoch,
                                        p.metadata, p.error_code)
            for name, parts in topics_out for p in parts}


# -- FindCoordinator --------------------------------------------------------------------------


@pytest.mark.parametrize("v", range(7))
def test_find_coordinator_is_this_node_and_creates_the_offsets_topic(broker: Broker, v: int) -> None:
    assert broker.cluster.get(OFFSETS_TOPIC) is None
    req = FindCoordinatorRequest(key="grp", key_type=0, coordinator_keys=["grp", "other"])
    resp = call(broker, ApiKey.FIND_COORDINATOR, v, req)
    host, port = broker.advertised_endpoint("PLAINTEXT")
    if v < 4:
        assert (resp.error_code, resp.node_id, resp.host, resp.port) == (
            ErrorCode.NONE, broker.node_id, host, port)
    else:
        assert [(c.key, c.error_code, c.node_id, c.host, c.port) for c in resp.coordinators] == [
            ("grp", ErrorCode.NONE, broker.node_id, host, port),
            ("other", ErrorCode.NONE, broker.node_id, host, port)]
    topic = broker.cluster.get(OFFSETS_TOPIC)
    assert topic is not None and topic.partitions == PARTITIONS
    assert topic.configs["cleanup.policy"] == "compact"


def test_find_coordinator_key_types(broker: Broker) -> None:
    txn = call(broker, ApiKey.FIND_COORDINATOR, 4,
               FindCoordinatorRequest(key_type=1, coordinator_keys=["tx"]))
    assert txn.coordinators[0].error_code == ErrorCode.NONE
    share = call(broker, ApiKey.FIND_COORDINATOR, 6,
                 FindCoordinatorRequest(key_type=2, coordinator_keys=["s"]))
    assert share.coordinators[0].error_code == ErrorCode.INVALID_REQUEST
    assert share.coordinators[0].node_id == -1
    # A share-partition key "group:topicId:partition" (KIP-932): this node, and
    # __share_group_state is created as Kafka's share coordinator creates it.
    share = call(broker, ApiKey.FIND_COORDINATOR, 6,
                 FindCoordinatorRequest(key_type=2, coordinator_keys=["g:AAAAAAAAAAAAAAAAAAAAAQ:0"]))
    assert (share.coordinators[0].error_code, share.coordinators[0].node_id) == (
        ErrorCode.NONE, broker.node_id)
    assert broker.cluster.get("__share_group_state") is not None


# -- membership ---------------------------------------------------------------------------------


@pytest.mark.parametrize("v", range(10))
def test_lone_member_joins_syncs_heartbeats_and_leaves(broker: Broker, v: int) -> None:
    group = f"g{v}"
    member, gen = join_alone(broker, v, group)
    sync_v, hb_v, leave_v = min(v, 5), min(v, 4), min(v, 5)
    assignment = b"\x00\x00exactly-these-bytes"
    resp = call(broker, ApiKey.SYNC_GROUP, sync_v, SyncGroupRequest(
        group_id=group, generation_id=gen, member_id=member,
        protocol_type="consumer", protocol_name="range",
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member,
                                                                 assignment=assignment)]))
    assert resp.error_code == ErrorCode.NONE and resp.assignment == assignment
    if sync_v >= 5:
        assert (resp.protocol_type, resp.protocol_name) == ("consumer", "range")
    hb = call(broker, ApiKey.HEARTBEAT, hb_v, HeartbeatRequest(
        group_id=group, generation_id=gen, member_id=member))
    assert hb.error_code == ErrorCode.NONE
    stale = call(broker, ApiKey.HEARTBEAT, hb_v, HeartbeatRequest(
        group_id=group, generation_id=gen + 1, member_id=member))
    assert stale.error_code == ErrorCode.ILLEGAL_GENERATION
    if leave_v < 3:
        left = call(broker, ApiKey.LEAVE_GROUP, leave_v, LeaveGroupRequest(
            group_id=group, member_id=member))
        assert left.error_code == ErrorCode.NONE
        again = call(broker, ApiKey.LEAVE_GROUP, leave_v, LeaveGroupRequest(
            group_id=group, member_id=member))
        assert again.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    else:
        left = call(broker, ApiKey.LEAVE_GROUP, leave_v, LeaveGroupRequest(
            group_id=group, members=[LeaveGroupRequest.MemberIdentity(member_id=member),
                                     LeaveGroupRequest.MemberIdentity(member_id="ghost")]))
        assert left.error_code == ErrorCode.NONE
        assert [(m.member_id, m.error_code) for m in left.members] == [
            (member, ErrorCode.NONE), ("ghost", ErrorCode.UNKNOWN_MEMBER_ID)]
    gone = call(broker, ApiKey.HEARTBEAT, hb_v, HeartbeatRequest(
        group_id=group, generation_id=gen, member_id=member))
    assert gone.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_sync_v5_checks_the_protocol(broker: Broker) -> None:
    member, gen = join_alone(broker, 9, "g")
    resp = call(broker, ApiKey.SYNC_GROUP, 5, SyncGroupRequest(
        group_id="g", generation_id=gen, member_id=member, protocol_type="connect",
        protocol_name="range"))
    assert resp.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_join_errors_keep_old_versions_encodable(broker: Broker) -> None:
    for v in range(10):
        resp = join(broker, v, "")
        assert resp.error_code == ErrorCode.INVALID_GROUP_ID
        assert resp.protocol_name == ("" if v < 7 else None)


def test_static_member_rejoin_v9_skips_assignment(broker: Broker) -> None:
    first = join(broker, 9, "s", instance="inst")
    assert first.error_code == ErrorCode.NONE and first.member_id.startswith("inst-")
    call(broker, ApiKey.SYNC_GROUP, 5, SyncGroupRequest(
        group_id="s", generation_id=1, member_id=first.member_id, group_instance_id="inst",
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=first.member_id,
                                                                 assignment=b"A")]))
    again = join(broker, 9, "s", instance="inst")
    assert again.error_code == ErrorCode.NONE and again.skip_assignment
    assert again.member_id != first.member_id and again.generation_id == 1
    fenced = call(broker, ApiKey.HEARTBEAT, 4, HeartbeatRequest(
        group_id="s", generation_id=1, member_id=first.member_id, group_instance_id="inst"))
    assert fenced.error_code == ErrorCode.FENCED_INSTANCE_ID


# -- offsets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("v", range(10))  # v10 (topic ids): test_newest_group_versions.py
def test_commit_and_fetch_round_trip(broker: Broker, v: int) -> None:
    group = f"offsets-{v}"
    errors = commit(broker, v, group, {("t", 0): 10, ("t", 2): 30, ("nope", 0): 1, ("t", 9): 1})
    assert errors == {("t", 0): ErrorCode.NONE, ("t", 2): ErrorCode.NONE,
                      ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                      ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    fetch_v = v
    got = fetch(broker, fetch_v, group, [("t", 0), ("t", 1), ("t", 2), ("nope", 0)])
    epoch = 3 if v >= 6 and fetch_v >= 5 else -1
    assert got[("t", 0)] == (10, epoch, "m", ErrorCode.NONE)
    assert got[("t", 2)] == (30, epoch, "m", ErrorCode.NONE)
    assert got[("t", 1)][0] == -1 and got[("nope", 0)][0] == -1
    if fetch_v >= 2:
        assert set(fetch(broker, fetch_v, group, None)) == {("t", 0), ("t", 2)}


def test_commit_checks_generation_and_member(broker: Broker) -> None:
    member, gen = join_alone(broker, 9, "g")
    assert commit(broker, 9, "g", {("t", 0): 1}, member, gen) == {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}
    call(broker, ApiKey.SYNC_GROUP, 5, SyncGroupRequest(group_id="g", generation_id=gen,
                                                        member_id=member))
    assert commit(broker, 9, "g", {("t", 0): 1}, member, gen) == {("t", 0): ErrorCode.NONE}
    assert commit(broker, 9, "g", {("t", 0): 1}, member, gen + 1) == {
        ("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert commit(broker, 9, "g", {("t", 0): 1}, "ghost", gen) == {
        ("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert commit(broker, 9, "g", {("t", 0): 1}) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    big = "x" * 5000
    assert commit(broker, 9, "other", {("t", 0): 1}, metadata=big) == {
        ("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}


def test_offset_fetch_v8_batches_groups(broker: Broker) -> None:
    commit(broker, 8, "a", {("t", 0): 5})
    commit(broker, 8, "b", {("t", 1): 6})
    everything = OffsetFetchRequest.OffsetFetchRequestGroup(group_id="a")
    everything.topics = None
    req = OffsetFetchRequest(groups=[
        everything,
        OffsetFetchRequest.OffsetFetchRequestGroup(group_id="b", topics=[
            OffsetFetchRequest.OffsetFetchRequestTopics(name="t", partition_indexes=[1])])],
        require_stable=True)
    resp = call(broker, ApiKey.OFFSET_FETCH, 8, req)
    got = {g.group_id: [(t.name, p.partition_index, p.committed_offset)
                        for t in g.topics for p in t.partitions] for g in resp.groups}
    assert got == {"a": [("t", 0, 5)], "b": [("t", 1, 6)]}


def test_offsets_and_groups_survive_a_reopen(tmp_path: Path) -> None:
    settings = {"offsets.topic.num.partitions": str(PARTITIONS)}
    b = open_broker(tmp_path, **settings)
    b.cluster.create_topic("t", 3, {})
    member, gen = join_alone(b, 9, "live")
    call(b, ApiKey.SYNC_GROUP, 5, SyncGroupRequest(
        group_id="live", generation_id=gen, member_id=member,
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member,
                                                                 assignment=b"asg")]))
    commit(b, 9, "live", {("t", 1): 11}, member, gen)
    commit(b, 9, "simple", {("t", 0): 7, ("t", 2): 9})
    commit(b, 9, "simple", {("t", 0): 8})
    plog = b.partitions.log(OFFSETS_TOPIC, partition_for("simple", PARTITIONS))
    assert plog is not None and plog.log_end_offset >= 2  # really written
    b.close()

    b2 = open_broker(tmp_path, **settings)
    assert fetch(b2, 9, "simple", None) == {("t", 0): (8, 3, "m", 0), ("t", 2): (9, 3, "m", 0)}
    assert fetch(b2, 9, "live", [("t", 1)])[("t", 1)][0] == 11
    desc = call(b2, ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=["live"]))
    (g,) = desc.groups
    assert (g.group_state, g.protocol_data) == ("Stable", "range")
    assert [(m.member_id, m.member_assignment) for m in g.members] == [(member, b"asg")]
    # the member carries on against the reopened broker
    hb = call(b2, ApiKey.HEARTBEAT, 4, HeartbeatRequest(group_id="live", generation_id=gen,
                                                        member_id=member))
    assert hb.error_code == ErrorCode.NONE
    b2.close()


# -- admin ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("v", range(7))
def test_describe_groups(broker: Broker, v: int) -> None:
    member, gen = join_alone(broker, 9, "g")
    call(broker, ApiKey.SYNC_GROUP, 5, SyncGroupRequest(
        group_id="g", generation_id=gen, member_id=member,
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=member,
                                                                 assignment=b"asg")]))
    resp = call(broker, ApiKey.DESCRIBE_GROUPS, v, DescribeGroupsRequest(
        groups=["g", "unknown"], include_authorized_operations=True))
    g, unknown = resp.groups
    assert (g.error_code, g.group_id, g.group_state, g.protocol_type, g.protocol_data) == (
        ErrorCode.NONE, "g", "Stable", "consumer", "range")
    (m,) = g.members
    assert (m.member_id, m.client_id, m.client_host) == (member, "test-client", "/127.0.0.1")
    assert (m.member_metadata, m.member_assignment) == (SUB, b"asg")
    # v6 (KIP-1043) says so; before, an unknown group is a Dead one with no error
    unknown_error = ErrorCode.GROUP_ID_NOT_FOUND if v >= 6 else ErrorCode.NONE
    assert (unknown.error_code, unknown.group_state, unknown.members) == (unknown_error, "Dead", [])
    if v >= 3:
        assert g.authorized_operations == (1 << 3) | (1 << 6) | (1 << 8)


@pytest.mark.parametrize("v", range(6))
def test_list_groups(broker: Broker, v: int) -> None:
    join_alone(broker, 9, "busy")
    commit(broker, 9, "idle", {("t", 0): 1})
    resp = call(broker, ApiKey.LIST_GROUPS, v, ListGroupsRequest())
    assert resp.error_code == ErrorCode.NONE
    listed = {g.group_id: g for g in resp.groups}
    assert set(listed) == {"busy", "idle"}
    assert (listed["busy"].protocol_type, listed["idle"].protocol_type) == ("consumer", "")
    if v >= 4:
        assert listed["idle"].group_state == "Empty"
        only = call(broker, ApiKey.LIST_GROUPS, v, ListGroupsRequest(states_filter=["empty"]))
        assert [g.group_id for g in only.groups] == ["idle"]
    if v >= 5:
        assert listed["busy"].group_type == "classic"
        none = call(broker, ApiKey.LIST_GROUPS, v, ListGroupsRequest(types_filter=["consumer"]))
        assert none.groups == []


@pytest.mark.parametrize("v", range(4))
def test_delete_groups(broker: Broker, v: int) -> None:
    join_alone(broker, 9, "busy")
    commit(broker, 9, "idle", {("t", 0): 1})
    resp = call(broker, ApiKey.DELETE_GROUPS, v, DeleteGroupsRequest(
        groups_names=["busy", "idle", "idle", "none"]))
    assert [(r.group_id, r.error_code) for r in resp.results] == [
        ("busy", ErrorCode.NON_EMPTY_GROUP), ("idle", ErrorCode.NONE),
        ("none", ErrorCode.GROUP_ID_NOT_FOUND)]
    assert fetch(broker, 9, "idle", [("t", 0)])[("t", 0)][0] == -1


def test_offset_delete(broker: Broker) -> None:
    commit(broker, 9, "idle", {("t", 0): 1, ("t", 1): 2})
    resp = call(broker, ApiKey.OFFSET_DELETE, 0, OffsetDeleteRequest(group_id="idle", topics=[
        OffsetDeleteRequest.OffsetDeleteRequestTopic(name="t", partitions=[
            OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0),
            OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=7)])]))
    assert resp.error_code == ErrorCode.NONE
    assert [(p.partition_index, p.error_code) for p in resp.topics[0].partitions] == [
        (0, ErrorCode.NONE), (7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert set(fetch(broker, 9, "idle", None)) == {("t", 1)}
    missing = call(broker, ApiKey.OFFSET_DELETE, 0, OffsetDeleteRequest(group_id="none", topics=[
        OffsetDeleteRequest.OffsetDeleteRequestTopic(name="t", partitions=[
            OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=0)])]))
    assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_a_huge_retention_time_wraps_as_in_java(broker: Broker) -> None:
    """OffsetCommit v2-4: commit time + retention overflows int64 (the fuzzer's F3: the
    record could not be encoded and the connection was closed); Kafka's long wraps."""
    req = OffsetCommitRequest(group_id="g-huge", generation_id_or_member_epoch=-1,
                              member_id="", retention_time_ms=2**63 - 1, topics=[
                                  OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
                                      OffsetCommitRequest.OffsetCommitRequestPartition(
                                          partition_index=0, committed_offset=5)])])
    resp = call(broker, ApiKey.OFFSET_COMMIT, 2, req)
    assert resp.topics[0].partitions[0].error_code == ErrorCode.NONE
