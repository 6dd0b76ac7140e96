"""The sans-IO group coordinator driven by a fake clock: no sleeps, timeouts by advancing time."""

from __future__ import annotations

import pytest
from group_testutil import Harness, assignment, subscription

from odradek.coordinator.group.coordinator import (
    EMPTY_CONSUMER_ASSIGNMENT,
    JOIN_SETTLE_MS,
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    PENDING_MEMBER_HOLD_MS,
    GroupConfig,
)
from odradek.coordinator.group.model import LeavingMember
from odradek.coordinator.group.records import OffsetAndMetadata
from odradek.coordinator.group.state import TRANSITIONS, GroupState
from odradek.wire import ErrorCode

E, P, C, S, D = (GroupState.EMPTY, GroupState.PREPARING_REBALANCE,
                 GroupState.COMPLETING_REBALANCE, GroupState.STABLE, GroupState.DEAD)


def om(offset: int, metadata: str = "") -> OffsetAndMetadata:
    return OffsetAndMetadata(offset, metadata=metadata)


def state(h: Harness, group: str = "g") -> GroupState:
    return h.coord.groups[group].state


# -- state table ------------------------------------------------------------------------------


def test_transition_table_matches_kafka() -> None:
    assert TRANSITIONS[P] == {S, C, E}
    assert TRANSITIONS[C] == {P}
    assert TRANSITIONS[S] == {C}
    assert TRANSITIONS[E] == {P}
    assert TRANSITIONS[D] == {S, P, C, E, D}


def test_illegal_transition_raises() -> None:
    h = Harness()
    h.join_new()
    group = h.coord.groups["g"]
    assert group.state is C
    with pytest.raises(RuntimeError, match="illegal transition"):
        group.transition_to(E, 0)


# -- joining ----------------------------------------------------------------------------------


def test_lone_member_is_answered_at_once() -> None:
    h = Harness()
    first = h.join(client="cli").result()
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("cli-")
    assert state(h) is E  # a pending id alone does not start a rebalance
    p = h.join("g", first.member_id)
    assert p.done, "a single new member must not wait for group.initial.rebalance.delay.ms"
    r = p.result()
    assert (r.error, r.generation_id, r.leader_id, r.protocol_name, r.protocol_type) == (
        ErrorCode.NONE, 1, first.member_id, "range", "consumer")
    assert [m.member_id for m in r.members] == [first.member_id]
    assert r.members[0].metadata == subscription("t")
    assert state(h) is C
    s = h.sync("g", r.member_id, 1, {r.member_id: assignment("t", 0, 1)})
    assert s.result().error == ErrorCode.NONE
    assert s.result().assignment == assignment("t", 0, 1)
    assert (s.result().protocol_type, s.result().protocol_name) == ("consumer", "range")
    assert state(h) is S
    assert h.coord.heartbeat("g", r.member_id, None, 1) == ErrorCode.NONE


def test_old_clients_join_without_member_id_round_trip() -> None:
    h = Harness()
    r = h.join(require_known=False).result()
    assert r.error == ErrorCode.NONE and r.generation_id == 1 and r.member_id


def test_outstanding_member_ids_hold_the_join_phase_open() -> None:
    h = Harness()
    a = h.join().result().member_id
    b = h.join().result().member_id
    pa = h.join("g", a)
    assert not pa.done, "b's id is still outstanding"
    pb = h.join("g", b)
    assert pa.done and pb.done
    ra, rb = pa.result(), pb.result()
    assert ra.generation_id == rb.generation_id == 1
    assert ra.leader_id == rb.leader_id
    leader, follower = (ra, rb) if ra.members else (rb, ra)
    assert {m.member_id for m in leader.members} == {a, b}
    assert follower.members == []


def test_initial_delay_ends_the_phase_when_a_member_id_is_never_used() -> None:
    h = Harness(GroupConfig(initial_rebalance_delay_ms=3000))
    a = h.join().result().member_id
    h.join()  # handed out, never used
    pa = h.join("g", a)
    h.advance(2999)
    assert not pa.done
    h.advance(1)
    assert pa.result().error == ErrorCode.NONE
    assert [m.member_id for m in pa.result().members] == [a]


