"""Segment descriptors are bounded (issue #10): a `HandleCache` closes the descriptors of cold
segments, which reopen on their next use, losing nothing (`storage/handles.py`).

The process's descriptors are counted in /proc/self/fd (Linux); the segment files among them
are those whose link points under the test's directory.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from storage_testutil import values_of

from odradek.broker.storage import files
from odradek.broker.storage.cleaner import LogCleaner
from odradek.broker.storage.errors import AppendFailedError, OutOfDescriptorsError
from odradek.broker.storage.handles import MIN_CAPACITY, HandleCache, default_capacity
from odradek.broker.storage.log import PartitionLog
from odradek.broker.storage.manager import LogManager
from odradek.broker.storage.segment import BatchMeta, LogSegment
from odradek.config import LogConfig
from odradek.wire.records import Record, build_batch, iter_batches

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")

# A roll every ~600 bytes, index entries every 64: several segments per log, every index used.
SMALL = LogConfig.from_overrides({"internal.segment.bytes": "600", "index.interval.bytes": "64"})
COMPACT = LogConfig.from_overrides({
    "internal.segment.bytes": "600",
    "index.interval.bytes": "64",
    "cleanup.policy": "compact",
    "file.delete.delay.ms": "0",
})
THREE_SEGMENTS = 3 * 4  # a `.log` and three index files each


def fds_under(root: Path) -> int:
    """Descriptors of this process open on files under `root`."""
    prefix = str(root.resolve()) + os.sep
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith(prefix):
                count += 1
        except OSError:  # the listing's own descriptor, closed meanwhile
            continue
    return count


def put(log: PartitionLog, key: bytes, value: bytes, *, ts: int = 1_000) -> int:
    raw = build_batch([Record(0, 0, key, value)], base_timestamp=ts)
    return log.append(memoryview(bytearray(raw)), leader_epoch=0, now_ms=ts).first_offset


def read_everything(log: PartitionLog) -> list[tuple[int, bytes | None]]:
    out: list[tuple[int, bytes | None]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        found = values_of(log.read(offset, 1 << 20))
        assert found, f"nothing read at {offset}"
        out.extend(found)
        offset = found[-1][0] + 1
    return out


def keys_and_values(log: PartitionLog) -> dict[bytes | None, bytes | None]:
    """The last value of every key, read through the log."""
    out: dict[bytes | None, bytes | None] = {}
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        assert data, f"nothing read at {offset}"
        for batch in iter_batches(memoryview(data)):
            assert batch.crc_ok()
            for record in batch.records():
                out[record.key] = record.value
            offset = batch.next_offset
    return out


def open_logs(root: Path, n: int, cache: HandleCache | None,
              config: LogConfig = SMALL) -> list[PartitionLog]:
    return [PartitionLog.open(root / f"t-{p}", config, now_ms=0, handles=cache)
            for p in range(n)]


def abandon(log: PartitionLog) -> None:
    """A killed process: every descriptor released, nothing more written."""
    for segment in log.segments:
        segment.release()


# -- the bound ---------------------------------------------------------------------------------


def test_fifty_logs_under_a_three_segment_cache_stay_bounded_and_lose_nothing(
    tmp_path: Path,
) -> None:
    root = tmp_path / "logs"
    cache = HandleCache(THREE_SEGMENTS)
    logs = open_logs(root, 50, cache)
    assert fds_under(root) == 0  # opening a log opens no descriptor
    written: dict[int, list[tuple[int, bytes | None]]] = {p: [] for p in range(50)}
    peak = 0
    for round_ in range(12):
        for p, log in enumerate(logs):
            value = b"r%02d-p%02d-" % (round_, p) + b"x" * 40
            written[p].append((put(log, b"k", value, ts=1_000 + round_), value))
            peak = max(peak, fds_under(root))
            assert cache.held == fds_under(root)  # the count is the truth
        for p in range(0, 50, 7):  # read some back in every round, old segments too
            assert read_everything(logs[p]) == written[p]
            peak = max(peak, fds_under(root))
    assert peak <= THREE_SEGMENTS
    assert cache.peak <= THREE_SEGMENTS
    assert cache.evictions > 500
    assert all(len(log.segments) > 2 for log in logs)  # rolled: old segments were reopened
    for p, log in enumerate(logs):
        assert read_everything(log) == written[p]
    assert fds_under(root) <= THREE_SEGMENTS

    # A flush fsyncs evicted segments too, and the recovery point covers everything; then a
    # crash (nothing more written) and a reopen that trusts what is below the recovery point.
    for log in logs:
        log.flush()
        assert log.recovery_point == log.log_end_offset
        abandon(log)
    assert fds_under(root) == 0 and cache.held == 0 and len(cache) == 0
    cache = HandleCache(THREE_SEGMENTS)
    again = [PartitionLog.open(root / f"t-{p}", SMALL, now_ms=0, recovery_point=log.recovery_point,
                               handles=cache) for p, log in enumerate(logs)]
    assert fds_under(root) <= THREE_SEGMENTS
    for p, log in enumerate(again):
        assert read_everything(log) == written[p]
        assert fds_under(root) <= THREE_SEGMENTS
    for log in again:
        assert log.close()
    assert fds_under(root) == 0 and cache.held == 0


def test_without_a_cache_segments_open_lazily_and_stay_open(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    logs = open_logs(root, 5, None)
    assert fds_under(root) == 0
    for log in logs:
        for i in range(20):
            put(log, b"k", b"v%d" % i * 20)
    # Every segment of every log that was used keeps its `.log` (the active ones their
    # indexes too): nothing is evicted without a cache.
    segments = sum(len(log.segments) for log in logs)
    assert fds_under(root) >= segments
    for log in logs:
        log.close()
    assert fds_under(root) == 0


def test_start_up_does_not_open_every_log(tmp_path: Path) -> None:
    """Issue #10: after a clean shutdown only the tail check reads each active segment, and
    what it opens is evicted as later logs load."""
    manager = LogManager([tmp_path / "d"], SMALL, now_ms=0, segment_descriptors=THREE_SEGMENTS)
    for p in range(200):
        put(manager.create("wide", p, now_ms=0), b"k", b"v%d" % p)
        assert fds_under(tmp_path / "d") <= THREE_SEGMENTS
    manager.close_all()
    assert fds_under(tmp_path / "d") == 0
    for clean in (True, False):
        if not clean:
            (tmp_path / "d" / files.CLEAN_SHUTDOWN_FILE).unlink()
            (tmp_path / "d" / files.RECOVERY_POINT_CHECKPOINT_FILE).unlink()
        manager = LogManager([tmp_path / "d"], SMALL, now_ms=0,
                             segment_descriptors=THREE_SEGMENTS)
        assert fds_under(tmp_path / "d") <= THREE_SEGMENTS
        for p in range(200):
            log = manager.get("wide", p)
            assert log is not None and values_of(log.read(0, 1 << 20)) == [(0, b"v%d" % p)]
        assert fds_under(tmp_path / "d") <= THREE_SEGMENTS
        manager.close_all()


def test_default_capacity_leaves_room_for_sockets() -> None:
    assert default_capacity(20_000) == 10_000
    assert default_capacity(1024) == 512
    assert default_capacity(300) == 44  # 256 kept back
    assert default_capacity(256) == MIN_CAPACITY
    assert default_capacity(64) == MIN_CAPACITY


# -- what survives an eviction --------------------------------------------------------------------


def broken_ftruncate(fd: int, length: int) -> None:
    raise OSError(errno.EIO, "Input/output error")


def evict_all(cache: HandleCache, root: Path) -> None:
    """Use enough other segments that every unpinned one in `cache` is evicted."""
    others = open_logs(root / "others", 8, cache)
    for _ in range(2):
        for log in others:
            put(log, b"k", b"v")
    for log in others:
        log.close()


def test_a_torn_segment_evicted_is_cut_before_its_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = HandleCache(THREE_SEGMENTS)
    log = PartitionLog.open(tmp_path / "t-0", SMALL, now_ms=0, handles=cache)
    put(log, b"k", b"first")
    good = log.active_segment.log_path.read_bytes()
    real_pwrite = os.pwrite

    def short_then_fail(fd: int, data: Any, position: int) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".log"):
            monkeypatch.setattr(os, "pwrite", failing)
            return real_pwrite(fd, memoryview(data)[:20], position)
        return real_pwrite(fd, data, position)

    def failing(fd: int, data: Any, position: int) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", short_then_fail)
    monkeypatch.setattr(os, "ftruncate", broken_ftruncate)
    segment = log.active_segment
    second = build_batch([(b"k", b"second")], base_offset=1)
    with pytest.raises(OSError):  # not through PartitionLog: that would fail the dir
        segment.append(second, [BatchMeta(len(second), 1, -1)])
    monkeypatch.undo()
    assert segment.torn
    assert segment.log_path.stat().st_size == len(good) + 20  # the partial bytes are there
    evict_all(cache, tmp_path)
    assert segment.descriptors_held() == 0  # evicted, torn still
    assert segment.torn
    put(log, b"k", b"third")  # reopens, cuts the partial bytes, then writes
    assert not segment.torn
    data = segment.log_path.read_bytes()
    assert data.startswith(good) and len(data) > len(good)
    assert read_everything(log) == [(0, b"first"), (1, b"third")]
    log.close()


def test_a_torn_index_evicted_is_cut_before_its_next_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = HandleCache(THREE_SEGMENTS)
    log = PartitionLog.open(tmp_path / "t-0", SMALL, now_ms=0, handles=cache)
    for i in range(3):
        put(log, b"k", b"v%d" % i * 30)
    index = log.active_segment.offset_index
    good = index.path.read_bytes()
    real_write = os.write

    def short_write(fd: int, data: Any) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".index"):
            monkeypatch.setattr(os, "write", failing)
            return real_write(fd, memoryview(data)[:3])
        return real_write(fd, data)

    def failing(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", short_write)
    monkeypatch.setattr(os, "ftruncate", broken_ftruncate)
    with pytest.raises(OSError):
        index.append(log.log_end_offset + 5, 4000)
    monkeypatch.undo()
    assert index.torn and index.path.stat().st_size == len(good) + 3
    evict_all(cache, tmp_path)
    assert not index.has_descriptor and index.torn
    while log.active_segment.offset_index is index and index.entries * 8 == len(good):
        put(log, b"k", b"w" * 40)
    assert not index.torn
    data = index.path.read_bytes()
    assert data.startswith(good) and len(data) % 8 == 0
    log.close()


def test_an_evicted_segment_reopens_under_its_new_name(tmp_path: Path) -> None:
    cache = HandleCache(THREE_SEGMENTS)
    log = PartitionLog.open(tmp_path / "t-0", SMALL, now_ms=0, handles=cache)
    for i in range(30):
        put(log, b"k", b"v%02d" % i * 10)
    old = log.segments[0]
    expected = values_of(old.read(0, 1 << 20) or b"")
    mtime = old.last_modified_ms
    evict_all(cache, tmp_path)
    assert old.descriptors_held() == 0
    assert old.last_modified_ms == mtime  # from the path: no descriptor opened for it
    assert old.descriptors_held() == 0
    old.change_file_suffixes("", files.DELETED_SUFFIX)
    assert values_of(old.read(0, 1 << 20) or b"") == expected
    assert old.log_path.name.endswith(files.DELETED_SUFFIX)
    assert os.readlink(f"/proc/self/fd/{old.fd}") == str(old.log_path.resolve())
    old.change_file_suffixes(files.DELETED_SUFFIX, "")
    log.close()
    with pytest.raises(ValueError, match="closed"):
        _ = old.fd  # closed for good: never reopened


# -- pinning and threads -------------------------------------------------------------------------


def test_a_pinned_segment_is_never_evicted(tmp_path: Path) -> None:
    cache = HandleCache(THREE_SEGMENTS)
    log = PartitionLog.open(tmp_path / "t-0", SMALL, now_ms=0, handles=cache)
    put(log, b"k", b"v")
    segment = log.active_segment
    with segment.pinned():
        fd = segment.fd
        before = cache.evictions
        evict_all(cache, tmp_path)
        assert cache.evictions > before
        assert segment.descriptors_held() >= 1 and segment._fd == fd  # never closed
        assert os.readlink(f"/proc/self/fd/{fd}") == str(segment.log_path.resolve())
    evict_all(cache, tmp_path)
    assert segment.descriptors_held() == 0  # unpinned: evicted like the others
    log.close()


def test_only_the_owner_thread_evicts(tmp_path: Path) -> None:
    cache = HandleCache(4)
    logs = open_logs(tmp_path, 6, cache)
    for log in logs[:3]:
        _ = log.active_segment.fd
    assert cache.held == 3
    held_by_thread: list[int] = []

    def from_a_thread() -> None:
        for log in logs[3:]:
            _ = log.active_segment.fd  # opens: counted, but nothing is closed here
        held_by_thread.append(cache.held)

    thread = threading.Thread(target=from_a_thread)
    thread.start()
    thread.join()
    assert cache.evictions == 0
    assert held_by_thread == [6] == [fds_under(tmp_path)]  # overshoot off the owner thread
    late = open_logs(tmp_path / "late", 1, cache)[0]
    _ = late.active_segment.fd  # the owner's next open brings the total back down
    assert cache.evictions > 0
    assert cache.held <= 4 and fds_under(tmp_path) <= 4
    for log in [*logs, late]:
        log.close()


def test_the_cleaner_compacts_while_other_logs_evict_its_segments(tmp_path: Path) -> None:
    """The cleaner's fsync runs in a worker thread while produces to other logs evict
    segments: the segment being fsynced is pinned, the rest reopen; nothing is lost."""
    manager = LogManager([tmp_path / "logs"], COMPACT, now_ms=0,
                         segment_descriptors=THREE_SEGMENTS)
    compacted = manager.create("c", 0, now_ms=0)
    latest: dict[bytes | None, bytes | None] = {}
    for r in range(40):
        for k in range(5):
            key, value = b"k%d" % k, b"v%02d-%d" % (r, k) * 4
            put(compacted, key, value, ts=1_000 + r)
            latest[key] = value
    others = [manager.create("o", p, COMPACT, now_ms=0) for p in range(10)]
    flushed_pinned: list[bool] = []
    real_flush = LogSegment.flush

    def slow_flush(self: LogSegment) -> None:
        if threading.current_thread() is not threading.main_thread():
            flushed_pinned.append(self.pins > 0)
            fd = self.fd
            time.sleep(0.05)  # the event loop evicts meanwhile
            assert os.readlink(f"/proc/self/fd/{fd}") == str(self.log_path.resolve())
        real_flush(self)

    cleaner = LogCleaner(manager)
    evictions_before = manager.handles.evictions
    result: list[Any] = []

    async def main() -> None:
        done = anyio.Event()

        async def produce() -> None:
            n = 0
            while not done.is_set():
                for log in others:
                    put(log, b"k%d" % n, b"v" * 30)
                    n += 1
                await anyio.sleep(0)

        async def clean() -> None:
            result.append(await cleaner.run_pass_async(lambda: 100_000))
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            tg.start_soon(clean)

    original = LogSegment.flush
    LogSegment.flush = slow_flush  # type: ignore[method-assign]
    try:
        anyio.run(main)
    finally:
        LogSegment.flush = original  # type: ignore[method-assign]
    assert result[0] is not None, "nothing was cleaned"
    assert flushed_pinned and all(flushed_pinned)
    assert manager.handles.evictions > evictions_before
    assert fds_under(tmp_path / "logs") <= THREE_SEGMENTS
    assert keys_and_values(compacted) == latest
    assert len(read_everything(compacted)) < 200  # compacted: most old values are gone
    for log in others:
        assert [o for o, _ in read_everything(log)] == list(range(log.log_end_offset))
    manager.close_all()
    assert fds_under(tmp_path / "logs") == 0


# -- out of descriptors ---------------------------------------------------------------------------


def fail_opens(monkeypatch: pytest.MonkeyPatch, times: int | None) -> Callable[[], int]:
    """`os.open` fails with EMFILE `times` times (None: always); returns the failure count."""
    real_open = os.open
    failed = [0]

    def opener(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        if times is None or failed[0] < times:
            failed[0] += 1
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(path, flags, mode, **kw)

    monkeypatch.setattr(os, "open", opener)
    return lambda: failed[0]


def test_out_of_descriptors_closes_cold_segments_and_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = HandleCache(40)
    logs = open_logs(tmp_path, 12, cache)
    for log in logs:
        put(log, b"k", b"v")
    held = cache.held
    assert held == 12
    target = open_logs(tmp_path / "new", 1, cache)[0]
    failures = fail_opens(monkeypatch, 1)
    put(target, b"k", b"after")  # its first open fails once: half the cache is given back
    monkeypatch.undo()
    assert failures() == 1
    assert cache.held <= held // 2 + 4
    assert values_of(target.read(0, 1 << 20)) == [(0, b"after")]
    for log in logs:
        assert values_of(log.read(0, 1 << 20)) == [(0, b"v")]
        log.close()
    target.close()


def test_with_no_descriptor_left_requests_fail_and_the_dir_stays_online(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = LogManager([tmp_path / "d"], SMALL, now_ms=0, segment_descriptors=THREE_SEGMENTS)
    logs = [manager.create("t", p, now_ms=0) for p in range(4)]
    for log in logs:
        put(log, b"k", b"v")
    for segment in (s for log in logs for s in log.segments):  # nothing left to give back
        segment.drop_descriptors()
        manager.handles.update(segment)
    fail_opens(monkeypatch, None)
    with pytest.raises(AppendFailedError, match="descriptor"):
        put(logs[0], b"k", b"lost")
    with pytest.raises(OutOfDescriptorsError):
        logs[1].read(0, 1 << 20)
    with pytest.raises(OutOfDescriptorsError):
        logs[2].flush()
    manager.checkpoint()  # logged, not a failed dir
    monkeypatch.undo()
    assert manager.is_online(tmp_path / "d")
    assert not any(log.offline for log in logs)
    assert put(logs[0], b"k", b"w") == 1  # the failed append left nothing behind
    assert values_of(logs[0].read(0, 1 << 20)) == [(0, b"v"), (1, b"w")]
    assert values_of(logs[1].read(0, 1 << 20)) == [(0, b"v")]
    logs[2].flush()
    assert logs[2].recovery_point == logs[2].log_end_offset
    manager.close_all()


def test_a_retried_batch_whose_fsync_found_no_descriptor_is_fsynced_before_its_ack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flush.messages=1: an append is acknowledged only once fsynced. When the fsync cannot
    open a file the append is answered an error; the producer's retry is a duplicate, and
    gets the fsync before its acknowledgement."""
    config = LogConfig.from_overrides({"flush.messages": "1"})
    log = PartitionLog.open(tmp_path / "t-0", config, now_ms=0, handles=HandleCache(16))
    raw = build_batch([Record(0, 0, b"k", b"v")], producer_id=7, producer_epoch=0,
                      base_sequence=0)
    real_open = os.open

    def no_short_lived_descriptor(path: Any, flags: int, mode: int = 0o777) -> int:
        if flags == os.O_RDONLY:  # the fsync of a file without a descriptor
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(path, flags, mode)

    put(log, b"k", b"first")  # the leader epoch is recorded (its checkpoint fsyncs the dir)
    assert log.recovery_point == 1
    monkeypatch.setattr(os, "open", no_short_lived_descriptor)
    with pytest.raises(OutOfDescriptorsError):
        log.append(memoryview(bytearray(raw)), leader_epoch=0, now_ms=0)
    assert log.log_end_offset == 2 and log.recovery_point == 1 and not log.offline
    monkeypatch.undo()
    info = log.append(memoryview(bytearray(raw)), leader_epoch=0, now_ms=0)
    assert info.duplicate and info.first_offset == 1
    assert log.recovery_point == 2
    log.close()
