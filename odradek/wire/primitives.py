"""Kafka protocol primitive types, read from a memoryview and written to a bytearray.

Byte layouts (all integers big-endian):
  int8/int16/int32/int64, uint16/uint32, float64 (IEEE 754), bool (one byte, non-zero = true)
  uuid: 16 raw bytes
  unsigned varint: 7 bits per byte, least significant group first, high bit = continuation
  string: int16 length + UTF-8 bytes; nullable string: length -1 = null
  compact string: unsigned varint (length + 1) + UTF-8 bytes; 0 = null (nullable only)
  bytes / compact bytes: as strings, with an int32 length for the non-compact form
  array: int32 count (-1 = null) + elements; compact array: unsigned varint (count + 1), 0 = null
  tagged fields: unsigned varint count, then per field: uvarint tag, uvarint size, size bytes

Readers return `(value, new_position)`; every length is checked against the buffer before it
is used, so truncated or hostile input raises `ProtocolError` naming the byte offset.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable
from typing import Any

from odradek.wire.exceptions import ProtocolError

Buffer = bytes | bytearray | memoryview

ZERO_UUID = uuid.UUID(int=0)

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_i16_pack = _I16.pack
_i32_pack = _I32.pack
_i16_unpack = _I16.unpack_from
_i32_unpack = _I32.unpack_from


class Struct:
    """Base of every generated message and struct: slot-based equality and repr."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in _slots(self))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(
            f"{s}={getattr(self, s)!r}" for s in _slots(self) if s != "unknown_tagged_fields"
        )
        return f"{type(self).__qualname__}({inner})"


def _slots(obj: object) -> tuple[str, ...]:
    slots: tuple[str, ...] = type(obj).__slots__  # type: ignore[attr-defined]
    return slots


def not_null(value: Any, name: str) -> Any:
    """Guard for fields that are nullable only in other versions than the one being encoded."""
    if value is None:
        raise ValueError(f"field {name} cannot be null in this version")
    return value


def _short(what: str, pos: int, need: int, have: int) -> ProtocolError:
    return ProtocolError(f"{what} at byte {pos} needs {need} bytes, only {have} remain")


# -- varints -------------------------------------------------------------------------------


def read_uvarint(mv: memoryview, pos: int) -> tuple[int, int]:
    try:
        b = mv[pos]
    except IndexError:
        raise _short("unsigned varint", pos, 1, 0) from None
    if b < 0x80:
        return b, pos + 1
    start = pos
    result = b & 0x7F
    shift = 7
    while True:
        pos += 1
        try:
            b = mv[pos]
        except IndexError:
            raise ProtocolError(f"truncated unsigned varint at byte {start}") from None
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos + 1
        shift += 7
        if shift > 63:
            raise ProtocolError(f"unsigned varint at byte {start} is longer than 10 bytes")


def write_uvarint(b: bytearray, n: int) -> None:
    if n < 0x80:
        b.append(n)
        return
    while n >= 0x80:
        b.append((n & 0x7F) | 0x80)
        n >>= 7
    b.append(n)


# -- strings ---------------------------------------------------------------------------------


def _utf8(mv: memoryview, pos: int, n: int) -> str:
    end = pos + n
    if end > len(mv):
        raise _short("string", pos, n, len(mv) - pos)
    try:
        return str(mv[pos:end], "utf-8")
    except UnicodeDecodeError as e:
        raise ProtocolError(f"string at byte {pos} is not valid UTF-8: {e.reason}") from None


def read_string(mv: memoryview, pos: int) -> tuple[str, int]:
    if pos + 2 > len(mv):
        raise _short("string length", pos, 2, len(mv) - pos)
    n = _i16_unpack(mv, pos)[0]
    if n < 0:
        raise ProtocolError(f"null or negative length {n} for a non-nullable string at byte {pos}")
    return _utf8(mv, pos + 2, n), pos + 2 + n


