"""File regions: record bytes a response carries by reference, for zero-copy Fetch.

A `FileRegion` names `length` bytes at `offset` of an open file descriptor. The fetch handler
puts one where a partition's `records` go, and the generated encoder carries it as a body part
like any buffer (it only takes `len()` of records and appends them to the parts): the codec
never reads it. The server shell sends it with `os.sendfile` from the page cache straight to
the socket, and a transport that is not a plain socket (TLS, later) reads it with
`os.pread` instead. Nothing here does I/O except `close`.

The descriptor is owned by the region: the storage layer hands out a `dup` of the segment's,
so a segment rolled, compacted away or deleted by retention while the response is in flight
still sends the bytes it had (the inode stays alive until the region is closed). `close` is
idempotent and also runs when the region is garbage collected, so a response built and then
dropped (a long poll that reads again, a cancelled request) does not leak descriptors.
"""

from __future__ import annotations

import os
from typing import ClassVar, cast

from odradek.wire.primitives import Buffer


class FileRegion:
    __slots__ = ("fd", "length", "offset")

    # Regions not yet closed, process-wide: their descriptors count against RLIMIT_NOFILE
    # beside sockets and segments, so the storage layer bounds them (copies past the bound).
    open_count: ClassVar[int] = 0

    def __init__(self, fd: int, offset: int, length: int) -> None:
        self.fd = -1  # owned only once valid: a refused region leaves `fd` to the caller
        if offset < 0 or length < 0:
            raise ValueError(f"bad file region: offset {offset}, length {length}")
        self.fd = fd
        FileRegion.open_count += 1
        self.offset = offset
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __bool__(self) -> bool:
        return self.length > 0

    def __repr__(self) -> str:
        return f"FileRegion(fd={self.fd}, offset={self.offset}, length={self.length})"

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            FileRegion.open_count -= 1
            os.close(fd)

    def __del__(self) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self.fd < 0


Part = Buffer | FileRegion
"""A response body part: bytes to send as they are, or a region of a file."""


def as_records(region: FileRegion) -> Buffer:
    """The region typed as a `records` field value. The generated messages type `records` as a
    buffer; the encoder only measures and appends it, which a region supports. (Typing the field
    `Buffer | FileRegion` in the generator is the clean form; it would touch every reader of
    request records for a type only responses carry.)"""
    return cast(Buffer, region)


__all__ = ["FileRegion", "Part", "as_records"]
