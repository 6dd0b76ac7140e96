"""Online migration between the classic and consumer protocols (group/migration.py): the
upgrade of a classic group by a ConsumerGroupHeartbeat, classic members served inside the
consumer group, the downgrade when the last consumer-protocol member leaves, the policy, and
replay of what each step wrote."""

from __future__ import annotations

import struct

from group_testutil import subscription
from test_consumer_group import CHarness, T

from odradek.coordinator.group.consumer.coordinator import ConsumerConfig
from odradek.coordinator.group.consumer.model import MemberState
from odradek.coordinator.group.model import LeavingMember
from odradek.coordinator.group.records import GroupKey, OffsetAndMetadata, parse_key
from odradek.coordinator.group.state import GroupState
from odradek.wire import ErrorCode
from odradek.wire._generated.data import ConsumerProtocolAssignment


def decode_assignment(data: bytes) -> dict[str, list[int]]:
    version = struct.unpack_from(">h", data)[0]
    a, _ = ConsumerProtocolAssignment.decode(data, version, 2)
    return {tp.topic: sorted(tp.partitions) for tp in a.assigned_partitions}


def classic_rejoin(h: CHarness, member_id: str) -> tuple[int, dict[str, list[int]]]:
    """A classic member's JoinGroup then SyncGroup; (generation, assignment)."""
    j = h.join("g", member_id).result()
    assert j.error == ErrorCode.NONE, j
    assert (j.protocol_type, j.protocol_name, j.leader_id, j.members) == (
        "consumer", "range", "", [])
    s = h.sync("g", member_id, j.generation_id, protocol_type="consumer",
               protocol_name="range").result()
    assert s.error == ErrorCode.NONE, s
    return j.generation_id, decode_assignment(s.assignment)


def upgraded(h: CHarness) -> list[str]:
    """Two classic members (t-0 and t-1), then consumer member m3 joins: the upgrade."""
    results = h.stable_group(2)
    ids = [r.member_id for r in results]
    r = h.hb(member_id="m3")
    assert r.error == ErrorCode.NONE, r
    return ids