def read_nullable_string(mv: memoryview, pos: int) -> tuple[str | None, int]:
    if pos + 2 > len(mv):
        raise _short("string length", pos, 2, len(mv) - pos)
    n = _i16_unpack(mv, pos)[0]
    if n < 0:
        if n != -1:
            raise ProtocolError(f"negative string length {n} at byte {pos}")
        return None, pos + 2
    return _utf8(mv, pos + 2, n), pos + 2 + n


def read_compact_string(mv: memoryview, pos: int) -> tuple[str, int]:
    n, p = read_uvarint(mv, pos)
    if n == 0:
        raise ProtocolError(f"null compact string at byte {pos} where the field is not nullable")
    return _utf8(mv, p, n - 1), p + n - 1


def read_compact_nullable_string(mv: memoryview, pos: int) -> tuple[str | None, int]:
    n, p = read_uvarint(mv, pos)
    if n == 0:
        return None, p
    return _utf8(mv, p, n - 1), p + n - 1


def write_string(b: bytearray, s: str) -> None:
    e = s.encode()
    b += _i16_pack(len(e))
    b += e


def write_nullable_string(b: bytearray, s: str | None) -> None:
    if s is None:
        b += b"\xff\xff"
    else:
        e = s.encode()
        b += _i16_pack(len(e))
        b += e


def write_compact_string(b: bytearray, s: str) -> None:
    e = s.encode()
    n = len(e) + 1
    if n < 0x80:
        b.append(n)
    else:
        write_uvarint(b, n)
    b += e


def write_compact_nullable_string(b: bytearray, s: str | None) -> None:
    if s is None:
        b.append(0)
    else:
        write_compact_string(b, s)


# -- bytes -----------------------------------------------------------------------------------


def _slice(mv: memoryview, pos: int, n: int, what: str) -> memoryview:
    end = pos + n
    if end > len(mv):
        raise _short(what, pos, n, len(mv) - pos)
    return mv[pos:end]


def read_bytes(mv: memoryview, pos: int) -> tuple[bytes, int]:
    if pos + 4 > len(mv):
        raise _short("bytes length", pos, 4, len(mv) - pos)
    n = _i32_unpack(mv, pos)[0]
    if n < 0:
        raise ProtocolError(f"null or negative length {n} for non-nullable bytes at byte {pos}")
    return bytes(_slice(mv, pos + 4, n, "bytes")), pos + 4 + n


def read_nullable_bytes(mv: memoryview, pos: int) -> tuple[bytes | None, int]:
    if pos + 4 > len(mv):
        raise _short("bytes length", pos, 4, len(mv) - pos)
    n = _i32_unpack(mv, pos)[0]
    if n < 0:
        return None, pos + 4
    return bytes(_slice(mv, pos + 4, n, "bytes")), pos + 4 + n


def read_compact_bytes(mv: memoryview, pos: int) -> tuple[bytes, int]:
    n, p = read_uvarint(mv, pos)
    if n == 0:
        raise ProtocolError(f"null compact bytes at byte {pos} where the field is not nullable")
    return bytes(_slice(mv, p, n - 1, "bytes")), p + n - 1


def read_compact_nullable_bytes(mv: memoryview, pos: int) -> tuple[bytes | None, int]:
    n, p = read_uvarint(mv, pos)
    if n == 0:
        return None, p
    return bytes(_slice(mv, p, n - 1, "bytes")), p + n - 1


def read_records(mv: memoryview, pos: int) -> tuple[memoryview | None, int]:
    """A `records` field: nullable bytes returned as a view into the frame, never copied."""
    if pos + 4 > len(mv):
        raise _short("records length", pos, 4, len(mv) - pos)
    n = _i32_unpack(mv, pos)[0]
    if n < 0:
        return None, pos + 4
    return _slice(mv, pos + 4, n, "records"), pos + 4 + n


def read_compact_records(mv: memoryview, pos: int) -> tuple[memoryview | None, int]:
    n, p = read_uvarint(mv, pos)
    if n == 0:
        return None, p
    return _slice(mv, p, n - 1, "records"), p + n - 1


def write_bytes(b: bytearray, v: Buffer) -> None:
    b += _i32_pack(len(v))
    b += v


def write_nullable_bytes(b: bytearray, v: Buffer | None) -> None:
    if v is None:
        b += b"\xff\xff\xff\xff"
    else:
        b += _i32_pack(len(v))
        b += v


