"""Loading a partition log at start-up: settle what a crash left, re-validate, rebuild.

`load_log` turns a partition directory into the state `PartitionLog` runs from (its
segments, leader epoch cache, producer state, log start offset and recovery point), as
Kafka's LogLoader does:

1. Leftovers (`_settle_interrupted_swaps`, `_load_segments`). The cleaner swaps a segment in
   with renames: `.cleaned` -> `.swap`, the old segments' files -> `.deleted`, `.swap` -> no
   suffix (see `PartitionLog.replace_segments`). `.deleted` and `.cleaned` files are
   removed, and a `.swap` file at or above the lowest `.cleaned` offset with them (its
   renaming had not finished: the old segments are whole); every other `.swap` segment is
   complete, so the plain segment files in its offset range are removed and the `.swap`
   suffixes dropped. Either way the log holds the old or the new segments, never a mix that
   loses a record. `.tmp` files (an interrupted `files.atomic_write`) are removed, and index
   files whose `.log` is gone.
2. Index sanity checks: a segment whose `.index`/`.timeindex`/`.txnindex` is missing or
   inconsistent is rebuilt from its `.log`.
3. Recovery: unless the log dir was shut down cleanly, every segment from the one holding
   the recovery point onwards is re-read by `LogSegment.recover` (framing, magic, CRC-32C,
   increasing offsets; see `segment.py` for the bytes), its indexes rebuilt and a torn or
   corrupt tail cut off. The segments before it (all of them after a clean shutdown) get
   the cheap `LogSegment.check_tail` (the active one: every header) and are recovered when
   it fails, with one warning. Wherever bytes are cut, the later segments are deleted. The
   leader epochs of the batches seen are added to the epoch cache when the checkpoint lacks
   them. An unexpected exception is logged and the load redone recovering every segment.
4. A log that ends before its log start offset is emptied; an empty log gets one segment at
   the log start offset.
5. Producer state: the latest producer snapshot plus the batches after it
   (`ProducerStateManager.rebuild`).

What is read here is file names only: `<20-digit base offset><suffix>[<extra>]` in the
partition directory `<topic>-<partition>` (see `files.py`); the bytes inside are parsed by
`segment.py`, the index modules, `leader_epoch.py` and `producer_state.py`.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

import structlog

from odradek.broker.storage import files
from odradek.broker.storage.config import LogSettings
from odradek.broker.storage.errors import CorruptIndexError, CorruptSegmentError
from odradek.broker.storage.handles import HandleCache
from odradek.broker.storage.leader_epoch import LeaderEpochCache
from odradek.broker.storage.producer_state import ProducerStateManager
from odradek.broker.storage.segment import LogSegment
from odradek.wire.records import RecordBatch

log = structlog.get_logger(__name__)


@dataclass(slots=True)
class LoadedLog:
    """A partition log as found on disk, ready for `PartitionLog` to run."""

    segments: list[LogSegment]
    epochs: LeaderEpochCache
    producer_state: ProducerStateManager
    log_start_offset: int
    recovery_point: int


def load_log(
    directory: Path,
    config: LogSettings,
    *,
    now_ms: int,
    recovery_point: int = 0,
    log_start_offset: int = 0,
    had_clean_shutdown: bool = False,
    handles: HandleCache | None = None,
) -> LoadedLog:
    """Load (or create) the log in `directory` (see the module docstring). Its segments count
    their descriptors in `handles` (see `handles.py`): loading opens a `.log` only to read it
    (recovery, the tail check of a non-empty segment, producer-state replay), and what it
    opens is evicted as later logs load.

    Unless `had_clean_shutdown`, every segment from the one holding `recovery_point`
    onwards is recovered: batches re-validated, a torn or corrupt tail cut off (and any
    later segment deleted), indexes rebuilt. The segments before it get the cheap tail
    check (`LogSegment.check_tail`, the active one every header) and are recovered when it
    fails. Segments whose index files fail the sanity check are rebuilt too.

    A segment's content never makes this raise: an unexpected exception is logged (one
    warning line, the traceback at debug level) and the load retried recovering every
    segment, keeping what is readable.
    """
    opened: list[LogSegment] = []
    try:
        return _load(
            directory,
            config,
            opened,
            now_ms=now_ms,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
            handles=handles,
        )
    except Exception as exc:
        log.warning(
            "loading log failed; recovering every segment",
            partition=directory.name,
            error=f"{type(exc).__name__}: {exc}",
        )
        log.debug("loading log failed", partition=directory.name, exc_info=exc)
    for segment in opened:
        try:
            segment.close()
        except Exception:  # a half-loaded segment: releasing its descriptors is what matters
            log.debug("closing half-loaded segment failed", exc_info=True)
    return _load(
        directory,
        config,
        [],
        now_ms=now_ms,
        recovery_point=0,
        log_start_offset=log_start_offset,
        had_clean_shutdown=False,
        handles=handles,
    )


def _load(
    directory: Path,
    config: LogSettings,
    opened: list[LogSegment],
    *,
    now_ms: int,
    recovery_point: int,
    log_start_offset: int,
    had_clean_shutdown: bool,
    handles: HandleCache | None,
) -> LoadedLog:
    """`load_log`'s work; every segment it opens is added to `opened` (closed on failure)."""
    files.parse_partition_dir_name(directory.name)  # fail early on a bad name
    # A directory made here is empty: nothing to list, settle or recover (a 2,000-partition
    # CreateTopics spent most of its time in those scans of directories it had just made).
    fresh = _make_dir(directory)
    segments = [] if fresh else _load_segments(directory, config, now_ms, opened, handles)
    epochs = LeaderEpochCache(directory)
    epochs_changed = False

    def observe(batch: RecordBatch) -> None:
        nonlocal epochs_changed
        epoch = batch.partition_leader_epoch
        latest = epochs.latest_epoch
        if epoch >= 0 and (latest is None or epoch > latest):
            epochs.assign(epoch, batch.base_offset, persist=False)
            epochs_changed = True

    needs_rebuild: set[int] = set()
    for segment in segments:
        try:
            segment.sanity_check()
        except (CorruptIndexError, FileNotFoundError) as exc:
            log.warning(
                "segment index unusable, rebuilding",
                segment=str(segment.log_path),
                error=str(exc),
            )
            needs_rebuild.add(segment.base_offset)

    if had_clean_shutdown:
        recover_from = len(segments)
    else:
        recover_from = max(bisect_right([s.base_offset for s in segments], recovery_point) - 1, 0)
    # Segments below `recover_from` are trusted (flushed, or closed cleanly) and only get the
    # cheap tail check; the first one found damaged is recovered like the rest. Wherever
    # bytes are cut, the segments after that one go (the log is its longest valid prefix).
    index = 0
    while index < len(segments):
        segment = segments[index]
        damage: str | None = None  # what the tail check found, for the warning
        if index < recover_from and segment.base_offset not in needs_rebuild:
            damage = segment.check_tail(from_start=index == len(segments) - 1)
            if damage is None:
                index += 1
                continue
        try:
            cut = segment.recover(observe)
        except (OSError, CorruptSegmentError) as exc:
            damage = f"unreadable: {exc}"
            cut = segment.truncate_to(segment.base_offset, now_ms=now_ms)
        index += 1
        dropped = segments[index:] if cut else []
        if cut or damage is not None:
            log.warning(
                "truncated torn or corrupt log tail"
                if damage is None
                else "damaged log segment found at start-up; recovered it",
                partition=directory.name,
                segment=segment.log_path.name,
                damage=damage,
                next_offset=segment.next_offset,
                bytes_cut=cut,
                segments_dropped=len(dropped),
            )
        if cut:
            for later in dropped:
                later.delete()
            del segments[index:]
            break

    if segments and segments[-1].next_offset < log_start_offset:
        log.warning(
            "log ends before its log start offset; deleting all segments",
            directory=str(directory),
        )
        for segment in segments:
            segment.delete()
        segments = []
    if not segments:
        segments = [
            LogSegment.create(
                directory,
                log_start_offset,
                index_interval_bytes=config.index_interval_bytes,
                max_index_size=config.segment_index_bytes,
                now_ms=now_ms,
                handles=handles,
                fresh=fresh,
            )
        ]
        opened.extend(segments)
        epochs_changed = False
        epochs.clear()
    for segment in segments[:-1]:
        segment.release_index_handles()

    log_end_offset = segments[-1].next_offset
    log_start_offset = max(log_start_offset, segments[0].base_offset)
    recovery_point = log_end_offset if had_clean_shutdown else min(recovery_point, log_end_offset)
    epochs.truncate_from_end(log_end_offset)
    epochs.truncate_from_start(log_start_offset)
    if epochs_changed:
        epochs.persist()
    producer_state = ProducerStateManager(directory)
    producer_state.rebuild(segments, log_start_offset, log_end_offset)
    return LoadedLog(segments, epochs, producer_state, log_start_offset, recovery_point)


