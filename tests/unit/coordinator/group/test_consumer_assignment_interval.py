"""group.consumer.assignment.interval.ms (Kafka 4.3+) and Kafka 4.4's reconciliation of a
member whose subscription changed: a consumer group's target assignment is computed at most
once per interval (from the heartbeat that finds the interval passed; never by a timer), a
member reconciles towards the last target meanwhile, and a member that left a topic gives it
up at once. What a Kafka 4.4.0 broker answers to the same heartbeats:
`python -m compat_tests.probe_kip848 --cases subscription-change,rejoin-after-leave`."""

from __future__ import annotations

from group_testutil import FakeClock
from test_consumer_group import CHarness, T, U, owned, parts

from odradek.coordinator.group.consumer.coordinator import ConsumerConfig
from odradek.coordinator.group.consumer.model import (
    ConsumerGroupMember,
    MemberState,
    reconcile,
)
from odradek.coordinator.group.coordinator import GroupCoordinator
from odradek.wire import ErrorCode

INTERVAL = 1000


def harness(interval: int = INTERVAL) -> CHarness:
    return CHarness(cconfig=ConsumerConfig(assignment_interval_ms=interval))


def all_of(topic: object, n: int) -> set[tuple[object, int]]:
    return {(topic, p) for p in range(n)}


def test_a_new_group_gets_its_first_target_at_once() -> None:
    h = harness()
    r = h.hb()
    assert (r.error, r.member_epoch) == (ErrorCode.NONE, 1)
    assert parts(r) == all_of(T, 6)
    assert h.cg().assignment_timestamp == h.clock.t


def test_the_target_is_computed_again_only_after_the_interval() -> None:
    h = harness()
    a = h.hb()
    h.advance(10)
    # A new topic in the subscription: the group epoch moves, the target does not yet.
    b = h.hb(member_epoch=1, subscribed_topic_names=["t", "u"], topic_partitions=owned(a))
    assert b.error == ErrorCode.NONE and b.member_epoch == 1
    assert b.assignment is None or parts(b) == all_of(T, 6)
    cg = h.cg()
    assert (cg.group_epoch, cg.assignment_epoch, cg.state.value) == (2, 1, "Assigning")
    # Still within the interval: nothing new.
    h.advance(INTERVAL - 20)
    c = h.hb(member_epoch=1, topic_partitions=owned(a))
    assert (c.member_epoch, c.assignment) == (1, None)
    # The first heartbeat after it computes the target and brings u's partitions.
    h.advance(10)
    d = h.hb(member_epoch=1, topic_partitions=owned(a))
    assert d.member_epoch == 2 and parts(d) == all_of(T, 6) | all_of(U, 2)
    assert (h.cg().assignment_epoch, h.cg().assignment_timestamp) == (2, h.clock.t)


def test_interval_zero_computes_the_target_at_every_change() -> None:
    h = harness(0)
    a = h.hb()
    b = h.hb(member_epoch=1, subscribed_topic_names=["t", "u"], topic_partitions=owned(a))
    assert b.member_epoch == 2 and parts(b) == all_of(T, 6) | all_of(U, 2)


def test_a_member_gives_up_a_topic_it_left_before_the_target_moves() -> None:
    h = harness()
    a = h.hb(subscribed_topic_names=["t", "u"])
    assert parts(a) == all_of(T, 6) | all_of(U, 2)
    h.advance(10)
    # t leaves the subscription: revoked in this answer (the member still owns it), the
    # epoch kept, though the target (computed 10 ms ago) still gives t to the member.
    b = h.hb(member_epoch=1, subscribed_topic_names=["u"], topic_partitions=owned(a))
    assert (b.member_epoch, parts(b)) == (1, all_of(U, 2))
    m = h.cg().members["m1"]
    assert m.state is MemberState.UNREVOKED_PARTITIONS and m.pending_revocation == {T: frozenset(range(6))}
    assert h.cg().targets["m1"][T] == frozenset(range(6))
    # Revoked: stable again at the last target's epoch, and t is not given back.
    c = h.hb(member_epoch=1, topic_partitions=owned(b))
    assert (c.member_epoch, c.assignment) == (1, None)
    assert h.cg().members["m1"].state is MemberState.STABLE
    h.advance(INTERVAL)
    d = h.hb(member_epoch=1, topic_partitions=owned(b))
    assert d.member_epoch == 2 and d.assignment is None and h.cg().targets["m1"] == {U: frozenset({0, 1})}


