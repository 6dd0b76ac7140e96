"""Compression codecs: round trips, Kafka's framings (xerial snappy, lz4 frames, streamed zstd),
and what corrupt input raises."""

from __future__ import annotations

import contextlib
import os
import struct

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.wire.compression import XERIAL_MAGIC, CompressionType, compress, decompress
from odradek.wire.exceptions import ProtocolError, RecordBatchError

ALL_CODECS = list(CompressionType)
COMPRESSED = [c for c in CompressionType if c != CompressionType.NONE]

# Compressible and incompressible data, below and above the xerial (32 KiB) and lz4 (64 KiB)
# block sizes, so multi-block paths run.
SAMPLES = [
    b"",
    b"x",
    b"hello kafka " * 10,
    os.urandom(1000),
    b"abcdefgh" * 20_000,
    os.urandom(150_000),
]


def test_codec_ids_match_kafka() -> None:
    assert [int(c) for c in CompressionType] == [0, 1, 2, 3, 4]
    assert [c.name for c in CompressionType] == ["NONE", "GZIP", "SNAPPY", "LZ4", "ZSTD"]


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("size_index", range(len(SAMPLES)))
def test_round_trip(codec: CompressionType, size_index: int) -> None:
    data = SAMPLES[size_index]
    packed = compress(codec, data)
    assert isinstance(packed, bytes)
    assert decompress(codec, packed) == data
    assert decompress(codec, memoryview(packed)) == data
    assert decompress(codec, bytearray(packed)) == data
    assert decompress(codec, compress(codec, memoryview(data))) == data
    assert decompress(codec, compress(codec, bytearray(data))) == data


