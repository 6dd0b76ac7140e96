"""Damage found after a CLEAN shutdown (issue #10): the clean-shutdown marker says the logs
are whole, but a segment was changed afterwards (garbage appended, cut mid-batch, zeroed).
Start-up must notice it with the cheap tail check, log one warning naming the partition,
segment, end offset and bytes cut, and recover the log to its last whole valid batch: no
exception, every batch before the damage byte-identical, appends carrying on right after."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import structlog
from storage_testutil import append, values_of, verify_segment_files

from odradek.broker.storage.log import PartitionLog
from odradek.broker.storage.manager import LogManager
from odradek.broker.storage.segment import LogSegment
from odradek.config import LogConfig
from odradek.wire.records import build_batch, iter_batches

CONFIG = LogConfig.from_overrides({"internal.segment.bytes": "2048", "index.interval.bytes": "100"})
DAMAGED = "damaged log segment found at start-up; recovered it"


@dataclass
class Batch:
    segment: str  # file name of its .log
    position: int
    size: int
    base_offset: int
    last_offset: int
    raw: bytes


@dataclass
class CleanLog:
    root: Path
    directory: Path
    batches: list[Batch]

    def segment_files(self) -> list[Path]:
        return sorted(self.directory.glob("*.log"))

    def in_segment(self, name: str) -> list[Batch]:
        return [b for b in self.batches if b.segment == name]


def build_clean_log(root: Path, count: int = 48) -> CleanLog:
    """A partition log of `count` batches of varied sizes over several segments, closed
    cleanly by the log manager (checkpoints and the clean-shutdown marker written)."""
    manager = LogManager([root], CONFIG, now_ms=0)
    log = manager.create("t", 0)
    for i in range(count):
        append(log, [f"v{i}-{j}".encode() * (i % 5 + 1) for j in range(i % 3 + 1)])
    manager.close_all()
    assert (root / ".kafka_cleanshutdown").exists()
    directory = root / "t-0"
    batches: list[Batch] = []
    for path in sorted(directory.glob("*.log")):
        data = path.read_bytes()
        position = 0
        for b in iter_batches(memoryview(data)):
            raw = data[position : position + b.size]
            batches.append(Batch(path.name, position, b.size, b.base_offset, b.last_offset, raw))
            position += b.size
    assert len({b.segment for b in batches}) > 2
    return CleanLog(root, directory, batches)


def reopen(root: Path) -> tuple[LogManager, list[dict[str, Any]]]:
    with structlog.testing.capture_logs() as logs:
        manager = LogManager([root], CONFIG, now_ms=0)
    return manager, logs


def read_all(log: PartitionLog) -> bytes:
    """Every batch of the log, as stored, by fetching from offset 0 to the end."""
    out = b""
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 10**6)
        assert data
        out += data
        offset = list(iter_batches(memoryview(data)))[-1].last_offset + 1
    return out


def check_recovered(
    clean: CleanLog, kept: list[Batch], *, segment: str, bytes_cut: int, dropped: int = 0
) -> None:
    manager, logs = reopen(clean.root)
    try:
        warnings = [e for e in logs if e["log_level"] == "warning"]
        assert [e["event"] for e in warnings] == [DAMAGED], warnings
        warning = warnings[0]
        end = kept[-1].last_offset + 1
        assert warning["partition"] == "t-0"
        assert warning["segment"] == segment
        assert warning["next_offset"] == end
        assert warning["bytes_cut"] == bytes_cut
        assert warning["segments_dropped"] == dropped
        log = manager.get("t", 0)
        assert log is not None
        assert log.log_end_offset == end
        assert read_all(log) == b"".join(b.raw for b in kept)  # byte-identical
        assert [s.log_path.name for s in log.segments] == sorted({b.segment for b in kept})
        first = append(log, [b"after-damage"])
        assert first == end
        assert values_of(log.read(first, 1000)) == [(first, b"after-damage")]
        for s in log.segments:
            verify_segment_files(clean.directory, s.base_offset)
    finally:
        manager.close_all()
    # Closed cleanly again: the next start has nothing to warn about.
    manager, logs = reopen(clean.root)
    try:
        assert not [e for e in logs if e["log_level"] == "warning"]
        log = manager.get("t", 0)
        assert log is not None
        assert log.log_end_offset == end + 1
    finally:
        manager.close_all()


def cut_from(batches: list[Batch], position: int, segment: str) -> tuple[list[Batch], int]:
    """The batches kept when `segment` is cut at the batch containing byte `position` (and
    every later segment dropped), and the byte position of that cut in `segment`."""
    kept: list[Batch] = []
    for b in batches:
        if b.segment > segment or (b.segment == segment and b.position + b.size > position):
            return kept, b.position if b.segment == segment else 0
        kept.append(b)
    raise AssertionError(f"byte {position} of {segment} is past every batch")


def test_garbage_appended_to_the_active_segment(tmp_path: Path) -> None:
    clean = build_clean_log(tmp_path)
    active = clean.segment_files()[-1]
    garbage = b"garbage!" * 20
    with open(active, "ab") as f:
        f.write(garbage)
    check_recovered(clean, clean.batches, segment=active.name, bytes_cut=len(garbage))


def test_plausible_header_with_huge_length_appended(tmp_path: Path) -> None:
    clean = build_clean_log(tmp_path)
    active = clean.segment_files()[-1]
    end = clean.batches[-1].last_offset + 1
    junk = end.to_bytes(8, "big") + (10**9).to_bytes(4, "big") + b"\x00" * 60
    with open(active, "ab") as f:
        f.write(junk)
    check_recovered(clean, clean.batches, segment=active.name, bytes_cut=len(junk))


def test_whole_valid_batch_appended_behind_the_index_is_kept(tmp_path: Path) -> None:
    # Not damage: a valid batch after the last one still passes every check (and is kept).
    clean = build_clean_log(tmp_path)
    active = clean.segment_files()[-1]
    extra = build_batch([(b"k", b"extra")], base_offset=clean.batches[-1].last_offset + 1)
    with open(active, "ab") as f:
        f.write(extra)
    manager, logs = reopen(clean.root)
    try:
        assert not [e for e in logs if e["log_level"] == "warning"]
        log = manager.get("t", 0)
        assert log is not None
        assert log.log_end_offset == clean.batches[-1].last_offset + 2
    finally:
        manager.close_all()


@pytest.mark.parametrize("into", [1, 8, 12, 17, 43, 61, -1])
def test_active_segment_cut_mid_batch(tmp_path: Path, into: int) -> None:
    clean = build_clean_log(tmp_path)
    active = clean.segment_files()[-1]
    last = clean.batches[-1]
    cut = last.position + (into if into > 0 else last.size + into)
    with open(active, "r+b") as f:
        f.truncate(cut)
    check_recovered(clean, clean.batches[:-1], segment=active.name, bytes_cut=cut - last.position)


def test_active_segment_cut_at_a_batch_boundary(tmp_path: Path) -> None:
    # A cut between batches leaves a valid, shorter log; only the index (now past the end)
    # is rebuilt, and the end offset follows the bytes, not the checkpoint.
    clean = build_clean_log(tmp_path)
    active = clean.segment_files()[-1]
    last = clean.batches[-1]
    with open(active, "r+b") as f:
        f.truncate(last.position)
    manager, logs = reopen(clean.root)
    try:
        warnings = [e for e in logs if e["log_level"] == "warning"]
        assert len(warnings) <= 1
        log = manager.get("t", 0)
        assert log is not None
        assert log.log_end_offset == last.base_offset
        assert read_all(log) == b"".join(b.raw for b in clean.batches[:-1])
        assert append(log, [b"next"]) == last.base_offset
    finally:
        manager.close_all()


@pytest.mark.parametrize("zeros", [2, 30, "last batch and more"])
def test_active_segment_tail_zeroed(tmp_path: Path, zeros: int | str) -> None:
    # (not 1: a record's last byte, its header count, is already zero)
    clean = build_clean_log(tmp_path)
    active = clean.segment_files()[-1]
    size = active.stat().st_size
    n = clean.batches[-1].size + 10 if isinstance(zeros, str) else zeros
    with open(active, "r+b") as f:
        f.seek(size - n)
        f.write(b"\x00" * n)
    kept, cut_at = cut_from(clean.batches, size - n, active.name)
    assert len(kept) == len(clean.batches) - (2 if isinstance(zeros, str) else 1)
    check_recovered(clean, kept, segment=active.name, bytes_cut=size - cut_at)


def test_region_zeroed_in_the_middle_of_the_active_segment(tmp_path: Path) -> None:
    clean = build_clean_log(tmp_path)
    active = clean.segment_files()[-1]
    in_active = clean.in_segment(active.name)
    assert len(in_active) >= 6
    victim = in_active[2]
    start = victim.position + victim.size // 2
    with open(active, "r+b") as f:
        f.seek(start)
        f.write(b"\x00" * 200)  # on into the next batch's header
    kept, cut_at = cut_from(clean.batches, start, active.name)
    assert kept[-1] is in_active[1]
    assert cut_at == victim.position
    check_recovered(
        clean, kept, segment=active.name, bytes_cut=active.stat().st_size - victim.position
    )


def _older(clean: CleanLog) -> tuple[Path, list[Batch], int]:
    files = clean.segment_files()
    victim = files[1]
    return victim, clean.in_segment(victim.name), len(files) - 2


def test_older_segment_tail_zeroed_drops_the_later_segments(tmp_path: Path) -> None:
    clean = build_clean_log(tmp_path)
    victim, batches, later = _older(clean)
    size = victim.stat().st_size
    with open(victim, "r+b") as f:
        f.seek(size - 20)
        f.write(b"\x00" * 20)
    kept, _ = cut_from(clean.batches, size - 20, victim.name)
    assert kept[-1] is batches[-2]
    check_recovered(clean, kept, segment=victim.name, bytes_cut=batches[-1].size, dropped=later)


def test_older_segment_cut_mid_batch(tmp_path: Path) -> None:
    clean = build_clean_log(tmp_path)
    victim, batches, later = _older(clean)
    cut = batches[-1].position + 30
    with open(victim, "r+b") as f:
        f.truncate(cut)
    check_recovered(
        clean,
        cut_from(clean.batches, cut, victim.name)[0],
        segment=victim.name,
        bytes_cut=30,
        dropped=later,
    )


def test_garbage_appended_to_an_older_segment(tmp_path: Path) -> None:
    clean = build_clean_log(tmp_path)
    victim, _, later = _older(clean)
    with open(victim, "ab") as f:
        f.write(b"\xff" * 50)
    kept = [b for b in clean.batches if b.segment <= victim.name]
    check_recovered(clean, kept, segment=victim.name, bytes_cut=50, dropped=later)


def test_older_segment_damaged_at_its_last_index_entry(tmp_path: Path) -> None:
    # The header the index's last entry points at is gone: the tail walk starts there.
    clean = build_clean_log(tmp_path)
    victim, batches, later = _older(clean)
    segment = LogSegment.open(clean.directory, batches[0].base_offset, now_ms=0)
    entry = segment.offset_index.last_entry()
    segment.close()
    assert entry is not None and entry[1] > 0
    with open(victim, "r+b") as f:
        f.seek(entry[1])
        f.write(b"\x00" * 20)
    kept, _ = cut_from(clean.batches, entry[1], victim.name)
    check_recovered(
        clean,
        kept,
        segment=victim.name,
        bytes_cut=victim.stat().st_size - entry[1],
        dropped=later,
    )


def test_producer_state_is_rebuilt_from_the_recovered_log(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], CONFIG, now_ms=0)
    log = manager.create("t", 0)

    def produce(seq: int) -> int:
        raw = bytearray(
            build_batch(
                [(b"k", f"s{seq}".encode())],
                base_timestamp=1_000,
                producer_id=7,
                producer_epoch=0,
                base_sequence=seq,
            )
        )
        return log.append(memoryview(raw), leader_epoch=0, now_ms=1_000).first_offset

    for seq in range(5):
        produce(seq)
    manager.close_all()  # writes a producer snapshot at offset 5
    active = sorted((tmp_path / "t-0").glob("*.log"))[-1]
    with open(active, "r+b") as f:
        f.truncate(active.stat().st_size - 3)  # sequence 4 is gone
    manager, logs = reopen(tmp_path)
    try:
        assert [e["event"] for e in logs if e["log_level"] == "warning"] == [DAMAGED]
        log = manager.get("t", 0)
        assert log is not None
        assert log.log_end_offset == 4
        entry = log.producer_state.producers[7]
        assert entry.last_seq == 3
        # the retried sequence 4 is new data at the recovered end, not a duplicate
        assert produce(4) == 4
        assert values_of(log.read(4, 1000)) == [(4, b"s4")]
    finally:
        manager.close_all()


def test_unexpected_exception_while_loading_recovers_the_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = build_clean_log(tmp_path)
    active = clean.segment_files()[-1]
    with open(active, "ab") as f:
        f.write(b"junk")
    calls: list[int] = []
    original: Callable[..., str | None] = LogSegment.check_tail

    def exploding(self: LogSegment, *, from_start: bool = False) -> str | None:
        calls.append(self.base_offset)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return original(self, from_start=from_start)

    monkeypatch.setattr(LogSegment, "check_tail", exploding)
    manager, logs = reopen(clean.root)
    try:
        warnings = [e for e in logs if e["log_level"] == "warning"]
        assert warnings[0]["event"] == "loading log failed; recovering every segment"
        assert warnings[0]["partition"] == "t-0"
        assert "boom" in warnings[0]["error"]
        debug = [e for e in logs if e["log_level"] == "debug"]
        assert debug and debug[0]["exc_info"] is not None
        assert len(calls) == 1  # the retry recovers every segment, no tail checks
        log = manager.get("t", 0)
        assert log is not None
        assert log.log_end_offset == clean.batches[-1].last_offset + 1
        assert read_all(log) == b"".join(b.raw for b in clean.batches)
    finally:
        manager.close_all()
