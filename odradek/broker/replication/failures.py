"""Hard failures of simulated brokers (docs/cluster.md "Hard failures"): `kill`, `isolate`,
`heal`, `slow`, and the timer task that applies `failure_rules.py` to the cluster.

- kill: no controlled shutdown. The listener and connections drop at once and the broker
  stops heartbeating; the controller still lists it (and it stays leader and in the ISRs)
  until its session times out, then fences it: its leaderships move to another ISR member
  (epoch + 1) and it leaves the ISRs. Its logs stay as written (appends are `pwrite`s: a
  killed process loses nothing the OS page cache holds, and Kafka does not fsync per write).
- isolate: the broker can no longer reach the other brokers or the controller; its listener
  stays up for clients. Replication to and from it stops, it stops heartbeating and is
  fenced after the session timeout; `heal` lets it heartbeat again (unfenced: it rejoins
  as a follower and truncates to the new leader's epoch boundary).
- slow: replication to and from the broker takes `delay_ms` per fetch round trip.
- Followers that are not caught up for longer than `replica.lag.time.max.ms` leave the ISR
  (only a leader that reaches the controller can shrink its ISR, as in KRaft), and rejoin
  when their log end reaches the high watermark.
"""

from __future__ import annotations

from typing import Any

import anyio
import structlog

from odradek.broker.replication.controller import NO_LEADER
from odradek.broker.replication.failure_rules import FailureRules, TopicPartition
from odradek.wire.records import iter_batches

log = structlog.get_logger("odradek.replication")

_COPY_BYTES = 1 << 20
_MAX_TICK_MS = 100
_MIN_TICK_MS = 10


