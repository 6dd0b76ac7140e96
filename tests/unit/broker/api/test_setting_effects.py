"""Broker settings reach what applies them (issue #18: no setting stored and ignored).

The lower layers prove what a setting does once given (storage with a LogConfig, the
coordinators with their configs, the cleaner with its buffers); these tests prove that the
broker hands each one over: a setting dropped on its way (a typo in `broker.py`, a setting no
longer read) fails here. Where no lower-layer test shows an effect, the effect is shown here.
tests/unit/config/test_effects_proven.py names, for every implemented setting, the tests that
prove it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.config import BROKER_CONFIGS, BrokerConfig, LogConfig
from odradek.config.synonyms import TOPIC_CONFIG_OF, TOPIC_SYNONYMS
from odradek.config.types import Effect
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.create_topics import CreateTopicsRequest
from odradek.wire._generated.init_producer_id import InitProducerIdRequest
from odradek.wire._generated.metadata import MetadataRequest
from odradek.wire.records import build_batch

# ------------------------------------------------------- broker defaults of topic configs

# A valid value other than the default for every implemented broker setting that supplies a
# topic config's default (Kafka's ServerTopicConfigSynonyms).
TOPIC_DEFAULT_SAMPLES: dict[str, str] = {
    "compression.type": "gzip",
    "compression.gzip.level": "3",
    "compression.lz4.level": "5",
    "compression.zstd.level": "7",
    "log.cleanup.policy": "compact",
    "log.cleaner.delete.retention.ms": "1234",
    "log.cleaner.max.compaction.lag.ms": "99999",
    "log.cleaner.min.cleanable.ratio": "0.25",
    "log.cleaner.min.compaction.lag.ms": "777",
    "log.segment.delete.delay.ms": "4321",
    "log.flush.interval.messages": "17",
    "log.flush.interval.ms": "2500",
    "log.flush.scheduler.interval.ms": "3500",
    "log.index.interval.bytes": "8192",
    "log.index.size.max.bytes": "65536",
    "message.max.bytes": "123456",
    "log.message.timestamp.after.max.ms": "5000",
    "log.message.timestamp.before.max.ms": "6000",
    "log.message.timestamp.type": "LogAppendTime",
    "log.retention.bytes": "1048576",
    "log.retention.ms": "60000",
    "log.retention.minutes": "3",
    "log.retention.hours": "5",
    "log.segment.bytes": "2097152",
    "log.roll.jitter.ms": "100",
    "log.roll.jitter.hours": "2",
    "log.roll.ms": "120000",
    "log.roll.hours": "3",
}


# A new cluster stores min.insync.replicas=1 as its dynamic cluster-wide default (as Kafka's
# `kafka-storage format` does), which outranks server.properties: the static setting cannot
# show in a log's config (tests/unit/broker/replication and test_produce cover its effect).
SHADOWED_BY_DYNAMIC_DEFAULT = frozenset({"min.insync.replicas"})


def _implemented_topic_defaults() -> list[str]:
    return sorted(name for name in TOPIC_CONFIG_OF
                  if BROKER_CONFIGS[name].effect is Effect.IMPLEMENTED
                  and name not in SHADOWED_BY_DYNAMIC_DEFAULT)


def test_every_implemented_topic_default_has_a_sample() -> None:
    assert sorted(TOPIC_DEFAULT_SAMPLES) == _implemented_topic_defaults()


def _log_config(broker: Broker, topic: str) -> LogConfig:
    plog = broker.partitions.log(topic, 0)
    assert plog is not None
    config = plog.config
    assert isinstance(config, LogConfig)
    return config


@pytest.mark.parametrize("setting", sorted(TOPIC_DEFAULT_SAMPLES))
def test_a_broker_topic_default_is_what_every_log_applies(tmp_path: Path, setting: str) -> None:
    """The partition log (what storage and the produce path read) of a topic without
    overrides takes the broker setting, in the topic config's unit; at the default it
    differs, so the sample proves something."""
    name = TOPIC_CONFIG_OF[setting]
    text = TOPIC_DEFAULT_SAMPLES[setting]
    scale = next(s.scale for s in TOPIC_SYNONYMS[name] if s.name == setting)
    expected = LogConfig.from_overrides(
        {name: text if scale == 1 else str(int(text) * scale)})[name]
    default = open_broker(tmp_path / "default")
    default.cluster.create_topic("t", 1, {})
    assert _log_config(default, "t")[name] != expected
    default.close()
    broker = open_broker(tmp_path / "set", **{setting: text})
    broker.cluster.create_topic("t", 1, {})
    assert _log_config(broker, "t")[name] == expected
    broker.close()


# ------------------------------------------------------- coordinators, cleaner, internal topics

Getter = Callable[[Broker], Any]


def _group(attr: str) -> Getter:
    return lambda b: getattr(b.groups.shard.config, attr)


def _consumer(attr: str) -> Getter:
    return lambda b: getattr(b.groups.shard.consumer_config, attr)


def _share_group(attr: str) -> Getter:
    return lambda b: getattr(b.groups.shard.share.config, attr)


def _share_partition(attr: str) -> Getter:
    return lambda b: getattr(b.share.shard.partition_config, attr)


def _streams(attr: str) -> Getter:
    return lambda b: getattr(b.groups.shard.streams.config, attr)


def _txn(attr: str) -> Getter:
    return lambda b: getattr(b.transactions.shard.config, attr)


def _internal_segment_bytes(runtime: str) -> Getter:
    """The segment size of the internal topic the coordinator runtime creates."""
    return lambda b: LogConfig.from_overrides(dict(getattr(b, runtime).topic.configs)).segment_bytes


# setting -> (value given, what the component holds, the value it must hold)
WIRED: dict[str, tuple[str, Getter, Any]] = {
    "group.initial.rebalance.delay.ms": ("1234", _group("initial_rebalance_delay_ms"), 1234),
    "group.min.session.timeout.ms": ("7000", _group("min_session_timeout_ms"), 7000),
    "group.max.session.timeout.ms": ("90000", _group("max_session_timeout_ms"), 90000),
    "group.max.size": ("7", _group("max_size"), 7),
    "offsets.retention.minutes": ("3", _group("offsets_retention_ms"), 180_000),
    "offsets.retention.check.interval.ms": ("5000", _group("offsets_retention_check_interval_ms"),
                                            5000),
    "offset.metadata.max.bytes": ("99", _group("offset_metadata_max_bytes"), 99),
    "offsets.topic.num.partitions": ("5", _group("offsets_topic_partitions"), 5),
    "offsets.topic.segment.bytes": ("4096", _internal_segment_bytes("groups"), 4096),
    "group.consumer.session.timeout.ms": ("50000", _consumer("session_timeout_ms"), 50000),
    "group.consumer.heartbeat.interval.ms": ("6000", _consumer("heartbeat_interval_ms"), 6000),
    "group.consumer.assignment.interval.ms": ("2500", _consumer("assignment_interval_ms"), 2500),
    "group.consumer.max.size": ("9", _consumer("max_size"), 9),
    "group.streams.session.timeout.ms": ("50000", _streams("session_timeout_ms"), 50000),
    "group.streams.heartbeat.interval.ms": ("6000", _streams("heartbeat_interval_ms"), 6000),
    "group.streams.num.standby.replicas": ("1", _streams("num_standby_replicas"), 1),
    "group.streams.max.size": ("9", _streams("max_size"), 9),
    "group.consumer.assignors": ("range", lambda b: tuple(b.groups.shard.consumer_config.assignors),
                                 ("range",)),
    "group.consumer.regex.refresh.interval.ms": ("60000", _consumer("regex_refresh_interval_ms"),
                                                 60000),
    "group.consumer.migration.policy": ("DISABLED", _consumer("migration_policy"), "disabled"),
    "group.share.session.timeout.ms": ("50000", _share_group("session_timeout_ms"), 50000),
    "group.share.heartbeat.interval.ms": ("6000", _share_group("heartbeat_interval_ms"), 6000),
    "group.share.max.size": ("9", _share_group("max_size"), 9),
    "group.share.record.lock.duration.ms": ("20000", _share_partition("record_lock_duration_ms"),
                                            20000),
    "group.share.delivery.count.limit": ("3", _share_partition("delivery_count_limit"), 3),
    "group.share.partition.max.record.locks": ("100", _share_partition("max_record_locks"), 100),
    "group.share.max.share.sessions": ("7", lambda b: b.share.shard.sessions.max_sessions, 7),
    "share.coordinator.snapshot.update.records.per.snapshot": (
        "10", lambda b: b.share.shard.store.updates_per_snapshot, 10),
    "share.coordinator.state.topic.num.partitions": (
        "3", lambda b: b.share.shard.state_partitions, 3),
    "share.coordinator.state.topic.segment.bytes": ("4096", _internal_segment_bytes("share"),
                                                    4096),
    "transaction.max.timeout.ms": ("60000", _txn("max_timeout_ms"), 60000),
    "transactional.id.expiration.ms": ("120000", _txn("id_expiration_ms"), 120000),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (
        "1000", _txn("abort_interval_ms"), 1000),
    "transaction.remove.expired.transaction.cleanup.interval.ms": (
        "2000", _txn("id_expiry_interval_ms"), 2000),
    "transaction.state.log.num.partitions": ("4", _txn("state_partitions"), 4),
    "transaction.state.log.segment.bytes": ("8192", _internal_segment_bytes("transactions"), 8192),
    "log.cleaner.dedupe.buffer.size": ("2097152", lambda b: b.new_cleaner().cleaner.map_budget,
                                       int(2097152 * 0.9)),
    "log.cleaner.io.buffer.load.factor": ("0.5", lambda b: b.new_cleaner().cleaner.map_budget,
                                          int(128 * 1024 * 1024 * 0.5)),
    "log.cleaner.io.buffer.size": ("65536", lambda b: b.new_cleaner().cleaner.chunk_bytes, 32768),
    "log.cleaner.io.max.bytes.per.second": (
        "1000000", lambda b: b.new_cleaner().max_io_bytes_per_second, 1e6),
}


@pytest.mark.parametrize("setting", sorted(WIRED))
def test_the_broker_hands_the_setting_to_its_component(tmp_path: Path, setting: str) -> None:
    text, held, expected = WIRED[setting]
    default = open_broker(tmp_path / "default")
    assert held(default) != expected  # the sample is not the default
    default.close()
    broker = open_broker(tmp_path / "set", **{setting: text})
    assert held(broker) == expected
    broker.close()


class _Stop(Exception):
    pass


# setting -> (value given, the broker's periodic task, the seconds it must wait between runs)
PERIODIC: dict[str, tuple[str, str, float]] = {
    "log.retention.check.interval.ms": ("1234", "_retention_loop", 1.234),
    "producer.id.expiration.check.interval.ms": ("2345", "_producer_expiry_loop", 2.345),
    "log.cleaner.backoff.ms": ("3456", "_cleaner_loop", 3.456),
    "log.flush.scheduler.interval.ms": ("4567", "_flush_loop", 4.567),
}


def _first_wait(broker: Broker, loop: str, monkeypatch: pytest.MonkeyPatch) -> float:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        raise _Stop

    monkeypatch.setattr(anyio, "sleep", sleep)
    with pytest.raises(_Stop):
        anyio.run(getattr(broker, loop))
    monkeypatch.undo()
    return waits[0]


@pytest.mark.parametrize("setting", sorted(PERIODIC))
def test_periodic_tasks_run_at_their_interval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              setting: str) -> None:
    text, loop, seconds = PERIODIC[setting]
    default = open_broker(tmp_path / "default")
    assert _first_wait(default, loop, monkeypatch) != pytest.approx(seconds)
    default.close()
    broker = open_broker(tmp_path / "set", **{setting: text})
    assert _first_wait(broker, loop, monkeypatch) == pytest.approx(seconds)
    broker.close()


class _TaskGroup:
    def __init__(self) -> None:
        self.started: list[str] = []

    def start_soon(self, fn: Callable[..., Any], *args: Any, name: str | None = None) -> None:
        self.started.append(getattr(fn, "__name__", repr(fn)))


@pytest.mark.parametrize(("enabled", "runs"), [("true", True), ("false", False)])
def test_log_cleaner_enable_starts_the_cleaner_or_not(tmp_path: Path, enabled: str,
                                                      runs: bool) -> None:
    broker = open_broker(tmp_path, **{"log.cleaner.enable": enabled})
    tg = _TaskGroup()
    anyio.run(broker.start, tg)  # type: ignore[arg-type]
    assert ("_cleaner_loop" in tg.started) is runs
    assert "_retention_loop" in tg.started
    broker.close()


# ------------------------------------------------------- effects shown at the handler

def test_transaction_max_timeout_ms_bounds_init_producer_id(tmp_path: Path) -> None:
    broker = open_broker(tmp_path, **{"transaction.max.timeout.ms": "60000"})

    def init(timeout: int) -> ErrorCode:
        r = call(broker, ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(
            transactional_id="tx", transaction_timeout_ms=timeout, producer_id=-1,
            producer_epoch=-1))
        return ErrorCode(r.error_code)

    assert init(60_001) == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert init(600_000) == ErrorCode.INVALID_TRANSACTION_TIMEOUT  # fine at the default (15 min)
    assert init(60_000) == ErrorCode.NONE
    broker.close()


def _create(broker: Broker, name: str, partitions: int = -1, rf: int = -1) -> Any:
    request = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf)], timeout_ms=1000)
    return call(broker, ApiKey.CREATE_TOPICS, 7, request).topics[0]


def test_default_replication_factor_is_used_for_rf_minus_1(tmp_path: Path) -> None:
    """One broker: a default of 2 cannot be met, as on a one-broker Kafka."""
    broker = open_broker(tmp_path, **{"default.replication.factor": "2"})
    assert _create(broker, "t").error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert _create(broker, "u", rf=1).error_code == ErrorCode.NONE
    broker.close()


def test_num_partitions_is_used_for_partitions_minus_1(tmp_path: Path) -> None:
    broker = open_broker(tmp_path, **{"num.partitions": "4"})
    assert _create(broker, "t").num_partitions == 4
    topic = broker.cluster.get("t")
    assert topic is not None and topic.partitions == 4
    broker.close()


@pytest.mark.parametrize("setting", ["node.id", "broker.id"])
def test_the_node_id_is_the_leader_metadata_reports(tmp_path: Path, setting: str) -> None:
    broker = open_broker(tmp_path, **{setting: "7"})
    broker.cluster.create_topic("t", 1, {})
    r = call(broker, ApiKey.METADATA, 12, MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name="t")]))
    assert [b.node_id for b in r.brokers] == [7]
    assert r.controller_id == 7
    [partition] = next(t for t in r.topics if t.name == "t").partitions
    assert (partition.leader_id, list(partition.replica_nodes)) == (7, [7])
    broker.close()


def test_log_cleaner_io_max_bytes_per_second_throttles_the_cleaner(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's cleaner throttler: at N bytes a second, a pass that read and wrote B bytes
    takes about B / N seconds; unbounded (the default), it never waits."""
    waited: dict[str, float] = {}
    for rate in ("1000000", None):
        overrides = {} if rate is None else {"log.cleaner.io.max.bytes.per.second": rate}
        broker = open_broker(tmp_path / str(rate), **overrides)
        broker.cluster.create_topic("c", 1, {"cleanup.policy": "compact",
                                             "internal.segment.bytes": "2048",
                                             "min.cleanable.dirty.ratio": "0.01"})
        plog = broker.partitions.log("c", 0)
        assert plog is not None
        for i in range(60):
            plog.append(memoryview(bytearray(build_batch([(b"k%d" % (i % 3), b"v" * 100)],
                                                         base_timestamp=i))),
                        leader_epoch=0, now_ms=i)
        cleaner = broker.new_cleaner()
        slept: list[float] = []

        async def sleep(seconds: float, slept: list[float] = slept) -> None:
            slept.append(seconds)

        monkeypatch.setattr(anyio, "sleep", sleep)
        result = anyio.run(cleaner.run_pass_async, lambda: 10**13)
        monkeypatch.undo()
        assert result is not None
        waited[str(rate)] = sum(slept)
        broker.close()
    assert waited["None"] == 0
    assert waited["1000000"] > 0
    assert not math.isinf(waited["1000000"])


