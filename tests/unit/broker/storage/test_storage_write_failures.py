"""An append either lands whole or leaves the log exactly as it was (issue #10).

A write failure is injected at every point of an append (`os.write`/`os.pwrite` of one file
kind, after letting a few bytes through for a short write): the `.log` write (at once, inside
the batch header, in the middle of the batch, one byte short), the `.index`, `.timeindex`
and `.txnindex` entries, the producer-state snapshot and the final time index entry of a
roll, the files of the new segment, the leader epoch checkpoint. Each time: the append raises
AppendFailedError (KAFKA_STORAGE_ERROR), the partition directory is byte-identical to before,
the end offset, producer state and epoch cache are unchanged; once the fault is gone the
same append lands right after the last whole batch, and a reopen, clean or after a crash,
gives the same offsets with every acknowledged record.

Then the other failures: a cut that fails too (the segment is torn, cut before its next
write), EIO (the log dir goes offline; with a LogManager, only that dir), and closing on a
full disk (every log closed, no clean-shutdown marker, nothing lost).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from storage_testutil import abandon, batches_of

from odradek.broker.storage import files
from odradek.broker.storage.errors import AppendFailedError, LogDirOfflineError
from odradek.broker.storage.log import PartitionLog
from odradek.broker.storage.manager import LogManager
from odradek.broker.storage.producer_state import Origin
from odradek.broker.storage.segment import BatchMeta, LogSegment
from odradek.broker.storage.time_index import TimeIndex
from odradek.config import LogConfig
from odradek.wire import ErrorCode
from odradek.wire.records import build_batch, build_control_batch

PID = 4242
TXN_PID = 77

# Index entries every 128 bytes, a roll every ~1 KiB.
SMALL = LogConfig.from_overrides({"internal.segment.bytes": "1024", "index.interval.bytes": "128"})
# No index entries while appending: the only `.timeindex` write is the one a roll makes.
ROLL_ONLY = LogConfig.from_overrides({"internal.segment.bytes": "1024", "index.interval.bytes": "1000000"})


# -- fault injection ---------------------------------------------------------------------------


def _path_of(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


class WriteFault:
    """While armed, writes (`os.write`, `os.pwrite`) to files under `under` whose name ends
    with `suffix` let `allow` bytes through (a short write; negative: all but that many bytes
    of the first write), then fail with `code`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, suffix: str, *, allow: int = 0,
                 code: int = errno.ENOSPC, under: Path | None = None) -> None:
        self.suffix, self.allow, self.code = suffix, allow, code
        self.under = "/" if under is None else str(under)
        self.armed = True
        self.fired = 0
        real_write, real_pwrite = os.write, os.pwrite

        def wrap(real: Callable[..., int]) -> Callable[..., int]:
            def wrapped(fd: int, data: Any, *rest: Any) -> int:
                path = _path_of(fd)
                if self.armed and path.startswith(self.under) and path.endswith(self.suffix):
                    if self.allow < 0:
                        self.allow += len(memoryview(data))
                    if self.allow > 0:
                        written = real(fd, memoryview(data)[: self.allow], *rest)
                        self.allow -= written
                        return written
                    self.fired += 1
                    raise OSError(self.code, os.strerror(self.code))
                return real(fd, data, *rest)

            return wrapped

        monkeypatch.setattr(os, "write", wrap(real_write))
        monkeypatch.setattr(os, "pwrite", wrap(real_pwrite))

    def disarm(self) -> None:
        self.armed = False


