"""Automatic preferred-leader elections (`auto.leader.rebalance.enable`, Kafka's default
true): every `leader.imbalance.check.interval.seconds` (300 s by default) each partition
led by another replica than its first (preferred) one moves its leadership back to that
replica when it is live, reachable and in the ISR, as Kafka's KRaft controller balances
partition leaders after a broker returns. Without this, a restarted broker would lead
nothing until an explicit ElectLeaders. `leader.imbalance.per.broker.percentage` is not
read: Kafka's KRaft controller does not use it either.
"""

from __future__ import annotations

from typing import Any

import anyio
import structlog

from odradek.broker.replication.elections import PREFERRED

log = structlog.get_logger("odradek.replication")


class LeaderBalancer:
    def __init__(self, sim: Any) -> None:  # the SimulatedCluster (which imports this module)
        self._sim = sim
        self.enabled = sim.config.get_bool("auto.leader.rebalance.enable")
        self.interval_s = sim.config.get_int("leader.imbalance.check.interval.seconds")

    async def run(self) -> None:
        if not self.enabled:
            return
        while True:
            await anyio.sleep(self.interval_s)
            try:
                self.balance()
            except Exception:  # a bug here must not stop the broker
                log.exception("leader balancing failed")

    def balance(self) -> int:
        """Elect the preferred leader of every partition that can have it; how many moved."""
        sim = self._sim
        moved = 0
        for (topic, partition), state in list(sim.controller.partitions.items()):
            preferred = state.replicas[0]
            if state.leader == preferred or preferred not in state.isr:
                continue
            if sim.failures.killed(preferred) or not sim.failures.rules.reachable(preferred):
                continue
            if sim.elect_leader(topic, partition, PREFERRED).changed:
                moved += 1
        if moved:
            log.info("preferred leaders elected", partitions=moved)
        return moved
