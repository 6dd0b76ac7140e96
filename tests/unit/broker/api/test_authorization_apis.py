"""The checks of the apis that came after the first authorizer (issue #13), each as Kafka
4.4's KafkaApis / controller make them: allowed, denied with the exact error, whether the
check comes before the existence check, and the implied operations (DESCRIBE by READ...).
Alice is granted what each test grants; Bob nothing (allow.everyone is off)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from admin_testutil import call, open_broker

from odradek.broker.acls import STANDARD_AUTHORIZER
from odradek.broker.broker import Broker
from odradek.coordinator.acl.authorizer import (
    AclBinding,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.alter_share_group_offsets import AlterShareGroupOffsetsRequest
from odradek.wire._generated.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
)
from odradek.wire._generated.consumer_group_describe import ConsumerGroupDescribeRequest
from odradek.wire._generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from odradek.wire._generated.create_partitions import CreatePartitionsRequest
from odradek.wire._generated.delete_records import DeleteRecordsRequest
from odradek.wire._generated.delete_share_group_offsets import DeleteShareGroupOffsetsRequest
from odradek.wire._generated.describe_cluster import DescribeClusterRequest
from odradek.wire._generated.describe_log_dirs import DescribeLogDirsRequest
from odradek.wire._generated.describe_producers import DescribeProducersRequest
from odradek.wire._generated.describe_share_group_offsets import DescribeShareGroupOffsetsRequest
from odradek.wire._generated.describe_topic_partitions import DescribeTopicPartitionsRequest
from odradek.wire._generated.describe_transactions import DescribeTransactionsRequest
from odradek.wire._generated.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
)
from odradek.wire._generated.init_producer_id import InitProducerIdRequest
from odradek.wire._generated.list_transactions import ListTransactionsRequest
from odradek.wire._generated.offset_commit import OffsetCommitRequest
from odradek.wire._generated.offset_delete import OffsetDeleteRequest
from odradek.wire._generated.offset_for_leader_epoch import OffsetForLeaderEpochRequest
from odradek.wire._generated.share_acknowledge import ShareAcknowledgeRequest
from odradek.wire._generated.share_fetch import ShareFetchRequest
from odradek.wire._generated.share_group_describe import ShareGroupDescribeRequest
from odradek.wire._generated.share_group_heartbeat import ShareGroupHeartbeatRequest
from odradek.wire._generated.streams_group_describe import StreamsGroupDescribeRequest
from odradek.wire._generated.streams_group_heartbeat import StreamsGroupHeartbeatRequest

ALICE, BOB, ADMIN = "User:alice", "User:bob", "User:admin"
Op = AclOperation
T, G, C, X = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
              ResourceType.TRANSACTIONAL_ID)
TOPIC_OPS = sum(1 << o for o in (3, 4, 5, 6, 7, 8, 10, 11))


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path, **{"authorizer.class.name": STANDARD_AUTHORIZER,
                                 "super.users": ADMIN,
                                 "offsets.topic.num.partitions": "2",
                                 "share.coordinator.state.topic.num.partitions": "2"})
    b.cluster.create_topic("t", 1, {})
    yield b
    b.close()


def grant(broker: Broker, rt: ResourceType, name: str, op: AclOperation,
          principal: str = ALICE, pattern: PatternType = PatternType.LITERAL,
          permission: PermissionType = PermissionType.ALLOW) -> None:
    assert broker.authorizer is not None
    broker.authorizer.create(AclBinding(rt, name, pattern, principal, "*", op, permission))


def tid(broker: Broker, name: str = "t") -> uuid.UUID:
    topic = broker.cluster.get(name)
    assert topic is not None
    return topic.topic_id


def test_offset_for_leader_epoch_needs_describe_or_cluster_action(broker: Broker) -> None:
    R = OffsetForLeaderEpochRequest
    req = R(replica_id=-1, topics=[R.OffsetForLeaderTopic(topic=n, partitions=[
        R.OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=0)])
        for n in ("t", "gone")])

    def codes(principal: str) -> list[int]:
        r = call(broker, ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, req, principal=principal)
        return [t.partitions[0].error_code for t in r.topics]
    # before the existence check: an unknown topic is not disclosed
    assert codes(ALICE) == [ErrorCode.TOPIC_AUTHORIZATION_FAILED] * 2
    grant(broker, T, "t", Op.READ)  # implies DESCRIBE
    assert codes(ALICE) == [ErrorCode.NONE, ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    grant(broker, C, "kafka-cluster", Op.CLUSTER_ACTION, principal=BOB)
    assert codes(BOB) == [ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]


def commit(broker: Broker, group: str) -> None:
    OC = OffsetCommitRequest
    r = call(broker, ApiKey.OFFSET_COMMIT, 8, OC(
        group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
            OC.OffsetCommitRequestTopic(name="t", partitions=[
                OC.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]),
        principal=ADMIN)
    assert r.topics[0].partitions[0].error_code == ErrorCode.NONE


def test_offset_delete_needs_group_delete_then_topic_read(broker: Broker) -> None:
    commit(broker, "g")
    D = OffsetDeleteRequest
    req = D(group_id="g", topics=[D.OffsetDeleteRequestTopic(name=n, partitions=[
        D.OffsetDeleteRequestPartition(partition_index=0)]) for n in ("t", "gone")])
    r = call(broker, ApiKey.OFFSET_DELETE, 0, req, principal=ALICE)
    assert (r.error_code, r.topics) == (ErrorCode.GROUP_AUTHORIZATION_FAILED, [])
    grant(broker, G, "g", Op.READ)  # READ does not imply DELETE
    r = call(broker, ApiKey.OFFSET_DELETE, 0, req, principal=ALICE)
    assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    grant(broker, G, "g", Op.DELETE)
    r = call(broker, ApiKey.OFFSET_DELETE, 0, req, principal=ALICE)
    assert r.error_code == ErrorCode.NONE
    assert [(t.name, t.partitions[0].error_code) for t in r.topics] == [
        ("t", ErrorCode.TOPIC_AUTHORIZATION_FAILED), ("gone", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    grant(broker, T, "t", Op.READ)
    r = call(broker, ApiKey.OFFSET_DELETE, 0, req, principal=ALICE)
    assert [(t.name, t.partitions[0].error_code) for t in r.topics] == [
        ("t", ErrorCode.NONE), ("gone", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]


def test_create_partitions_needs_topic_alter(broker: Broker) -> None:
    CP = CreatePartitionsRequest
    req = CP(timeout_ms=1000, validate_only=False, topics=[
        CP.CreatePartitionsTopic(name="t", count=2, assignments=None),
        CP.CreatePartitionsTopic(name="gone", count=2, assignments=None)])
    r = call(broker, ApiKey.CREATE_PARTITIONS, 3, req, principal=ALICE)
    assert [(x.name, x.error_code, x.error_message) for x in r.results] == [
        ("t", ErrorCode.TOPIC_AUTHORIZATION_FAILED, None),
        ("gone", ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)]
    grant(broker, T, "t", Op.ALTER)
    grant(broker, T, "gone", Op.ALTER)
    r = call(broker, ApiKey.CREATE_PARTITIONS, 3, req, principal=ALICE)
    assert [x.error_code for x in r.results] == [ErrorCode.NONE,
                                                 ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert broker.cluster.get("t").partitions == 2  # type: ignore[union-attr]


def test_delete_records_needs_topic_delete(broker: Broker) -> None:
    D = DeleteRecordsRequest
    req = D(timeout_ms=1000, topics=[D.DeleteRecordsTopic(name=n, partitions=[
        D.DeleteRecordsPartition(partition_index=0, offset=0)]) for n in ("t", "gone")])

    def codes(principal: str) -> list[tuple[int, int]]:
        r = call(broker, ApiKey.DELETE_RECORDS, 2, req, principal=principal)
        return [(t.partitions[0].error_code, t.partitions[0].low_watermark) for t in r.topics]
    assert codes(ALICE) == [(ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)] * 2
    grant(broker, T, "t", Op.WRITE)  # WRITE is not DELETE
    assert codes(ALICE)[0] == (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)
    grant(broker, T, "*", Op.DELETE)
    assert codes(ALICE) == [(ErrorCode.NONE, 0), (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)]


def test_describe_log_dirs_needs_cluster_describe(broker: Broker) -> None:
    req = DescribeLogDirsRequest(topics=None)
    r = call(broker, ApiKey.DESCRIBE_LOG_DIRS, 4, req, principal=ALICE)
    assert (r.error_code, r.results) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
    r = call(broker, ApiKey.DESCRIBE_LOG_DIRS, 1, req, principal=ALICE)
    assert r.results == []  # v0-2: no top-level error, nothing disclosed
    grant(broker, C, "kafka-cluster", Op.ALTER)  # implies DESCRIBE
    r = call(broker, ApiKey.DESCRIBE_LOG_DIRS, 4, req, principal=ALICE)
    assert r.error_code == ErrorCode.NONE and len(r.results) == 1


def test_describe_cluster_authorized_operations(broker: Broker) -> None:
    def ops(principal: str, include: bool = True) -> tuple[int, int]:
        r = call(broker, ApiKey.DESCRIBE_CLUSTER, 1, DescribeClusterRequest(
            include_cluster_authorized_operations=include, endpoint_type=1),
            principal=principal)
        return int(r.error_code), int(r.cluster_authorized_operations)
    assert ops(BOB) == (ErrorCode.NONE, 0)  # the api needs nothing; the ops need DESCRIBE
    assert ops(BOB, include=False) == (ErrorCode.NONE, -(2**31))
    grant(broker, C, "kafka-cluster", Op.IDEMPOTENT_WRITE)
    assert ops(ALICE) == (ErrorCode.NONE, 0)
    grant(broker, C, "kafka-cluster", Op.DESCRIBE)
    assert ops(ALICE) == (ErrorCode.NONE, (1 << Op.DESCRIBE) | (1 << Op.IDEMPOTENT_WRITE))
    assert ops(ADMIN)[1] == sum(1 << o for o in (5, 7, 8, 9, 10, 11, 12))


def test_describe_producers_needs_topic_read(broker: Broker) -> None:
    D = DescribeProducersRequest
    req = D(topics=[D.TopicRequest(name=n, partition_indexes=[0]) for n in ("t", "gone")])

    def codes() -> list[int]:
        r = call(broker, ApiKey.DESCRIBE_PRODUCERS, 0, req, principal=ALICE)
        return [t.partitions[0].error_code for t in r.topics]
    assert codes() == [ErrorCode.TOPIC_AUTHORIZATION_FAILED] * 2
    grant(broker, T, "t", Op.DESCRIBE)  # DESCRIBE is not READ
    assert codes() == [ErrorCode.TOPIC_AUTHORIZATION_FAILED] * 2
    grant(broker, T, "t", Op.READ)
    grant(broker, T, "gone", Op.READ)
    assert codes() == [ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]


def test_describe_and_list_transactions_need_txn_describe(broker: Broker) -> None:
    r = call(broker, ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(
        transactional_id="tx", transaction_timeout_ms=60_000, producer_id=-1,
        producer_epoch=-1), principal=ADMIN)
    assert r.error_code == ErrorCode.NONE
    d = DescribeTransactionsRequest(transactional_ids=["tx", "nope"])
    r = call(broker, ApiKey.DESCRIBE_TRANSACTIONS, 0, d, principal=ALICE)
    assert [s.error_code for s in r.transaction_states] == [
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED] * 2
    lt = ListTransactionsRequest(state_filters=[], producer_id_filters=[])
    r = call(broker, ApiKey.LIST_TRANSACTIONS, 1, lt, principal=ALICE)
    assert (r.error_code, r.transaction_states) == (ErrorCode.NONE, [])
    grant(broker, X, "t", Op.WRITE, pattern=PatternType.PREFIXED)  # WRITE implies DESCRIBE
    r = call(broker, ApiKey.DESCRIBE_TRANSACTIONS, 0, d, principal=ALICE)
    assert [s.error_code for s in r.transaction_states] == [
        ErrorCode.NONE, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED]
    r = call(broker, ApiKey.LIST_TRANSACTIONS, 1, lt, principal=ALICE)
    assert [s.transactional_id for s in r.transaction_states] == ["tx"]


def test_describe_topic_partitions_hides_refuses_and_computes_ops(broker: Broker) -> None:
    broker.cluster.create_topic("u", 1, {})
    grant(broker, T, "u", Op.READ)
    D = DescribeTopicPartitionsRequest
    r = call(broker, ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0,
             D(topics=[], response_partition_limit=100), principal=ALICE)
    assert [(t.name, t.topic_authorized_operations) for t in r.topics] == [
        ("u", (1 << Op.READ) | (1 << Op.DESCRIBE))]
    named = D(topics=[D.TopicRequest(name=n) for n in ("t", "u", "gone")],
              response_partition_limit=100)
    r = call(broker, ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, named, principal=ALICE)
    # the unauthorized come last, with a zero id, existing or not
    assert [(t.name, t.error_code, t.topic_id == uuid.UUID(int=0), len(t.partitions),
             t.topic_authorized_operations) for t in r.topics] == [
        ("u", ErrorCode.NONE, False, 1, (1 << Op.READ) | (1 << Op.DESCRIBE)),
        ("gone", ErrorCode.TOPIC_AUTHORIZATION_FAILED, True, 0, -(2**31)),
        ("t", ErrorCode.TOPIC_AUTHORIZATION_FAILED, True, 0, -(2**31))]
    r = call(broker, ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, named, principal=ADMIN)
    assert [(t.name, t.error_code, t.topic_authorized_operations) for t in r.topics] == [
        ("gone", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, TOPIC_OPS),
        ("t", ErrorCode.NONE, TOPIC_OPS), ("u", ErrorCode.NONE, TOPIC_OPS)]


def cg_heartbeat(broker: Broker, principal: str, topics: list[str],
                 group: str = "cg") -> Any:
    return call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, ConsumerGroupHeartbeatRequest(
        group_id=group, member_id="m" * 22, member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=topics, topic_partitions=[]), principal=principal)


def test_consumer_group_heartbeat_needs_describe_on_subscribed_topics(broker: Broker) -> None:
    grant(broker, G, "cg", Op.READ)
    broker.cluster.create_topic("u", 1, {})
    grant(broker, T, "u", Op.DESCRIBE)
    r = cg_heartbeat(broker, ALICE, ["u", "t"])
    assert (r.error_code, r.error_message, r.member_epoch) == (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, 0)
    assert cg_heartbeat(broker, ALICE, ["u"]).error_code == ErrorCode.NONE
    assert cg_heartbeat(broker, BOB, ["u"]).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_consumer_group_describe(broker: Broker) -> None:
    assert cg_heartbeat(broker, ADMIN, ["t"]).error_code == ErrorCode.NONE
    req = ConsumerGroupDescribeRequest(group_ids=["cg", "other"],
                                       include_authorized_operations=True)
    r = call(broker, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, req, principal=ALICE)
    assert [(g.group_id, g.error_code) for g in r.groups] == [
        ("cg", ErrorCode.GROUP_AUTHORIZATION_FAILED),
        ("other", ErrorCode.GROUP_AUTHORIZATION_FAILED)]
    grant(broker, G, "cg", Op.READ)  # implies DESCRIBE
    r = call(broker, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, req, principal=ALICE)
    # "other" (denied) comes first; "cg" assigns t, which Alice may not describe
    assert [(g.group_id, g.error_code, g.error_message, g.members) for g in r.groups] == [
        ("other", ErrorCode.GROUP_AUTHORIZATION_FAILED, None, []),
        ("cg", ErrorCode.TOPIC_AUTHORIZATION_FAILED,
         "The group has described topic(s) that the client is not authorized to describe.",
         [])]
    grant(broker, T, "t", Op.DESCRIBE)
    r = call(broker, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, req, principal=ALICE)
    cg = r.groups[1]
    assert (cg.error_code, len(cg.members)) == (ErrorCode.NONE, 1)
    assert cg.authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)


def share_hb(broker: Broker, principal: str, topics: list[str] | None, epoch: int = 0) -> Any:
    return call(broker, ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
        group_id="sg", member_id="s" * 22, member_epoch=epoch,
        subscribed_topic_names=topics), principal=principal)


def test_share_group_apis(broker: Broker) -> None:
    assert share_hb(broker, ALICE, ["t"]).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    grant(broker, G, "sg", Op.READ)
    assert share_hb(broker, ALICE, ["t"]).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    # the admin joins and gets t-0 (initialised on the first heartbeat)
    r = share_hb(broker, ADMIN, ["t"])
    assert r.error_code == ErrorCode.NONE
    for _ in range(3):
        r = share_hb(broker, ADMIN, None, r.member_epoch)
        if r.assignment is not None and r.assignment.topic_partitions:
            break
    d = ShareGroupDescribeRequest(group_ids=["sg", "x"], include_authorized_operations=True)
    got = call(broker, ApiKey.SHARE_GROUP_DESCRIBE, 1, d, principal=ALICE)
    assert [(g.group_id, g.error_code) for g in got.groups] == [
        ("x", ErrorCode.GROUP_AUTHORIZATION_FAILED), ("sg", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    assert got.groups[1].members == []
    # ShareFetch: group READ, then topic READ per partition
    F = ShareFetchRequest
    fetch = F(group_id="sg", member_id="s" * 22, share_session_epoch=0, max_wait_ms=0,
              min_bytes=1, max_bytes=1 << 20, max_records=10, topics=[F.FetchTopic(
                  topic_id=tid(broker), partitions=[F.FetchPartition(partition_index=0)])])
    r = call(broker, ApiKey.SHARE_FETCH, 1, fetch, principal=BOB)
    assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    r = call(broker, ApiKey.SHARE_FETCH, 1, fetch, principal=ALICE)
    assert r.error_code == ErrorCode.NONE
    assert [(p.partition_index, p.error_code) for t in r.responses for p in t.partitions] == [
        (0, ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    A = ShareAcknowledgeRequest
    ack = A(group_id="sg", member_id="s" * 22, share_session_epoch=1, topics=[
        A.AcknowledgeTopic(topic_id=tid(broker), partitions=[A.AcknowledgePartition(
            partition_index=0, acknowledgement_batches=[A.AcknowledgementBatch(
                first_offset=0, last_offset=0, acknowledge_types=[1])])])])
    assert call(broker, ApiKey.SHARE_ACKNOWLEDGE, 1, ack, principal=BOB).error_code == \
        ErrorCode.GROUP_AUTHORIZATION_FAILED
    r = call(broker, ApiKey.SHARE_ACKNOWLEDGE, 1, ack, principal=ALICE)
    assert [p.error_code for t in r.responses for p in t.partitions] == [
        ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    # the offsets apis
    DS = DescribeShareGroupOffsetsRequest
    ds = DS(groups=[DS.DescribeShareGroupOffsetsRequestGroup(group_id="sg", topics=[
        DS.DescribeShareGroupOffsetsRequestTopic(topic_name="t", partitions=[0])])])
    r = call(broker, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, ds, principal=BOB)
    assert r.groups[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    r = call(broker, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, ds, principal=ALICE)
    assert [p.error_code for p in r.groups[0].topics[0].partitions] == [
        ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    r = call(broker, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, ds, principal=ADMIN)
    assert [p.error_code for p in r.groups[0].topics[0].partitions] == [ErrorCode.NONE]
    AS = AlterShareGroupOffsetsRequest
    alter = AS(group_id="sg", topics=[AS.AlterShareGroupOffsetsRequestTopic(
        topic_name="t", partitions=[AS.AlterShareGroupOffsetsRequestPartition(
            partition_index=0, start_offset=0)])])
    assert call(broker, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter, principal=BOB).error_code \
        == ErrorCode.GROUP_AUTHORIZATION_FAILED
    DD = DeleteShareGroupOffsetsRequest
    delete = DD(group_id="sg", topics=[DD.DeleteShareGroupOffsetsRequestTopic(topic_name="t")])
    # READ on the group is not DELETE
    assert call(broker, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, delete,
                principal=ALICE).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_share_group_offsets_topic_checks_on_an_empty_group(broker: Broker) -> None:
    r = share_hb(broker, ADMIN, ["t"])
    r = call(broker, ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
        group_id="sg", member_id="s" * 22, member_epoch=-1), principal=ADMIN)
    assert r.error_code == ErrorCode.NONE  # left: the group is empty
    grant(broker, G, "sg", Op.READ)
    grant(broker, G, "sg", Op.DELETE)
    AS = AlterShareGroupOffsetsRequest
    alter = AS(group_id="sg", topics=[AS.AlterShareGroupOffsetsRequestTopic(
        topic_name=n, partitions=[AS.AlterShareGroupOffsetsRequestPartition(
            partition_index=0, start_offset=0)]) for n in ("t", "gone")])
    r = call(broker, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter, principal=ALICE)
    assert [(t.topic_name, t.partitions[0].error_code) for t in r.responses] == [
        ("t", ErrorCode.TOPIC_AUTHORIZATION_FAILED), ("gone", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    grant(broker, T, "t", Op.READ)
    r = call(broker, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter, principal=ALICE)
    assert [t.partitions[0].error_code for t in r.responses] == [
        ErrorCode.NONE, ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    DD = DeleteShareGroupOffsetsRequest
    delete = DD(group_id="sg", topics=[DD.DeleteShareGroupOffsetsRequestTopic(topic_name=n)
                                       for n in ("t", "gone")])
    r = call(broker, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, delete, principal=ALICE)
    assert [(t.topic_name, t.error_code) for t in r.responses] == [
        ("t", ErrorCode.NONE), ("gone", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]


def test_streams_group_apis(broker: Broker) -> None:
    broker.cluster.create_topic("input", 1, {})
    S = StreamsGroupHeartbeatRequest
    topology = S.Topology(epoch=1, subtopologies=[S.Subtopology(
        subtopology_id="0", source_topics=["input"], state_changelog_topics=[S.TopicInfo(
            name="app-store-changelog", partitions=0, replication_factor=-1)])])

    def hb(principal: str) -> Any:
        return call(broker, ApiKey.STREAMS_GROUP_HEARTBEAT, 0, S(
            group_id="app", member_id="m1", member_epoch=0, rebalance_timeout_ms=30_000,
            topology=topology, process_id="p1", active_tasks=[], standby_tasks=[],
            warmup_tasks=[]), principal=principal)
    assert hb(ALICE).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    grant(broker, G, "app", Op.READ)
    grant(broker, T, "input", Op.READ)
    # the changelog topic too must be describable
    assert hb(ALICE).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert hb(ADMIN).error_code == ErrorCode.NONE
    d = StreamsGroupDescribeRequest(group_ids=["app"], include_authorized_operations=True)
    r = call(broker, ApiKey.STREAMS_GROUP_DESCRIBE, 0, d, principal=BOB)
    assert r.groups[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    r = call(broker, ApiKey.STREAMS_GROUP_DESCRIBE, 0, d, principal=ALICE)
    assert (r.groups[0].error_code, r.groups[0].error_message, r.groups[0].members,
            r.groups[0].topology) == (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        "The described group uses topics that the client is not authorized to describe.",
        [], None)
    grant(broker, T, "app-", Op.DESCRIBE, pattern=PatternType.PREFIXED)
    assert hb(ALICE).error_code == ErrorCode.NONE
    r = call(broker, ApiKey.STREAMS_GROUP_DESCRIBE, 0, d, principal=ALICE)
    assert r.groups[0].error_code == ErrorCode.NONE
    assert r.groups[0].authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)


def test_scram_credential_apis_need_cluster_describe_and_alter(broker: Broker) -> None:
    DU = DescribeUserScramCredentialsRequest
    d = DU(users=[DU.UserName(name="alice")])
    r = call(broker, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, d, principal=ALICE)
    assert (r.error_code, r.error_message) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                               "Cluster authorization failed.")
    assert [x.error_code for x in r.results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    AU = AlterUserScramCredentialsRequest
    a = AU(deletions=[AU.ScramCredentialDeletion(name="bob", mechanism=1)], upsertions=[
        AU.ScramCredentialUpsertion(name="alice", mechanism=1, iterations=4096,
                                    salt=b"salt", salted_password=b"x" * 32)])
    r = call(broker, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, a, principal=ALICE)
    assert [(x.user, x.error_code) for x in r.results] == [
        ("alice", ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
        ("bob", ErrorCode.CLUSTER_AUTHORIZATION_FAILED)]
    grant(broker, C, "kafka-cluster", Op.ALTER)  # implies DESCRIBE
    r = call(broker, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, d, principal=ALICE)
    assert r.error_code == ErrorCode.NONE
    r = call(broker, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, a, principal=ALICE)
    assert all(x.error_code != ErrorCode.CLUSTER_AUTHORIZATION_FAILED for x in r.results)


def test_metadata_cluster_operations_need_cluster_describe(broker: Broker) -> None:
    from odradek.wire._generated.metadata import MetadataRequest

    def ops(principal: str) -> int:
        r = call(broker, ApiKey.METADATA, 10, MetadataRequest(
            topics=[], allow_auto_topic_creation=False,
            include_cluster_authorized_operations=True), principal=principal)
        return int(r.cluster_authorized_operations)
    grant(broker, C, "kafka-cluster", Op.CLUSTER_ACTION)
    assert ops(ALICE) == 0  # CLUSTER_ACTION alone: nothing reported (Kafka)
    grant(broker, C, "kafka-cluster", Op.DESCRIBE)
    assert ops(ALICE) == (1 << Op.CLUSTER_ACTION) | (1 << Op.DESCRIBE)


def test_streams_internal_topics_need_create(broker: Broker) -> None:
    """A missing internal topic is created only with CLUSTER or TOPIC CREATE (Kafka 4.4,
    KAFKA-19412); the others stay missing and MISSING_INTERNAL_TOPICS says so."""
    broker.cluster.create_topic("input", 1, {})
    S = StreamsGroupHeartbeatRequest
    topology = S.Topology(epoch=1, subtopologies=[S.Subtopology(
        subtopology_id="0", source_topics=["input"], state_changelog_topics=[
            S.TopicInfo(name="app-a-changelog", partitions=0, replication_factor=-1),
            S.TopicInfo(name="app-b-changelog", partitions=0, replication_factor=-1)])])
    for name in ("input", "app-a-changelog", "app-b-changelog"):
        grant(broker, T, name, Op.DESCRIBE)
    grant(broker, G, "app", Op.READ)
    grant(broker, T, "app-a-changelog", Op.CREATE)
    r = call(broker, ApiKey.STREAMS_GROUP_HEARTBEAT, 0, S(
        group_id="app", member_id="m1", member_epoch=0, rebalance_timeout_ms=30_000,
        topology=topology, process_id="p1", active_tasks=[], standby_tasks=[],
        warmup_tasks=[]), principal=ALICE)
    assert r.error_code == ErrorCode.NONE
    assert broker.cluster.get("app-a-changelog") is not None
    assert broker.cluster.get("app-b-changelog") is None
    [missing] = [s for s in r.status if s.status_code == 3]
    assert missing.status_detail.endswith("; Unauthorized to CREATE on topics app-b-changelog.")
