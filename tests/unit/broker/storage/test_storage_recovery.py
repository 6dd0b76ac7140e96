"""Crash recovery: a killed process (no close, no flush, no checkpoint) leaves a torn or corrupt
tail; reopening keeps exactly the whole valid batches before it, rebuilds the indexes, and
appends carry on from the right offset."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from storage_testutil import abandon, append, batches_of, values_of, verify_segment_files
from storage_testutil import batch as batch_bytes

from odradek.broker.storage.log import PartitionLog
from odradek.config import LogConfig

CONFIG = LogConfig.from_overrides({"internal.segment.bytes": "2048", "index.interval.bytes": "100"})


def build_crashed_log(
    directory: Path, batches: int = 40
) -> tuple[list[tuple[int, bytes | None]], int, int]:
    """A log whose process 'died' right after its last append. Returns every (offset, value),
    and the start and end byte positions of the last batch in the active segment."""
    log = PartitionLog.open(directory, CONFIG, now_ms=0)
    for i in range(batches):
        append(
            log, [f"v{i}-{j}".encode() * (i % 5 + 1) for j in range(i % 3 + 1)], timestamp=1_000 + i
        )
    records: list[tuple[int, bytes | None]] = []
    offset = 0
    while offset < log.log_end_offset:
        data = log.read(offset, 10**6)
        records.extend(values_of(data))
        offset = batches_of(data)[-1].last_offset + 1
    active = log.active_segment
    last = active.batch_headers()[-1]
    assert len(log.segments) > 2
    abandon(log)
    return records, last.position, last.position + last.size


def active_log_file(directory: Path) -> Path:
    return sorted(directory.glob("*.log"))[-1]


def check_recovered(directory: Path, expected: list[tuple[int, bytes | None]]) -> None:
    log = PartitionLog.open(directory, CONFIG, now_ms=0)
    try:
        assert log.log_end_offset == (expected[-1][0] + 1 if expected else 0)
        got: list[tuple[int, bytes | None]] = []
        offset = 0
        while offset < log.log_end_offset:
            data = log.read(offset, 10**6)
            got.extend(values_of(data))
            offset = batches_of(data)[-1].last_offset + 1
        assert got == expected
        # the log keeps working from the recovered end
        first = append(log, [b"after-crash"])
        assert first == log.log_end_offset - 1
        assert values_of(log.read(first, 100)) == [(first, b"after-crash")]
    finally:
        log.close()
    for segment in log.segments:
        verify_segment_files(directory, segment.base_offset)


def test_cut_at_every_byte_of_the_last_batch(tmp_path: Path) -> None:
    template = tmp_path / "template" / "t-0"
    records, start, end = build_crashed_log(template)
    last_batch_offsets = {o for o, _ in records} - {
        o for o, _ in values_of(active_log_file(template).read_bytes()[:start])
    }
    base = int(active_log_file(template).name.split(".")[0])
    kept = [r for r in records if r[0] not in last_batch_offsets or r[0] < base]
    assert len(kept) < len(records)
    for cut in range(start, end + 1):
        work = tmp_path / f"cut-{cut}" / "t-0"
        shutil.copytree(template, work)
        with open(active_log_file(work), "r+b") as f:
            f.truncate(cut)
        check_recovered(work, records if cut == end else kept)
        shutil.rmtree(work.parent)


@pytest.mark.parametrize("where", ["header", "crc", "attributes", "records", "last byte"])
def test_corrupt_byte_in_the_last_batch(tmp_path: Path, where: str) -> None:
    directory = tmp_path / "t-0"
    records, start, end = build_crashed_log(directory)
    offsets_before = {o for o, _ in values_of(active_log_file(directory).read_bytes()[:start])}
    base = int(active_log_file(directory).name.split(".")[0])
    kept = [r for r in records if r[0] < base or r[0] in offsets_before]
    position = {
        "header": start + 16,  # magic
        "crc": start + 18,
        "attributes": start + 22,
        "records": start + 70,
        "last byte": end - 1,
    }[where]
    with open(active_log_file(directory), "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0x5A]))
    check_recovered(directory, kept)


def test_corruption_in_an_earlier_segment_drops_everything_after_it(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    records, _, _ = build_crashed_log(directory)
    logs = sorted(directory.glob("*.log"))
    victim = logs[1]
    base = int(victim.name.split(".")[0])
    data = victim.read_bytes()
    batches = batches_of(data)
    bad = batches[2]
    bad_position = sum(b.size for b in batches[:2])
    with open(victim, "r+b") as f:
        f.seek(bad_position + bad.size - 5)
        f.write(b"\xff\xff\xff\xff\xff")
    check_recovered(directory, [r for r in records if r[0] < bad.base_offset])
    assert sorted(p.name for p in directory.glob("*.log")) == [logs[0].name, victim.name]
    assert base < bad.base_offset


def test_zero_filled_tail_is_cut(tmp_path: Path) -> None:
    # e.g. a file system that extended the file but never wrote the data before power loss
    directory = tmp_path / "t-0"
    records, _, _ = build_crashed_log(directory)
    with open(active_log_file(directory), "ab") as f:
        f.write(b"\x00" * 300)
    check_recovered(directory, records)


def test_garbage_length_in_tail_is_cut(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    records, _, _ = build_crashed_log(directory)
    with open(active_log_file(directory), "ab") as f:
        f.write((5).to_bytes(8, "big") + (10**9).to_bytes(4, "big") + b"\x00" * 60)
    check_recovered(directory, records)


def test_offsets_going_backwards_are_corruption(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    records, start, _ = build_crashed_log(directory)
    path = active_log_file(directory)
    data = bytearray(path.read_bytes())
    data[start : start + 8] = (0).to_bytes(8, "big")  # base offset is outside the CRC
    path.write_bytes(bytes(data))
    base = int(path.name.split(".")[0])
    before = {o for o, _ in values_of(bytes(data[:start]))}
    check_recovered(directory, [r for r in records if r[0] < base or r[0] in before])


@pytest.mark.parametrize("fixed_size", [False, True])
def test_recovered_indexes_equal_the_incremental_ones(tmp_path: Path, fixed_size: bool) -> None:
    directory = tmp_path / "t-0"
    config = CONFIG
    if fixed_size:
        # batches exactly half the interval: the boundary case of "more than interval bytes"
        size = batches_of(bytes(batch_bytes([b"x" * 40])))[0].size
        config = LogConfig.from_overrides(
            {"internal.segment.bytes": "2048", "index.interval.bytes": str(2 * size)}
        )
    log = PartitionLog.open(directory, config, now_ms=0)
    for i in range(40):
        length = 40 if fixed_size else i * 7 % 90
        append(log, [b"x" * length], timestamp=1_000 + (i * 37) % 50)
    assert log.segments[0].offset_index.entries > 0
    log.close()
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    for p in directory.iterdir():
        if p.suffix in (".index", ".timeindex"):
            p.unlink()  # lost indexes: rebuilt even after a clean shutdown
    reopened = PartitionLog.open(
        directory, config, now_ms=0, had_clean_shutdown=True, recovery_point=10**9
    )
    assert reopened.log_end_offset == 40
    reopened.close()
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == before


def test_stale_index_entries_past_a_torn_tail(tmp_path: Path) -> None:
    # The index may hold entries for bytes that never reached the log (or were cut).
    directory = tmp_path / "t-0"
    records, start, _ = build_crashed_log(directory)
    path = active_log_file(directory)
    with open(path, "r+b") as f:
        f.truncate(start)
    index = path.with_suffix(".index")
    with open(index, "ab") as f:
        f.write((500).to_bytes(4, "big") + (10**6).to_bytes(4, "big"))
    base = int(path.name.split(".")[0])
    before = {o for o, _ in values_of(path.read_bytes())}
    check_recovered(directory, [r for r in records if r[0] < base or r[0] in before])


def test_clean_shutdown_skips_recovery_but_sanity_check_catches_bad_index(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, CONFIG, now_ms=0)
    for i in range(30):
        append(log, [b"y" * 60], timestamp=1_000 + i)
    log.close()
    first = sorted(directory.glob("*.index"))[0]
    entries = first.read_bytes()
    assert entries
    first.write_bytes(entries[:-4] + (10**7).to_bytes(4, "big"))  # position past the log
    reopened = PartitionLog.open(directory, CONFIG, now_ms=0, had_clean_shutdown=True)
    assert first.read_bytes() == entries  # rebuilt
    assert reopened.log_end_offset == 30
    reopened.close()


def test_batch_larger_than_the_recovery_chunk(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    config = LogConfig.from_overrides({"max.message.bytes": str(4 << 20)})
    log = PartitionLog.open(directory, config, now_ms=0)
    append(log, [b"small"])
    big = os.urandom(1_500_000)
    append(log, [big])
    append(log, [b"tail"])
    abandon(log)
    path = active_log_file(directory)
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size - 3)  # tear the last small batch
    reopened = PartitionLog.open(directory, config, now_ms=0)
    assert reopened.log_end_offset == 2
    assert values_of(reopened.read(1, 10))[0] == (1, big)
    reopened.close()


def test_empty_or_missing_files(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    directory.mkdir()
    # stray files of an interrupted deletion, an orphaned index, a checkpoint temp file
    (directory / "00000000000000000000.log.deleted").write_bytes(b"junk")
    (directory / "00000000000000000007.index").write_bytes(b"\x00" * 8)
    (directory / "leader-epoch-checkpoint.tmp").write_text("0\n")
    log = PartitionLog.open(directory, CONFIG, now_ms=0, log_start_offset=12)
    assert log.log_start_offset == log.log_end_offset == 12
    assert sorted(p.name for p in directory.iterdir()) == [
        "00000000000000000012.index",
        "00000000000000000012.log",
        "00000000000000000012.timeindex",
        "leader-epoch-checkpoint",
    ]
    append(log, [b"a"])
    abandon(log)
    reopened = PartitionLog.open(directory, CONFIG, now_ms=0, log_start_offset=12)
    assert values_of(reopened.read(12, 100)) == [(12, b"a")]
    reopened.close()
