"""Which broker settings give a topic config its cluster-wide default (Kafka's
ServerTopicConfigSynonyms, Kafka 4.4): for each topic config, its broker synonyms, highest
priority first. DescribeConfigs lists only the first of them (Kafka's TOPIC_CONFIG_SYNONYMS):
`retention.ms` shows `log.retention.ms`, never the minutes or hours.

Both tables read this one: the broker table marks these settings as topic defaults (and so
dynamic), the topic table resolves a topic's effective config from their values. Keeping it
apart lets `topic.py` build on `broker.py` without the broker table importing the topic one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from odradek.config.types import HOUR_MS, MINUTE_MS


@dataclass(frozen=True, slots=True)
class BrokerSynonym:
    """A broker setting that supplies a topic config's default; `scale` converts its unit to
    the topic config's (e.g. hours -> ms)."""

    name: str
    scale: int = 1


def _syn(*names: str | tuple[str, int]) -> tuple[BrokerSynonym, ...]:
    return tuple(BrokerSynonym(n) if isinstance(n, str) else BrokerSynonym(*n) for n in names)


TOPIC_SYNONYMS: Mapping[str, tuple[BrokerSynonym, ...]] = {
    "cleanup.policy": _syn("log.cleanup.policy"),
    "compression.type": _syn("compression.type"),
    "compression.gzip.level": _syn("compression.gzip.level"),
    "compression.lz4.level": _syn("compression.lz4.level"),
    "compression.zstd.level": _syn("compression.zstd.level"),
    "delete.retention.ms": _syn("log.cleaner.delete.retention.ms"),
    "file.delete.delay.ms": _syn("log.segment.delete.delay.ms"),
    "flush.messages": _syn("log.flush.interval.messages"),
    "flush.ms": _syn("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    "index.interval.bytes": _syn("log.index.interval.bytes"),
    "local.retention.bytes": _syn("log.local.retention.bytes"),
    "local.retention.ms": _syn("log.local.retention.ms"),
    "max.compaction.lag.ms": _syn("log.cleaner.max.compaction.lag.ms"),
    "max.decompressed.message.bytes": _syn("max.decompressed.message.bytes"),
    "max.message.bytes": _syn("message.max.bytes"),
    "message.timestamp.after.max.ms": _syn("log.message.timestamp.after.max.ms"),
    "message.timestamp.before.max.ms": _syn("log.message.timestamp.before.max.ms"),
    "message.timestamp.type": _syn("log.message.timestamp.type"),
    "min.cleanable.dirty.ratio": _syn("log.cleaner.min.cleanable.ratio"),
    "min.compaction.lag.ms": _syn("log.cleaner.min.compaction.lag.ms"),
    "min.insync.replicas": _syn("min.insync.replicas"),
    "preallocate": _syn("log.preallocate"),
    "remote.copy.lag.bytes": _syn("log.remote.copy.lag.bytes"),
    "remote.copy.lag.ms": _syn("log.remote.copy.lag.ms"),
    "retention.bytes": _syn("log.retention.bytes"),
    "retention.ms": _syn(
        "log.retention.ms", ("log.retention.minutes", MINUTE_MS), ("log.retention.hours", HOUR_MS)
    ),
    "segment.bytes": _syn("log.segment.bytes"),
    "segment.index.bytes": _syn("log.index.size.max.bytes"),
    "segment.jitter.ms": _syn("log.roll.jitter.ms", ("log.roll.jitter.hours", HOUR_MS)),
    "segment.ms": _syn("log.roll.ms", ("log.roll.hours", HOUR_MS)),
    "unclean.leader.election.enable": _syn("unclean.leader.election.enable"),
}

# Broker setting name -> the topic config it is a default for.
TOPIC_CONFIG_OF: Mapping[str, str] = {
    synonym.name: topic for topic, synonyms in TOPIC_SYNONYMS.items() for synonym in synonyms
}