def write_compact_bytes(b: bytearray, v: Buffer) -> None:
    write_uvarint(b, len(v) + 1)
    b += v


def write_compact_nullable_bytes(b: bytearray, v: Buffer | None) -> None:
    if v is None:
        b.append(0)
    else:
        write_uvarint(b, len(v) + 1)
        b += v


# -- uuid, arrays, tagged fields -----------------------------------------------------------------


def read_uuid(mv: memoryview, pos: int) -> tuple[uuid.UUID, int]:
    return uuid.UUID(bytes=bytes(_slice(mv, pos, 16, "uuid"))), pos + 16


def write_uuid(b: bytearray, u: uuid.UUID) -> None:
    b += u.bytes


def read_array_len(mv: memoryview, pos: int) -> tuple[int, int]:
    """int32 element count; -1 is null. Counts larger than the bytes left are refused."""
    if pos + 4 > len(mv):
        raise _short("array length", pos, 4, len(mv) - pos)
    n = _i32_unpack(mv, pos)[0]
    if n > len(mv) - pos:
        raise ProtocolError(f"array length {n} at byte {pos} exceeds the {len(mv) - pos} bytes left")
    if n < -1:
        raise ProtocolError(f"negative array length {n} at byte {pos}")
    return n, pos + 4


def read_compact_array_len(mv: memoryview, pos: int) -> tuple[int, int]:
    """Unsigned varint (count + 1); returns -1 for null."""
    n, p = read_uvarint(mv, pos)
    if n - 1 > len(mv) - p:
        raise ProtocolError(f"array length {n - 1} at byte {pos} exceeds the {len(mv) - p} bytes left")
    return n - 1, p


_ARRAY_STRUCTS: dict[tuple[str, int], struct.Struct] = {}


def fixed_array_struct(code: str, n: int) -> struct.Struct:
    """A compiled `>{n}{code}` format: parsing the format string costs more than the unpack."""
    found = _ARRAY_STRUCTS.get((code, n))
    if found is None:
        found = struct.Struct(f">{n}{code}")
        if n <= 64:
            _ARRAY_STRUCTS[(code, n)] = found
    return found


def read_fixed_array(mv: memoryview, pos: int, n: int, code: str, size: int) -> tuple[list[Any], int]:
    end = pos + n * size
    if end > len(mv):
        raise _short("array", pos, n * size, len(mv) - pos)
    return list(fixed_array_struct(code, n).unpack_from(mv, pos)), end


def write_array_len(b: bytearray, n: int) -> None:
    b += _i32_pack(n)


def write_compact_array_len(b: bytearray, n: int) -> None:
    write_uvarint(b, n + 1)


TagTable = dict[int, tuple[str, Any]]


def read_tagged_fields(mv: memoryview, pos: int, obj: Any, table: TagTable) -> int:
    """Decode known tags into `obj` attributes; keep unknown ones raw for re-encoding."""
    count, pos = read_uvarint(mv, pos)
    unknown: list[tuple[int, bytes]] | None = None
    for _ in range(count):
        tag, pos = read_uvarint(mv, pos)
        size, pos = read_uvarint(mv, pos)
        end = pos + size
        if end > len(mv):
            raise _short(f"tagged field {tag}", pos, size, len(mv) - pos)
        known = table.get(tag)
        if known is None:
            if unknown is None:
                unknown = []
            unknown.append((tag, bytes(mv[pos:end])))
        else:
            value, stop = known[1](mv[:end], pos)
            if stop != end:
                raise ProtocolError(f"tagged field {tag} at byte {pos} has {end - stop} trailing bytes")
            setattr(obj, known[0], value)
        pos = end
    obj.unknown_tagged_fields = unknown
    return pos


def write_tagged_fields(b: bytearray, fields: Iterable[tuple[int, Buffer]]) -> None:
    items = sorted(fields, key=lambda t: t[0])
    write_uvarint(b, len(items))
    for tag, data in items:
        write_uvarint(b, tag)
        write_uvarint(b, len(data))
        b += data