class Failures:
    def __init__(self, sim: Any) -> None:
        # `sim` is the SimulatedCluster that owns this (typed Any: no import cycle)
        self._sim = sim
        cfg = sim.config
        self.rules = FailureRules(
            sim.ids, session_timeout_ms=cfg.get_int("broker.session.timeout.ms"),
            lag_max_ms=cfg.get_int("replica.lag.time.max.ms"), now_ms=sim._now_ms())
        # (tp, follower) -> (leader, due ms, leader's log end when asked, asked at ms)
        self._fetches: dict[tuple[TopicPartition, int], tuple[int, int, int, int]] = {}
        # Some partition may still have a reachable follower out of its ISR.
        self._unsettled = False

    @property
    def tick_ms(self) -> int:
        r = self.rules
        return max(_MIN_TICK_MS, min(_MAX_TICK_MS, r.session_timeout_ms // 4,
                                     r.lag_max_ms // 4))

    def holds(self, leader: int, follower: int) -> bool:
        """True when the leader's push to `follower` waits for the timers (cut off or slow)."""
        r = self.rules
        return r.any_fault and (not r.linked(leader, follower)
                                or r.link_delay_ms(leader, follower) > 0)

    def killed(self, node: int) -> bool:
        return node in self.rules.killed

    # -- the verbs -----------------------------------------------------------------------------

    def _check(self, node: int) -> None:
        if node not in self._sim.nodes:
            raise KeyError(f"no broker {node}")

    def kill(self, node: int) -> None:
        self._check(node)
        if node in self.rules.killed or node not in self._sim.controller.live:
            return  # already down
        self.rules.killed.add(node)
        self.rules.isolated.discard(node)
        self.rules.delay_ms.pop(node, None)
        self._drop_fetches(node)
        self._unsettled = True
        if self._sim.on_stop is not None:
            self._sim.on_stop(node)  # the listener and every connection drop at once
        log.info("broker killed", node=node,
                 fenced_after_ms=self.rules.session_timeout_ms)
        self._sim._signal()

    def isolate(self, node: int) -> None:
        self._check(node)
        if node in self.rules.killed:
            raise ValueError(f"broker {node} is killed; start it first")
        self.rules.isolated.add(node)
        self._drop_fetches(node)
        self._unsettled = True
        log.info("broker isolated", node=node)

    def heal(self, node: int) -> None:
        """The network to `node` is whole again (isolation and slowness both end)."""
        self._check(node)
        if node in self.rules.killed:
            raise ValueError(f"broker {node} is killed; start it")
        self.rules.isolated.discard(node)
        self.rules.delay_ms.pop(node, None)
        self._drop_fetches(node)
        self._unsettled = True
        self.rules.last_heartbeat[node] = self._sim._now_ms()
        if node not in self._sim.controller.live:
            self._unfence(node)
        else:  # never fenced: its replicas catch up (and rejoin) at once
            self._catch_up_all(node)
        log.info("broker healed", node=node)

    def slow(self, node: int, delay_ms: int) -> None:
        self._check(node)
        if delay_ms < 0:
            raise ValueError("delay_ms must be >= 0")
        if delay_ms == 0:
            self.rules.delay_ms.pop(node, None)
        else:
            self.rules.delay_ms[node] = delay_ms
        self._unsettled = True
        log.info("broker slowed", node=node, delay_ms=delay_ms)

    def before_start(self, node: int) -> None:
        """`start` of a killed broker: it registers again, which fences its old incarnation
        first if the session had not timed out yet (as Kafka's controller does for a broker
        back from an unclean shutdown)."""
        if node not in self.rules.killed:
            return
        self.rules.killed.discard(node)
        self.rules.last_heartbeat[node] = self._sim._now_ms()
        self._unsettled = True
        if node in self._sim.controller.live:
            self._fence(node)

    def before_stop(self, node: int) -> None:
        """A controlled shutdown needs the controller: an isolated or slowed broker is healed
        first; a killed one has nothing left to stop."""
        if node in self.rules.killed:
            raise ValueError(f"broker {node} is killed")
        self.rules.isolated.discard(node)
        self.rules.delay_ms.pop(node, None)
        self._drop_fetches(node)

    def describe(self, node: int) -> dict[str, object]:
        r = self.rules
        return {"killed": node in r.killed, "isolated": node in r.isolated,
                "delay_ms": r.delay_ms.get(node, 0)}

    # -- the controller's side -----------------------------------------------------------------

    def _fence(self, node: int) -> None:
        sim = self._sim
        moved = sim.controller.broker_stopped(node)
        for tp in sim.controller.partitions:
            sim._update_hw(tp)
        self._drop_fetches(node)
        log.info("broker fenced: session timed out", node=node, leaders_moved=len(moved))
        sim._notify(moved)

    def _unfence(self, node: int) -> None:
        sim = self._sim
        elected = sim.controller.broker_started(node)
        self._catch_up_all(node)
        log.info("broker unfenced", node=node, leaders_elected=len(elected))
        sim._notify(elected)

    def _catch_up_all(self, node: int) -> None:
        sim = self._sim
        now = sim._now_ms()
        for tp, state in sim.controller.partitions.items():
            if (node in state.replicas and state.leader not in (node, NO_LEADER)
                    and self.rules.linked(state.leader, node)):
                sim._catch_up(tp, node)
                if node in state.isr:
                    self.rules.caught_up(tp, node, now)
            sim._update_hw(tp)

    def _drop_fetches(self, node: int) -> None:
        for key in [k for k, v in self._fetches.items() if node in (k[1], v[0])]:
            del self._fetches[key]

    # -- the timers ----------------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            await anyio.sleep(self.tick_ms / 1000)
            try:
                self.tick(self._sim._now_ms())
            except Exception:  # a bug here must not stop the broker
                log.exception("replication timers failed")

    def tick(self, now: int) -> None:
        sim = self._sim
        rules = self.rules
        rules.heartbeat(now)
        down = [n for n in sim.controller.live if not rules.reachable(n)]
        for node in rules.expired(down, now):
            self._fence(node)
        if not (rules.any_fault or self._unsettled):
            return
        settled = True
        for tp, state in sim.controller.partitions.items():
            leader = state.leader
            if leader == NO_LEADER:
                continue
            leader_log = sim.stores[leader].get(*tp)
            if leader_log is None or leader_log.closed:
                continue
            changed = False
            for r in state.replicas:
                if r == leader or r not in sim.controller.live:
                    continue
                follower = sim.stores[r].get(*tp)
                if follower is None:
                    continue
                if rules.linked(leader, r):
                    delay = rules.link_delay_ms(leader, r)
                    if delay > 0:
                        changed |= self._delayed_fetch(tp, leader, r, delay, now)
                    elif r not in state.isr:
                        sim._catch_up(tp, r)  # truncates, copies, rejoins
                        changed = True
                if (r in state.isr and rules.reachable(leader) and rules.out_of_sync(
                        tp, r, now, leader_log.log_end_offset, follower.log_end_offset)
                        and sim.controller.leave_isr(tp, r)):
                    log.info("replica left the ISR: not caught up within "
                             "replica.lag.time.max.ms", topic=tp[0], partition=tp[1],
                             node=r, isr=state.isr)
                    changed = True
                if r not in state.isr:
                    settled = False
            if changed:
                sim._update_hw(tp)
        if settled and not rules.any_fault:
            self._unsettled = False

    def _delayed_fetch(self, tp: TopicPartition, leader: int, node: int, delay: int,
                       now: int) -> bool:
        """A follower fetch that takes `delay` ms: it gets what the leader had when it
        asked; then it asks again."""
        sim = self._sim
        leader_log = sim.stores[leader].get(*tp)
        follower = sim.stores[node].get(*tp)
        if leader_log is None or follower is None:
            return False
        key = (tp, node)
        pending = self._fetches.get(key)
        if pending is None or pending[0] != leader:
            self._fetches[key] = (leader, now + delay, leader_log.log_end_offset, now)
            return False
        _, due, target, asked = pending
        if now < due:
            return False
        del self._fetches[key]
        while follower.log_end_offset < min(target, leader_log.log_end_offset):
            data = _until(leader_log.read(follower.log_end_offset, _COPY_BYTES), target)
            if not data:
                break
            follower.append_as_follower(data, now_ms=now)
        if follower.log_end_offset >= target:
            self.rules.caught_up(tp, node, asked)
        state = sim.controller.get(tp)
        if (state is not None and node not in state.isr and self.rules.reachable(leader)
                and follower.log_end_offset >= sim._hw.get(tp, 0)
                and sim.controller.join_isr(tp, node)):
            self.rules.caught_up(tp, node, now)
            log.info("replica joined the ISR", topic=tp[0], partition=tp[1], node=node,
                     isr=state.isr)
        return True


def _until(data: bytes | memoryview, end: int) -> memoryview:
    """The whole batches of `data` below offset `end` (what a fetch asked then got)."""
    view = memoryview(data)
    size = 0
    for b in iter_batches(view):
        if b.base_offset >= end:
            break
        size += len(b.buffer())
    return view[:size]
