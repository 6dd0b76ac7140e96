"""KIP-848 consumer groups in the sans-IO group coordinator: heartbeats, epochs, the
revoke-then-assign reconciliation, timers, offsets, and replay of the records."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest
from group_testutil import FakeClock, Harness
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from odradek.coordinator.group.consumer.coordinator import (
    ConsumerConfig,
    HeartbeatRequest,
    HeartbeatResult,
)
from odradek.coordinator.group.consumer.model import ConsumerGroup
from odradek.coordinator.group.coordinator import GroupCoordinator
from odradek.coordinator.group.records import OffsetAndMetadata
from odradek.wire import ErrorCode
from odradek.wire.records import RecordBatch, build_batch

T = uuid.UUID(int=0xA)
U = uuid.UUID(int=0xB)


class Topics:
    def __init__(self, **topics: tuple[uuid.UUID, int]) -> None:
        self.topics = dict(topics)

    def topic_info(self, name: str) -> tuple[uuid.UUID, int] | None:
        return self.topics.get(name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return next((n for n, (i, _) in self.topics.items() if i == topic_id), None)

    def topic_names(self) -> list[str]:
        return list(self.topics)


@dataclass
class CHarness(Harness):
    topics: Topics = field(default_factory=lambda: Topics(t=(T, 6), u=(U, 2)))
    cconfig: ConsumerConfig = field(default_factory=ConsumerConfig)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.coord = GroupCoordinator(self.config, self.clock, consumer_config=self.cconfig,
                                      topics=self.topics)

    def replay(self) -> GroupCoordinator:
        coord = GroupCoordinator(self.config, self.clock, consumer_config=self.cconfig,
                                 topics=self.topics)
        coord.begin_load()
        for records in self.log.values():
            for offset, rec in enumerate(records):
                coord.replay(RecordBatch(build_batch([rec], base_offset=offset,
                                                     base_timestamp=self.clock.t)))
        coord.finish_load()
        return coord

    def hb(self, **kw: object) -> HeartbeatResult:
        args: dict[str, object] = {"group_id": "g", "member_id": "m1", "member_epoch": 0}
        args.update(kw)
        if args["member_epoch"] == 0:
            args.setdefault("rebalance_timeout_ms", 30_000)
            args.setdefault("subscribed_topic_names", ["t"])
            args.setdefault("topic_partitions", [])
        p = self.coord.consumer_group_heartbeat(HeartbeatRequest(**args))  # type: ignore[arg-type]
        self.flush()
        return p.result()

    def cg(self, group: str = "g") -> ConsumerGroup:
        cg = self.coord.consumer_group(group)
        assert cg is not None
        return cg


def owned(result: HeartbeatResult) -> list[tuple[uuid.UUID, list[int]]]:
    assert result.assignment is not None
    return [(t, sorted(ps)) for t, ps in result.assignment.items()]


def parts(result: HeartbeatResult) -> set[tuple[uuid.UUID, int]]:
    assert result.assignment is not None
    return {(t, p) for t, ps in result.assignment.items() for p in ps}


def test_first_member_gets_everything_at_epoch_1() -> None:
    h = CHarness()
    r = h.hb()
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (
        ErrorCode.NONE, "m1", 1, 5000)
    assert parts(r) == {(T, p) for p in range(6)}
    assert h.cg().state.value == "Stable"
    # A plain heartbeat: no assignment repeated.
    r2 = h.hb(member_epoch=1, topic_partitions=owned(r))
    assert (r2.error, r2.member_epoch, r2.assignment) == (ErrorCode.NONE, 1, None)


def test_second_member_waits_for_revocation_then_gets_partitions() -> None:
    h = CHarness()
    a = h.hb()
    b = h.hb(member_id="m2")
    # m2 is at the new epoch but gets nothing yet: m1 still owns everything.
    assert b.member_epoch == 2 and parts(b) == set()
    assert h.cg().state.value == "Reconciling"
    a2 = h.hb(member_epoch=1, topic_partitions=owned(a))
    assert a2.member_epoch == 1 and len(parts(a2)) == 3  # must revoke 3 first, keeps epoch 1
    # m2 asks again: the partitions are still pending revocation on m1.
    assert h.hb(member_id="m2", member_epoch=2, topic_partitions=[]).assignment is None
    a3 = h.hb(member_epoch=1, topic_partitions=owned(a2))  # revoked: epoch advances
    assert a3.member_epoch == 2 and a3.assignment is None
    b2 = h.hb(member_id="m2", member_epoch=2, topic_partitions=[])
    assert parts(b2) == {(T, p) for p in range(6)} - parts(a2)
    assert h.cg().state.value == "Stable"


def test_validation_errors() -> None:
    h = CHarness()
    cases = [
        ({"member_id": ""}, "MemberId can't be empty."),
        ({"group_id": ""}, "GroupId can't be empty."),
        ({"instance_id": ""}, "InstanceId can't be empty."),
        ({"rack_id": ""}, "RackId can't be empty."),
        ({"rebalance_timeout_ms": -1}, "RebalanceTimeoutMs must be provided in first request."),
        ({"topic_partitions": None}, "TopicPartitions must be empty when (re-)joining."),
        ({"topic_partitions": [(T, [0])]}, "TopicPartitions must be empty when (re-)joining."),
        ({"subscribed_topic_names": None},
         "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
        ({"member_epoch": -3}, "MemberEpoch is invalid."),
        ({"member_epoch": -2}, "InstanceId can't be null."),
    ]
    for kw, message in cases:
        r = h.hb(**kw)
        assert (r.error, r.message) == (ErrorCode.INVALID_REQUEST, message), kw
    r = h.hb(server_assignor="sticky")
    assert r.error == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert r.message == "ServerAssignor sticky is not supported. Supported assignors: uniform, range."
    assert h.coord.consumer_group("g") is None and not h.log


def test_v0_member_id_is_generated() -> None:
    h = CHarness()
    r = h.hb(member_id="", api_version=0)
    assert r.error == ErrorCode.NONE and r.member_id and len(r.member_id) == 22


def test_unknown_group_member_and_fenced_epochs() -> None:
    h = CHarness()
    r = h.hb(member_epoch=1)
    assert (r.error, r.message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Consumer group g not found.")
    a = h.hb()
    assert h.hb(member_id="zz", member_epoch=1).error == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.hb(member_epoch=5).error == ErrorCode.FENCED_MEMBER_EPOCH
    h.hb(member_id="m2")
    a2 = h.hb(member_epoch=1, topic_partitions=owned(a))
    a3 = h.hb(member_epoch=1, topic_partitions=owned(a2))
    assert a3.member_epoch == 2
    # The previous epoch with a subset of the assignment is accepted (a lost response) ...
    assert h.hb(member_epoch=1, topic_partitions=owned(a2)).error == ErrorCode.NONE
    # ... but not with partitions it no longer has.
    assert h.hb(member_epoch=1, topic_partitions=owned(a)).error == ErrorCode.FENCED_MEMBER_EPOCH


def test_static_members() -> None:
    h = CHarness()
    a = h.hb(instance_id="i1")
    assert h.hb(member_id="m9", instance_id="i1").error == ErrorCode.UNRELEASED_INSTANCE_ID
    assert h.hb(member_id="m9", instance_id="i1", member_epoch=1).error == ErrorCode.FENCED_INSTANCE_ID
    assert h.hb(member_id="m9", instance_id="i2", member_epoch=1).error == ErrorCode.UNKNOWN_MEMBER_ID
    left = h.hb(instance_id="i1", member_epoch=-2)
    assert (left.error, left.member_epoch) == (ErrorCode.NONE, -2)
    epoch = h.cg().group_epoch
    back = h.hb(member_id="m9", instance_id="i1")
    # The new incarnation takes over the partitions, without a new group epoch.
    assert back.error == ErrorCode.NONE and parts(back) == parts(a)
    assert h.cg().group_epoch == epoch and list(h.cg().members) == ["m9"]


def test_group_max_size_and_leave() -> None:
    h = CHarness(cconfig=ConsumerConfig(max_size=1))
    h.hb()
    r = h.hb(member_id="m2")
    assert r.error == ErrorCode.GROUP_MAX_SIZE_REACHED
    left = h.hb(member_epoch=-1)
    assert (left.error, left.member_id, left.member_epoch) == (ErrorCode.NONE, "m1", -1)
    assert h.cg().state.value == "Empty" and h.cg().group_epoch == 2
    assert h.hb(member_epoch=-1).error == ErrorCode.UNKNOWN_MEMBER_ID


def test_classic_group_conflicts() -> None:
    # With migration disabled a classic group stays classic and a classic JoinGroup to a
    # consumer group is refused (Kafka 4.4's answers); a heartbeat that is not a join to a
    # classic group, or a JoinGroup of another protocol type, never crosses over.
    h = CHarness(cconfig=ConsumerConfig(migration_policy="disabled"))
    p = h.join_new("classic")
    assert p.result().error == ErrorCode.NONE
    r = h.hb(group_id="classic")
    assert (r.error, r.message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Cannot upgrade classic group classic to consumer group because online upgrade is "
        "disabled.")
    r = h.hb(group_id="classic", member_epoch=3)
    assert (r.error, r.message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                    "Group classic is not a consumer group.")
    h.hb()
    assert h.join("g").result().error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    h2 = CHarness()
    h2.hb()
    assert h2.join("g", protocol_type="connect").result().error \
        == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.coord.heartbeat("g", "m1", None, 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_empty_classic_group_with_offsets_becomes_consumer_group_and_back() -> None:
    h = CHarness()
    commit = h.coord.commit_offsets("g", "", None, -1, {("t", 0): OffsetAndMetadata(42)})
    h.flush()
    assert commit.result() == {("t", 0): ErrorCode.NONE}
    assert h.hb().error == ErrorCode.NONE
    assert h.coord.fetch_offsets("g", [("t", 0)], member_id="m1", member_epoch=1)[1][("t", 0)].offset == 42
    h.hb(member_epoch=-1)
    j = h.join("g").result()  # empty consumer group: a classic join turns it classic
    assert j.error == ErrorCode.MEMBER_ID_REQUIRED
    assert h.coord.consumer_group("g") is None
    assert h.replay().consumer_group("g") is None


def test_offset_commit_and_fetch_checks() -> None:
    h = CHarness()
    h.hb()
    om = {("t", 0): OffsetAndMetadata(7)}

    def commit(member: str, epoch: int, version: int = 9) -> ErrorCode:
        p = h.coord.commit_offsets("g", member, None, epoch, om, api_version=version)
        h.flush()
        return p.result()[("t", 0)]

    assert commit("m1", 1) == ErrorCode.NONE
    assert commit("m1", 0) == ErrorCode.STALE_MEMBER_EPOCH
    assert commit("x", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit("", -1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit("m1", 1, version=8) == ErrorCode.UNSUPPORTED_VERSION
    assert h.coord.fetch_offsets("g", None, member_id="m1", member_epoch=0)[0] == ErrorCode.STALE_MEMBER_EPOCH
    assert h.coord.fetch_offsets("g", None, member_id="x", member_epoch=1)[0] == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.coord.fetch_offsets("g", None)[1][("t", 0)].offset == 7
    p = h.coord.commit_offsets("nope", "m1", None, 3, om, api_version=9)
    assert p.result()[("t", 0)] == ErrorCode.GROUP_ID_NOT_FOUND


def test_commit_with_an_older_epoch_checks_each_partitions_assignment_epoch() -> None:
    """KIP-1251 (Kafka 4.3+, as Kafka 4.4 answers): a commit with an epoch older than the
    member's is accepted for a partition the member has held since that epoch or before, and
    refused with STALE_MEMBER_EPOCH (ILLEGAL_GENERATION for TxnOffsetCommit) as a whole when
    one partition came later or is not the member's; a newer epoch is always stale. The
    franz-go kgo suite's /848 ETL tests commit in OnPartitionsRevoked while a heartbeat moves
    the epoch: Kafka 4.4 accepts those commits."""
    h = CHarness()
    a = h.hb()  # m1 at epoch 1 holds t 0-5
    r = h.hb(member_epoch=1, topic_partitions=owned(a), subscribed_topic_names=["t", "u"])
    assert r.member_epoch == 2 and parts(r) == {(T, p) for p in range(6)} | {(U, 0), (U, 1)}

    def commit(epoch: int, *tps: tuple[str, int], producer_id: int = -1) -> set[ErrorCode]:
        offsets = {tp: OffsetAndMetadata(7) for tp in tps}
        if producer_id >= 0:
            p = h.coord.commit_txn_offsets("g", producer_id, 0, "m1", None, epoch, offsets)
        else:
            p = h.coord.commit_offsets("g", "m1", None, epoch, offsets, api_version=9)
        h.flush()
        return set(p.result().values())

    def check() -> None:
        assert commit(1, ("t", 0), ("t", 5)) == {ErrorCode.NONE}  # held since epoch 1
        assert commit(1, ("u", 0)) == {ErrorCode.STALE_MEMBER_EPOCH}  # assigned at 2
        assert commit(1, ("t", 0), ("u", 0)) == {ErrorCode.STALE_MEMBER_EPOCH}
        assert commit(1, ("nope", 0)) == {ErrorCode.STALE_MEMBER_EPOCH}
        assert commit(0, ("t", 0)) == {ErrorCode.STALE_MEMBER_EPOCH}
        assert commit(2, ("t", 0), ("u", 0)) == {ErrorCode.NONE}
        assert commit(3, ("t", 0)) == {ErrorCode.STALE_MEMBER_EPOCH}
        assert commit(1, ("t", 1), producer_id=7) == {ErrorCode.NONE}
        assert commit(1, ("u", 1), producer_id=8) == {ErrorCode.ILLEGAL_GENERATION}

    check()
    h.coord = h.replay()  # the assignment epochs are rebuilt from the records
    check()

    # Partitions kept through a revocation keep their epoch; ones that come back are new.
    b = h.hb(member_id="m2", subscribed_topic_names=["t", "u"])
    a2 = h.hb(member_epoch=2, topic_partitions=owned(r))
    kept = parts(a2)
    a3 = h.hb(member_epoch=2, topic_partitions=owned(a2))
    assert a3.member_epoch == b.member_epoch
    old_t = sorted(p for t, p in kept if t == T)
    assert commit(1, ("t", old_t[0])) == {ErrorCode.NONE}
    assert commit(a3.member_epoch - 1, ("t", old_t[0])) == {ErrorCode.NONE}
    given_away = sorted(p for t, p in parts(r) - kept if t == T)
    assert commit(1, ("t", given_away[0])) == {ErrorCode.STALE_MEMBER_EPOCH}


def test_session_timeout_fences_and_rebalance_timeout_fences_a_slow_revoker() -> None:
    h = CHarness()
    a = h.hb(rebalance_timeout_ms=10_000)
    h.advance(30_000)
    h.hb(member_id="m2")
    h.hb(member_epoch=1, topic_partitions=owned(a))  # m1 must revoke now
    h.advance(10_001)  # ... and does not: fenced
    assert list(h.cg().members) == ["m2"]
    h.advance(45_000)  # m2 never heartbeated again: its session expires
    assert h.cg().is_empty
    assert h.cg().state.value == "Empty"


def test_failed_write_restores_the_group() -> None:
    h = CHarness()
    a = h.hb()
    before = (h.cg().group_epoch, dict(h.cg().members), dict(h.cg().targets))
    h.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    r = h.hb(member_id="m2")
    assert r.error == ErrorCode.NOT_COORDINATOR
    assert (h.cg().group_epoch, dict(h.cg().members), dict(h.cg().targets)) == before
    h.fail_with = None
    assert h.hb(member_epoch=1, topic_partitions=owned(a)).error == ErrorCode.NONE
    h.fail_with = ErrorCode.NOT_ENOUGH_REPLICAS
    assert h.hb(group_id="new").error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert h.coord.consumer_group("new") is None and "new" not in h.coord.groups


def snapshot(coord: GroupCoordinator) -> dict[str, object]:
    out: dict[str, object] = {}
    for gid, g in coord.groups.items():
        cg = g.consumer
        if cg is not None:
            out[gid] = (cg.group_epoch, cg.metadata_hash, cg.assignment_epoch, cg.members,
                        cg.static_members, cg.targets, cg.partition_epochs, cg.state)
    return out


def test_replay_rebuilds_groups_and_delete_writes_tombstones() -> None:
    h = CHarness()
    a = h.hb()
    h.hb(member_id="m2", instance_id="s2", subscribed_topic_names=["t", "u"], server_assignor="range")
    h.hb(member_epoch=1, topic_partitions=owned(a))
    h.hb(group_id="g2")
    assert snapshot(h.replay()) == snapshot(h.coord)
    assert h.replay().list_groups(types=["consumer"])
    h.hb(group_id="g2", member_epoch=-1)
    assert h.coord.delete_groups(["g", "g2"]) == {"g": ErrorCode.NON_EMPTY_GROUP, "g2": ErrorCode.NONE}
    h.flush()
    reloaded = h.replay()
    assert "g2" not in reloaded.groups and snapshot(reloaded) == snapshot(h.coord)


def test_list_groups_types_and_states() -> None:
    h = CHarness()
    h.hb()
    h.join_new("classic")
    listed = {(g.group_id, g.group_type, g.state, g.protocol_type) for g in h.coord.list_groups()}
    assert ("g", "consumer", "Stable", "consumer") in listed
    assert [g.group_id for g in h.coord.list_groups(types=["Consumer"])] == ["g"]
    assert [g.group_id for g in h.coord.list_groups(states=["stable"], types=["consumer"])] == ["g"]
    assert h.coord.list_groups(types=["share"]) == []
    d = h.coord.describe_group("g")
    assert (d.error, d.state, d.members) == (ErrorCode.NONE, "Dead", [])


# -- a stateful model: clients that do what the coordinator says -------------------------------


class Clients(RuleBasedStateMachine):
    """Members join, leave, heartbeat (acknowledging revocations) and time out; partitions
    are never held by two members at once, and a quiet group converges on Stable with every
    partition assigned."""

    def __init__(self) -> None:
        super().__init__()
        self.h = CHarness(clock=FakeClock())
        self.epochs: dict[str, int] = {}
        self.owned: dict[str, dict[uuid.UUID, list[int]]] = {}
        self.next_id = 0

    def _apply(self, mid: str, r: HeartbeatResult) -> None:
        if r.error != ErrorCode.NONE:
            self.epochs.pop(mid, None)
            self.owned.pop(mid, None)
            return
        self.epochs[mid] = r.member_epoch
        if r.assignment is not None:
            self.owned[mid] = {t: sorted(ps) for t, ps in r.assignment.items()}

    @rule(topics=st.sampled_from([["t"], ["t", "u"], ["u"]]))
    def join(self, topics: list[str]) -> None:
        self.next_id += 1
        mid = f"m{self.next_id}"
        self._apply(mid, self.h.hb(member_id=mid, subscribed_topic_names=topics))

    @rule(data=st.data())
    def heartbeat(self, data: st.DataObject) -> None:
        if not self.epochs:
            return
        mid = data.draw(st.sampled_from(sorted(self.epochs)))
        self._apply(mid, self.h.hb(member_id=mid, member_epoch=self.epochs[mid],
                                   topic_partitions=list(self.owned.get(mid, {}).items())))

    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        if not self.epochs:
            return
        mid = data.draw(st.sampled_from(sorted(self.epochs)))
        assert self.h.hb(member_id=mid, member_epoch=-1).error == ErrorCode.NONE
        self.epochs.pop(mid)
        self.owned.pop(mid, None)

    @invariant()
    def no_partition_held_twice(self) -> None:
        cg = self.h.coord.consumer_group("g")
        if cg is None:
            return
        held: set[tuple[uuid.UUID, int]] = set()
        for m in cg.members.values():
            mine = {(t, p) for a in (m.assigned, m.pending_revocation) for t, ps in a.items()
                    for p in ps}
            assert not (held & mine)
            held |= mine
        seen: set[tuple[uuid.UUID, int]] = set()
        for o in self.owned.values():  # what the clients themselves hold
            mine = {(t, p) for t, ps in o.items() for p in ps}
            assert not (seen & mine)
            seen |= mine

    def teardown(self) -> None:
        cg = self.h.coord.consumer_group("g")
        if cg is None or cg.is_empty:
            return
        for _ in range(4 * len(self.epochs) + 4):
            for mid in sorted(self.epochs):
                self.heartbeat_one(mid)
        assert cg.state.value == "Stable"
        wanted = {(tid, p) for name in cg.subscribed_topic_names()
                  for tid, n in [self.h.topics.topics[name]] for p in range(n)}
        got = {(t, p) for o in self.owned.values() for t, ps in o.items() for p in ps}
        assert got == wanted
        assert snapshot(self.h.replay()) == snapshot(self.h.coord)

    def heartbeat_one(self, mid: str) -> None:
        self._apply(mid, self.h.hb(member_id=mid, member_epoch=self.epochs[mid],
                                   topic_partitions=list(self.owned.get(mid, {}).items())))


Clients.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
test_clients = Clients.TestCase


def test_commit_with_an_older_epoch_for_partitions_held_since() -> None:
    """Kafka 4.4 (KIP-1251): a commit racing the heartbeat that moved the member to a new epoch
    is accepted for the partitions it already held at the commit's epoch."""
    h = CHarness()
    a = h.hb()
    assert a.member_epoch == 1
    h.hb(member_id="m2")  # epoch 2: m1 must give up half of what it has
    r = h.hb(member_epoch=1, topic_partitions=owned(a))
    m1 = h.cg().members["m1"]
    kept = {(t, p) for t, ps in m1.assigned.items() for p in ps}
    gone = {(t, p) for t, ps in owned(a) for p in ps} - kept
    r = h.hb(member_epoch=r.member_epoch,
             topic_partitions=[(t, sorted(p for tt, p in kept if tt == t)) for t in {t for t, _ in kept}])
    assert h.cg().members["m1"].member_epoch == 2 and kept and gone
    names = {T: "t", U: "u"}

    def commit(member: str, epoch: int, tp: tuple[uuid.UUID, int]) -> ErrorCode:
        key = (names[tp[0]], tp[1])
        p = h.coord.commit_offsets("g", member, None, epoch, {key: OffsetAndMetadata(1)},
                                   api_version=9)
        h.flush()
        return p.result()[key]

    k, g = sorted(kept)[0], sorted(gone)[0]
    assert commit("m1", 1, k) == ErrorCode.NONE  # held since epoch 1
    assert commit("m1", 1, g) == ErrorCode.STALE_MEMBER_EPOCH  # no longer its partition
    assert commit("m1", 3, k) == ErrorCode.STALE_MEMBER_EPOCH  # newer than its epoch
    assert commit("m1", 2, k) == ErrorCode.NONE
    # The epochs are rebuilt from the assignment records after a restart.
    h.coord = h.replay()
    assert commit("m1", 1, k) == ErrorCode.NONE
    assert commit("m1", 1, g) == ErrorCode.STALE_MEMBER_EPOCH


