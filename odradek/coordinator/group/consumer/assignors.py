"""Server-side partition assignors of KIP-848 consumer groups: `uniform` and `range`.

An assignor maps every member to the partitions it should own (its *target*), given each
member's subscribed topic ids, the group's previous target and the partition counts of the
subscribed topics. It is a pure function; the coordinator turns its result into
ConsumerGroupTargetAssignment records.

- `uniform` (Kafka's default): balanced and sticky. When every member subscribes to the same
  topics (a *homogeneous* group) each member keeps as much of its previous target as its
  quota allows (total partitions / members; `total % members` members take one more, first
  those that held more than that), and the partitions set free go to the members below
  quota, as Kafka's UniformHomogeneousAssignmentBuilder does. Kafka visits members and topics in hash-map
  order; Odradek visits members by member id and topics by topic id, so which member gets
  which free partition may differ from Kafka's while the counts and the stickiness are the
  same. Heterogeneous groups get a balanced sticky assignment of Odradek's own (a member
  keeps its partitions of topics it still subscribes to; free partitions go to the eligible
  member with the fewest; then partitions move from members with two or more than an
  eligible member until none can), not Kafka's exact heterogeneous builder.
- `range`: per topic, consecutive ranges to the members subscribed to it, sorted with static
  members first (by instance id) and then by member id; the first `partitions % members`
  members get one extra. The same result as Kafka's RangeAssignor in every case.

A member subscribed to a topic that does not exist gets nothing for it (the coordinator only
passes topics that exist).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

TopicId = uuid.UUID
# topic id -> partitions; values are never mutated once built.
Assignment = Mapping[TopicId, frozenset[int]]

UNIFORM = "uniform"
RANGE = "range"
ASSIGNORS = (UNIFORM, RANGE)

# Kafka's class names for the built-in assignors (group.consumer.assignors accepts either).
CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": UNIFORM,
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": RANGE,
}


class AssignorError(ValueError):
    """An assignor name that is not one of `ASSIGNORS`."""


@dataclass(frozen=True, slots=True)
class MemberSpec:
    member_id: str
    instance_id: str | None
    subscribed: frozenset[TopicId]
    previous: Assignment = field(default_factory=dict)


def parse_assignors(value: str) -> list[str]:
    """`group.consumer.assignors`: a comma-separated list of short or Kafka class names."""
    names: list[str] = []
    for raw in value.split(","):
        name = raw.strip()
        if not name:
            continue
        name = CLASS_NAMES.get(name, name)
        if name not in ASSIGNORS:
            raise AssignorError(f"unknown consumer group assignor {raw.strip()!r}; "
                                f"supported: {', '.join(ASSIGNORS)}")
        if name not in names:
            names.append(name)
    if not names:
        raise AssignorError("group.consumer.assignors must name at least one assignor")
    return names


def assign(name: str, members: Mapping[str, MemberSpec],
           partition_counts: Mapping[TopicId, int]) -> dict[str, Assignment]:
    """The target assignment of every member (members without partitions map to {})."""
    if not members:
        return {}
    specs = {mid: MemberSpec(m.member_id, m.instance_id,
                             frozenset(t for t in m.subscribed if t in partition_counts),
                             m.previous)
             for mid, m in members.items()}
    homogeneous = len({m.subscribed for m in specs.values()}) == 1
    if name == UNIFORM:
        if homogeneous:
            return _uniform_homogeneous(specs, partition_counts)
        return _uniform_heterogeneous(specs, partition_counts)
    if name == RANGE:
        return _range(specs, partition_counts)
    raise AssignorError(f"unknown consumer group assignor {name!r}")


def _freeze(parts: dict[TopicId, set[int]]) -> dict[TopicId, frozenset[int]]:
    return {t: frozenset(p) for t, p in parts.items() if p}


def _range(members: Mapping[str, MemberSpec],
           counts: Mapping[TopicId, int]) -> dict[str, Assignment]:
    order = sorted(members.values(), key=lambda m: (
        (0, m.instance_id, "") if m.instance_id is not None else (1, "", m.member_id)))
    out: dict[str, dict[TopicId, set[int]]] = {m.member_id: {} for m in order}
    for topic in sorted({t for m in order for t in m.subscribed}):
        subscribers = [m for m in order if topic in m.subscribed]
        n = counts[topic]
        quota, extra = divmod(n, len(subscribers))
        start = 0
        for m in subscribers:
            size = quota + (1 if extra > 0 else 0)
            extra -= 1 if extra > 0 else 0
            end = min(start + size, n)
            if start < end:
                out[m.member_id][topic] = set(range(start, end))
            start = end
    return {mid: _freeze(parts) for mid, parts in out.items()}


def _uniform_homogeneous(members: Mapping[str, MemberSpec],
                         counts: Mapping[TopicId, int]) -> dict[str, Assignment]:
    order = sorted(members)
    topics = sorted(next(iter(members.values())).subscribed)
    if not topics:
        return {mid: {} for mid in order}
    total = sum(counts[t] for t in topics)
    quota, extra = divmod(total, len(order))
    # 1. Each member keeps its previous partitions up to the floor quota, and one more while
    # members may still take an extra partition: the extras go first to members that held
    # more than the floor (Kafka's UniformHomogeneousAssignmentBuilder), so the partition of
    # a one-partition topic stays where it was when a member joins.
    target: dict[str, dict[TopicId, set[int]]] = {}
    kept_n: dict[str, int] = {}
    released: list[tuple[TopicId, int]] = []
    taken: set[tuple[TopicId, int]] = set()
    for mid in order:
        previous = [(t, p) for t in sorted(members[mid].previous)
                    if t in counts and t in members[mid].subscribed
                    for p in sorted(members[mid].previous[t]) if p < counts[t]]
        previous = [tp for tp in previous if tp not in taken]
        keep = min(len(previous), quota)
        if len(previous) > quota and extra > 0:
            keep += 1
            extra -= 1
        kept: dict[TopicId, set[int]] = {}
        for t, p in previous[:keep]:
            kept.setdefault(t, set()).add(p)
        taken.update(previous[:keep])
        released += previous[keep:]
        target[mid] = kept
        kept_n[mid] = keep
    owned = {(t, p) for m in members.values() for t, ps in m.previous.items()
             if t in counts for p in ps}
    unassigned = [(t, p) for t in topics for p in range(counts[t]) if (t, p) not in owned]
    unassigned += [tp for tp in released if tp not in taken]
    # 2. The free partitions fill the members below the floor, then give the extras left.
    free = iter(unassigned)
    for mid in order:
        while kept_n[mid] < quota and (tp := next(free, None)) is not None:
            target[mid].setdefault(tp[0], set()).add(tp[1])
            kept_n[mid] += 1
    for mid in order:
        if extra == 0:
            break
        if kept_n[mid] == quota and (tp := next(free, None)) is not None:
            target[mid].setdefault(tp[0], set()).add(tp[1])
            kept_n[mid] += 1
            extra -= 1
    return {mid: _freeze(parts) for mid, parts in target.items()}


def _uniform_heterogeneous(members: Mapping[str, MemberSpec],
                           counts: Mapping[TopicId, int]) -> dict[str, Assignment]:
    order = sorted(members)
    owner: dict[tuple[TopicId, int], str] = {}
    load = dict.fromkeys(order, 0)
    for mid in order:
        spec = members[mid]
        for t in sorted(spec.previous):
            if t not in spec.subscribed:
                continue
            for p in sorted(spec.previous[t]):
                if p < counts[t] and (t, p) not in owner:
                    owner[(t, p)] = mid
                    load[mid] += 1
    subscribers = {t: [mid for mid in order if t in members[mid].subscribed]
                   for t in sorted({t for m in members.values() for t in m.subscribed})}
    for t, subs in subscribers.items():
        for p in range(counts[t]):
            if (t, p) not in owner:
                best = min(subs, key=lambda mid: (load[mid], mid))
                owner[(t, p)] = best
                load[best] += 1
    moved = True
    while moved:
        moved = False
        for tp in sorted(owner):
            current = owner[tp]
            best = min(subscribers[tp[0]], key=lambda mid: (load[mid], mid))
            if load[current] - load[best] > 1:
                owner[tp] = best
                load[current] -= 1
                load[best] += 1
                moved = True
    target: dict[str, dict[TopicId, set[int]]] = {mid: {} for mid in order}
    for (t, p), mid in owner.items():
        target[mid].setdefault(t, set()).add(p)
    return {mid: _freeze(parts) for mid, parts in target.items()}
