"""The simulated cluster in one process (`simulated.brokers=3`), without sockets: replica logs
that really hold the leader's batches, the high watermark, stop/start with truncation, and
what the handlers answer on a broker that does not lead."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from odradek.broker.broker import Broker
from odradek.broker.connection import IncomingRequest
from odradek.broker.context import ClientInfo
from odradek.broker.registry import HANDLERS
from odradek.broker.replication.controller import NO_LEADER
from odradek.broker.storage.log import PartitionLog
from odradek.config import BrokerConfig, Listener
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.metadata import MetadataRequest
from odradek.wire._generated.produce import ProduceRequest
from odradek.wire.records import Record, build_batch, iter_batches


def roundtrip(message: Any, version: int) -> Any:
    """Through the codec both ways, as the server and a client would see it."""
    data = b"".join(bytes(p) for p in message.encode(version))
    decoded, end = type(message).decode(data, version)
    assert end == len(data)
    return decoded


def open_cluster(tmp_path: Path, **settings: str) -> Broker:
    return Broker(BrokerConfig({"log.dirs": str(tmp_path / "data"), "simulated.brokers": "3",
                                **settings}))


def batch(*values: bytes) -> memoryview:
    records = [Record(i, 0, None, v, []) for i, v in enumerate(values)]
    return memoryview(bytearray(build_batch(records, base_timestamp=1_000)))


def replica(broker: Broker, node: int, topic: str = "t") -> PartitionLog:
    assert broker.sim is not None
    plog = broker.sim.stores[node].get(topic, 0)
    assert plog is not None
    return plog


def contents(plog: PartitionLog) -> list[tuple[int, int, bytes]]:
    """(base offset, partition leader epoch, bytes) of every batch, read from its files."""
    out = []
    for segment in plog.segments:
        data = Path(segment.log_path).read_bytes()
        out += [(b.base_offset, b.partition_leader_epoch, bytes(b.buffer()))
                for b in iter_batches(memoryview(data))]
    return out


def append(broker: Broker, *values: bytes) -> None:
    broker.partitions.append_internal("t", 0, batch(*values), broker.now_ms())
    broker.partitions.notify_appended("t", 0)


def create(broker: Broker, rf: int = 3, **configs: str) -> None:
    assert broker.sim is not None
    broker.sim.expect_replication("t", rf)
    broker.cluster.create_topic("t", 1, configs)


def test_every_broker_keeps_its_replicas_in_its_own_log_dir(tmp_path: Path) -> None:
    broker = open_cluster(tmp_path)
    create(broker)
    assert broker.sim is not None
    assert broker.sim.ids == [1, 2, 3]
    dirs = {n: replica(broker, n).directory for n in (1, 2, 3)}
    assert {d.parent.name for d in dirs.values()} == {"broker.1", "broker.2", "broker.3"}
    assert all(d.parent.parent == tmp_path / "data" for d in dirs.values())
    broker.close()


def test_followers_hold_the_leaders_batches_byte_for_byte_and_the_hw_follows(
        tmp_path: Path) -> None:
    broker = open_cluster(tmp_path)
    create(broker)
    state = broker.sim.state("t", 0)  # type: ignore[union-attr]
    assert state is not None and len(state.isr) == 3
    append(broker, b"a", b"b")
    append(broker, b"c")
    logs = [replica(broker, n) for n in state.replicas]
    assert [lg.log_end_offset for lg in logs] == [3, 3, 3]
    assert [lg.high_watermark for lg in logs] == [3, 3, 3]
    leader = contents(logs[0])
    assert [(o, e) for o, e, _ in leader] == [(0, 0), (2, 0)]
    assert all(contents(lg) == leader for lg in logs[1:])
    broker.close()


def test_stop_elects_from_the_isr_and_a_restarted_replica_truncates_its_unreplicated_tail(
        tmp_path: Path) -> None:
    broker = open_cluster(tmp_path)
    sim = broker.sim
    assert sim is not None
    create(broker)
    state = sim.state("t", 0)
    assert state is not None
    old = state.leader
    append(broker, b"a", b"b")  # replicated: offsets 0-1, epoch 0
    # An append the followers never received (as if the leader died before they fetched).
    replica(broker, old).append(batch(b"lost"), leader_epoch=0, now_ms=broker.now_ms())
    assert replica(broker, old).log_end_offset == 3
    sim.stop(old)
    assert state.leader not in (old, NO_LEADER)
    assert state.leader_epoch == 1 and old not in state.isr
    append(broker, b"c", b"d")  # the new leader writes epoch 1 at offset 2
    new_leader = contents(replica(broker, state.leader))
    assert [(o, e) for o, e, _ in new_leader] == [(0, 0), (2, 1)]
    assert replica(broker, state.leader).epochs.entries == [(0, 0), (1, 2)]
    sim.start(old)
    back = replica(broker, old)
    # truncated to the epoch-0 boundary (offset 2), then caught up with epoch 1
    assert contents(back) == new_leader
    assert back.epochs.entries == [(0, 0), (1, 2)]
    assert (tmp_path / "data" / f"broker.{old}" / "t-0" / "leader-epoch-checkpoint").exists()
    assert old in state.isr and len(state.isr) == 3
    broker.close()


def test_a_process_restart_elects_the_longest_log_of_the_latest_epoch(tmp_path: Path) -> None:
    broker = open_cluster(tmp_path)
    sim = broker.sim
    assert sim is not None
    create(broker)
    append(broker, b"a")
    state = sim.state("t", 0)
    assert state is not None
    follower = state.replicas[1]
    sim.stop(follower)
    append(broker, b"b", b"c")  # the stopped follower misses these
    broker.close()
    again = open_cluster(tmp_path)
    sim2 = again.sim
    assert sim2 is not None
    state2 = sim2.state("t", 0)
    assert state2 is not None
    assert state2.leader != follower and state2.leader_epoch == 1
    assert sorted(state2.isr) == [1, 2, 3]
    assert [replica(again, n).log_end_offset for n in (1, 2, 3)] == [3, 3, 3]
    assert replica(again, follower).high_watermark == 3
    again.close()


async def _call(broker: Broker, node: int, api_key: int, version: int, request: Any) -> Any:
    entry = HANDLERS[api_key]
    ctx = broker.context(ClientInfo("127.0.0.1:50000", "PLAINTEXT", broker=node),
                         IncomingRequest(api_key, version, 7, "test", bytearray(), 0))
    handle = importlib.import_module(f"odradek.broker.api.{entry.module}").handle
    return roundtrip(await handle(ctx, roundtrip(request, version)), version)


def produce(broker: Broker, node: int, acks: int = -1) -> Any:
    request = ProduceRequest(acks=acks, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=bytes(batch(b"x")))])])
    response = anyio.run(_call, broker, node, ApiKey.PRODUCE, 9, request)
    return response.responses[0].partition_responses[0]


def test_produce_on_a_follower_is_not_leader_and_min_isr_is_enforced(tmp_path: Path) -> None:
    broker = open_cluster(tmp_path, **{"admin.http.port": "-1"})
    sim = broker.sim
    assert sim is not None
    create(broker, **{"min.insync.replicas": "2"})
    state = sim.state("t", 0)
    assert state is not None
    leader, f1, f2 = state.replicas
    assert produce(broker, f1).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    ok = produce(broker, leader)
    assert (ok.error_code, ok.base_offset) == (ErrorCode.NONE, 0)
    sim.stop(f1)
    assert produce(broker, leader).error_code == ErrorCode.NONE  # ISR 2 of min 2
    sim.stop(f2)
    assert produce(broker, leader).error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert produce(broker, leader, acks=1).error_code == ErrorCode.NONE  # acks=1 still works
    sim.start(f1)
    assert produce(broker, leader).error_code == ErrorCode.NONE
    assert replica(broker, f1).log_end_offset == replica(broker, leader).log_end_offset == 4
    broker.close()


def test_metadata_lists_every_live_broker_and_each_partitions_replicas(tmp_path: Path) -> None:
    broker = open_cluster(tmp_path)
    sim = broker.sim
    assert sim is not None
    for n, port in ((1, 9001), (2, 9002), (3, 9003)):
        sim.nodes[n].advertised = [Listener("PLAINTEXT", "127.0.0.1", port)]
    create(broker)
    state = sim.state("t", 0)
    assert state is not None
    want_t = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")])
    md = anyio.run(_call, broker, 2, ApiKey.METADATA, 12, want_t)
    assert [(b.node_id, b.port) for b in md.brokers] == [(1, 9001), (2, 9002), (3, 9003)]
    assert md.controller_id == 1
    part = md.topics[0].partitions[0]
    assert (part.leader_id, part.replica_nodes, part.isr_nodes) == (
        state.leader, list(state.replicas), list(state.replicas))
    sim.stop(state.leader)
    md = anyio.run(_call, broker, state.replicas[1], ApiKey.METADATA, 12, want_t)
    part = md.topics[0].partitions[0]
    assert len(md.brokers) == 2
    assert part.leader_id == state.leader == state.replicas[1]
    assert part.leader_epoch == 1 and part.offline_replicas == [state.replicas[0]]
    broker.close()


def test_one_broker_keeps_the_single_node_layout(tmp_path: Path) -> None:
    broker = Broker(BrokerConfig({"log.dirs": str(tmp_path / "data")}))
    assert broker.sim is None
    broker.cluster.create_topic("t", 1, {})
    assert (tmp_path / "data" / "t-0").is_dir()
    assert not any(p.name.startswith("broker.") for p in (tmp_path / "data").iterdir())
    broker.close()


@pytest.mark.parametrize("factor", [4])
def test_replication_factor_above_the_live_brokers_is_refused(tmp_path: Path,
                                                              factor: int) -> None:
    broker = open_cluster(tmp_path)
    assert broker.sim is not None
    assert "only 3 broker(s)" in (broker.sim.check_replication(factor) or "")
    broker.sim.stop(3)
    assert "only 2 broker(s)" in (broker.sim.check_replication(3) or "")
    assert broker.sim.check_replication(2) is None
    broker.close()
    assert os.path.isdir(tmp_path / "data" / "broker.3")


def test_one_broker_answers_acks_all_not_enough_replicas_above_min_insync_one(
        tmp_path: Path) -> None:
    """As Kafka with one replica: the ISR is this broker alone."""
    broker = Broker(BrokerConfig({"log.dirs": str(tmp_path / "data")}))
    broker.cluster.create_topic("t", 1, {"min.insync.replicas": "2"})
    assert produce(broker, 1).error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert produce(broker, 1, acks=1).error_code == ErrorCode.NONE
    broker.cluster.set_configs("t", {})
    assert produce(broker, 1).error_code == ErrorCode.NONE
    broker.close()


def test_the_broker_wide_min_insync_replicas_applies_to_topics_without_one(
        tmp_path: Path) -> None:
    from odradek.config.broker import CLUSTER_DEFAULT

    broker = open_cluster(tmp_path)
    sim = broker.sim
    assert sim is not None
    create(broker, rf=2)
    state = sim.state("t", 0)
    assert state is not None
    broker.cluster.set_broker_configs(CLUSTER_DEFAULT, {"min.insync.replicas": "2"})
    assert produce(broker, state.leader).error_code == ErrorCode.NONE
    sim.stop(state.replicas[1])
    assert produce(broker, state.leader).error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    broker.close()


@pytest.mark.parametrize(("ports", "listener_port", "expected"), [
    ("7101,7205,7309", 7101, [7101, 7205, 7309]),  # simulated.broker.ports, one per broker
    ("", 7400, [7400, 7401, 7402]),  # else consecutive from the first listener's port
])
def test_each_broker_binds_its_own_listener_port(tmp_path: Path, ports: str, listener_port: int,
                                                 expected: list[int]) -> None:
    from odradek.broker.replication.listeners import NodeListeners

    broker = open_cluster(tmp_path, **{"simulated.broker.ports": ports,
                                       "listeners": f"PLAINTEXT://127.0.0.1:{listener_port}"})
    sim = broker.sim
    assert sim is not None
    asked: list[int] = []

    def bind(listeners: Any) -> Any:  # stands in for the server's socket binding
        asked.extend(lst.port for lst in listeners)
        return [(None, lst) for lst in listeners]

    first = [(None, Listener("PLAINTEXT", "127.0.0.1", expected[0]))]
    nodes = NodeListeners(sim, first, bind, lambda node: None)  # type: ignore[arg-type]
    nodes.bind_all()
    assert asked == expected[1:]
    assert [sim.nodes[n].advertised_endpoint("PLAINTEXT") for n in (1, 2, 3)] == [
        ("127.0.0.1", p) for p in expected]
    broker.close()


def test_the_first_simulated_port_must_be_the_first_listeners(tmp_path: Path) -> None:
    """The first broker serves the configured listener: a different first port in
    simulated.broker.ports would be ignored, so it is a configuration error."""
    from odradek.broker.replication.listeners import NodeListeners
    from odradek.config import ConfigError

    broker = open_cluster(tmp_path, **{"simulated.broker.ports": "7501,7502,7503",
                                       "listeners": "PLAINTEXT://127.0.0.1:7500"})
    sim = broker.sim
    assert sim is not None
    first = [(None, Listener("PLAINTEXT", "127.0.0.1", 7500))]
    with pytest.raises(ConfigError, match="must be the first listener's port"):
        NodeListeners(sim, first, lambda lst: [], lambda node: None)  # type: ignore[arg-type]
    broker.close()


def test_a_moved_offsets_partition_is_reloaded_from_the_new_leaders_replica(
        tmp_path: Path) -> None:
    """Coordinator failover: stopping the leader of a group's __consumer_offsets partition
    rebuilds that group from the new leader's replica, with its committed offsets."""
    from odradek.coordinator.group.records import OFFSETS_TOPIC, OffsetAndMetadata

    broker = open_cluster(tmp_path)
    runtime = broker.groups
    create(broker)

    async def go() -> None:
        assert runtime.ensure_topic()
        await runtime.ready()
        await runtime.wait(lambda g: g.commit_offsets(
            "grp", "", None, -1, {("t", 0): OffsetAndMetadata(7)}))
        before = runtime.shard.groups["grp"]
        p = runtime.shard.partition_for("grp")
        state = broker.sim.state(OFFSETS_TOPIC, p)  # type: ignore[union-attr]
        assert state is not None and len(state.isr) == 3
        old_leader = state.leader
        broker.sim.stop(old_leader)  # type: ignore[union-attr]
        assert state.leader != old_leader
        after = runtime.shard.groups["grp"]
        assert after is not before  # rebuilt by the reload
        assert after.offsets[("t", 0)].value.offset == 7

    anyio.run(go)
