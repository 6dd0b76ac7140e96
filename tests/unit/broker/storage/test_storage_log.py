"""PartitionLog: append/read across segment rolls, fetch rules, timestamps, retention,
DeleteRecords, leader epochs, aborted transactions and restarts."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from storage_testutil import append, batch, batches_of, values_of, verify_segment_files

from odradek.broker.storage.log import (
    LogClosedError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    PartitionLog,
)
from odradek.broker.storage.txn_index import AbortedTxn
from odradek.config import LogConfig
from odradek.wire.exceptions import RecordBatchError
from odradek.wire.records import build_batch

SMALL = LogConfig.from_overrides({"internal.segment.bytes": "1024", "index.interval.bytes": "128"})


def open_log(tmp_path: Path, config: LogConfig = SMALL, **kwargs: object) -> PartitionLog:
    return PartitionLog.open(tmp_path / "topic-a-0", config, now_ms=1_000, **kwargs)  # type: ignore[arg-type]


def fill(log: PartitionLog, batches: int, per_batch: int = 3) -> list[bytes]:
    """Append `batches` batches of `per_batch` records; returns all values in offset order."""
    values: list[bytes] = []
    for i in range(batches):
        vals = [f"value-{i}-{j}".encode() * (1 + (i % 4)) for j in range(per_batch)]
        append(log, vals, timestamp=10_000 + i * 10)
        values.extend(vals)
    return values


def read_all(log: PartitionLog, max_bytes: int = 300) -> list[tuple[int, bytes | None]]:
    got: list[tuple[int, bytes | None]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, max_bytes)
        assert data, f"no progress at {offset}"
        records = [(o, v) for o, v in values_of(data) if o >= offset]
        got.extend(records)
        offset = batches_of(data)[-1].last_offset + 1
    return got


def test_round_trip_across_segment_rolls(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    values = fill(log, 60)
    assert log.log_end_offset == len(values) == 180
    assert log.high_watermark == log.log_end_offset
    assert len(log.segments) > 5
    bases = [s.base_offset for s in log.segments]
    assert bases == sorted(bases) and bases[0] == 0
    assert read_all(log) == list(enumerate(values))
    for segment in log.segments:
        assert segment.size <= SMALL.segment_bytes
        verify_segment_files(log.directory, segment.base_offset)
    log.close()


def test_every_offset_reads_from_the_batch_containing_it(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 40)
    for offset in range(log.log_end_offset):
        first = batches_of(log.read(offset, 1))[0]
        assert first.base_offset <= offset <= first.last_offset
    log.close()


def test_read_mid_batch_returns_the_containing_batch(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig.from_overrides())
    append(log, [b"a", b"b", b"c"])
    append(log, [b"d", b"e"])
    data = log.read(1, 10_000)
    assert [(b.base_offset, b.last_offset) for b in batches_of(data)] == [(0, 2), (3, 4)]
    assert [(b.base_offset, b.last_offset) for b in batches_of(log.read(4, 10_000))] == [(3, 4)]
    log.close()


def test_kip74_first_batch_whole_and_only_whole_batches(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig.from_overrides())
    append(log, [b"x" * 500])
    append(log, [b"y" * 10])
    append(log, [b"z" * 10])
    sizes = [b.size for b in batches_of(log.read(0, 10**6))]
    # KIP-74: the first batch comes whole even when larger than max_bytes...
    assert [b.size for b in batches_of(log.read(0, 1))] == sizes[:1]
    # ...but not without min_one_message
    assert log.read(0, 1, min_one_message=False) == b""
    # only whole batches: a budget ending inside the second batch stops after the first
    assert [b.size for b in batches_of(log.read(0, sizes[0] + sizes[1] - 1))] == sizes[:1]
    assert [b.size for b in batches_of(log.read(0, sizes[0] + sizes[1]))] == sizes[:2]
    assert log.read(0, 0, min_one_message=False) == b""
    log.close()


def test_upper_bound_is_respected(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 30)  # batches of 3 offsets each: 0-2, 3-5, ...
    for upper in (3, 10, 45, 89):
        got = []
        offset = 0
        while data := log.read(offset, 10**6, upper_bound=upper):  # one segment per read
            got.extend(batches_of(data))
            offset = got[-1].last_offset + 1
        assert all(b.base_offset < upper for b in got)
        # a batch straddling the bound is included (it starts before it), none after
        assert got[-1].last_offset >= upper - 1
        assert [b.base_offset for b in got] == list(range(0, upper, 3))
    assert log.read(45, 10**6, upper_bound=45) == b""
    assert log.read(50, 10**6, upper_bound=45) == b""
    log.close()


def test_out_of_range_offsets(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 3)
    assert log.read(9, 100) == b""  # the log end itself: nothing yet
    with pytest.raises(OffsetOutOfRangeError):
        log.read(10, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 100)
    log.close()
    with pytest.raises(LogClosedError):
        log.read(0, 100)


def test_indexes_are_sparse_and_match_kafka_checks(tmp_path: Path) -> None:
    config = LogConfig.from_overrides({"index.interval.bytes": "200"})
    log = open_log(tmp_path, config)
    fill(log, 50)
    segment = log.active_segment
    entries = segment.offset_index.entries
    assert 0 < entries < 50
    for n in range(entries):
        offset, position = segment.offset_index.entry(n)
        assert segment.translate_offset(offset) is not None
        assert segment.translate_offset(offset).position == position  # type: ignore[union-attr]
    log.close()
    verify_segment_files(log.directory, 0)


def test_offset_for_timestamp_is_record_exact(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    # batch i: records with timestamps 1000*i + 0, +10, +20
    for i in range(1, 40):
        log.append(
            memoryview(batch([b"a", b"b", b"c"], timestamp=1000 * i, deltas=[0, 10, 20])),
            leader_epoch=0,
            now_ms=1,
        )
    assert len(log.segments) > 1
    assert log.offset_for_timestamp(0) == (0, 1000)
    assert log.offset_for_timestamp(1000) == (0, 1000)
    assert log.offset_for_timestamp(1001) == (1, 1010)
    assert log.offset_for_timestamp(1011) == (2, 1020)
    assert log.offset_for_timestamp(1021) == (3, 2000)
    assert log.offset_for_timestamp(25_015) == (3 * 24 + 2, 25_020)
    assert log.offset_for_timestamp(39_020) == (3 * 38 + 2, 39_020)
    assert log.offset_for_timestamp(39_021) is None
    assert log.offset_for_timestamp(25_015, upper_bound=70) is None
    assert log.max_timestamp_offset() == (3 * 38 + 2, 39_020)
    log.close()


def test_max_timestamp_offset_finds_the_first_record_with_it(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    append(log, [b"a"], timestamp=500)
    log.append(
        memoryview(batch([b"b", b"c", b"d"], timestamp=900, deltas=[5, 100, 100])),
        leader_epoch=0,
        now_ms=1,
    )
    append(log, [b"e"], timestamp=700)
    assert log.max_timestamp_offset() == (2, 1000)
    assert log.offset_for_timestamp(600) == (1, 905)
    log.close()
    empty = PartitionLog.open(tmp_path / "empty-0", SMALL, now_ms=0)
    assert empty.max_timestamp_offset() is None
    assert empty.offset_for_timestamp(0) is None
    empty.close()


def test_retention_by_time(tmp_path: Path) -> None:
    config = LogConfig.from_overrides({"internal.segment.bytes": "1024", "retention.ms": "10000"})
    log = open_log(tmp_path, config)
    for i in range(30):
        append(log, [b"x" * 100], timestamp=1_000 + i * 1_000)  # timestamps 1000..30000
    segments = log.segments
    assert len(segments) > 3
    assert log.enforce_retention(now_ms=5_000) == 0
    now = 25_000
    deleted = log.enforce_retention(now_ms=now)
    assert deleted > 0
    for s in log.segments[:-1]:
        assert now - s.largest_timestamp() <= 10_000
    assert log.log_start_offset == log.segments[0].base_offset > 0
    # Its files are renamed .deleted and go file.delete.delay.ms (60 s by default) later.
    first = sorted(p.name for p in log.directory.iterdir() if p.name.startswith(f"{0:020d}"))
    assert first and all(name.endswith(".deleted") for name in first)
    assert log.delete_retired(now + 59_999) == 0
    assert log.delete_retired(now + 60_000) == deleted
    assert not any(p.name.startswith(f"{0:020d}") for p in log.directory.iterdir())
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    # Everything breached: the active segment is rolled first, then goes too (as Kafka).
    assert log.enforce_retention(now_ms=10**9) > 0
    assert len(log.segments) == 1 and log.active_segment.size == 0
    assert log.log_start_offset == log.log_end_offset == 30
    assert log.read(30, 100) == b""
    append(log, [b"after"])
    assert values_of(log.read(30, 100)) == [(30, b"after")]
    log.close()


def test_retention_by_size(tmp_path: Path) -> None:
    config = LogConfig.from_overrides(
        {"internal.segment.bytes": "1024", "retention.bytes": "3000", "retention.ms": "-1"}
    )
    log = open_log(tmp_path, config)
    for _ in range(60):
        append(log, [b"y" * 100])
    before = log.size_in_bytes
    assert before > 3000
    assert log.enforce_retention(now_ms=10**12) > 0
    # as Kafka: whole segments go while the log stays at or above retention.bytes
    assert log.size_in_bytes - log.segments[0].size < 3000 <= log.size_in_bytes
    assert log.log_start_offset == log.segments[0].base_offset
    assert log.enforce_retention(now_ms=10**12) == 0
    log.close()


def test_retention_only_when_cleanup_policy_deletes(tmp_path: Path) -> None:
    config = LogConfig.from_overrides(
        {"internal.segment.bytes": "1024", "retention.bytes": "0", "cleanup.policy": "compact"}
    )
    log = open_log(tmp_path, config)
    for _ in range(30):
        append(log, [b"y" * 100])
    assert log.enforce_retention(now_ms=10**12) == 0
    log.close()


def test_retention_stops_at_the_high_watermark(tmp_path: Path) -> None:
    config = LogConfig.from_overrides({"internal.segment.bytes": "1024", "retention.ms": "0"})
    log = open_log(tmp_path, config)
    for _ in range(30):
        append(log, [b"y" * 100])
    log.high_watermark = 5
    log.enforce_retention(now_ms=10**12)
    assert log.log_start_offset <= 5
    assert log.segments[0].base_offset <= 5 < log.segments[0].next_offset
    log.close()


def test_delete_records_before(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    values = fill(log, 40)
    segment_count = len(log.segments)
    target = log.segments[3].base_offset + 1  # inside the fourth segment
    assert log.delete_records_before(target) == target
    assert log.log_start_offset == target
    assert len(log.segments) == segment_count - 3
    with pytest.raises(OffsetOutOfRangeError):
        log.read(target - 1, 100)
    # the batch holding the new log start comes whole, as in Kafka
    assert batches_of(log.read(target, 1))[0].base_offset < target
    assert log.delete_records_before(2) == target  # never moves back
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(log.high_watermark + 1)
    assert log.delete_records_before(log.log_end_offset) == len(values)
    assert len(log.segments) == 1
    log.close()


def test_restart_keeps_everything(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    values = fill(log, 50)
    log.append_aborted_txn(AbortedTxn(5, 3, 10, 3))
    before = {p.name: p.read_bytes() for p in log.directory.iterdir()}
    log.close()
    after_close = {p.name: p.read_bytes() for p in log.directory.iterdir()}
    assert before.keys() == after_close.keys()

    for clean in (True, False):
        reopened = open_log(tmp_path, had_clean_shutdown=clean)
        assert reopened.log_end_offset == len(values)
        assert read_all(reopened) == list(enumerate(values))
        assert reopened.collect_aborted_txns(0, 100) == [AbortedTxn(5, 3, 10, 3)]
        assert reopened.recovery_point == len(values) if clean else reopened.recovery_point == 0
        reopened.close()
        # recovery rebuilds byte-identical indexes
        assert {p.name: p.read_bytes() for p in reopened.directory.iterdir()} == after_close

    reopened = open_log(tmp_path)
    first = append(reopened, [b"more"])
    assert first == len(values)
    reopened.close()
    for segment in reopened.segments:
        verify_segment_files(reopened.directory, segment.base_offset)


def test_log_append_time(tmp_path: Path) -> None:
    config = LogConfig.from_overrides({"message.timestamp.type": "LogAppendTime"})
    log = open_log(tmp_path, config)
    info = log.append(memoryview(batch([b"a", b"b"], timestamp=5)), leader_epoch=0, now_ms=77_000)
    assert info.log_append_time == 77_000
    assert info.max_timestamp == 77_000
    stored = batches_of(log.read(0, 1000))[0]
    assert stored.timestamp_type == 1 and stored.max_timestamp == 77_000 and stored.crc_ok()
    assert log.offset_for_timestamp(76_000) == (0, 77_000)
    log.close()
    verify_segment_files(log.directory, 0)


def test_append_patches_offsets_and_epoch_in_place(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig.from_overrides())
    append(log, [b"a", b"b"], epoch=3)
    buf = bytearray(build_batch([(None, b"c")], base_offset=999, base_timestamp=1))
    buf += build_batch([(None, b"d"), (None, b"e")], base_offset=999, base_timestamp=2)
    info = log.append(memoryview(buf), leader_epoch=4, now_ms=1)
    assert (info.first_offset, info.last_offset) == (2, 4)
    assert [(b.base_offset, b.partition_leader_epoch) for b in info.batches] == [(2, 4), (3, 4)]
    stored = batches_of(log.read(2, 1000))
    assert [(b.base_offset, b.partition_leader_epoch, b.crc_ok()) for b in stored] == [
        (2, 4, True),
        (3, 4, True),
    ]
    assert bytes(buf) == log.read(2, 1000)
    log.close()


def test_invalid_appends_write_nothing(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig.from_overrides({"max.message.bytes": "200"}))
    append(log, [b"ok"])
    size = log.size_in_bytes
    good = batch([b"fine"])
    corrupt = batch([b"bad"])
    corrupt[-1] ^= 0xFF
    with pytest.raises(RecordBatchError, match="CRC"):
        log.append(memoryview(good + corrupt), leader_epoch=0, now_ms=1)
    with pytest.raises(MessageTooLargeError):
        log.append(memoryview(batch([b"x" * 300])), leader_epoch=0, now_ms=1)
    with pytest.raises(RecordBatchError):
        log.append(memoryview(good[:-3]), leader_epoch=0, now_ms=1)
    with pytest.raises(RecordBatchError):
        log.append(memoryview(bytearray()), leader_epoch=0, now_ms=1)
    with pytest.raises(ValueError):
        log.append(memoryview(bytes(good)), leader_epoch=0, now_ms=1)
    assert log.size_in_bytes == size
    assert log.log_end_offset == 1
    assert good == batch([b"fine"]), "a rejected request is not patched"
    log.close()


def test_leader_epochs(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    append(log, [b"a", b"b"], epoch=0)  # 0-1
    append(log, [b"c"], epoch=2)  # 2
    append(log, [b"d"], epoch=2)  # 3
    append(log, [b"e", b"f"], epoch=5)  # 4-5
    assert (log.directory / "leader-epoch-checkpoint").read_text() == "0\n3\n0 0\n2 2\n5 4\n"
    assert log.end_offset_for_epoch(0) == (0, 2)
    assert log.end_offset_for_epoch(1) == (0, 2)
    assert log.end_offset_for_epoch(2) == (2, 4)
    assert log.end_offset_for_epoch(4) == (2, 4)
    assert log.end_offset_for_epoch(5) == (5, 6)
    assert log.end_offset_for_epoch(6) == (-1, -1)
    assert log.end_offset_for_epoch(-1) == (-1, -1)
    assert log.epoch_for_offset(3) == 2
    log.close()
    reopened = open_log(tmp_path)
    assert reopened.epochs.entries == [(0, 0), (2, 2), (5, 4)]
    reopened.delete_records_before(3)
    assert reopened.epochs.entries == [(2, 3), (5, 4)]
    reopened.close()
    # a lost checkpoint is rebuilt from the batches by recovery
    (reopened.directory / "leader-epoch-checkpoint").unlink()
    rebuilt = open_log(tmp_path)
    assert rebuilt.epochs.entries == [(0, 0), (2, 2), (5, 4)]
    rebuilt.close()


def test_leader_epoch_lookups_count_the_current_leader_epoch(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    # Nothing appended: the cache is empty, but the leader's epoch starts at the log end.
    assert log.end_offset_for_epoch(0) == (-1, -1)
    assert log.end_offset_for_epoch(0, leader_epoch=0) == (0, 0)
    assert log.earliest_epoch() is None
    assert log.earliest_epoch(leader_epoch=0) == 0
    append(log, [b"a", b"b"], epoch=2)  # 0-1
    assert log.end_offset_for_epoch(3, leader_epoch=3) == (3, 2)
    assert log.end_offset_for_epoch(2, leader_epoch=3) == (2, 2)
    assert log.end_offset_for_epoch(2, leader_epoch=1) == (2, 2)  # older: the cache alone
    assert log.epoch_for_offset(1, leader_epoch=3) == 2
    assert log.epoch_for_offset(2, leader_epoch=3) == 3
    assert log.earliest_epoch(leader_epoch=3) == 2
    assert log.epochs.entries == [(2, 0)], "lookups never record an epoch"
    log.close()


def test_aborted_txns_across_segments(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 10)
    a = AbortedTxn(1, 2, 20, 2)
    log.append_aborted_txn(a)
    fill(log, 20)
    b = AbortedTxn(2, 25, 70, 25)
    c = AbortedTxn(3, 72, 80, 90)
    log.append_aborted_txn(b)
    log.append_aborted_txn(c)
    segment_of_b = next(s for s in log.segments if s.base_offset <= 70 < s.next_offset)
    assert segment_of_b.txn_index.all() == [b]
    assert log.collect_aborted_txns(0, 24) == [a]  # b's LSO (25) >= 24 ends the search
    assert log.collect_aborted_txns(0, 26) == [a, b]
    assert log.collect_aborted_txns(21, 26) == [b]
    assert log.collect_aborted_txns(0, 100) == [a, b, c]
    assert log.collect_aborted_txns(81, 100) == []
    log.close()


def test_time_based_roll(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig.from_overrides({"segment.ms": "1000"}))
    append(log, [b"a"], timestamp=10_000)
    append(log, [b"b"], timestamp=10_900)
    assert len(log.segments) == 1
    append(log, [b"c"], timestamp=11_001)
    assert [s.base_offset for s in log.segments] == [0, 2]
    log.close()


class _FixedJitter(random.Random):
    """A deterministic `random`: each randrange(n) call returns the next of `picks` (mod n)."""

    def __init__(self, picks: list[int]) -> None:
        super().__init__(0)
        self.picks = picks
        self.bounds: list[int] = []

    def randrange(self, n: int, *args: object, **kwargs: object) -> int:  # type: ignore[override]
        self.bounds.append(n)
        return self.picks.pop(0) % n


def test_segment_jitter_rolls_at_segment_ms_minus_the_segment_s_jitter(tmp_path: Path) -> None:
    # Issue #10: segment.jitter.ms is applied as Kafka does: each new active segment draws a
    # jitter in [0, min(segment.jitter.ms, segment.ms)) and rolls at segment.ms - jitter.
    rng = _FixedJitter([300, 700])
    config = LogConfig.from_overrides({"segment.ms": "1000", "segment.jitter.ms": "500"})
    log = open_log(tmp_path, config, rng=rng)
    assert log.roll_jitter_ms == 300 and rng.bounds == [500]
    append(log, [b"a"], timestamp=10_000)
    append(log, [b"b"], timestamp=10_700)  # spans 700 = 1000 - 300: not more, no roll
    assert len(log.segments) == 1
    append(log, [b"c"], timestamp=10_701)
    assert [s.base_offset for s in log.segments] == [0, 2]
    assert log.roll_jitter_ms == 700 % 500  # a new draw for the new segment
    log.close()


def test_no_jitter_draw_when_segment_jitter_is_zero(tmp_path: Path) -> None:
    rng = _FixedJitter([])
    log = open_log(tmp_path, LogConfig.from_overrides({"segment.ms": "1000"}), rng=rng)
    append(log, [b"a"], timestamp=10_000)
    append(log, [b"b"], timestamp=11_001)
    assert log.roll_jitter_ms == 0 and rng.bounds == []
    log.close()


def test_flush_messages_and_recovery_point(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig.from_overrides({"flush.messages": "4"}))
    append(log, [b"a", b"b"])
    assert log.recovery_point == 0
    append(log, [b"c", b"d"])
    assert log.recovery_point == 4
    append(log, [b"e"])
    assert log.recovery_point == 4
    log.flush()
    assert log.recovery_point == 5
    log.close()


def test_flush_ms(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig.from_overrides({"flush.ms": "100"}))
    append(log, [b"a"])
    assert not log.flush_if_due(now_ms=1_050)
    assert log.flush_if_due(now_ms=1_100)
    assert log.recovery_point == 1
    assert not log.flush_if_due(now_ms=5_000)  # nothing unflushed
    log.close()


def test_flush_up_to_rolled_segments(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 20)
    active = log.active_segment.base_offset
    log.flush(up_to=active)
    assert log.recovery_point == active
    log.close()


def test_roll_and_segment_files(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig.from_overrides())
    assert log.roll(now_ms=1) is log.active_segment  # empty active segment: no roll
    append(log, [b"a"])
    log.roll(now_ms=2)
    append(log, [b"b"])
    names = sorted(p.name for p in log.directory.iterdir())
    assert names == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        "00000000000000000001.index",
        "00000000000000000001.log",
        "00000000000000000001.timeindex",
        "leader-epoch-checkpoint",
    ]
    log.delete()
    assert not log.directory.exists()


def test_segment_byte_limit_counts_the_incoming_batch(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig.from_overrides({"internal.segment.bytes": "500"}))
    append(log, [b"x" * 150])
    first_size = log.active_segment.size
    append(log, [b"x" * 150])
    assert len(log.segments) == 1 and log.active_segment.size == 2 * first_size
    append(log, [b"x" * 150])  # would exceed 500 bytes
    assert len(log.segments) == 2
    # a batch bigger than segment.bytes still goes into an empty segment
    append(log, [b"z" * 700])
    assert all(s.size > 0 for s in log.segments)
    log.close()
    assert all(os.path.getsize(s.log_path) == s.size for s in log.segments)


def test_many_batches_in_one_request_never_overflow_the_index(tmp_path: Path) -> None:
    # 3 entries fit; one request of 10 batches wants more: the data still goes in whole.
    config = LogConfig.from_overrides({"index.interval.bytes": "0", "segment.index.bytes": "24"})
    log = open_log(tmp_path, config)
    request = bytearray()
    for i in range(10):
        request += batch([str(i).encode()])
    info = log.append(memoryview(request), leader_epoch=0, now_ms=1)
    assert (info.first_offset, info.last_offset) == (0, 9)
    assert log.active_segment.offset_index.entries == 3
    assert [v for _, v in values_of(log.read(0, 10**6))] == [str(i).encode() for i in range(10)]
    append(log, [b"next"])  # the full index rolls the segment before the next append
    assert len(log.segments) == 2
    log.close()
    verify_segment_files(log.directory, 0)


@pytest.mark.parametrize(("segment_bytes", "segments"), [("1048576", 3), (None, 1)])
def test_segment_bytes_rolls_the_log(tmp_path: Path, segment_bytes: str | None,
                                     segments: int) -> None:
    """The public segment.bytes (its floor, 1 MiB, since Kafka 4), not only the internal
    setting the other tests use: three 600 KB batches take three segments; at the default
    (1 GiB) one."""
    overrides = {} if segment_bytes is None else {"segment.bytes": segment_bytes}
    config = LogConfig.from_overrides(overrides)
    assert config.get_optional_int("internal.segment.bytes") is None
    log = open_log(tmp_path, config)
    for _ in range(3):
        append(log, [b"x" * 600_000])
    assert len(log.segments) == segments
    log.close()


@pytest.mark.parametrize("delay", ["0", "5000"])
def test_file_delete_delay_applies_to_segments_deleted_by_retention(tmp_path: Path,
                                                                    delay: str) -> None:
    """As Kafka's asynchronous segment deletion: a reader holding a deleted segment still
    reads it until file.delete.delay.ms has passed (0: at once)."""
    config = LogConfig.from_overrides({"internal.segment.bytes": "1024", "retention.ms": "1000",
                                       "file.delete.delay.ms": delay})
    log = open_log(tmp_path, config)
    for i in range(20):
        append(log, [b"x" * 100], timestamp=1_000 + i)
    oldest = log.segments[0]
    held = oldest.read(0, 1 << 20)
    assert log.enforce_retention(now_ms=100_000) > 0
    assert oldest not in log.segments
    if delay == "0":
        assert not oldest.log_path.exists()
    else:
        assert oldest.read(0, 1 << 20) == held
        assert log.delete_retired(100_000 + 4_999) == 0
        assert log.delete_retired(100_000 + 5_000) > 0
        assert not oldest.log_path.exists()
    log.close()
