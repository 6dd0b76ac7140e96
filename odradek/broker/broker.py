"""The composition root: the broker builds and owns all of its parts.

It builds, in order, the cluster metadata (topics, ids, configs), the log manager (every
partition's log, opened with its topic's effective config), the partitions port handlers and
coordinators use, and one coordinator runtime per coordinator shard: the group coordinator
over `__consumer_offsets` and the transaction coordinator over `__transaction_state` (those, with
their modules and the GROUP configs, only once the listeners are up or a request needs them
first: their imports were most of the broker's own start-up time, issue #12); then the
fetch session cache (KIP-227, `max.incremental.fetch.session.cache.slots`). It wires
them together (a deleted topic drops its committed offsets; a transaction marker written to
`__consumer_offsets` completes that producer's staged offsets), runs their background tasks
(coordinator timers, retention, flushes, the log cleaner, producer-id expiry) and gives each
request a `RequestContext` with narrow typed fields. Nothing else holds broker-wide state.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.lowlevel
import structlog

from odradek.broker import emulation
from odradek.broker.acls import build_authorizer
from odradek.broker.cluster import Cluster, Topic
from odradek.broker.connection import IncomingRequest
from odradek.broker.context import ClientInfo, RequestContext
from odradek.broker.coordinators.runtime import InternalTopic
from odradek.broker.fault_inject import can_error
from odradek.broker.fault_rules import FaultRules
from odradek.broker.feature_control import FeatureControl, load_stored, stored_selection
from odradek.broker.features import FeatureLevelError, Features
from odradek.broker.fetch_sessions import FetchSessionCache
from odradek.broker.metrics import Metrics, Sources
from odradek.broker.partitions import LocalPartitions
from odradek.broker.pending_logs import PendingLogs
from odradek.broker.quotas import build_quotas
from odradek.broker.replication.simulated import ClusterPartitions, SimulatedCluster
from odradek.broker.security.store import ScramStore
from odradek.broker.storage.cleaner import LogCleaner
from odradek.broker.storage.log import PartitionLog
from odradek.broker.storage.manager import LogManager
from odradek.config import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigError,
    Listener,
    parse_value,
    resolve_topic_config,
)
from odradek.coordinator.common import Write

if TYPE_CHECKING:
    from odradek.broker.context import GroupRuntime, ShareRuntime, TxnRuntime
    from odradek.broker.group_configs import GroupConfigs

# The coordinators' modules (imported by `import_coordinator_modules`, off the event loop,
# once the listeners are up: they are most of the broker's own import time, issue #12).
COORDINATOR_MODULES = (
    "odradek.broker.group_configs",
    "odradek.broker.coordinators.producer_ids",
    "odradek.coordinator.group.consumer.assignors",
    "odradek.coordinator.group.consumer.coordinator",
    "odradek.coordinator.group.coordinator",
    "odradek.coordinator.group.records",
    "odradek.coordinator.share.coordinator",
    "odradek.coordinator.share.group",
    "odradek.coordinator.share.offset_reset",
    "odradek.coordinator.share.partition",
    "odradek.coordinator.share.state",
    "odradek.coordinator.streams.coordinator",
    "odradek.coordinator.txn.coordinator",
    "odradek.coordinator.txn.log_format",
)
_OFFSETS_TOPIC = "__consumer_offsets"  # coordinator.group.records.OFFSETS_TOPIC


# Held while those modules are imported off the loop and while the loop builds the
# coordinators: a request needing them meanwhile waits for the imports to finish rather than
# importing the same (mutually importing) modules from two threads at once.
_IMPORTING = threading.RLock()  # re-entered: building the groups reads group_configs


def import_coordinator_modules() -> None:
    with _IMPORTING:
        for name in COORDINATOR_MODULES:
            importlib.import_module(name)

log = structlog.get_logger("odradek.broker")


def _logger(name: str) -> Any:
    """A shard's `log(event, **fields)` callback, as structlog info lines."""
    bound = structlog.get_logger(name)
    return lambda event, **kw: bound.info(event, **kw)


SEGMENT_BYTES_FLOOR = 1_048_576  # segment.bytes' minimum since Kafka 4.0 (KIP-1030)