def dir_bytes(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


# -- the log under test ------------------------------------------------------------------------


@dataclass
class Sent:
    offset: int
    values: list[bytes]


class Producer:
    """An idempotent producer (and, for markers, a transaction coordinator) appending to one
    log, keeping what was acknowledged."""

    def __init__(self, log: PartitionLog) -> None:
        self.log = log
        self.seq = 0
        self.n = 0
        self.acked: list[Sent] = []

    def batch(self) -> tuple[bytearray, list[bytes]]:
        values = [b"value-%04d-%d" % (self.n, j) * 3 for j in range(3)]
        data = bytearray(build_batch([(b"k%d" % self.n, v) for v in values],
                                     base_timestamp=10_000 + self.n * 10, producer_id=PID,
                                     producer_epoch=0, base_sequence=self.seq))
        return data, values

    def send(self, data: bytearray, values: list[bytes], *, origin: Origin = Origin.CLIENT,
             idempotent: bool = True) -> int:
        """Append; on success count it as acknowledged (and, for this producer's batches,
        move its sequence on)."""
        info = self.log.append(memoryview(data), leader_epoch=0, now_ms=1_000, origin=origin)
        assert not info.duplicate
        self.acked.append(Sent(info.first_offset, values))
        if idempotent:
            self.n += 1
            self.seq += len(values)
        return info.first_offset

    def send_next(self) -> int:
        return self.send(*self.batch())


def txn_batch(n: int) -> tuple[bytearray, list[bytes]]:
    values = [b"txn-%d" % n]
    return bytearray(build_batch([(b"t", values[0])], base_timestamp=20_000, producer_id=TXN_PID,
                                 producer_epoch=0, base_sequence=n, is_transactional=True)), values


def abort_marker() -> bytearray:
    return bytearray(build_control_batch(commit=False, producer_id=TXN_PID, producer_epoch=0,
                                         coordinator_epoch=0, timestamp_ms=30_000))


def open_log(directory: Path, config: LogConfig, **kwargs: Any) -> PartitionLog:
    return PartitionLog.open(directory, config, now_ms=1_000, **kwargs)


def state_of(log: PartitionLog) -> tuple[Any, ...]:
    """The in-memory state an append may change."""
    producers = {pid: (e.producer_epoch, e.last_seq, e.last_data_offset, e.coordinator_epoch,
                       e.current_txn_first_offset, list(e.batches))
                 for pid, e in log.producer_state.producers.items()}
    return (log.log_end_offset, log.high_watermark, log.last_stable_offset,
            [s.base_offset for s in log.segments], [s.size for s in log.segments],
            log.epochs.entries, producers, log.producer_state.ongoing_transactions(),
            log.producer_state.snapshot_offsets, log.active_segment.max_timestamp_and_offset)


def read_everything(log: PartitionLog) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every data record (markers left out), read as a consumer would."""
    got: list[tuple[int, bytes | None]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        assert data, f"no progress at {offset}"
        for batch in batches_of(data):
            assert batch.crc_ok()
            if not batch.is_control:
                got.extend((batch.base_offset + r.offset_delta, r.value) for r in batch.records()
                           if batch.base_offset + r.offset_delta >= offset)
            offset = batch.last_offset + 1
    return got


def expected(acked: list[Sent]) -> list[tuple[int, bytes | None]]:
    return [(s.offset + i, v) for s in acked for i, v in enumerate(s.values)]


def assert_reopens(directory: Path, config: LogConfig, log: PartitionLog,
                   producer: Producer) -> None:
    """After a crash, then after a clean shutdown: same end offset, every acked record, and
    the producer's next sequence is accepted."""
    end = log.log_end_offset
    want = expected(producer.acked)
    abandon(log)  # a crash: no flush, no final index entries, no snapshot
    crashed = open_log(directory, config, recovery_point=0)
    assert crashed.log_end_offset == end
    assert read_everything(crashed) == want
    producer.log = crashed
    producer.send_next()
    end = crashed.log_end_offset
    want = expected(producer.acked)
    crashed.close()
    clean = open_log(directory, config, recovery_point=end, had_clean_shutdown=True)
    assert clean.log_end_offset == end
    assert read_everything(clean) == want
    producer.log = clean
    producer.send_next()
    clean.close()


# -- every point of an append ------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    name: str
    suffix: str
    allow: int = 0
    config: LogConfig = SMALL


POINTS = [
    Point("log write, nothing written", ".log"),
    Point("log write, inside the batch header", ".log", allow=20),
    Point("log write, middle of the batch", ".log", allow=100),
    Point("log write, one byte short", ".log", allow=-1),
    Point("offset index entry", ".index"),
    Point("offset index entry, half written", ".index", allow=4),
    Point("time index entry", ".timeindex", allow=5),
    Point("producer-state snapshot at roll", ".snapshot.tmp", allow=10),
    Point("final time index entry at roll", ".timeindex", config=ROLL_ONLY),
]


@pytest.mark.parametrize("point", POINTS, ids=[p.name for p in POINTS])
def test_a_failed_write_leaves_the_log_exactly_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: Point
) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, point.config)
    producer = Producer(log)
    producer.send_next()  # the leader epoch is known; later appends write no checkpoint
    fault = WriteFault(monkeypatch, point.suffix, allow=point.allow)
    for _ in range(100):
        before, state = dir_bytes(directory), state_of(log)
        data, values = producer.batch()
        try:
            producer.send(data, values)
        except AppendFailedError as exc:
            assert exc.error_code == ErrorCode.KAFKA_STORAGE_ERROR
            break
    else:
        pytest.fail(f"no append wrote to a {point.suffix} file")
    assert fault.fired
    assert dir_bytes(directory) == before, "a failed append changed the files"
    assert state_of(log) == state, "a failed append changed the in-memory state"
    assert not any(s.torn for s in log.segments)
    # Still full: the retry fails the same way and changes nothing either.
    if point.allow == 0:
        with pytest.raises(AppendFailedError):
            producer.send(*producer.batch())
        assert dir_bytes(directory) == before
    fault.disarm()

    # Space is back: the same batch (same sequence) lands right after the last whole batch.
    end = log.log_end_offset
    data, values = producer.batch()
    assert producer.send(data, values) == end
    active = log.active_segment
    log_bytes = (directory / files.log_file(directory, active.base_offset).name).read_bytes()
    written = bytes(data)
    if active.base_offset == end:  # the append rolled
        assert log_bytes == written
    else:
        old = before[files.log_file(directory, active.base_offset).name]
        assert log_bytes == old + written
    assert read_everything(log) == expected(producer.acked)
    assert_reopens(directory, point.config, log, producer)


