"""Raw-socket SASL checks for sasl_check, the same bytes to Odradek and to Apache Kafka: the v0
SaslHandshake (bare size-prefixed tokens: PLAIN, SCRAM-SHA-512, a wrong password) and the
OAUTHBEARER exchange (a valid token's session lifetime bounded by its exp, KIP-368; a refused
token's RFC 7628 challenge, the client's \\x01, then the failure)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import socket
import struct
import time

from odradek.wire._generated.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from odradek.wire._generated.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse

Result = tuple[bool, str]


class _Conn:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)

    def close(self) -> None:
        self.sock.close()

    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def request(self, api: int, version: int, cid: int, body: bytes) -> None:
        header = struct.pack(">hhih", api, version, cid, 3) + b"raw"
        self.send_frame(header + body)

    def read_frame(self) -> bytes | None:
        """The next frame, or None if the peer closed the connection."""
        head = self._exactly(4)
        if head is None:
            return None
        return self._exactly(struct.unpack(">i", head)[0])

    def _exactly(self, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            data += chunk
        return data

    def handshake(self, mech: str, version: int) -> int:
        self.request(17, version, 1, b"".join(SaslHandshakeRequest(mechanism=mech).encode(version)))
        frame = self.read_frame()
        assert frame is not None, "closed after SaslHandshake"
        return SaslHandshakeResponse.decode(frame, version, 4)[0].error_code

    def authenticate(self, token: bytes, cid: int) -> SaslAuthenticateResponse | None:
        self.request(36, 1, cid, b"".join(SaslAuthenticateRequest(auth_bytes=token).encode(1)))
        frame = self.read_frame()
        return None if frame is None else SaslAuthenticateResponse.decode(frame, 1, 4)[0]

    def api_versions_ok(self) -> bool:
        self.request(18, 0, 99, b"")
        frame = self.read_frame()
        return frame is not None and struct.unpack_from(">ih", frame)[0] == 99 \
            and struct.unpack_from(">ih", frame)[1] == 0


def v0_plain(port: int, user: str, pw: str, wrong: bool = False) -> Result:
    c = _Conn(port)
    try:
        if (err := c.handshake("PLAIN", 0)) != 0:
            return False, f"SaslHandshake v0 error {err}"
        c.send_frame(f"\0{user}\0{'nope' if wrong else pw}".encode())
        answer = c.read_frame()
        if wrong:
            return answer is None, "wrong password: closed without an answer" if answer is None \
                else f"answered {answer[:40]!r}"
        if answer != b"":
            return False, f"PLAIN answer {answer!r}"
        return c.api_versions_ok(), "bare token, empty bare answer, then requests served"
    finally:
        c.close()


def v0_scram(port: int, user: str, pw: str) -> Result:
    mech = "sha512"
    c = _Conn(port)
    try:
        if (err := c.handshake("SCRAM-SHA-512", 0)) != 0:
            return False, f"SaslHandshake v0 error {err}"
        bare = f"n={user},r=rawclientnonce"
        c.send_frame(f"n,,{bare}".encode())
        first = c.read_frame()
        if first is None:
            return False, "closed after client-first"
        attrs = dict(a.split("=", 1) for a in first.decode().split(","))
        salted = hashlib.pbkdf2_hmac(mech, pw.encode(), base64.b64decode(attrs["s"]),
                                     int(attrs["i"]))
        client_key = hmac.new(salted, b"Client Key", mech).digest()
        stored = hashlib.new(mech, client_key).digest()
        without = f"c=biws,r={attrs['r']}"
        auth = f"{bare},{first.decode()},{without}".encode()
        proof = bytes(a ^ b for a, b in zip(client_key, hmac.new(stored, auth, mech).digest(),
                                            strict=True))
        c.send_frame(f"{without},p={base64.b64encode(proof).decode()}".encode())
        final = c.read_frame()
        server_key = hmac.new(salted, b"Server Key", mech).digest()
        expected = "v=" + base64.b64encode(hmac.new(server_key, auth, mech).digest()).decode()
        if final is None or final.decode() != expected:
            return False, f"server-final {final!r}"
        return c.api_versions_ok(), "bare SCRAM exchange verified, then requests served"
    finally:
        c.close()


def _initial(token: str) -> bytes:
    return f"n,,\x01auth=Bearer {token}\x01traceId=raw1\x01\x01".encode()


def oauth_lifetime(port: int, token: str, exp_in_s: float) -> Result:
    c = _Conn(port)
    try:
        if (err := c.handshake("OAUTHBEARER", 1)) != 0:
            return False, f"SaslHandshake error {err}"
        resp = c.authenticate(_initial(token), 2)
        if resp is None or resp.error_code != 0:
            return False, f"refused: {resp}"
        ok = 0 < resp.session_lifetime_ms <= exp_in_s * 1000
        return ok and c.api_versions_ok(), \
            f"session_lifetime_ms={resp.session_lifetime_ms} for exp in {exp_in_s:.0f}s"
    finally:
        c.close()


def oauth_refused(port: int, token: str, challenge: str) -> Result:
    c = _Conn(port)
    try:
        if (err := c.handshake("OAUTHBEARER", 1)) != 0:
            return False, f"SaslHandshake error {err}"
        first = c.authenticate(_initial(token), 2)
        if first is None or first.error_code != 0 or bytes(first.auth_bytes) != challenge.encode():
            return False, f"first answer {first}"
        second = c.authenticate(b"\x01", 3)
        if second is None or (second.error_code, second.error_message) != (58, challenge):
            return False, f"after \\x01: {second}"
        time.sleep(0.2)
        closed = c.read_frame() is None
        return closed, f"challenge {challenge}, then error 58 with it, then closed={closed}"
    finally:
        c.close()