# -- the group.consumer.* settings (ConsumerConfig) at values other than their defaults ------


def test_the_configured_heartbeat_interval_is_what_members_are_told() -> None:
    """group.consumer.heartbeat.interval.ms."""
    r = CHarness(cconfig=ConsumerConfig(heartbeat_interval_ms=7_000)).hb()
    assert (r.error, r.heartbeat_interval_ms) == (ErrorCode.NONE, 7_000)


@pytest.mark.parametrize("session_ms", [20_000, 50_000])
def test_the_configured_session_timeout_expires_a_silent_member(session_ms: int) -> None:
    """group.consumer.session.timeout.ms: a member that stops heartbeating is removed once
    it has passed, not before."""
    h = CHarness(cconfig=ConsumerConfig(session_timeout_ms=session_ms))
    h.hb()
    h.advance(session_ms - 1)
    assert list(h.cg().members) == ["m1"]
    h.advance(1)
    assert h.cg().is_empty


def test_only_the_configured_assignors_are_served() -> None:
    """group.consumer.assignors: a member may name only a configured assignor."""
    h = CHarness(cconfig=ConsumerConfig(assignors=("range",)))
    r = h.hb(server_assignor="uniform")
    assert r.error == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert r.message == "ServerAssignor uniform is not supported. Supported assignors: range."
    assert h.hb(server_assignor="range").error == ErrorCode.NONE
