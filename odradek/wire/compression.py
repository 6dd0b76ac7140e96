"""Record-batch compression codecs, with the framings Kafka clients actually use.

The codec id lives in bits 0-2 of a batch's attributes: 0 none, 1 gzip, 2 snappy, 3 lz4,
4 zstd. All work is done by `cramjam` (C/Rust-backed); this module only adds Kafka's framings.

Byte layouts:

- gzip: a gzip member (RFC 1952).
- snappy: either one raw snappy block (librdkafka, Go clients) or the xerial "snappy-java"
  stream the Java client writes::

      magic b"\\x82SNAPPY\\x00" (8) | version int32 | compatible int32 |
      [ chunk length int32 (big-endian) | raw snappy block ]*

  The version fields are not checked: some producers write them little-endian. A stream is
  taken as xerial only when the full 8-byte magic matches; otherwise it is raw snappy (the
  same rule snappy-java applies).
- lz4: the LZ4 frame format (magic 0x184D2204). Java's reader rejects dependent blocks, so
  we always write independent blocks.
- zstd: one or more zstd frames; frames without a content size (written by streaming
  compressors, e.g. the Java client) decode as well.

`decompress_stream(codec, data, limit)` is the bounded, streaming reader the broker validates
client batches with: it yields the decompressed bytes in chunks of at most `STREAM_CHUNK`
bytes, never holds more than one chunk (plus one snappy block) at a time, and raises
`DecompressedTooLargeError` as soon as the output would pass `limit` bytes, so a small
compressed "bomb" costs at most `limit` bytes of work and one chunk of memory. gzip streams
through the standard library's zlib, zstd through `zstandard`, lz4 through `lz4.frame`
(all C-backed); snappy blocks carry their uncompressed length in their first varint, which is
checked against the bound before the block is decompressed.

`compress(SNAPPY, ...)` writes the xerial framing, byte-compatible with what a Java producer
or broker writes: every client reads it, and it is what a Java broker would store.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from enum import IntEnum
from typing import Final

import cramjam
import lz4.frame  # type: ignore[import-untyped]
import zstandard

from odradek.wire.exceptions import DecompressedTooLargeError, RecordBatchError

__all__ = ["STREAM_CHUNK", "CompressionType", "compress", "decompress", "decompress_stream"]

Buffer = bytes | bytearray | memoryview


class CompressionType(IntEnum):
    """Codec ids as stored in bits 0-2 of the batch attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_HEADER_SIZE: Final = 16
# snappy-java's default block size, which Kafka's producer keeps.
_XERIAL_BLOCK_SIZE: Final = 32 * 1024
_INT32: Final = struct.Struct(">i")

# Kafka's default levels: gzip uses java.util.zip's default (6), lz4 9, zstd its own default (3).
_GZIP_LEVEL: Final = 6
_LZ4_LEVEL: Final = 9
_ZSTD_LEVEL: Final = 3


def _codec_name(codec: int) -> str:
    try:
        return CompressionType(codec).name.lower()
    except ValueError:
        raise RecordBatchError(f"unknown compression codec id {codec} (expected 0-4)") from None


def decompress(codec: int, data: Buffer) -> bytes:
    """Decompress `data` written with `codec`; raises RecordBatchError on unknown or corrupt input."""
    name = _codec_name(codec)
    try:
        if codec == CompressionType.NONE:
            return bytes(data)
        if codec == CompressionType.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == CompressionType.SNAPPY:
            return _snappy_decompress(data)
        if codec == CompressionType.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        return bytes(cramjam.zstd.decompress(data))
    except RecordBatchError:
        raise
    except Exception as exc:  # cramjam.DecompressionError, plus anything odd input provokes
        raise RecordBatchError(
            f"corrupt {name}-compressed records ({len(data)} bytes): {exc}"
        ) from exc


STREAM_CHUNK: Final = 64 * 1024
_ZSTD = zstandard.ZstdDecompressor()


def decompress_stream(codec: int, data: Buffer, limit: int,
                      chunk: int = STREAM_CHUNK) -> Iterator[bytes]:
    """The decompressed bytes of `data`, in chunks of at most `chunk` bytes (snappy: one
    block), lazily. Raises DecompressedTooLargeError once more than `limit` bytes would come
    out, RecordBatchError for an unknown codec or corrupt input."""
    name = _codec_name(codec)
    if codec == CompressionType.NONE:
        if len(data) > limit:
            raise DecompressedTooLargeError(f"{len(data)} bytes of records, over {limit}")
        yield bytes(data)
        return
    total = 0
    try:
        for piece in _raw_stream(codec, memoryview(data), chunk, limit):
            total += len(piece)
            if total > limit:
                raise DecompressedTooLargeError(
                    f"{name}-compressed records ({len(data)} bytes) decompress to more than "
                    f"{limit} bytes")
            yield piece
    except RecordBatchError:
        raise
    except Exception as exc:  # zlib.error, zstandard.ZstdError, RuntimeError from lz4, ...
        raise RecordBatchError(
            f"corrupt {name}-compressed records ({len(data)} bytes): {exc}"
        ) from exc


