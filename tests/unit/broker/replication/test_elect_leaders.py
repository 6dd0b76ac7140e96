"""ElectLeaders through its handler on a simulated three-broker cluster (no sockets): the
answers Kafka 4.4's controller gives, and an unclean election's truncation of the others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from odradek.broker.broker import Broker
from odradek.broker.replication.controller import NO_LEADER
from odradek.config import BrokerConfig
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.elect_leaders import ElectLeadersRequest
from tests.unit.broker.replication.test_simulated import (
    _call,
    append,
    contents,
    create,
    open_cluster,
    replica,
)

TP = ElectLeadersRequest.TopicPartitions


def elect(broker: Broker, election_type: int, partitions: list[Any] | None,
          version: int = 2) -> Any:
    request = ElectLeadersRequest(election_type=election_type, timeout_ms=1000)
    request.topic_partitions = partitions  # the constructor turns None (all) into []
    return anyio.run(_call, broker, 1, ApiKey.ELECT_LEADERS, version, request)


def codes(response: Any) -> list[tuple[str, int, int, str | None]]:
    return [(t.topic, p.partition_id, p.error_code, p.error_message)
            for t in response.replica_election_results for p in t.partition_result]


def test_preferred_election_moves_leadership_back_to_the_first_replica(tmp_path: Path) -> None:
    broker = open_cluster(tmp_path)
    sim = broker.sim
    assert sim is not None
    create(broker)
    state = sim.state("t", 0)
    assert state is not None
    preferred = state.replicas[0]
    assert codes(elect(broker, 0, [TP(topic="t", partitions=[0, 7]),
                                   TP(topic="nope", partitions=[0])])) == [
        ("t", 0, ErrorCode.ELECTION_NOT_NEEDED, None),
        ("t", 7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as t-7"),
        ("nope", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such topic as nope")]
    sim.stop(preferred)
    sim.start(preferred)  # caught up at once: back in the ISR, but not leading
    assert state.leader != preferred and preferred in state.isr
    epoch = state.leader_epoch
    # every partition (null): only those not ELECTION_NOT_NEEDED are listed, in v0 too
    assert codes(elect(broker, 0, None, version=0)) == [("t", 0, ErrorCode.NONE, None)]
    assert (state.leader, state.leader_epoch) == (preferred, epoch + 1)
    assert codes(elect(broker, 0, None)) == [] and elect(broker, 0, None).error_code == 0
    broker.close()


def test_unclean_election_makes_the_lagging_replica_the_truth(tmp_path: Path) -> None:
    broker = open_cluster(tmp_path)
    sim = broker.sim
    assert sim is not None
    create(broker, rf=2)
    state = sim.state("t", 0)
    assert state is not None
    leader, follower = state.replicas
    other = next(n for n in sim.ids if n not in state.replicas)
    append(broker, b"a")            # both replicas: offset 0
    sim.stop(follower)
    append(broker, b"b", b"c")      # the leader alone (acks=1): offsets 1-2
    sim.stop(leader)
    sim.start(follower)
    assert state.leader == NO_LEADER and state.isr == [leader]
    assert codes(elect(broker, 0, [TP(topic="t", partitions=[0])])) == [
        ("t", 0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, None)]
    epoch = state.leader_epoch
    assert codes(elect(broker, 1, [TP(topic="t", partitions=[0])])) == [
        ("t", 0, ErrorCode.NONE, None)]
    assert (state.leader, state.isr, state.leader_epoch) == (follower, [follower], epoch + 1)
    assert replica(broker, follower).log_end_offset == 1
    assert broker.partitions.log("t", 0) is replica(broker, follower)
    assert replica(broker, follower).high_watermark == 1
    append(broker, b"d")            # the new leader writes offset 1 in its epoch
    assert codes(elect(broker, 1, [TP(topic="t", partitions=[0])])) == [
        ("t", 0, ErrorCode.ELECTION_NOT_NEEDED, None)]
    sim.start(other)                # not a replica: changes nothing
    sim.start(leader)               # the old leader truncates its 'b', 'c' and catches up
    assert contents(replica(broker, leader)) == contents(replica(broker, follower))
    assert replica(broker, leader).log_end_offset == 2
    assert sorted(state.isr) == sorted([leader, follower])
    broker.close()


def test_one_broker_needs_no_election_and_unknown_types_are_invalid(tmp_path: Path) -> None:
    broker = Broker(BrokerConfig({"log.dirs": str(tmp_path / "one")}))
    broker.cluster.create_topic("t", 2, {})
    assert codes(elect(broker, 1, [TP(topic="t", partitions=[1])])) == [
        ("t", 1, ErrorCode.ELECTION_NOT_NEEDED, None)]
    assert [(t.topic, t.partition_result) for t in elect(broker, 0, None)
            .replica_election_results] == [("t", [])]
    bad = elect(broker, 5, [TP(topic="t", partitions=[0])])
    assert bad.error_code == ErrorCode.INVALID_REQUEST
    assert codes(bad) == [("t", 0, ErrorCode.INVALID_REQUEST, "Unknown election type 5")]
    broker.close()
