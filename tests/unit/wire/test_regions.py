"""FileRegion, and the generated Fetch encoder carrying one as a body part without reading
it: replacing the region by its bytes gives exactly the encoding of those bytes."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from odradek.wire._generated.fetch import FetchResponse
from odradek.wire.records import build_batch
from odradek.wire.regions import FileRegion, as_records

RECORDS = build_batch([(b"k", b"v" * 300)]) + build_batch([(b"k2", b"w" * 50)])


@pytest.fixture
def path(tmp_path: Path) -> Path:
    p = tmp_path / "seg.log"
    p.write_bytes(b"\0" * 17 + RECORDS + b"tail")
    return p


def open_region(path: Path) -> FileRegion:
    return FileRegion(os.open(path, os.O_RDONLY), 17, len(RECORDS))


def fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_length_truth_and_close(path: Path) -> None:
    region = open_region(path)
    assert len(region) == len(RECORDS) and region
    assert not FileRegion(os.dup(region.fd), 0, 0)  # (closed when dropped)
    fd = region.fd
    region.close()
    assert region.closed and not fd_open(fd)
    region.close()  # idempotent
    with pytest.raises(ValueError):
        FileRegion(-1, -1, 1)
    with pytest.raises(ValueError):
        FileRegion(-1, 0, -1)


def test_a_dropped_region_closes_its_descriptor(path: Path) -> None:
    region = open_region(path)
    fd = region.fd
    del region
    gc.collect()
    assert not fd_open(fd)


def response(records: object) -> FetchResponse:
    P = FetchResponse.PartitionData
    parts = [P(partition_index=i, high_watermark=9, last_stable_offset=9, log_start_offset=0,
               aborted_transactions=[] if i else None, records=records)  # type: ignore[arg-type]
             for i in range(2)]
    return FetchResponse(session_id=5, responses=[
        FetchResponse.FetchableTopicResponse(topic="t", partitions=parts)])


@pytest.mark.parametrize("version", range(4, 19))
def test_the_encoder_carries_a_region_as_a_part(path: Path, version: int) -> None:
    region = open_region(path)
    parts = response(as_records(region)).encode(version)
    assert sum(1 for p in parts if p is region) == 2  # by reference, never read
    joined = b"".join(RECORDS if p is region else bytes(p) for p in parts)
    assert joined == b"".join(bytes(p) for p in response(RECORDS).encode(version))
    decoded, _ = FetchResponse.decode(joined, version)
    assert bytes(decoded.responses[0].partitions[1].records) == RECORDS
    region.close()
