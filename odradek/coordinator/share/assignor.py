"""The share groups' server-side assignor, `simple` (Kafka's SimpleAssignor, the only one
`group.share.assignors` offers).

Share-group members do not own partitions: records are handed out one by one, so one
partition may go to several members. The assignor balances, as Kafka 4.x's SimpleAssignor
(KIP-932, "the simple assignor"):

- with at least as many partitions as members, each partition goes to exactly one member and
  every member gets `partitions // members` or one more;
- with more members than partitions, each member gets exactly one partition and every
  partition gets `members // partitions` members or one more;

and it is sticky: a member keeps what it had while that stays within the balance, so a
member joining moves as little as possible. In a homogeneous group (every member subscribes
to the same topics) all the subscribed partitions form one pool; in a heterogeneous group
each topic is balanced among its own subscribers, so a member gets at least one partition of
every topic it subscribes to when the topic has fewer partitions than subscribers.

Members and partitions are visited in sorted order (member id; topic id, partition), where
Kafka uses hash order, so which member gets which free partition may differ from Kafka's
while the counts and the stickiness are the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from odradek.coordinator.group.consumer.assignors import Assignment, TopicId

SIMPLE = "simple"
ASSIGNORS = (SIMPLE,)
CLASS_NAMES = {"org.apache.kafka.coordinator.group.assignor.SimpleAssignor": SIMPLE}

Partition = tuple[TopicId, int]


@dataclass(frozen=True, slots=True)
class ShareMemberSpec:
    member_id: str
    subscribed: frozenset[TopicId]
    previous: Assignment = field(default_factory=dict)


def assign(members: Mapping[str, ShareMemberSpec],
           assignable: Mapping[TopicId, frozenset[int]]) -> dict[str, Assignment]:
    """The target of every member (members without partitions map to {}). `assignable` maps
    each subscribed topic to the partitions that may be assigned: Kafka assigns only the
    share-partitions whose state the share coordinator initialised
    (SubscribedTopicDescriber.assignablePartitions)."""
    specs = {mid: ShareMemberSpec(m.member_id,
                                  frozenset(t for t in m.subscribed if t in assignable),
                                  m.previous)
             for mid, m in members.items()}
    out: dict[str, dict[TopicId, set[int]]] = {mid: {} for mid in specs}
    if not specs:
        return {}
    if len({m.subscribed for m in specs.values()}) == 1:
        topics = sorted(next(iter(specs.values())).subscribed)
        groups = [(topics, sorted(specs))]
    else:
        all_topics = sorted({t for m in specs.values() for t in m.subscribed})
        groups = [([t], sorted(mid for mid, m in specs.items() if t in m.subscribed))
                  for t in all_topics]
    for topics, member_ids in groups:
        pool = [(t, p) for t in topics for p in sorted(assignable[t])]
        if not pool or not member_ids:
            continue
        previous = {mid: [(t, p) for t in sorted(specs[mid].previous) if t in topics
                          for p in sorted(specs[mid].previous[t]) if p in assignable[t]]
                    for mid in member_ids}
        result = _balance(member_ids, pool, previous)
        for mid, parts in result.items():
            for t, p in parts:
                out[mid].setdefault(t, set()).add(p)
    return {mid: {t: frozenset(ps) for t, ps in parts.items()} for mid, parts in out.items()}


def _balance(member_ids: list[str], pool: list[Partition],
             previous: Mapping[str, list[Partition]]) -> dict[str, list[Partition]]:
    n_members, n_parts = len(member_ids), len(pool)
    result: dict[str, list[Partition]] = {mid: [] for mid in member_ids}
    if n_parts >= n_members:
        # Each partition to one member; members get quota or quota + 1 partitions.
        quota, extra = divmod(n_parts, n_members)
        taken: set[Partition] = set()
        for mid in member_ids:
            keep = [tp for tp in previous[mid] if tp not in taken]
            allowed = quota
            if len(keep) > quota and extra > 0:
                allowed += 1
                extra -= 1
            result[mid] = keep[:allowed]
            taken.update(result[mid])
        free = [tp for tp in pool if tp not in taken]
        for mid in member_ids:
            while len(result[mid]) < quota and free:
                result[mid].append(free.pop(0))
        for mid in member_ids:
            if not free or extra == 0:
                break
            if len(result[mid]) == quota:
                result[mid].append(free.pop(0))
                extra -= 1
        return result
    # More members than partitions: each member one partition; partitions get quota or
    # quota + 1 members.
    quota, extra = divmod(n_members, n_parts)
    load = dict.fromkeys(pool, 0)
    unplaced = []
    for mid in member_ids:
        kept = next((tp for tp in previous[mid]
                     if load[tp] < quota or (load[tp] == quota and extra > 0)), None)
        if kept is None:
            unplaced.append(mid)
            continue
        if load[kept] == quota:
            extra -= 1
        load[kept] += 1
        result[mid] = [kept]
    for mid in unplaced:
        target = min(pool, key=lambda tp: (load[tp], pool.index(tp)))
        load[target] += 1
        result[mid] = [target]
    return result
