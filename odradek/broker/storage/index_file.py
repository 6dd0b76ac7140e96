"""The file handling shared by the fixed-size-entry index files (`.index`, `.timeindex`,
`.txnindex`): an append-only file of equal-sized big-endian entries with no header.

Unlike Kafka we do not preallocate and memory-map the file: entries are kept in memory and
appended to the file with `os.write`, so the file always holds exactly the valid entries (the
layout Kafka leaves after trimming an index on close) and a killed process loses nothing it
wrote. A torn trailing entry (length not a multiple of the entry size) is dropped on load.
Entries are loaded lazily, on first use, so that opening a log with many segments stays cheap,
and the descriptor is opened by the first write, so an idle partition holds only its `.log`.
"""

from __future__ import annotations

import os
from pathlib import Path

from odradek.broker.storage.errors import CorruptIndexError as CorruptIndexError  # re-exported


class IndexFile:
    """Owns the file descriptor and the lazy load of one index file."""

    entry_size: int = 0  # set by subclasses

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fd: int | None = None
        self._loaded = False

    # -- subclass hooks ---------------------------------------------------------------------

    def _parse(self, data: bytes) -> None:
        """Replace the in-memory entries with those in `data` (a whole number of entries)."""
        raise NotImplementedError

    def _clear_entries(self) -> None:
        raise NotImplementedError

    def _count(self) -> int:
        raise NotImplementedError

    def _truncate_entries(self, n: int) -> None:
        raise NotImplementedError

    # -- shared machinery -------------------------------------------------------------------

    def create(self) -> None:
        """Create the (empty) file if missing; Kafka expects `.index` to exist for every `.log`.
        The descriptor is not kept: it is opened by the first write (issue #10: a partition
        that is never written to costs no index descriptors)."""
        os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644))

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        usable = len(data) - len(data) % self.entry_size
        self._parse(data[:usable])
        self._loaded = True
        if usable != len(data):
            # A torn entry from a killed process: drop it so appends stay aligned.
            os.ftruncate(self._write_fd(), usable)

    def _write_fd(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def _write(self, data: bytes) -> None:
        fd = self._write_fd()
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    @property
    def entries(self) -> int:
        self._ensure_loaded()
        return self._count()

    @property
    def size_in_bytes(self) -> int:
        return self.entries * self.entry_size

    def _truncate_to_entries(self, n: int) -> None:
        self._ensure_loaded()
        if n >= self._count():
            return
        self._truncate_entries(n)
        os.ftruncate(self._write_fd(), n * self.entry_size)

    def reset(self) -> None:
        """Remove every entry."""
        self._loaded = True
        self._clear_entries()
        os.ftruncate(self._write_fd(), 0)

    def _replace(self, data: bytes) -> None:
        """Rewrite the whole file with `data` (whole entries) and reload the entries from it."""
        self._loaded = True
        self._parse(data)
        fd = self._write_fd()
        os.ftruncate(fd, 0)
        self._write(data)

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def _first_and_last(self) -> tuple[bytes, bytes] | None:
        """The raw first and last entries, read from the file unless already loaded (so that
        a sanity check does not load the whole index); None when empty. Raises
        CorruptIndexError when the file length is not a whole number of entries."""
        if self._loaded:
            raise RuntimeError("use the loaded entries")
        try:
            with open(self.path, "rb") as f:
                length = os.fstat(f.fileno()).st_size
                if length % self.entry_size:
                    raise CorruptIndexError(
                        f"{self.path}: {length} bytes is not a multiple of {self.entry_size}"
                    )
                if length == 0:
                    return None
                first = f.read(self.entry_size)
                f.seek(length - self.entry_size)
                last = f.read(self.entry_size)
        except FileNotFoundError:
            return None
        return first, last

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def rename_to(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path
