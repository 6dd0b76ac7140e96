"""Log compaction (odradek.broker.storage.cleaner): the last record of each key survives at its
original offset, tombstones go after delete.retention.ms, the active segment and open
transactions are left alone, aborted data goes, producers keep their sequences, the segment
swap survives a crash at every step, and readers are not disturbed."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from storage_testutil import verify_segment_files

from odradek.broker.storage import files
from odradek.broker.storage.cleaner import (
    CLEANER_CHECKPOINT_FILE,
    Cleaner,
    CleaningAbortedError,
    LogCleaner,
    OffsetMap,
    empty_batch,
    group_segments_by_size,
    log_to_clean,
)
from odradek.broker.storage.log import PartitionLog
from odradek.broker.storage.manager import LogManager
from odradek.broker.storage.producer_state import Origin, OutOfOrderSequenceError
from odradek.broker.storage.segment import LogSegment
from odradek.config import LogConfig
from odradek.wire.records import (
    ATTR_DELETE_HORIZON,
    Record,
    RecordBatch,
    build_batch,
    build_control_batch,
    iter_batches,
)

CFG_OVERRIDES = {
    "internal.segment.bytes": "600",
    "index.interval.bytes": "64",
    "cleanup.policy": "compact",
    "delete.retention.ms": "1000",
    "file.delete.delay.ms": "0",
}
CFG = LogConfig.from_overrides(CFG_OVERRIDES)
Rec = tuple[int, bytes | None, bytes | None]  # offset, key, value


def cfg(changes: dict[str, str]) -> LogConfig:
    """CFG with these topic configs changed."""
    return LogConfig.from_overrides({**CFG_OVERRIDES, **changes})


def open_log(directory: Path, config: LogConfig = CFG) -> PartitionLog:
    return PartitionLog.open(directory, config, now_ms=0)


def put(
    log: PartitionLog,
    records: list[tuple[bytes | None, bytes | None]],
    *,
    ts: int = 1_000,
    compression: int = 0,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    txn: bool = False,
    timestamp_type: int = 0,
) -> int:
    """Append one batch; returns its first offset."""
    raw = build_batch(
        [Record(i, i, k, v) for i, (k, v) in enumerate(records)],
        base_timestamp=ts,
        compression=compression,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=txn,
        timestamp_type=timestamp_type,
    )
    return log.append(memoryview(bytearray(raw)), leader_epoch=0, now_ms=ts).first_offset


def end_txn(log: PartitionLog, pid: int, *, commit: bool, epoch: int = 0, ts: int = 2_000) -> int:
    raw = build_control_batch(
        commit=commit, producer_id=pid, producer_epoch=epoch, coordinator_epoch=0, timestamp_ms=ts
    )
    info = log.append(
        memoryview(bytearray(raw)), leader_epoch=0, now_ms=ts, origin=Origin.COORDINATOR
    )
    return info.first_offset


def read_batches(log: PartitionLog) -> list[RecordBatch]:
    out: list[RecordBatch] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        if not data:
            break
        for b in iter_batches(memoryview(data)):
            assert b.crc_ok()
            out.append(b)
            offset = b.next_offset
    return out


def read_all(log: PartitionLog) -> list[Rec]:
    return [
        (b.base_offset + r.offset_delta, r.key, r.value)
        for b in read_batches(log)
        if not b.is_control
        for r in b.records()
    ]


def latest(records: list[Rec]) -> dict[bytes | None, tuple[int, bytes | None]]:
    out: dict[bytes | None, tuple[int, bytes | None]] = {}
    for offset, key, value in records:
        out[key] = (offset, value)
    return out


def check_files(log: PartitionLog) -> None:
    """Every segment passes kafka-dump-log's checks; offsets increase across segments."""
    last = -1
    for segment in log.segments:
        verify_segment_files(log.directory, segment.base_offset)
        for header in segment.batch_headers():
            assert header.base_offset > last
            last = header.last_offset


def fill(log: PartitionLog, keys: int, rounds: int, *, ts: int = 1_000) -> list[Rec]:
    """`rounds` updates of every key, one record per batch; returns what was written."""
    written: list[Rec] = []
    for r in range(rounds):
        for k in range(keys):
            key, value = f"k{k}".encode(), f"v{r}-{k}".encode()
            written.append((put(log, [(key, value)], ts=ts + r), key, value))
    return written


# -- the basics ----------------------------------------------------------------------------------


