"""StreamsGroupHeartbeat and StreamsGroupDescribe through the codec at every version, on a
real Broker (temp dir, no sockets): internal topics created on the coordinator's request,
every error path, and replay by a broker reopened on the same directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from odradek.wire._generated.streams_group_describe import StreamsGroupDescribeRequest
from odradek.wire._generated.streams_group_heartbeat import (
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
)

Req = StreamsGroupHeartbeatRequest
SETTINGS = {"offsets.topic.num.partitions": "2", "group.streams.heartbeat.interval.ms": "1234"}


def topology(epoch: int = 1) -> Req.Topology:
    return Req.Topology(epoch=epoch, subtopologies=[
        Req.Subtopology(subtopology_id="0", source_topics=["input"],
                        repartition_sink_topics=["app-rep"]),
        Req.Subtopology(subtopology_id="1", repartition_source_topics=[
            Req.TopicInfo(name="app-rep", partitions=0, replication_factor=-1)],
            state_changelog_topics=[Req.TopicInfo(
                name="app-store-changelog", partitions=0, replication_factor=-1,
                topic_configs=[Req.KeyValue(key="cleanup.policy", value="compact")])]),
    ])


@pytest.fixture
def broker(tmp_path: Path) -> Broker:
    b = open_broker(tmp_path, **SETTINGS)
    b.cluster.create_topic("input", 2, {})
    return b


def hb(broker: Broker, v: int = 1, **kw: object) -> StreamsGroupHeartbeatResponse:
    args: dict[str, object] = {
        "group_id": "app", "member_id": "m1", "member_epoch": 0, "rebalance_timeout_ms": 30_000,
        "topology": topology(), "process_id": "p1", "active_tasks": [], "standby_tasks": [],
        "warmup_tasks": [], "user_endpoint": Req.Endpoint(host="localhost", port=7070)}
    args.update(kw)
    resp = call(broker, ApiKey.STREAMS_GROUP_HEARTBEAT, v, Req(**args))  # type: ignore[arg-type]
    return resp  # type: ignore[no-any-return]


def tasks(ts: list[StreamsGroupHeartbeatResponse.TaskIds] | None) -> dict[str, list[int]]:
    return {t.subtopology_id: t.partitions for t in ts or []}


@pytest.mark.parametrize("v", [0, 1])
def test_join_creates_internal_topics_then_assigns(broker: Broker, v: int) -> None:
    r = hb(broker, v)
    assert (r.error_code, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (
        ErrorCode.NONE, "m1", 2, 1234)  # a new group starts at 1, as in Kafka 4.4
    assert [(s.status_code, s.status_detail) for s in r.status] == [
        (3, "Internal topics are missing: [app-rep, app-store-changelog]")]
    changelog = broker.cluster.get("app-store-changelog")
    assert changelog is not None and changelog.partitions == 2
    assert changelog.configs["cleanup.policy"] == "compact"
    assert broker.cluster.get("app-rep") is not None
    r2 = hb(broker, v, member_epoch=2, topology=None, active_tasks=[], standby_tasks=[],
            warmup_tasks=[], rebalance_timeout_ms=-1)
    assert (r2.error_code, r2.status, r2.member_epoch) == (ErrorCode.NONE, [], 3)
    assert tasks(r2.active_tasks) == {"0": [0, 1], "1": [0, 1]}
    assert [(e.user_endpoint.host, [(p.topic, p.partitions) for p in e.active_partitions])
            for e in r2.partitions_by_user_endpoint] == [
        ("localhost", [("app-rep", [0, 1]), ("input", [0, 1])])]
    d = call(broker, ApiKey.STREAMS_GROUP_DESCRIBE, v,
             StreamsGroupDescribeRequest(group_ids=["app", "nope"]))
    g, nope = d.groups
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch) == (
        ErrorCode.NONE, "Stable", 3, 3)
    assert g.topology.epoch == 1 and [s.subtopology_id for s in g.topology.subtopologies] == [
        "0", "1"]
    [m] = g.members
    assert (m.member_id, m.process_id, m.user_endpoint.port, m.topology_epoch) == (
        "m1", "p1", 7070, 1)
    assert {t.subtopology_id: t.partitions for t in m.assignment.active_tasks} == {
        "0": [0, 1], "1": [0, 1]}
    assert (nope.error_code, nope.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                     "Group nope not found.")
    left = hb(broker, v, member_epoch=-1, topology=None)
    assert (left.error_code, left.member_epoch) == (ErrorCode.NONE, -1)


def test_missing_source_topic_status(broker: Broker) -> None:
    t = topology()
    t.subtopologies[0].source_topics = ["absent"]
    r = hb(broker, topology=t)
    assert [(s.status_code, s.status_detail) for s in r.status] == [
        (1, "Source topics absent are missing.")]
    assert r.active_tasks == []


def test_error_paths(broker: Broker) -> None:
    r = hb(broker, member_id="")
    assert (r.error_code, r.error_message) == (ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    r = hb(broker, topology=None)
    assert (r.error_code, r.error_message) == (ErrorCode.INVALID_REQUEST,
                                               "Topology must be non-null when joining.")
    bad = topology()
    bad.subtopologies[1].subtopology_id = "0"
    assert hb(broker, topology=bad).error_code == ErrorCode.STREAMS_INVALID_TOPOLOGY
    assert hb(broker, member_id="x", member_epoch=4, topology=None).error_code == \
        ErrorCode.UNKNOWN_MEMBER_ID
    assert hb(broker).error_code == ErrorCode.NONE
    assert hb(broker, member_epoch=9, topology=None).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert hb(broker, member_id="m2", topology=topology(0)).error_code == \
        ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH
    assert hb(broker, member_id="m2", topology=topology(2)).error_code == ErrorCode.NONE
    fenced = hb(broker, member_epoch=2, topology=None)
    assert fenced.error_code == ErrorCode.STREAMS_TOPOLOGY_FENCED
    # another kind of group holds the id
    call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, ConsumerGroupHeartbeatRequest(
        group_id="cg", member_id="c1", member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=["input"], topic_partitions=[]))
    r = hb(broker, group_id="cg")
    assert (r.error_code, r.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                               "Group cg is not a streams group.")
    d = call(broker, ApiKey.STREAMS_GROUP_DESCRIBE, 0, StreamsGroupDescribeRequest(group_ids=["cg"]))
    assert (d.groups[0].error_code, d.groups[0].error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND, "Group cg is not a streams group.")


def test_state_is_replayed_by_a_reopened_broker(broker: Broker, tmp_path: Path) -> None:
    hb(broker)
    r = hb(broker, member_epoch=2, topology=None, rebalance_timeout_ms=-1)
    before = call(broker, ApiKey.STREAMS_GROUP_DESCRIBE, 1,
                  StreamsGroupDescribeRequest(group_ids=["app"]))
    broker.close()
    reopened = open_broker(tmp_path, **SETTINGS)
    after = call(reopened, ApiKey.STREAMS_GROUP_DESCRIBE, 1,
                 StreamsGroupDescribeRequest(group_ids=["app"]))
    assert after.groups[0].members == before.groups[0].members
    assert after.groups[0].group_epoch == before.groups[0].group_epoch
    again = hb(reopened, member_epoch=r.member_epoch, topology=None, rebalance_timeout_ms=-1,
               active_tasks=r.active_tasks)
    assert (again.error_code, again.member_epoch) == (ErrorCode.NONE, r.member_epoch)


def test_admin_apis_and_offsets_on_a_streams_group(broker: Broker) -> None:
    from odradek.wire._generated.delete_groups import DeleteGroupsRequest
    from odradek.wire._generated.describe_groups import DescribeGroupsRequest
    from odradek.wire._generated.list_groups import ListGroupsRequest
    from odradek.wire._generated.offset_commit import OffsetCommitRequest
    from odradek.wire._generated.offset_fetch import OffsetFetchRequest

    hb(broker)
    r = hb(broker, member_epoch=2, topology=None, rebalance_timeout_ms=-1)
    listed = call(broker, ApiKey.LIST_GROUPS, 5, ListGroupsRequest(types_filter=["streams"])).groups
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed] == [
        ("app", "streams", "Stable", "streams")]
    assert call(broker, ApiKey.LIST_GROUPS, 5, ListGroupsRequest(types_filter=["classic"])).groups == []
    d6 = call(broker, ApiKey.DESCRIBE_GROUPS, 6, DescribeGroupsRequest(groups=["app"])).groups[0]
    assert (d6.error_code, d6.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                 "Group app is not a classic group.")
    d5 = call(broker, ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=["app"])).groups[0]
    assert (d5.error_code, d5.group_state) == (ErrorCode.NONE, "Dead")

    def commit(epoch: int, member: str) -> int:
        req = OffsetCommitRequest(group_id="app", generation_id_or_member_epoch=epoch,
                                  member_id=member, topics=[
                                      OffsetCommitRequest.OffsetCommitRequestTopic(
                                          name="input", partitions=[
                                              OffsetCommitRequest.OffsetCommitRequestPartition(
                                                  partition_index=0, committed_offset=7)])])
        resp = call(broker, ApiKey.OFFSET_COMMIT, 9, req)
        return resp.topics[0].partitions[0].error_code  # type: ignore[no-any-return]

    cg = call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, ConsumerGroupHeartbeatRequest(
        group_id="app", member_id="c1", member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=["input"], topic_partitions=[]))
    assert (cg.error_code, cg.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                 "Group app is not a consumer group.")
    assert commit(r.member_epoch, "m1") == ErrorCode.NONE
    assert commit(r.member_epoch + 1, "m1") == ErrorCode.STALE_MEMBER_EPOCH
    assert commit(r.member_epoch, "zz") == ErrorCode.UNKNOWN_MEMBER_ID
    fetched = call(broker, ApiKey.OFFSET_FETCH, 8, OffsetFetchRequest(groups=[
        OffsetFetchRequest.OffsetFetchRequestGroup(group_id="app", topics=[
            OffsetFetchRequest.OffsetFetchRequestTopics(name="input", partition_indexes=[0])])]))
    assert fetched.groups[0].topics[0].partitions[0].committed_offset == 7

    busy = call(broker, ApiKey.DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=["app"]))
    assert busy.results[0].error_code == ErrorCode.NON_EMPTY_GROUP
    hb(broker, member_epoch=-1, topology=None)
    gone = call(broker, ApiKey.DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=["app"]))
    assert gone.results[0].error_code == ErrorCode.NONE
    d = call(broker, ApiKey.STREAMS_GROUP_DESCRIBE, 0, StreamsGroupDescribeRequest(group_ids=["app"]))
    assert d.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert call(broker, ApiKey.LIST_GROUPS, 5, ListGroupsRequest()).groups == []