def test_without_initial_delay_outstanding_ids_still_hold_the_phase_briefly() -> None:
    """group.initial.rebalance.delay.ms=0 (test set-ups): members that started together land
    in one generation; an id never used costs PENDING_MEMBER_HOLD_MS once."""
    h = Harness(GroupConfig(initial_rebalance_delay_ms=0))
    a = h.join().result().member_id
    b = h.join().result().member_id
    pa = h.join("g", a)
    h.advance(10)
    assert not pa.done, "b's id is still outstanding"
    pb = h.join("g", b)
    assert pa.result().generation_id == pb.result().generation_id == 1
    assert {m.member_id for m in (pa.result().members or pb.result().members)} == {a, b}

    h.join("h")  # handed out, never used
    c = h.join("h").result().member_id
    pc = h.join("h", c)
    h.advance(PENDING_MEMBER_HOLD_MS - 1)
    assert not pc.done
    h.advance(1)
    assert [m.member_id for m in pc.result().members] == [c]

    lone = h.join("k").result().member_id
    assert h.join("k", lone).done, "a lone member waits for nothing"


@pytest.mark.parametrize("delay", [0, 3000])
def test_a_new_group_settles_before_its_first_generation(delay: int) -> None:
    """Members started together arrive a few ms apart: the first, answered at once, would
    form a generation alone and the others would cost a rebalance. The phase ends
    JOIN_SETTLE_MS after the latest arrival once every member is in."""
    h = Harness(GroupConfig(initial_rebalance_delay_ms=delay, join_settle_ms=JOIN_SETTLE_MS))
    a = h.join().result().member_id
    pa = h.join("g", a)
    h.advance(JOIN_SETTLE_MS - 40)
    assert not pa.done
    b = h.join().result().member_id  # a second consumer arrives within the window
    h.advance(10)
    pb = h.join("g", b)
    h.advance(JOIN_SETTLE_MS - 1)
    assert not pa.done and not pb.done
    h.advance(1)
    assert pa.result().generation_id == pb.result().generation_id == 1
    assert {m.member_id for m in (pa.result().members or pb.result().members)} == {a, b}

    lone = h.join("k").result().member_id
    pl = h.join("k", lone)
    h.advance(JOIN_SETTLE_MS - 1)
    assert not pl.done
    h.advance(1)
    assert pl.result().error == ErrorCode.NONE, "a lone member waits the settle time only"


def test_initial_delay_extends_while_new_members_arrive_capped_by_rebalance_timeout() -> None:
    h = Harness(GroupConfig(initial_rebalance_delay_ms=3000))
    a = h.join(rebalance=7000).result().member_id
    h.join()  # an id that is never used keeps the phase open
    pa = h.join("g", a, rebalance=7000)
    h.advance(2000)
    b = h.join(rebalance=7000).result().member_id
    pb = h.join("g", b, rebalance=7000)  # new member during the delay: one more step
    h.advance(1000)  # 3000: first step over, extended by 3000
    assert not pa.done and not pb.done
    h.advance(2999)
    assert not pa.done
    h.advance(1)  # 6000
    assert pa.result().error == pb.result().error == ErrorCode.NONE
    assert pa.result().generation_id == 1


def test_session_timeout_bounds() -> None:
    h = Harness(GroupConfig(min_session_timeout_ms=6000, max_session_timeout_ms=60_000))
    assert h.join(session=5999).result().error == ErrorCode.INVALID_SESSION_TIMEOUT
    assert h.join(session=60_001).result().error == ErrorCode.INVALID_SESSION_TIMEOUT
    assert h.join(session=6000).result().error == ErrorCode.MEMBER_ID_REQUIRED


def test_join_errors() -> None:
    h = Harness()
    assert h.join("").result().error == ErrorCode.INVALID_GROUP_ID
    assert h.join("nope", "someone").result().error == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.join(protocol_type="").result().error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(protocols=[]).result().error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    h.stable_group(1)
    assert h.join(protocol_type="connect").result().error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    other = [("roundrobin", b"")]
    assert h.join(protocols=other).result().error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_group_max_size() -> None:
    h = Harness(GroupConfig(max_size=1))
    h.stable_group(1)
    r = h.join(require_known=False).result()
    assert r.error == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_protocol_selection_votes_among_protocols_everyone_supports() -> None:
    h = Harness()
    ids = [h.join().result().member_id for _ in range(3)]
    prefs = [[("range", b"1"), ("roundrobin", b"1"), ("sticky", b"1")],
             [("sticky", b"2"), ("roundrobin", b"2")],
             [("roundrobin", b"3"), ("sticky", b"3")]]
    pendings = [h.join("g", mid, protocols=p) for mid, p in zip(ids, prefs, strict=True)]
    results = [p.result() for p in pendings]
    # candidates: roundrobin, sticky; first choices among them: roundrobin, sticky, roundrobin
    assert {r.protocol_name for r in results} == {"roundrobin"}
    leader = next(r for r in results if r.members)
    assert sorted(m.metadata for m in leader.members) == [b"1", b"2", b"3"]