def _make_dir(directory: Path) -> bool:
    """Create `directory` (and its parents); True when it did not exist before."""
    try:
        directory.mkdir(parents=True)
    except FileExistsError:
        if not directory.is_dir():
            raise
        return False
    return True


def _load_segments(
    directory: Path,
    config: LogSettings,
    now_ms: int,
    opened: list[LogSegment],
    handles: HandleCache | None,
) -> list[LogSegment]:
    """Open every segment in `directory`, after settling interrupted cleanings and removing
    leftovers of interrupted deletions and index files whose `.log` is gone."""
    _settle_interrupted_swaps(directory, config, now_ms)
    log_bases: set[int] = set()
    others: list[Path] = []
    for entry in os.scandir(directory):
        if not entry.is_file():
            continue
        name = entry.name
        path = Path(entry.path)
        if name.endswith(
            (files.DELETED_SUFFIX, files.CLEANED_SUFFIX, files.SWAP_SUFFIX, files.TMP_SUFFIX)
        ):
            path.unlink(missing_ok=True)
        elif name.endswith(files.LOG_SUFFIX):
            try:
                log_bases.add(files.offset_from_file_name(name))
            except ValueError:
                log.warning("ignoring unexpected file", file=str(path))
        else:
            others.append(path)
    for path in others:
        if path.name.endswith(files.INDEX_SUFFIXES):
            try:
                base = files.offset_from_file_name(path.name)
            except ValueError:
                continue
            if base not in log_bases:
                log.warning("deleting orphaned index file", file=str(path))
                path.unlink(missing_ok=True)
    for base in sorted(log_bases):
        opened.append(
            LogSegment.open(
                directory,
                base,
                index_interval_bytes=config.index_interval_bytes,
                max_index_size=config.segment_index_bytes,
                now_ms=now_ms,
                handles=handles,
            )
        )
    return list(opened)