def test_upgrade_writes_the_consumer_group_and_keeps_the_classic_members() -> None:
    h = CHarness()
    a, b = upgraded(h)
    group = h.coord.groups["g"]
    cg = h.cg()
    assert group.members == {} and set(cg.members) == {a, b, "m3"}
    ma = cg.members[a]
    assert ma.classic is not None and ma.classic.session_timeout_ms == 10_000
    assert ma.previous_member_epoch == 1 and ma.assigned  # its classic partition kept
    assert cg.group_epoch == 2
    # The first record is the classic group's tombstone; replay rebuilds the consumer group.
    first_key, first_value = h.log[h.coord.partition_for("g")][1]
    assert isinstance(parse_key(first_key), GroupKey) or first_value is None
    cg2 = h.replay().consumer_group("g")
    assert cg2 is not None and set(cg2.members) == {a, b, "m3"}
    assert cg2.members[a].classic == ma.classic
    # The classic members must rejoin (group epoch ahead), and get partitions again.
    assert h.coord.heartbeat("g", a, None, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.coord.heartbeat("g", a, None, 7) == ErrorCode.ILLEGAL_GENERATION
    gen, parts = classic_rejoin(h, a)
    assert gen == 2 and parts["t"]
    assert h.coord.heartbeat("g", a, None, 2) == ErrorCode.NONE


def test_classic_offset_commit_uses_the_member_epoch_as_generation() -> None:
    h = CHarness()
    a, _ = upgraded(h)
    om = {("t", 0): OffsetAndMetadata(5)}
    p = h.coord.commit_offsets("g", a, None, 1, om, api_version=8)
    h.flush()
    assert p.result()[("t", 0)] == ErrorCode.NONE
    p = h.coord.commit_offsets("g", a, None, 9, om, api_version=8)
    h.flush()
    assert p.result()[("t", 0)] == ErrorCode.ILLEGAL_GENERATION
    p = h.coord.commit_offsets("g", "m3", None, 2, om, api_version=8)
    h.flush()
    assert p.result()[("t", 0)] == ErrorCode.UNSUPPORTED_VERSION


def test_downgrade_when_the_last_consumer_member_leaves() -> None:
    h = CHarness()
    a, b = upgraded(h)
    classic_rejoin(h, a)
    classic_rejoin(h, b)
    epoch = h.cg().group_epoch
    left = h.hb(member_id="m3", member_epoch=-1)
    assert left.error == ErrorCode.NONE
    group = h.coord.groups["g"]
    assert group.consumer is None and set(group.members) == {a, b}
    assert group.generation_id == epoch and group.is_(GroupState.PREPARING_REBALANCE)
    assert h.coord.heartbeat("g", a, None, epoch) == ErrorCode.REBALANCE_IN_PROGRESS
    replayed = h.replay().groups["g"]
    assert replayed.consumer is None and set(replayed.members) == {a, b}
    assert replayed.generation_id == epoch
    # The classic rebalance completes as usual.
    ja, jb = h.join("g", a), h.join("g", b)
    assert ja.result().error == jb.result().error == ErrorCode.NONE
    assert ja.result().generation_id == epoch + 1


def test_session_timeout_of_the_consumer_member_downgrades_too() -> None:
    h = CHarness(cconfig=ConsumerConfig(session_timeout_ms=20_000))
    a, b = upgraded(h)
    for _ in range(6):  # the classic members heartbeat (and rejoin); m3 is silent
        h.advance(4_000)
        if h.coord.consumer_group("g") is None:
            break
        for mid in (a, b):
            if h.coord.heartbeat("g", mid, None, h.cg().members[mid].member_epoch) != ErrorCode.NONE:
                classic_rejoin(h, mid)
    group = h.coord.groups["g"]
    assert group.consumer is None and set(group.members) == {a, b}


def test_classic_member_session_timeout_fences_it() -> None:
    h = CHarness()
    upgraded(h)
    for _ in range(3):
        h.advance(4_000)
        h.hb(member_id="m3", member_epoch=h.cg().members["m3"].member_epoch)
    h.advance(4_000)
    assert set(h.cg().members) == {"m3"}


def test_policy_disabled_or_downgrade_only_refuses_the_upgrade() -> None:
    for policy in ("disabled", "downgrade"):
        h = CHarness(cconfig=ConsumerConfig(migration_policy=policy))
        h.stable_group(2)
        r = h.hb(member_id="m3")
        assert (r.error, r.message) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            "Cannot upgrade classic group g to consumer group because online upgrade is "
            "disabled.")
        assert h.coord.groups["g"].is_(GroupState.STABLE)
    # A classic group of another protocol type, or larger than group.consumer.max.size.
    h = CHarness()
    h.stable_group(1, protocol_type="connect")
    r = h.hb(member_id="m3")
    assert r.message == ("Cannot upgrade classic group g to consumer group because the group "
                         "does not use the consumer embedded protocol.")
    h = CHarness(cconfig=ConsumerConfig(max_size=1))
    h.stable_group(2)
    r = h.hb(member_id="m3")
    assert r.message == ("Cannot upgrade classic group g to consumer group because the group "
                         "size exceeds the consumer group maximum size.")


def test_policy_disabled_refuses_classic_joins_to_consumer_groups() -> None:
    h = CHarness(cconfig=ConsumerConfig(migration_policy="disabled"))
    h.hb()
    assert h.join("g").result().error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    for policy in ("upgrade", "downgrade"):
        h = CHarness(cconfig=ConsumerConfig(migration_policy=policy))
        h.hb()
        assert h.join("g").result().error == ErrorCode.MEMBER_ID_REQUIRED


def test_policy_upgrade_only_keeps_the_consumer_group() -> None:
    h = CHarness(cconfig=ConsumerConfig(migration_policy="upgrade"))
    a, b = upgraded(h)
    h.hb(member_id="m3", member_epoch=-1)
    cg = h.coord.consumer_group("g")
    assert cg is not None and set(cg.members) == {a, b}


