"""Kafka's sparse offset index, the `.index` file of a segment.

Byte layout: a sequence of 8-byte entries, no header, all big-endian:

    relative offset  uint32   offset - segment base offset
    position         uint32   byte position in the `.log` file of the batch holding it

We write one entry per batch that starts after more than `index.interval.bytes` bytes since
the previous entry, with the batch's LAST offset and the batch's position: the pair Kafka's
`kafka-dump-log` checks (the batch at `position` must end at `offset`). Offsets and positions
both strictly increase, so lookups are binary searches.
"""

from __future__ import annotations

import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from pathlib import Path

from odradek.broker.storage.errors import CorruptIndexError
from odradek.broker.storage.index_file import IndexFile

_ENTRY = struct.Struct(">II")
_MAX_RELATIVE = 2**31 - 1  # Kafka keeps relative offsets within a Java int

# array('I') is a C unsigned int: 4 bytes on every platform CPython supports; checked here
# because the file layout depends on it.
assert array("I").itemsize == 4


class OffsetIndex(IndexFile):
    entry_size = _ENTRY.size

    def __init__(
        self, path: Path, base_offset: int, *, max_index_size: int = 10 * 1024 * 1024
    ) -> None:
        super().__init__(path, base_offset)
        self.max_entries = max(max_index_size // self.entry_size, 1)
        self._rel: array[int] = array("I")
        self._pos: array[int] = array("I")

    def _parse(self, data: bytes) -> None:
        words = array("I")
        words.frombytes(data)
        if sys.byteorder == "little":
            words.byteswap()
        self._rel = words[0::2]
        self._pos = words[1::2]

    def _clear_entries(self) -> None:
        self._rel = array("I")
        self._pos = array("I")

    def _count(self) -> int:
        return len(self._rel)

    def _truncate_entries(self, n: int) -> None:
        del self._rel[n:]
        del self._pos[n:]

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    @property
    def last_offset(self) -> int:
        """The offset of the last entry, or the base offset when empty (as Kafka)."""
        self._ensure_loaded()
        return self.base_offset + self._rel[-1] if self._rel else self.base_offset

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= _MAX_RELATIVE

    def entry(self, n: int) -> tuple[int, int]:
        self._ensure_loaded()
        return self.base_offset + self._rel[n], self._pos[n]

    def append(self, offset: int, position: int) -> None:
        self._ensure_loaded()
        if self._rel and offset <= self.base_offset + self._rel[-1]:
            raise ValueError(
                f"{self.path}: index offset {offset} not above last entry {self.last_offset}"
            )
        if not self.can_append_offset(offset):
            raise ValueError(
                f"{self.path}: offset {offset} out of range for base {self.base_offset}"
            )
        if self.is_full:
            raise ValueError(f"{self.path}: index is full ({self.max_entries} entries)")
        rel = offset - self.base_offset
        self._write(_ENTRY.pack(rel, position))
        self._rel.append(rel)
        self._pos.append(position)

    def replace_all(self, entries: list[tuple[int, int]]) -> None:
        """Rewrite the index with `entries` (offset, position) in one write (used by recovery)."""
        self._replace(b"".join(_ENTRY.pack(o - self.base_offset, p) for o, p in entries))

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """(offset, position) of the largest entry with offset <= target; (base, 0) if none."""
        self._ensure_loaded()
        slot = bisect_right(self._rel, target_offset - self.base_offset) - 1
        if slot < 0:
            return self.base_offset, 0
        return self.base_offset + self._rel[slot], self._pos[slot]

    def lookup_position(self, position: int) -> tuple[int, int]:
        """(offset, position) of the largest entry with position <= `position`; (base, 0) if none."""
        self._ensure_loaded()
        slot = bisect_right(self._pos, position) - 1
        if slot < 0:
            return self.base_offset, 0
        return self.base_offset + self._rel[slot], self._pos[slot]

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with offset >= `offset`."""
        self._ensure_loaded()
        self._truncate_to_entries(bisect_left(self._rel, offset - self.base_offset))

    def last_entry(self) -> tuple[int, int] | None:
        """(offset, position) of the last entry, None when empty; reads only that entry when
        the index is not loaded yet (start-up checks must not load every index)."""
        if self._loaded:
            return (self.base_offset + self._rel[-1], self._pos[-1]) if self._rel else None
        raw = self._first_and_last()
        if raw is None:
            return None
        rel, position = _ENTRY.unpack(raw[1])
        return self.base_offset + rel, position

    def sanity_check(self, log_size: int) -> None:
        """Cheap consistency checks against the segment's `.log` size (Kafka's, plus the last
        position), reading only the last entry when the index is not loaded yet."""
        last = self.last_entry()
        if last is not None and last[1] >= max(log_size, 1):
            raise CorruptIndexError(
                f"{self.path}: last entry position {last[1]} beyond log size {log_size}"
            )
