"""What KIP-848 consumer groups and KIP-932 share groups share (Kafka's
org.apache.kafka.coordinator.group.modern package): the coordinator-record framing of
`__consumer_offsets` and `__share_group_state`, the sorted form of an assignment in records,
and the subscribed-topics metadata hash.

A coordinator record's key is `int16 record type | key struct` (the generated key codecs
take the record type as their version); its value is `int16 value version | value struct`,
version 0 for every modern-group and share-state record. A null value is a tombstone.
"""

from __future__ import annotations

import hashlib
import struct
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from odradek.wire.exceptions import ProtocolError

_I16 = struct.Struct(">h")
VALUE_VERSION = 0


def encode_key(record_type: int, key: Any) -> bytes:
    return _I16.pack(record_type) + b"".join(key.encode(record_type))


def encode_value(value: Any, version: int = VALUE_VERSION) -> bytes:
    return _I16.pack(version) + b"".join(value.encode(version))


def check_value_version(data: bytes | memoryview, what: str,
                        version: int = VALUE_VERSION) -> None:
    """Refuse a value without the int16 prefix or of another version (ProtocolError)."""
    if len(data) < 2:
        raise ProtocolError(f"{what} of {len(data)} bytes has no int16 version prefix")
    got = _I16.unpack_from(data, 0)[0]
    if got != version:
        raise ProtocolError(f"{what} has unknown version {got}")


def sorted_parts(a: Mapping[uuid.UUID, Iterable[int]]) -> list[tuple[uuid.UUID, list[int]]]:
    """An assignment as records list it: topics by id, partitions ascending."""
    return [(t, sorted(a[t])) for t in sorted(a)]


def metadata_hash(topics: Iterable[tuple[str, uuid.UUID, int]]) -> int:
    """A 64-bit digest of the subscribed topics' names, ids and partition counts: it changes
    when one of them does (Kafka 4.1+ keeps such a hash; its value is Odradek's own)."""
    h = hashlib.blake2b(digest_size=8)
    for name, topic_id, partitions in sorted(topics):
        h.update(name.encode() + b"\0" + topic_id.bytes + struct.pack(">i", partitions))
    value = int.from_bytes(h.digest(), "big", signed=True)
    return value