def _settle_interrupted_swaps(directory: Path, config: LogSettings, now_ms: int) -> None:
    """Finish or undo a segment swap a crash interrupted (Kafka's LogLoader, see the module
    docstring). `.deleted` files go; `.swap` files at or above the lowest `.cleaned` offset
    belong to a swap whose first renaming step had not finished and go with the `.cleaned`
    files; each remaining `.swap` segment replaces the plain segment files whose base offset
    lies in [its base offset, its next offset) (at least its own base offset, so an empty
    cleaned segment still replaces the files it was named after), then loses its suffix."""
    swaps: list[tuple[int, Path]] = []
    cleaned: list[Path] = []
    min_cleaned: int | None = None
    for entry in os.scandir(directory):
        if not entry.is_file():
            continue
        name = entry.name
        path = Path(entry.path)
        if name.endswith(files.DELETED_SUFFIX):
            path.unlink(missing_ok=True)
            continue
        if not name.endswith((files.CLEANED_SUFFIX, files.SWAP_SUFFIX)):
            continue
        try:
            offset = files.offset_from_file_name(name)
        except ValueError:
            log.warning("deleting unexpected file", file=str(path))
            path.unlink(missing_ok=True)
            continue
        if name.endswith(files.CLEANED_SUFFIX):
            cleaned.append(path)
            min_cleaned = offset if min_cleaned is None else min(min_cleaned, offset)
        else:
            swaps.append((offset, path))
    valid: list[tuple[int, Path]] = []
    for offset, path in swaps:
        if min_cleaned is not None and offset >= min_cleaned:
            log.info("deleting swap file of an unfinished segment swap", file=str(path))
            path.unlink(missing_ok=True)
        else:
            valid.append((offset, path))
    for path in cleaned:
        path.unlink(missing_ok=True)
    if not valid:
        return
    low: int | None = None
    high = -1
    for offset, path in valid:
        if path.name != files.log_file(directory, offset, files.SWAP_SUFFIX).name:
            continue
        segment = LogSegment.open(
            directory,
            offset,
            index_interval_bytes=config.index_interval_bytes,
            max_index_size=config.segment_index_bytes,
            now_ms=now_ms,
            suffix=files.SWAP_SUFFIX,
        )
        try:
            next_offset = segment.next_offset
        except CorruptSegmentError:
            next_offset = offset + 1  # recovery will cut it; it still replaces its own base
        finally:
            segment.close()
        low = offset if low is None else min(low, offset)
        high = max(high, next_offset, offset + 1)
    if low is not None:
        for entry in os.scandir(directory):
            name = entry.name
            if not entry.is_file() or not name.endswith((files.LOG_SUFFIX, *files.INDEX_SUFFIXES)):
                continue
            try:
                offset = files.offset_from_file_name(name)
            except ValueError:
                continue
            if low <= offset < high:
                log.info("deleting segment file replaced by an interrupted swap", file=name)
                Path(entry.path).unlink(missing_ok=True)
    for _, path in valid:
        log.info("completing interrupted segment swap", file=str(path))
        os.replace(path, path.with_name(path.name[: -len(files.SWAP_SUFFIX)]))
    files.fsync_dir(directory)