def test_log_dir_and_log_dirs_are_where_partitions_live(tmp_path: Path) -> None:
    """log.dir alone; log.dirs (which wins over log.dir) spreads new partitions over its
    dirs, the emptiest first."""
    one = Broker(BrokerConfig({"log.dir": str(tmp_path / "single")}))
    one.cluster.create_topic("t", 1, {})
    assert (tmp_path / "single" / "t-0").is_dir()
    one.close()
    two = Broker(BrokerConfig({"log.dir": str(tmp_path / "ignored"),
                                "log.dirs": f"{tmp_path / 'a'},{tmp_path / 'b'}"}))
    two.cluster.create_topic("t", 2, {})
    assert {p.parent.name for p in tmp_path.glob("[ab]/t-*")} == {"a", "b"}
    assert not (tmp_path / "ignored" / "t-0").exists()
    two.close()


@pytest.mark.parametrize(("runtime", "topic", "settings"), [
    ("groups", "__consumer_offsets", {"offsets.topic.num.partitions": "5",
                                      "offsets.topic.segment.bytes": "4096"}),
    ("transactions", "__transaction_state", {"transaction.state.log.num.partitions": "4",
                                             "transaction.state.log.segment.bytes": "8192"}),
    ("share", "__share_group_state", {"share.coordinator.state.topic.num.partitions": "3",
                                      "share.coordinator.state.topic.segment.bytes": "8192"}),
])
def test_internal_topics_are_created_with_their_settings(
        tmp_path: Path, runtime: str, topic: str, settings: dict[str, str]) -> None:
    """A coordinator creates its internal topic on first use (FindCoordinator for groups,
    the first write for transactions): with its `*.num.partitions` partitions, each log
    rolling at its `*.segment.bytes`."""
    partitions, segment_bytes = (int(v) for v in settings.values())
    broker = open_broker(tmp_path, **settings)
    assert getattr(broker, runtime).ensure_topic()
    created = broker.cluster.get(topic)
    assert created is not None and created.partitions == partitions
    plog = broker.partitions.log(topic, partitions - 1)
    assert plog is not None and plog.config.segment_bytes == segment_bytes
    broker.close()
