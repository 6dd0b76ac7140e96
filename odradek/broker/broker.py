"""The broker's state as handlers see it: config, cluster metadata, partition logs, clock.

Also the wake-up for long-polling fetches: every append sets the current `anyio.Event` and
replaces it, so waiters re-check their partitions without polling.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import structlog

from odradek.broker.cluster import Cluster
from odradek.broker.dispatch import HandlerEntry, available_handlers
from odradek.broker.storage.log import PartitionLog
from odradek.broker.storage.manager import LogManager
from odradek.config import BrokerConfig, Listener, resolve_topic_config

log = structlog.get_logger("odradek.broker")


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.node_id = config.node_id
        self.handlers: dict[int, HandlerEntry] = available_handlers()
        # Cluster metadata first: the logs are opened with each topic's effective config.
        self.cluster = Cluster(config, self._create_log, self._delete_logs, self._reconfigure)
        self.logs = LogManager(config.log_dirs, resolve_topic_config({}, config),
                               config_for=self._config_for)
        self._check_logs()
        self.advertised: list[Listener] = config.advertised_for({})
        self._appended: anyio.Event | None = None

    # -- wiring between cluster metadata and storage ----------------------------------------------

    def _create_log(self, topic: str, partition: int, overrides: Mapping[str, str]) -> None:
        self.logs.create(topic, partition, resolve_topic_config(overrides, self.config))

    def _config_for(self, topic: str) -> Any:
        known = self.cluster.get(topic)
        return resolve_topic_config(known.configs if known else {}, self.config)

    def _delete_logs(self, topic: str) -> None:
        self.logs.delete(topic)
        # Committed offsets go with the topic, so a re-created topic starts clean (as Kafka).
        from odradek.broker import groups

        groups.shell(self).topics_deleted([topic])

    def _reconfigure(self, topic: str, overrides: Mapping[str, str]) -> None:
        """New topic configs take effect at once on every partition's log."""
        effective = resolve_topic_config(overrides, self.config)
        for p in self.logs.partitions_of(topic):
            plog = self.logs.get(topic, p)
            if plog is not None:
                plog.config = effective

    def _check_logs(self) -> None:
        """Recreate any partition log the metadata names but the disk lacks (e.g. removed dirs)."""
        for topic in self.cluster:
            for p in range(topic.partitions):
                if self.logs.get(topic.name, p) is None:
                    log.warning("partition log missing; recreating empty", topic=topic.name,
                                partition=p)
                    self._create_log(topic.name, p, topic.configs)

    def partition_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.get(topic, partition)

    # -- lifecycle -------------------------------------------------------------------------------------

    def set_bound_ports(self, ports: Mapping[str, int]) -> None:
        self.advertised = self.config.advertised_for(ports)

    def advertised_endpoint(self, listener: str) -> tuple[str, int]:
        for lst in self.advertised:
            if lst.name == listener:
                return lst.host, lst.port
        first = self.advertised[0]
        return first.host, first.port

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        self._appended = anyio.Event()
        tg.start_soon(self._retention_loop)
        tg.start_soon(self._flush_loop)
        if self.config.get("log.cleaner.enable"):
            tg.start_soon(self._cleaner_loop)
        from odradek.broker import groups  # replays __consumer_offsets, runs group timers
        await groups.start(self, tg)
        from odradek.broker import transactions  # replays __transaction_state, txn timers
        await transactions.start(self, tg)

    async def _retention_loop(self) -> None:
        interval = self.config.log_retention_check_interval_ms / 1000
        while True:
            await anyio.sleep(interval)
            try:
                self.logs.retention_pass(self.now_ms())
            except Exception:
                log.exception("retention pass failed")

    async def _flush_loop(self) -> None:
        """fsync per `flush.ms`, fsync rolled segments and checkpoint recovery points, so a
        crash re-validates only what was written since (Kafka's log flusher and its
        `log.flush.offset.checkpoint.interval.ms`, 60 s)."""
        cfg = self.config
        period_ms = min(cfg.log_flush_interval_ms, cfg.log_flush_scheduler_interval_ms, 60_000)
        period = max(period_ms, 50) / 1000
        since_checkpoint = 0.0
        while True:
            await anyio.sleep(period)
            since_checkpoint += period
            try:
                self.logs.flush_pass(self.now_ms())
                if since_checkpoint >= 60:
                    since_checkpoint = 0.0
                    self.logs.flush_rolled_segments()
                    self.logs.checkpoint()
            except Exception:
                log.exception("flush pass failed")

    async def _cleaner_loop(self) -> None:
        """Compact `cleanup.policy=compact` logs (storage/cleaner.py): clean the dirtiest log,
        on the event loop in short slices; when none needs it, wait `log.cleaner.backoff.ms`."""
        from odradek.broker.storage.cleaner import LogCleaner

        cfg = self.config

        def setting(name: str) -> float:
            value = cfg.get(name)
            assert isinstance(value, int | float)
            return value

        cleaner = LogCleaner(
            self.logs,
            dedupe_buffer_size=int(setting("log.cleaner.dedupe.buffer.size")),
            load_factor=setting("log.cleaner.io.buffer.load.factor"),
            io_buffer_size=int(setting("log.cleaner.io.buffer.size")),
            max_io_bytes_per_second=setting("log.cleaner.io.max.bytes.per.second"),
        )
        while True:
            try:
                cleaned = await cleaner.run_pass_async(self.now_ms)
            except Exception:
                log.exception("log cleaner pass failed")
                cleaned = None
            if cleaned is None:
                await anyio.sleep(setting("log.cleaner.backoff.ms") / 1000)
            else:
                await anyio.lowlevel.checkpoint()

    def close(self) -> None:
        self.logs.close_all()

    # -- time and notifications ---------------------------------------------------------------------

    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)

    def notify_appended(self) -> None:
        ev = self._appended
        if ev is not None:
            self._appended = anyio.Event()
            ev.set()

    async def wait_for_append(self, timeout_s: float) -> None:
        """Return after the next append anywhere, or after `timeout_s`."""
        ev = self._appended
        if ev is None or timeout_s <= 0:
            return
        with anyio.move_on_after(timeout_s):
            await ev.wait()

    def topic_config(self, topic: str) -> Any:
        return self.cluster.effective_config(topic)