@settings(max_examples=50, deadline=None)
@given(codec=st.sampled_from(ALL_CODECS), data=st.binary(max_size=5000))
def test_round_trip_property(codec: CompressionType, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


def _xerial(data: bytes, block: int, version: bytes = struct.pack(">ii", 1, 1)) -> bytes:
    """A xerial snappy-java stream built from its documented layout."""
    out = bytearray(b"\x82SNAPPY\x00" + version)
    for start in range(0, len(data), block):
        chunk = bytes(cramjam.snappy.compress_raw(data[start : start + block]))
        out += struct.pack(">i", len(chunk)) + chunk
    return bytes(out)


@pytest.mark.parametrize("block", [7, 1024, 32 * 1024])
def test_snappy_decodes_handmade_xerial_stream(block: int) -> None:
    data = b"".join(b"record %d;" % i for i in range(10_000))
    stream = _xerial(data, block)
    assert stream.startswith(XERIAL_MAGIC)
    assert decompress(CompressionType.SNAPPY, stream) == data


def test_snappy_xerial_version_fields_are_not_trusted() -> None:
    # Some producers write version/compat little-endian; the magic alone decides.
    data = b"abc" * 5000
    stream = _xerial(data, 1000, version=struct.pack("<ii", 1, 1))
    assert decompress(CompressionType.SNAPPY, stream) == data


def test_snappy_decodes_raw_block() -> None:
    data = b"raw snappy as librdkafka writes it " * 100
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert not raw.startswith(XERIAL_MAGIC)
    assert decompress(CompressionType.SNAPPY, raw) == data


def test_snappy_encodes_xerial_in_32k_chunks() -> None:
    data = os.urandom(100_000)
    stream = compress(CompressionType.SNAPPY, data)
    assert stream[:8] == XERIAL_MAGIC
    assert struct.unpack_from(">ii", stream, 8) == (1, 1)
    pos, pieces = 16, []
    while pos < len(stream):
        (n,) = struct.unpack_from(">i", stream, pos)
        pieces.append(bytes(cramjam.snappy.decompress_raw(stream[pos + 4 : pos + 4 + n])))
        pos += 4 + n
    assert pos == len(stream)
    assert [len(p) for p in pieces] == [32768, 32768, 32768, 100_000 - 3 * 32768]
    assert b"".join(pieces) == data


def test_snappy_empty_input_still_writes_a_chunk() -> None:
    stream = compress(CompressionType.SNAPPY, b"")
    assert len(stream) > 16  # readers that need more than the header see a xerial stream
    assert decompress(CompressionType.SNAPPY, stream) == b""


def test_lz4_writes_independent_blocks_java_accepts() -> None:
    stream = compress(CompressionType.LZ4, b"0123456789" * 50_000)
    assert stream[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic, little-endian 0x184D2204
    flg, bd = stream[4], stream[5]
    assert flg >> 6 == 1, "frame version 01"
    assert flg & 0x20, "block independence: Java's reader refuses dependent blocks"
    assert flg & 0x03 == 0, "reserved bits"
    assert 4 <= (bd >> 4) & 7 <= 7 and bd & 0x8F == 0, "block size id Java accepts"


def _zstd_raw_frame(data: bytes) -> bytes:
    """A zstd frame with no content size (as streaming compressors write), raw blocks."""
    assert len(data) <= 128 * 1024
    out = bytearray(struct.pack("<I", 0xFD2FB528))
    out.append(0x00)  # descriptor: no content size, not single-segment, no checksum, no dict
    out.append(7 << 3)  # window descriptor: 2^(10+7) = 128 KiB
    for start in range(0, max(len(data), 1), 1000):
        block = data[start : start + 1000]
        last = 1 if start + 1000 >= len(data) else 0
        header = last | (0 << 1) | (len(block) << 3)  # type 0 = raw block
        out += header.to_bytes(3, "little") + block
    return bytes(out)


def test_zstd_frame_without_content_size() -> None:
    data = os.urandom(5000)
    assert decompress(CompressionType.ZSTD, _zstd_raw_frame(data)) == data


def test_zstd_streamed_frame_without_content_size() -> None:
    zstandard = pytest.importorskip("zstandard")
    data = b"streamed by a client " * 10_000
    compressor = zstandard.ZstdCompressor(write_content_size=False)
    chunker = compressor.chunker(chunk_size=4096)
    parts = [bytes(c) for piece in (data[:7000], data[7000:]) for c in chunker.compress(piece)]
    parts += [bytes(c) for c in chunker.finish()]
    frame = b"".join(parts)
    assert zstandard.get_frame_parameters(frame).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(CompressionType.ZSTD, frame) == data


def test_lz4_frames_from_lz4_package() -> None:
    lz4_frame = pytest.importorskip("lz4.frame")
    data = b"0123456789abcdef" * 20_000
    for kwargs in (
        {"block_linked": False},
        {"block_linked": False, "content_checksum": True, "store_size": False},
        {"block_linked": False, "block_checksum": True},
    ):
        assert decompress(CompressionType.LZ4, lz4_frame.compress(data, **kwargs)) == data
    assert lz4_frame.decompress(compress(CompressionType.LZ4, data)) == data


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name)
def test_corrupt_input_raises_record_batch_error(codec: CompressionType) -> None:
    with pytest.raises(RecordBatchError, match=codec.name.lower()):
        decompress(codec, b"\x00this is not compressed data at all\xff" * 3)


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name)
def test_truncated_input_raises_record_batch_error(codec: CompressionType) -> None:
    packed = compress(codec, os.urandom(2000))
    with pytest.raises(RecordBatchError, match=codec.name.lower()):
        decompress(codec, packed[: len(packed) // 2])


def test_xerial_truncated_chunk_raises() -> None:
    stream = _xerial(b"abc" * 1000, 100)
    for cut in (len(stream) - 1, 18, 17):
        with pytest.raises(RecordBatchError, match="xerial"):
            decompress(CompressionType.SNAPPY, stream[:cut])


@pytest.mark.parametrize("codec", [5, 6, 7, -1])
def test_unknown_codec(codec: int) -> None:
    with pytest.raises(RecordBatchError, match=f"codec id {codec}"):
        decompress(codec, b"abc")
    with pytest.raises(RecordBatchError, match=f"codec id {codec}"):
        compress(codec, b"abc")


@settings(max_examples=300, deadline=None)
@given(codec=st.sampled_from(COMPRESSED), data=st.binary(max_size=300))
def test_garbage_raises_only_protocol_errors(codec: CompressionType, data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        decompress(codec, data)


@settings(max_examples=200, deadline=None)
@given(
    codec=st.sampled_from(COMPRESSED),
    data=st.binary(min_size=1, max_size=500),
    index=st.integers(min_value=0),
    flip=st.integers(min_value=1, max_value=255),
)
def test_mutated_streams_raise_only_protocol_errors(
    codec: CompressionType, data: bytes, index: int, flip: int
) -> None:
    packed = bytearray(compress(codec, data))
    packed[index % len(packed)] ^= flip
    with contextlib.suppress(ProtocolError):
        decompress(codec, bytes(packed))
