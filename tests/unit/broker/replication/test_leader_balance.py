"""auto.leader.rebalance.enable: a returned preferred replica gets its leadership back at
the next balancing pass, unless it is down or out of the ISR; off, nothing moves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from test_simulated import create, open_cluster

from odradek.broker.broker import Broker


def one_partition(broker: Broker) -> tuple[Any, Any, int]:
    """Topic "t" (RF 3): the simulated cluster, its partition's state, its preferred replica."""
    sim = broker.sim
    assert sim is not None
    create(broker)
    state = sim.state("t", 0)
    assert state is not None
    return sim, state, state.replicas[0]


def test_a_restarted_preferred_replica_leads_again_after_a_balancing_pass(tmp_path: Path) -> None:
    broker = open_cluster(tmp_path)
    sim, state, preferred = one_partition(broker)
    assert state.leader == preferred
    sim.stop(preferred)
    assert state.leader != preferred
    assert sim.balancer.balance() == 0  # the preferred replica is down: nothing to do
    sim.start(preferred)
    assert preferred in state.isr and state.leader != preferred
    epoch = state.leader_epoch
    assert sim.balancer.balance() == 1
    assert state.leader == preferred and state.leader_epoch == epoch + 1
    assert sim.balancer.balance() == 0
    sim.stop(preferred)  # a preferred replica outside the ISR is not elected
    sim.start(preferred)
    if preferred in state.isr:  # as if it had not caught up yet
        state.isr.remove(preferred)
    assert sim.balancer.balance() == 0
    broker.close()


def test_off_the_balancer_never_runs(tmp_path: Path) -> None:
    broker = open_cluster(tmp_path, **{"auto.leader.rebalance.enable": "false",
                                       "leader.imbalance.check.interval.seconds": "1"})
    sim = broker.sim
    assert sim is not None
    assert not sim.balancer.enabled

    async def go() -> None:
        with anyio.fail_after(1):
            await sim.balancer.run()  # returns at once when disabled

    anyio.run(go)
    broker.close()


def test_the_balancer_runs_every_check_interval(tmp_path: Path) -> None:
    broker = open_cluster(tmp_path, **{"leader.imbalance.check.interval.seconds": "1"})
    sim, state, preferred = one_partition(broker)
    sim.stop(preferred)
    sim.start(preferred)
    assert state.leader != preferred

    async def go() -> float:
        start = anyio.current_time()
        async with anyio.create_task_group() as tg:
            tg.start_soon(sim.balancer.run)
            with anyio.fail_after(3):
                while state.leader != preferred:
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
        return anyio.current_time() - start

    took = anyio.run(go)
    assert 0.9 <= took < 2.5
    broker.close()