def test_a_member_that_no_longer_lists_the_topic_just_drops_it() -> None:
    h = harness()
    a = h.hb(subscribed_topic_names=["t", "u"])
    h.advance(10)
    # The heartbeat says the member owns only u already: nothing to wait for.
    u_only = [(tid, ps) for tid, ps in owned(a) if tid == U]
    b = h.hb(member_epoch=1, subscribed_topic_names=["u"], topic_partitions=u_only)
    assert (b.member_epoch, parts(b)) == (1, all_of(U, 2))
    m = h.cg().members["m1"]
    assert m.state is MemberState.STABLE and m.pending_revocation == {}


def test_a_rejoin_to_the_emptied_group_gets_a_target_at_once() -> None:
    h = harness()
    a = h.hb()
    assert a.member_epoch == 1
    # The last member leaves: the group's (empty) target moves to the new group epoch with
    # timestamp 0 (Kafka 4.4's consumerGroupFenceMembers), ...
    assert h.hb(member_epoch=-1).error == ErrorCode.NONE
    cg = h.cg()
    assert (cg.group_epoch, cg.assignment_epoch, cg.assignment_timestamp) == (2, 2, 0)
    # ... so a member back at once (librdkafka's unsubscribe/subscribe) gets its partitions
    # in the join's answer, not an interval after the first join's target.
    back = h.hb()
    assert (back.error, back.member_epoch, parts(back)) == (ErrorCode.NONE, 3, all_of(T, 6))
    assert h.replay().consumer_group("g").assignment_timestamp == h.clock.t  # type: ignore[union-attr]


def test_a_join_within_the_interval_of_a_group_with_members_waits() -> None:
    h = harness()
    a = h.hb()
    b = h.hb(member_id="m2")
    # m2 joined 0 ms after the group's first target: it is at the last target's epoch with
    # nothing, and m1 keeps everything until the interval passed.
    assert (b.member_epoch, parts(b)) == (1, set())
    assert h.hb(member_epoch=1, topic_partitions=owned(a)).assignment is None
    h.advance(INTERVAL)
    a2 = h.hb(member_epoch=1, topic_partitions=owned(a))
    assert a2.member_epoch == 1 and len(parts(a2)) == 3  # revokes half for m2


def test_the_assignment_timestamp_survives_a_restart() -> None:
    h = harness()
    a = h.hb()
    h.advance(10)
    h.hb(member_epoch=1, subscribed_topic_names=["t", "u"], topic_partitions=owned(a))
    reloaded = h.replay()
    cg = reloaded.consumer_group("g")
    assert cg is not None and cg.assignment_timestamp == h.clock.t - 10
    # The restarted coordinator keeps to the interval as well.
    h.coord = reloaded
    r = h.hb(member_epoch=1, topic_partitions=owned(a))
    assert (r.member_epoch, r.assignment) == (1, None)
    h.advance(INTERVAL)
    assert h.hb(member_epoch=1, topic_partitions=owned(a)).member_epoch == 2


def test_an_upgraded_classic_group_computes_its_target_at_once() -> None:
    h = harness()
    results = h.stable_group(2)
    # The conversion writes assignment timestamp 0 (as Kafka): the joining consumer member
    # gets a target computed in its own heartbeat, not a second later.
    r = h.hb(member_id="m3")
    assert r.error == ErrorCode.NONE
    cg = h.cg()
    assert cg.assignment_epoch == cg.group_epoch and cg.assignment_timestamp == h.clock.t
    assert set(cg.targets) == {results[0].member_id, results[1].member_id, "m3"}


# -- reconcile (Kafka 4.4's CurrentAssignmentBuilder) -------------------------------------------

def free(topic: object, partition: int) -> int:
    return -1


def test_reconcile_gives_no_partition_of_a_topic_the_member_left() -> None:
    m = ConsumerGroupMember("m", member_epoch=1, previous_member_epoch=0,
                            assigned={T: frozenset({0})})
    target = {T: frozenset({0, 1}), U: frozenset({0})}
    nxt = reconcile(m, 2, target, free, owned=None, subscribed={U})
    # t is revoked first (the member does not say it dropped it), u waits for that.
    assert nxt.state is MemberState.UNREVOKED_PARTITIONS
    assert (nxt.member_epoch, nxt.assigned, nxt.pending_revocation) == (1, {}, {T: frozenset({0})})
    done = reconcile(nxt, 2, target, free, owned={}, subscribed={U})
    assert (done.state, done.member_epoch, done.assigned) == (MemberState.STABLE, 2, {U: frozenset({0})})


