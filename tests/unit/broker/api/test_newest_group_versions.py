"""The Kafka 4.4 versions of the group apis, as a Kafka 4.4.0 broker answers them (checked
with compat_tests/probe_versions.py): OffsetCommit/OffsetFetch v10 (topic ids), for simple,
classic and consumer groups; DescribeGroups v6 (KIP-1043 errors); DeleteGroups v3."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from admin_testutil import call, open_broker

import odradek.coordinator.group.coordinator
from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from odradek.wire._generated.delete_groups import DeleteGroupsRequest
from odradek.wire._generated.describe_groups import DescribeGroupsRequest
from odradek.wire._generated.join_group import JoinGroupRequest
from odradek.wire._generated.offset_commit import OffsetCommitRequest
from odradek.wire._generated.offset_fetch import OffsetFetchRequest
from odradek.wire._generated.sync_group import SyncGroupRequest
from odradek.wire.primitives import ZERO_UUID

SETTINGS = {"offsets.topic.num.partitions": "2"}
Fetched = dict[uuid.UUID, dict[int, tuple[int, str | None, int]]]


@pytest.fixture(autouse=True)
def _joins_answered_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing fires coordinator timers in these in-process calls, so a new group's join
    phase must not wait for its settle timer (tests/unit/coordinator covers that timer)."""
    monkeypatch.setattr(odradek.coordinator.group.coordinator, "JOIN_SETTLE_MS", 0)


@pytest.fixture
def broker(tmp_path: Path) -> Broker:
    b = open_broker(tmp_path, **SETTINGS)
    b.cluster.create_topic("t", 2, {})
    b.cluster.create_topic("u", 1, {})
    return b


def tid(broker: Broker, name: str) -> uuid.UUID:
    topic = broker.cluster.get(name)
    assert topic is not None
    return topic.topic_id


def commit10(broker: Broker, group: str, topics: list[tuple[uuid.UUID, list[int]]],
             member: str = "", epoch: int = -1) -> list[tuple[uuid.UUID, str, list[int]]]:
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=epoch, member_id=member,
                              topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
                                  topic_id=t, partitions=[OffsetCommitRequest.OffsetCommitRequestPartition(
                                      partition_index=p, committed_offset=10 + p, committed_metadata="m")
                                      for p in parts])
                                  for t, parts in topics])
    resp = call(broker, ApiKey.OFFSET_COMMIT, 10, req)
    return [(t.topic_id, t.name, [p.error_code for p in t.partitions]) for t in resp.topics]


def fetch10(broker: Broker, group: str, topics: list[tuple[uuid.UUID, list[int]]] | None,
            member: str | None = None, epoch: int = -1) -> tuple[int, list[uuid.UUID], Fetched]:
    grp = OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id=group, member_id=member, member_epoch=epoch,
        topics=[OffsetFetchRequest.OffsetFetchRequestTopics(topic_id=t, partition_indexes=ps)
                for t, ps in topics or []])
    if topics is None:
        grp.topics = None  # the constructor turns None into []
    resp = call(broker, ApiKey.OFFSET_FETCH, 10, OffsetFetchRequest(groups=[grp]))
    (g,) = resp.groups
    order = [t.topic_id for t in g.topics]
    assert all(t.name == "" for t in g.topics)  # v10 has no names on the wire
    return g.error_code, order, {t.topic_id: {p.partition_index: (p.committed_offset, p.metadata, p.error_code)
                                              for p in t.partitions} for t in g.topics}


def fetch9(broker: Broker, group: str, topic: str, partition: int) -> int:
    grp = OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=[
        OffsetFetchRequest.OffsetFetchRequestTopics(name=topic, partition_indexes=[partition])])
    resp = call(broker, ApiKey.OFFSET_FETCH, 9, OffsetFetchRequest(groups=[grp]))
    return resp.groups[0].topics[0].partitions[0].committed_offset  # type: ignore[no-any-return]


# -- OffsetCommit / OffsetFetch v10 -----------------------------------------------------------


