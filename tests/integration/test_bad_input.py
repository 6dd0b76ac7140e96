"""Malformed and hostile input on a raw socket: the broker closes that connection (as Kafka
does) or answers with an error, and keeps serving everyone else.

Frames built here: int32 size, then the request header (int16 api_key, int16 api_version,
int32 correlation_id, int16-length client_id; header v2 adds an empty tagged-field section,
one 0x00 byte), then the body. Responses read: int32 size, int32 correlation_id, body.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import pytest
from it_support import TIMEOUT, BrokerProcess, StartBroker, admin

pytestmark = pytest.mark.timeout(120)

API_VERSIONS = 18
METADATA = 3
UNSUPPORTED_VERSION = 35
READ_TIMEOUT = 10.0


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def request(
    api_key: int,
    version: int,
    correlation_id: int,
    body: bytes = b"",
    *,
    flexible: bool = False,
    client_id: bytes = b"raw-test",
) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    if flexible:
        header += b"\x00"  # no tagged fields
    return frame(header + body)


# ApiVersions v3+ body: compact strings client_software_name/version, no tagged fields.
API_VERSIONS_V3_BODY = b"\x04raw" + b"\x040.1" + b"\x00"


class Raw:
    """A plain TCP connection to the broker."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.sock = socket.create_connection(("127.0.0.1", broker.port), timeout=READ_TIMEOUT)

    def __enter__(self) -> Raw:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _exactly(self, n: int) -> bytes:
        chunks = b""
        while len(chunks) < n:
            chunk = self.sock.recv(n - len(chunks))
            if not chunk:
                raise AssertionError(f"connection closed after {len(chunks)} of {n} bytes")
            chunks += chunk
        return chunks

    def read_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._exactly(4))
        return self._exactly(size)

    def closed_by_broker(self) -> bool:
        """True if the broker closes the connection (sending nothing) within the timeout."""
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        assert data == b"", f"unexpected response bytes {data[:64]!r}"
        return True


def parse_api_versions_v0(payload: bytes) -> tuple[int, int, dict[int, tuple[int, int]]]:
    """(correlation_id, error_code, {api_key: (min, max)}) of a v0-shaped response."""
    correlation_id, error, count = struct.unpack_from(">ihi", payload, 0)
    apis = {}
    for i in range(count):
        key, lo, hi = struct.unpack_from(">hhh", payload, 10 + 6 * i)
        apis[key] = (lo, hi)
    return correlation_id, error, apis


def assert_healthy(broker: BrokerProcess) -> None:
    with Raw(broker) as conn:
        conn.send(request(API_VERSIONS, 0, 77))
        correlation_id, error, apis = parse_api_versions_v0(conn.read_frame())
    assert (correlation_id, error) == (77, 0)
    assert API_VERSIONS in apis and METADATA in apis
    md = admin(broker.bootstrap).list_topics(timeout=TIMEOUT)
    assert len(md.brokers) == 1


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", id="http"),
        pytest.param(frame(b"\xde\xad\xbe\xef" * 4), id="garbage-frame"),
        pytest.param(struct.pack(">i", -2) + b"\x00" * 8, id="negative-size"),
        pytest.param(struct.pack(">i", 0), id="zero-size"),
        pytest.param(struct.pack(">i", 104_857_600 + 1), id="over-socket-request-max-bytes"),
        pytest.param(request(32000, 0, 1), id="unknown-api-key"),
        pytest.param(request(-1, 0, 1), id="negative-api-key"),
        pytest.param(request(METADATA, 99, 1, b"\x00\x00", flexible=True), id="metadata-v99"),
        pytest.param(frame(struct.pack(">hhi", API_VERSIONS, 0, 1)), id="header-cut-short"),
    ],
)
def test_connection_closed_on_protocol_violation(broker: BrokerProcess, data: bytes) -> None:
    with Raw(broker) as conn:
        conn.send(data)
        assert conn.closed_by_broker(), "broker kept the connection open"
    assert_healthy(broker)


def test_truncated_frame_then_close(broker: BrokerProcess) -> None:
    with Raw(broker) as conn:
        conn.send(struct.pack(">i", 100) + b"\x00\x12\x00\x00\x00\x00")
    assert_healthy(broker)


def test_frame_larger_than_configured_limit(start_broker: StartBroker, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", {"socket.request.max.bytes": "1024"})
    with Raw(broker) as conn:
        conn.send(request(API_VERSIONS, 0, 1, b"\x00" * 2000))
        assert conn.closed_by_broker()
    assert_healthy(broker)


def test_api_versions_unknown_version_gets_v0_unsupported_version(broker: BrokerProcess) -> None:
    with Raw(broker) as conn:
        conn.send(request(API_VERSIONS, 99, 5, API_VERSIONS_V3_BODY, flexible=True))
        correlation_id, error, apis = parse_api_versions_v0(conn.read_frame())
        assert correlation_id == 5
        assert error == UNSUPPORTED_VERSION
        lo, hi = apis[API_VERSIONS]
        assert lo == 0 and hi >= 3
        # The client then retries on the same connection with a version it was told about.
        conn.send(request(API_VERSIONS, 0, 6))
        correlation_id, error, apis = parse_api_versions_v0(conn.read_frame())
        assert (correlation_id, error) == (6, 0)
        assert METADATA in apis
    assert_healthy(broker)


def test_pipelined_requests_answered_in_order(broker: BrokerProcess) -> None:
    with Raw(broker) as conn:
        conn.send(b"".join(request(API_VERSIONS, 0, cid) for cid in range(10, 20)))
        ids = [parse_api_versions_v0(conn.read_frame())[0] for _ in range(10)]
    assert ids == list(range(10, 20))


def test_many_short_connections(broker: BrokerProcess) -> None:
    for _ in range(50):
        with Raw(broker) as conn:
            conn.send(request(API_VERSIONS, 0, 1)[:7])
    assert_healthy(broker)
