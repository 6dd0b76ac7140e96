"""Tries to get around SASL authentication (issue #13), with raw frames on a SASL_PLAINTEXT
listener: every served api before authentication, and between the handshake and
SaslAuthenticate, must close the connection without an answer (Kafka's
SaslServerAuthenticator: only ApiVersions and SaslHandshake are handled before the
handshake, only SaslAuthenticate after it); unknown or wrongly spelled mechanisms get
UNSUPPORTED_SASL_MECHANISM with the enabled list, then the close; SCRAM-SHA-256/512 and PLAIN
exchanges sent one byte at a time still authenticate."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from it_support import BrokerProcess
from test_bad_input import Raw, request
from test_sasl import METADATA_V1, SASL, _auth_response, _authenticate, _handshake

from odradek.broker.registry import HANDLERS
from odradek.wire import ApiKey
from odradek.wire._generated.sasl_handshake import SaslHandshakeResponse

pytestmark = pytest.mark.timeout(300)

UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
KAFKA = "kafka_it_server" in os.environ.get("ODRADEK_IT_SERVER_CMD", "")
ENABLED = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
# Every served api but the two Kafka handles before the handshake.
GUARDED = sorted(k for k in HANDLERS if k not in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE))


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the module (these tests change nothing on it)."""
    data: Path = tmp_path_factory.mktemp("sasl-bypass") / "data"
    broker = BrokerProcess(data, SASL)
    broker.start()
    yield broker
    broker.stop()


def _any_request(api_key: int, cid: int = 7) -> bytes:
    """A request of `api_key` at its lowest served version: the header is all Kafka reads
    before refusing it (the body, empty here, is never parsed)."""
    return request(api_key, HANDLERS[api_key].min_version, cid, b"")


@pytest.mark.parametrize("api_key", GUARDED, ids=[ApiKey(k).name for k in GUARDED])
def test_every_api_before_authentication_closes(sasl_broker: BrokerProcess,
                                                api_key: int) -> None:
    with Raw(sasl_broker) as raw:  # before the handshake
        raw.send(_any_request(api_key))
        assert raw.closed_by_broker()
    if api_key == ApiKey.SASL_AUTHENTICATE:
        return
    with Raw(sasl_broker) as raw:  # after the handshake, before SaslAuthenticate
        raw.send(_handshake("PLAIN"))
        assert SaslHandshakeResponse.decode(raw.read_frame(), 1, 4)[0].error_code == 0
        raw.send(_any_request(api_key))
        if api_key == ApiKey.LIST_GROUPS:  # a body Kafka can parse: see the test below
            return
        assert raw.closed_by_broker()


def test_after_the_handshake_a_parsed_request_gets_illegal_sasl_state(
        sasl_broker: BrokerProcess) -> None:
    """Kafka (SaslServerAuthenticator, AUTHENTICATE state) answers a request it can parse
    with that api's error response (ILLEGAL_SASL_STATE), then closes: ListGroups v0, whose
    body is empty. Nothing is served either way."""
    with Raw(sasl_broker) as raw:
        raw.send(_handshake("PLAIN"))
        raw.read_frame()
        raw.send(request(ApiKey.LIST_GROUPS, 0, 7))
        frame = raw.read_frame()
        cid, error, groups = struct.unpack(">ihi", frame)
        assert (cid, error, groups) == (7, ILLEGAL_SASL_STATE, 0)
        assert raw.closed_by_broker()


def test_api_versions_then_a_request_still_closes(sasl_broker: BrokerProcess) -> None:
    """ApiVersions is answered, but does not open the door to anything else."""
    with Raw(sasl_broker) as raw:
        raw.send(request(ApiKey.API_VERSIONS, 0, 5))
        assert struct.unpack(">i", raw.read_frame()[:4])[0] == 5
        raw.send(METADATA_V1)
        assert raw.closed_by_broker()


@pytest.mark.parametrize("mechanism", ["GSSAPI", "OAUTHBEARER", "plain", "SCRAM-SHA-1",
                                       "SCRAM-SHA-256 ", "", "PLAIN\x00"])
def test_unknown_or_misspelled_mechanism(sasl_broker: BrokerProcess, mechanism: str) -> None:
    with Raw(sasl_broker) as raw:
        raw.send(_handshake(mechanism))
        resp = SaslHandshakeResponse.decode(raw.read_frame(), 1, 4)[0]
        # Kafka's order is its map's, not the setting's
        assert (resp.error_code, sorted(resp.mechanisms)) == (UNSUPPORTED_SASL_MECHANISM, ENABLED)
        assert raw.closed_by_broker()


def _send_slowly(raw: Raw, data: bytes) -> None:
    for i in range(len(data)):
        raw.send(data[i:i + 1])
        time.sleep(0.001)


def _scram_client_final(mech: str, user: str, password: str, client_first_bare: str,
                        server_first: str) -> tuple[str, bytes]:
    """The client-final message and the server signature to expect (RFC 5802)."""
    digest = "sha256" if mech == "SCRAM-SHA-256" else "sha512"
    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), base64.b64decode(attrs["s"]),
                                 int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored = hashlib.new(digest, client_key).digest()
    without_proof = f"c=biws,r={attrs['r']}"
    auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(stored, auth_message, digest).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_key = hmac.new(salted, b"Server Key", digest).digest()
    expected = hmac.new(server_key, auth_message, digest).digest()
    return f"{without_proof},p={base64.b64encode(proof).decode()}", expected


@pytest.mark.parametrize("mech", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_split_at_every_byte(sasl_broker: BrokerProcess, mech: str) -> None:
    nonce = base64.b64encode(os.urandom(18)).decode()
    first_bare = f"n=bob,r={nonce}"
    with Raw(sasl_broker) as raw:
        _send_slowly(raw, _handshake(mech) + _authenticate(f"n,,{first_bare}".encode()))
        assert SaslHandshakeResponse.decode(raw.read_frame(), 1, 4)[0].error_code == 0
        first = _auth_response(raw)
        assert first.error_code == 0
        server_first = first.auth_bytes.decode()
        assert server_first.startswith(f"r={nonce}")
        final, expected = _scram_client_final(mech, "bob", "bob-pw", first_bare, server_first)
        _send_slowly(raw, _authenticate(final.encode(), cid=3) + METADATA_V1)
        done = _auth_response(raw)
        assert done.error_code == 0
        assert done.auth_bytes.decode() == "v=" + base64.b64encode(expected).decode()
        assert struct.unpack(">i", raw.read_frame()[:4])[0] == 9  # Metadata served


@pytest.mark.parametrize("version", [0, 1])
def test_plain_split_at_every_byte_older_authenticate(sasl_broker: BrokerProcess,
                                                      version: int) -> None:
    data = (_handshake("PLAIN") + _authenticate(b"\0alice\0alice-pw", version=version)
            + METADATA_V1)
    with Raw(sasl_broker) as raw:
        _send_slowly(raw, data)
        assert SaslHandshakeResponse.decode(raw.read_frame(), 1, 4)[0].error_code == 0
        assert _auth_response(raw, version=version).error_code == 0
        assert struct.unpack(">i", raw.read_frame()[:4])[0] == 9