def test_a_failed_aborted_txn_entry_is_undone_with_its_marker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, SMALL)
    producer = Producer(log)
    producer.send_next()
    producer.send(*txn_batch(0), idempotent=False)
    fault = WriteFault(monkeypatch, ".txnindex", allow=10)
    before, state = dir_bytes(directory), state_of(log)
    with pytest.raises(AppendFailedError):
        producer.send(abort_marker(), [], origin=Origin.COORDINATOR, idempotent=False)
    assert dir_bytes(directory) == before
    assert state_of(log) == state
    assert log.last_stable_offset == producer.acked[1].offset  # the transaction is still open
    fault.disarm()
    marker_offset = producer.send(abort_marker(), [], origin=Origin.COORDINATOR,
                                  idempotent=False)
    assert marker_offset == state[0]
    assert log.last_stable_offset == log.log_end_offset
    [txn] = log.collect_aborted_txns(0, log.log_end_offset)
    assert (txn.producer_id, txn.first_offset, txn.last_offset) == (
        TXN_PID, producer.acked[1].offset, marker_offset)
    assert_reopens(directory, SMALL, log, producer)


def test_a_failed_leader_epoch_checkpoint_undoes_the_first_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, SMALL)
    producer = Producer(log)
    fault = WriteFault(monkeypatch, files.LEADER_EPOCH_CHECKPOINT_FILE + files.TMP_SUFFIX)
    before, state = dir_bytes(directory), state_of(log)
    with pytest.raises(AppendFailedError):
        producer.send_next()
    assert dir_bytes(directory) == before
    assert state_of(log) == state
    assert log.epochs.entries == []
    fault.disarm()
    assert producer.send_next() == 0
    assert log.epochs.entries == [(0, 0)]
    assert_reopens(directory, SMALL, log, producer)


