"""`__consumer_offsets` record formats and Kafka's group-to-partition mapping."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.coordinator.group.records import (
    GroupKey,
    OffsetAndMetadata,
    OffsetKey,
    UnknownKey,
    group_metadata_key,
    group_metadata_value,
    java_string_hash,
    offset_commit_key,
    offset_commit_value,
    parse_group_value,
    parse_key,
    parse_offset_value,
    partition_for,
)
from odradek.wire import ProtocolError
from odradek.wire._generated.internal import GroupMetadataValue


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


@pytest.mark.parametrize(("text", "expected"), [
    ("", 0),
    ("a", 97),
    ("hello", 99162322),
    ("Aa", 2112),
    ("BB", 2112),
    ("polygenelubricants", -(2**31)),  # the famous Integer.MIN_VALUE hash
    ("\U0001f600", 1772899),  # a surrogate pair counts as two UTF-16 units
])
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_partition_for_matches_kafka_utils_abs() -> None:
    assert partition_for("polygenelubricants", 50) == 0  # Utils.abs(INT_MIN) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    h = java_string_hash("my-group")
    assert partition_for("my-group", 50) == abs(h) % 50


@given(st.text(max_size=40), st.integers(min_value=1, max_value=200))
def test_partition_in_range(group: str, n: int) -> None:
    assert 0 <= partition_for(group, n) < n


def test_offset_commit_key_layout() -> None:
    key = offset_commit_key("grp", "topic", 7)
    assert key == struct.pack(">h", 1) + _s("grp") + _s("topic") + struct.pack(">i", 7)
    assert parse_key(key) == OffsetKey("grp", "topic", 7)
    # version 0 has the same layout
    assert parse_key(struct.pack(">h", 0) + key[2:]) == OffsetKey("grp", "topic", 7)


def test_group_metadata_key_layout() -> None:
    key = group_metadata_key("grp")
    assert key == struct.pack(">h", 2) + _s("grp")
    assert parse_key(key) == GroupKey("grp")
    assert parse_key(struct.pack(">h", 3) + b"whatever") == UnknownKey(3)


def test_offset_commit_value_v3_layout() -> None:
    value = offset_commit_value(OffsetAndMetadata(42, 5, "meta", 1234))
    assert value == (struct.pack(">hqi", 3, 42, 5) + _s("meta") + struct.pack(">q", 1234))
    assert parse_offset_value(value) == OffsetAndMetadata(42, 5, "meta", 1234)


def test_offset_commit_value_with_expiry_is_v1() -> None:
    value = offset_commit_value(OffsetAndMetadata(1, -1, "", 10, expire_timestamp=99))
    assert value == struct.pack(">hq", 1, 1) + _s("") + struct.pack(">qq", 10, 99)
    assert parse_offset_value(value).expire_timestamp == 99


def test_offset_commit_value_v0() -> None:
    value = struct.pack(">hq", 0, 8) + _s("m") + struct.pack(">q", 77)
    assert parse_offset_value(value) == OffsetAndMetadata(8, -1, "m", 77)


def test_group_metadata_value_round_trip() -> None:
    v = GroupMetadataValue(
        protocol_type="consumer", generation=3, protocol="range", leader="m1",
        current_state_timestamp=555, members=[GroupMetadataValue.MemberMetadata(
            member_id="m1", group_instance_id="i1", client_id="c", client_host="/127.0.0.1",
            rebalance_timeout=300, session_timeout=100, subscription=b"sub", assignment=b"asg")])
    raw = group_metadata_value(v)
    assert raw[:2] == struct.pack(">h", 3)
    version, back = parse_group_value(raw)
    assert version == 3 and back == v


def test_malformed_records_raise_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        parse_key(b"\x00")
    with pytest.raises(ProtocolError):
        parse_key(struct.pack(">h", 1) + b"\x00\x05ab")
    with pytest.raises(ProtocolError, match="unknown version"):
        parse_offset_value(struct.pack(">h", 9) + b"\x00" * 30)
    with pytest.raises(ProtocolError):
        parse_group_value(struct.pack(">h", 3) + b"\x00")
