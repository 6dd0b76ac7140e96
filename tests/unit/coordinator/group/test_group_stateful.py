"""A stateful hypothesis test: clients join, sync, heartbeat, commit, leave, go silent and
the coordinator restarts, in any order; time only moves when the test says so.

Invariants: one leader per generation; every member gets exactly the assignment its leader
sent; generations never go backwards (between restarts); committed offsets always read back
(also after a replay of the log); the group's bookkeeping stays consistent; and once time
runs long enough every waiting JoinGroup/SyncGroup is answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from group_testutil import Harness, subscription
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from odradek.coordinator.common import Pending
from odradek.coordinator.group.coordinator import GroupConfig
from odradek.coordinator.group.model import JoinResult, LeavingMember, SyncResult
from odradek.coordinator.group.records import OffsetAndMetadata
from odradek.coordinator.group.state import GroupState
from odradek.wire import ErrorCode

GROUP = "g"
CLIENTS = 4
STATIC = {3: "static-3"}  # client 3 uses static membership
SESSION = 10_000
REBALANCE = 15_000
PARTITIONS = 3


@dataclass
class Client:
    index: int
    member_id: str = ""
    generation: int = -1
    instance: str | None = None
    synced: int = -1  # the generation whose assignment this client has
    rejoin: bool = False
    waiting: Pending[Any] | None = None

    @property
    def busy(self) -> bool:
        return self.waiting is not None and not self.waiting.done


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = Harness(GroupConfig(initial_rebalance_delay_ms=3000,
                                     offsets_retention_ms=10**12))
        self.clients = [Client(i, instance=STATIC.get(i)) for i in range(CLIENTS)]
        # Keyed by (coordinator incarnation, generation): as in Kafka, a generation that was
        # formed but never stored (no SyncGroup yet) is formed again after a restart.
        self.incarnation = 0
        self.leaders: dict[tuple[int, int], str] = {}
        self.sent: dict[tuple[int, int], dict[str, bytes]] = {}
        self.committed: dict[tuple[str, int], int] = {}
        self.last_generation = 0
        self.outstanding: list[Pending[Any]] = []

    # -- helpers --------------------------------------------------------------------------------

    @property
    def coord(self) -> Any:
        return self.h.coord

    def _on_join(self, c: Client, r: JoinResult) -> None:
        if r.error == ErrorCode.MEMBER_ID_REQUIRED:
            c.member_id = r.member_id
        elif r.error == ErrorCode.NONE:
            c.member_id, c.generation, c.rejoin = r.member_id, r.generation_id, False
            if r.leader_id and not r.skip_assignment and r.members:
                # only a real (non-stale) leader answer carries the member list
                key = (self.incarnation, r.generation_id)
                known = self.leaders.setdefault(key, r.leader_id)
                assert known == r.leader_id, (r.generation_id, known, r.leader_id)
        elif r.error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            c.member_id, c.generation = "", -1
        else:
            c.rejoin = True

    def _on_sync(self, c: Client, key: tuple[int, int], member_id: str, r: SyncResult) -> None:
        if r.error != ErrorCode.NONE:
            c.rejoin = True
            if r.error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
                c.member_id, c.generation = "", -1
        else:
            c.synced = key[1]
            sent = self.sent.get(key)
            if sent is not None and member_id in sent:
                assert r.assignment == sent[member_id], (key, member_id)

    def _track(self, p: Pending[Any]) -> None:
        if not p.done:
            self.outstanding.append(p)

    # -- rules ----------------------------------------------------------------------------------

    @rule(i=st.integers(0, CLIENTS - 1), change=st.booleans())
    def join(self, i: int, change: bool) -> None:
        c = self.clients[i]
        topics = ["t", "u"] if change else ["t"]
        p = self.h.join(GROUP, c.member_id, instance=c.instance, session=SESSION,
                        rebalance=REBALANCE, client=f"c{i}",
                        protocols=[("range", subscription(*topics)), ("rr", b"")])
        p.on_resolved(lambda r: self._on_join(c, r))
        c.waiting = p
        self._track(p)

    @rule(i=st.integers(0, CLIENTS - 1))
    def sync(self, i: int) -> None:
        c = self.clients[i]
        if c.generation < 1:
            return
        gen, member_id = c.generation, c.member_id
        key = (self.incarnation, gen)
        assignments: dict[str, bytes] = {}
        group = self.coord.groups.get(GROUP)
        if (group is not None and group.leader_id == member_id and gen == group.generation_id
                and key not in self.sent):
            assignments = {m: f"{key}:{m}".encode() for m in group.members}
            self.sent[key] = assignments
        p = self.h.sync(GROUP, member_id, gen, assignments, instance=c.instance)
        p.on_resolved(lambda r: self._on_sync(c, key, member_id, r))
        c.waiting = p
        self._track(p)

    @rule(i=st.integers(0, CLIENTS - 1))
    def heartbeat(self, i: int) -> None:
        c = self.clients[i]
        error = self.coord.heartbeat(GROUP, c.member_id, c.instance, c.generation)
        self.h.flush()
        if error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            c.member_id, c.generation = "", -1
        elif error != ErrorCode.NONE:
            c.rejoin = True

    def _act(self, c: Client) -> None:
        """What a well-behaved client does next."""
        if c.busy:
            return
        if c.member_id == "" or c.generation < 1 or c.rejoin:
            self.join(c.index, change=False)
        elif c.synced != c.generation:
            self.sync(c.index)
        else:
            self.heartbeat(c.index)

    @rule(i=st.integers(0, CLIENTS - 1))
    def act(self, i: int) -> None:
        self._act(self.clients[i])

    @rule(rounds=st.integers(1, 4))
    def everyone_acts(self, rounds: int) -> None:
        for _ in range(rounds):
            for c in self.clients:
                self._act(c)

    @rule(i=st.integers(0, CLIENTS - 1))
    def leave(self, i: int) -> None:
        c = self.clients[i]
        self.coord.leave_group(GROUP, [LeavingMember(c.member_id, c.instance)])
        self.h.flush()
        c.member_id, c.generation, c.synced = "", -1, -1

    @rule(i=st.integers(0, CLIENTS - 1), partition=st.integers(0, PARTITIONS - 1),
          offset=st.integers(0, 1000), simple=st.booleans())
    def commit(self, i: int, partition: int, offset: int, simple: bool) -> None:
        c = self.clients[i]
        member, gen, inst = ("", -1, None) if simple else (c.member_id, c.generation, c.instance)
        tp = ("t", partition)
        p = self.coord.commit_offsets(GROUP, member, inst, gen, {tp: OffsetAndMetadata(offset)})
        self.h.flush()
        assert p.done, "a commit is answered once its record is written"
        if p.result()[tp] == ErrorCode.NONE:
            self.committed[tp] = offset

    @rule(ms=st.sampled_from([100, 1000, 3000, 6000, 11_000, 20_000]))
    def advance(self, ms: int) -> None:
        self.h.advance(ms)

    @rule()
    def restart(self) -> None:
        """The broker restarts: the log is replayed; waiting requests die with their sockets."""
        self.h.coord = self.h.replay()
        self.incarnation += 1
        self.outstanding.clear()
        for c in self.clients:
            c.waiting = None
        group = self.coord.groups.get(GROUP)
        self.last_generation = group.generation_id if group else 0
        # The stored generation lives on, with its leader and assignments.
        before, after = (self.incarnation - 1, self.last_generation), (self.incarnation,
                                                                        self.last_generation)
        if before in self.leaders:
            self.leaders[after] = self.leaders[before]
        if before in self.sent:
            self.sent[after] = self.sent[before]

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def committed_offsets_read_back(self) -> None:
        _, got = self.coord.fetch_offsets(GROUP, list(self.committed))
        assert {tp: f.offset for tp, f in got.items()} == self.committed

    @invariant()
    def generation_never_goes_back(self) -> None:
        group = self.coord.groups.get(GROUP)
        if group is not None:
            assert group.generation_id >= self.last_generation
            self.last_generation = group.generation_id

    @invariant()
    def bookkeeping_is_consistent(self) -> None:
        group = self.coord.groups.get(GROUP)
        if group is None:
            return
        if group.state is GroupState.EMPTY:
            assert not group.members
        if group.members:
            assert group.leader_id in group.members
        assert not (group.pending_members & set(group.members))
        for instance, member_id in group.static_members.items():
            assert group.members[member_id].group_instance_id == instance
        assert len(group.static_members) == sum(1 for m in group.members.values() if m.is_static)
        assert group.pending_sync <= set(group.members)
        if group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            assert group.protocol_name in group.candidate_protocols()
        for m in group.members.values():
            if m.join_waiter is not None:
                assert group.state is GroupState.PREPARING_REBALANCE or m.join_waiter.done

    def teardown(self) -> None:
        # Enough time for every join phase, sync timeout and session to run out.
        for _ in range(20):
            self.h.advance(20_000)
        assert all(p.done for p in self.outstanding), "a waiting request was never answered"
        self.committed_offsets_read_back()
        self.h.coord = self.h.replay()
        self.committed_offsets_read_back()


TestGroupMachine = GroupMachine.TestCase
TestGroupMachine.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
