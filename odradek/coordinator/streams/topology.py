"""A streams group's topology and its configuration against the cluster's topics.

The client declares its subtopologies (source topics or regexes, repartition source and sink
topics, changelog topics, copartition groups). `check` refuses a malformed declaration
(STREAMS_INVALID_TOPOLOGY). `configure` resolves it against the topics that exist, as
Kafka's InternalTopicManager: the partition count of every subtopology (its number of
tasks), the internal topics (repartition and changelog) still to create, and the status
codes the heartbeat returns while the topology is not ready.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

# StreamsGroupHeartbeatResponse Status codes.
STALE_TOPOLOGY = 0
MISSING_SOURCE_TOPICS = 1
INCORRECTLY_PARTITIONED_TOPICS = 2
MISSING_INTERNAL_TOPICS = 3
SHUTDOWN_APPLICATION = 4

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")

Configs = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    partitions: int = 0  # 0: derived from the subtopologies' source topics
    replication_factor: int = 0  # 0: the broker's default
    configs: Configs = ()


@dataclass(frozen=True, slots=True)
class CopartitionGroup:
    # Indexes into the subtopology's source topics, regexes and repartition source topics.
    source_topics: tuple[int, ...] = ()
    source_topic_regex: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()


@dataclass(frozen=True, slots=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...] = ()


@dataclass(frozen=True, slots=True)
class Status:
    code: int
    detail: str


@dataclass(frozen=True, slots=True)
class ConfiguredTopology:
    """`partitions` maps each subtopology to its task count when the topology is ready."""

    partitions: dict[str, int] | None
    statuses: tuple[Status, ...] = ()
    to_create: tuple[TopicInfo, ...] = ()  # internal topics the broker should create
    source_topics: tuple[str, ...] = field(default=())  # every input topic, resolved


def check(topology: Topology) -> str | None:
    """Why the declared topology is invalid (STREAMS_INVALID_TOPOLOGY's message), or None."""
    ids: set[str] = set()
    repartition_sources: set[str] = set()
    for sub in topology.subtopologies:
        if sub.subtopology_id in ids:
            return f"Duplicate subtopology ID {sub.subtopology_id}."
        ids.add(sub.subtopology_id)
        repartition_sources.update(t.name for t in sub.repartition_source_topics)
        for t in (*sub.state_changelog_topics, *sub.repartition_source_topics):
            if not _LEGAL_TOPIC.fullmatch(t.name) or t.name in (".", ".."):
                return f"Topic name {t.name!r} is not a legal topic name."
            if t.partitions < 0:
                return f"Topic {t.name} has a negative partition count {t.partitions}."
        for regex in sub.source_topic_regex:
            try:
                re.compile(regex)
            except re.error:
                return f"Source topic regex {regex!r} is not a valid regular expression."
        for g in sub.copartition_groups:
            for idx, seq in ((g.source_topics, sub.source_topics),
                             (g.source_topic_regex, sub.source_topic_regex),
                             (g.repartition_source_topics, sub.repartition_source_topics)):
                if any(not 0 <= i < len(seq) for i in idx):
                    return (f"Copartition group of subtopology {sub.subtopology_id} refers "
                            "to a topic index out of range.")
    for sub in topology.subtopologies:
        for sink in sub.repartition_sink_topics:
            if sink not in repartition_sources:
                return (f"Repartition sink topic {sink} of subtopology {sub.subtopology_id} "
                        "is not a repartition source topic of any subtopology.")
    return None


def _sources(sub: Subtopology, names: Iterable[str]) -> list[str]:
    out = list(sub.source_topics)
    for regex in sub.source_topic_regex:
        out.extend(n for n in sorted(names) if re.fullmatch(regex, n) and n not in out)
    return out


def configure(topology: Topology, partitions_of: Callable[[str], int | None],
              names: Iterable[str]) -> ConfiguredTopology:
    """Resolve `topology` against the existing topics (`partitions_of` gives a topic's
    partition count, None when it does not exist; `names` lists them all for regexes)."""
    names = list(names)
    subs = topology.subtopologies
    missing: list[str] = []
    sources: dict[str, list[str]] = {}
    for sub in subs:
        sources[sub.subtopology_id] = _sources(sub, names)
        missing += [t for t in sub.source_topics if partitions_of(t) is None]
        missing += [r for r in sub.source_topic_regex
                    if not any(re.fullmatch(r, n) for n in names)]
    all_sources = tuple(sorted({t for ts in sources.values() for t in ts}))
    if missing:
        return ConfiguredTopology(None, (Status(
            MISSING_SOURCE_TOPICS, f"Source topics {', '.join(sorted(set(missing)))} are "
            "missing."),), source_topics=all_sources)

    # Repartition topics: declared counts, else the widest input of the writing subtopology,
    # iterated to a fixed point (a repartition topic may feed another).
    counts: dict[str, int] = {}
    for sub in subs:
        for t in sub.repartition_source_topics:
            if t.partitions > 0:
                counts[t.name] = t.partitions
    changed = True
    while changed:
        changed = False
        for sub in subs:
            inputs = [partitions_of(t) or 0 for t in sources[sub.subtopology_id]]
            inputs += [counts.get(t.name, 0) for t in sub.repartition_source_topics]
            width = max(inputs, default=0)
            for sink in sub.repartition_sink_topics:
                if width > counts.get(sink, 0) and not _declared(subs, sink):
                    counts[sink] = width
                    changed = True

    # Copartition groups: source topics must agree; repartition topics follow them.
    bad: list[str] = []
    for sub in subs:
        srcs = sources[sub.subtopology_id]
        for g in sub.copartition_groups:
            topics = [sub.source_topics[i] for i in g.source_topics]
            for i in g.source_topic_regex:
                topics += [n for n in srcs if re.fullmatch(sub.source_topic_regex[i], n)]
            reps = [sub.repartition_source_topics[i] for i in g.repartition_source_topics]
            fixed = {t: partitions_of(t) or 0 for t in topics}
            fixed.update({r.name: r.partitions for r in reps if r.partitions > 0})
            if len(set(fixed.values())) > 1:
                bad += sorted(fixed)
                continue
            width = max(fixed.values(), default=max((counts.get(r.name, 0) for r in reps),
                                                     default=0))
            for r in reps:
                if r.partitions == 0:
                    counts[r.name] = width
    if bad:
        return ConfiguredTopology(None, (Status(
            INCORRECTLY_PARTITIONED_TOPICS, f"Following topics are not copartitioned: "
            f"[{', '.join(bad)}]."),), source_topics=all_sources)

    tasks: dict[str, int] = {}
    wanted: dict[str, TopicInfo] = {}
    for sub in subs:
        width = max([partitions_of(t) or 0 for t in sources[sub.subtopology_id]]
                    + [counts.get(t.name, 0) for t in sub.repartition_source_topics],
                    default=0)
        tasks[sub.subtopology_id] = width
        for t in sub.repartition_source_topics:
            wanted[t.name] = TopicInfo(t.name, counts.get(t.name, 0), t.replication_factor,
                                       t.configs)
        for t in sub.state_changelog_topics:
            wanted[t.name] = TopicInfo(t.name, t.partitions or width, t.replication_factor,
                                       t.configs)
    to_create = tuple(t for n, t in sorted(wanted.items()) if partitions_of(n) is None)
    wrong = sorted(n for n, t in wanted.items()
                   if (p := partitions_of(n)) is not None and p != t.partitions)
    statuses: list[Status] = []
    if wrong:
        statuses.append(Status(INCORRECTLY_PARTITIONED_TOPICS,
                               f"Internal topics have the wrong partition count: "
                               f"[{', '.join(wrong)}]."))
    if to_create:
        statuses.append(Status(MISSING_INTERNAL_TOPICS, "Internal topics are missing: "
                               f"[{', '.join(t.name for t in to_create)}]"))
    if statuses:
        return ConfiguredTopology(None, tuple(statuses), to_create, all_sources)
    return ConfiguredTopology(tasks, (), (), all_sources)


def _declared(subs: Iterable[Subtopology], name: str) -> bool:
    return any(t.name == name and t.partitions > 0
               for s in subs for t in s.repartition_source_topics)
