"""`.index`, `.timeindex` and `.txnindex`: byte layouts (as Kafka's OffsetIndex, TimeIndex and
AbortedTxn write them), lookups, truncation, reloading."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from odradek.broker.storage.index_file import CorruptIndexError
from odradek.broker.storage.offset_index import OffsetIndex
from odradek.broker.storage.time_index import TimeIndex
from odradek.broker.storage.txn_index import AbortedTxn, TransactionIndex


def test_offset_index_layout_and_lookup(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, 100)
    index.create()
    assert path.read_bytes() == b""
    assert index.lookup(150) == (100, 0)
    for offset, position in [(104, 4100), (110, 8300), (121, 12600)]:
        index.append(offset, position)
    assert path.read_bytes() == struct.pack(">IIIIII", 4, 4100, 10, 8300, 21, 12600)
    assert index.lookup(99) == (100, 0)
    assert index.lookup(103) == (100, 0)
    assert index.lookup(104) == (104, 4100)
    assert index.lookup(120) == (110, 8300)
    assert index.lookup(10**12) == (121, 12600)
    assert index.lookup_position(8299) == (104, 4100)
    assert index.lookup_position(8300) == (110, 8300)
    assert index.last_offset == 121
    with pytest.raises(ValueError):
        index.append(121, 20000)  # offsets must increase
    index.close()

    reloaded = OffsetIndex(path, 100)
    assert reloaded.entries == 3
    assert reloaded.entry(1) == (110, 8300)
    reloaded.truncate_to(110)  # removes entries >= 110
    assert reloaded.entries == 1
    assert path.read_bytes() == struct.pack(">II", 4, 4100)
    reloaded.append(111, 5000)
    assert OffsetIndex(path, 100).entry(1) == (111, 5000)
    reloaded.reset()
    assert path.read_bytes() == b""
    reloaded.close()


def test_offset_index_is_full_and_range(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "x.index", 0, max_index_size=16)
    index.append(1, 10)
    index.append(2, 20)
    assert index.is_full
    with pytest.raises(ValueError):
        index.append(3, 30)
    assert not index.can_append_offset(2**31)
    assert index.can_append_offset(2**31 - 1)
    index.close()


def test_torn_index_entry_is_dropped_on_load(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(struct.pack(">II", 5, 4200) + b"\x00\x00\x00")
    index = OffsetIndex(path, 0)
    with pytest.raises(CorruptIndexError):
        index.sanity_check(10_000)  # a length that is not whole entries is flagged...
    assert index.entries == 1  # ...and loading drops the torn entry
    assert path.stat().st_size == 8
    index.sanity_check(10_000)
    index.close()


def test_offset_index_sanity_check_reads_only_the_tail(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(struct.pack(">IIII", 5, 4200, 9, 9000))
    OffsetIndex(path, 0).sanity_check(9001)
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0).sanity_check(9000)  # last entry points past the log


def test_time_index_layout_and_semantics(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000010.timeindex"
    index = TimeIndex(path, 10)
    index.create()
    assert index.last_entry == (-1, 10)
    index.maybe_append(1000, 12)
    index.maybe_append(1000, 15)  # same timestamp: not appended
    index.maybe_append(2000, 20)
    index.maybe_append(3000, 20)  # same offset, larger timestamp: appended
    assert path.read_bytes() == struct.pack(">qIqIqI", 1000, 2, 2000, 10, 3000, 10)
    with pytest.raises(ValueError):
        index.maybe_append(500, 30)  # timestamps never go back
    with pytest.raises(ValueError):
        index.maybe_append(4000, 19)  # neither do offsets
    assert index.lookup(999) == (-1, 10)
    assert index.lookup(1000) == (1000, 12)
    assert index.lookup(2500) == (2000, 20)
    assert index.lookup(10**15) == (3000, 20)
    index.close()

    reloaded = TimeIndex(path, 10)
    assert reloaded.last_entry == (3000, 20)
    reloaded.truncate_to(20)
    assert reloaded.last_entry == (1000, 12)
    assert path.stat().st_size == 12
    reloaded.close()


def test_time_index_keeps_a_slot_for_the_roll_entry(tmp_path: Path) -> None:
    index = TimeIndex(tmp_path / "t.timeindex", 0, max_index_size=36)  # 3 slots
    index.maybe_append(1, 1)
    index.maybe_append(2, 2)
    assert index.is_full
    with pytest.raises(ValueError):
        index.maybe_append(3, 3)
    index.maybe_append(3, 3, skip_full_check=True)
    assert index.entries == 3
    index.close()


def test_time_index_sanity(tmp_path: Path) -> None:
    path = tmp_path / "t.timeindex"
    path.write_bytes(struct.pack(">qIqI", 50, 1, 40, 2))
    with pytest.raises(CorruptIndexError):
        TimeIndex(path, 0).sanity_check()
    path.write_bytes(struct.pack(">qI", 50, 1) + b"\x01")
    with pytest.raises(CorruptIndexError):
        TimeIndex(path, 0).sanity_check()


def test_txn_index_layout_and_collect(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(path, 0)
    index.create()
    assert not path.exists(), "the txn index only exists once it has an entry"
    assert index.collect(0, 100) == ([], False)
    first = AbortedTxn(producer_id=7, first_offset=5, last_offset=9, last_stable_offset=5)
    second = AbortedTxn(producer_id=8, first_offset=12, last_offset=20, last_stable_offset=21)
    index.append(first)
    index.append(second)
    raw = path.read_bytes()
    assert len(raw) == 68
    assert raw[:34] == struct.pack(">hqqqq", 0, 7, 5, 9, 5)
    with pytest.raises(ValueError):
        index.append(AbortedTxn(9, 1, 20, 21))  # last offsets must increase
    # [fetch, upper) overlap, and completion once an entry's LSO reaches the upper bound
    assert index.collect(10, 12) == ([], True)
    assert index.collect(0, 6) == ([first], True)
    assert index.collect(10, 22) == ([second], False)
    assert index.collect(9, 13) == ([first, second], True)
    assert index.collect(21, 30) == ([], False)
    index.close()

    reloaded = TransactionIndex(path, 0)
    assert reloaded.all() == [first, second]
    reloaded.sanity_check()
    reloaded.truncate_to(20)
    assert reloaded.all() == [first]
    assert path.stat().st_size == 34
    reloaded.reset()
    assert path.stat().st_size == 0
    reloaded.close()


def test_txn_index_sanity_and_version(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000050.txnindex"
    path.write_bytes(struct.pack(">hqqqq", 0, 1, 10, 20, 20))
    with pytest.raises(CorruptIndexError):
        TransactionIndex(path, 50).sanity_check()  # ends before the segment starts
    path.write_bytes(struct.pack(">hqqqq", 1, 1, 60, 70, 70))
    with pytest.raises(CorruptIndexError):
        TransactionIndex(path, 50).all()  # unknown entry version