class _ClusterTopics:
    """The topic metadata consumer groups read (TopicsView), from the cluster."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    def topic_info(self, name: str) -> tuple[uuid.UUID, int] | None:
        topic = self._cluster.get(name)
        return None if topic is None else (topic.topic_id, topic.partitions)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        topic = self._cluster.by_id.get(topic_id)
        return None if topic is None else topic.name

    def topic_names(self) -> Iterable[str]:
        return list(self._cluster.topics)


class NotAppliedWarnings:
    """One warning line per setting Odradek does not support yet (`Effect.NOT_SUPPORTED`) that
    is set to a value other than its default, the first time in this process: broker settings
    at start-up (those that would change what clients see, what is stored or who may connect
    stopped the start already), topic configs when a topic stored with them is loaded (new
    ones are refused by CreateTopics and the alter handlers). Settings with no effect here
    (`Effect.NO_EFFECT`) stay silent."""

    def __init__(self) -> None:
        self._warned: set[tuple[str, str]] = set()

    def broker(self, config: BrokerConfig) -> None:
        for name in config.unsupported_settings():
            self._warn("broker", name, why=BROKER_CONFIGS[name].why)

    def topic(self, topic: str, overrides: Mapping[str, str]) -> None:
        for name in sorted(overrides):
            definition = TOPIC_CONFIGS.get(name)
            if definition is None or definition.effect.supported:
                continue
            try:
                value = parse_value(definition, overrides[name])
            except ConfigError:
                value = None
            if value != definition.default:
                self._warn("topic", name, topic=topic, why=definition.why)

    def _warn(self, scope: str, name: str, **where: str) -> None:
        if (scope, name) in self._warned:
            return
        self._warned.add((scope, name))
        log.warning("config not supported yet, ignored", scope=scope, key=name, **where)


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.scram: ScramStore | None = None  # set by the server (odradek/broker/security)
        self.not_applied = NotAppliedWarnings()
        self.not_applied.broker(config)
        # Logs the metadata names but the disk lacks yet, made after CreateTopics answered.
        self.pending_logs = PendingLogs(self._make_pending_log)
        # Cluster metadata first: the logs are opened with each topic's effective config.
        self.cluster = Cluster(config, self._create_log, self._delete_logs, self._reconfigure,
                               self._delete_partition_logs, self._topics_created,
                               # one broker: logs made after the answer (pending_logs.py);
                               # --brokers N makes every replica's log at once
                               defer_logs=(self._defer_logs
                                           if config.get_int("simulated.brokers") <= 1 else None))
        # `--brokers N` (docs/cluster.md): N brokers' replica logs; None for one broker.
        self.sim: SimulatedCluster | None = None
        if config.get_int("simulated.brokers") > 1:
            self.sim = SimulatedCluster(config, self.cluster, resolve_topic_config({}, config),
                                        self._config_for, self.now_ms)
            self.logs = self.sim.stores[self.sim.ids[0]]
        else:
            self.logs = LogManager(config.log_dirs, resolve_topic_config({}, config),
                                   config_for=self._config_for)
        for topic in self.cluster.deleted_on_load:  # deletions a previous run left unsaved
            for store in self.stores():
                store.delete(topic)
        if self.sim is not None:
            self.sim.load()
        self._check_logs()
        self.partitions: LocalPartitions = (
            LocalPartitions(self.cluster, self.logs, self._make_missing_log) if self.sim is None
            else ClusterPartitions(self.cluster, self.sim))
        self.advertised: list[Listener] = config.advertised_for({})
        release = config.get_str("emulate.kafka.version")
        features = self._initial_features(config, release)
        # UpdateFeatures changes the levels at run time (feature_control.py)
        self.feature_control = FeatureControl(features, config.log_dirs[0], self.now_ms,
                                              self._features_changed)
        # What ApiVersions and dispatch serve: an emulated release's apis, less those of its
        # features at 0. Kafka 4.4 advertises the share and streams apis at any level (they
        # answer UNSUPPORTED_VERSION while their feature is at 0: dispatch.py).
        self.api_ranges = emulation.api_ranges(release, features.levels if release else None)
        self.faults = FaultRules(can_error)  # injected faults (issue #16): none until set
        self.metrics: Metrics | None = None
        if config.get_bool("admin.http.metrics"):
            if config.get_int("admin.http.port") < 0:
                raise ConfigError("admin.http.metrics needs the admin endpoint: set "
                                  "admin.http.port", "admin.http.metrics")
            if importlib.util.find_spec("prometheus_client") is None:
                raise ConfigError("admin.http.metrics needs prometheus-client: pip install "
                                  "'odradek[metrics]'", "admin.http.metrics")
            self.metrics = Metrics(self._topic_name)
        # The coordinators and GROUP configs: built on first use or by `start_coordinators`
        # (right after the listeners are up), whichever comes first. Each loads its topic
        # before it serves (CoordinatorRuntime: COORDINATOR_LOAD_IN_PROGRESS until then).
        self._group_configs: GroupConfigs | None = None
        self._coordinators: tuple[GroupRuntime, ShareRuntime, TxnRuntime] | None = None
        self._tg: anyio.abc.TaskGroup | None = None  # set by `start`: runs the coordinators
        if self.sim is not None:
            self.sim.on_leaders_changed.append(self._coordinator_leaders_changed)
        self.cleaner: LogCleaner | None = None  # built when the cleaner task starts
        self.fetch_sessions = FetchSessionCache(
            config.get_int("max.incremental.fetch.session.cache.slots"))
        self.authorizer = build_authorizer(config)
        self.quotas = build_quotas(config)

    # -- the coordinators -----------------------------------------------------------------------

    @property
    def coordinators(self) -> Broker:
        """What a RequestContext reads the coordinators from (`context.Coordinators`)."""
        return self

    @property
    def group_configs(self) -> GroupConfigs:
        if self._group_configs is None:
            with _IMPORTING:
                from odradek.broker.group_configs import GROUP_CONFIG_FILE, GroupConfigs

                self._group_configs = GroupConfigs(self.config.log_dirs[0] / GROUP_CONFIG_FILE,
                                                   self.config)
        return self._group_configs

    @property
    def groups(self) -> GroupRuntime:
        return self._built_coordinators()[0]

    @property
    def share(self) -> ShareRuntime:
        return self._built_coordinators()[1]

    @property
    def transactions(self) -> TxnRuntime:
        return self._built_coordinators()[2]

    def _built_coordinators(self) -> tuple[GroupRuntime, ShareRuntime, TxnRuntime]:
        built = self._coordinators
        if built is None:
            with _IMPORTING:
                groups = self._group_runtime()
                built = (groups, self._share_runtime(groups), self._transaction_runtime(groups))
            self._coordinators = built
            if self._tg is not None:
                self._run_coordinators(self._tg)
        return built

    def _run_coordinators(self, tg: anyio.abc.TaskGroup) -> None:
        groups, share, transactions = self._built_coordinators()
        tg.start_soon(groups.run, name="group-coordinator")
        tg.start_soon(transactions.run, name="transaction-coordinator")
        tg.start_soon(share.run, name="share-coordinator")

    async def start_coordinators(self) -> None:
        """Import the coordinators' modules in a worker thread (the event loop keeps
        answering meanwhile), then build and run them, unless a request needed them first."""
        import anyio.to_thread

        try:
            await anyio.to_thread.run_sync(import_coordinator_modules)
            self._built_coordinators()
        except (OSError, ImportError) as e:  # e.g. EMFILE: clients hold every descriptor
            log.error("coordinators not started; the first request that needs one builds it",
                      error=str(e))

    def _internal_topic(self, name: str, partitions_setting: str, segment_setting: str,
                        compression: str) -> InternalTopic:
        """A coordinator's compacted topic; an existing one keeps its partition count."""
        existing = self.cluster.get(name)
        partitions = (existing.partitions if existing
                      else self.config.get_int(partitions_setting))
        segment_bytes = self.config.get_int(segment_setting)
        # offsets.topic.segment.bytes & co. may be below segment.bytes' 1 MiB floor (Kafka 4):
        # such a size goes through Kafka's internal topic config, which has none.
        segment_key = "segment.bytes" if segment_bytes >= SEGMENT_BYTES_FLOOR else \
            "internal.segment.bytes"
        return InternalTopic(name, partitions, {
            "cleanup.policy": "compact",
            "compression.type": compression,
            segment_key: str(segment_bytes),
        })

    def _group_runtime(self) -> GroupRuntime:
        from odradek.broker.coordinators.runtime import CoordinatorRuntime
        from odradek.coordinator.group import coordinator as group_coordinator
        from odradek.coordinator.group.consumer.assignors import parse_assignors
        from odradek.coordinator.group.consumer.coordinator import ConsumerConfig
        from odradek.coordinator.group.coordinator import GroupConfig, GroupCoordinator
        from odradek.coordinator.group.records import OFFSETS_TOPIC
        from odradek.coordinator.share.group import ShareGroupConfig
        from odradek.coordinator.streams.coordinator import StreamsConfig

        cfg = self.config
        topic = self._internal_topic(OFFSETS_TOPIC, "offsets.topic.num.partitions",
                                     "offsets.topic.segment.bytes", "producer")
        shard = GroupCoordinator(
            GroupConfig(
                initial_rebalance_delay_ms=cfg.get_int("group.initial.rebalance.delay.ms"),
                join_settle_ms=group_coordinator.JOIN_SETTLE_MS,  # read late: tests patch it
                min_session_timeout_ms=cfg.get_int("group.min.session.timeout.ms"),
                max_session_timeout_ms=cfg.get_int("group.max.session.timeout.ms"),
                max_size=cfg.get_int("group.max.size"),
                offsets_retention_ms=cfg.offsets_retention_ms,
                offsets_retention_check_interval_ms=cfg.get_int(
                    "offsets.retention.check.interval.ms"),
                offset_metadata_max_bytes=cfg.get_int("offset.metadata.max.bytes"),
                offsets_topic_partitions=topic.partitions,
            ),
            clock=self, log=_logger("odradek.groups"),
            consumer_config=ConsumerConfig(
                session_timeout_ms=cfg.get_int("group.consumer.session.timeout.ms"),
                heartbeat_interval_ms=cfg.get_int("group.consumer.heartbeat.interval.ms"),
                max_size=cfg.get_int("group.consumer.max.size"),
                assignors=tuple(parse_assignors(",".join(cfg.get_list("group.consumer.assignors")))),
                regex_refresh_interval_ms=cfg.get_int("group.consumer.regex.refresh.interval.ms"),
                migration_policy=cfg.get_str("group.consumer.migration.policy").lower(),
                assignment_interval_ms=cfg.get_int("group.consumer.assignment.interval.ms"),
            ),
            topics=_ClusterTopics(self.cluster),
            share_config=ShareGroupConfig(
                session_timeout_ms=cfg.get_int("group.share.session.timeout.ms"),
                heartbeat_interval_ms=cfg.get_int("group.share.heartbeat.interval.ms"),
                max_size=cfg.get_int("group.share.max.size"),
            ),
            streams_config=StreamsConfig(
                session_timeout_ms=cfg.get_int("group.streams.session.timeout.ms"),
                heartbeat_interval_ms=cfg.get_int("group.streams.heartbeat.interval.ms"),
                num_standby_replicas=cfg.get_int("group.streams.num.standby.replicas"),
                max_size=cfg.get_int("group.streams.max.size"),
            ))
        configs = self.group_configs
        shard.consumer_overrides = lambda gid: configs.consumer_config(gid, shard.consumer_config)
        shard.share.config_for = lambda gid: configs.share_group_config(gid, shard.share.config)
        return CoordinatorRuntime("group", shard, topic, self.partitions, self.cluster, self)

    def _share_runtime(self, groups: GroupRuntime) -> ShareRuntime:
        """The share coordinator over `__share_group_state` with this node's
        share-partitions (one node leads every partition, so they call it directly)."""
        from odradek.broker.coordinators.runtime import CoordinatorRuntime
        from odradek.coordinator.share.coordinator import ShareCoordinator
        from odradek.coordinator.share.offset_reset import parse_offset_reset
        from odradek.coordinator.share.partition import SharePartitionConfig
        from odradek.coordinator.share.state import SHARE_STATE_TOPIC

        cfg = self.config
        topic = self._internal_topic(SHARE_STATE_TOPIC,
                                     "share.coordinator.state.topic.num.partitions",
                                     "share.coordinator.state.topic.segment.bytes",
                                     "uncompressed")
        shard = ShareCoordinator(
            SharePartitionConfig(
                record_lock_duration_ms=cfg.get_int("group.share.record.lock.duration.ms"),
                delivery_count_limit=cfg.get_int("group.share.delivery.count.limit"),
                max_record_locks=cfg.get_int("group.share.partition.max.record.locks"),
                # share.renew.acknowledge.enable: a group config only, default true (4.4)
                renew_enabled=True,
            ),
            # share.auto.offset.reset is a group config; Kafka's default is latest.
            parse_offset_reset("latest"),
            topic.partitions, self,
            updates_per_snapshot=cfg.get_int(
                "share.coordinator.snapshot.update.records.per.snapshot"),
            max_sessions=cfg.get_int("group.share.max.share.sessions"),
            log=_logger("odradek.share"))
        configs, base = self.group_configs, shard.partition_config
        shard.partitions.config = lambda gid: configs.share_partition_config(gid, base)
        shard.reset_for = configs.offset_reset
        configs.on_change = shard.partitions.reconfigure
        runtime = CoordinatorRuntime("share", shard, topic, self.partitions, self.cluster, self)
        # A share member that left or timed out gives its records back at once.
        def member_removed(gid: str, mid: str) -> None:
            runtime.call_loaded(lambda s: s.release_member(gid, mid, self.now_ms()))

        def group_deleted(gid: str, _topics: set[uuid.UUID]) -> None:
            runtime.call_loaded(lambda s: s.delete_group(gid))

        def available(topic_id: uuid.UUID, partition: int) -> None:
            topic = self.cluster.by_id.get(topic_id)
            if topic is not None:
                self.partitions.notify_appended(topic.name, partition)

        shard.on_available = available
        groups.shard.on_share_member_removed = member_removed
        groups.shard.on_share_group_deleted = group_deleted
        return runtime

    def _transaction_runtime(self, groups: GroupRuntime) -> TxnRuntime:
        from odradek.broker.coordinators.producer_ids import (
            PRODUCER_ID_BLOCK_FILE,
            ProducerIdAllocator,
        )
        from odradek.broker.coordinators.runtime import CoordinatorRuntime
        from odradek.coordinator.txn.coordinator import TransactionCoordinator, TxnConfig
        from odradek.coordinator.txn.log_format import TRANSACTION_STATE_TOPIC

        cfg = self.config
        topic = self._internal_topic(TRANSACTION_STATE_TOPIC,
                                     "transaction.state.log.num.partitions",
                                     "transaction.state.log.segment.bytes", "uncompressed")
        shard = TransactionCoordinator(
            TxnConfig(
                max_timeout_ms=cfg.get_int("transaction.max.timeout.ms"),
                state_partitions=topic.partitions,
                id_expiration_ms=cfg.get_int("transactional.id.expiration.ms"),
                abort_interval_ms=cfg.get_int(
                    "transaction.abort.timed.out.transaction.cleanup.interval.ms"),
                id_expiry_interval_ms=cfg.get_int(
                    "transaction.remove.expired.transaction.cleanup.interval.ms"),
                transaction_version=self.features.transaction_version,
            ),
            clock=self,
            producer_ids=ProducerIdAllocator(cfg.log_dirs[0] / PRODUCER_ID_BLOCK_FILE),
            log=_logger("odradek.transactions"))
        # Recovery may write markers to __consumer_offsets: the group coordinator loads first.
        return CoordinatorRuntime("transaction", shard, topic, self.partitions, self.cluster,
                                  self, load_after=[groups.ready],
                                  on_written=self._transaction_written)

    def _coordinator_leaders_changed(self, tps: Sequence[tuple[str, int]]) -> None:
        """Coordinator failover (`--brokers N`): a moved internal partition is reloaded from
        its new leader's replica (the share state coordinator is not moved yet). Not built
        yet: nothing to move, they load from the current leaders when built."""
        if self._coordinators is None:
            return
        groups, _share, transactions = self._coordinators
        for runtime in (groups, transactions):
            for topic, partition in tps:
                if topic == runtime.topic.name:
                    runtime.move_partition(partition)

    def _transaction_written(self, write: Write) -> None:
        """A marker on `__consumer_offsets` commits or drops the producer's staged offsets."""
        marker = write.marker
        if marker is not None and write.topic == _OFFSETS_TOPIC:
            pid, commit = write.producer_id, marker.commit
            self.groups.call_loaded(lambda g: g.complete_txn(pid, commit))

    # -- wiring between cluster metadata and storage --------------------------------------------

    def stores(self) -> list[LogManager]:
        """Every broker's log manager: this one's, or the simulated brokers' (--brokers N)."""
        return [self.logs] if self.sim is None else list(self.sim.stores.values())

    def _create_log(self, topic: str, partition: int, overrides: Mapping[str, str]) -> None:
        self.not_applied.topic(topic, overrides)
        settings = resolve_topic_config(overrides, self.config)
        if self.sim is not None:
            self.sim.create_log(topic, partition, settings)
        else:
            self.logs.create(topic, partition, settings)

    def _defer_logs(self, topic: Topic) -> None:
        self.pending_logs.add(topic.name, range(topic.partitions))

    def _make_pending_log(self, topic: str, partition: int) -> bool:
        """Make a listed log, unless it exists or its topic or partition is gone now."""
        known = self.cluster.get(topic)
        if known is None or partition >= known.partitions or \
                self.logs.get(topic, partition) is not None:
            return False
        self._create_log(topic, partition, known.configs)
        return True

    def _make_missing_log(self, topic: str, partition: int) -> PartitionLog | None:
        """A partition the metadata names is asked for before its log was made
        (`pending_logs.py`): make it now, or None if it cannot be made yet."""
        try:
            self._make_pending_log(topic, partition)
        except Exception as exc:  # out of descriptors, every log dir offline: retried later
            log.warning("cannot create a partition log yet", topic=topic, partition=partition,
                        error=str(exc))
            return None
        return self.logs.get(topic, partition)

    def _config_for(self, topic: str) -> Any:
        known = self.cluster.get(topic)
        return resolve_topic_config(known.configs if known else {}, self.config)

    def _delete_logs(self, topics: Sequence[str], checkpoint: bool) -> None:
        """Delete the topics' logs, then (`checkpoint`) write the log dirs' checkpoints once;
        a caller deleting in chunks checkpoints after the last."""
        try:
            for topic in topics:
                for store in self.stores():
                    store.delete(topic, checkpoint=False)
                if self.sim is not None:
                    self.sim.forget(topic)
        finally:
            if checkpoint:
                for store in self.stores():
                    store.checkpoint()
        # Committed offsets go with the topic, so a re-created topic starts clean (as Kafka).
        gone = set(topics)
        self.pending_logs.discard_topics(gone)
        if self._coordinators is not None:  # else not loaded: replay drops them (call_loaded)
            self._coordinators[0].call_loaded(lambda g: g.delete_topic_offsets(gone))

    def _topics_created(self, topics: Sequence[Topic]) -> None:
        """New topics may match consumer groups' regexes: resolve them at the next heartbeat
        (Kafka's lastMetadataImageWithNewTopics). Before load, replay's end does it."""
        if self._coordinators is not None:  # else none is loaded: its load resolves them
            self._coordinators[0].call_loaded(lambda g: g.topics_created())

    def _delete_partition_logs(self, topic: str, partitions: Iterable[int],
                               checkpoint: bool) -> None:
        partitions = list(partitions)
        for store in self.stores():
            for p in partitions:
                store.delete_partition(topic, p, checkpoint=False)
            if checkpoint:
                store.checkpoint()
        for p in partitions:
            self.pending_logs.discard(topic, p)
        if self.sim is not None:
            self.sim.forget(topic, partitions)

    def _reconfigure(self, topic: str, overrides: Mapping[str, str]) -> None:
        """New topic configs take effect at once on every partition's log."""
        self.not_applied.topic(topic, overrides)
        effective = resolve_topic_config(overrides, self.config)
        for store in self.stores():
            for p in store.partitions_of(topic):
                plog = store.get(topic, p)
                if plog is not None:
                    plog.config = effective

    def _check_logs(self) -> None:
        """List for creation every partition log the metadata names but the disk lacks: a
        kill -9 after CreateTopics answered and before its logs were all made, or removed
        dirs. They are made in the background, or on first use (`pending_logs.py`)."""
        missing = 0
        for topic in self.cluster:
            self.not_applied.topic(topic.name, topic.configs)
            if self.sim is not None:
                for p in range(topic.partitions):
                    if not self.sim.has_log(topic.name, p):
                        log.warning("partition log missing; recreating empty", topic=topic.name,
                                    partition=p)
                        self._create_log(topic.name, p, topic.configs)
                continue
            absent = [p for p in range(topic.partitions) if self.logs.get(topic.name, p) is None]
            if absent:
                missing += len(absent)
                self.pending_logs.add(topic.name, absent)
        if missing:
            log.info("partition logs missing; creating them", partitions=missing)

    # -- identity and requests ------------------------------------------------------------------

    @property
    def node_id(self) -> int:
        return self.config.get_int("node.id")

    def set_bound_ports(self, ports: Mapping[str, int]) -> None:
        self.advertised = self.config.advertised_for(ports)

    def advertised_endpoint(self, listener: str) -> tuple[str, int]:
        for lst in self.advertised:
            if lst.name == listener:
                return lst.host, lst.port
        first = self.advertised[0]
        return first.host, first.port

    def metric_sources(self, connections: Callable[[], int]) -> Sources:
        """What a metrics scrape reads of this broker (`metrics.py`)."""

        def high_watermark(topic: str, partition: int) -> int | None:
            plog = self.partitions.log(topic, partition)
            return None if plog is None else plog.high_watermark

        return Sources(groups=lambda: self.groups.shard.groups,
                       transactions=lambda: self.transactions.shard.txns,
                       high_watermark=high_watermark,
                       partition_count=lambda: len(self.partitions.logs()),
                       connections=connections,
                       faults_injected=lambda: self.faults.injected)

    def _topic_name(self, topic_id: uuid.UUID) -> str | None:
        topic = self.cluster.by_id.get(topic_id)
        return None if topic is None else topic.name

    @property
    def features(self) -> Features:
        return self.feature_control.features

    def _initial_features(self, config: BrokerConfig, release: str) -> Features:
        """Kafka 4.4's default levels, then those UpdateFeatures stored, then this run's
        explicit choices (`transaction.version`, `emulate.kafka.version`)."""
        stored = None if release else load_stored(config.log_dirs[0])
        selected = stored_selection(stored[0]) if stored is not None else {}
        selected.update(emulation.finalized_levels(release) if release else {})
        if release or stored is None or config.is_set("transaction.version"):
            selected["transaction_version"] = config.get_int("transaction.version")
        epoch = max(self.now_ms(), stored[1] + 1 if stored is not None else 0)
        try:
            features = Features.finalize(epoch, **selected)
        except FeatureLevelError as e:
            raise ConfigError(str(e), "transaction.version") from None
        if not emulation.finalizes_features(release):
            features = Features({}, features.epoch)
        return features

    def _features_changed(self, features: Features) -> None:
        """UpdateFeatures applied: the transaction coordinator writes and starts
        transactions at the new transaction.version (Kafka reads the finalized level). Not
        built yet: it reads the level when it is."""
        if self._coordinators is not None:
            shard = self._coordinators[2].shard
            shard.config = dataclasses.replace(
                shard.config, transaction_version=features.transaction_version)

    def context(self, client: ClientInfo, request: IncomingRequest) -> RequestContext:
        sim = self.sim
        return RequestContext(
            config=self.config, node=self if sim is None else sim.node(client.broker),
            clock=self, cluster=self.cluster, replicas=sim,
            partitions=self.partitions, coordinators=self,
            features=self.feature_control.features,  # per request: no property call
            fetch_sessions=self.fetch_sessions,
            faults=self.faults, api_ranges=self.api_ranges, metrics=self.metrics,
            authorizer=self.authorizer,
            client=client, api_key=request.api_key, api_version=request.api_version,
            correlation_id=request.correlation_id, client_id=request.client_id,
            scram=self.scram, feature_control=self.feature_control,
            quotas=self.quotas)

    def connection_closed(self, client: ClientInfo) -> None:
        """A client's connection ended: its share sessions go, and the records they held
        are released at once (as Kafka 4.1+)."""
        conn = client.connection_id
        if self._coordinators is None:  # no share session without the share coordinator
            return
        self.share.call_loaded(lambda s: s.close_connection(conn, self.now_ms()))

    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        self.partitions.start()
        tg.start_soon(self.pending_logs.run, name="pending-logs")
        tg.start_soon(self._retention_loop)
        tg.start_soon(self._flush_loop)
        tg.start_soon(self._producer_expiry_loop)
        if self.config.get_bool("log.cleaner.enable"):
            tg.start_soon(self._cleaner_loop)
        self._tg = tg
        if self._coordinators is not None:  # built before start (tests, tools)
            self._run_coordinators(tg)

    def close(self) -> None:
        """Close every log (never raises for an I/O error: see `LogManager.close_all`)."""
        self.cluster.save_if_pending()
        for store in self.stores():
            store.close_all()

    async def _retention_loop(self) -> None:
        interval = self.config.get_int("log.retention.check.interval.ms") / 1000
        while True:
            await anyio.sleep(interval)
            try:
                for store in self.stores():
                    store.retention_pass(self.now_ms())
            except Exception:
                log.exception("retention pass failed")

    async def _flush_loop(self) -> None:
        """fsync per `flush.ms`, fsync rolled segments and checkpoint recovery points, so a
        crash re-validates only what was written since (Kafka's log flusher and its
        `log.flush.offset.checkpoint.interval.ms`, 60 s)."""
        cfg = self.config
        period_ms = min(cfg.log_flush_interval_ms, cfg.get_int("log.flush.scheduler.interval.ms"), 60_000)
        period = max(period_ms, 50) / 1000
        since_checkpoint = 0.0
        while True:
            await anyio.sleep(period)
            since_checkpoint += period
            try:
                self.cluster.save_if_pending()  # a topic deletion on a full disk
                for store in self.stores():
                    store.flush_pass(self.now_ms())
                if since_checkpoint >= 60:
                    since_checkpoint = 0.0
                    for store in self.stores():
                        store.flush_rolled_segments()
                        store.checkpoint()
            except Exception:
                log.exception("flush pass failed")

    async def _producer_expiry_loop(self) -> None:
        """Every `producer.id.expiration.check.interval.ms`, drop producers idle for
        `producer.id.expiration.ms` from every partition's producer state."""
        interval = self.config.get_int("producer.id.expiration.check.interval.ms") / 1000
        while True:
            await anyio.sleep(interval)
            try:
                self.expire_producers(self.now_ms())
            except Exception:
                log.exception("producer expiry pass failed")

    def expire_producers(self, now_ms: int) -> int:
        expiration = self.config.get_int("producer.id.expiration.ms")
        removed = sum(plog.producer_state.remove_expired(now_ms, expiration)
                      for store in self.stores() for plog in store.logs().values())
        if removed:
            log.info("expired idle producers", count=removed)
        return removed

    def _cleaner_settings(self) -> dict[str, Any]:
        cfg = self.config
        return {
            "dedupe_buffer_size": cfg.get_int("log.cleaner.dedupe.buffer.size"),
            "load_factor": cfg.get_float("log.cleaner.io.buffer.load.factor"),
            "io_buffer_size": cfg.get_int("log.cleaner.io.buffer.size"),
            "max_io_bytes_per_second": cfg.get_float("log.cleaner.io.max.bytes.per.second"),
        }

    def new_cleaner(self) -> LogCleaner:
        """The log cleaner, with the `log.cleaner.*` buffer and throughput settings."""
        return LogCleaner(self.logs, **self._cleaner_settings())

    async def _cleaner_loop(self) -> None:
        """Compact `cleanup.policy=compact` logs (storage/cleaner.py): clean the dirtiest log,
        on the event loop in short slices; when none needs it, wait `log.cleaner.backoff.ms`."""
        settings = self._cleaner_settings()
        cleaner = self.cleaner = self.new_cleaner()
        while True:
            # Dynamic broker configs apply from the next pass on, as Kafka's reconfigure.
            if (now := self._cleaner_settings()) != settings:
                settings = now
                cleaner.reconfigure(**settings)
            try:
                cleaned = await cleaner.run_pass_async(self.now_ms)
            except Exception:
                log.exception("log cleaner pass failed")
                cleaned = None
            if cleaned is None:
                await anyio.sleep(self.config.get_int("log.cleaner.backoff.ms") / 1000)
            else:
                await anyio.lowlevel.checkpoint()
