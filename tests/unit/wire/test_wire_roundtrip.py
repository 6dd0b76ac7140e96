"""Property tests of the generated codec, with values drawn from the spec model.

- Every (message, version): random values in every field of that version (tagged fields
  included, nullable ones sometimes None, unknown tagged fields on flexible structs) encode,
  decode back equal, and re-encode byte-identically.
- Records fields decode as views over the caller's buffer (no copy).
- Robustness: truncated and corrupted encodings of a selection of messages raise only
  `ProtocolError`, never IndexError, struct.error or anything else.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import pytest
import wire_strategies as ws
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.wire.exceptions import ProtocolError
from odradek.wire.headers import decode_request_header, request_header_version

CASES = ws.message_cases()
# ODRADEK_FUZZ_EXAMPLES=1000 digs deeper locally; CI keeps the suite quick.
EXAMPLES = int(os.environ.get("ODRADEK_FUZZ_EXAMPLES", "0"))
FAST = settings(
    max_examples=EXAMPLES or 12,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def test_every_message_has_a_spec() -> None:
    missing = sorted(set(ws.all_classes()) - set(ws.all_specs()))
    assert not missing
    assert len(CASES) > 650


@pytest.mark.parametrize(("name", "version"), CASES, ids=[f"{n}-v{v}" for n, v in CASES])
@FAST
@given(data=st.data())
def test_round_trip(name: str, version: int, data: st.DataObject) -> None:
    spec = ws.all_specs()[name]
    cls: Any = ws.all_classes()[name]
    msg = data.draw(ws.message_strategy(spec, version, with_unknown=True), label="message")
    wire = ws.encode(msg, version)
    decoded, end = cls.decode(wire, version)
    assert end == len(wire)
    assert decoded == msg
    # Unknown tagged fields (and everything else) survive decode -> encode byte for byte.
    assert ws.encode(decoded, version) == wire


@pytest.mark.parametrize(("name", "version"), CASES[::7], ids=[f"{n}-v{v}" for n, v in CASES[::7]])
@FAST
@given(data=st.data())
def test_decode_at_offset(name: str, version: int, data: st.DataObject) -> None:
    """`pos` is honoured: a message embedded after a prefix decodes to the same value."""
    spec = ws.all_specs()[name]
    cls: Any = ws.all_classes()[name]
    msg = data.draw(ws.message_strategy(spec, version), label="message")
    prefix = data.draw(st.binary(max_size=5), label="prefix")
    wire = ws.encode(msg, version)
    decoded, end = cls.decode(prefix + wire + b"tail", version, len(prefix))
    assert end == len(prefix) + len(wire)
    assert decoded == msg


# -- zero copy -------------------------------------------------------------------------------------

RECORDS_CASES = [(n, v) for n, v in CASES if n in {"ProduceRequest", "FetchResponse"}]


def _records_fields(msg: Any) -> list[Any]:
    if n := getattr(msg, "topic_data", None):
        return [p.records for t in n for p in t.partition_data]
    return [p.records for t in msg.responses for p in t.partitions]


@pytest.mark.parametrize(("name", "version"), RECORDS_CASES)
def test_records_are_views_over_the_input(name: str, version: int) -> None:
    cls: Any = ws.all_classes()[name]
    if name == "ProduceRequest":
        msg = cls(
            topic_data=[
                cls.TopicProduceData(
                    name="t", partition_data=[cls.PartitionProduceData(index=0, records=b"x" * 100)]
                )
            ]
        )
    else:
        part = cls.PartitionData(partition_index=0, records=b"y" * 100)
        msg = cls(responses=[cls.FetchableTopicResponse(topic="t", partitions=[part])])
    wire = bytearray(ws.encode(msg, version))
    decoded, _ = cls.decode(wire, version)
    (records,) = _records_fields(decoded)
    assert isinstance(records, memoryview)
    assert records.obj is wire
    # And encode hands the same view back as its own part rather than copying it.
    assert any(p is records for p in decoded.encode(version))


# -- robustness ---------------------------------------------------------------------------------

ROBUST = [
    (n, v)
    for n, v in CASES
    if n
    in {
        "ProduceRequest",
        "FetchRequest",
        "MetadataRequest",
        "ApiVersionsRequest",
        "JoinGroupRequest",
        "RequestHeader",
        "ResponseHeader",
    }
]
ROBUST_SETTINGS = settings(
    max_examples=EXAMPLES or 15,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize(("name", "version"), ROBUST, ids=[f"{n}-v{v}" for n, v in ROBUST])
@ROBUST_SETTINGS
@given(data=st.data())
def test_truncation_raises_protocol_error(name: str, version: int, data: st.DataObject) -> None:
    spec = ws.all_specs()[name]
    cls: Any = ws.all_classes()[name]
    wire = ws.encode(data.draw(ws.message_strategy(spec, version, with_unknown=True)), version)
    if not wire:
        return  # a version with no fields (ApiVersionsRequest v0-2) has nothing to cut
    cut = data.draw(st.integers(0, len(wire) - 1), label="cut")
    with pytest.raises(ProtocolError):
        cls.decode(wire[:cut], version)


@st.composite
def _corrupt(draw: st.DrawFn, wire: bytes) -> bytes:
    buf = bytearray(wire)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "insert", "delete", "ff"]))
        i = draw(st.integers(0, max(len(buf) - 1, 0)))
        if kind == "insert" or not buf:
            buf[i:i] = draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete":
            del buf[i : i + draw(st.integers(1, 4))]
        elif kind == "flip":
            buf[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "ff":
            # Lengths of 0xff.. are -1 or huge: null where not nullable, oversize counts.
            buf[i : i + 4] = b"\xff\xff\xff\xff"
        else:
            buf[i] = draw(st.integers(0, 255))
    return bytes(buf)


@pytest.mark.parametrize(("name", "version"), ROBUST, ids=[f"{n}-v{v}" for n, v in ROBUST])
@ROBUST_SETTINGS
@given(data=st.data())
def test_garbage_raises_only_protocol_error(name: str, version: int, data: st.DataObject) -> None:
    spec = ws.all_specs()[name]
    cls: Any = ws.all_classes()[name]
    wire = ws.encode(data.draw(ws.message_strategy(spec, version, with_unknown=True)), version)
    bad = data.draw(_corrupt(wire) | st.binary(max_size=64), label="garbage")
    try:
        decoded, end = cls.decode(bad, version)
    except ProtocolError:
        return
    # Accepted garbage must be a coherent message: within the buffer, and re-encodable into a
    # canonical form that is stable (not necessarily the same bytes: varints with redundant
    # continuation bytes or out-of-order tags are re-encoded canonically).
    assert 0 <= end <= len(bad)
    canonical = ws.encode(decoded, version)
    again, _ = cls.decode(canonical, version)
    assert ws.encode(again, version) == canonical


@pytest.mark.parametrize("api_key", [0, 1, 3, 11, 18, 7])
@ROBUST_SETTINGS
@given(data=st.data())
def test_request_header_garbage(api_key: int, data: st.DataObject) -> None:
    spec = ws.all_specs()["RequestHeader"]
    version = data.draw(st.integers(0, 12), label="api_version")
    hv = request_header_version(api_key, version)
    hdr = data.draw(ws.message_strategy(spec, hv))
    hdr.request_api_key, hdr.request_api_version = api_key, version
    wire = ws.encode(hdr, hv)
    decoded, end = decode_request_header(memoryview(wire))
    assert decoded == hdr and end == len(wire)
    cut = data.draw(st.integers(0, len(wire) - 1), label="cut")
    with pytest.raises(ProtocolError):
        decode_request_header(memoryview(wire[:cut]))
    bad = data.draw(_corrupt(wire), label="garbage")
    with contextlib.suppress(ProtocolError):
        decode_request_header(memoryview(bad))
