"""Kafka's sparse time index, the `.timeindex` file of a segment.

Byte layout: a sequence of 12-byte entries, no header, all big-endian:

    timestamp        int64    the largest batch max-timestamp seen in the segment so far
    relative offset  uint32   last offset of the batch that first reached that timestamp,
                              minus the segment base offset

Entries are only appended when the timestamp grows, so both columns are non-decreasing (the
timestamps strictly increasing) and lookups are binary searches. A segment that stops being
active gets one last entry with its overall maximum, as Kafka does on roll and close.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left, bisect_right
from pathlib import Path

from odradek.broker.storage.errors import CorruptIndexError
from odradek.broker.storage.index_file import IndexFile

_ENTRY = struct.Struct(">qI")
NO_TIMESTAMP = -1


class TimeIndex(IndexFile):
    entry_size = _ENTRY.size

    def __init__(
        self, path: Path, base_offset: int, *, max_index_size: int = 10 * 1024 * 1024
    ) -> None:
        super().__init__(path, base_offset)
        self.max_entries = max(max_index_size // self.entry_size, 2)
        self._ts: array[int] = array("q")
        self._rel: array[int] = array("q")

    def _parse(self, data: bytes) -> None:
        ts: array[int] = array("q")
        rel: array[int] = array("q")
        for t, r in _ENTRY.iter_unpack(data):
            ts.append(t)
            rel.append(r)
        self._ts, self._rel = ts, rel

    def _clear_entries(self) -> None:
        self._ts = array("q")
        self._rel = array("q")

    def _count(self) -> int:
        return len(self._ts)

    def _truncate_entries(self, n: int) -> None:
        del self._ts[n:]
        del self._rel[n:]

    @property
    def is_full(self) -> bool:
        # Kafka keeps the last slot free for the entry written when the segment is rolled.
        return self.entries >= self.max_entries - 1

    @property
    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry; (-1, base offset) when empty."""
        self._ensure_loaded()
        if not self._ts:
            return NO_TIMESTAMP, self.base_offset
        return self._ts[-1], self.base_offset + self._rel[-1]

    def entry(self, n: int) -> tuple[int, int]:
        self._ensure_loaded()
        return self._ts[n], self.base_offset + self._rel[n]

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> None:
        """Append (timestamp, offset) if `timestamp` is above the last entry's."""
        self._ensure_loaded()
        if not skip_full_check and self.is_full:
            raise ValueError(f"{self.path}: time index is full ({self.entries} entries)")
        last_ts, last_offset = self.last_entry
        if self._ts and offset < last_offset:
            raise ValueError(f"{self.path}: offset {offset} below last entry offset {last_offset}")
        if self._ts and timestamp < last_ts:
            raise ValueError(f"{self.path}: timestamp {timestamp} below last entry {last_ts}")
        if timestamp > last_ts:
            rel = offset - self.base_offset
            self._write(_ENTRY.pack(timestamp, rel))
            self._ts.append(timestamp)
            self._rel.append(rel)

    def replace_all(self, entries: list[tuple[int, int]]) -> None:
        """Rewrite the index with `entries` (timestamp, offset) in one write (used by recovery)."""
        self._replace(b"".join(_ENTRY.pack(t, o - self.base_offset) for t, o in entries))

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """(timestamp, offset) of the last entry with timestamp <= target; (-1, base) if none."""
        self._ensure_loaded()
        slot = bisect_right(self._ts, target_timestamp) - 1
        if slot < 0:
            return NO_TIMESTAMP, self.base_offset
        return self._ts[slot], self.base_offset + self._rel[slot]

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with offset >= `offset`."""
        self._ensure_loaded()
        self._truncate_to_entries(bisect_left(self._rel, offset - self.base_offset))

    def sanity_check(self) -> None:
        """Kafka's check (last timestamp not below the first), reading only those two entries
        when the index is not loaded yet."""
        if self._loaded:
            ends = (self._ts[0], self._ts[-1]) if self._ts else None
        else:
            raw = self._first_and_last()
            ends = (_ENTRY.unpack(raw[0])[0], _ENTRY.unpack(raw[1])[0]) if raw is not None else None
        if ends is not None and ends[1] < ends[0]:
            raise CorruptIndexError(f"{self.path}: last timestamp below the first")
