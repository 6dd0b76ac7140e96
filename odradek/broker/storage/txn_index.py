"""Kafka's aborted-transaction index, the `.txnindex` file of a segment.

Byte layout: a sequence of 34-byte entries, no header, all big-endian:

    version            int16   0
    producer id        int64
    first offset       int64   first offset of the aborted transaction
    last offset        int64   offset of its ABORT marker
    last stable offset int64   the partition's LSO once the abort completed

Entries go to the segment that holds the abort marker, in increasing last-offset order. A
read_committed fetch collects the entries overlapping its range, starting at the segment of
the fetch offset and moving to later segments until an entry's LSO reaches the upper bound.
The file is only created when the first entry is written.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from odradek.broker.storage.errors import CorruptIndexError
from odradek.broker.storage.index_file import IndexFile

_ENTRY = struct.Struct(">hqqqq")
CURRENT_VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex(IndexFile):
    entry_size = _ENTRY.size

    def __init__(self, path: Path, base_offset: int) -> None:
        super().__init__(path, base_offset)
        self._txns: list[AbortedTxn] = []

    def _parse(self, data: bytes) -> None:
        txns: list[AbortedTxn] = []
        for version, pid, first, last, lso in _ENTRY.iter_unpack(data):
            if version > CURRENT_VERSION:
                raise CorruptIndexError(f"{self.path}: unknown aborted-txn entry version {version}")
            txns.append(AbortedTxn(pid, first, last, lso))
        self._txns = txns

    def _clear_entries(self) -> None:
        self._txns = []

    def _count(self) -> int:
        return len(self._txns)

    def _truncate_entries(self, n: int) -> None:
        del self._txns[n:]

    def create(self) -> None:
        """No-op: unlike the other indexes this file only exists once it has an entry."""

    def reset(self) -> None:
        self._loaded = True
        self._txns = []
        if self._fd is not None or self.path.exists():
            super().reset()

    def append(self, txn: AbortedTxn) -> None:
        self._ensure_loaded()
        if self._txns and txn.last_offset <= self._txns[-1].last_offset:
            raise ValueError(
                f"{self.path}: aborted txn last offset {txn.last_offset} not above "
                f"{self._txns[-1].last_offset}"
            )
        self._write(_ENTRY.pack(CURRENT_VERSION, *txn))
        self._txns.append(txn)

    def all(self) -> list[AbortedTxn]:
        self._ensure_loaded()
        return list(self._txns)

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """Aborted txns overlapping [fetch_offset, upper_bound), and whether the search is complete
        (an entry's LSO reached the upper bound, so later segments cannot hold more)."""
        self._ensure_loaded()
        found: list[AbortedTxn] = []
        for txn in self._txns:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Remove the entries whose abort marker is at or after `offset`."""
        self._ensure_loaded()
        for i, txn in enumerate(self._txns):
            if txn.last_offset >= offset:
                self._truncate_to_entries(i)
                return

    def sanity_check(self) -> None:
        self._ensure_loaded()
        for txn in self._txns:
            if txn.last_offset < self.base_offset:
                raise CorruptIndexError(
                    f"{self.path}: aborted txn {txn} ends before segment base {self.base_offset}"
                )