def _raw_stream(codec: int, view: memoryview, chunk: int, limit: int) -> Iterator[bytes]:
    if codec == CompressionType.GZIP:
        pending: Buffer = view
        while pending:  # one gzip member after another, as GZIPInputStream reads them
            inflater = zlib.decompressobj(wbits=31)  # gzip header and trailer
            while not inflater.eof:
                piece = inflater.decompress(pending, chunk)
                pending = inflater.unconsumed_tail
                if piece:
                    yield piece
                elif not pending:
                    raise RecordBatchError("gzip stream ends before its trailer")
            pending = inflater.unused_data
        return
    if codec == CompressionType.ZSTD:
        with _ZSTD.stream_reader(view, read_across_frames=True) as reader:
            while piece := reader.read(chunk):
                yield piece
        return
    if codec == CompressionType.LZ4:
        rest: Buffer = view
        while rest:
            frame = lz4.frame.LZ4FrameDecompressor()
            piece = frame.decompress(rest, max_length=chunk)
            yield piece
            while not frame.eof:
                if frame.needs_input:
                    raise RecordBatchError("lz4 frame is truncated")
                yield frame.decompress(b"", max_length=chunk)
            rest = frame.unused_data
        return
    yield from _snappy_stream(view, limit)


def _snappy_block(block: memoryview, limit: int) -> bytes:
    size = cramjam.snappy.decompress_raw_len(block)
    if size > limit:
        raise DecompressedTooLargeError(
            f"a snappy block declares {size} uncompressed bytes, over {limit}")
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy_blocks(view: memoryview) -> Iterator[memoryview]:
    """The raw snappy blocks of `view`: its xerial chunks (Java's framing: magic, then
    int32-length-prefixed blocks), or the whole of it when it has no xerial header."""
    if len(view) < _XERIAL_HEADER_SIZE or view[:8].tobytes() != XERIAL_MAGIC:
        yield view
        return
    pos = _XERIAL_HEADER_SIZE
    end = len(view)
    while pos < end:
        if end - pos < 4:
            raise RecordBatchError(
                f"corrupt snappy-compressed records: xerial chunk length truncated at byte {pos}"
            )
        (size,) = _INT32.unpack_from(view, pos)
        pos += 4
        if size < 0 or pos + size > end:
            raise RecordBatchError(
                f"corrupt snappy-compressed records: xerial chunk at byte {pos - 4} declares "
                f"{size} bytes, {end - pos} remain"
            )
        yield view[pos : pos + size]
        pos += size


def _snappy_stream(view: memoryview, limit: int) -> Iterator[bytes]:
    for block in _snappy_blocks(view):
        yield _snappy_block(block, limit)


def compress(codec: int, data: Buffer, level: int | None = None) -> bytes:
    """Compress `data` with `codec` in the framing Kafka clients read (see module docstring).

    `level` is the codec's level as Kafka's `compression.<codec>.level` gives it (gzip 1-9 or
    -1 for zlib's default, lz4 1-17, zstd -131072..22); None takes Kafka's default. Snappy
    has no level."""
    _codec_name(codec)
    if codec == CompressionType.NONE:
        return bytes(data)
    if codec == CompressionType.GZIP:
        gzip_level = _GZIP_LEVEL if level is None or level == -1 else level
        return bytes(cramjam.gzip.compress(data, level=gzip_level))
    if codec == CompressionType.SNAPPY:
        return _xerial_compress(data)
    if codec == CompressionType.LZ4:
        # Independent blocks: Java's Lz4BlockInputStream refuses linked ones.
        compressor = cramjam.lz4.Compressor(
            level=_LZ4_LEVEL if level is None else level, block_linked=False
        )
        # (Compressor.compress only takes bytes.)
        compressor.compress(data if isinstance(data, bytes) else bytes(data))
        return bytes(compressor.finish())
    return bytes(cramjam.zstd.compress(data, level=_ZSTD_LEVEL if level is None else level))


def _snappy_decompress(data: Buffer) -> bytes:
    return b"".join(bytes(cramjam.snappy.decompress_raw(block))
                    for block in _snappy_blocks(memoryview(data)))


def _xerial_compress(data: Buffer) -> bytes:
    view = memoryview(data)
    parts: list[bytes | cramjam.Buffer] = [_XERIAL_HEADER]
    # At least one chunk even for empty input: some readers take a bare 16-byte header for raw.
    for start in range(0, max(len(view), 1), _XERIAL_BLOCK_SIZE):
        block = cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK_SIZE])
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)
