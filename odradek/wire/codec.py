"""Entry points the generated messages call: version lookup and error normalisation.

Decoders raise only `ProtocolError`: truncated buffers (struct.error, IndexError) and bad values
surfacing from the generated straight-line code are re-raised with the message name and version.
"""

from __future__ import annotations

import struct
from typing import Any

from odradek.wire.exceptions import ProtocolError
from odradek.wire.primitives import Buffer


def decode_with(table: dict[int, Any], name: str, data: Buffer, version: int, pos: int) -> Any:
    fn = table.get(version)
    if fn is None:
        raise ProtocolError(f"{name} has no version {version}")
    mv = data if isinstance(data, memoryview) else memoryview(data)
    try:
        return fn(mv, pos)
    except ProtocolError as e:
        raise ProtocolError(f"malformed {name} v{version}: {e}") from None
    except (struct.error, IndexError, ValueError, OverflowError) as e:
        raise ProtocolError(f"malformed {name} v{version}: {e}") from None


def encode_with(table: dict[int, Any], name: str, msg: Any, version: int) -> list[Buffer]:
    fn = table.get(version)
    if fn is None:
        raise ValueError(f"{name} has no version {version}")
    parts: list[Buffer] = fn(msg)
    return parts
