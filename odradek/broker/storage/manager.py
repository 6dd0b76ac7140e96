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

Log dir health, as Kafka's LogDirFailureChannel and LogManager.handleLogDirFailure: an I/O
error other than a full disk in any log of a dir (a write, a read, an fsync, a failed undo of
an append) takes the whole dir offline (`handle_dir_failure`). Its logs then answer every
read and write with `LogDirOfflineError` (KAFKA_STORAGE_ERROR), its descriptors are closed,
and it gets no more checkpoints, retention, flushes, new partitions or clean-shutdown marker
(so the next start recovers it); the other dirs keep working. It stays offline until the
broker restarts. Unlike Kafka, which halts the broker once every dir has failed, the broker
keeps running (and answering with errors). A full file system (ENOSPC, EDQUOT) does not take
a dir offline: see `PartitionLog` and docs/storage.md, "Durability"; nor does a file that
cannot be opened because the process is out of descriptors (EMFILE, ENFILE): that request is
answered KAFKA_STORAGE_ERROR and the next one tries again (docs/storage.md, "File
descriptors").

File descriptors: one `HandleCache` (`handles.py`) bounds what every segment of every log
holds, sized from the soft RLIMIT_NOFILE when the manager is made (`segment_descriptors`
overrides it); cold segments are closed and reopen on next use.
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
from odradek.broker.storage.errors import (
    CheckpointError,
    LogDirOfflineError,
    StorageError,
    is_out_of_descriptors,
    is_out_of_space,
)
from odradek.broker.storage.handles import HandleCache, default_capacity
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
        segment_descriptors: int | None = None,
    ) -> None:
        """Load every partition log found in `log_dirs` (created when missing).
        `config_for(topic)` gives a topic's config (default: `defaults`). Segments hold at
        most `segment_descriptors` descriptors in all (default: `handles.default_capacity()`,
        from the soft RLIMIT_NOFILE now); cold ones are closed (see `handles.py`)."""
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        self.handles = HandleCache(
            default_capacity() if segment_descriptors is None else segment_descriptors
        )
        self.log_dirs = [Path(d) for d in log_dirs]
        self.defaults = defaults
        self._config_for = config_for
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        # Told (topic, partition) when a log's start offset moves or its dir fails, so that
        # long-polling fetches on it answer now (the broker's partitions port sets it).
        self.on_partition_changed: Callable[[str, int], None] | None = None
        # Indexes over `_logs`, so that creating or deleting one of N partitions costs O(1)
        # rather than a scan of every log (issue #10: quadratic admin requests).
        self._count_in_dir: dict[Path, int] = {d: 0 for d in self.log_dirs}
        self._partitions_by_topic: dict[str, set[int]] = {}
        self._offline: dict[Path, str] = {}  # failed log dir -> why
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
                on_dir_failure=self._log_failed,
                handles=self.handles,
            )
            self._add(tp, partition_log, log_dir)
        try:
            self._write_checkpoints(log_dir)
        except OSError as exc:
            if not is_out_of_space(exc):
                raise
            # The old checkpoints stay: their offsets are at or below the new ones, so a
            # crash only recovers more. Written again by the next checkpoint.
            log.warning("log dir full: checkpoints not written at start", dir=str(log_dir),
                        error=str(exc))
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

    # -- log dir health ---------------------------------------------------------------------

    def is_online(self, log_dir: Path) -> bool:
        return Path(log_dir) not in self._offline

    @property
    def offline_dirs(self) -> dict[Path, str]:
        """Failed log dirs and why they failed."""
        return dict(self._offline)

    def handle_dir_failure(self, log_dir: Path, reason: str) -> None:
        """Take `log_dir` offline (see the module docstring); no-op when it already is."""
        log_dir = Path(log_dir)
        if log_dir in self._offline:
            return
        self._offline[log_dir] = reason
        offline = [tp for tp, d in self._dir_of.items() if d == log_dir]
        for tp in offline:
            self._logs[tp].mark_offline(reason)
        if self.on_partition_changed is not None:
            for topic, partition in offline:
                self.on_partition_changed(topic, partition)
        log.error("log dir failed; its partitions are offline until the broker restarts",
                  dir=str(log_dir), partitions=len(offline), reason=reason)
        if all(d in self._offline for d in self.log_dirs):
            log.critical("every log dir has failed; nothing can be read or written until "
                         "the disks are fixed and the broker restarted")

    def _log_failed(self, partition_log: PartitionLog, exc: OSError) -> None:
        log_dir = self._dir_of.get((partition_log.topic, partition_log.partition))
        if log_dir is not None:
            self.handle_dir_failure(
                log_dir, f"{partition_log.topic}-{partition_log.partition}: {exc}")

    def _io_error(self, log_dir: Path, what: str, exc: OSError) -> None:
        """An I/O error outside an append (a checkpoint, a retention deletion): a full disk
        or a file not opened for lack of descriptors is logged, anything else fails the
        dir."""
        if is_out_of_space(exc):
            log.warning(f"log dir full: {what} failed", dir=str(log_dir), error=str(exc))
        elif is_out_of_descriptors(exc):  # nothing was written; the next pass tries again
            log.warning(f"out of file descriptors: {what} failed", dir=str(log_dir),
                        error=str(exc))
        else:
            self.handle_dir_failure(log_dir, f"{what}: {exc}")

    # -- creation and deletion --------------------------------------------------------------

    def create(
        self,
        topic: str,
        partition: int,
        config: LogSettings | None = None,
        *,
        now_ms: int | None = None,
    ) -> PartitionLog:
        """The log of a new partition, in the online log dir holding the fewest partitions
        (the existing log if there already is one). LogDirOfflineError when every dir failed."""
        self._check_open()
        tp = (topic, partition)
        existing = self._logs.get(tp)
        if existing is not None:
            return existing
        live = [d for d in self.log_dirs if d not in self._offline]
        if not live:
            raise LogDirOfflineError(f"cannot create {topic}-{partition}: every log dir failed")
        log_dir = min(live, key=lambda d: self._count_in_dir[d])
        partition_log = PartitionLog.open(
            log_dir / files.partition_dir_name(topic, partition),
            config if config is not None else self.config_for(topic),
            now_ms=_wall_ms() if now_ms is None else now_ms,
            on_log_start_offset_change=self._log_start_changed,
            on_dir_failure=self._log_failed,
            handles=self.handles,
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
        in between leaves a directory that the next start removes). Writes nothing before the
        files are gone, so that it frees space on a full disk; never raises for an I/O error
        (a directory that cannot be renamed or removed is logged and left)."""
        self._check_open()
        removed = self._remove((topic, partition))
        if removed is None:
            return
        partition_log, log_dir = removed
        partition_log.close_without_flush()
        doomed = log_dir / files.delete_dir_name(topic, partition, uuid.uuid4().hex)
        try:
            os.rename(partition_log.directory, doomed)
        except OSError as exc:
            log.error("cannot remove the directory of a deleted partition",
                      directory=str(partition_log.directory), error=str(exc))
            return
        shutil.rmtree(doomed, ignore_errors=True)
        if not checkpoint or log_dir in self._offline:
            return
        try:
            self._write_checkpoints(log_dir)
        except OSError as exc:  # the entry left for the partition is ignored on the next start
            self._io_error(log_dir, "checkpoint after a deletion", exc)

    # -- periodic work ----------------------------------------------------------------------

    def retention_pass(self, now_ms: int) -> int:
        """Apply retention to every online log; returns the number of segments deleted."""
        self._check_open()
        deleted = 0
        for tp, pl in list(self._logs.items()):
            if pl.closed:
                continue
            try:
                deleted += pl.enforce_retention(now_ms)
                pl.delete_retired(now_ms)  # segments retired at least file.delete.delay.ms ago
            except StorageError:  # the dir failed meanwhile
                continue
            except OSError as exc:
                self._io_error(self._dir_of[tp], f"retention of {tp[0]}-{tp[1]}", exc)
        return deleted

    def flush_pass(self, now_ms: int) -> int:
        """Apply each online log's `flush.ms`; returns how many logs were fsynced."""
        self._check_open()
        flushed = 0
        for pl in list(self._logs.values()):
            try:
                flushed += pl.flush_if_due(now_ms)
            except StorageError:  # a failed fsync took the dir offline
                continue
        return flushed

    def flush_rolled_segments(self) -> None:
        """fsync the segments every log has rolled since its recovery point and checkpoint the
        new recovery points, so a crash only re-validates active segments (Kafka flushes
        rolled segments in the background; this blocks while the fsyncs run)."""
        self._check_open()
        for pl in list(self._logs.values()):
            if pl.closed:
                continue
            try:
                pl.flush(up_to=pl.active_segment.base_offset)
            except StorageError:  # a failed fsync took the dir offline
                continue
        self.checkpoint()

    def checkpoint(self) -> None:
        """Write every online log dir's recovery-point and log-start-offset checkpoints; a
        dir whose checkpoints cannot be written is logged (full) or taken offline."""
        for log_dir in self.log_dirs:
            if log_dir in self._offline:
                continue
            try:
                self._write_checkpoints(log_dir)
            except OSError as exc:
                self._io_error(log_dir, "checkpoint", exc)

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
        if self.on_partition_changed is not None:
            self.on_partition_changed(partition_log.topic, partition_log.partition)
        log_dir = self._dir_of.get((partition_log.topic, partition_log.partition))
        if log_dir is not None:
            self._write_checkpoints(log_dir)

    # -- shutdown ---------------------------------------------------------------------------

    def close_all(self) -> None:
        """Flush and close every log, write the checkpoints, then the clean-shutdown marker.
        Never raises for an I/O error (a full disk, a failed dir): every log is closed all the
        same, and a dir where something could not be written gets no clean-shutdown marker,
        so the next start recovers it."""
        if self._closed:
            return
        unclean = set(self._offline)
        for tp, pl in self._logs.items():
            if not pl.close():
                unclean.add(self._dir_of[tp])
        for log_dir in self.log_dirs:
            if log_dir in self._offline:
                continue
            try:
                self._write_checkpoints(log_dir)
                if log_dir in unclean:
                    log.warning("log dir not closed cleanly; the next start recovers it",
                                dir=str(log_dir))
                else:
                    _write_clean_shutdown_marker(log_dir / files.CLEAN_SHUTDOWN_FILE)
            except OSError as exc:
                log.warning("checkpoints or clean-shutdown marker not written; the next start "
                            "recovers this log dir", dir=str(log_dir), error=str(exc))
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("log manager is closed")


def _write_clean_shutdown_marker(path: Path) -> None:
    data = json.dumps({"version": 0, "brokerEpoch": -1}, separators=(",", ":")).encode()
    files.atomic_write(path, data)
