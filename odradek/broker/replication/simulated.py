"""N brokers in one process (docs/cluster.md): their replica logs, and batches moving between
them.

Each broker has its own `LogManager` over `<log dir>/broker.<id>/`; a replica is a separate
`PartitionLog` there. The leader pushes: after every append to a leader's log (the
partitions port's `notify_appended`, which every append calls), `replicate` copies the new
batches as they are (offsets and leader epochs kept) into each live in-sync follower's log,
then moves the high watermark to the smallest ISR log end. Stopping a broker is a
controlled shutdown: leaders move (epoch + 1), it leaves the ISRs. Starting it truncates
each of its replicas to the leader's epoch boundary and copies what it lacks, then it
rejoins the ISR. Nothing here touches sockets: the listeners are `listeners.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import structlog

from odradek.broker.cluster import INTERNAL_TOPICS, Cluster
from odradek.broker.partitions import LocalPartitions, TopicPartition
from odradek.broker.replication.controller import (
    NO_LEADER,
    Controller,
    PartitionState,
    PlacementError,
    high_watermark,
    place,
)
from odradek.broker.replication.elections import Election, elect
from odradek.broker.replication.failures import Failures
from odradek.broker.replication.leader_balance import LeaderBalancer
from odradek.broker.storage.errors import UnknownPartitionError
from odradek.broker.storage.log import AppendInfo, PartitionLog
from odradek.broker.storage.manager import LogManager
from odradek.broker.storage.producer_state import Origin
from odradek.config import BrokerConfig, Listener
from odradek.wire import ErrorCode

log = structlog.get_logger("odradek.replication")

BROKER_DIR_PREFIX = "broker."  # no '-': the log loader never takes it for a partition dir
_COPY_BYTES = 1 << 20
KAFKA_INTERNAL_RF = 3  # Kafka's default for the internal topics, capped at N here
_INTERNAL_RF = {
    "__consumer_offsets": "offsets.topic.replication.factor",
    "__transaction_state": "transaction.state.log.replication.factor",
    "__share_group_state": "share.coordinator.state.topic.replication.factor",
}


def node_ids(config: BrokerConfig) -> list[int]:
    first = config.get_int("node.id")
    return list(range(first, first + config.get_int("simulated.brokers")))


def broker_log_dirs(config: BrokerConfig, node: int) -> list[Path]:
    return [d / f"{BROKER_DIR_PREFIX}{node}" for d in config.log_dirs]


class SimNode:
    """One broker's identity as clients see it (the `Node` of its connections' requests)."""

    def __init__(self, node_id: int, sim: SimulatedCluster) -> None:
        self.node_id = node_id
        self._sim = sim
        self.advertised: list[Listener] = []

    def advertised_endpoint(self, listener: str) -> tuple[str, int]:
        for lst in self.advertised:
            if lst.name == listener:
                return lst.host, lst.port
        first = self.advertised[0]
        return first.host, first.port


class SimulatedCluster:
    def __init__(self, config: BrokerConfig, cluster: Cluster, defaults: Any,
                 config_for: Callable[[str], Any], now_ms: Callable[[], int]) -> None:
        self.config = config
        self.cluster = cluster
        self.ids = node_ids(config)
        self.controller = Controller(
            self.ids, unclean=config.get_bool("unclean.leader.election.enable"))
        self.stores: dict[int, LogManager] = {
            n: LogManager(broker_log_dirs(config, n), defaults, config_for=config_for)
            for n in self.ids}
        self.nodes = {n: SimNode(n, self) for n in self.ids}
        self._now_ms = now_ms
        self._hw: dict[TopicPartition, int] = {}
        self._pending_rf: dict[str, int] = {}
        self._changed = anyio.Event()
        # Set by the listeners (`listeners.py`): close or open a broker's listener.
        self.on_stop: Callable[[int], None] | None = None
        self.on_start: Callable[[int], None] | None = None
        self.partitions: ClusterPartitions | None = None
        # kill / isolate / heal / slow and the session and lag timers (failures.py)
        self.failures = Failures(self)
        # auto.leader.rebalance.enable: leaders moved back to preferred replicas
        self.balancer = LeaderBalancer(self)
        # Told of partitions whose leader changed (the coordinators reload theirs).
        self.on_leaders_changed: list[Callable[[Sequence[TopicPartition]], None]] = []

    # -- what handlers ask -------------------------------------------------------------------

    def node(self, node_id: int | None) -> SimNode:
        return self.nodes[self.ids[0] if node_id is None else node_id]

    def live_brokers(self) -> list[int]:
        return sorted(self.controller.live)

    def state(self, topic: str, partition: int) -> PartitionState | None:
        return self.controller.get((topic, partition))

    def leader_epoch(self, topic: str, partition: int) -> int:
        state = self.controller.get((topic, partition))
        return 0 if state is None else state.leader_epoch

    def not_leader(self, topic: str, partition: int, node: int) -> ErrorCode | None:
        """NOT_LEADER_OR_FOLLOWER unless `node` leads the partition (None: it does, or the
        partition is unknown, which the handler answers itself)."""
        state = self.controller.get((topic, partition))
        if state is None or state.leader == node:
            return None
        return ErrorCode.NOT_LEADER_OR_FOLLOWER

    def produce_error(self, topic: str, partition: int, node: int, acks: int
                      ) -> ErrorCode | None:
        """As Kafka's Partition.appendRecordsToLeader: not the leader, or acks=all with an
        ISR smaller than min.insync.replicas."""
        if (code := self.not_leader(topic, partition, node)) is not None:
            return code
        if acks == -1:
            state = self.controller.get((topic, partition))
            if state is not None and len(state.isr) < self._min_isr(topic, partition):
                return ErrorCode.NOT_ENOUGH_REPLICAS
        return None

    def _min_isr(self, topic: str, partition: int) -> int:
        plog = self.leader_log(topic, partition)
        return 1 if plog is None else int(getattr(plog.config, "min_insync_replicas", 1))

    async def wait_acks_all(self, targets: Mapping[TopicPartition, int], timeout_ms: int
                            ) -> dict[TopicPartition, ErrorCode]:
        """acks=all: wait until each partition's high watermark reaches its offset (the
        leader's log end right after the append), or `timeout_ms` (REQUEST_TIMED_OUT); an
        ISR that shrank below min.insync.replicas meanwhile is
        NOT_ENOUGH_REPLICAS_AFTER_APPEND (Kafka's checkEnoughReplicasReachOffset)."""
        out: dict[TopicPartition, ErrorCode] = {}
        left = dict(targets)
        # A leader change while waiting fails the wait, as Kafka's DelayedProduce: the new
        # leader may not hold these records, however far its high watermark gets.
        epochs = {tp: self.leader_epoch(*tp) for tp in targets}
        with anyio.move_on_after(max(timeout_ms, 0) / 1000):
            while True:
                for tp, offset in list(left.items()):
                    state = self.controller.get(tp)
                    if (state is None or state.leader == NO_LEADER
                            or state.leader_epoch != epochs[tp]):
                        out[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
                    elif self._hw.get(tp, 0) >= offset:
                        out[tp] = (ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
                                   if len(state.isr) < self._min_isr(*tp) else ErrorCode.NONE)
                    else:
                        continue
                    del left[tp]
                if not left:
                    break
                await self._changed.wait()
        for tp in left:
            out[tp] = ErrorCode.REQUEST_TIMED_OUT
        return out

    def _signal(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # -- replica logs ------------------------------------------------------------------------

    def leader_log(self, topic: str, partition: int) -> PartitionLog | None:
        state = self.controller.get((topic, partition))
        if state is None or state.leader == NO_LEADER or self.failures.killed(state.leader):
            return None
        return self.stores[state.leader].get(topic, partition)

    def expect_replication(self, topic: str, factor: int) -> None:
        """The replication factor CreateTopics checked for `topic`, about to be created."""
        self._pending_rf[topic] = factor

    def expected_replication(self, topic: str) -> int | None:
        return self._pending_rf.get(topic)

    def check_replication(self, factor: int) -> str | None:
        """Why `factor` cannot be met (Kafka's replica placer message), or None."""
        try:
            place(self.live_brokers(), "", 0, factor)
        except PlacementError as exc:
            return str(exc)
        return None

    def _replication_factor(self, topic: str) -> int:
        if topic in self._pending_rf:
            return self._pending_rf[topic]
        existing = self.controller.get((topic, 0))
        if existing is not None:
            return len(existing.replicas)
        setting = _INTERNAL_RF.get(topic) if topic in INTERNAL_TOPICS else None
        if setting is not None and not self.config.is_set(setting):
            wanted = KAFKA_INTERNAL_RF  # Odradek's default of 1 is for one broker
        else:
            wanted = self.config.get_int(setting or "default.replication.factor")
        return max(1, min(wanted, len(self.ids)))

    def create_log(self, topic: str, partition: int, settings: Any) -> None:
        replicas = place(self.ids, topic, partition, self._replication_factor(topic))
        made = []
        try:
            for r in replicas:
                self.stores[r].create(topic, partition, settings)
                made.append(r)
        except BaseException:
            for r in made:
                self.stores[r].delete_partition(topic, partition)
            raise
        self.controller.add((topic, partition), replicas)
        self._hw[(topic, partition)] = 0
        if partition == 0:
            self._pending_rf.pop(topic, None)

    def has_log(self, topic: str, partition: int) -> bool:
        return any(s.get(topic, partition) is not None for s in self.stores.values())

    def forget(self, topic: str, partitions: Iterable[int] | None = None) -> None:
        """The topic (or those partitions) was deleted: its states go."""
        for tp in [tp for tp in self.controller.partitions if tp[0] == topic
                   and (partitions is None or tp[1] in partitions)]:
            self.controller.remove(tp)
            self._hw.pop(tp, None)

    def load(self) -> None:
        """At start-up: each partition found in the brokers' dirs elects the replica with the
        latest leader epoch and the longest log (leaders and ISRs are not stored), bumps the
        epoch, and the others truncate to their epoch boundary and catch up."""
        for topic in list(self.cluster):
            for p in range(topic.partitions):
                holders = [n for n in self.ids if self.stores[n].get(topic.name, p) is not None]
                if not holders:
                    continue
                try:
                    replicas = place(self.ids, topic.name, p, len(holders))
                except PlacementError:
                    replicas = tuple(holders)
                if set(replicas) != set(holders):  # placed some other way: keep what is there
                    replicas = tuple(holders)
                logs = {n: self.stores[n].get(topic.name, p) for n in replicas}
                leader = max(replicas, key=lambda n: _rank(logs[n], replicas.index(n)))
                latest = max((lg.epochs.latest_epoch or 0) for lg in logs.values() if lg)
                tp = (topic.name, p)
                self.controller.add(tp, replicas, leader_epoch=latest + 1, leader=leader,
                                    isr=[leader])
                leader_log = logs[leader]
                assert leader_log is not None
                self._hw[tp] = leader_log.high_watermark
                for n in replicas:
                    if n != leader:
                        self._catch_up(tp, n)
                self._update_hw(tp)

    # -- replication -------------------------------------------------------------------------

    def replicate(self, topic: str, partition: int) -> None:
        """Copy what the leader appended to its live in-sync followers, move the HW."""
        tp = (topic, partition)
        state = self.controller.get(tp)
        if state is None or state.leader == NO_LEADER:
            return
        leader_log = self.stores[state.leader].get(topic, partition)
        if leader_log is None or leader_log.closed:
            return
        for r in state.isr:
            if (r == state.leader or r not in self.controller.live
                    or self.failures.holds(state.leader, r)):  # cut off or slow: timers
                continue
            follower = self.stores[r].get(topic, partition)
            if follower is not None:
                self._copy(leader_log, follower)
        self._update_hw(tp)

    def _copy(self, leader: PartitionLog, follower: PartitionLog) -> None:
        now = self._now_ms()
        while follower.log_end_offset < leader.log_end_offset:
            data = leader.read(follower.log_end_offset, _COPY_BYTES)
            if not data:
                break
            follower.append_as_follower(data, now_ms=now)

    def _update_hw(self, tp: TopicPartition) -> None:
        state = self.controller.get(tp)
        if state is None or state.leader == NO_LEADER:
            return
        logs = {r: lg for r in state.replicas
                if (lg := self.stores[r].get(*tp)) is not None}
        ends = {r: lg.log_end_offset for r, lg in logs.items()}
        hw = high_watermark(state, ends, self._hw.get(tp, 0))
        hw = min(hw, ends.get(state.leader, hw))
        self._hw[tp] = hw
        for lg in logs.values():
            lg.high_watermark = hw
        self._signal()

    def _catch_up(self, tp: TopicPartition, node: int) -> None:
        """A follower of `tp` on `node` (live again): truncate to the leader's end offset of
        its latest epoch (OffsetForLeaderEpoch, as a follower fetcher asks), copy what it
        lacks, rejoin the ISR."""
        state = self.controller.get(tp)
        if state is None or state.leader == NO_LEADER or state.leader == node:
            return
        leader = self.stores[state.leader].get(*tp)
        follower = self.stores[node].get(*tp)
        if leader is None or follower is None:
            return
        now = self._now_ms()
        latest = follower.epochs.latest_epoch
        if latest is not None:
            # Kafka's follower truncation (KIP-101/279): the leader's end of our latest
            # epoch; if it knows only an older epoch, the smaller of both ends of that one.
            epoch, end = leader.end_offset_for_epoch(latest, leader_epoch=state.leader_epoch)
            if epoch < 0:
                cut = follower.high_watermark
            else:
                cut = min(end, follower.log_end_offset)
                if epoch != latest:
                    _, mine = follower.end_offset_for_epoch(epoch)
                    cut = min(cut, mine)
            follower.truncate_to(cut, now_ms=now)
        if follower.log_end_offset > leader.log_end_offset:
            follower.truncate_to(leader.log_end_offset, now_ms=now)
        if follower.log_end_offset < leader.log_start_offset:
            follower.truncate_to(follower.log_start_offset, now_ms=now)
            log.warning("follower behind the leader's log start; not caught up",
                        topic=tp[0], partition=tp[1], node=node)
            return
        self._copy(leader, follower)
        if self.controller.join_isr(tp, node):
            log.info("replica joined the ISR", topic=tp[0], partition=tp[1], node=node,
                     isr=state.isr)

    # -- failures ----------------------------------------------------------------------------

    def stop(self, node: int) -> None:
        """Controlled shutdown of `node`: its listener closes, leaders move, ISRs shrink."""
        if node not in self.nodes:
            raise KeyError(f"no broker {node}")
        self.failures.before_stop(node)
        if node not in self.controller.live:
            return
        if len(self.controller.live) == 1:
            raise ValueError("the last live broker cannot be stopped")
        if self.on_stop is not None:
            self.on_stop(node)
        moved = self.controller.broker_stopped(node)
        for tp in moved:
            self._update_hw(tp)
        for tp in self.controller.partitions:
            self._update_hw(tp)
        log.info("broker stopped", node=node, leaders_moved=len(moved))
        self._notify(moved)

    def start(self, node: int) -> None:
        """`node` comes back: leaderless partitions it can lead elect it, its replicas catch
        up and rejoin the ISRs, its listener opens."""
        if node not in self.nodes:
            raise KeyError(f"no broker {node}")
        self.failures.before_start(node)  # a killed broker registers again
        if node in self.controller.live:
            return
        elected = self.controller.broker_started(node)
        for tp, state in self.controller.partitions.items():
            if node in state.replicas and state.leader != node:
                self._catch_up(tp, node)
            self._update_hw(tp)
        if self.on_start is not None:
            self.on_start(node)
        log.info("broker started", node=node, leaders_elected=len(elected))
        self._notify(elected)

    def kill(self, node: int) -> None:
        """No controlled shutdown: fenced only after broker.session.timeout.ms (failures.py)."""
        self.failures.kill(node)

    def isolate(self, node: int) -> None:
        """Cut `node` off from the other brokers and the controller; clients still reach it."""
        self.failures.isolate(node)

    def heal(self, node: int) -> None:
        """End `node`'s isolation and slowness."""
        self.failures.heal(node)

    def slow(self, node: int, delay_ms: int) -> None:
        """Delay replication to and from `node` by `delay_ms` per fetch (0: no delay)."""
        self.failures.slow(node, delay_ms)
    def elect_leader(self, topic: str, partition: int, election_type: int) -> Election:
        """ElectLeaders for one partition (`elections.py` decides). After an unclean
        election the new leader's log is the truth: the high watermark becomes its log end
        and every other live replica truncates to it and catches up."""
        tp = (topic, partition)
        result = elect(self.controller, tp, election_type)
        if not result.changed:
            return result
        state = self.controller.partitions[tp]
        if result.unclean:
            leader_log = self.stores[state.leader].get(topic, partition)
            if leader_log is not None:
                self._hw[tp] = leader_log.log_end_offset
            for r in state.replicas:
                if r != state.leader and r in self.controller.live:
                    self._catch_up(tp, r)
        self._update_hw(tp)
        log.info("leader elected", topic=topic, partition=partition, leader=state.leader,
                 leader_epoch=state.leader_epoch, unclean=result.unclean)
        self._notify([tp])
        return result

    def _notify(self, tps: Sequence[TopicPartition]) -> None:
        for listener in self.on_leaders_changed:
            listener(tps)
        if self.partitions is not None:
            for tp in tps:
                self.partitions.notify_appended(*tp)

    def describe(self) -> dict[str, Any]:
        """The brokers and partition states (the admin endpoint's GET /cluster)."""
        return {
            "controller_id": self.controller.controller_id,
            "brokers": [{"node_id": n, "live": n in self.controller.live,
                         **self.failures.describe(n),
                         "endpoints": [f"{lst.name}://{lst.host}:{lst.port}"
                                       for lst in self.nodes[n].advertised]}
                        for n in self.ids],
            "partitions": [{"topic": t, "partition": p, "leader": s.leader,
                            "leader_epoch": s.leader_epoch, "replicas": list(s.replicas),
                            "isr": list(s.isr), "high_watermark": self._hw.get((t, p), 0)}
                           for (t, p), s in sorted(self.controller.partitions.items())],
        }


def _rank(plog: PartitionLog | None, position: int) -> tuple[int, int, int]:
    """A clean election's order: latest leader epoch, longest log, then replica order."""
    if plog is None:
        return (-2, -1, -position)
    latest = plog.epochs.latest_epoch
    return (-1 if latest is None else latest, plog.log_end_offset, -position)


class ClusterPartitions(LocalPartitions):
    """The partitions port over the simulated cluster: a partition's log is its leader's
    replica; every append notification replicates it first."""

    def __init__(self, cluster: Cluster, sim: SimulatedCluster) -> None:
        super().__init__(cluster, sim.stores[sim.ids[0]])
        self._sim = sim
        sim.partitions = self
        for store in sim.stores.values():
            store.on_partition_changed = self.notify_appended

    def log(self, topic: str, partition: int) -> PartitionLog | None:
        plog = self._sim.leader_log(topic, partition)
        if plog is None or not self._cluster.has_partition(topic, partition):
            return None
        return plog

    def append_internal(self, topic: str, partition: int, batch: memoryview,
                        now_ms: int, transaction_version: int = 0) -> AppendInfo:
        plog = self.log(topic, partition)
        if plog is None:
            raise UnknownPartitionError(f"no leader for {topic}-{partition}")
        return plog.append(batch, leader_epoch=self._sim.leader_epoch(topic, partition),
                           now_ms=now_ms, origin=Origin.COORDINATOR,
                           transaction_version=transaction_version)

    def notify_appended(self, topic: str, partition: int) -> None:
        self._sim.replicate(topic, partition)
        super().notify_appended(topic, partition)

    def logs(self) -> Mapping[TopicPartition, PartitionLog]:
        out = {}
        for tp in self._sim.controller.partitions:
            plog = self._sim.leader_log(*tp)
            if plog is not None:
                out[tp] = plog
        return out

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        state = self._sim.state(topic, partition)
        if state is None or state.leader == NO_LEADER:
            return None
        return self._sim.stores[state.leader].log_dir_of(topic, partition)

    def is_log_dir_online(self, log_dir: Path) -> bool:
        return all(s.is_online(log_dir) for s in self._sim.stores.values()
                   if log_dir in s.log_dirs)

    def offline_partitions(self, topic: str, partitions: int) -> frozenset[int]:
        return frozenset()