def test_a_protocol_listed_twice_counts_once() -> None:
    """A member naming a protocol twice must not make the group look as if everyone
    supported it (the fuzzer's F4: the join phase then found no common protocol, raised,
    and left the group stuck in PreparingRebalance)."""
    h = Harness()
    a = h.join(protocols=[("a", b"1")]).result().member_id
    b = h.join(protocols=[("a", b"2"), ("a", b"2")]).result().member_id
    pa = h.join("g", a, protocols=[("a", b"1")])
    pb = h.join("g", b, protocols=[("a", b"2"), ("a", b"2")])
    assert pa.result().error == ErrorCode.NONE and pb.result().error == ErrorCode.NONE
    assert pa.result().protocol_name == pb.result().protocol_name == "a"
    c = h.join(protocols=[("b", b"3"), ("b", b"3")]).result().member_id
    assert h.join("g", c, protocols=[("b", b"3"), ("b", b"3")]).result().error == (
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL)


# -- rebalancing ----------------------------------------------------------------------------


def test_new_member_triggers_rebalance_and_heartbeats_say_so() -> None:
    h = Harness()
    (r1,) = h.stable_group(1)
    late = h.join().result().member_id
    p2 = h.join("g", late)
    assert not p2.done and state(h) is P
    assert h.coord.heartbeat("g", r1.member_id, None, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.sync("g", r1.member_id, 1).result().error == ErrorCode.REBALANCE_IN_PROGRESS
    p1 = h.join("g", r1.member_id)
    assert p1.done and p2.done
    assert p1.result().generation_id == p2.result().generation_id == 2
    assert p1.result().leader_id == r1.member_id  # the old leader keeps leading
    assert h.coord.heartbeat("g", r1.member_id, None, 1) == ErrorCode.ILLEGAL_GENERATION
    assert h.coord.heartbeat("g", "ghost", None, 2) == ErrorCode.UNKNOWN_MEMBER_ID


def test_session_timeout_evicts_a_silent_member() -> None:
    h = Harness()
    r1, r2 = h.stable_group(2, session=10_000)
    for _ in range(2):
        h.advance(4000)
        assert h.coord.heartbeat("g", r1.member_id, None, 1) == ErrorCode.NONE
    h.advance(1999)
    assert state(h) is S
    h.advance(1)  # r2 has been silent for its whole 10 s session
    assert state(h) is P
    assert r2.member_id not in h.coord.groups["g"].members
    p1 = h.join("g", r1.member_id)
    assert p1.result().generation_id == 2
    assert [m.member_id for m in p1.result().members] == [r1.member_id]


def test_heartbeats_keep_a_member_alive_indefinitely() -> None:
    h = Harness()
    (r1,) = h.stable_group(1, session=10_000)
    for _ in range(20):
        h.advance(9000)
        assert h.coord.heartbeat("g", r1.member_id, None, 1) == ErrorCode.NONE
    assert state(h) is S


def test_rebalance_timeout_drops_members_that_do_not_rejoin() -> None:
    h = Harness()
    r1, r2 = h.stable_group(2, rebalance=20_000, session=30_000)
    leader = r1 if r1.members else r2
    other = r2 if leader is r1 else r1
    p = h.join("g", leader.member_id, rebalance=20_000, session=30_000)  # leader forces a rebalance
    assert not p.done
    h.advance(19_999)
    assert not p.done
    h.advance(1)
    assert p.result().generation_id == 2
    assert [m.member_id for m in p.result().members] == [leader.member_id]
    assert h.coord.heartbeat("g", other.member_id, None, 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_waiting_in_join_is_not_a_session_expiry() -> None:
    h = Harness()
    r1, r2 = h.stable_group(2, session=6000, rebalance=60_000)
    p1 = h.join("g", r1.member_id, session=6000, rebalance=60_000)
    h.advance(30_000)  # r1 waits in JoinGroup well past its session; r2 is silent
    assert r1.member_id in h.coord.groups["g"].members
    p2 = h.join("g", r2.member_id, session=6000, rebalance=60_000)
    assert p1.done and p2.done and p1.result().generation_id == 2


def test_new_member_join_times_out_after_five_minutes() -> None:
    h = Harness()
    r1, r2 = h.stable_group(2, session=10_000, rebalance=600_000)
    newcomer = h.join(session=10_000, rebalance=600_000).result().member_id
    pn = h.join("g", newcomer, session=10_000, rebalance=600_000)
    p1 = h.join("g", r1.member_id, session=10_000, rebalance=600_000)
    waited = 0
    while waited < NEW_MEMBER_JOIN_TIMEOUT_MS - 9000:
        h.advance(9000)
        waited += 9000
        # r2 stays alive without rejoining: the phase lasts up to the 600 s rebalance timeout
        assert h.coord.heartbeat("g", r2.member_id, None, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    assert not pn.done
    h.advance(NEW_MEMBER_JOIN_TIMEOUT_MS - waited)
    assert pn.result().error == ErrorCode.UNKNOWN_MEMBER_ID
    assert newcomer not in h.coord.groups["g"].members
    assert not p1.done  # r2 is still expected


def test_sync_timeout_removes_members_that_never_sync() -> None:
    h = Harness()
    ids = [h.join(rebalance=20_000).result().member_id for _ in range(2)]
    results = [p.result() for p in [h.join("g", m, rebalance=20_000) for m in ids]]
    leader = next(r for r in results if r.members)
    follower = next(r for r in results if not r.members)
    s = h.sync("g", leader.member_id, 1, {r.member_id: b"" for r in results})
    assert s.result().error == ErrorCode.NONE and state(h) is S
    for _ in range(2):
        h.advance(9000)
        assert h.coord.heartbeat("g", leader.member_id, None, 1) == ErrorCode.NONE
        assert h.coord.heartbeat("g", follower.member_id, None, 1) == ErrorCode.NONE
    assert follower.member_id in h.coord.groups["g"].members
    h.advance(2000)  # the follower never sent SyncGroup within the 20 s rebalance timeout
    assert follower.member_id not in h.coord.groups["g"].members
    assert state(h) is P


def test_follower_sync_waits_for_leader_and_gets_exactly_its_bytes() -> None:
    h = Harness()
    ids = [h.join().result().member_id for _ in range(3)]
    results = [p.result() for p in [h.join("g", m) for m in ids]]
    leader = next(r for r in results if r.members)
    followers = [r for r in results if not r.members]
    waits = [h.sync("g", f.member_id, 1) for f in followers]
    assert not any(w.done for w in waits)
    blob = b"\x00\x01opaque-not-a-consumer-assignment"
    h.sync("g", leader.member_id, 1, {followers[0].member_id: blob})  # leaves one out
    assert waits[0].result().assignment == blob
    assert waits[1].result().assignment == EMPTY_CONSUMER_ASSIGNMENT
    assert waits[1].result().error == ErrorCode.NONE
    # a SyncGroup after the group is stable returns the stored assignment
    again = h.sync("g", followers[0].member_id, 1).result()
    assert again.assignment == blob


def test_sync_checks() -> None:
    h = Harness()
    (r,) = h.stable_group(1)
    mid = r.member_id
    assert h.sync("", mid, 1).result().error == ErrorCode.INVALID_GROUP_ID
    assert h.sync("nope", mid, 1).result().error == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync("g", "ghost", 1).result().error == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync("g", mid, 7).result().error == ErrorCode.ILLEGAL_GENERATION
    bad_type = h.sync("g", mid, 1, protocol_type="connect").result()
    assert bad_type.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    bad_name = h.sync("g", mid, 1, protocol_name="roundrobin").result()
    assert bad_name.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    ok = h.sync("g", mid, 1, protocol_type="consumer", protocol_name="range").result()
    assert ok.error == ErrorCode.NONE


def test_a_join_during_completing_rebalance_fails_waiting_syncs() -> None:
    h = Harness()
    ids = [h.join().result().member_id for _ in range(2)]
    results = [p.result() for p in [h.join("g", m) for m in ids]]
    follower = next(r for r in results if not r.members)
    wait = h.sync("g", follower.member_id, 1)
    h.join("g", follower.member_id, protocols=[("range", subscription("t", "u"))])
    assert wait.result().error == ErrorCode.REBALANCE_IN_PROGRESS
    assert state(h) is P


def test_failed_assignment_write_fails_the_sync_and_rebalances() -> None:
    h = Harness()
    r = h.join_new().result()
    h.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    s = h.sync("g", r.member_id, 1, {r.member_id: b"x"})
    assert s.result().error == ErrorCode.NOT_COORDINATOR
    assert state(h) in (P, C)


# -- leaving ---------------------------------------------------------------------------------


def test_batch_leave() -> None:
    h = Harness()
    r1, r2 = h.stable_group(2)
    res = h.coord.leave_group("g", [LeavingMember(r1.member_id), LeavingMember("ghost"),
                                    LeavingMember(r2.member_id)])
    assert res.error == ErrorCode.NONE
    assert [(m.member_id, m.error) for m in res.members] == [
        (r1.member_id, ErrorCode.NONE), ("ghost", ErrorCode.UNKNOWN_MEMBER_ID),
        (r2.member_id, ErrorCode.NONE)]
    group = h.coord.groups["g"]
    assert group.state is E and group.generation_id == 2 and not group.members
    assert h.coord.leave_group("", []).error == ErrorCode.INVALID_GROUP_ID
    missing = h.coord.leave_group("nope", [LeavingMember("x")])
    assert missing.members[0].error == ErrorCode.UNKNOWN_MEMBER_ID


def test_leave_of_one_member_lets_the_rest_rebalance() -> None:
    h = Harness()
    r1, r2 = h.stable_group(2)
    h.coord.leave_group("g", [LeavingMember(r2.member_id)])
    assert state(h) is P
    p = h.join("g", r1.member_id)
    assert p.result().generation_id == 2 and p.result().leader_id == r1.member_id


def test_leaving_pending_member_releases_the_join_phase() -> None:
    h = Harness()
    a = h.join().result().member_id
    b = h.join().result().member_id
    pa = h.join("g", a)
    assert not pa.done
    res = h.coord.leave_group("g", [LeavingMember(b)])
    assert res.members[0].error == ErrorCode.NONE
    assert pa.result().error == ErrorCode.NONE


# -- static membership ---------------------------------------------------------------------


def test_static_member_restart_keeps_assignment_without_rebalance() -> None:
    h = Harness()
    ra = h.join(instance="i-a", client="a").result()  # static: no MEMBER_ID_REQUIRED
    assert ra.generation_id == 1
    pb = h.join(instance="i-b", client="b")  # b's arrival rebalances
    ra = h.join("g", ra.member_id, instance="i-a").result()
    rb = pb.result()
    assert rb.member_id.startswith("i-b-")
    gen = 2
    assert ra.generation_id == rb.generation_id == gen
    leader = ra if ra.leader_id == ra.member_id else rb
    h.sync("g", leader.member_id, gen, {ra.member_id: assignment("t", 0),
                                         rb.member_id: assignment("t", 1)},
           instance="i-a" if leader is ra else "i-b")
    follower = rb if leader is ra else ra
    h.sync("g", follower.member_id, gen, instance="i-b" if follower is rb else "i-a")
    assert state(h) is S
    # b restarts: unknown member id, same instance id
    again = h.join(instance="i-b", client="b").result()
    assert again.error == ErrorCode.NONE
    assert again.member_id != rb.member_id
    assert again.generation_id == gen and state(h) is S
    s = h.sync("g", again.member_id, gen, instance="i-b").result()
    assert s.assignment == assignment("t", 1)
    # the old incarnation is fenced
    assert h.coord.heartbeat("g", rb.member_id, "i-b", gen) == ErrorCode.FENCED_INSTANCE_ID
    offsets = {("t", 1): om(5)}
    fenced = h.coord.commit_offsets("g", rb.member_id, "i-b", gen, offsets).result()
    assert fenced == {("t", 1): ErrorCode.FENCED_INSTANCE_ID}
    assert h.coord.heartbeat("g", again.member_id, "i-b", gen) == ErrorCode.NONE
    assert h.coord.heartbeat("g", again.member_id, "i-zzz", gen) == ErrorCode.UNKNOWN_MEMBER_ID


def test_static_leader_restart_skips_assignment_on_v9() -> None:
    h = Harness()
    r = h.join(instance="i-a").result()
    h.sync("g", r.member_id, 1, {r.member_id: b"A"}, instance="i-a")
    again = h.join(instance="i-a", skip=True).result()
    assert again.error == ErrorCode.NONE
    assert again.leader_id == again.member_id and again.skip_assignment
    assert [m.member_id for m in again.members] == [again.member_id]
    old_client = h.join(instance="i-a").result()
    assert old_client.leader_id == again.member_id != old_client.member_id
    assert not old_client.skip_assignment and old_client.members == []


def test_duplicate_static_member_waiting_in_join_is_fenced() -> None:
    h = Harness()
    a = h.join(instance="i-a").result()
    pb = h.join(instance="i-b")
    a = h.join("g", a.member_id, instance="i-a").result()
    b = pb.result()
    pn = h.join(require_known=False)  # a newcomer starts a rebalance
    first = h.join("g", a.member_id, instance="i-a")  # a rejoins; b has not yet
    assert not first.done
    dup = h.join(instance="i-a")  # a second process with the same instance id
    assert first.result().error == ErrorCode.FENCED_INSTANCE_ID
    assert not dup.done
    pb2 = h.join("g", b.member_id, instance="i-b")
    assert dup.result().error == pn.result().error == pb2.result().error == ErrorCode.NONE
    assert dup.result().member_id != a.member_id
    assert h.coord.groups["g"].static_members["i-a"] == dup.result().member_id
    assert h.sync("g", a.member_id, 3, instance="i-a").result().error == (
        ErrorCode.FENCED_INSTANCE_ID)


def test_static_member_is_kept_through_a_rebalance_it_sleeps_through() -> None:
    h = Harness()
    a = h.join(instance="i-a", session=60_000, rebalance=10_000).result()
    h.sync("g", a.member_id, 1, {a.member_id: b"A"}, instance="i-a")
    d = h.join(require_known=False, session=60_000, rebalance=10_000)
    h.advance(10_000)  # the static member does not rejoin within the rebalance timeout
    r = d.result()
    assert r.error == ErrorCode.NONE and r.generation_id == 2
    assert a.member_id in h.coord.groups["g"].members  # static: kept, not dropped
    assert r.leader_id == r.member_id  # a joined member took over leadership


def test_admin_removes_static_member_by_instance_id() -> None:
    h = Harness()
    a = h.join(instance="i-a").result()
    h.sync("g", a.member_id, 1, {a.member_id: b"A"}, instance="i-a")
    res = h.coord.leave_group("g", [LeavingMember("", "i-a"), LeavingMember("", "i-x")])
    assert [m.error for m in res.members] == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    assert state(h) is E


# -- offsets ---------------------------------------------------------------------------------


def test_simple_group_commits_and_fetches() -> None:
    h = Harness()
    p = h.coord.commit_offsets("simple", "", None, -1, {("t", 0): om(42, "meta"), ("t", 1): om(7)})
    h.flush()
    assert p.result() == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NONE}
    err, got = h.coord.fetch_offsets("simple", [("t", 0), ("t", 2)])
    assert err == ErrorCode.NONE
    assert (got[("t", 0)].offset, got[("t", 0)].metadata) == (42, "meta")
    assert got[("t", 2)].offset == -1
    _, everything = h.coord.fetch_offsets("simple", None)
    assert sorted(everything) == [("t", 0), ("t", 1)]
    _, unknown = h.coord.fetch_offsets("nobody", [("t", 0)])
    assert unknown[("t", 0)].offset == -1 and unknown[("t", 0)].error == ErrorCode.NONE
    assert h.coord.groups["simple"].state is E


def test_commit_is_acknowledged_only_after_the_append() -> None:
    h = Harness(hold=True)
    p = h.coord.commit_offsets("g", "", None, -1, {("t", 0): om(1)})
    h.flush()
    assert not p.done
    assert h.coord.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == -1
    _, stable = h.coord.fetch_offsets("g", [("t", 0)], require_stable=True)
    assert stable[("t", 0)].error == ErrorCode.UNSTABLE_OFFSET_COMMIT
    h.release()
    assert p.result() == {("t", 0): ErrorCode.NONE}
    assert h.coord.fetch_offsets("g", [("t", 0)], require_stable=True)[1][("t", 0)].offset == 1


def test_failed_append_fails_the_commit_and_keeps_the_old_offset() -> None:
    h = Harness()
    h.coord.commit_offsets("g", "", None, -1, {("t", 0): om(1)})
    h.flush()
    h.fail_with = ErrorCode.MESSAGE_TOO_LARGE
    p = h.coord.commit_offsets("g", "", None, -1, {("t", 0): om(2)})
    h.flush()
    assert p.result() == {("t", 0): ErrorCode.INVALID_COMMIT_OFFSET_SIZE}
    assert h.coord.fetch_offsets("g", [("t", 0)], require_stable=True)[1][("t", 0)].offset == 1


def test_commit_generation_and_member_checks() -> None:
    h = Harness()
    r1, r2 = h.stable_group(2)
    o = {("t", 0): om(3)}

    def commit(member: str, gen: int, group: str = "g") -> ErrorCode:
        p = h.coord.commit_offsets(group, member, None, gen, o)
        h.flush()
        return p.result()[("t", 0)]

    assert commit(r1.member_id, 1) == ErrorCode.NONE
    assert commit(r1.member_id, 0) == ErrorCode.ILLEGAL_GENERATION
    assert commit("ghost", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit("", -1) == ErrorCode.UNKNOWN_MEMBER_ID  # non-empty group: members only
    assert commit("x", 3, group="no-such-group") == ErrorCode.ILLEGAL_GENERATION
    # PreparingRebalance: the previous generation may still commit
    h.join("g", r1.member_id)
    assert state(h) is P
    assert commit(r2.member_id, 1) == ErrorCode.NONE
    # CompletingRebalance: the new generation has no assignment yet
    h.join("g", r2.member_id)
    assert state(h) is C
    assert commit(r2.member_id, 2) == ErrorCode.REBALANCE_IN_PROGRESS


def test_metadata_too_large_is_per_partition() -> None:
    h = Harness(GroupConfig(offset_metadata_max_bytes=4))
    p = h.coord.commit_offsets("g", "", None, -1, {("t", 0): om(1, "12345"), ("t", 1): om(1, "1234")})
    h.flush()
    assert p.result() == {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE, ("t", 1): ErrorCode.NONE}
    only_bad = h.coord.commit_offsets("g", "", None, -1, {("t", 0): om(1, "12345")})
    assert only_bad.result() == {("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE}


def test_offsets_of_an_empty_group_expire_then_the_group_goes() -> None:
    h = Harness(GroupConfig(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=10_000))
    (r,) = h.stable_group(1)
    p = h.coord.commit_offsets("g", r.member_id, None, 1, {("t", 0): om(9)})
    h.flush()
    assert p.result()[("t", 0)] == ErrorCode.NONE
    h.advance(120_000)  # a stable, subscribed group keeps its offsets however old
    assert h.coord.heartbeat("g", r.member_id, None, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    h2 = Harness(GroupConfig(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=10_000))
    (r,) = h2.stable_group(1)
    h2.coord.commit_offsets("g", r.member_id, None, 1, {("t", 0): om(9)})
    h2.flush()
    for _ in range(10):
        h2.advance(5000)
        h2.coord.heartbeat("g", r.member_id, None, 1)
    assert h2.coord.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 9
    h2.coord.leave_group("g", [LeavingMember(r.member_id)])
    assert h2.coord.groups["g"].state is E
    h2.advance(50_000)
    assert h2.coord.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 9
    h2.advance(20_000)  # 60 s after the group became empty
    assert "g" not in h2.coord.groups
    assert h2.coord.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == -1


def test_stable_consumer_group_expires_only_unsubscribed_topics() -> None:
    h = Harness(GroupConfig(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=10_000))
    (r,) = h.stable_group(1, protocols=[("range", subscription("t"))])
    p = h.coord.commit_offsets("g", r.member_id, None, 1, {("t", 0): om(1), ("old", 0): om(2)})
    h.flush()
    assert set(p.result().values()) == {ErrorCode.NONE}
    for _ in range(8):
        h.advance(9000)
        h.coord.heartbeat("g", r.member_id, None, 1)
    _, got = h.coord.fetch_offsets("g", None)
    assert sorted(got) == [("t", 0)]


# -- admin -----------------------------------------------------------------------------------


def test_describe_list_delete() -> None:
    h = Harness()
    (r,) = h.stable_group(1, client="cli")
    h.coord.commit_offsets("simple", "", None, -1, {("t", 0): om(1)})
    h.flush()
    d = h.coord.describe_group("g")
    assert (d.error, d.state, d.protocol_type, d.protocol) == (
        ErrorCode.NONE, "Stable", "consumer", "range")
    (m,) = d.members
    assert (m.member_id, m.client_id, m.client_host) == (r.member_id, "cli", "/127.0.0.1")
    assert m.metadata == subscription("t") and m.assignment == assignment("t", 0)
    dead = h.coord.describe_group("none")
    assert (dead.error, dead.state, dead.members) == (ErrorCode.NONE, "Dead", [])
    listed = {(g.group_id, g.protocol_type, g.state) for g in h.coord.list_groups()}
    assert listed == {("g", "consumer", "Stable"), ("simple", "", "Empty")}
    assert [g.group_id for g in h.coord.list_groups(["EMPTY"])] == ["simple"]
    assert h.coord.list_groups(types=["consumer"]) == []
    assert len(h.coord.list_groups(types=["Classic"])) == 2
    res = h.coord.delete_groups(["g", "simple", "none"])
    assert res == {"g": ErrorCode.NON_EMPTY_GROUP, "simple": ErrorCode.NONE,
                   "none": ErrorCode.GROUP_ID_NOT_FOUND}
    assert "simple" not in h.coord.groups


def test_offset_delete() -> None:
    h = Harness()
    (r,) = h.stable_group(1, protocols=[("range", subscription("t"))])
    h.coord.commit_offsets("g", r.member_id, None, 1, {("t", 0): om(1), ("u", 0): om(2)})
    h.flush()
    err, parts = h.coord.delete_offsets("g", [("t", 0), ("u", 0)])
    assert err == ErrorCode.NONE
    assert parts == {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): ErrorCode.NONE}
    assert h.coord.fetch_offsets("g", [("u", 0)])[1][("u", 0)].offset == -1
    assert h.coord.delete_offsets("none", [("t", 0)])[0] == ErrorCode.GROUP_ID_NOT_FOUND
    assert h.coord.delete_offsets("", [("t", 0)])[0] == ErrorCode.INVALID_GROUP_ID
    h.coord.commit_offsets("s", "", None, -1, {("t", 0): om(1)})
    h.flush()
    assert h.coord.delete_offsets("s", [("t", 0)]) == (ErrorCode.NONE, {("t", 0): ErrorCode.NONE})
    assert "s" not in h.coord.groups  # empty and offset-less: gone


# -- persistence -----------------------------------------------------------------------------


def test_replay_restores_offsets_groups_and_static_members() -> None:
    h = Harness()
    a = h.join(instance="i-a").result()
    h.sync("g", a.member_id, 1, {a.member_id: assignment("t", 0)}, instance="i-a")
    h.coord.commit_offsets("g", a.member_id, "i-a", 1, {("t", 0): om(10, "m")})
    h.coord.commit_offsets("simple", "", None, -1, {("t", 0): om(1), ("t", 1): om(2)})
    h.flush()
    h.coord.commit_offsets("simple", "", None, -1, {("t", 0): om(5)})
    h.flush()
    h.coord.delete_offsets("simple", [("t", 1)])
    h.flush()
    gone = h.coord.commit_offsets("gone", "", None, -1, {("t", 0): om(1)})
    h.flush()
    assert gone.result()[("t", 0)] == ErrorCode.NONE
    h.coord.delete_groups(["gone"])
    h.flush()

    back = h.replay()
    assert back.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 10
    assert back.fetch_offsets("g", [("t", 0)])[1][("t", 0)].metadata == "m"
    _, simple = back.fetch_offsets("simple", None)
    assert {tp: f.offset for tp, f in simple.items()} == {("t", 0): 5}
    assert "gone" not in back.groups
    g = back.groups["g"]
    assert (g.state, g.generation_id, g.protocol_name, g.leader_id) == (S, 1, "range", a.member_id)
    assert g.static_members == {"i-a": a.member_id}
    assert g.members[a.member_id].assignment == assignment("t", 0)
    # the member carries on against the restarted coordinator
    assert back.heartbeat("g", a.member_id, "i-a", 1) == ErrorCode.NONE


def test_replayed_members_must_heartbeat_within_their_session() -> None:
    h = Harness()
    (r,) = h.stable_group(1, session=10_000)
    back = h.replay()
    h.clock.t += 10_000
    back.on_timer(h.clock.t)
    assert back.groups["g"].state in (P, E)
    assert back.heartbeat("g", r.member_id, None, 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_empty_group_metadata_is_written_when_the_last_member_leaves() -> None:
    h = Harness()
    (r,) = h.stable_group(1)
    h.coord.leave_group("g", [LeavingMember(r.member_id)])
    h.flush()
    back = h.replay()
    g = back.groups["g"]
    assert (g.state, g.generation_id, g.members) == (E, 2, {})


def test_deleted_topics_lose_their_offsets_in_every_group() -> None:
    h = Harness()
    for g in ("a", "b"):
        h.coord.commit_offsets(g, "", None, -1, {("gone", 0): om(1), ("kept", 0): om(2)})
    h.coord.commit_offsets("c", "", None, -1, {("gone", 1): om(3)})
    h.flush()
    assert h.coord.delete_topic_offsets({"gone"}) == 3
    h.flush()
    for g in ("a", "b"):
        assert sorted(h.coord.fetch_offsets(g, None)[1]) == [("kept", 0)]
    assert "c" not in h.coord.groups  # nothing left: the group goes
    back = h.replay()
    assert sorted(back.fetch_offsets("a", None)[1]) == [("kept", 0)]
    assert "c" not in back.groups
