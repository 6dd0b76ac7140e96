"""The share groups' simple assignor: balance in both regimes (more partitions than members,
more members than partitions), stickiness, heterogeneous subscriptions."""

from __future__ import annotations

import uuid
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.coordinator.group.consumer.assignors import Assignment
from odradek.coordinator.share.assignor import ShareMemberSpec, assign

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def members(*ids: str, topics: frozenset[uuid.UUID] = frozenset({T1}),
            previous: dict[str, Assignment] | None = None) -> dict[str, ShareMemberSpec]:
    prev = previous or {}
    return {m: ShareMemberSpec(m, topics, prev.get(m, {})) for m in ids}


def parts(n: int) -> frozenset[int]:
    return frozenset(range(n))


def flat(a: Assignment) -> list[tuple[uuid.UUID, int]]:
    return sorted((t, p) for t, ps in a.items() for p in ps)


def test_one_partition_goes_to_every_member() -> None:
    got = assign(members("a", "b", "c"), {T1: parts(1)})
    assert got == {m: {T1: frozenset({0})} for m in "abc"}


def test_more_partitions_than_members_each_partition_once() -> None:
    got = assign(members("a", "b"), {T1: parts(5)})
    owners = Counter(tp for a in got.values() for tp in flat(a))
    assert set(owners) == {(T1, p) for p in range(5)} and set(owners.values()) == {1}
    assert sorted(len(flat(a)) for a in got.values()) == [2, 3]


def test_more_members_than_partitions_each_member_once() -> None:
    got = assign(members("a", "b", "c", "d", "e"), {T1: parts(2)})
    assert all(len(flat(a)) == 1 for a in got.values())
    per_partition = Counter(tp for a in got.values() for tp in flat(a))
    assert sorted(per_partition.values()) == [2, 3]


def test_a_joining_member_moves_little() -> None:
    first = assign(members("a", "b"), {T1: parts(4)})
    second = assign(members("a", "b", "c", previous=first), {T1: parts(4)})
    kept = sum(len(set(flat(first[m])) & set(flat(second[m]))) for m in "ab")
    assert kept >= 3  # only one partition moves to the newcomer
    assert len(flat(second["c"])) >= 1


def test_heterogeneous_groups_balance_each_topic_among_its_subscribers() -> None:
    specs = {"a": ShareMemberSpec("a", frozenset({T1})),
             "b": ShareMemberSpec("b", frozenset({T1, T2})),
             "c": ShareMemberSpec("c", frozenset({T2}))}
    got = assign(specs, {T1: parts(1), T2: parts(4)})
    assert got["a"] == {T1: frozenset({0})} and got["b"][T1] == frozenset({0})
    t2 = Counter(tp for m in "bc" for tp in flat(got[m]) if tp[0] == T2)
    assert set(t2) == {(T2, p) for p in range(4)} and set(t2.values()) == {1}


def test_only_assignable_partitions_are_given() -> None:
    got = assign(members("a", "b"), {T1: frozenset({1, 3})})
    assert sorted(tp for a in got.values() for tp in flat(a)) == [(T1, 1), (T1, 3)]


def test_unknown_topics_and_no_members() -> None:
    assert assign({}, {T1: parts(3)}) == {}
    assert assign(members("a", topics=frozenset({T2})), {T1: parts(3)}) == {"a": {}}


@settings(max_examples=100, deadline=None)
@given(n_members=st.integers(1, 9), n_parts=st.integers(1, 9), seed=st.integers(0, 10**6),
       rounds=st.integers(1, 3))
def test_balanced_complete_and_sticky_enough(n_members: int, n_parts: int, seed: int,
                                             rounds: int) -> None:
    ids = [f"m{i}" for i in range(n_members)]
    previous: dict[str, Assignment] = {}
    for r in range(rounds):
        present = [m for k, m in enumerate(ids) if (seed >> (k + r)) % 3 or k == 0]
        got = assign(members(*present, previous=previous), {T1: parts(n_parts)})
        per_member = [len(flat(got[m])) for m in present]
        per_partition = Counter(tp for a in got.values() for tp in flat(a))
        assert set(per_partition) == {(T1, p) for p in range(n_parts)}  # nothing left out
        if n_parts >= len(present):
            assert set(per_partition.values()) == {1}
            assert max(per_member) - min(per_member) <= 1
        else:
            assert set(per_member) == {1}
            assert max(per_partition.values()) - min(per_partition.values()) <= 1
        previous = got
