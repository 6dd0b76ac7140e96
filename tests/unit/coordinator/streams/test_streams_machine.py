"""A stateful model of a streams group: members join, heartbeat (reporting the active tasks
they were given), leave, time out, topics grow. After every step the records replay to the
live groups; once every member has heartbeated twice with no change in between, every task
is active on exactly one member and no member holds a task it was not given."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from odradek.coordinator.streams import records as rec
from odradek.coordinator.streams.assignor import TaskMap
from odradek.coordinator.streams.coordinator import (
    HeartbeatRequest,
    StreamsConfig,
    StreamsCoordinator,
)
from odradek.coordinator.streams.model import MemberState
from odradek.wire import ErrorCode
from tests.unit.coordinator.streams.test_streams_coordinator import WORDCOUNT, Topics, join

MEMBERS = ("m1", "m2", "m3")


class StreamsGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.topics = Topics(input=3, app_repartition=3, app_changelog=3)
        self.co = StreamsCoordinator(StreamsConfig(session_timeout_ms=1_000,
                                                   num_standby_replicas=1), self.topics)
        self.log: list[rec.KeyValue] = []
        self.now = 0
        self.epochs: dict[str, int] = {}
        self.owned: dict[str, TaskMap] = {}  # the active tasks each member was given

    def _send(self, req: HeartbeatRequest) -> None:
        records, r = self.co.heartbeat(req, self.now)
        self.log += records
        m = req.member_id
        if req.member_epoch < 0:
            self.epochs.pop(m, None)
            self.owned.pop(m, None)
            return
        if r.error != ErrorCode.NONE:
            assert r.error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH)
            self.epochs.pop(m, None)
            self.owned.pop(m, None)
            return
        self.epochs[m] = r.member_epoch
        if r.tasks is not None:
            self.owned[m] = dict(r.tasks.active)

    @rule(m=st.sampled_from(MEMBERS))
    def join_or_beat(self, m: str) -> None:
        if m not in self.epochs:
            self._send(join(m, process=f"p-{m}"))
        else:
            self._send(HeartbeatRequest(group_id="g", member_id=m, member_epoch=self.epochs[m],
                                        active_tasks=self.owned.get(m, {}), standby_tasks={},
                                        warmup_tasks={}))

    @rule(m=st.sampled_from(MEMBERS))
    def leave(self, m: str) -> None:
        if m in self.epochs:
            self._send(HeartbeatRequest(group_id="g", member_id=m, member_epoch=-1))

    @rule(ms=st.integers(0, 1_500))
    def tick(self, ms: int) -> None:
        self.now += ms
        self.log += self.co.expire(self.now)
        g = self.co.groups.get("g")
        for m in list(self.epochs):
            if g is None or m not in g.metadata:
                self.epochs.pop(m)
                self.owned.pop(m, None)

    @rule()
    def more_partitions(self) -> None:
        if self.topics.counts["input"] < 5:
            self.topics.counts["input"] += 1  # the internal topics now disagree: not ready

    @invariant()
    def replay_equals_live(self) -> None:
        assert rec.replay(self.log) == self.co.groups

    @invariant()
    def no_task_active_twice(self) -> None:
        g = self.co.groups.get("g")
        if g is None:
            return
        seen: set[tuple[str, int]] = set()
        for a in g.current.values():
            for s, ps in (*a.assigned.active.items(), *a.pending_revocation.active.items()):
                for p in ps:
                    assert (s, p) not in seen
                    seen.add((s, p))

    def teardown(self) -> None:
        # Converge: everyone heartbeats twice (three rounds cover revoke, then release).
        self.tick(0)
        for _ in range(3):
            for m in sorted(self.epochs):
                self.join_or_beat(m)
        g = self.co.groups.get("g")
        if g is None or not g.metadata:
            return
        c = self.co.configured(g)
        assert all(a.state == MemberState.STABLE for a in g.current.values())
        if c is None or c.partitions is None:
            assert all(not a.assigned.active for a in g.current.values())
            return
        active = sorted((s, p) for a in g.current.values()
                        for s, ps in a.assigned.active.items() for p in ps)
        assert active == sorted((s, p) for s, n in c.partitions.items() for p in range(n))
        assert rec.replay(self.log) == self.co.groups
        assert g.topology == WORDCOUNT


StreamsGroupMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30,
                                                 deadline=None)
TestStreamsGroup = StreamsGroupMachine.TestCase
