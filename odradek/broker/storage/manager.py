"""All partition logs of the broker, across its log dirs (`log.dirs`).

Per log dir, next to the `<topic>-<partition>` directories, Kafka's bookkeeping files:

    recovery-point-offset-checkpoint   `topic partition offset` lines (see checkpoint.py):
                                       below its recovery point a log was fsynced
    log-start-offset-checkpoint        the same layout: each log's start offset
    .kafka_cleanshutdown               present only after a clean shutdown; JSON
                                       {"version":0,"brokerEpoch":-1}

On start every partition directory is loaded; without the clean-shutdown marker the
segments after each log's recovery point are re-validated, with it only each segment's tail
is checked, and a damaged one recovered (see `loader.py`). The
marker is removed once loading is done, so a crash from then on is detected at next start.
Directories named `<topic>-<partition>.<uuid>-delete` are leftovers of topic deletions and
are removed.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import structlog

from odradek.broker.storage import files
from odradek.broker.storage.checkpoint import read_offsets_checkpoint, write_offsets_checkpoint
from odradek.broker.storage.config import LogSettings
from odradek.broker.storage.errors import CheckpointError
from odradek.broker.storage.log import PartitionLog

log = structlog.get_logger(__name__)

TopicPartition = tuple[str, int]


def _wall_ms() -> int:
    return int(time.time() * 1000)


class LogManager:
    def __init__(
        self,
        log_dirs: list[Path],
        defaults: LogSettings,
        *,
        config_for: Callable[[str], LogSettings] | None = None,
        now_ms: int | None = None,
    ) -> None:
        """Load every partition log found in `log_dirs` (created when missing).
        `config_for(topic)` gives a topic's config (default: `defaults`)."""
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.defaults = defaults
        self._config_for = config_for
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        # Indexes over `_logs`, so that creating or deleting one of N partitions costs O(1)
        # rather than a scan of every log (issue #10: quadratic admin requests).
        self._count_in_dir: dict[Path, int] = {d: 0 for d in self.log_dirs}
        self._partitions_by_topic: dict[str, set[int]] = {}
        self._closed = False
        now = _wall_ms() if now_ms is None else now_ms
        for log_dir in self.log_dirs:
            self._load_dir(log_dir, now)

    def config_for(self, topic: str) -> LogSettings:
        return self._config_for(topic) if self._config_for is not None else self.defaults

    def _load_dir(self, log_dir: Path, now_ms: int) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        marker = log_dir / files.CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        try:
            recovery_points = read_offsets_checkpoint(
                log_dir / files.RECOVERY_POINT_CHECKPOINT_FILE
            )
        except CheckpointError as exc:
            log.warning("unreadable recovery points; recovering every log", error=str(exc))
            recovery_points, clean = {}, False
        try:
            start_offsets = read_offsets_checkpoint(
                log_dir / files.LOG_START_OFFSET_CHECKPOINT_FILE
            )
        except CheckpointError as exc:
            log.warning("unreadable log start offsets", error=str(exc))
            start_offsets = {}
        for entry in sorted(os.scandir(log_dir), key=lambda e: e.name):
            if not entry.is_dir():
                continue
            if files.is_delete_dir_name(entry.name):
                shutil.rmtree(entry.path, ignore_errors=True)
                continue
            try:
                tp = files.parse_partition_dir_name(entry.name)
            except ValueError:
                continue
            if tp in self._logs:
                raise RuntimeError(
                    f"partition {tp[0]}-{tp[1]} found in both {self._dir_of[tp]} and {log_dir}"
                )
            partition_log = PartitionLog.open(
                Path(entry.path),
                self.config_for(tp[0]),
                now_ms=now_ms,
                recovery_point=recovery_points.get(tp, 0),
                log_start_offset=start_offsets.get(tp, 0),
                had_clean_shutdown=clean and tp in recovery_points,
                on_log_start_offset_change=self._log_start_changed,
            )
            self._add(tp, partition_log, log_dir)
        self._write_checkpoints(log_dir)
        marker.unlink(missing_ok=True)

    # -- lookup -----------------------------------------------------------------------------

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def logs(self) -> dict[TopicPartition, PartitionLog]:
        return dict(self._logs)

    def partitions_of(self, topic: str) -> list[int]:
        return sorted(self._partitions_by_topic.get(topic, ()))

    def log_dir_of(self, topic: str, partition: int) -> Path | None:
        return self._dir_of.get((topic, partition))

    # -- creation and deletion --------------------------------------------------------------

    def create(
        self,
        topic: str,
        partition: int,
        config: LogSettings | None = None,
        *,
        now_ms: int | None = None,
    ) -> PartitionLog:
        """The log of a new partition, in the log dir holding the fewest partitions (the
        existing log if there already is one)."""
        self._check_open()
        tp = (topic, partition)
        existing = self._logs.get(tp)
        if existing is not None:
            return existing
        log_dir = min(self.log_dirs, key=lambda d: self._count_in_dir[d])
        partition_log = PartitionLog.open(
            log_dir / files.partition_dir_name(topic, partition),
            config if config is not None else self.config_for(topic),
            now_ms=_wall_ms() if now_ms is None else now_ms,
            on_log_start_offset_change=self._log_start_changed,
        )
        self._add(tp, partition_log, log_dir)
        return partition_log

    def _add(self, tp: TopicPartition, partition_log: PartitionLog, log_dir: Path) -> None:
        self._logs[tp] = partition_log
        self._dir_of[tp] = log_dir
        self._count_in_dir[log_dir] += 1
        self._partitions_by_topic.setdefault(tp[0], set()).add(tp[1])

    def _remove(self, tp: TopicPartition) -> tuple[PartitionLog, Path] | None:
        partition_log = self._logs.pop(tp, None)
        log_dir = self._dir_of.pop(tp, None)
        if partition_log is None or log_dir is None:
            return None
        self._count_in_dir[log_dir] -= 1
        partitions = self._partitions_by_topic[tp[0]]
        partitions.discard(tp[1])
        if not partitions:
            del self._partitions_by_topic[tp[0]]
        return partition_log, log_dir

    def delete(self, topic: str, *, checkpoint: bool = True) -> int:
        """Delete every partition log of `topic`; returns how many were deleted. The log dirs'
        checkpoints are rewritten once at the end. With `checkpoint=False` the caller deleting
        many topics must call `checkpoint()` once they are gone, before a log of the same name
        can be created (a stale recovery point would spare the new log's recovery)."""
        partitions = self.partitions_of(topic)
        for partition in partitions:
            self.delete_partition(topic, partition, checkpoint=False)
        if checkpoint and partitions:
            self.checkpoint()
        return len(partitions)

    def delete_partition(self, topic: str, partition: int, *, checkpoint: bool = True) -> None:
        """Rename the partition directory to Kafka's `...-delete` name, then remove it (a crash
        in between leaves a directory that the next start removes)."""
        self._check_open()
        removed = self._remove((topic, partition))
        if removed is None:
            return
        partition_log, log_dir = removed
        partition_log.close_without_flush()
        doomed = log_dir / files.delete_dir_name(topic, partition, uuid.uuid4().hex)
        os.rename(partition_log.directory, doomed)
        shutil.rmtree(doomed, ignore_errors=True)
        if checkpoint:
            self._write_checkpoints(log_dir)

    # -- periodic work ----------------------------------------------------------------------

    def retention_pass(self, now_ms: int) -> int:
        """Apply retention to every log; returns the number of segments deleted."""
        self._check_open()
        return sum(pl.enforce_retention(now_ms) for pl in self._logs.values())

    def flush_pass(self, now_ms: int) -> int:
        """Apply each log's `flush.ms`; returns how many logs were fsynced."""
        self._check_open()
        return sum(pl.flush_if_due(now_ms) for pl in self._logs.values())

    def flush_rolled_segments(self) -> None:
        """fsync the segments every log has rolled since its recovery point and checkpoint the
        new recovery points, so a crash only re-validates active segments (Kafka flushes
        rolled segments in the background; this blocks while the fsyncs run)."""
        self._check_open()
        for pl in self._logs.values():
            pl.flush(up_to=pl.active_segment.base_offset)
        self.checkpoint()

    def checkpoint(self) -> None:
        """Write every log dir's recovery-point and log-start-offset checkpoints."""
        for log_dir in self.log_dirs:
            self._write_checkpoints(log_dir)

    def _write_checkpoints(self, log_dir: Path) -> None:
        in_dir = [tp for tp, d in self._dir_of.items() if d == log_dir]
        write_offsets_checkpoint(
            log_dir / files.RECOVERY_POINT_CHECKPOINT_FILE,
            {tp: self._logs[tp].recovery_point for tp in in_dir},
        )
        write_offsets_checkpoint(
            log_dir / files.LOG_START_OFFSET_CHECKPOINT_FILE,
            {tp: self._logs[tp].log_start_offset for tp in in_dir},
        )

    def _log_start_changed(self, partition_log: PartitionLog) -> None:
        log_dir = self._dir_of.get((partition_log.topic, partition_log.partition))
        if log_dir is not None:
            self._write_checkpoints(log_dir)

    # -- shutdown ---------------------------------------------------------------------------

    def close_all(self) -> None:
        """Flush and close every log, write the checkpoints, then the clean-shutdown marker."""
        if self._closed:
            return
        for pl in self._logs.values():
            pl.close()
        for log_dir in self.log_dirs:
            self._write_checkpoints(log_dir)
            _write_clean_shutdown_marker(log_dir / files.CLEAN_SHUTDOWN_FILE)
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("log manager is closed")


def _write_clean_shutdown_marker(path: Path) -> None:
    data = json.dumps({"version": 0, "brokerEpoch": -1}, separators=(",", ":")).encode()
    files.atomic_write(path, data)