def test_reconcile_keeps_the_epoch_when_a_revoking_member_must_revoke_again() -> None:
    # Kafka 4.4 (unlike 3.x's memberEpoch + 1): a member that let go of its revoked
    # partitions but must revoke more for a newer target stays at its epoch.
    m = ConsumerGroupMember("m", member_epoch=3, previous_member_epoch=3,
                            state=MemberState.UNREVOKED_PARTITIONS,
                            assigned={T: frozenset({0, 1})}, pending_revocation={T: frozenset({2})})
    nxt = reconcile(m, 5, {T: frozenset({0})}, free, owned={T: frozenset({0, 1})})
    assert nxt.state is MemberState.UNREVOKED_PARTITIONS
    assert (nxt.member_epoch, nxt.assigned, nxt.pending_revocation) == (3, {T: frozenset({0})},
                                                                         {T: frozenset({1})})


def test_reconcile_may_give_back_a_partition_the_member_itself_is_revoking() -> None:
    m = ConsumerGroupMember("m", member_epoch=3, previous_member_epoch=3,
                            state=MemberState.UNREVOKED_PARTITIONS,
                            assigned={T: frozenset({0})}, pending_revocation={T: frozenset({1})})

    def held_by_m(topic: object, partition: int) -> int:
        return 3 if (topic, partition) in {(T, 0), (T, 1)} else -1

    # The member acknowledged (owns only 0); the target gives 1 back: not unreleased.
    nxt = reconcile(m, 4, {T: frozenset({0, 1})}, held_by_m, owned={T: frozenset({0})})
    assert (nxt.state, nxt.member_epoch, nxt.assigned) == (MemberState.STABLE, 4, {T: frozenset({0, 1})})


def test_reconcile_drops_left_topics_of_a_reconciled_member_only_when_asked() -> None:
    m = ConsumerGroupMember("m", member_epoch=2, previous_member_epoch=1,
                            assigned={T: frozenset({0}), U: frozenset({0})})
    target = {T: frozenset({0}), U: frozenset({0})}
    assert reconcile(m, 2, target, free, owned=None, subscribed={U}) is m
    nxt = reconcile(m, 2, target, free, owned=None, subscribed={U}, subscription_changed=True)
    assert nxt.state is MemberState.UNREVOKED_PARTITIONS and nxt.member_epoch == 2
    assert (nxt.assigned, nxt.pending_revocation) == ({U: frozenset({0})}, {T: frozenset({0})})


def test_fake_clock_is_not_at_zero() -> None:
    # Timestamp 0 means "never computed": the tests' clock must not start there.
    assert FakeClock().now_ms() > 0


def test_librdkafkas_rejoin_without_a_full_request_is_refused_and_logged() -> None:
    # What librdkafka 2.12 sends when it is left in join-state steady after a leave with a
    # subscription pending (0045_subscribe_many_updates): epoch 0 and its old member id, but
    # no RebalanceTimeoutMs and null TopicPartitions (not a "full" request). Kafka 4.4
    # answers INVALID_REQUEST with this message (its first failing check); the refusal is
    # logged with the fields that failed it.
    lines: list[tuple[str, dict[str, object]]] = []
    h = harness()
    h.coord = GroupCoordinator(h.config, h.clock, consumer_config=h.cconfig, topics=h.topics,
                               log=lambda event, **kw: lines.append((event, kw)))
    assert h.hb().error == ErrorCode.NONE
    assert h.hb(member_epoch=-1).error == ErrorCode.NONE
    r = h.hb(rebalance_timeout_ms=-1, topic_partitions=None, subscribed_topic_names=["t"],
             subscribed_topic_regex="")
    assert (r.error, r.message) == (ErrorCode.INVALID_REQUEST,
                                    "RebalanceTimeoutMs must be provided in first request.")
    refused = [kw for event, kw in lines if event == "consumer group heartbeat refused"]
    assert refused == [{"group": "g", "member": "m1", "epoch": 0,
                        "reason": "RebalanceTimeoutMs must be provided in first request.",
                        "rebalance_timeout_ms": -1, "topic_names": ["t"], "topic_regex": "",
                        "topic_partitions": None}]
