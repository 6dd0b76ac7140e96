"""DescribeQuorum: the controller as the only voter and leader of __cluster_metadata-0, the
other live brokers as observers; the unknown-partition and authorization answers are Kafka
4.4's (tests/integration/test_features.py runs kafka-metadata-quorum.sh on both brokers)."""

from __future__ import annotations

import uuid
from pathlib import Path

from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.config import BrokerConfig, Listener
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.describe_quorum import DescribeQuorumRequest

Req = DescribeQuorumRequest


def describe(broker: Broker, version: int, *parts: tuple[str, int], principal: str = "User:ANONYMOUS"
             ) -> object:
    topics: dict[str, list[int]] = {}
    for name, p in parts:
        topics.setdefault(name, []).append(p)
    req = Req(topics=[Req.TopicData(topic_name=n, partitions=[Req.PartitionData(partition_index=p)
                                                             for p in ps])
                      for n, ps in topics.items()])
    return call(broker, ApiKey.DESCRIBE_QUORUM, version, req, principal=principal)


def test_one_node_is_the_leader_and_only_voter(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    try:
        r = describe(broker, 2, ("__cluster_metadata", 0), ("__cluster_metadata", 1), ("x", 0))
        assert (r.error_code, r.error_message) == (ErrorCode.NONE, "")
        [meta, other] = r.topics
        [p0, p1] = meta.partitions
        assert (p0.error_code, p0.leader_id, p0.leader_epoch) == (ErrorCode.NONE, 1, 1)
        assert [(v.replica_id, v.replica_directory_id) for v in p0.current_voters] == [
            (1, uuid.UUID(int=0))]
        assert p0.observers == [] and p0.current_voters[0].last_fetch_timestamp > 0
        for p in (p1, other.partitions[0]):
            assert (p.error_code, p.error_message, p.leader_id) == (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.", 0)
        [node] = r.nodes
        assert node.node_id == 1 and node.listeners[0].name == "PLAINTEXT"
        assert describe(broker, 2).nodes == []  # no topics asked: no nodes, as Kafka
        v0 = describe(broker, 0, ("__cluster_metadata", 0))
        assert v0.topics[0].partitions[0].current_voters[0].last_fetch_timestamp == -1
    finally:
        broker.close()


def test_a_simulated_cluster_lists_the_other_live_brokers_as_observers(tmp_path: Path) -> None:
    broker = Broker(BrokerConfig({"log.dirs": str(tmp_path / "data"), "simulated.brokers": "3"}))
    try:
        assert broker.sim is not None
        for node in broker.sim.nodes.values():  # as the listeners set them once bound
            node.advertised = [Listener("PLAINTEXT", "127.0.0.1", 9000 + node.node_id)]
        [p0] = describe(broker, 1, ("__cluster_metadata", 0)).topics[0].partitions
        assert p0.leader_id == 1 and [o.replica_id for o in p0.observers] == [2, 3]
        broker.sim.stop(3)
        [p0] = describe(broker, 1, ("__cluster_metadata", 0)).topics[0].partitions
        assert [o.replica_id for o in p0.observers] == [2]
    finally:
        broker.close()


def test_needs_cluster_describe(tmp_path: Path) -> None:
    broker = open_broker(tmp_path, **{"authorizer.class.name":
                                      "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    try:
        r = describe(broker, 2, ("__cluster_metadata", 0), principal="User:mallory")
        assert (r.error_code, r.topics) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
    finally:
        broker.close()
