"""The `__consumer_offsets` record formats (Kafka's), and which partition a group lives in.

Every record has a key; the value is null for a tombstone (a deleted offset or group)::

    key   = version int16 | struct
            version 0 or 1: OffsetCommitKey   group string | topic string | partition int32
            version 2:      GroupMetadataKey  group string
            (3 and up are KIP-848 consumer-group records: recognised as unknown and skipped)
    value = version int16 | struct
            OffsetCommitValue v0-4:  offset int64 | leaderEpoch int32 (v3+) | metadata string |
                                     commitTimestamp int64 | expireTimestamp int64 (v1 only)
                                     (v4 is flexible: compact strings and tagged fields)
            GroupMetadataValue v0-4: protocolType string | generation int32 |
                                     protocol nullable string | leader nullable string |
                                     currentStateTimestamp int64 (v2+) | members array of
                                     (memberId | groupInstanceId (v3+) | clientId | clientHost |
                                      rebalanceTimeout int32 (v1+) | sessionTimeout int32 |
                                      subscription bytes | assignment bytes)

Strings are int16-length-prefixed UTF-8 and bytes int32-length-prefixed, as in the protocol;
the structs are the generated `odradek.wire._generated.internal` classes. Like Kafka 3.x this
writes OffsetCommitKey v1, OffsetCommitValue v3 (v1 when an explicit expire timestamp is
kept), GroupMetadataKey v2 and GroupMetadataValue v3, and reads every version. A key or value
that does not parse raises `ProtocolError` naming what was wrong.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from odradek.wire._generated.internal import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)
from odradek.wire.exceptions import ProtocolError

OFFSETS_TOPIC = "__consumer_offsets"

_I16 = struct.Struct(">h")

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_VALUE_VERSION = 3


def java_string_hash(s: str) -> int:
    """Java's `String.hashCode`: s[0]*31^(n-1) + ... over UTF-16 code units, as an int32."""
    h = 0
    units = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's `Utils.abs(groupId.hashCode) % partitions` (abs(INT_MIN) is 0 there)."""
    h = java_string_hash(group_id)
    return (0 if h == -(2**31) else abs(h)) % partitions


@dataclass(slots=True)
class OffsetAndMetadata:
    """One committed offset as the coordinator keeps it (OffsetCommitValue's fields)."""

    offset: int
    leader_epoch: int = -1  # -1: none
    metadata: str = ""
    commit_timestamp: int = 0
    expire_timestamp: int | None = None  # only from OffsetCommit v2-4 retention_time_ms


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class UnknownKey:
    version: int


def _join(parts: list[bytes | bytearray | memoryview]) -> bytes:
    return b"".join(parts)


def _version(data: bytes | memoryview, what: str) -> int:
    if len(data) < 2:
        raise ProtocolError(f"{what} of {len(data)} bytes has no int16 version prefix")
    version: int = _I16.unpack_from(data, 0)[0]
    return version


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    key = OffsetCommitKey(group=group, topic=topic, partition=partition)
    return _I16.pack(OFFSET_KEY_VERSION) + _join(key.encode(OFFSET_KEY_VERSION))


def group_metadata_key(group: str) -> bytes:
    return _I16.pack(GROUP_KEY_VERSION) + _join(GroupMetadataKey(group=group).encode(GROUP_KEY_VERSION))


def offset_commit_value(om: OffsetAndMetadata) -> bytes:
    version = OFFSET_VALUE_VERSION if om.expire_timestamp is None else OFFSET_VALUE_VERSION_WITH_EXPIRY
    value = OffsetCommitValue(
        offset=om.offset,
        leader_epoch=om.leader_epoch,
        metadata=om.metadata,
        commit_timestamp=om.commit_timestamp,
        expire_timestamp=-1 if om.expire_timestamp is None else om.expire_timestamp,
    )
    return _I16.pack(version) + _join(value.encode(version))


def group_metadata_value(value: GroupMetadataValue) -> bytes:
    return _I16.pack(GROUP_VALUE_VERSION) + _join(value.encode(GROUP_VALUE_VERSION))


def parse_key(data: bytes | memoryview) -> OffsetKey | GroupKey | UnknownKey:
    version = _version(data, "__consumer_offsets record key")
    if version in (0, 1):
        okey, _ = OffsetCommitKey.decode(data, version, 2)
        return OffsetKey(okey.group, okey.topic, okey.partition)
    if version == GROUP_KEY_VERSION:
        gkey, _ = GroupMetadataKey.decode(data, version, 2)
        return GroupKey(gkey.group)
    return UnknownKey(version)


def parse_offset_value(data: bytes | memoryview) -> OffsetAndMetadata:
    version = _version(data, "OffsetCommitValue")
    if not OffsetCommitValue.MIN_VERSION <= version <= OffsetCommitValue.MAX_VERSION:
        raise ProtocolError(f"OffsetCommitValue has unknown version {version}")
    value, _ = OffsetCommitValue.decode(data, version, 2)
    return OffsetAndMetadata(
        offset=value.offset,
        leader_epoch=value.leader_epoch,
        metadata=value.metadata,
        commit_timestamp=value.commit_timestamp,
        expire_timestamp=None if value.expire_timestamp == -1 else value.expire_timestamp,
    )


def parse_group_value(data: bytes | memoryview) -> tuple[int, GroupMetadataValue]:
    """(value version, value): version 0 lacks rebalanceTimeout (Kafka then uses sessionTimeout)."""
    version = _version(data, "GroupMetadataValue")
    if not GroupMetadataValue.MIN_VERSION <= version <= GroupMetadataValue.MAX_VERSION:
        raise ProtocolError(f"GroupMetadataValue has unknown version {version}")
    value, _ = GroupMetadataValue.decode(data, version, 2)
    return version, value