def test_last_value_per_key_survives_at_its_original_offset(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    written = fill(log, keys=7, rounds=30)
    active_base = log.active_segment.base_offset
    result = Cleaner().clean(log, now_ms=10_000)
    assert result.next_dirty_offset == active_base
    got = read_all(log)
    # Below the active segment exactly one record per key: its last one there, same offset
    # (the active segment is not mapped, so its newer copies do not count).
    below = [r for r in got if r[0] < active_base]
    expected_below = sorted(
        (off, k, v) for k, (off, v) in latest([r for r in written if r[0] < active_base]).items()
    )
    assert sorted(below) == expected_below
    assert [r for r in got if r[0] >= active_base] == [r for r in written if r[0] >= active_base]
    assert latest(got) == latest(written)
    assert all(r in written for r in got)
    assert log.log_end_offset == written[-1][0] + 1
    check_files(log)


def test_active_segment_is_untouched(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, keys=3, rounds=25)
    active = log.active_segment
    before = active.log_path.read_bytes()
    Cleaner().clean(log, now_ms=10_000)
    assert log.active_segment is active
    assert active.log_path.read_bytes() == before
    # a log with only its active segment has nothing to clean
    lone = open_log(tmp_path / "u-0")
    fill(lone, keys=2, rounds=2)
    assert len(lone.segments) == 1
    assert Cleaner().clean(lone, now_ms=10_000).next_dirty_offset == 0
    assert len(read_all(lone)) == 4


def test_appends_and_restart_after_cleaning(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    written = fill(log, keys=5, rounds=20)
    Cleaner().clean(log, now_ms=10_000)
    written += fill(log, keys=5, rounds=3, ts=5_000)
    expected = read_all(log)
    assert latest(expected) == latest(written)
    log.close()
    assert not list((tmp_path / "t-0").glob("*.deleted"))
    reopened = open_log(tmp_path / "t-0")
    assert read_all(reopened) == expected
    check_files(reopened)
    # unclean restart: recovery re-validates every segment
    reopened.close()
    again = PartitionLog.open(tmp_path / "t-0", CFG, now_ms=0, recovery_point=0)
    assert read_all(again) == expected


def test_tombstones_go_after_delete_retention(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    put(log, [(b"gone", b"v1"), (b"kept", b"x")])
    tomb = put(log, [(b"gone", None)])
    fill(log, keys=4, rounds=12)  # roll the tombstone out of the active segment
    now = 50_000
    Cleaner().clean(log, now_ms=now)
    got = read_all(log)
    assert (tomb, b"gone", None) in got
    assert not [r for r in got if r[1] == b"gone" and r[2] is not None]
    holder = next(b for b in read_batches(log) if b.base_offset == tomb)
    assert holder.attributes & ATTR_DELETE_HORIZON
    assert holder.base_timestamp == now + CFG.delete_retention_ms
    # The record keeps its timestamp though the base timestamp is now the horizon.
    rec = next(iter(holder.records()))
    assert holder.base_timestamp + rec.timestamp_delta == 1_000
    Cleaner().clean(log, now_ms=now + CFG.delete_retention_ms - 1)
    assert (tomb, b"gone", None) in read_all(log)
    Cleaner().clean(log, now_ms=now + CFG.delete_retention_ms)
    got = read_all(log)
    assert not [r for r in got if r[1] == b"gone"]
    assert [r for r in got if r[1] == b"kept"] == [(1, b"kept", b"x")]
    check_files(log)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_compressed_batches_keep_their_codec(tmp_path: Path, codec: int) -> None:
    log = open_log(tmp_path / "t-0", cfg({"internal.segment.bytes": "300"}))
    for r in range(12):
        put(
            log,
            [(f"k{k}".encode(), f"v{r}-{k}".encode() * 5) for k in range(r % 4, 6)],
            ts=1_000 + r,
            compression=codec,
        )
    before = read_all(log)
    assert len(log.segments) > 2
    Cleaner().clean(log, now_ms=10_000)
    after = read_all(log)
    assert latest(after) == latest(before)
    assert len(after) < len(before)
    batches = read_batches(log)
    assert {b.compression for b in batches} == {codec}
    check_files(log)


def test_log_append_time_batches_keep_their_timestamp(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    for r in range(12):
        put(log, [(b"a", b"%d" % r), (f"b{r}".encode(), b"x")], ts=1_000 + r, timestamp_type=1)
    before = {b.base_offset: b.max_timestamp for b in read_batches(log)}
    Cleaner().clean(log, now_ms=10_000)
    for b in read_batches(log):
        assert b.timestamp_type == 1
        assert b.max_timestamp == before[b.base_offset]
    check_files(log)


def test_keyless_records_are_dropped(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    put(log, [(None, b"no key"), (b"k", b"v")])
    fill(log, keys=2, rounds=15)
    result = Cleaner().clean(log, now_ms=10_000)
    assert result.stats.invalid_records == 1
    assert not [r for r in read_all(log) if r[1] is None]


def test_small_segments_are_grouped(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, keys=3, rounds=40)
    segments = len(log.segments)
    Cleaner().clean(log, now_ms=10_000)
    assert len(log.segments) == segments  # each source segment was nearly full
    Cleaner().clean(log, now_ms=10_000)
    assert len(log.segments) == 2  # the emptied segments merge into one
    check_files(log)


def test_grouping_respects_sizes_and_offset_range(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, keys=3, rounds=40)
    segments = log.segments[:-1]
    sizes = [s.size for s in segments]
    groups = group_segments_by_size(segments, 2 * max(sizes), 10**6, log.active_segment.base_offset)
    assert [s for g in groups for s in g] == segments
    assert all(sum(s.size for s in g) <= 2 * max(sizes) for g in groups)
    assert len(groups) < len(segments)
    single = group_segments_by_size(segments, 10**9, 10**6, segments[-1].base_offset + 2**31 + 1)
    assert [s for g in single for s in g] == segments
    assert len(single[-1]) == 1  # the last segment's range would not fit int32 offsets


def test_map_budget_spreads_the_work_over_passes(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    written = fill(log, keys=40, rounds=4)
    cleaner = Cleaner(dedupe_buffer_size=20 * 130, load_factor=1.0)  # about 20 keys
    dirty = 0
    passes = 0
    while dirty < log.active_segment.base_offset:
        result = cleaner.clean(log, first_dirty_offset=dirty, now_ms=10_000)
        assert result.next_dirty_offset > dirty
        dirty = result.next_dirty_offset
        passes += 1
        assert latest(read_all(log)) == latest(written)
    assert passes > 2
    assert len(read_all(log)) < len(written)
    check_files(log)


def test_offset_map_budget() -> None:
    m = OffsetMap(0)
    assert m.put(b"first", 1)  # the first key always fits
    assert not m.put(b"second", 2)
    assert m.put(b"first", 3)  # known keys still move
    assert m.get(b"first") == 3 and m.get(b"second") == -1


def test_empty_batch_layout() -> None:
    raw = build_batch(
        [(b"k", b"v"), (b"k2", None)],
        base_offset=100,
        base_timestamp=5,
        compression=1,
        producer_id=9,
        producer_epoch=2,
        base_sequence=40,
        is_transactional=True,
    )
    source = RecordBatch(raw)
    empty = RecordBatch(empty_batch(source))
    assert empty.size == 61 and empty.crc_ok()
    assert empty.records_count == 0 and list(empty.records()) == []
    assert (empty.base_offset, empty.last_offset) == (100, 101)
    assert (empty.producer_id, empty.producer_epoch, empty.base_sequence) == (9, 2, 40)
    assert empty.last_sequence == 41
    assert empty.compression == 0 and empty.is_transactional and not empty.is_control
    assert empty.base_timestamp == -1 and empty.max_timestamp == source.max_timestamp


# -- transactions --------------------------------------------------------------------------------


def test_aborted_data_goes_committed_stays(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    put(log, [(b"a", b"aborted")], pid=1, epoch=0, seq=0, txn=True)
    put(log, [(b"c", b"committed")], pid=2, epoch=0, seq=0, txn=True)
    abort_at = end_txn(log, 1, commit=False)
    commit_at = end_txn(log, 2, commit=True)
    # Both producers move on, so their old batches are not their last.
    put(log, [(b"p1", b"later")], pid=1, epoch=0, seq=1)
    put(log, [(b"p2", b"later")], pid=2, epoch=0, seq=1)
    fill(log, keys=3, rounds=12)
    assert log.collect_aborted_txns(0, log.log_end_offset)
    Cleaner().clean(log, now_ms=10_000)
    got = read_all(log)
    assert not [r for r in got if r[1] == b"a"]
    assert (1, b"c", b"committed") in got
    markers = {b.base_offset: b for b in read_batches(log) if b.is_control}
    # The ABORT marker saw its data go in this pass: kept, with its index entry. The COMMIT
    # marker still has data: kept without a horizon.
    assert abort_at in markers and commit_at in markers
    assert not markers[commit_at].has_delete_horizon
    assert [t.last_offset for t in log.collect_aborted_txns(0, log.log_end_offset)] == [abort_at]
    # Next pass: no aborted data left, so the ABORT marker gets a delete horizon, then goes.
    Cleaner().clean(log, now_ms=20_000)
    markers = {b.base_offset: b for b in read_batches(log) if b.is_control}
    assert markers[abort_at].has_delete_horizon
    assert log.collect_aborted_txns(0, log.log_end_offset) == []
    Cleaner().clean(log, now_ms=20_000 + CFG.delete_retention_ms)
    markers = {b.base_offset: b for b in read_batches(log) if b.is_control}
    assert abort_at not in markers and commit_at in markers
    check_files(log)


def test_commit_marker_goes_once_its_data_is_compacted(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    put(log, [(b"k0", b"in txn")], pid=2, epoch=0, seq=0, txn=True)
    commit_at = end_txn(log, 2, commit=True)
    put(log, [(b"x", b"later")], pid=2, epoch=0, seq=1)
    fill(log, keys=3, rounds=12)  # overwrites k0
    # The first pass still reads the transaction's data (and drops it): the marker stays.
    Cleaner().clean(log, now_ms=10_000)
    marker = next(b for b in read_batches(log) if b.is_control)
    assert marker.base_offset == commit_at and not marker.has_delete_horizon
    assert not [r for r in read_all(log) if r[2] == b"in txn"]
    # The next finds no data of it: a delete horizon; past that the marker goes.
    Cleaner().clean(log, now_ms=20_000)
    marker = next(b for b in read_batches(log) if b.is_control)
    assert marker.base_offset == commit_at and marker.has_delete_horizon
    assert marker.base_timestamp == 20_000 + CFG.delete_retention_ms
    Cleaner().clean(log, now_ms=20_000 + CFG.delete_retention_ms - 1)
    assert [b for b in read_batches(log) if b.is_control]
    Cleaner().clean(log, now_ms=20_000 + CFG.delete_retention_ms)
    assert not [b for b in read_batches(log) if b.is_control]


def test_open_transaction_is_not_cleaned(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, keys=3, rounds=8)
    first = put(log, [(b"k0", b"open txn")], pid=3, epoch=0, seq=0, txn=True)
    fill(log, keys=3, rounds=12)
    assert log.last_stable_offset == first
    holding = next(s for s in reversed(log.segments) if s.base_offset <= first)
    untouched = {s.base_offset: s.log_path.read_bytes() for s in log.segments if s is not holding}
    untouched_from = holding.base_offset
    holding_bytes = holding.log_path.read_bytes()
    result = Cleaner().clean(log, now_ms=10_000)
    assert result.next_dirty_offset == untouched_from
    assert holding.log_path.read_bytes() == holding_bytes
    for segment in log.segments:
        if segment.base_offset >= untouched_from and segment is not holding:
            assert segment.log_path.read_bytes() == untouched[segment.base_offset]
    assert (first, b"k0", b"open txn") in read_all(log)
    # once committed, the transaction's segment becomes cleanable
    end_txn(log, 3, commit=True, ts=3_000)
    fill(log, keys=3, rounds=10)
    result = Cleaner().clean(log, first_dirty_offset=untouched_from, now_ms=10_000)
    assert result.next_dirty_offset > first
    assert (first, b"k0", b"open txn") not in read_all(log)


def test_producer_keeps_its_sequence_after_compaction(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    pid = 11
    for seq in range(5):
        put(log, [(b"shared", b"p%d" % seq)], pid=pid, epoch=0, seq=seq)
    last_offset = log.log_end_offset - 1
    fill(log, keys=2, rounds=1)
    put(log, [(b"shared", b"newer")])  # supersedes every record of the producer
    fill(log, keys=2, rounds=12)
    Cleaner().clean(log, now_ms=10_000)
    own = [b for b in read_batches(log) if b.producer_id == pid]
    # only the last batch survives, emptied, still carrying the producer's last sequence
    assert [(b.last_offset, b.records_count, b.last_sequence) for b in own] == [(last_offset, 0, 4)]
    assert not [r for r in read_all(log) if r[2] is not None and r[2].startswith(b"p")]
    put(log, [(b"more", b"m")], pid=pid, epoch=0, seq=5)
    log.close()
    # Restart from the segments alone (no snapshot): the state comes from the empty batch.
    for snapshot in directory.glob("*.snapshot"):
        snapshot.unlink()
    reopened = PartitionLog.open(directory, CFG, now_ms=0, recovery_point=0)
    entry = reopened.producer_state.last_entry(pid)
    assert entry is not None and entry.last_seq == 5
    with pytest.raises(OutOfOrderSequenceError):
        put(reopened, [(b"more", b"gap")], pid=pid, epoch=0, seq=9)
    put(reopened, [(b"more", b"next")], pid=pid, epoch=0, seq=6)


def test_producer_state_rebuilt_over_cleaned_segments(tmp_path: Path) -> None:
    """Without snapshots, the cleaned log rebuilds the same state the live log had."""
    directory = tmp_path / "t-0"
    log = open_log(directory)
    for seq in range(3):
        put(log, [(b"a", b"%d" % seq)], pid=21, epoch=0, seq=seq)
        put(log, [(b"b", b"%d" % seq)], pid=22, epoch=1, seq=seq, txn=True)
    end_txn(log, 22, commit=False, epoch=1)
    fill(log, keys=3, rounds=12)
    Cleaner().clean(log, now_ms=10_000)
    state = {pid: (e.producer_epoch, e.last_seq) for pid, e in log.producer_state.producers.items()}
    log.close()
    for snapshot in directory.glob("*.snapshot"):
        snapshot.unlink()
    reopened = PartitionLog.open(directory, CFG, now_ms=0, recovery_point=0)
    rebuilt = {
        pid: (e.producer_epoch, e.last_seq) for pid, e in reopened.producer_state.producers.items()
    }
    assert rebuilt == state
    assert reopened.producer_state.first_unstable_offset() is None


# -- crash safety of the swap ----------------------------------------------------------------------


class Crash(BaseException):
    """A simulated process death (BaseException: nothing may clean up after it)."""


def crash_log(directory: Path) -> tuple[PartitionLog, list[Rec]]:
    """A log whose clean replaces groups of several segments, with a retained ABORT marker
    (so cleaned segments have all four files)."""
    log = open_log(directory)
    put(log, [(b"t", b"aborted")], pid=1, epoch=0, seq=0, txn=True)
    end_txn(log, 1, commit=False)
    put(log, [(b"t2", b"x")], pid=1, epoch=0, seq=1)
    written: list[Rec] = []
    for r in range(40):
        for k in range(3):
            # every 6 rounds a new set of keys, so every cleaned group keeps records
            key, value = f"g{r // 6}-{k}".encode(), f"v{r}".encode()
            written.append((put(log, [(key, value)]), key, value))
    put(log, [(b"g0-1", None)])
    written += fill(log, keys=2, rounds=10)
    log.config = cfg({"internal.segment.bytes": "1500"})  # groups of 2-3 segments
    return log, written


def snapshot_dir(directory: Path, into: Path) -> Path:
    """The partition directory as a killed process would leave it."""
    image = into / directory.name
    shutil.copytree(directory, image)
    return image


def abandon_all(log: PartitionLog) -> None:
    for segment in log.segments + [s for _, s in log._retired]:
        for index in (segment.offset_index, segment.time_index, segment.txn_index):
            index.close()
        if segment._fd is not None:
            os.close(segment._fd)
            segment._fd = None


def clean_with_renames(log: PartitionLog, hook: Callable[[Path], None]) -> None:
    """Clean `log`, calling `hook(source)` before each rename inside its directory."""
    real = os.replace

    def replacing(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if Path(src).parent == log.directory:
            hook(Path(src))
        real(src, dst, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "replace", replacing)
        Cleaner().clean(log, now_ms=10_000)


def check_recovered(image: Path, before: list[Rec], after: list[Rec]) -> list[Rec]:
    log = PartitionLog.open(image, CFG, now_ms=0, recovery_point=0)
    try:
        got = read_all(log)
        assert all(r in before for r in got), "a record appeared that was never written"
        assert all(r in got for r in after), "a record the clean kept was lost"
        found = latest(got)
        for key, newest in latest(after).items():
            assert found[key] == newest
        offsets = [r[0] for r in got]
        assert offsets == sorted(set(offsets))
        assert log.log_end_offset == before[-1][0] + 1
        assert not [p for p in image.iterdir() if p.name.endswith((".swap", ".cleaned"))]
        check_files(log)
        return got
    finally:
        log.close()


def test_crash_at_every_step_of_the_swap(tmp_path: Path) -> None:
    renamed: list[str] = []
    counted, _ = crash_log(tmp_path / "count" / "t-0")
    clean_with_renames(counted, lambda src: renamed.append(src.name))
    after = read_all(counted)
    counted.close()
    # several groups, each renaming up to 4 files .cleaned->.swap, old ->.deleted, .swap->
    assert len(renamed) >= 12
    assert any(name.endswith(".txnindex.swap") for name in renamed)
    outcomes: set[str] = set()
    for crash_at in range(len(renamed) + 1):
        directory = tmp_path / f"run{crash_at}" / "t-0"
        images = tmp_path / f"image{crash_at}"
        images.mkdir()
        log, _ = crash_log(directory)
        before = read_all(log)
        calls = 0

        def crash_on_call(
            _: Path, at: int = crash_at, where: Path = directory, into: Path = images
        ) -> None:
            nonlocal calls
            if calls == at:
                snapshot_dir(where, into)
                raise Crash
            calls += 1

        with pytest.raises(Crash):
            clean_with_renames(log, crash_on_call)
            snapshot_dir(directory, images)  # finished: crash before the deferred deletes
            raise Crash
        abandon_all(log)
        got = check_recovered(images / "t-0", before, after)
        outcomes.add("new" if got == after else "old" if got == before else "mixed")
    assert {"old", "new"} <= outcomes


def test_leftover_cleaned_and_swap_files(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory)
    written = fill(log, keys=3, rounds=20)
    first = log.segments[0]
    log.close()
    # a `.cleaned` segment and a `.swap` log at the same base: an unfinished first rename
    stem = files.offset_prefix(first.base_offset)
    shutil.copy(directory / f"{stem}.log", directory / f"{stem}.log.swap")
    shutil.copy(directory / f"{stem}.index", directory / f"{stem}.index.cleaned")
    (directory / f"{stem}.log.deleted").write_bytes(b"junk")
    reopened = open_log(directory)
    assert read_all(reopened) == written
    assert not [p for p in directory.iterdir() if p.suffix in (".swap", ".cleaned", ".deleted")]


def test_swap_completes_over_a_partly_deleted_old_set(tmp_path: Path) -> None:
    """An empty `.swap` segment still replaces the old files named after its base offset."""
    directory = tmp_path / "t-0"
    log = open_log(directory)
    fill(log, keys=3, rounds=20)
    first = log.segments[0]
    log.close()
    empty = LogSegment.create(directory, first.base_offset, now_ms=0, suffix=files.SWAP_SUFFIX)
    empty.close()
    reopened = open_log(directory)
    assert reopened.segments[0].base_offset == first.base_offset
    assert reopened.segments[0].size == 0
    check_files(reopened)


# -- readers, concurrent changes and the event loop ------------------------------------------------


def test_reads_and_appends_while_cleaning(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", cfg({"file.delete.delay.ms": "60000"}))
    written = fill(log, keys=5, rounds=20)
    old_first = log.segments[0]
    held = old_first.read(0, 1 << 20)  # a reader's view before the clean
    ltc = log_to_clean(log, None, 10_000)
    steps = Cleaner(io_buffer_size=8192).clean_steps(ltc, 10_000)
    seen = 0
    for step in steps:
        if step is not None:
            step()
        seen += 1
        if seen % 3 == 0:
            written.append(
                (put(log, [(b"live", b"%d" % seen)], ts=2_000 + seen), b"live", b"%d" % seen)
            )
            assert latest(read_all(log)) == latest(written)
    assert seen > 5
    assert latest(read_all(log)) == latest(written)
    # A reader that still holds the replaced segment reads it as it was.
    assert old_first not in log.segments
    assert old_first.read(0, 1 << 20) == held
    assert old_first.log_path.name.endswith(files.DELETED_SUFFIX)
    assert log.delete_retired(10_000 + 59_999) == 0
    assert log.delete_retired(10_000 + 60_000) > 0
    assert not old_first.log_path.exists()


def test_retention_during_cleaning_aborts_it(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, keys=5, rounds=20)
    before = read_all(log)
    ltc = log_to_clean(log, None, 10_000)
    steps = Cleaner(io_buffer_size=8192).clean_steps(ltc, 10_000)
    next(steps)
    log.delete_records_before(log.segments[1].base_offset)  # deletes the first segment
    with pytest.raises(CleaningAbortedError):
        for step in steps:
            if step is not None:
                step()
    assert not [p for p in log.directory.iterdir() if p.name.endswith(".cleaned")]
    assert read_all(log) == [r for r in before if r[0] >= log.log_start_offset]


def make_manager(tmp_path: Path, config: LogConfig = CFG) -> LogManager:
    return LogManager([tmp_path / "logs"], config, now_ms=0)


def test_log_cleaner_picks_dirty_logs_and_checkpoints(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    compacted = manager.create("c", 0, now_ms=0)
    deleting = manager.create("d", 0, cfg({"cleanup.policy": "delete"}), now_ms=0)
    fill(compacted, keys=3, rounds=20)
    fill(deleting, keys=3, rounds=20)
    cleaner = LogCleaner(manager)
    result = cleaner.run_pass(10_000)
    assert result is not None
    assert cleaner.checkpoint_of("c", 0) == compacted.active_segment.base_offset
    assert cleaner.checkpoint_of("d", 0) is None
    checkpoint = (tmp_path / "logs" / CLEANER_CHECKPOINT_FILE).read_text().split("\n")
    assert f"c 0 {compacted.active_segment.base_offset}" in checkpoint
    assert cleaner.run_pass(10_000) is None  # now clean: below the dirty ratio
    fill(compacted, keys=3, rounds=30)
    assert cleaner.run_pass(10_000) is not None  # dirty again
    # a new cleaner resumes from the checkpoint file
    assert LogCleaner(manager).checkpoint_of("c", 0) == cleaner.checkpoint_of("c", 0)
    manager.close_all()


def test_compaction_lags(tmp_path: Path) -> None:
    lagging = cfg({"min.compaction.lag.ms": "5000"})
    manager = make_manager(tmp_path, lagging)
    plog = manager.create("c", 0, now_ms=0)
    fill(plog, keys=3, rounds=20, ts=1_000)
    cleaner = LogCleaner(manager)
    assert cleaner.run_pass(1_000 + 5_000) is None  # the newest segments are too young
    assert cleaner.run_pass(1_100 + 5_000) is not None
    manager.close_all()


def test_max_compaction_lag_forces_a_clean(tmp_path: Path) -> None:
    never_by_ratio = cfg({"min.cleanable.dirty.ratio": "1.0", "max.compaction.lag.ms": "1000"})
    manager = make_manager(tmp_path, never_by_ratio)
    plog = manager.create("c", 0, now_ms=0)
    fill(plog, keys=3, rounds=20, ts=1_000)
    cleaner = LogCleaner(manager)
    assert not log_to_clean(plog, None, 2_000).needs_compaction_now
    assert cleaner.run_pass(2_000) is None
    assert log_to_clean(plog, None, 2_001).needs_compaction_now
    assert cleaner.run_pass(2_001) is not None
    manager.close_all()


def test_compact_delete_applies_both(tmp_path: Path) -> None:
    config = cfg({"cleanup.policy": "compact,delete", "retention.ms": "5000"})
    manager = make_manager(tmp_path, config)
    plog = manager.create("c", 0, now_ms=0)
    fill(plog, keys=3, rounds=10, ts=1_000)
    fill(plog, keys=3, rounds=20, ts=20_000)
    assert manager.retention_pass(21_000) > 0
    assert plog.log_start_offset > 0
    assert LogCleaner(manager).run_pass(21_000) is not None
    got = read_all(plog)
    assert all(r[0] >= plog.log_start_offset and r[2] is not None for r in got)
    assert latest(got)[b"k0"][1] == b"v19-0"
    assert len(got) < 3 * 20
    manager.close_all()


def test_cleaning_on_the_event_loop_lets_other_tasks_run(tmp_path: Path) -> None:
    manager = make_manager(tmp_path)
    plog = manager.create("c", 0, now_ms=0)
    written = fill(plog, keys=50, rounds=12)
    cleaner = LogCleaner(manager, io_buffer_size=8192, slice_ms=0)
    ticks = 0

    async def main() -> None:
        nonlocal ticks
        done = anyio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            assert await cleaner.run_pass_async(lambda: 10_000) is not None
            done.set()

    anyio.run(main)
    assert ticks > 5
    assert latest(read_all(plog)) == latest(written)
    manager.close_all()


def test_failed_clean_marks_the_log_uncleanable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = make_manager(tmp_path)
    plog = manager.create("c", 0, now_ms=0)
    fill(plog, keys=3, rounds=20)
    cleaner = LogCleaner(manager)

    def broken(*args: Any, **kwargs: Any) -> Iterator[None]:
        raise RuntimeError("boom")
        yield None

    monkeypatch.setattr(cleaner.cleaner, "clean_steps", broken)
    assert cleaner.run_pass(10_000) is None
    assert ("c", 0) in cleaner.uncleanable
    monkeypatch.undo()
    assert cleaner.run_pass(10_000) is None  # skipped from now on
    manager.close_all()


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
def test_an_io_error_while_cleaning_postpones_on_a_full_disk_and_fails_the_dir_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    manager = make_manager(tmp_path)
    plog = manager.create("c", 0, now_ms=0)
    written = fill(plog, keys=3, rounds=20)
    cleaner = LogCleaner(manager)
    real_pwrite, real_write = os.pwrite, os.write

    def failing(real: Callable[..., int]) -> Callable[..., int]:
        def call(fd: int, data: Any, *rest: Any) -> int:
            if os.readlink(f"/proc/self/fd/{fd}").endswith(".cleaned"):
                raise OSError(code, os.strerror(code))
            return real(fd, data, *rest)
        return call

    monkeypatch.setattr(os, "pwrite", failing(real_pwrite))
    monkeypatch.setattr(os, "write", failing(real_write))
    assert cleaner.run_pass(10_000) is None
    monkeypatch.undo()
    assert ("c", 0) not in cleaner.uncleanable
    assert not [p for p in plog.directory.iterdir() if p.name.endswith(".cleaned")]
    if code == errno.ENOSPC:  # nothing lost, the log online, and the next pass cleans
        assert manager.is_online(tmp_path / "logs")
        assert set(read_all(plog)) <= set(written)  # a group may be cleaned before the error
        assert latest(read_all(plog)) == latest(written)
        assert cleaner.run_pass(10_000) is not None
        assert latest(read_all(plog)) == latest(written)
    else:  # as Kafka's cleaner: the dir goes offline
        assert not manager.is_online(tmp_path / "logs")
        assert plog.offline
    manager.close_all()


# -- a model ---------------------------------------------------------------------------------------

KEYS = [b"a", b"b", b"c", b"d", b"e"]
Op = tuple[str, int, bytes | None]
ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("put"), st.integers(0, len(KEYS) - 1), st.none() | st.binary(max_size=12)
        ),
        st.tuples(st.just("roll"), st.just(0), st.none()),
        st.tuples(st.just("clean"), st.integers(0, 2_000), st.none()),
    ),
    max_size=80,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(script=ops)
def test_model_latest_value_per_key(
    tmp_path_factory: pytest.TempPathFactory, script: list[Op]
) -> None:
    directory = tmp_path_factory.mktemp("model") / "t-0"
    config = cfg({"internal.segment.bytes": "300", "delete.retention.ms": "500"})
    log = open_log(directory, config)
    model: dict[bytes, bytes | None] = {}
    history: dict[int, tuple[bytes, bytes | None]] = {}
    now = 1_000
    dirty: int | None = None
    cleaner = Cleaner(dedupe_buffer_size=3 * 130, load_factor=1.0)  # a few keys per pass

    def check() -> None:
        got = read_all(log)
        for offset, key, value in got:
            assert key is not None and history[offset] == (key, value)
        found = latest(got)
        for key, value in model.items():
            if value is None:
                assert key not in found or found[key][1] is None
            else:
                assert found[key][1] == value
        assert set(found) <= set(model)

    for op, arg, value in script:
        if op == "put":
            key = KEYS[arg]
            offset = put(log, [(key, value)], ts=now)
            history[offset] = (key, value)
            model[key] = value
        elif op == "roll":
            log.roll(now_ms=now)
        else:
            now += arg
            result = cleaner.clean(log, first_dirty_offset=dirty, now_ms=now)
            dirty = result.next_dirty_offset
            check()
    check()
    expected = read_all(log)
    log.close()
    reopened = PartitionLog.open(directory, config, now_ms=0, recovery_point=0)
    assert read_all(reopened) == expected
    check_files(reopened)
    reopened.close()


def test_offset_for_timestamp_skips_emptied_segments(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0")
    fill(log, keys=3, rounds=10, ts=1_000)
    late = put(log, [(b"late", b"x")], ts=2_000_000)
    fill(log, keys=3, rounds=10, ts=3_000_000)
    Cleaner().clean(log, now_ms=4_000_000)
    emptied = [s for s in log.segments if s.size == 0]
    assert emptied  # their largest timestamp is their mtime (wall clock), as in Kafka
    assert log.offset_for_timestamp(1_500_000) == (late, 2_000_000)


@pytest.mark.parametrize(("io_buffer_size", "largest_read"), [(8192, 4096), (65536, 32768)])
def test_the_io_buffer_size_bounds_each_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             io_buffer_size: int, largest_read: int) -> None:
    """log.cleaner.io.buffer.size: segments are read in chunks of half of it (Kafka splits it
    between the read and the write buffer), whatever the segment's size; the result is the
    same."""
    from odradek.broker.storage.cleaner import algorithm
    log = open_log(tmp_path / "t-0", cfg({"internal.segment.bytes": "50000"}))
    written = fill(log, keys=40, rounds=50)
    # the segments to clean are not the active one
    written.append((put(log, [(b"active", b"x")], ts=5_000), b"active", b"x"))
    reads: list[int] = []
    real_pread = os.pread

    def pread(fd: int, n: int, offset: int) -> bytes:
        reads.append(n)
        return real_pread(fd, n, offset)

    monkeypatch.setattr(algorithm.os, "pread", pread)
    Cleaner(io_buffer_size=io_buffer_size).clean(log, now_ms=10_000)
    monkeypatch.undo()
    assert max(reads) == largest_read
    assert latest(read_all(log)) == latest(written)
    log.close()
