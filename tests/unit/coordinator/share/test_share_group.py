"""Share-group membership: ShareGroupHeartbeat's epochs, joins, leaves, errors, session
timeouts, assignment, and replay of the ShareGroup* records of __consumer_offsets."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from odradek.coordinator.common import KeyValue
from odradek.coordinator.share import records as rec
from odradek.coordinator.share.group import (
    InitializeTopic,
    Outcome,
    ShareGroupConfig,
    ShareGroups,
    ShareGroupState,
    ShareHeartbeatRequest,
)
from odradek.wire import ErrorCode

T1, T2 = uuid.UUID(int=0xA1), uuid.UUID(int=0xB2)
SESSION = 45_000


class FakeTopics:
    def __init__(self) -> None:
        self.topics = {"orders": (T1, 1), "audit": (T2, 3)}

    def topic_info(self, name: str) -> tuple[uuid.UUID, int] | None:
        return self.topics.get(name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return next((n for n, (t, _) in self.topics.items() if t == topic_id), None)

    def topic_names(self) -> Iterable[str]:
        return list(self.topics)


class World:
    """The share groups plus an in-memory __consumer_offsets they write to."""

    def __init__(self, config: ShareGroupConfig | None = None,
                 others: frozenset[str] = frozenset()) -> None:
        self.topics = FakeTopics()
        self.config = config or ShareGroupConfig(session_timeout_ms=SESSION)
        self.groups = ShareGroups(self.config, self.topics, lambda gid: gid in others)
        self.log: list[KeyValue] = []
        self.now = 0

        # The share coordinator's part: initialise what a heartbeat asks for at once.
        self.auto_init = True
        self.initialized: list[tuple[str, dict[uuid.UUID, frozenset[int]]]] = []

    def write(self, outcome: Outcome) -> Outcome:
        self.log += outcome.records
        if outcome.initialize and self.auto_init:
            topics = {t: i.partitions for t, i in outcome.initialize.items()}
            self.initialized.append((outcome.group_id, topics))
            self.log += self.groups.initialize_done(outcome.group_id, topics).records
        return outcome

    def hb(self, member: str, epoch: int, topics: list[str] | None = None, group: str = "g",
           rack: str | None = None) -> Outcome:
        return self.write(self.groups.heartbeat(ShareHeartbeatRequest(
            group, member, epoch, rack_id=rack, subscribed_topic_names=topics,
            client_id="cli", client_host="/127.0.0.1"), self.now))

    def join(self, member: str, topics: list[str], group: str = "g") -> Outcome:
        """Join; when the topics had to be initialised first, heartbeat once more to get
        them (what a share consumer does at its heartbeat interval)."""
        first = self.hb(member, 0, topics, group)
        if not first.initialize:
            return first
        return self.hb(member, first.result.member_epoch, group=group)

    def replayed(self) -> ShareGroups:
        other = ShareGroups(self.config, self.topics)
        for k, v in self.log:
            other.replay(k, v)
        return other


def test_a_first_join_waits_for_the_share_partitions_to_be_initialised() -> None:
    w = World()
    w.auto_init = False
    out = w.hb("m1", 0, ["orders"])
    r = out.result
    assert r.error == ErrorCode.NONE and r.member_id == "m1"
    # Kafka 4.4 starts a new group at epoch 1: the join that creates it writes 2.
    assert r.member_epoch == 2 and r.heartbeat_interval_ms == 5_000
    assert r.assignment == {}  # nothing is initialised yet
    assert out.initialize == {T1: InitializeTopic("orders", frozenset({0}), -1)}
    types = [rec.parse_key(k).record_type for k, _ in out.records]
    assert types == [rec.MEMBER_METADATA, rec.STATE_PARTITION_METADATA, rec.GROUP_METADATA,
                     rec.TARGET_MEMBER, rec.TARGET_METADATA, rec.CURRENT_ASSIGNMENT]
    assert w.groups.initializing("g") == {T1: ("orders", frozenset({0}))}
    # Heartbeats while the initialisation is under way do not ask again.
    again = w.hb("m1", 2)
    assert again.initialize == {} and again.records == [] and again.result.assignment is None
    # The share coordinator answers: the next heartbeat assigns the partition.
    w.log += w.groups.initialize_done("g", {T1: frozenset({0})}).records
    assert w.groups.initializing("g") == {}
    r = w.hb("m1", 2).result
    assert r.member_epoch == 3 and r.assignment == {T1: frozenset({0})}
    g = w.groups.groups["g"]
    assert g.state is ShareGroupState.STABLE and g.group_epoch == g.assignment_epoch == 3


def test_a_failed_initialisation_is_asked_for_again() -> None:
    w = World()
    w.auto_init = False
    w.hb("m1", 0, ["orders"])
    w.log += w.groups.initialize_failed("g", {T1: frozenset({0})}).records
    assert w.groups.initializing("g") == {}
    out = w.hb("m1", 2)
    assert out.initialize == {T1: InitializeTopic("orders", frozenset({0}), -1)}


def test_new_partitions_of_a_known_topic_start_at_offset_zero() -> None:
    w = World()
    w.join("m1", ["orders"])
    w.topics.topics["orders"] = (T1, 3)
    out = w.hb("m1", 3)
    assert out.initialize == {T1: InitializeTopic("orders", frozenset({1, 2}), 0)}
    r = w.hb("m1", out.result.member_epoch).result
    assert r.assignment == {T1: frozenset({0, 1, 2})}


def test_one_partition_is_shared_by_every_member() -> None:
    w = World()
    assert w.join("m1", ["orders"]).result.member_epoch == 3
    r2 = w.hb("m2", 0, ["orders"]).result
    assert r2.member_epoch == 4 and r2.assignment == {T1: frozenset({0})}
    # m1 learns of the new epoch on its next heartbeat; its assignment did not change.
    r1 = w.hb("m1", 3).result
    assert r1.member_epoch == 4 and r1.assignment is None


def test_an_unchanged_heartbeat_writes_nothing() -> None:
    w = World()
    w.join("m1", ["orders"])
    out = w.hb("m1", 3)
    assert out.records == [] and out.result.member_epoch == 3 and out.result.assignment is None


def test_assignment_moves_between_members_of_a_multi_partition_topic() -> None:
    w = World()
    assert w.join("a", ["audit"]).result.assignment == {T2: frozenset({0, 1, 2})}
    rb = w.hb("b", 0, ["audit"]).result
    ra = w.hb("a", 3).result
    assert ra.member_epoch == 4 and rb.member_epoch == 4
    assert ra.assignment is not None and rb.assignment is not None
    assert ra.assignment[T2] | rb.assignment[T2] == frozenset({0, 1, 2})
    assert not ra.assignment[T2] & rb.assignment[T2]


def test_leave_removes_the_member_and_bumps_the_epoch() -> None:
    w = World()
    w.join("m1", ["orders"])
    w.hb("m2", 0, ["orders"])
    out = w.hb("m2", -1)
    assert out.result.error == ErrorCode.NONE and out.result.member_epoch == -1
    types = [(rec.parse_key(k).record_type, v is None) for k, v in out.records]
    assert types == [(rec.CURRENT_ASSIGNMENT, True), (rec.TARGET_MEMBER, True),
                     (rec.MEMBER_METADATA, True), (rec.GROUP_METADATA, False)]
    g = w.groups.groups["g"]
    assert set(g.members) == {"m1"} and g.group_epoch == 5
    assert w.hb("m1", 3).result.member_epoch == 5  # m1 had not seen epoch 4
    w.hb("m1", -1)
    assert w.groups.groups["g"].state is ShareGroupState.EMPTY


def test_session_timeout_removes_the_member() -> None:
    w = World()
    w.join("m1", ["orders"])
    w.hb("m2", 0, ["orders"])
    w.now = 30_000
    w.hb("m1", 3)
    assert w.groups.next_deadline() == SESSION
    w.now = SESSION
    outs = w.groups.on_timer(w.now)
    assert [o.group_id for o in outs] == ["g"]
    for o in outs:
        w.write(o)
    assert set(w.groups.groups["g"].members) == {"m1"}
    assert w.groups.next_deadline() == 30_000 + SESSION
    # The expired member is unknown now.
    assert w.hb("m2", 4).result.error == ErrorCode.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("req, message", [
    (ShareHeartbeatRequest("", "m", 0, subscribed_topic_names=["orders"]),
     "GroupId can't be empty."),
    (ShareHeartbeatRequest("g", "", 0, subscribed_topic_names=["orders"]),
     "MemberId can't be empty."),
    (ShareHeartbeatRequest("g", "m", 0, rack_id="", subscribed_topic_names=["orders"]),
     "RackId can't be empty."),
    (ShareHeartbeatRequest("g", "m", 0), "SubscribedTopicNames must be set in first request."),
    (ShareHeartbeatRequest("g", "m", 0, subscribed_topic_names=[]),
     "SubscribedTopicNames must be set in first request."),
    (ShareHeartbeatRequest("g", "m", -2), "MemberEpoch is invalid."),
])
def test_invalid_requests(req: ShareHeartbeatRequest, message: str) -> None:
    w = World()
    out = w.groups.heartbeat(req, 0)
    assert out.result.error == ErrorCode.INVALID_REQUEST and out.result.message == message
    assert out.records == [] and w.groups.groups == {}


def test_epoch_checks() -> None:
    w = World()
    w.join("m1", ["orders"])  # m1 at 3
    w.hb("m2", 0, ["orders"])
    w.hb("m1", 3)  # m1 now at 4, previous 3
    assert w.hb("m1", 5).result.error == ErrorCode.FENCED_MEMBER_EPOCH
    # The previous epoch is accepted: the answer that bumped it may have been lost.
    assert w.hb("m1", 3).result.error == ErrorCode.NONE
    w.hb("m3", 0, ["orders"])
    w.hb("m1", 4)  # m1 at 5, previous 4
    out = w.hb("m1", 3)
    assert out.result.error == ErrorCode.FENCED_MEMBER_EPOCH
    assert out.result.message is not None and "smaller member epoch" in out.result.message


def test_unknown_member_group_and_other_group_kinds() -> None:
    w = World(others=frozenset({"classic"}))
    assert w.hb("m1", 1, group="nope").result.error == ErrorCode.GROUP_ID_NOT_FOUND
    assert w.hb("m1", -1, group="nope").result.error == ErrorCode.GROUP_ID_NOT_FOUND
    out = w.hb("m1", 0, ["orders"], group="classic")
    assert out.result.error == ErrorCode.GROUP_ID_NOT_FOUND
    assert out.result.message == "Group classic is not a share group."
    w.hb("m1", 0, ["orders"])
    assert w.hb("m9", 1).result.error == ErrorCode.UNKNOWN_MEMBER_ID
    assert w.hb("m9", -1).result.error == ErrorCode.UNKNOWN_MEMBER_ID
    err, msg, _ = w.groups.describe("classic")
    assert err == ErrorCode.GROUP_ID_NOT_FOUND and msg == "Group classic is not a share group."
    err, _, group = w.groups.describe("g")
    assert err == ErrorCode.NONE and group is not None and set(group.members) == {"m1"}


def test_group_max_size() -> None:
    w = World(ShareGroupConfig(max_size=2))
    w.hb("m1", 0, ["orders"])
    w.hb("m2", 0, ["orders"])
    out = w.hb("m3", 0, ["orders"])
    assert out.result.error == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert set(w.groups.groups["g"].members) == {"m1", "m2"}
    assert w.hb("m2", 3).result.error == ErrorCode.NONE  # members already in stay welcome


def test_rejoin_with_epoch_zero_gets_the_full_assignment_again() -> None:
    w = World()
    w.join("m1", ["orders"])
    r = w.hb("m1", 0, ["orders"]).result
    assert r.error == ErrorCode.NONE and r.member_epoch == 3
    assert r.assignment == {T1: frozenset({0})}


def test_subscription_and_topic_changes_bump_the_epoch() -> None:
    w = World()
    w.join("m1", ["orders"])
    out = w.hb("m1", 3, ["orders", "audit"])
    # A new epoch for the new subscription; audit is assigned once initialised.
    assert out.result.member_epoch == 4 and out.result.assignment is None
    assert set(out.initialize) == {T2}
    r = w.hb("m1", 4).result
    assert r.member_epoch == 5 and r.assignment == {T1: frozenset({0}), T2: frozenset({0, 1, 2})}
    # A rack change is recorded without a new epoch.
    out = w.hb("m1", 5, rack="r1")
    assert [rec.parse_key(k).record_type for k, _ in out.records] == [rec.MEMBER_METADATA]
    assert w.groups.groups["g"].members["m1"].rack_id == "r1"
    # A topic grows: the next heartbeat sees a new hash and a new epoch; the new partition
    # comes once initialised.
    w.topics.topics["orders"] = (T1, 2)
    assert w.hb("m1", 5).result.member_epoch == 6
    r = w.hb("m1", 6).result
    assert r.member_epoch == 7 and r.assignment is not None and r.assignment[T1] == {0, 1}


def test_restore_undoes_a_failed_write() -> None:
    w = World()
    w.join("m1", ["orders"])
    before = w.groups.groups["g"].copy()
    out = w.groups.heartbeat(ShareHeartbeatRequest("g", "m2", 0, subscribed_topic_names=["orders"]),
                             0)
    assert out.records
    w.groups.restore("g", out.snapshot)
    assert w.groups.groups["g"] == before
    out = w.groups.heartbeat(ShareHeartbeatRequest("new", "m", 0, subscribed_topic_names=["orders"]),
                             0)
    w.groups.restore("new", out.snapshot)
    assert "new" not in w.groups.groups


def test_records_round_trip() -> None:
    md = rec.StatePartitionMetadata({T1: ("orders", frozenset({0}))},
                                    {T2: ("audit", frozenset({0, 2}))}, {T1: "orders"})
    k, v = rec.state_partition_metadata_record("g", md)
    assert rec.parse_key(k) == rec.ShareKey(rec.STATE_PARTITION_METADATA, "g")
    assert v is not None and rec.parse_state_partition_metadata(v) == md
    k, v = rec.assignment_epoch_record("g", 7, 123)
    assert v is not None and rec.parse_assignment_epoch(v) == (7, 123)


def test_replay_rebuilds_the_groups_and_drops_deleted_ones() -> None:
    w = World()
    w.join("m1", ["orders"])
    w.join("m2", ["orders", "audit"], group="h")
    w.hb("m3", 0, ["audit"], group="h")
    w.hb("m2", 2, group="h")
    w.hb("m3", -1, group="h")
    replayed = w.replayed()
    assert replayed.groups == w.groups.groups
    # A group's tombstones (its deletion) remove it on replay.
    w.log += [rec.tombstone(rec.TARGET_METADATA, "g"), rec.tombstone(rec.GROUP_METADATA, "g")]
    assert "g" not in w.replayed().groups
    # Loaded members get a session each.
    replayed.finish_load(1000)
    assert replayed.next_deadline() == 1000 + SESSION


class Membership(RuleBasedStateMachine):
    """Random joins, heartbeats, leaves and expiries: the groups replayed from the records
    always equal the live ones, and every member's epoch is at most the group's."""

    def __init__(self) -> None:
        super().__init__()
        self.w = World()
        self.epochs: dict[str, int] = {}

    @rule(m=st.sampled_from(["a", "b", "c", "d"]),
          topics=st.sampled_from([["orders"], ["audit"], ["orders", "audit"]]))
    def join(self, m: str, topics: list[str]) -> None:
        r = self.w.hb(m, 0, topics).result
        assert r.error == ErrorCode.NONE and r.assignment is not None
        self.epochs[m] = r.member_epoch

    @rule(m=st.sampled_from(["a", "b", "c", "d"]))
    def heartbeat(self, m: str) -> None:
        if m not in self.epochs:
            assert self.w.hb(m, 5).result.error in (ErrorCode.UNKNOWN_MEMBER_ID,
                                                    ErrorCode.GROUP_ID_NOT_FOUND)
            return
        r = self.w.hb(m, self.epochs[m]).result
        assert r.error == ErrorCode.NONE
        self.epochs[m] = r.member_epoch

    @rule(m=st.sampled_from(["a", "b", "c", "d"]))
    def leave(self, m: str) -> None:
        if m in self.epochs:
            assert self.w.hb(m, -1).result.error == ErrorCode.NONE
            del self.epochs[m]

    @rule(dt=st.integers(1, 30_000))
    def tick(self, dt: int) -> None:
        self.w.now += dt
        for o in self.w.groups.on_timer(self.w.now):
            self.w.write(o)
        group = self.w.groups.groups.get("g")
        for m in list(self.epochs):
            if group is None or m not in group.members:
                del self.epochs[m]

    @invariant()
    def replay_matches(self) -> None:
        assert self.w.replayed().groups == self.w.groups.groups
        g = self.w.groups.groups.get("g")
        if g is not None:
            assert g.assignment_epoch <= g.group_epoch
            for m in g.members.values():
                assert m.member_epoch <= g.group_epoch
            # Only initialised subscribed partitions are ever targets.
            given = {(t, p) for a in g.targets.values() for t, ps in a.items() for p in ps}
            assert given <= self._wanted()
            initialized = {(t, p) for t, (_, ps) in g.state_partitions.initialized.items()
                           for p in ps}
            assert given <= initialized

    def _wanted(self) -> set[tuple[uuid.UUID, int]]:
        g = self.w.groups.groups["g"]
        return {(t, p) for name in g.subscribed_topic_names()
                for t, n in [self.w.topics.topics[name]] for p in range(n)}

    @rule()
    def settle(self) -> None:
        """Every member heartbeats twice: then every subscribed partition is assigned."""
        for _ in range(2):
            for m in sorted(self.epochs):
                r = self.w.hb(m, self.epochs[m]).result
                assert r.error == ErrorCode.NONE
                self.epochs[m] = r.member_epoch
        if self.epochs:
            g = self.w.groups.groups["g"]
            given = {(t, p) for a in g.targets.values() for t, ps in a.items() for p in ps}
            assert given == self._wanted()
            for m in self.epochs:
                assert g.members[m].assigned == g.targets[m]


Membership.TestCase.settings = settings(max_examples=40, stateful_step_count=30,
                                        deadline=None)
test_membership = Membership.TestCase