def test_v10_commits_and_fetches_by_topic_id(broker: Broker) -> None:
    t = tid(broker, "t")
    assert commit10(broker, "g", [(t, [0, 1, 7])]) == [
        (t, "", [ErrorCode.NONE, ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION])]
    error, _, got = fetch10(broker, "g", [(t, [0, 1, 7])])
    # a known topic's partition without a commit is -1 with no error, whatever the partition
    assert (error, got) == (ErrorCode.NONE, {t: {0: (10, "m", 0), 1: (11, "m", 0), 7: (-1, "", 0)}})
    assert fetch9(broker, "g", "t", 1) == 11  # stored by name: v9 reads v10's commits
    error, _, everything = fetch10(broker, "g", None)
    assert everything == {t: {0: (10, "m", 0), 1: (11, "m", 0)}}


def test_v10_unknown_and_zero_ids_are_unknown_topic_id(broker: Broker) -> None:
    t, other = tid(broker, "t"), uuid.uuid4()
    assert commit10(broker, "g", [(other, [0]), (ZERO_UUID, [0, 1]), (t, [0])]) == [
        (other, "", [ErrorCode.UNKNOWN_TOPIC_ID]),
        (ZERO_UUID, "", [ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_ID]),
        (t, "", [ErrorCode.NONE])]
    error, order, got = fetch10(broker, "g", [(other, [0, 1]), (ZERO_UUID, [0]), (t, [0])])
    assert error == ErrorCode.NONE
    assert order == [t, other, ZERO_UUID]  # the known topics first, as Kafka 4.4 answers
    assert got[other] == {0: (-1, "", ErrorCode.UNKNOWN_TOPIC_ID), 1: (-1, "", ErrorCode.UNKNOWN_TOPIC_ID)}
    assert got[ZERO_UUID] == {0: (-1, "", ErrorCode.UNKNOWN_TOPIC_ID)}
    # a group that does not exist: no group error, the same per-topic answers
    error, _, none = fetch10(broker, "nobody", [(other, [0]), (t, [0])])
    assert (error, none) == (ErrorCode.NONE, {t: {0: (-1, "", 0)}, other: {0: (-1, "", ErrorCode.UNKNOWN_TOPIC_ID)}})


def test_v10_commit_naming_only_unknown_ids_creates_no_group(broker: Broker) -> None:
    assert commit10(broker, "ghost", [(uuid.uuid4(), [0])])[0][2] == [ErrorCode.UNKNOWN_TOPIC_ID]
    d = call(broker, ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=["ghost"]))
    assert d.groups[0].group_state == "Dead"


def test_v10_a_deleted_topics_id_is_unknown_and_a_recreated_one_starts_afresh(broker: Broker) -> None:
    old = tid(broker, "u")
    commit10(broker, "g", [(old, [0]), (tid(broker, "t"), [0])])
    broker.cluster.delete_topic("u")
    broker.groups.shard.delete_topic_offsets({"u"})  # what the broker does on deletion
    _, _, got = fetch10(broker, "g", [(old, [0])])
    assert got == {old: {0: (-1, "", ErrorCode.UNKNOWN_TOPIC_ID)}}
    broker.cluster.create_topic("u", 1, {})
    new = tid(broker, "u")
    _, _, everything = fetch10(broker, "g", None)
    assert set(everything) == {tid(broker, "t")}
    _, _, got = fetch10(broker, "g", [(new, [0])])
    assert got == {new: {0: (-1, "", ErrorCode.NONE)}}


