"""Which compacted log to clean, and when (Kafka's LogCleaner with LogCleanerManager, one
cleaner thread's worth).

One pass chooses and cleans one log. `LogCleaner.grab_filthiest` measures every compacted
log (`dirty.py`) and takes the one with the largest dirty ratio among those whose ratio
exceeds `min.cleanable.dirty.ratio` or whose oldest dirty segment is past
`max.compaction.lag.ms`. `run_pass_async` drives `Cleaner.clean_steps` (`algorithm.py`) on
the event loop: other tasks run every `slice_ms`, fsyncs run in a worker thread (on a
segment pinned against eviction, see `handles.py`), and
`log.cleaner.io.max.bytes.per.second` is honoured, so fetches and produces go on while a log
is cleaned. A clean that fails marks its partition uncleanable until restart; an aborted one
(the log changed under it) just ends the pass.

Per log dir, `cleaner-offset-checkpoint` holds each compacted log's first dirty offset, in
Kafka's text checkpoint layout (see `checkpoint.py`): version `0`, the entry count, then one
`topic partition offset` line per log. It is written after a clean's swaps and when a
checkpoint falls outside its log (reset to the log start).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Generator
from pathlib import Path

import anyio
import anyio.lowlevel
import structlog

from odradek.broker.storage.checkpoint import read_offsets_checkpoint, write_offsets_checkpoint
from odradek.broker.storage.cleaner.algorithm import (
    Cleaner,
    CleanerStats,
    CleaningAbortedError,
    CleanResult,
    Step,
)
from odradek.broker.storage.cleaner.dirty import LogToClean, log_to_clean
from odradek.broker.storage.errors import (
    CheckpointError,
    LogClosedError,
    is_out_of_descriptors,
    is_out_of_space,
)
from odradek.broker.storage.log import PartitionLog
from odradek.broker.storage.manager import LogManager, TopicPartition

log = structlog.get_logger(__name__)

CLEANER_CHECKPOINT_FILE = "cleaner-offset-checkpoint"


class LogCleaner:
    """Chooses the log to clean, cleans it and keeps `cleaner-offset-checkpoint` (Kafka's
    LogCleaner with LogCleanerManager, one cleaner)."""

    def __init__(
        self,
        manager: LogManager,
        *,
        dedupe_buffer_size: int = 128 * 1024 * 1024,
        load_factor: float = 0.9,
        io_buffer_size: int = 512 * 1024,
        max_io_bytes_per_second: float = math.inf,
        slice_ms: float = 5.0,
    ) -> None:
        self.manager = manager
        self.cleaner = Cleaner()
        self.max_io_bytes_per_second = max_io_bytes_per_second
        self.reconfigure(dedupe_buffer_size=dedupe_buffer_size, load_factor=load_factor,
                         io_buffer_size=io_buffer_size,
                         max_io_bytes_per_second=max_io_bytes_per_second)
        self.slice_s = slice_ms / 1000
        self.uncleanable: set[TopicPartition] = set()
        self.in_progress: TopicPartition | None = None
        self._checkpoints: dict[TopicPartition, int] = {}
        for log_dir in manager.log_dirs:
            try:
                self._checkpoints.update(read_offsets_checkpoint(log_dir / CLEANER_CHECKPOINT_FILE))
            except (CheckpointError, OSError) as exc:
                log.warning(
                    "unreadable cleaner checkpoint; cleaning from the log start",
                    log_dir=str(log_dir),
                    error=str(exc),
                )

    def checkpoint_of(self, topic: str, partition: int) -> int | None:
        return self._checkpoints.get((topic, partition))

    def grab_filthiest(self, now_ms: int) -> LogToClean | None:
        """The compacted log most worth cleaning now, if any is past its thresholds."""
        best: LogToClean | None = None
        for tp, plog in self.manager.logs().items():
            if plog.closed or not plog.config.compacts or tp in self.uncleanable:
                continue
            checkpoint = self._checkpoints.get(tp)
            ltc = log_to_clean(plog, checkpoint, now_ms)
            if checkpoint is not None and checkpoint != ltc.first_dirty_offset:
                self._update_checkpoint(plog, ltc.first_dirty_offset)
            if ltc.total_bytes <= 0:
                continue
            if not (
                (ltc.needs_compaction_now and ltc.cleanable_bytes > 0)
                or ltc.cleanable_ratio > plog.config.min_cleanable_dirty_ratio
            ):
                continue
            if best is None or ltc.cleanable_ratio > best.cleanable_ratio:
                best = ltc
        return best

    def delete_retired(self, now_ms: int) -> None:
        for plog in self.manager.logs().values():
            if not plog.closed:
                plog.delete_retired(now_ms)

    def run_pass(self, now_ms: int) -> CleanResult | None:
        """Choose and clean one log synchronously; None when no log needed cleaning."""
        self.delete_retired(now_ms)
        ltc = self.grab_filthiest(now_ms)
        if ltc is None:
            return None
        steps = self.cleaner.clean_steps(ltc, now_ms)
        return self._drive_sync(ltc, steps)

    def _drive_sync(
        self, ltc: LogToClean, steps: Generator[Step, None, CleanResult]
    ) -> CleanResult | None:
        with self._cleaning(ltc) as outcome:
            while True:
                try:
                    step = next(steps)
                except StopIteration as done:
                    outcome.result = done.value
                    break
                if step is not None:
                    step()
        return outcome.result

    def reconfigure(self, *, dedupe_buffer_size: int, load_factor: float, io_buffer_size: int,
                    max_io_bytes_per_second: float) -> None:
        """New `log.cleaner.*` buffer and throughput settings, used from the next pass on (a
        dynamic broker config change; Kafka's LogCleaner.reconfigure). The logs marked
        uncleanable and the cleaning checkpoints are kept."""
        self.cleaner = Cleaner(dedupe_buffer_size=dedupe_buffer_size, load_factor=load_factor,
                               io_buffer_size=io_buffer_size)
        self.max_io_bytes_per_second = max_io_bytes_per_second

    async def run_pass_async(self, clock: Callable[[], int]) -> CleanResult | None:
        """One pass on the event loop: other tasks run every `slice_ms`, fsyncs run in a
        worker thread, and `log.cleaner.io.max.bytes.per.second` is honoured."""
        now_ms = clock()
        self.delete_retired(now_ms)
        ltc = self.grab_filthiest(now_ms)
        if ltc is None:
            return None
        stats = CleanerStats()
        steps = self.cleaner.clean_steps(ltc, now_ms, stats)
        started = slice_start = time.monotonic()
        try:
            with self._cleaning(ltc) as outcome:
                while True:
                    try:
                        step = next(steps)
                    except StopIteration as done:
                        outcome.result = done.value
                        break
                    if step is not None:
                        await anyio.to_thread.run_sync(step)
                    if time.monotonic() - slice_start >= self.slice_s:
                        await anyio.lowlevel.checkpoint()
                        slice_start = time.monotonic()
                    if math.isfinite(self.max_io_bytes_per_second):
                        ahead = stats.io_bytes / self.max_io_bytes_per_second - (
                            time.monotonic() - started
                        )
                        if ahead > 0:
                            await anyio.sleep(ahead)
                            slice_start = time.monotonic()
        finally:
            steps.close()
        return outcome.result

    def _cleaning(self, ltc: LogToClean) -> _Cleaning:
        return _Cleaning(self, ltc)

    def _done(
        self, ltc: LogToClean, result: CleanResult | None, error: BaseException | None
    ) -> None:
        plog = ltc.log
        tp = (plog.topic, plog.partition)
        self.in_progress = None
        if result is not None:
            if not plog.closed:
                try:
                    self._update_checkpoint(plog, result.next_dirty_offset)
                except OSError as exc:  # the cleaned segments stand; only progress is lost
                    self._io_failure(tp, "cleaner checkpoint", exc)
            return
        if isinstance(error, OSError):
            self._io_failure(tp, "log cleaning", error)
        elif isinstance(error, CleaningAbortedError | LogClosedError):
            log.info("log cleaning aborted", log=f"{tp[0]}-{tp[1]}", reason=str(error))
        elif isinstance(error, Exception):
            log.warning(
                "log cleaning failed; partition marked uncleanable",
                log=f"{tp[0]}-{tp[1]}",
                error=repr(error),
            )
            self.uncleanable.add(tp)

    def _io_failure(self, tp: TopicPartition, what: str, exc: OSError) -> None:
        """As Kafka's cleaner: a full disk postpones cleaning (the half-written segment is
        gone, the log untouched, the next pass tries again), and so does a file that could
        not be opened for lack of descriptors; any other I/O error fails the log dir
        (LogManager.handle_dir_failure)."""
        log_dir = self.manager.log_dir_of(*tp)
        if is_out_of_space(exc) or log_dir is None:
            log.warning(f"log dir full: {what} postponed", log=f"{tp[0]}-{tp[1]}",
                        error=str(exc))
        elif is_out_of_descriptors(exc):
            log.warning(f"out of file descriptors: {what} postponed", log=f"{tp[0]}-{tp[1]}",
                        error=str(exc))
        else:
            self.manager.handle_dir_failure(log_dir, f"{what} of {tp[0]}-{tp[1]}: {exc}")

    def _update_checkpoint(self, plog: PartitionLog, offset: int) -> None:
        tp = (plog.topic, plog.partition)
        self._checkpoints[tp] = offset
        log_dir = self.manager.log_dir_of(*tp)
        if log_dir is None:
            return
        self._write_checkpoint(log_dir)

    def _write_checkpoint(self, log_dir: Path) -> None:
        present = {
            tp: offset
            for tp, offset in self._checkpoints.items()
            if self.manager.log_dir_of(*tp) == log_dir
        }
        write_offsets_checkpoint(log_dir / CLEANER_CHECKPOINT_FILE, present)


class _Cleaning:
    """Context for one clean: marks the log in progress, records the outcome."""

    def __init__(self, owner: LogCleaner, ltc: LogToClean) -> None:
        self.owner = owner
        self.ltc = ltc
        self.result: CleanResult | None = None

    def __enter__(self) -> _Cleaning:
        self.owner.in_progress = (self.ltc.log.topic, self.ltc.log.partition)
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> bool:
        self.owner._done(self.ltc, self.result, exc)
        # Aborted or failed cleans end the pass quietly; cancellation propagates.
        return isinstance(exc, Exception)
