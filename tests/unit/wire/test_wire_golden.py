"""Golden request frames captured from real clients decode and re-encode byte-identically.

The frames in `golden/` were recorded by `tools/capture_golden.py`: from librdkafka
(confluent-kafka) and kafka-python through a loopback fake broker answering with our own
generated responses, and from the Java client (kafka-clients 4.4, 4.1 and 3.9, the compatibility
matrix's Java driver; for 4.4 also compat_tests/java44/AdminVersionsProbe.java) through a loopback recording proxy in front of a real Odradek
(`java-<version>-<driver scenario>__...` files). `golden/manifest.json` names the client and
version of each. Each frame is the request header plus body, without the 4-byte size prefix.
The record batches the producers sent are checked too: CRC-32C valid, records readable, the
values the capture script or driver scenario produced.
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
# The Java client sends these too in the driver scenarios captured (see capture_golden.py).
JAVA_REQUIRED = REQUIRED | {
    "ListOffsets",
    "Heartbeat",
    "OffsetCommit",
    "OffsetFetch",
    "LeaveGroup",
    "AddOffsetsToTxn",
    "TxnOffsetCommit",
    "CreateTopics",
}
# The 4.4 client: transactions v2 (no AddPartitionsToTxn / AddOffsetsToTxn), KIP-848 groups, and
# the newest versions of the admin apis (AdminVersionsProbe, the "admin-versions" capture).
JAVA_44_REQUIRED = (JAVA_REQUIRED - {"AddPartitionsToTxn", "AddOffsetsToTxn"}) | {
    "ConsumerGroupHeartbeat",
    "DescribeGroups",
    "DeleteGroups",
    "ListTransactions",
}
# (api, version) the 4.4 client must have sent: the Kafka 4.4 versions Odradek serves.
JAVA_44_VERSIONS = {
    ("ApiVersions", 5), ("ListOffsets", 11), ("OffsetCommit", 10), ("OffsetFetch", 10),
    ("DescribeGroups", 6), ("DeleteGroups", 3), ("ListTransactions", 2),
}
CLIENTS = {
    "librdkafka": REQUIRED,
    "kafka-python": REQUIRED,
    "kafka-clients 4.4.": JAVA_44_REQUIRED,
    "kafka-clients 4.1.": JAVA_REQUIRED,
    "kafka-clients 3.9.": JAVA_REQUIRED,
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


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_each_client_covers_the_required_apis(client: str) -> None:
    apis = {m["api"] for m in MANIFEST.values() if m["client"].startswith(client)}
    assert apis >= CLIENTS[client], sorted(CLIENTS[client] - apis)


def test_the_4_4_client_sent_the_newest_versions() -> None:
    sent = {(m["api"], m["api_version"]) for m in MANIFEST.values()
            if m["client"].startswith("kafka-clients 4.4.")}
    assert sent >= JAVA_44_VERSIONS, sorted(JAVA_44_VERSIONS - sent)


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


def _is_java(fname: str) -> bool:
    return str(MANIFEST[fname]["client"]).startswith("kafka-clients ")


PRODUCE = [f for f in FRAMES if MANIFEST[f]["api"] == "Produce"]
JAVA_PRODUCE = [f for f in PRODUCE if _is_java(f)]


@pytest.mark.parametrize("fname", [f for f in PRODUCE if not _is_java(f)])
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


# The Java driver scenarios whose Produce frames are kept (compat_tests/java Driver.java): the
# codec, whether transactional, and every value the scenario produces.
_COMPRESSIBLE = {f"record-{i:04d}-{'abcdefgh' * 64}".encode() for i in range(50)}
JAVA_PRODUCERS: dict[str, tuple[int, bool, set[bytes]]] = {
    "produce-consume": (0, False, {f"v{i:03d}".encode() for i in range(30)}),
    "transactions": (0, True, {f"{t}-{i}".encode() for t in ("c1", "a", "c2") for i in range(5)}),
    "compression-gzip": (1, False, _COMPRESSIBLE),
    "compression-snappy": (2, False, _COMPRESSIBLE),
    "compression-lz4": (3, False, _COMPRESSIBLE),
    "compression-zstd": (4, False, _COMPRESSIBLE),
}


@pytest.mark.parametrize("version", ["4.4", "4.1", "3.9"])
def test_java_produce_covers_each_kind_of_batch(version: str) -> None:
    kept = {MANIFEST[f]["scenario"] for f in JAVA_PRODUCE}
    assert kept >= {f"java-{version}-{s}" for s in JAVA_PRODUCERS}, sorted(kept)


@pytest.mark.parametrize("fname", JAVA_PRODUCE)
def test_java_produced_record_batches(fname: str) -> None:
    _, header, _, body = _decode(fname)
    scenario = str(MANIFEST[fname]["scenario"]).split("-", 2)[2]  # java-4.1-<scenario>
    codec, transactional, produced = JAVA_PRODUCERS[scenario]
    values: list[bytes | None] = []
    for topic in body.topic_data:
        if header.request_api_version >= 13:  # topics by id only (KIP-516), as 4.4 sends
            assert topic.name == "" and topic.topic_id.int != 0
        else:
            assert topic.name.startswith(f"golden-{scenario}-")
        for part in topic.partition_data:
            assert isinstance(part.records, memoryview)
            for batch in iter_batches(part.records):
                assert batch.magic == 2
                assert batch.crc_ok()
                assert batch.compression == codec
                assert batch.is_transactional == transactional
                # acks=all makes the Java producer idempotent by default (since 3.0).
                assert batch.producer_id >= 0 and batch.base_sequence >= 0
                records = list(batch.records())
                assert len(records) == batch.records_count
                values += [r.value for r in records]
    assert values
    assert set(values) <= produced