def test_classic_join_to_a_consumer_group() -> None:
    h = CHarness()
    assert h.hb().error == ErrorCode.NONE
    first = h.join("g").result()
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED and len(first.member_id) == 22
    bad = h.join("g", first.member_id, protocol_type="connect").result()
    assert bad.error == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    j = h.join("g", first.member_id).result()
    assert j.error == ErrorCode.NONE and j.generation_id == h.cg().group_epoch
    m = h.cg().members[first.member_id]
    assert m.state is MemberState.UNRELEASED_PARTITIONS or m.assigned == {}
    assert h.sync("g", first.member_id, j.generation_id, protocol_name="other").result().error \
        == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync("g", "nobody", j.generation_id).result().error == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.sync("g", "m1", 1).result().error == ErrorCode.UNKNOWN_MEMBER_ID  # consumer member
    # m1 revokes what the newcomer gets; the classic member then finds it free.
    r = h.hb(member_epoch=h.cg().members["m1"].member_epoch, topic_partitions=[(T, [0, 1, 2])])
    assert r.error == ErrorCode.NONE
    assert h.coord.heartbeat("g", first.member_id, None, j.generation_id) \
        == ErrorCode.REBALANCE_IN_PROGRESS
    _, parts = classic_rejoin(h, first.member_id)
    assert parts == {"t": [3, 4, 5]}
    # LeaveGroup removes it and bumps the epoch.
    epoch = h.cg().group_epoch
    res = h.coord.leave_group("g", [LeavingMember(first.member_id)])
    h.flush()
    assert res.members[0].error == ErrorCode.NONE
    assert set(h.cg().members) == {"m1"} and h.cg().group_epoch == epoch + 1


def test_sync_timeout_fences_a_classic_member() -> None:
    h = CHarness()
    h.hb()
    first = h.join("g").result()
    h.join("g", first.member_id, rebalance=5_000)
    h.advance(5_001)
    assert set(h.cg().members) == {"m1"}


def test_subscription_protocols_kept_across_restart() -> None:
    h = CHarness()
    h.hb()
    first = h.join("g").result()
    protocols = [("range", subscription("t")), ("roundrobin", subscription("t"))]
    h.join("g", first.member_id, protocols=protocols)
    cg = h.replay().consumer_group("g")
    assert cg is not None
    classic = cg.members[first.member_id].classic
    assert classic is not None and classic.protocols == tuple(protocols)


def test_failed_upgrade_write_leaves_the_classic_group() -> None:
    h = CHarness()
    ids = [r.member_id for r in h.stable_group(2)]
    h.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
    r = h.hb(member_id="m3")
    assert r.error == ErrorCode.NOT_COORDINATOR
    group = h.coord.groups["g"]
    assert group.consumer is None and set(group.members) == set(ids)
    assert group.is_(GroupState.STABLE) and group.generation_id == 1
    h.fail_with = None
    assert h.coord.heartbeat("g", ids[0], None, 1) == ErrorCode.NONE
    h.advance(10_001)  # the classic sessions still run: nobody heartbeated since
    assert h.coord.groups["g"].members == {} or h.coord.groups["g"].is_(GroupState.PREPARING_REBALANCE)


def test_failed_downgrade_write_keeps_the_consumer_group() -> None:
    h = CHarness()
    a, b = upgraded(h)
    h.fail_with = ErrorCode.KAFKA_STORAGE_ERROR
    left = h.hb(member_id="m3", member_epoch=-1)
    assert left.error == ErrorCode.NOT_COORDINATOR
    cg = h.coord.consumer_group("g")
    assert cg is not None and set(cg.members) == {a, b, "m3"}
    assert h.coord.groups["g"].members == {}
    h.fail_with = None
    assert h.hb(member_id="m3", member_epoch=-1).error == ErrorCode.NONE
    assert h.coord.consumer_group("g") is None


def test_classic_heartbeat_and_sync_errors() -> None:
    h = CHarness()
    a, _ = upgraded(h)
    assert h.coord.heartbeat("g", "m3", None, 2) == ErrorCode.UNKNOWN_MEMBER_ID  # consumer member
    assert h.coord.heartbeat("g", "nobody", None, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.coord.heartbeat("g", a, "inst", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    # A sync at its old generation while the group epoch is ahead: rejoin.
    assert h.sync("g", a, 1).result().error == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.sync("g", a, 5).result().error == ErrorCode.ILLEGAL_GENERATION
    # The join deadline the REBALANCE_IN_PROGRESS answers started fences it if it never rejoins.
    for _ in range(9):
        h.advance(4_000)
        h.coord.heartbeat("g", a, None, 1)
        h.hb(member_id="m3", member_epoch=h.cg().members["m3"].member_epoch)
    assert a not in h.cg().members
