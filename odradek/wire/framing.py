"""Kafka's 4-byte size-prefixed frames, decoded sans-IO.

Byte layout of one frame on a connection::

    size int32 (big-endian, bytes that follow) | payload (size bytes: request or response)

`FrameDecoder` is fed whatever the socket returned and hands back whole payloads. The size is
checked (negative, or larger than `max_frame_size`) as soon as its 4 bytes are in, before any
room for the payload is allocated or any of it is kept. A payload that arrives whole is copied
once out of the input; one that arrives in pieces is filled as its bytes arrive (a bytearray
that grows, amortised linear time), never allocated at the size its header announces: a
header announcing 100 MiB followed by nothing costs nothing. `reserved_bytes` is what the
frames in progress and waiting will take once complete (the announced sizes), for the
server's `queued.max.request.bytes` accounting. Payloads are writable: the produce path
patches record batches in place.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Sequence
from typing import Final

from odradek.wire.exceptions import ProtocolError

__all__ = ["SIZE_PREFIX", "FrameDecoder", "encode_frame", "frame_size_prefix"]

Buffer = bytes | bytearray | memoryview

SIZE_PREFIX: Final = 4
_I32: Final = struct.Struct(">i")
_INT32_MAX: Final = 0x7FFFFFFF


class FrameDecoder:
    """Incremental frame splitter: `feed()` bytes, then `next_frame()` until it returns None.

    A bad size is detected inside `feed()`; it is raised by `next_frame()` once the frames
    that came before it have been handed out, so requests already received are still served
    in order. After that the decoder stays failed and ignores further input.
    """

    __slots__ = ("_error", "_frames", "_header", "_payload", "_queued", "_size",
                 "max_frame_size")

    def __init__(self, max_frame_size: int) -> None:
        if max_frame_size < 0:
            raise ValueError(f"max_frame_size must be >= 0, got {max_frame_size}")
        self.max_frame_size = max_frame_size
        self._header = bytearray()  # the size prefix while it is incomplete
        self._payload: bytearray | None = None  # the frame being filled, as it arrives
        self._size = 0  # the size its header announced
        # Complete frames not handed out yet; a deque only while there are some (an empty
        # one is ~760 bytes, held by every idle connection otherwise).
        self._frames: deque[bytearray] | None = None
        self._queued = 0  # bytes in self._frames
        self._error: ProtocolError | None = None

    @property
    def bytes_needed(self) -> int:
        """Bytes still missing to complete the frame in progress (or the next size prefix)."""
        if self._payload is not None:
            return self._size - len(self._payload)
        return SIZE_PREFIX - len(self._header)

    @property
    def in_frame(self) -> bool:
        """True while a frame's size is known but its payload is incomplete."""
        return self._payload is not None

    @property
    def reserved_bytes(self) -> int:
        """Announced sizes of the frame in progress and of the complete frames waiting."""
        return self._queued + (self._size if self._payload is not None else 0)

    @property
    def pending_frames(self) -> int:
        """Complete frames waiting for `next_frame()`."""
        return len(self._frames) if self._frames is not None else 0

    @property
    def failed(self) -> bool:
        return self._error is not None

    def feed(self, data: Buffer) -> None:
        if self._error is not None or not data:
            return
        mv = data if isinstance(data, memoryview) else memoryview(data)
        pos = 0
        end = len(mv)
        while pos < end:
            payload = self._payload
            if payload is None:
                # Read (the rest of) the size prefix.
                header = self._header
                if not header and end - pos >= SIZE_PREFIX:
                    size = _I32.unpack_from(mv, pos)[0]
                    pos += SIZE_PREFIX
                else:
                    take = min(SIZE_PREFIX - len(header), end - pos)
                    header += mv[pos : pos + take]
                    pos += take
                    if len(header) < SIZE_PREFIX:
                        return
                    size = _I32.unpack(header)[0]
                    header.clear()
                if size < 0 or size > self.max_frame_size:
                    what = "negative" if size < 0 else "larger than the limit"
                    self._error = ProtocolError(
                        f"frame size {size} is {what} (max frame size {self.max_frame_size})"
                    )
                    return
                if end - pos >= size:
                    # Whole payload present: one copy straight out of the input.
                    self._complete(bytearray(mv[pos : pos + size]))
                    self._queued += size
                    pos += size
                    continue
                payload = self._payload = bytearray()
                self._size = size
            take = min(self._size - len(payload), end - pos)
            payload += mv[pos : pos + take]
            pos += take
            if len(payload) == self._size:
                self._complete(payload)
                self._queued += self._size
                self._payload = None

    def _complete(self, frame: bytearray) -> None:
        if self._frames is None:
            self._frames = deque()
        self._frames.append(frame)

    def next_frame(self) -> bytearray | None:
        """The next complete payload (without its size prefix), or None if none is complete.

        Raises ProtocolError for a bad size once the frames before it are consumed.
        """
        frames = self._frames
        if frames is not None:
            frame = frames.popleft()
            if not frames:
                self._frames = None
            self._queued -= len(frame)
            return frame
        if self._error is not None:
            raise self._error
        return None


def frame_size_prefix(size: int) -> bytes:
    """The 4-byte prefix for a payload of `size` bytes."""
    if not 0 <= size <= _INT32_MAX:
        raise ValueError(f"frame size {size} does not fit in an int32 size prefix")
    return _I32.pack(size)


def encode_frame(parts: Sequence[Buffer]) -> list[Buffer]:
    """`parts` preceded by their size prefix, ready for a vectored write (no copies)."""
    out: list[Buffer] = [frame_size_prefix(sum(len(p) for p in parts))]
    out.extend(parts)
    return out
