"""Hard failures in the simulated cluster without sockets: the session and lag timers
(`failure_rules.py`) and kill / isolate / heal / slow driven by explicit ticks
(`failures.py`), with Kafka's rules: fencing only after broker.session.timeout.ms, ISR
shrink after replica.lag.time.max.ms by a leader that reaches the controller, truncation of
an isolated leader's unreplicated tail after heal."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.broker.broker import Broker
from odradek.broker.replication.failure_rules import FailureRules
from odradek.broker.replication.simulated import SimulatedCluster
from tests.unit.broker.replication.test_simulated import append, create, open_cluster, replica

TP = ("t", 0)


def test_sessions_expire_only_for_unreachable_brokers_after_the_timeout() -> None:
    rules = FailureRules([1, 2, 3], session_timeout_ms=1000, lag_max_ms=500, now_ms=0)
    rules.killed.add(2)
    rules.isolated.add(3)
    rules.heartbeat(600)
    assert rules.expired([1, 2, 3], 1000) == []  # exactly the timeout: not yet
    assert rules.expired([1, 2, 3], 1001) == [2, 3]
    rules.isolated.discard(3)
    rules.heartbeat(1001)
    assert rules.expired([1, 2, 3], 1500) == [2]


def test_a_follower_is_out_of_sync_only_behind_the_leader_for_longer_than_the_max() -> None:
    rules = FailureRules([1, 2], session_timeout_ms=1000, lag_max_ms=500, now_ms=0)
    assert not rules.out_of_sync(TP, 2, 0, 10, 10)
    assert not rules.out_of_sync(TP, 2, 500, 20, 10)  # behind for exactly the max
    assert rules.out_of_sync(TP, 2, 501, 20, 10)
    assert not rules.out_of_sync(TP, 2, 5000, 20, 20)  # an equal log end is in sync
    rules.caught_up(TP, 2, 6000)
    assert not rules.out_of_sync(TP, 2, 6400, 30, 20)


def _sim(broker: Broker) -> SimulatedCluster:
    assert broker.sim is not None
    return broker.sim


def _cluster(tmp_path: Path) -> tuple[Broker, SimulatedCluster, list[int]]:
    broker = open_cluster(tmp_path, **{"broker.session.timeout.ms": "1000",
                                       "replica.lag.time.max.ms": "500"})
    create(broker)
    sim = _sim(broker)
    state = sim.state("t", 0)
    assert state is not None
    return broker, sim, [state.leader, *[r for r in state.replicas if r != state.leader]]


def test_a_killed_leader_keeps_its_leadership_until_its_session_times_out(
        tmp_path: Path) -> None:
    broker, sim, (leader, f1, f2) = _cluster(tmp_path)
    append(broker, b"a", b"b")
    now = broker.now_ms()
    sim.failures.tick(now)
    sim.kill(leader)
    state = sim.state("t", 0)
    assert state is not None
    assert (state.leader, state.leader_epoch) == (leader, 0)
    assert broker.partitions.log("t", 0) is None  # unreachable: no log to append to
    sim.failures.tick(now + 900)
    assert state.leader == leader and leader in sim.controller.live
    sim.failures.tick(now + 1200)  # fenced: a new leader from the ISR, epoch + 1
    assert state.leader in (f1, f2) and state.leader_epoch == 1
    assert leader not in state.isr and leader not in sim.controller.live
    plog = broker.partitions.log("t", 0)
    assert plog is not None and plog.log_end_offset == 2
    append(broker, b"c")
    sim.start(leader)  # recovers, catches up, rejoins
    assert sorted(state.isr) == sorted((leader, f1, f2))
    assert replica(broker, leader).log_end_offset == 3


def test_start_before_the_session_timeout_fences_the_old_incarnation_first(
        tmp_path: Path) -> None:
    broker, sim, (leader, f1, f2) = _cluster(tmp_path)
    append(broker, b"a")
    sim.kill(leader)
    sim.start(leader)
    state = sim.state("t", 0)
    assert state is not None
    assert state.leader != leader and state.leader_epoch == 1
    assert sorted(state.isr) == sorted((leader, f1, f2))


def test_a_killed_follower_leaves_the_isr_after_the_lag_max_when_behind(
        tmp_path: Path) -> None:
    broker, sim, (_leader, f1, _f2) = _cluster(tmp_path)
    now = broker.now_ms()
    sim.kill(f1)
    state = sim.state("t", 0)
    assert state is not None
    sim.failures.tick(now + 700)  # idle: an equal log end stays in sync
    assert f1 in state.isr
    append(broker, b"a")
    assert sim._hw[TP] == 0  # acks=all would wait: the ISR still names f1
    sim.failures.tick(now + 800)
    assert f1 in state.isr
    sim.failures.tick(now + 1400)
    assert f1 not in state.isr and sim._hw[TP] == 1
    assert f1 not in sim.controller.live  # its session timed out meanwhile too


def test_an_isolated_leader_cannot_shrink_its_isr_and_its_tail_is_truncated_after_heal(
        tmp_path: Path) -> None:
    broker, sim, (leader, f1, f2) = _cluster(tmp_path)
    append(broker, b"a")
    now = broker.now_ms()
    sim.isolate(leader)
    append(broker, b"acks=1 to the isolated leader")
    state = sim.state("t", 0)
    assert state is not None
    sim.failures.tick(now + 800)
    assert sorted(state.isr) == sorted((leader, f1, f2))  # no controller: no shrink
    assert sim._hw[TP] == 1 and replica(broker, leader).log_end_offset == 2
    sim.failures.tick(now + 1200)  # fenced: a follower leads
    assert state.leader in (f1, f2) and state.leader_epoch == 1
    assert sim.produce_error("t", 0, leader, 1) is not None  # NOT_LEADER_OR_FOLLOWER
    append(broker, b"new leader")
    sim.heal(leader)
    old = replica(broker, leader)
    assert old.log_end_offset == 2 and sorted(state.isr) == sorted((leader, f1, f2))
    new = replica(broker, state.leader)
    assert old.read(1, 1 << 20) == new.read(1, 1 << 20)  # the acks=1 record is gone


def test_a_slow_follower_lags_out_of_the_isr_and_rejoins_once_healed(tmp_path: Path) -> None:
    broker, sim, (leader, f1, f2) = _cluster(tmp_path)
    now = broker.now_ms()
    sim.slow(f1, 2000)
    state = sim.state("t", 0)
    assert state is not None
    for step in range(0, 1500, 100):
        append(broker, b"x")
        sim.failures.tick(now + step)
    assert f1 not in state.isr and sorted(state.isr) == sorted((leader, f2))
    assert sim._hw[TP] == 15
    sim.slow(f1, 0)
    sim.failures.tick(now + 1600)
    assert f1 in state.isr and replica(broker, f1).log_end_offset == 15


def test_a_short_delay_keeps_the_follower_in_the_isr(tmp_path: Path) -> None:
    broker, sim, (_leader, f1, _f2) = _cluster(tmp_path)
    now = broker.now_ms()
    sim.slow(f1, 100)
    state = sim.state("t", 0)
    assert state is not None
    for step in range(0, 3000, 50):
        append(broker, b"x")
        sim.failures.tick(now + step)
    assert f1 in state.isr
    assert 50 <= replica(broker, f1).log_end_offset < 60


def test_verbs_refuse_unknown_brokers_and_isolating_a_killed_one(tmp_path: Path) -> None:
    _broker, sim, (leader, _, _) = _cluster(tmp_path)
    with pytest.raises(KeyError):
        sim.kill(9)
    sim.kill(leader)
    with pytest.raises(ValueError):
        sim.isolate(leader)
    with pytest.raises(ValueError):
        sim.slow(leader, -1)
    assert [b["killed"] for b in sim.describe()["brokers"]].count(True) == 1
    state = sim.state("t", 0)
    assert state is not None and state.leader == leader  # fenced only by the timers
    assert sim.leader_log("t", 0) is None


def test_the_admin_endpoint_routes_the_verbs(tmp_path: Path) -> None:
    from odradek.broker.admin_http import AdminHttp
    from odradek.broker.fault_rules import FaultRules

    broker, sim, (leader, f1, _) = _cluster(tmp_path)
    app = AdminHttp(FaultRules())
    app.cluster = sim
    status, _, _ = app.route("POST", f"/cluster/brokers/{f1}/slow?delay_ms=250", b"")
    assert status == 200 and sim.failures.rules.delay_ms == {f1: 250}
    assert app.route("POST", f"/cluster/brokers/{f1}/slow", b"")[0] == 400
    assert app.route("POST", f"/cluster/brokers/{f1}/slow?delay_ms=-1", b"")[0] == 400
    assert app.route("POST", f"/cluster/brokers/{f1}/isolate", b"")[0] == 200
    assert sim.failures.rules.isolated == {f1}
    assert app.route("POST", f"/cluster/brokers/{f1}/heal", b"")[0] == 200
    assert not sim.failures.rules.any_fault
    assert app.route("POST", f"/cluster/brokers/{leader}/kill", b"")[0] == 200
    assert sim.failures.rules.killed == {leader}
    assert app.route("POST", f"/cluster/brokers/{leader}/isolate", b"")[0] == 409
    assert app.route("POST", "/cluster/brokers/9/kill", b"")[0] == 404
    assert app.route("POST", f"/cluster/brokers/{leader}/start", b"")[0] == 200
    assert not sim.failures.rules.killed and broker.partitions.log("t", 0) is not None
