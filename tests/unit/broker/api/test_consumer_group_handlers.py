"""ConsumerGroupHeartbeat, ConsumerGroupDescribe and the group apis on consumer groups,
through the codec at every version, on a real Broker (temp dir, no sockets), and replay by
a broker reopened on the same directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.consumer_group_describe import ConsumerGroupDescribeRequest
from odradek.wire._generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from odradek.wire._generated.describe_groups import DescribeGroupsRequest
from odradek.wire._generated.list_groups import ListGroupsRequest
from odradek.wire._generated.offset_commit import OffsetCommitRequest
from odradek.wire._generated.offset_fetch import OffsetFetchRequest

SETTINGS = {"offsets.topic.num.partitions": "2", "group.consumer.heartbeat.interval.ms": "1234"}


@pytest.fixture
def broker(tmp_path: Path) -> Broker:
    b = open_broker(tmp_path, **SETTINGS)
    b.cluster.create_topic("t", 4, {})
    return b


def hb(broker: Broker, v: int, **kw: object) -> ConsumerGroupHeartbeatRequest:
    args: dict[str, object] = {"group_id": "g", "member_id": "m1", "member_epoch": 0,
                               "rebalance_timeout_ms": 30_000, "subscribed_topic_names": ["t"],
                               "topic_partitions": []}
    args.update(kw)
    resp = call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, v, ConsumerGroupHeartbeatRequest(**args))  # type: ignore[arg-type]
    return resp  # type: ignore[no-any-return]


@pytest.mark.parametrize("v", [0, 1])
def test_join_heartbeat_describe_leave(broker: Broker, v: int) -> None:
    r = hb(broker, v)
    assert (r.error_code, r.error_message, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (
        ErrorCode.NONE, None, "m1", 1, 1234)
    tid = broker.cluster.get("t").topic_id  # type: ignore[union-attr]
    assert [(tp.topic_id, tp.partitions) for tp in r.assignment.topic_partitions] == [(tid, [0, 1, 2, 3])]
    again = hb(broker, v, member_epoch=1, rebalance_timeout_ms=-1, subscribed_topic_names=None,
               topic_partitions=None)
    assert (again.error_code, again.member_epoch, again.assignment) == (ErrorCode.NONE, 1, None)
    d = call(broker, ApiKey.CONSUMER_GROUP_DESCRIBE, v,
             ConsumerGroupDescribeRequest(group_ids=["g", "nope"]))
    g, nope = d.groups
    assert (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == (
        ErrorCode.NONE, "Stable", 1, 1, "uniform")
    [m] = g.members
    assert (m.member_id, m.member_epoch, m.client_id, m.subscribed_topic_names) == (
        "m1", 1, "test-client", ["t"])
    assert [(tp.topic_name, tp.partitions) for tp in m.assignment.topic_partitions] == [("t", [0, 1, 2, 3])]
    assert m.member_type == (1 if v >= 1 else -1)
    assert (nope.error_code, nope.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.")
    left = hb(broker, v, member_epoch=-1)
    assert (left.error_code, left.member_epoch) == (ErrorCode.NONE, -1)


def test_errors_on_the_wire(broker: Broker) -> None:
    r = hb(broker, 1, member_id="")
    assert (r.error_code, r.error_message) == (ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    r = hb(broker, 0, member_id="")
    assert r.error_code == ErrorCode.NONE and len(r.member_id) == 22
    r = hb(broker, 1, server_assignor="nope")
    assert r.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
    r = hb(broker, 1, member_epoch=7)
    assert r.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert hb(broker, 1).error_code == ErrorCode.NONE
    r = hb(broker, 1, member_epoch=7, rebalance_timeout_ms=-1, subscribed_topic_names=None)
    assert r.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    r = hb(broker, 1, member_id="m9", subscribed_topic_regex="(t.*")
    assert (r.error_code, r.error_message) == (
        ErrorCode.INVALID_REGULAR_EXPRESSION,
        "SubscribedTopicRegex `(t.*` is not a valid regular expression: missing closing ).")
    assert r.member_epoch == 0 and r.assignment is None
    r = hb(broker, 1, group_id="other", member_epoch=3)
    assert r.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_list_describe_offsets_and_replay(broker: Broker, tmp_path: Path) -> None:
    r = hb(broker, 1)
    groups = call(broker, ApiKey.LIST_GROUPS, 5, ListGroupsRequest(types_filter=["consumer"])).groups
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in groups] == [
        ("g", "consumer", "Stable", "consumer")]
    assert call(broker, ApiKey.LIST_GROUPS, 5, ListGroupsRequest(types_filter=["classic"])).groups == []
    d = call(broker, ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=["g"])).groups[0]
    assert (d.error_code, d.group_state, d.members) == (ErrorCode.NONE, "Dead", [])

    def commit(v: int, epoch: int, member: str = "m1") -> int:
        req = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=epoch, member_id=member,
                                  topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
                                      OffsetCommitRequest.OffsetCommitRequestPartition(
                                          partition_index=0, committed_offset=5)])])
        return call(broker, ApiKey.OFFSET_COMMIT, v, req).topics[0].partitions[0].error_code  # type: ignore[no-any-return]

    assert commit(9, r.member_epoch) == ErrorCode.NONE
    assert commit(9, 0) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit(9, 1, "x") == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit(8, 1) == ErrorCode.UNSUPPORTED_VERSION

    def fetch(member: str | None, epoch: int) -> tuple[int, int]:
        G = OffsetFetchRequest.OffsetFetchRequestGroup
        req = OffsetFetchRequest(groups=[G(group_id="g", member_id=member, member_epoch=epoch, topics=[
            OffsetFetchRequest.OffsetFetchRequestTopics(name="t", partition_indexes=[0])])])
        g = call(broker, ApiKey.OFFSET_FETCH, 9, req).groups[0]
        return g.error_code, (g.topics[0].partitions[0].committed_offset if g.topics else -1)

    assert fetch("m1", 1) == (ErrorCode.NONE, 5)
    assert fetch(None, -1) == (ErrorCode.NONE, 5)
    assert fetch("m1", 2)[0] == ErrorCode.STALE_MEMBER_EPOCH
    assert fetch("zz", 1)[0] == ErrorCode.UNKNOWN_MEMBER_ID

    before = call(broker, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, ConsumerGroupDescribeRequest(group_ids=["g"]))
    reopened = open_broker(tmp_path, **SETTINGS)
    after = call(reopened, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, ConsumerGroupDescribeRequest(group_ids=["g"]))
    assert repr(after.groups) == repr(before.groups)
    r2 = hb(reopened, 1, member_epoch=1, topic_partitions=[
        ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=tp.topic_id, partitions=tp.partitions)
        for tp in r.assignment.topic_partitions])
    assert (r2.error_code, r2.member_epoch) == (ErrorCode.NONE, 1)


def test_regex_subscription_follows_topics_and_survives_a_restart(broker: Broker,
                                                                  tmp_path: Path) -> None:
    now = [1_000_000]
    broker.now_ms = lambda: now[0]  # type: ignore[method-assign]
    broker.cluster.create_topic("orders-eu", 2, {})
    r = hb(broker, 1, subscribed_topic_names=[], subscribed_topic_regex="^orders-.*")
    eu = broker.cluster.get("orders-eu").topic_id  # type: ignore[union-attr]
    assert (r.error_code, r.member_epoch) == (ErrorCode.NONE, 1)
    # As Kafka: the regex is resolved after the join (a timer due at once), which bumps the
    # group epoch; the first heartbeat once group.consumer.assignment.interval.ms (1 s)
    # passed since the join's target brings the partitions.
    assert r.assignment.topic_partitions == []
    broker.groups.fire_timers(now[0])

    def beat() -> ConsumerGroupHeartbeatRequest:
        return hb(broker, 1, member_epoch=r.member_epoch, rebalance_timeout_ms=-1,
                  subscribed_topic_names=None, topic_partitions=None)

    assert (beat().member_epoch, beat().assignment) == (1, None)  # within the interval
    now[0] += 1_000
    r = beat()
    assert r.member_epoch == 2
    assert [(tp.topic_id, tp.partitions) for tp in r.assignment.topic_partitions] == [(eu, [0, 1])]
    broker.cluster.create_topic("orders-us", 1, {})
    now[0] += 5_000  # within 10 s of the last resolution: not yet
    assert (beat().member_epoch, beat().assignment) == (2, None)
    broker.groups.fire_timers(now[0])
    now[0] += 5_001
    assert (beat().member_epoch, beat().assignment) == (2, None)  # resolution scheduled
    broker.groups.fire_timers(now[0])
    r = beat()
    us = broker.cluster.get("orders-us").topic_id  # type: ignore[union-attr]
    assert r.member_epoch == 3
    assert sorted((tp.topic_id, tp.partitions) for tp in r.assignment.topic_partitions) == sorted(
        [(eu, [0, 1]), (us, [0])])
    d = call(broker, ApiKey.CONSUMER_GROUP_DESCRIBE, 1,
             ConsumerGroupDescribeRequest(group_ids=["g"])).groups[0]
    assert (d.members[0].subscribed_topic_regex, d.group_epoch) == ("^orders-.*", 3)

    reopened = open_broker(tmp_path, **SETTINGS)
    reopened.now_ms = lambda: now[0]  # type: ignore[method-assign]
    after = call(reopened, ApiKey.CONSUMER_GROUP_DESCRIBE, 1,
                 ConsumerGroupDescribeRequest(group_ids=["g"])).groups[0]
    assert repr(after) == repr(d)
    cg = reopened.groups.shard.consumer_group("g")
    assert cg is not None and cg.resolved_regexes["^orders-.*"].topics == {"orders-eu", "orders-us"}

    # The last member leaving tombstones the regex; a restart finds none.
    left = hb(reopened, 1, member_epoch=-1)
    assert left.error_code == ErrorCode.NONE and not cg.resolved_regexes
    again = open_broker(tmp_path, **SETTINGS)
    call(again, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, ConsumerGroupDescribeRequest(group_ids=["g"]))
    cg2 = again.groups.shard.consumer_group("g")
    assert cg2 is not None and cg2.resolved_regexes == {} and cg2.members == {}