def _classic_member(broker: Broker, group: str) -> tuple[str, int]:
    req = JoinGroupRequest(group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=30_000,
                           member_id="", protocol_type="consumer", protocols=[
                               JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")])
    first = call(broker, ApiKey.JOIN_GROUP, 9, req)
    req.member_id = first.member_id
    joined = call(broker, ApiKey.JOIN_GROUP, 9, req)
    call(broker, ApiKey.SYNC_GROUP, 5, SyncGroupRequest(
        group_id=group, generation_id=joined.generation_id, member_id=joined.member_id))
    return joined.member_id, joined.generation_id


def test_v10_classic_group_checks_generation_and_member(broker: Broker) -> None:
    t = tid(broker, "t")
    member, gen = _classic_member(broker, "cl")
    assert commit10(broker, "cl", [(t, [0])], member, gen)[0][2] == [ErrorCode.NONE]
    assert commit10(broker, "cl", [(t, [0])], member, gen + 1)[0][2] == [ErrorCode.ILLEGAL_GENERATION]
    assert commit10(broker, "cl", [(t, [0])], "nobody", gen)[0][2] == [ErrorCode.UNKNOWN_MEMBER_ID]
    # classic groups ignore OffsetFetch's member fields, as at v9
    error, _, got = fetch10(broker, "cl", [(t, [0])], member="nobody", epoch=99)
    assert (error, got) == (ErrorCode.NONE, {t: {0: (10, "m", 0)}})


def test_v10_consumer_group_checks_the_member_epoch(broker: Broker) -> None:
    t = tid(broker, "t")
    hb = call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, ConsumerGroupHeartbeatRequest(
        group_id="cg", member_id="m1", member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=["t"], topic_partitions=[]))
    epoch = hb.member_epoch
    assert commit10(broker, "cg", [(t, [0])], "m1", epoch)[0][2] == [ErrorCode.NONE]
    assert commit10(broker, "cg", [(t, [0])], "m1", epoch + 1)[0][2] == [ErrorCode.STALE_MEMBER_EPOCH]
    assert commit10(broker, "cg", [(t, [0])], "m2", epoch)[0][2] == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert fetch10(broker, "cg", [(t, [0])], "m1", epoch)[2] == {t: {0: (10, "m", 0)}}
    assert fetch10(broker, "cg", [(t, [0])], "m1", epoch + 1)[:2] == (ErrorCode.STALE_MEMBER_EPOCH, [])
    assert fetch10(broker, "cg", [(t, [0])], "m2", epoch)[:2] == (ErrorCode.UNKNOWN_MEMBER_ID, [])
    assert fetch10(broker, "cg", None)[2] == {t: {0: (10, "m", 0)}}  # an admin read


# -- DescribeGroups v6, DeleteGroups v3 -------------------------------------------------------


def test_describe_v6_says_group_id_not_found_for_unknown_and_consumer_groups(broker: Broker) -> None:
    call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, ConsumerGroupHeartbeatRequest(
        group_id="cg", member_id="m1", member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=["t"], topic_partitions=[]))
    commit10(broker, "simple", [(tid(broker, "t"), [0])])
    _classic_member(broker, "cl")
    groups = ["nope", "cg", "simple", "cl", ""]
    for v in (5, 6):
        resp = call(broker, ApiKey.DESCRIBE_GROUPS, v, DescribeGroupsRequest(groups=groups))
        got = {d.group_id: (d.error_code, d.error_message, d.group_state) for d in resp.groups}
        if v == 5:
            assert got == {"nope": (0, None, "Dead"), "cg": (0, None, "Dead"),
                           "simple": (0, None, "Empty"), "cl": (0, None, "Stable"), "": (0, None, "Dead")}
        else:
            assert got == {
                "nope": (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.", "Dead"),
                "cg": (ErrorCode.GROUP_ID_NOT_FOUND, "Group cg is not a classic group.", "Dead"),
                "simple": (0, None, "Empty"), "cl": (0, None, "Stable"),
                "": (ErrorCode.GROUP_ID_NOT_FOUND, "Group  not found.", "Dead")}


def test_delete_v3_answers_as_v2_with_null_messages(broker: Broker) -> None:
    _classic_member(broker, "busy")
    commit10(broker, "idle", [(tid(broker, "t"), [0])])
    resp = call(broker, ApiKey.DELETE_GROUPS, 3, DeleteGroupsRequest(
        groups_names=["busy", "idle", "none", "none", ""]))
    assert [(r.group_id, r.error_code, r.error_message) for r in resp.results] == [
        ("busy", ErrorCode.NON_EMPTY_GROUP, None), ("idle", ErrorCode.NONE, None),
        ("none", ErrorCode.GROUP_ID_NOT_FOUND, None), ("", ErrorCode.GROUP_ID_NOT_FOUND, None)]
