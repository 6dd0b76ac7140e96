"""Each api's authorization check and Kafka's error for it (issue #13), on a real Broker
with `authorizer.class.name` set, through the codec both ways. Alice is allowed what each
test grants; Bob is denied everything (no ACL names him and allow.everyone is off)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from admin_testutil import call, open_broker

from odradek.broker.acls import STANDARD_AUTHORIZER
from odradek.broker.broker import Broker
from odradek.config import ConfigError
from odradek.coordinator.acl.authorizer import (
    AclBinding,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.add_offsets_to_txn import AddOffsetsToTxnRequest
from odradek.wire._generated.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from odradek.wire._generated.create_acls import CreateAclsRequest
from odradek.wire._generated.create_topics import CreateTopicsRequest
from odradek.wire._generated.delete_acls import DeleteAclsRequest
from odradek.wire._generated.delete_groups import DeleteGroupsRequest
from odradek.wire._generated.delete_topics import DeleteTopicsRequest
from odradek.wire._generated.describe_acls import DescribeAclsRequest
from odradek.wire._generated.describe_configs import DescribeConfigsRequest
from odradek.wire._generated.describe_groups import DescribeGroupsRequest
from odradek.wire._generated.end_txn import EndTxnRequest
from odradek.wire._generated.fetch import FetchRequest
from odradek.wire._generated.find_coordinator import FindCoordinatorRequest
from odradek.wire._generated.heartbeat import HeartbeatRequest
from odradek.wire._generated.incremental_alter_configs import IncrementalAlterConfigsRequest
from odradek.wire._generated.init_producer_id import InitProducerIdRequest
from odradek.wire._generated.join_group import JoinGroupRequest
from odradek.wire._generated.list_groups import ListGroupsRequest
from odradek.wire._generated.list_offsets import ListOffsetsRequest
from odradek.wire._generated.metadata import MetadataRequest
from odradek.wire._generated.offset_commit import OffsetCommitRequest
from odradek.wire._generated.offset_fetch import OffsetFetchRequest
from odradek.wire._generated.produce import ProduceRequest
from odradek.wire._generated.sync_group import SyncGroupRequest
from odradek.wire._generated.txn_offset_commit import TxnOffsetCommitRequest
from odradek.wire.records import build_batch

ALICE, BOB = "User:alice", "User:bob"
Op = AclOperation
T, G, C, X = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
              ResourceType.TRANSACTIONAL_ID)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path, **{"authorizer.class.name": STANDARD_AUTHORIZER,
                                 "super.users": "User:admin",
                                 "offsets.topic.num.partitions": "2"})
    b.cluster.create_topic("t", 1, {})
    yield b
    b.close()


def grant(broker: Broker, rt: ResourceType, name: str, op: AclOperation,
          principal: str = ALICE, pattern: PatternType = PatternType.LITERAL) -> None:
    assert broker.authorizer is not None
    broker.authorizer.create(AclBinding(rt, name, pattern, principal, "*", op,
                                        PermissionType.ALLOW))


def produce(broker: Broker, principal: str, txn_id: str | None = None) -> int:
    P = ProduceRequest
    raw = build_batch([(None, b"v")])
    r = call(broker, ApiKey.PRODUCE, 9, P(transactional_id=txn_id, acks=-1, timeout_ms=1000,
                                          topic_data=[P.TopicProduceData(name="t", partition_data=[
                                              P.PartitionProduceData(index=0, records=raw)])]),
             principal=principal)
    return int(r.responses[0].partition_responses[0].error_code)


def test_off_by_default_and_only_the_standard_authorizer(tmp_path: Path) -> None:
    b = open_broker(tmp_path)
    assert b.authorizer is None  # every check is skipped
    b.cluster.create_topic("t", 1, {})
    assert produce(b, BOB) == ErrorCode.NONE
    b.close()
    with pytest.raises(ConfigError, match=r"only org\.apache\.kafka"):
        open_broker(tmp_path, **{"authorizer.class.name": "x.Authorizer"})


def test_produce_needs_topic_write_and_txn_id_write(broker: Broker) -> None:
    assert produce(broker, BOB) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    grant(broker, T, "t", Op.WRITE)
    assert produce(broker, ALICE) == ErrorCode.NONE
    assert produce(broker, ALICE, txn_id="tx") == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert produce(broker, "User:admin") == ErrorCode.NONE


def fetch(broker: Broker, principal: str) -> int:
    F = FetchRequest
    r = call(broker, ApiKey.FETCH, 12, F(replica_id=-1, max_wait_ms=0, min_bytes=1,
                                         max_bytes=1 << 20, topics=[F.FetchTopic(
                                             topic="t", partitions=[F.FetchPartition(
                                                 partition=0, fetch_offset=0,
                                                 partition_max_bytes=1 << 20)])]),
             principal=principal)
    return int(r.responses[0].partitions[0].error_code)


def test_fetch_needs_topic_read(broker: Broker) -> None:
    assert fetch(broker, ALICE) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    grant(broker, T, "t", Op.WRITE)  # implies DESCRIBE, not READ
    assert fetch(broker, ALICE) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    grant(broker, T, "t", Op.READ)
    assert fetch(broker, ALICE) == ErrorCode.NONE


def metadata(broker: Broker, principal: str, topics: list[str] | None, *, v: int = 10,
             auto: bool = False, ops: bool = False) -> Any:
    M = MetadataRequest
    req = M(topics=[M.MetadataRequestTopic(name=n) for n in topics or []],
            allow_auto_topic_creation=auto, include_cluster_authorized_operations=ops,
            include_topic_authorized_operations=ops)
    if topics is None:
        req.topics = None  # all topics (the constructor turns None into [])
    return call(broker, ApiKey.METADATA, v, req, principal=principal)


def test_metadata_hides_and_refuses_topics(broker: Broker) -> None:
    broker.cluster.create_topic("u", 1, {})
    grant(broker, T, "u", Op.READ)
    listed = metadata(broker, ALICE, None, ops=True)
    assert [t.name for t in listed.topics] == ["u"]
    assert listed.topics[0].topic_authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert listed.cluster_authorized_operations == 0
    named = metadata(broker, ALICE, ["t", "u"])
    assert [t.error_code for t in named.topics] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                    ErrorCode.NONE]
    # auto-creation needs CREATE
    grant(broker, T, "new", Op.DESCRIBE)
    assert metadata(broker, ALICE, ["new"], auto=True).topics[0].error_code == \
        ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert broker.cluster.get("new") is None
    grant(broker, T, "new", Op.CREATE)
    assert metadata(broker, ALICE, ["new"], auto=True).topics[0].error_code == ErrorCode.NONE


def init_pid(broker: Broker, principal: str, txn_id: str | None = None) -> int:
    r = call(broker, ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(
        transactional_id=txn_id, transaction_timeout_ms=60_000, producer_id=-1,
        producer_epoch=-1), principal=principal)
    return int(r.error_code)


def test_init_producer_id_idempotent_write_rules(broker: Broker) -> None:
    assert init_pid(broker, ALICE) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    grant(broker, T, "t", Op.WRITE)  # WRITE on any topic is enough (KIP-679)
    assert init_pid(broker, ALICE) == ErrorCode.NONE
    assert init_pid(broker, BOB) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    grant(broker, C, "kafka-cluster", Op.IDEMPOTENT_WRITE, principal=BOB)
    assert init_pid(broker, BOB) == ErrorCode.NONE
    assert init_pid(broker, ALICE, "tx") == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(broker, X, "tx", Op.WRITE)
    assert init_pid(broker, ALICE, "tx") == ErrorCode.NONE


def test_transaction_apis_need_txn_id_write(broker: Broker) -> None:
    r = call(broker, ApiKey.END_TXN, 3, EndTxnRequest(transactional_id="tx", producer_id=1,
                                                      producer_epoch=0, committed=True),
             principal=ALICE)
    assert r.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    add = AddOffsetsToTxnRequest(transactional_id="tx", producer_id=1, producer_epoch=0,
                                 group_id="g")
    assert call(broker, ApiKey.ADD_OFFSETS_TO_TXN, 3, add, principal=ALICE).error_code == \
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(broker, X, "tx", Op.WRITE)
    assert call(broker, ApiKey.ADD_OFFSETS_TO_TXN, 3, add, principal=ALICE).error_code == \
        ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_txn_offset_commit_and_list_offsets(broker: Broker) -> None:
    TO = TxnOffsetCommitRequest
    req = TO(transactional_id="tx", group_id="g", producer_id=1, producer_epoch=0, topics=[
        TO.TxnOffsetCommitRequestTopic(name="t", partitions=[
            TO.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1)])])

    def code() -> int:
        r = call(broker, ApiKey.TXN_OFFSET_COMMIT, 3, req, principal=ALICE)
        return int(r.topics[0].partitions[0].error_code)
    assert code() == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(broker, X, "tx", Op.WRITE)
    assert code() == ErrorCode.GROUP_AUTHORIZATION_FAILED
    grant(broker, G, "g", Op.READ)
    assert code() == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    grant(broker, T, "t", Op.READ)
    assert code() not in (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.NONE)  # no txn
    LO = ListOffsetsRequest
    lo = LO(replica_id=-1, topics=[LO.ListOffsetsTopic(name="t", partitions=[
        LO.ListOffsetsPartition(partition_index=0, timestamp=-1)])])
    r = call(broker, ApiKey.LIST_OFFSETS, 5, lo, principal=BOB)
    assert r.topics[0].partitions[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    r = call(broker, ApiKey.LIST_OFFSETS, 5, lo, principal=ALICE)
    assert r.topics[0].partitions[0].error_code == ErrorCode.NONE


def test_describe_list_and_delete_groups(broker: Broker) -> None:
    grant(broker, G, "g", Op.READ)
    grant(broker, G, "h", Op.READ, principal=BOB)
    for group in ("g", "h"):  # two groups with committed offsets (offset-only, Empty)
        OC = OffsetCommitRequest
        call(broker, ApiKey.OFFSET_COMMIT, 8, OC(
            group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
                OC.OffsetCommitRequestTopic(name="t", partitions=[
                    OC.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]),
            principal="User:admin")
    listed = call(broker, ApiKey.LIST_GROUPS, 4, ListGroupsRequest(), principal=ALICE)
    assert [g.group_id for g in listed.groups] == ["g"]
    grant(broker, C, "kafka-cluster", Op.DESCRIBE)
    listed = call(broker, ApiKey.LIST_GROUPS, 4, ListGroupsRequest(), principal=ALICE)
    assert sorted(g.group_id for g in listed.groups) == ["g", "h"]
    d = call(broker, ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(
        groups=["g", "h"], include_authorized_operations=True), principal=ALICE)
    assert [g.error_code for g in d.groups] == [ErrorCode.NONE,
                                                ErrorCode.GROUP_AUTHORIZATION_FAILED]
    assert d.groups[0].authorized_operations == (1 << Op.READ) | (1 << Op.DESCRIBE)
    r = call(broker, ApiKey.DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=["g"]),
             principal=ALICE)
    assert r.results[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    grant(broker, G, "g", Op.DELETE)
    r = call(broker, ApiKey.DELETE_GROUPS, 2, DeleteGroupsRequest(groups_names=["g"]),
             principal=ALICE)
    assert r.results[0].error_code == ErrorCode.NONE


def test_configs_need_describe_and_alter_configs(broker: Broker) -> None:
    DC = DescribeConfigsRequest
    req = DC(resources=[DC.DescribeConfigsResource(resource_type=2, resource_name="t",
                                                   configuration_keys=None),
                        DC.DescribeConfigsResource(resource_type=4, resource_name="1",
                                                   configuration_keys=None)])
    r = call(broker, ApiKey.DESCRIBE_CONFIGS, 4, req, principal=ALICE)
    assert [x.error_code for x in r.results] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                 ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    grant(broker, T, "t", Op.ALTER_CONFIGS)  # implies DESCRIBE_CONFIGS
    r = call(broker, ApiKey.DESCRIBE_CONFIGS, 4, req, principal=ALICE)
    assert r.results[0].error_code == ErrorCode.NONE and r.results[0].configs
    IA = IncrementalAlterConfigsRequest
    alter = IA(resources=[IA.AlterConfigsResource(resource_type=2, resource_name="t", configs=[
        IA.AlterableConfig(name="retention.ms", config_operation=0, value="1000")])])
    r = call(broker, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, alter, principal=BOB)
    assert r.responses[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    r = call(broker, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, alter, principal=ALICE)
    assert r.responses[0].error_code == ErrorCode.NONE


def test_consumer_group_heartbeat_needs_group_read(broker: Broker) -> None:
    req = ConsumerGroupHeartbeatRequest(group_id="cg", member_id="m" * 22, member_epoch=0,
                                        rebalance_timeout_ms=30_000,
                                        subscribed_topic_names=["t"], topic_partitions=[])
    r = call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, req, principal=ALICE)
    assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    grant(broker, G, "cg", Op.READ)
    r = call(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, req, principal=ALICE)
    assert r.error_code != ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_find_coordinator_needs_describe(broker: Broker) -> None:
    def find(key: str, key_type: int) -> int:
        return int(call(broker, ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(
            key=key, key_type=key_type), principal=ALICE).error_code)
    assert find("g", 0) == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert find("tx", 1) == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    # Kafka's default texts (kcat prints them), in v1-3 and in v4+'s per-key entries
    old = call(broker, ApiKey.FIND_COORDINATOR, 3, FindCoordinatorRequest(key="g", key_type=0),
               principal=ALICE)
    assert old.error_message == "Group authorization failed."
    new = call(broker, ApiKey.FIND_COORDINATOR, 4, FindCoordinatorRequest(
        key_type=1, coordinator_keys=["tx"]), principal=ALICE)
    assert new.coordinators[0].error_message == "Transactional Id authorization failed."
    grant(broker, G, "g", Op.READ)  # implies DESCRIBE
    assert find("g", 0) == ErrorCode.NONE


def test_group_apis_need_group_read(broker: Broker) -> None:
    sub = struct.pack(">h", 0) + b"\0\0\0\0" + b"\xff\xff\xff\xff"
    join = JoinGroupRequest(group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=30_000,
                            member_id="", protocol_type="consumer", protocols=[
                                JoinGroupRequest.JoinGroupRequestProtocol(name="range",
                                                                          metadata=sub)])
    for v in (1, 7):
        r = call(broker, ApiKey.JOIN_GROUP, v, join, principal=ALICE)
        assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    sync = SyncGroupRequest(group_id="g", generation_id=1, member_id="m")
    assert call(broker, ApiKey.SYNC_GROUP, 3, sync, principal=ALICE).error_code == \
        ErrorCode.GROUP_AUTHORIZATION_FAILED
    hb = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
    assert call(broker, ApiKey.HEARTBEAT, 3, hb, principal=ALICE).error_code == \
        ErrorCode.GROUP_AUTHORIZATION_FAILED
    grant(broker, G, "g", Op.READ)
    assert call(broker, ApiKey.HEARTBEAT, 3, hb, principal=ALICE).error_code != \
        ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_offset_commit_and_fetch(broker: Broker) -> None:
    OC = OffsetCommitRequest
    commit = OC(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        OC.OffsetCommitRequestTopic(name="t", partitions=[
            OC.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])])

    def code() -> int:
        r = call(broker, ApiKey.OFFSET_COMMIT, 8, commit, principal=ALICE)
        return int(r.topics[0].partitions[0].error_code)
    assert code() == ErrorCode.GROUP_AUTHORIZATION_FAILED
    grant(broker, G, "g", Op.READ)
    assert code() == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    grant(broker, T, "t", Op.READ)
    assert code() == ErrorCode.NONE
    F = OffsetFetchRequest
    r = call(broker, ApiKey.OFFSET_FETCH, 7, F(group_id="other", topics=None), principal=ALICE)
    assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    r = call(broker, ApiKey.OFFSET_FETCH, 8, F(groups=[
        F.OffsetFetchRequestGroup(group_id="other", topics=None),
        F.OffsetFetchRequestGroup(group_id="g", topics=None)]), principal=ALICE)
    assert [g.error_code for g in r.groups] == [ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                                ErrorCode.NONE]


def test_create_and_delete_topics(broker: Broker) -> None:
    CT = CreateTopicsRequest
    create = CT(timeout_ms=1000, topics=[CT.CreatableTopic(name=n, num_partitions=1,
                                                           replication_factor=1)
                                         for n in ("a1", "b1")])
    grant(broker, T, "a", Op.CREATE, pattern=PatternType.PREFIXED)
    r = call(broker, ApiKey.CREATE_TOPICS, 5, create, principal=ALICE)
    assert [t.error_code for t in r.topics] == [ErrorCode.NONE,
                                                ErrorCode.TOPIC_AUTHORIZATION_FAILED]
    grant(broker, C, "kafka-cluster", Op.CREATE, principal=BOB)
    r = call(broker, ApiKey.CREATE_TOPICS, 5, create, principal=BOB)
    assert [t.error_code for t in r.topics] == [ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.NONE]
    D = DeleteTopicsRequest
    r = call(broker, ApiKey.DELETE_TOPICS, 4, D(topic_names=["a1"], timeout_ms=1000),
             principal=ALICE)
    assert r.responses[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    grant(broker, T, "a1", Op.DELETE)
    r = call(broker, ApiKey.DELETE_TOPICS, 4, D(topic_names=["a1"], timeout_ms=1000),
             principal=ALICE)
    assert r.responses[0].error_code == ErrorCode.NONE


@pytest.mark.parametrize("version", range(4))
def test_acl_apis_need_cluster_alter_describe_and_persist(tmp_path: Path, version: int) -> None:
    settings = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin"}
    b = open_broker(tmp_path, **settings)
    C_ = CreateAclsRequest.AclCreation
    creations = CreateAclsRequest(creations=[
        C_(resource_type=2, resource_name="t", resource_pattern_type=3, principal=ALICE,
           host="*", operation=3, permission_type=3),
        C_(resource_type=1, resource_name="t", resource_pattern_type=3, principal=ALICE,
           host="*", operation=3, permission_type=3),  # ANY resource type: invalid
        C_(resource_type=4, resource_name="c", resource_pattern_type=3, principal=ALICE,
           host="*", operation=7, permission_type=3),  # cluster not named kafka-cluster
    ])
    r = call(b, ApiKey.CREATE_ACLS, version, creations, principal=ALICE)
    assert [x.error_code for x in r.results] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED] * 3
    r = call(b, ApiKey.CREATE_ACLS, version, creations, principal="User:admin")
    assert [x.error_code for x in r.results] == [ErrorCode.NONE, ErrorCode.INVALID_REQUEST,
                                                 ErrorCode.INVALID_REQUEST]
    describe = DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1,
                                   permission_type=1, resource_name_filter=None,
                                   principal_filter=None, host_filter=None)
    assert call(b, ApiKey.DESCRIBE_ACLS, version, describe, principal=ALICE).error_code == \
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    b.close()
    b = open_broker(tmp_path, **settings)  # the ACL survived the restart
    d = call(b, ApiKey.DESCRIBE_ACLS, version, describe, principal="User:admin")
    assert d.error_code == ErrorCode.NONE
    assert [(res.resource_name, [(a.principal, a.operation) for a in res.acls])
            for res in d.resources] == [("t", [(ALICE, Op.READ)])]
    flt = DeleteAclsRequest.DeleteAclsFilter(resource_type_filter=2, resource_name_filter="t",
                                             pattern_type_filter=3 if version == 0 else 2,
                                             operation=1, permission_type=1,
                                             principal_filter=None, host_filter=None)
    r = call(b, ApiKey.DELETE_ACLS, version, DeleteAclsRequest(filters=[flt]),
             principal="User:admin")
    assert [a.resource_name for a in r.filter_results[0].matching_acls] == ["t"]
    b.close()
    b = open_broker(tmp_path, **settings)
    assert b.authorizer is not None and len(b.authorizer) == 0
    b.close()
