"""How dirty a compacted log is, and where the part that may be cleaned ends.

A log's `cleaner-offset-checkpoint` entry (see `scheduler.py`) is its first dirty offset:
below it the log was cleaned. The dirty section ends at the first uncleanable offset, the
least of the active segment's base offset, the last stable offset (an open transaction is
never cleaned) and the base of the first segment whose newest record is younger than
`min.compaction.lag.ms`; it is rounded down to a segment base. `LogToClean` measures the
clean and the cleanable bytes, whose ratio the scheduler compares with
`min.cleanable.dirty.ratio`, and whether a dirty segment's first batch is older than
`max.compaction.lag.ms` (then the log is cleaned whatever its ratio).

No bytes are parsed here: segment sizes, base offsets and timestamps come from `LogSegment`.
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.broker.storage.log import PartitionLog
from odradek.broker.storage.segment import LogSegment


def segments_in(plog: PartitionLog, start: int, end: int) -> list[LogSegment]:
    """Kafka's `logSegments(start, end)`: from the segment holding `start` (the first when
    below them all), those with a base offset below `end`."""
    segments = plog.segments
    bases = [s.base_offset for s in segments]
    first = 0
    for i, base in enumerate(bases):
        if base <= start:
            first = i
    return [s for s in segments[first:] if s.base_offset < end]


def non_active_segments_from(plog: PartitionLog, start: int) -> list[LogSegment]:
    return [
        s for s in segments_in(plog, start, plog.log_end_offset + 1) if s is not plog.active_segment
    ]


@dataclass(slots=True)
class LogToClean:
    log: PartitionLog
    first_dirty_offset: int
    first_uncleanable_offset: int  # a segment base offset
    clean_bytes: int
    cleanable_bytes: int
    needs_compaction_now: bool = False

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def cleanable_offsets(
    plog: PartitionLog, checkpoint: int | None, now_ms: int
) -> tuple[int, int, bool]:
    """(first dirty offset, first uncleanable offset, whether the checkpoint was reset).
    A checkpoint below the log start or past the log end is reset to the log start."""
    start = plog.log_start_offset
    first_dirty = start if checkpoint is None else checkpoint
    reset = False
    if first_dirty < start or first_dirty > plog.log_end_offset:
        first_dirty, reset = start, checkpoint is not None
    candidates = [plog.last_stable_offset, plog.active_segment.base_offset]
    lag = max(plog.config.min_compaction_lag_ms, 0)
    if lag > 0:
        for segment in non_active_segments_from(plog, first_dirty):
            if segment.largest_timestamp() > now_ms - lag:
                candidates.append(segment.base_offset)
                break
    return first_dirty, max(first_dirty, min(candidates)), reset


def max_compaction_delay(plog: PartitionLog, first_dirty: int, now_ms: int) -> int:
    """How far past `max.compaction.lag.ms` the oldest dirty non-active segment is (0: not)."""
    stamps = [
        ts
        for s in non_active_segments_from(plog, first_dirty)
        if (ts := s.first_batch_timestamp) > 0
    ]
    if not stamps:
        return 0
    clean_until = now_ms - max(plog.config.max_compaction_lag_ms, 0)
    earliest = min(stamps)
    return clean_until - earliest if earliest < clean_until else 0


def log_to_clean(plog: PartitionLog, checkpoint: int | None, now_ms: int) -> LogToClean:
    first_dirty, uncleanable, _ = cleanable_offsets(plog, checkpoint, now_ms)
    from_uncleanable = non_active_segments_from(plog, uncleanable)
    first_uncleanable = (
        from_uncleanable[0] if from_uncleanable else plog.active_segment
    ).base_offset
    cleanable = sum(
        s.size for s in segments_in(plog, min(first_dirty, first_uncleanable), first_uncleanable)
    )
    clean = sum(s.size for s in segments_in(plog, -1, first_dirty))
    return LogToClean(
        plog,
        first_dirty,
        first_uncleanable,
        clean,
        cleanable,
        max_compaction_delay(plog, first_dirty, now_ms) > 0,
    )
