"""Size-prefixed frames: reassembly across any chunking, and size checks before buffering."""

from __future__ import annotations

import itertools
import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.wire.exceptions import ProtocolError
from odradek.wire.framing import FrameDecoder, encode_frame, frame_size_prefix


def _wire(payloads: list[bytes]) -> bytes:
    return b"".join(bytes(part) for p in payloads for part in encode_frame([p]))


def _drain(decoder: FrameDecoder) -> list[bytearray]:
    out = []
    while (frame := decoder.next_frame()) is not None:
        out.append(frame)
    return out


@settings(max_examples=200, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=30),
)
def test_frames_survive_any_chunking(payloads: list[bytes], cuts: list[int]) -> None:
    wire = _wire(payloads)
    bounds = sorted({c for c in cuts if c <= len(wire)} | {0, len(wire)})
    decoder = FrameDecoder(max_frame_size=300)
    got: list[bytearray] = []
    for start, end in itertools.pairwise(bounds):
        decoder.feed(wire[start:end])
        got.extend(_drain(decoder))
    assert got == payloads
    assert all(type(frame) is bytearray for frame in got)
    assert decoder.bytes_needed == 4 and decoder.pending_frames == 0


def test_byte_at_a_time_and_progress() -> None:
    decoder = FrameDecoder(max_frame_size=100)
    wire = _wire([b"hello", b""])
    needed = []
    for i in range(len(wire)):
        needed.append(decoder.bytes_needed)
        decoder.feed(memoryview(wire)[i : i + 1])
    assert needed == [4, 3, 2, 1, 5, 4, 3, 2, 1, 4, 3, 2, 1]
    assert _drain(decoder) == [b"hello", b""]


def test_large_frame_in_small_chunks() -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB
    wire = _wire([payload, b"after"])
    decoder = FrameDecoder(max_frame_size=len(payload))
    for i in range(0, len(wire), 1000):
        decoder.feed(wire[i : i + 1000])
    assert _drain(decoder) == [payload, b"after"]


def test_frames_are_writable() -> None:
    decoder = FrameDecoder(max_frame_size=100)
    decoder.feed(_wire([b"abcdef"]))
    frame = decoder.next_frame()
    assert frame is not None
    memoryview(frame)[0:2] = b"XY"
    assert frame == b"XYcdef"


def test_limit_is_inclusive() -> None:
    decoder = FrameDecoder(max_frame_size=5)
    decoder.feed(_wire([b"12345"]))
    assert decoder.next_frame() == b"12345"


@pytest.mark.parametrize("size", [-1, -(2**31)])
def test_negative_size(size: int) -> None:
    decoder = FrameDecoder(max_frame_size=1000)
    decoder.feed(struct.pack(">i", size))
    with pytest.raises(ProtocolError, match=rf"frame size {size} is negative.*1000"):
        decoder.next_frame()


def test_oversize_refused_before_payload_arrives() -> None:
    decoder = FrameDecoder(max_frame_size=1 << 20)
    decoder.feed(struct.pack(">i", 2**31 - 1)[:3])
    assert decoder.next_frame() is None  # size not known yet
    decoder.feed(struct.pack(">i", 2**31 - 1)[3:])
    # Refused on the prefix alone: no payload byte was needed, none is kept.
    assert decoder.failed
    with pytest.raises(ProtocolError, match=rf"frame size {2**31 - 1} is larger.*{1 << 20}"):
        decoder.next_frame()
    decoder.feed(b"\x00" * 10_000)  # ignored once failed
    assert decoder.pending_frames == 0
    with pytest.raises(ProtocolError):
        decoder.next_frame()


def test_frames_before_a_bad_size_are_still_delivered() -> None:
    decoder = FrameDecoder(max_frame_size=10)
    decoder.feed(_wire([b"one", b"two"]) + struct.pack(">i", 11) + b"x" * 11)
    assert decoder.next_frame() == b"one"
    assert decoder.next_frame() == b"two"
    with pytest.raises(ProtocolError, match="frame size 11"):
        decoder.next_frame()


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64), st.integers(min_value=0, max_value=64))
def test_garbage_raises_only_protocol_errors(data: bytes, limit: int) -> None:
    decoder = FrameDecoder(max_frame_size=limit)
    decoder.feed(data)
    try:
        for frame in iter(decoder.next_frame, None):
            assert len(frame) <= limit
    except ProtocolError:
        pass


def test_encode_helpers() -> None:
    assert frame_size_prefix(0) == b"\x00\x00\x00\x00"
    assert frame_size_prefix(258) == b"\x00\x00\x01\x02"
    parts = [b"ab", bytearray(b"c"), memoryview(b"def")]
    out = encode_frame(parts)
    assert out[0] == struct.pack(">i", 6)
    assert out[1:] == parts and out[1] is parts[0]
    for bad in (-1, 2**31):
        with pytest.raises(ValueError):
            frame_size_prefix(bad)


def test_a_huge_announced_frame_allocates_only_what_arrived() -> None:
    # issue #10: a header announcing 100 MiB used to allocate 100 MiB at its first byte.
    decoder = FrameDecoder(200 << 20)
    tracemalloc.start()
    try:
        decoder.feed(struct.pack(">i", 100 << 20) + b"x" * 1000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024, peak
    assert decoder.bytes_needed == (100 << 20) - 1000
    assert decoder.reserved_bytes == 100 << 20
    assert decoder.next_frame() is None


def test_idle_decoder_holds_no_frame_queue() -> None:
    """Every idle connection has a decoder: it keeps no (760-byte) deque once drained."""
    d = FrameDecoder(100)
    assert d._frames is None
    d.feed(encode_frame([b"ab"])[0] + b"ab" + encode_frame([b"c"])[0] + b"c")
    assert d.pending_frames == 2
    assert d.next_frame() == bytearray(b"ab")
    assert d.next_frame() == bytearray(b"c")
    assert d._frames is None and d.pending_frames == 0
