"""PartitionLog.read_region, the zero-copy form of `read` (issue #12): the same bytes as a
region of a dup of the segment's descriptor, fixed when it is built, and still readable after
the segment is rolled, deleted or the log closed."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from storage_testutil import append, batches_of

from odradek.broker.storage.handles import HandleCache
from odradek.broker.storage.log import OffsetOutOfRangeError, PartitionLog
from odradek.config import LogConfig
from odradek.wire.regions import FileRegion

SMALL = LogConfig.from_overrides({"internal.segment.bytes": "1024", "index.interval.bytes": "128"})


def open_log(tmp_path: Path) -> PartitionLog:
    return PartitionLog.open(tmp_path / "topic-a-0", SMALL, now_ms=1_000)


def fill(log: PartitionLog, batches: int) -> None:
    for i in range(batches):
        append(log, [f"value-{i}-{j}".encode() * (1 + i % 4) for j in range(3)],
               timestamp=10_000 + i * 10)


def region_bytes(region: FileRegion) -> bytes:
    return os.pread(region.fd, region.length, region.offset)


@pytest.mark.parametrize("max_bytes", [0, 1, 100, 300, 1024, 1 << 20])
@pytest.mark.parametrize("min_one", [True, False])
def test_a_region_holds_what_read_returns(tmp_path: Path, max_bytes: int, min_one: bool) -> None:
    log = open_log(tmp_path)
    fill(log, 60)
    assert len(log.segments) > 5
    for offset in range(0, log.log_end_offset, 7):
        for bound in (None, offset + 5, log.log_end_offset - 1):
            want = log.read(offset, max_bytes, upper_bound=bound, min_one_message=min_one)
            region, upper = log.read_region(offset, max_bytes, upper_bound=bound,
                                            min_one_message=min_one, with_upper=True)
            if not want:
                assert region is None
                continue
            assert region is not None
            assert region_bytes(region) == want
            # the exclusive upper offset: the first offset after the returned batches
            assert upper == batches_of(want)[-1].last_offset + 1
            region.close()
    log.close()


def test_out_of_range_and_empty(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 3)
    with pytest.raises(OffsetOutOfRangeError):
        log.read_region(log.log_end_offset + 1, 100)
    assert log.read_region(log.log_end_offset, 100) == (None, -1)
    assert log.read_region(0, 100, upper_bound=0) == (None, -1)
    log.close()


def test_a_region_is_fixed_when_built(tmp_path: Path) -> None:
    """Appends after it (the active segment growing) do not extend it."""
    log = open_log(tmp_path)
    append(log, [b"a"], timestamp=10_000)
    region, _ = log.read_region(0, 1 << 20)
    assert region is not None
    before = region_bytes(region)
    append(log, [b"b"], timestamp=10_001)
    assert region.length == len(before) and region_bytes(region) == before
    region.close()
    log.close()


def test_a_region_survives_its_segment_being_deleted_and_the_log_closed(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 60)
    first = log.segments[0]
    region, _ = log.read_region(0, 1 << 20)
    assert region is not None
    want = log.read(0, 1 << 20)
    assert region_bytes(region) == want
    log.delete_records_before(log.segments[2].base_offset)  # deletes at once, no delay
    assert not first.log_path.exists()
    log.close()
    assert region_bytes(region) == want  # the dup pins the unlinked file
    region.close()


def test_a_region_owns_a_dup_not_the_segment_descriptor(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 2)
    region, _ = log.read_region(0, 1 << 20)
    assert region is not None
    assert region.fd != log.segments[0].fd
    region.close()
    os.fstat(log.segments[0].fd)  # closing the region leaves the segment's open
    log.close()


def test_out_of_descriptors_for_the_dup_copies_instead(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A response naming more partitions than the descriptor limit has room for still gets
    every partition's records: the bytes, read as the copying path does."""
    log = open_log(tmp_path)
    fill(log, 10)
    want = log.read(0, 1 << 20)

    def no_fd(fd: int) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(os, "dup", no_fd)
    region, upper = log.read_region(0, 1 << 20, with_upper=True)
    assert region == want and upper == batches_of(want)[-1].last_offset + 1
    log.close()


def test_regions_in_flight_are_bounded_then_bytes_are_copied(tmp_path: Path) -> None:
    """At most a quarter of the handle cache's capacity (at least 16) in flight: past that,
    bytes, so thousands of partitions in one response leave descriptors for sockets."""
    log = PartitionLog.open(tmp_path / "topic-a-0", SMALL, now_ms=1_000,
                            handles=HandleCache(40))
    fill(log, 3)
    base = FileRegion.open_count
    held = []
    while FileRegion.open_count < base + 16 or FileRegion.open_count < 16:
        region, _ = log.read_region(0, 1 << 20)
        assert isinstance(region, FileRegion), f"copied with {len(held)} regions held"
        held.append(region)
    copied, _ = log.read_region(0, 1 << 20)
    assert copied == log.read(0, 1 << 20)
    held.pop().close()
    if FileRegion.open_count < 16:
        assert isinstance(log.read_region(0, 1 << 20)[0], FileRegion)
    for region in held:
        region.close()
    log.close()
