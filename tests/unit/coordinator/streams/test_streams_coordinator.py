"""The streams-group core (KIP-1071): topology configuration, the sticky task assignor,
heartbeats, reconciliation, fencing, records and their replay."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import pytest

from odradek.coordinator.streams import records as rec
from odradek.coordinator.streams.assignor import MemberSpec, TasksTuple, assign
from odradek.coordinator.streams.coordinator import (
    HeartbeatRequest,
    StreamsConfig,
    StreamsCoordinator,
    reconcile,
)
from odradek.coordinator.streams.model import MemberAssignment, MemberState
from odradek.coordinator.streams.topology import (
    INCORRECTLY_PARTITIONED_TOPICS,
    MISSING_INTERNAL_TOPICS,
    MISSING_SOURCE_TOPICS,
    CopartitionGroup,
    Subtopology,
    TopicInfo,
    Topology,
    check,
    configure,
)
from odradek.wire import ErrorCode


class Topics:
    def __init__(self, **counts: int) -> None:
        self.counts = {k.replace("_", "-"): v for k, v in counts.items()}
        self.ids = {n: uuid.uuid4() for n in self.counts}

    def topic_info(self, name: str) -> tuple[uuid.UUID, int] | None:
        if name not in self.counts:
            return None
        return self.ids.setdefault(name, uuid.uuid4()), self.counts[name]

    def topic_names(self) -> Iterable[str]:
        return list(self.counts)


# A word count: input -> repartition by word -> counts (store with a changelog).
WORDCOUNT = Topology(1, (
    Subtopology("0", source_topics=("input",),
                repartition_sink_topics=("app-repartition",)),
    Subtopology("1", repartition_source_topics=(TopicInfo("app-repartition"),),
                state_changelog_topics=(TopicInfo("app-changelog",
                                                  configs=(("cleanup.policy", "compact"),)),)),
))


def join(member: str, process: str = "", topology: Topology = WORDCOUNT,
         group: str = "g", **kw: object) -> HeartbeatRequest:
    return HeartbeatRequest(group_id=group, member_id=member, member_epoch=0,
                            rebalance_timeout_ms=30_000, topology=topology,
                            process_id=process or f"p-{member}", active_tasks={},
                            standby_tasks={}, warmup_tasks={}, **kw)  # type: ignore[arg-type]


def beat(member: str, epoch: int, active: dict[str, frozenset[int]] | None = None,
         group: str = "g") -> HeartbeatRequest:
    return HeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch,
                            active_tasks=active, standby_tasks={} if active is not None
                            else None, warmup_tasks={} if active is not None else None)


# -- topology -------------------------------------------------------------------------------


def test_configure_missing_source_topic() -> None:
    c = configure(WORDCOUNT, Topics().topic_info and (lambda n: None), [])
    assert c.partitions is None
    assert [(s.code, s.detail) for s in c.statuses] == [
        (MISSING_SOURCE_TOPICS, "Source topics input are missing.")]


def test_configure_asks_for_internal_topics_with_derived_counts_and_configs() -> None:
    topics = Topics(input=3)
    c = configure(WORDCOUNT, lambda n: (topics.topic_info(n) or (None, None))[1], ["input"])
    assert c.partitions is None
    assert [s.code for s in c.statuses] == [MISSING_INTERNAL_TOPICS]
    assert c.to_create == (TopicInfo("app-changelog", 3, 0, (("cleanup.policy", "compact"),)),
                           TopicInfo("app-repartition", 3))
    ready = configure(WORDCOUNT, {"input": 3, "app-repartition": 3,
                                  "app-changelog": 3}.get, ["input"])
    assert ready.partitions == {"0": 3, "1": 3} and not ready.statuses


def test_configure_wrongly_partitioned_internal_topic() -> None:
    c = configure(WORDCOUNT, {"input": 3, "app-repartition": 2, "app-changelog": 3}.get,
                  ["input"])
    assert [s.code for s in c.statuses] == [INCORRECTLY_PARTITIONED_TOPICS]


def test_copartition_group_of_different_widths() -> None:
    t = Topology(1, (Subtopology("0", source_topics=("a", "b"),
                                 copartition_groups=(CopartitionGroup((0, 1)),)),))
    c = configure(t, {"a": 2, "b": 3}.get, ["a", "b"])
    assert [s.code for s in c.statuses] == [INCORRECTLY_PARTITIONED_TOPICS]
    assert "a, b" in c.statuses[0].detail
    assert configure(t, {"a": 3, "b": 3}.get, ["a", "b"]).partitions == {"0": 3}


def test_source_regex() -> None:
    t = Topology(1, (Subtopology("0", source_topic_regex=("in-.*",)),))
    assert configure(t, {"in-1": 2, "in-2": 4}.get, ["in-1", "in-2", "x"]).partitions == {"0": 4}
    assert configure(t, {"x": 1}.get, ["x"]).statuses[0].code == MISSING_SOURCE_TOPICS


@pytest.mark.parametrize("topology", [
    Topology(1, (Subtopology("0", ("a",)), Subtopology("0", ("b",)))),
    Topology(1, (Subtopology("0", ("a",), repartition_sink_topics=("nowhere",)),)),
    Topology(1, (Subtopology("0", ("a",), copartition_groups=(CopartitionGroup((3,)),)),)),
    Topology(1, (Subtopology("0", ("a",), state_changelog_topics=(TopicInfo("bad name"),)),)),
])
def test_invalid_topologies(topology: Topology) -> None:
    assert check(topology) is not None
    co = StreamsCoordinator(topics=Topics(a=1, b=1))
    _, r = co.heartbeat(join("m", topology=topology), 0)
    assert r.error == ErrorCode.STREAMS_INVALID_TOPOLOGY and r.message


# -- assignor -------------------------------------------------------------------------------


def test_assignor_balances_and_sticks() -> None:
    tasks = {"0": 4, "1": 2}
    a = assign({"a": MemberSpec("p1"), "b": MemberSpec("p2")}, tasks, 1)
    for m in a.values():
        assert sum(len(p) for p in m.active.values()) == 3
    # every task active once, its standby on the other process
    for s, n in tasks.items():
        for p in range(n):
            owners = [m for m, t in a.items() if p in t.active.get(s, ())]
            standbys = [m for m, t in a.items() if p in t.standby.get(s, ())]
            assert len(owners) == 1 and len(standbys) == 1 and owners != standbys
    b = assign({"a": MemberSpec("p1", a["a"]), "b": MemberSpec("p2", a["b"]),
                "c": MemberSpec("p3")}, tasks, 0)
    kept = sum(len(b["a"].active.get(s, frozenset()) & a["a"].active.get(s, frozenset()))
               for s in tasks)
    assert kept == 2  # a keeps two of its three tasks, gives one to c
    assert all(sum(len(p) for p in t.active.values()) == 2 for t in b.values())


def test_no_standby_on_the_active_process() -> None:
    a = assign({"a": MemberSpec("p"), "b": MemberSpec("p")}, {"0": 2}, 1)
    assert all(not t.standby for t in a.values())


# -- heartbeat ------------------------------------------------------------------------------


def ready_topics() -> Topics:
    return Topics(input=4, app_repartition=4, app_changelog=4)


def test_join_before_internal_topics_exist_asks_for_them() -> None:
    topics = Topics(input=2)
    co = StreamsCoordinator(topics=topics)
    _, r = co.heartbeat(join("m1"), 0)
    # Kafka 4.4: a new group starts at epoch 1, so its first join writes 2 (then 3 once the
    # internal topics exist; checked against Kafka by the cli-streams-groups compat row).
    assert r.error == ErrorCode.NONE and r.member_epoch == 2
    assert [s.code for s in r.statuses] == [MISSING_INTERNAL_TOPICS]
    assert {t.name: t.partitions for t in r.create_topics} == {"app-changelog": 2,
                                                               "app-repartition": 2}
    assert r.tasks == TasksTuple()
    topics.counts.update({"app-changelog": 2, "app-repartition": 2})
    _, r = co.heartbeat(beat("m1", 2, {}), 1)
    assert not r.statuses and r.member_epoch == 3
    assert r.tasks is not None and r.tasks.active == {"0": frozenset({0, 1}),
                                                      "1": frozenset({0, 1})}
    assert co.describe(["g"])[0].state == "Stable"


def test_group_epochs_as_kafka_counts_them() -> None:
    # Kafka 4.4 (raw heartbeats to the oracle): a new group's first join gives epoch 2, every
    # later join or leave one more; an emptied group is not new again: 2, 3, 4, 5, then 6.
    co = StreamsCoordinator(topics=ready_topics())
    _, r1 = co.heartbeat(join("m1"), 0)
    co.heartbeat(join("m2"), 1)
    assert (r1.member_epoch, co.groups["g"].epoch) == (2, 3)
    co.heartbeat(HeartbeatRequest(group_id="g", member_id="m1", member_epoch=-1), 2)
    co.heartbeat(HeartbeatRequest(group_id="g", member_id="m2", member_epoch=-1), 3)
    assert co.groups["g"].epoch == 5 and not co.groups["g"].metadata
    _, r3 = co.heartbeat(join("m3"), 4)
    assert r3.member_epoch == 6


def test_two_members_revoke_before_reassign() -> None:
    co = StreamsCoordinator(topics=ready_topics())
    _, r1 = co.heartbeat(join("m1"), 0)
    assert r1.tasks is not None and sum(len(p) for p in r1.tasks.active.values()) == 8
    _, r2 = co.heartbeat(join("m2"), 1)
    assert r2.tasks == TasksTuple()  # m1 still holds every task
    _, r1b = co.heartbeat(beat("m1", r1.member_epoch, dict(r1.tasks.active)), 2)
    assert r1b.member_epoch == r1.member_epoch  # revoking: epoch stays
    assert r1b.tasks is not None and sum(len(p) for p in r1b.tasks.active.values()) == 4
    assert co.groups["g"].current["m1"].state == MemberState.UNREVOKED_TASKS
    _, r2b = co.heartbeat(beat("m2", r2.member_epoch, {}), 3)
    assert r2b.tasks is None  # unchanged: nothing released yet
    assert co.groups["g"].current["m2"].state == MemberState.UNRELEASED_TASKS
    _, r1c = co.heartbeat(beat("m1", r1b.member_epoch, dict(r1b.tasks.active)), 4)
    assert r1c.member_epoch == co.groups["g"].assignment_epoch
    _, r2c = co.heartbeat(beat("m2", r2b.member_epoch, {}), 5)
    assert r2c.tasks is not None and sum(len(p) for p in r2c.tasks.active.values()) == 4
    assert co.describe(["g"])[0].state == "Stable"


def test_errors() -> None:
    co = StreamsCoordinator(topics=ready_topics())
    _, r = co.heartbeat(beat("ghost", 3, {}), 0)
    assert r.error == ErrorCode.UNKNOWN_MEMBER_ID
    _, r = co.heartbeat(join("m1"), 0)
    epoch = r.member_epoch
    _, bad = co.heartbeat(beat("m1", epoch + 5, {}), 1)
    assert bad.error == ErrorCode.FENCED_MEMBER_EPOCH and "greater" in (bad.message or "")
    _, stale = co.heartbeat(join("m2", topology=Topology(0, WORDCOUNT.subtopologies)), 1)
    assert stale.error == ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH
    _, other = co.heartbeat(join("m3", group="cg"), 1, other_kind="consumer")
    assert other.error == ErrorCode.GROUP_ID_NOT_FOUND
    assert other.message == "Group cg is not a streams group."
    # a newer topology joins; the member on the old one is fenced
    co.heartbeat(join("m2", topology=Topology(2, WORDCOUNT.subtopologies)), 2)
    _, fenced = co.heartbeat(beat("m1", epoch, {}), 3)
    assert fenced.error == ErrorCode.STREAMS_TOPOLOGY_FENCED


@pytest.mark.parametrize(("change", "message"), [
    ({"group_id": ""}, "GroupId can't be empty."),
    ({"member_id": ""}, "MemberId can't be empty."),
    ({"rebalance_timeout_ms": -1}, "RebalanceTimeoutMs must be provided when joining."),
    ({"topology": None}, "Topology must be non-null when joining."),
    ({"process_id": None}, "ProcessId can't be empty."),
    ({"active_tasks": None}, "ActiveTasks must be empty when (re-)joining."),
    ({"standby_tasks": {"0": frozenset({1})}}, "StandbyTasks must be empty when (re-)joining."),
    ({"instance_id": ""}, "InstanceId can't be empty."),
    ({"rack_id": ""}, "RackId can't be empty."),
    ({"member_epoch": -3}, "MemberEpoch is -3, but must be greater than or equal to -2."),
])
def test_invalid_requests(change: dict[str, object], message: str) -> None:
    import dataclasses
    req = dataclasses.replace(join("m"), **change)  # type: ignore[arg-type]
    _, r = StreamsCoordinator(topics=ready_topics()).heartbeat(req, 0)
    assert (r.error, r.message) == (ErrorCode.INVALID_REQUEST, message)


def test_leave_and_session_timeout() -> None:
    co = StreamsCoordinator(StreamsConfig(session_timeout_ms=100), topics=ready_topics())
    co.heartbeat(join("m1"), 0)
    co.heartbeat(join("m2"), 0)
    _, r = co.heartbeat(beat("m1", -1), 10)
    assert r.error == ErrorCode.NONE and "m1" not in co.groups["g"].metadata
    assert co.expire(50) == []
    records = co.expire(100)
    assert records and not co.groups["g"].metadata
    assert co.describe(["g"])[0].state == "Empty"
    assert co.delete("g")[0] == ErrorCode.NONE and "g" not in co.groups


def test_delete_non_empty_and_unknown() -> None:
    co = StreamsCoordinator(topics=ready_topics())
    co.heartbeat(join("m1"), 0)
    assert co.delete("g")[0] == ErrorCode.NON_EMPTY_GROUP
    assert co.delete("nope")[0] == ErrorCode.GROUP_ID_NOT_FOUND
    assert co.describe(["nope"])[0].error == ErrorCode.GROUP_ID_NOT_FOUND


def test_revocation_timeout_fences() -> None:
    co = StreamsCoordinator(topics=ready_topics())
    _, r1 = co.heartbeat(join("m1"), 0)
    co.heartbeat(join("m2"), 0)
    assert r1.tasks is not None
    co.heartbeat(beat("m1", r1.member_epoch, dict(r1.tasks.active)), 1)
    assert co.expire(1 + 29_999) == []
    assert co.expire(1 + 30_000) and "m1" not in co.groups["g"].metadata


def test_reconcile_waits_for_release() -> None:
    target = TasksTuple({"0": frozenset({0, 1})})
    a = reconcile(MemberAssignment(1, 0), target, 2, {"0": frozenset({1})}, {})
    assert a.state == MemberState.UNRELEASED_TASKS and a.assigned.active == {"0": frozenset({0})}
    assert a.member_epoch == 2 and a.previous_member_epoch == 1


def test_records_replay_to_the_live_groups() -> None:
    co = StreamsCoordinator(StreamsConfig(num_standby_replicas=1), topics=ready_topics())
    log: list[rec.KeyValue] = []
    for i, req in enumerate([join("m1", user_endpoint=("h1", 1)), join("m2"),
                             beat("m1", 2, {})]):
        records, _ = co.heartbeat(req, i)
        log += records
    replayed = rec.replay(log)
    assert replayed == co.groups
    assert replayed["g"].topology == WORDCOUNT
    assert replayed["g"].metadata["m1"].user_endpoint == ("h1", 1)


def test_the_configured_heartbeat_interval_is_what_members_are_told() -> None:
    co = StreamsCoordinator(StreamsConfig(heartbeat_interval_ms=1234), topics=ready_topics())
    _, r = co.heartbeat(join("m1"), 0)
    assert r.heartbeat_interval_ms == 1234


def test_the_configured_standby_replicas_are_assigned() -> None:
    for n, expected in ((0, 0), (1, 8)):
        co = StreamsCoordinator(StreamsConfig(num_standby_replicas=n), topics=ready_topics())
        co.heartbeat(join("m1"), 0)
        co.heartbeat(join("m2"), 0)
        g = co.groups["g"]
        assert sum(len(p) for t in g.targets.values() for p in t.standby.values()) == expected


def test_group_max_size() -> None:
    co = StreamsCoordinator(StreamsConfig(max_size=1), topics=ready_topics())
    assert co.heartbeat(join("m1"), 0)[1].error == ErrorCode.NONE
    assert co.heartbeat(join("m2"), 0)[1].error == ErrorCode.GROUP_MAX_SIZE_REACHED
