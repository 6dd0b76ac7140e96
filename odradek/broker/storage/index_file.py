"""The file handling shared by the fixed-size-entry index files (`.index`, `.timeindex`,
`.txnindex`): an append-only file of equal-sized big-endian entries with no header.

Unlike Kafka we do not preallocate and memory-map the file: entries are kept in memory and
appended to the file with `os.write`, so the file always holds exactly the valid entries (the
layout Kafka leaves after trimming an index on close) and a killed process loses nothing it
wrote. A torn trailing entry (length not a multiple of the entry size) is dropped on load.
Entries are loaded lazily, on first use, so that opening a log with many segments stays cheap,
and the descriptor is opened by the first write, so an idle partition holds none. With a
`HandleCache` (`attach`) the descriptor is counted against the cache's capacity as its
segment's, and closed when the segment is evicted (`drop_descriptor`: the entries stay in
memory, the next write reopens the file by its current path, and `torn` survives, so a
torn file is still cut before its next entry).

A write that fails (a full disk, a short write) is cut back off the file before the error is
raised, so the file still holds exactly the entries in memory; should that cut fail too, the
index is `torn` and the cut is made again before its next write, so no entry is ever appended
behind partial bytes.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import BinaryIO

from odradek.broker.storage.errors import CorruptIndexError as CorruptIndexError  # re-exported
from odradek.broker.storage.handles import HandleCache, Holder, open_file

_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_APPEND


class IndexFile:
    """Owns the file descriptor and the lazy load of one index file."""

    entry_size: int = 0  # set by subclasses

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fd: int | None = None
        self._loaded = False
        # Set when a failed write could not be cut back off the file (see the module docstring).
        self.torn = False
        self._handles: HandleCache | None = None
        self._holder: Holder | None = None  # the segment its descriptor is counted for

    def attach(self, handles: HandleCache | None, holder: Holder) -> None:
        """Count this file's write descriptor in `handles` as `holder`'s (its segment)."""
        self._handles = handles
        self._holder = holder

    @property
    def has_descriptor(self) -> bool:
        return self._fd is not None

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
        os.close(open_file(self._handles, self.path, _WRITE_FLAGS, keep=self._holder,
                           counted=False))

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        try:
            with self._open_for_reading() as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        usable = len(data) - len(data) % self.entry_size
        self._parse(data[:usable])
        self._loaded = True
        if usable != len(data):
            # A torn entry from a killed process: drop it so appends stay aligned.
            os.ftruncate(self._write_fd(), usable)

    def _open_for_reading(self) -> BinaryIO:
        """A short-lived reader of the file (not counted: closed before this call returns to
        the event loop)."""
        fd = open_file(self._handles, self.path, os.O_RDONLY, keep=self._holder, counted=False)
        return open(fd, "rb")

    def _write_fd(self) -> int:
        fd = self._fd
        if fd is None:
            fd = self._fd = open_file(self._handles, self.path, _WRITE_FLAGS, keep=self._holder)
            if self._handles is not None and self._holder is not None:
                self._handles.update(self._holder)  # may evict other segments, never this one
        return fd

    def _write(self, data: bytes, size: int | None = None) -> None:
        """Append `data` (whole entries) to the file, which holds `size` bytes (default: the
        entries in memory, which the caller adds once this returns): all of it, or on an
        error nothing (see the module docstring)."""
        fd = self._write_fd()
        end = self._count() * self.entry_size if size is None else size
        if self.torn:
            os.ftruncate(fd, end)
            self.torn = False
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except BaseException:
            self.torn = True
            with contextlib.suppress(OSError):
                os.ftruncate(fd, end)
                self.torn = False
            raise

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
        self.torn = True  # until the file is cut too
        os.ftruncate(self._write_fd(), n * self.entry_size)
        self.torn = False

    def truncate_to_entries(self, n: int) -> None:
        """Keep the first `n` entries, in memory and in the file (undoing appends); a torn
        file is cut even when no entry goes."""
        self._ensure_loaded()
        if n >= self._count():
            if self.torn:
                os.ftruncate(self._write_fd(), self._count() * self.entry_size)
                self.torn = False
            return
        self._truncate_to_entries(n)

    def reset(self) -> None:
        """Remove every entry."""
        self._loaded = True
        self._clear_entries()
        os.ftruncate(self._write_fd(), 0)
        self.torn = False

    def _replace(self, data: bytes) -> None:
        """Rewrite the whole file with `data` (whole entries) and reload the entries from it."""
        self._loaded = True
        self._parse(data)
        fd = self._write_fd()
        os.ftruncate(fd, 0)
        self.torn = False
        self._write(data, 0)

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            return
        try:  # no descriptor (closed or evicted): fsync flushes the inode through any
            fd = open_file(self._handles, self.path, os.O_RDONLY, keep=self._holder,
                           counted=False)
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
            with self._open_for_reading() as f:
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
        """Close the write descriptor (reopened by the next write); entries stay in memory."""
        if self._fd is None:
            return
        try:
            self.drop_descriptor()
        finally:
            if self._handles is not None and self._holder is not None:
                self._handles.update(self._holder)

    def drop_descriptor(self) -> None:
        """`close` without telling the cache (its segment does, or is being evicted)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def rename_to(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path
