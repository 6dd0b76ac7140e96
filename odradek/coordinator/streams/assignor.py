"""The sticky task assignor (Kafka's StickyTaskAssignor, in spirit): every task of every
subtopology is active on exactly one member; active tasks stay where they were while that
keeps the load balanced, the rest go to the least loaded member; then up to
`num_standby_replicas` standby copies of each task go to members of other processes (a
standby on the active's own process protects nothing), preferring previous holders.
Warm-up tasks are not used."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# subtopology id -> partitions
TaskMap = Mapping[str, frozenset[int]]


@dataclass(frozen=True, slots=True)
class TasksTuple:
    active: TaskMap = field(default_factory=dict)
    standby: TaskMap = field(default_factory=dict)
    warmup: TaskMap = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not any(self.active.values()) and not any(self.standby.values()) \
            and not any(self.warmup.values())


EMPTY = TasksTuple()


def norm(m: Mapping[str, frozenset[int] | set[int]]) -> dict[str, frozenset[int]]:
    """Drop empty subtopologies so equal task sets compare equal."""
    return {s: frozenset(p) for s, p in sorted(m.items()) if p}


def minus(a: TaskMap, b: TaskMap) -> dict[str, frozenset[int]]:
    return norm({s: a[s] - b.get(s, frozenset()) for s in a})


def inter(a: TaskMap, b: TaskMap) -> dict[str, frozenset[int]]:
    return norm({s: a[s] & b.get(s, frozenset()) for s in a})


def union(a: TaskMap, b: TaskMap) -> dict[str, frozenset[int]]:
    return norm({s: a.get(s, frozenset()) | b.get(s, frozenset()) for s in {*a, *b}})


@dataclass(frozen=True, slots=True)
class MemberSpec:
    process_id: str
    previous: TasksTuple = EMPTY


def assign(members: Mapping[str, MemberSpec], tasks: Mapping[str, int],
           num_standby_replicas: int) -> dict[str, TasksTuple]:
    """A target assignment of `tasks` (subtopology -> partition count) to `members`."""
    if not members:
        return {}
    ids = sorted(members)
    all_tasks = [(s, p) for s in sorted(tasks) for p in range(tasks[s])]
    cap = -(-len(all_tasks) // len(ids))  # ceil: the most active tasks one member takes
    active: dict[str, set[tuple[str, int]]] = {m: set() for m in ids}
    owner: dict[tuple[str, int], str] = {}
    for m in ids:  # sticky first, in member order, up to the cap
        prev = members[m].previous.active
        for t in all_tasks:
            if t not in owner and t[1] in prev.get(t[0], ()) and len(active[m]) < cap:
                owner[t] = m
                active[m].add(t)
    for t in all_tasks:
        if t not in owner:
            m = min(ids, key=lambda i: (len(active[i]), i))
            owner[t] = m
            active[m].add(t)

    standby: dict[str, set[tuple[str, int]]] = {m: set() for m in ids}
    for t in all_tasks:
        active_process = members[owner[t]].process_id
        for _ in range(num_standby_replicas):
            eligible = [m for m in ids if members[m].process_id != active_process
                        and t not in standby[m]
                        and not any(members[o].process_id == members[m].process_id
                                    for o in ids if t in standby[o])]
            if not eligible:
                break
            m = min(eligible, key=lambda i: (
                t[1] not in members[i].previous.standby.get(t[0], ()),
                len(standby[i]) + len(active[i]), i))
            standby[m].add(t)

    def as_map(ts: set[tuple[str, int]]) -> dict[str, frozenset[int]]:
        out: dict[str, set[int]] = {}
        for s, p in ts:
            out.setdefault(s, set()).add(p)
        return norm(out)

    return {m: TasksTuple(as_map(active[m]), as_map(standby[m])) for m in ids}