def test_a_failed_new_segment_undoes_the_roll(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "t-0"
    log = open_log(directory, ROLL_ONLY)  # the roll writes the old segment's last time entry
    producer = Producer(log)
    real_create = TimeIndex.create

    def no_space(self: TimeIndex) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    while True:
        monkeypatch.setattr(TimeIndex, "create", no_space)
        before, state = dir_bytes(directory), state_of(log)
        try:
            producer.send_next()
        except AppendFailedError:
            break
        assert len(log.segments) == 1
    # The half-made segment (its `.log` and `.index`) is gone, the snapshot taken for it too.
    assert dir_bytes(directory) == before
    assert state_of(log) == state
    monkeypatch.setattr(TimeIndex, "create", real_create)
    producer.send_next()
    assert len(log.segments) == 2
    assert_reopens(directory, ROLL_ONLY, log, producer)


def test_many_failures_in_a_row_then_recovery_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The torture run: the disk fills and frees again and again; every acked record stays,
    at its offset, with no gap and nothing behind partial bytes."""
    directory = tmp_path / "t-0"
    log = open_log(directory, SMALL)
    producer = Producer(log)
    failures = 0
    for round_ in range(30):
        suffix = [".log", ".index", ".timeindex", ".snapshot.tmp"][round_ % 4]
        fault = WriteFault(monkeypatch, suffix, allow=(round_ * 7) % 50, under=tmp_path)
        for _ in range(5):
            try:
                producer.send_next()
            except AppendFailedError:
                failures += 1
        fault.disarm()
        monkeypatch.undo()
    assert failures > 10
    offsets = [o for o, _ in read_everything(log)]
    assert offsets == list(range(log.log_end_offset))
    assert read_everything(log) == expected(producer.acked)
    assert_reopens(directory, SMALL, log, producer)


# -- a cut that fails too ----------------------------------------------------------------------


def broken_ftruncate(fd: int, length: int) -> None:
    raise OSError(errno.EIO, "Input/output error")


def test_a_torn_segment_is_cut_before_its_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    segment = LogSegment.create(tmp_path, 0, now_ms=0)
    first = build_batch([(b"k", b"v" * 50)], base_timestamp=1)
    segment.append(first, [BatchMeta(len(first), 0, 1)])
    second = build_batch([(b"k", b"w" * 50)], base_offset=1, base_timestamp=2)
    WriteFault(monkeypatch, ".log", allow=30)
    monkeypatch.setattr(os, "ftruncate", broken_ftruncate)
    with pytest.raises(OSError):
        segment.append(second, [BatchMeta(len(second), 1, 2)])
    monkeypatch.undo()
    assert segment.torn
    assert segment.size == len(first)
    assert segment.log_path.stat().st_size == len(first) + 30  # the partial bytes are there
    third = build_batch([(b"k", b"x" * 10)], base_offset=1, base_timestamp=3)
    segment.append(third, [BatchMeta(len(third), 1, 3)])
    assert not segment.torn
    assert segment.log_path.read_bytes() == first + third
    segment.close()


def test_a_failed_cut_takes_the_log_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = open_log(tmp_path / "t-0", SMALL)
    producer = Producer(log)
    producer.send_next()
    WriteFault(monkeypatch, ".log", allow=10)
    monkeypatch.setattr(os, "ftruncate", broken_ftruncate)
    with pytest.raises(LogDirOfflineError) as raised:
        producer.send_next()
    assert raised.value.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert log.offline and log.closed


# -- EIO: the log dir goes offline ---------------------------------------------------------------


def test_eio_takes_the_log_offline_for_writes_and_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(tmp_path / "t-0", SMALL)
    producer = Producer(log)
    producer.send_next()
    fault = WriteFault(monkeypatch, ".log", code=errno.EIO)
    with pytest.raises(LogDirOfflineError):
        producer.send_next()
    fault.disarm()  # an offline dir stays offline until a restart
    with pytest.raises(LogDirOfflineError):
        producer.send_next()
    with pytest.raises(LogDirOfflineError):
        log.read(0, 1000)
    assert log.close() is False
    reopened = open_log(tmp_path / "t-0", SMALL)
    assert read_everything(reopened) == expected(producer.acked)
    reopened.close()


def test_eio_in_one_log_dir_leaves_the_other_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    manager = LogManager([d1, d2], SMALL, now_ms=1_000)
    logs = {p: manager.create("t", p, now_ms=1_000) for p in range(4)}
    assert {manager.log_dir_of("t", p) for p in range(4)} == {d1, d2}
    in_d2 = [p for p in range(4) if manager.log_dir_of("t", p) == d2]
    in_d1 = [p for p in range(4) if manager.log_dir_of("t", p) == d1]
    producers = {p: Producer(pl) for p, pl in logs.items()}
    for producer in producers.values():
        producer.send_next()
    checkpoint = (d2 / files.RECOVERY_POINT_CHECKPOINT_FILE).read_bytes()

    WriteFault(monkeypatch, ".log", code=errno.EIO)
    with pytest.raises(LogDirOfflineError):
        logs[in_d2[0]].append(memoryview(producers[in_d2[0]].batch()[0]), leader_epoch=0,
                              now_ms=1_000)
    monkeypatch.undo()
    assert not manager.is_online(d2) and manager.is_online(d1)
    assert set(manager.offline_dirs) == {d2}
    for p in in_d2:  # every log of the failed dir, not only the one that failed
        assert logs[p].offline
        with pytest.raises(LogDirOfflineError):
            producers[p].send_next()
        with pytest.raises(LogDirOfflineError):
            logs[p].read(0, 1000)
    for p in in_d1:
        producers[p].send_next()
        assert read_everything(logs[p]) == expected(producers[p].acked)
    # New partitions go to the dir that works; the passes skip the failed one.
    assert manager.log_dir_of("t", manager.create("t", 9, now_ms=1_000).partition) == d1
    manager.retention_pass(2_000)
    manager.flush_pass(2_000)
    manager.flush_rolled_segments()
    manager.close_all()
    assert (d1 / files.CLEAN_SHUTDOWN_FILE).exists()
    assert not (d2 / files.CLEAN_SHUTDOWN_FILE).exists()
    assert (d2 / files.RECOVERY_POINT_CHECKPOINT_FILE).read_bytes() == checkpoint

    again = LogManager([d1, d2], SMALL, now_ms=1_000)  # a restart tries the dir again
    for p, producer in producers.items():
        reopened = again.get("t", p)
        assert reopened is not None and not reopened.offline
        assert read_everything(reopened) == expected(producer.acked)
    again.close_all()


# -- closing on a full disk ----------------------------------------------------------------------


def test_closing_on_a_full_disk_closes_every_log_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d1 = tmp_path / "d1"
    manager = LogManager([d1], SMALL, now_ms=1_000)
    producers = [Producer(manager.create("t", p, now_ms=1_000)) for p in range(3)]
    for _ in range(12):
        for producer in producers:
            producer.send_next()
    # Every write fails: snapshots, time index entries, checkpoints, the marker.
    WriteFault(monkeypatch, "", under=tmp_path)
    manager.close_all()  # no exception
    monkeypatch.undo()
    for producer in producers:
        assert producer.log.closed
        with pytest.raises(ValueError, match="closed"):
            _ = producer.log.active_segment.fd
    assert not (d1 / files.CLEAN_SHUTDOWN_FILE).exists()  # the next start recovers
    assert not list(d1.rglob("*.tmp"))
    again = LogManager([d1], SMALL, now_ms=1_000)
    for p, producer in enumerate(producers):
        reopened = again.get("t", p)
        assert reopened is not None
        assert read_everything(reopened) == expected(producer.acked)
        producer.log = reopened
        producer.send_next()  # the rebuilt producer state accepts the next sequence
    again.close_all()
    assert (d1 / files.CLEAN_SHUTDOWN_FILE).exists()


def test_deleting_a_partition_on_a_full_disk_frees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    d1 = tmp_path / "d1"
    manager = LogManager([d1], SMALL, now_ms=1_000)
    producer = Producer(manager.create("t", 0, now_ms=1_000))
    for _ in range(5):
        producer.send_next()
    directory = producer.log.directory
    WriteFault(monkeypatch, "", under=tmp_path)
    manager.delete("t")  # writes nothing before the files are gone
    monkeypatch.undo()
    assert not directory.exists()
    assert manager.get("t", 0) is None
    manager.close_all()
