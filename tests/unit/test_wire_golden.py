"""Golden request frames captured from real clients decode and re-encode byte-identically.

The frames in `golden/` were recorded by `tools/capture_golden.py` (a loopback fake broker
answering with our own generated responses) from librdkafka (confluent-kafka) and kafka-python;
`golden/manifest.json` names the client and version of each. Each frame is the request header
plus body, without the 4-byte size prefix. The record batches the producers sent are checked
too: CRC-32C valid, records readable, the values the capture script produced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from odradek.wire import API_SPECS
from odradek.wire._generated.header import RequestHeader
from odradek.wire.headers import decode_request_header, request_header_version
from odradek.wire.records import iter_batches
from odradek.wire.registry import api_classes

GOLDEN = Path(__file__).parent / "golden"
MANIFEST: dict[str, dict[str, Any]] = json.loads((GOLDEN / "manifest.json").read_text())["frames"]
FRAMES = sorted(MANIFEST)

REQUIRED = {
    "ApiVersions",
    "Metadata",
    "Produce",
    "Fetch",
    "FindCoordinator",
    "JoinGroup",
    "SyncGroup",
    "InitProducerId",
    "AddPartitionsToTxn",
    "EndTxn",
}
# Compression codec each producer scenario was configured with (batch attributes bits 0-2).
PRODUCER_CODECS = {
    "librdkafka-producer": 3,  # lz4
    "librdkafka-transactional": 0,
    "kafka-python-producer": 1,  # gzip
    "kafka-python-transactional": 0,
}


def test_manifest_matches_files() -> None:
    assert set(MANIFEST) == {p.name for p in GOLDEN.glob("*.bin")}


@pytest.mark.parametrize("client", ["librdkafka", "kafka-python"])
def test_each_client_covers_the_required_apis(client: str) -> None:
    apis = {m["api"] for m in MANIFEST.values() if m["client"].startswith(client)}
    assert apis >= REQUIRED, sorted(REQUIRED - apis)


def _decode(fname: str) -> tuple[bytes, Any, int, Any]:
    frame = (GOLDEN / fname).read_bytes()
    header, pos = decode_request_header(memoryview(frame))
    meta = MANIFEST[fname]
    assert (header.request_api_key, header.request_api_version) == (
        meta["api_key"],
        meta["api_version"],
    )
    req_cls, _ = api_classes(header.request_api_key)
    body, end = req_cls.decode(frame, header.request_api_version, pos)
    assert end == len(frame)
    return frame, header, pos, body


@pytest.mark.parametrize("fname", FRAMES)
def test_golden_frame_round_trips(fname: str) -> None:
    frame, header, pos, body = _decode(fname)
    key, version = header.request_api_key, header.request_api_version
    hv = request_header_version(key, version)
    head = b"".join(bytes(p) for p in header.encode(hv))
    assert head == frame[:pos]
    assert b"".join(bytes(p) for p in body.encode(version)) == frame[pos:]
    assert isinstance(header, RequestHeader)
    assert header.client_id  # every client names itself
    assert API_SPECS[key].name == MANIFEST[fname]["api"]


PRODUCE = [f for f in FRAMES if MANIFEST[f]["api"] == "Produce"]


@pytest.mark.parametrize("fname", PRODUCE)
def test_produced_record_batches(fname: str) -> None:
    _, _, _, body = _decode(fname)
    scenario = MANIFEST[fname]["scenario"]
    values: list[bytes | None] = []
    batches = 0
    for topic in body.topic_data:
        assert topic.name == "golden"
        for part in topic.partition_data:
            assert isinstance(part.records, memoryview)
            for batch in iter_batches(part.records):
                batches += 1
                assert batch.magic == 2
                assert batch.crc_ok()
                assert batch.compression == PRODUCER_CODECS[scenario]
                assert batch.is_transactional == scenario.endswith("transactional")
                values += [r.value for r in batch.records()]
    assert batches >= 1
    assert values[0] == b"golden value 0"
    assert set(values) <= {b"golden value 0", b"golden value 1", b"golden padding " * 64}
