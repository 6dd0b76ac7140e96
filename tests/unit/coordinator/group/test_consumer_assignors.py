"""The server-side assignors: Kafka's range results, uniform's balance and stickiness."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.coordinator.group.consumer.assignors import (
    RANGE,
    UNIFORM,
    AssignorError,
    MemberSpec,
    assign,
    parse_assignors,
)

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)


def spec(mid: str, *topics: uuid.UUID, instance: str | None = None,
         previous: dict[uuid.UUID, frozenset[int]] | None = None) -> MemberSpec:
    return MemberSpec(mid, instance, frozenset(topics), previous or {})


def test_range_gives_consecutive_ranges_extra_to_the_first_members() -> None:
    members = {m: spec(m, T1, T2) for m in ("c", "a", "b")}
    out = assign(RANGE, members, {T1: 7, T2: 2})
    assert out == {
        "a": {T1: frozenset({0, 1, 2}), T2: frozenset({0})},
        "b": {T1: frozenset({3, 4}), T2: frozenset({1})},
        "c": {T1: frozenset({5, 6})},
    }


def test_range_puts_static_members_first_by_instance_id() -> None:
    members = {"a": spec("a", T1), "z": spec("z", T1, instance="i2"),
               "y": spec("y", T1, instance="i1")}
    out = assign(RANGE, members, {T1: 3})
    assert out == {"y": {T1: frozenset({0})}, "z": {T1: frozenset({1})},
                   "a": {T1: frozenset({2})}}


def test_range_heterogeneous_counts_only_subscribers_of_each_topic() -> None:
    members = {"a": spec("a", T1), "b": spec("b", T1, T2)}
    out = assign(RANGE, members, {T1: 2, T2: 3})
    assert out == {"a": {T1: frozenset({0})}, "b": {T1: frozenset({1}), T2: frozenset({0, 1, 2})}}


def test_missing_topic_and_no_members() -> None:
    assert assign(UNIFORM, {}, {T1: 3}) == {}
    assert assign(UNIFORM, {"a": spec("a", T2)}, {T1: 3}) == {"a": {}}


def test_uniform_is_sticky_when_a_member_joins() -> None:
    first = assign(UNIFORM, {"a": spec("a", T1), "b": spec("b", T1)}, {T1: 6})
    assert sorted(len(a[T1]) for a in first.values()) == [3, 3]
    members = {m: spec(m, T1, previous=dict(first.get(m, {}))) for m in ("a", "b", "c")}
    second = assign(UNIFORM, members, {T1: 6})
    assert all(len(second[m][T1]) == 2 for m in "abc")
    # a and b each gave up exactly one partition, c got exactly those two.
    for m in "ab":
        assert second[m][T1] <= first[m][T1]
    assert second["c"][T1] == (first["a"][T1] - second["a"][T1]) | (first["b"][T1] - second["b"][T1])


def test_uniform_gives_the_extra_partitions_to_members_that_held_more_first() -> None:
    """Kafka's UniformHomogeneousAssignmentBuilder: a member that held more than the floor
    quota keeps one more while members may still get an extra one, whichever members sort
    first. librdkafka's 0089_max_poll_interval (consumer protocol): a second member joining a
    one-partition topic must not take the partition from the first."""
    one = assign(UNIFORM, {"z": spec("z", T1, previous={T1: frozenset({0})}), "a": spec("a", T1)},
                 {T1: 1})
    assert one == {"z": {T1: frozenset({0})}, "a": {}}
    # 5 partitions, 2 members: the one that had 4 keeps 3, the newcomer gets 2.
    five = assign(UNIFORM, {"b": spec("b", T1, previous={T1: frozenset(range(4))}),
                            "a": spec("a", T1, previous={T1: frozenset({4})})}, {T1: 5})
    assert len(five["b"][T1]) == 3 and five["b"][T1] <= frozenset(range(4))
    assert five["a"][T1] >= {4} and len(five["a"][T1]) == 2


def test_unknown_assignor_names() -> None:
    with pytest.raises(AssignorError):
        assign("sticky", {"a": spec("a", T1)}, {T1: 1})
    with pytest.raises(AssignorError):
        parse_assignors("uniform,cooperative")
    assert parse_assignors(
        "org.apache.kafka.coordinator.group.assignor.RangeAssignor, uniform") == [RANGE, UNIFORM]


topics = st.lists(st.integers(1, 12), min_size=1, max_size=3)


@settings(max_examples=150, deadline=None)
@given(counts=topics, n=st.integers(1, 7), data=st.data(), name=st.sampled_from([UNIFORM, RANGE]),
       homogeneous=st.booleans())
def test_every_partition_assigned_once_and_balanced(counts: list[int], n: int, data: st.DataObject,
                                                    name: str, homogeneous: bool) -> None:
    ids = [uuid.UUID(int=i + 1) for i in range(len(counts))]
    partitions = dict(zip(ids, counts, strict=True))
    members: dict[str, MemberSpec] = {}
    owned: set[tuple[uuid.UUID, int]] = set()
    for i in range(n):
        subscribed = (frozenset(ids) if homogeneous else
                      frozenset(data.draw(st.sets(st.sampled_from(ids), min_size=1))))
        # a previous target: some partitions nobody else had
        prev: dict[uuid.UUID, frozenset[int]] = {}
        for t in sorted(subscribed):
            mine = data.draw(st.sets(st.integers(0, partitions[t] - 1), max_size=3))
            mine = {p for p in mine if (t, p) not in owned}
            owned |= {(t, p) for p in mine}
            if mine:
                prev[t] = frozenset(mine)
        members[f"m{i}"] = MemberSpec(f"m{i}", None, subscribed, prev)
    out = assign(name, members, partitions)
    seen: dict[tuple[uuid.UUID, int], str] = {}
    for mid, a in out.items():
        for t, ps in a.items():
            assert t in members[mid].subscribed
            for p in ps:
                assert (t, p) not in seen, "assigned twice"
                seen[(t, p)] = mid
    wanted = {(t, p) for m in members.values() for t in m.subscribed for p in range(partitions[t])}
    assert set(seen) == wanted
    if homogeneous and name == RANGE:
        for t in ids:  # range balances each topic on its own (not the totals)
            sizes = [len(out[m].get(t, frozenset())) for m in members]
            assert max(sizes) - min(sizes) <= 1
    if homogeneous and name == UNIFORM:
        sizes = [sum(len(ps) for ps in out[m].values()) for m in members]
        assert max(sizes) - min(sizes) <= 1
        # stickiness: a member keeps what it had, up to its quota
        quota = -(-sum(partitions.values()) // n)
        for mid, m in members.items():
            kept = sum(len(ps & out[mid].get(t, frozenset())) for t, ps in m.previous.items())
            floor = sum(partitions.values()) // n
            assert kept >= min(sum(len(ps) for ps in m.previous.values()), floor)
            assert sum(len(ps) for ps in out[mid].values()) <= quota
