"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), the server side, sans-IO.

Credentials are kept as Kafka keeps them: salt, StoredKey, ServerKey and the iteration
count, never the password. `ScramServer` takes the client's two messages and returns the
server's two; any failure raises `SaslFailure` carrying the text Kafka sends the client.
Proofs are compared in constant time, and a wrong proof runs the same computation as a
right one (no early exit), so timing says nothing about the password.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096  # Kafka refuses fewer
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096


class SaslFailure(Exception):
    """An exchange that failed; `client_message` is what the client is told."""

    def __init__(self, client_message: str, detail: str = "") -> None:
        super().__init__(detail or client_message)
        self.client_message = client_message


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(digest: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, digest).digest()


def make_credential(mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS,
                    salt: bytes | None = None) -> ScramCredential:
    digest = MECHANISMS[mechanism]
    salt = salt if salt is not None else os.urandom(32)
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    client_key = _hmac(digest, salted, b"Client Key")
    return ScramCredential(salt, hashlib.new(digest, client_key).digest(),
                           _hmac(digest, salted, b"Server Key"), iterations)


def credential_from_salted(mechanism: str, salted: bytes, salt: bytes,
                           iterations: int) -> ScramCredential:
    """What AlterUserScramCredentials carries (the client salts and hashes the password)."""
    digest = MECHANISMS[mechanism]
    client_key = _hmac(digest, salted, b"Client Key")
    return ScramCredential(salt, hashlib.new(digest, client_key).digest(),
                           _hmac(digest, salted, b"Server Key"), iterations)


def _decode_name(text: str) -> str:
    """RFC 5802 saslname: ',' and '=' travel as '=2C' and '=3D'; any other '=' is invalid."""
    if re.search(r"=(?!2C|3D)", text):
        raise ValueError("bad escape in saslname")
    return text.replace("=2C", ",").replace("=3D", "=")


def _attributes(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError(f"malformed attribute {part[:16]!r}")
        out.append((key, value))
    return out


_PRINTABLE_NONCE = re.compile(r"[\x21-\x2b\x2d-\x7e]+")


class ScramServer:
    """One SCRAM exchange. `lookup(username)` gives the user's credential for this
    mechanism, or None."""

    def __init__(self, mechanism: str, lookup: Callable[[str], ScramCredential | None],
                 nonce: str | None = None) -> None:
        self.mechanism = mechanism
        self._digest = MECHANISMS[mechanism]
        self._lookup = lookup
        self._server_nonce = nonce or base64.b64encode(os.urandom(24)).decode().rstrip("=")
        self._state: Literal["first", "final", "done"] = "first"
        self._generic = ("Authentication failed during authentication due to invalid "
                         f"credentials with SASL mechanism {mechanism}")
        self.username: str | None = None
        self._credential: ScramCredential | None = None
        self._nonce = ""
        self._gs2 = ""
        self._first_bare = ""
        self._server_first = ""

    @property
    def complete(self) -> bool:
        return self._state == "done"

    def evaluate(self, token: bytes) -> bytes:
        if self._state == "first":
            return self._client_first(token)
        if self._state == "final":
            return self._client_final(token)
        raise SaslFailure(self._generic, "SCRAM exchange already complete")

    def _client_first(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
            flag, authzid, bare = text.split(",", 2)
            if flag != "n":  # channel binding is not offered, and clients that want it fail
                raise ValueError("channel binding is not supported")
            attrs = _attributes(bare)
            if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r":
                raise ValueError("client-first-message must start with n= and r=")
            username = _decode_name(attrs[0][1])
            nonce = attrs[1][1]
            if not _PRINTABLE_NONCE.fullmatch(nonce):
                raise ValueError("invalid client nonce")
            if authzid and (not authzid.startswith("a=") or _decode_name(authzid[2:]) != username):
                raise ValueError("authorization id differs from the user name")
        except (UnicodeDecodeError, ValueError) as e:
            self._state = "done"
            raise SaslFailure(self._generic, f"invalid SCRAM client-first-message: {e}") from None
        credential = self._lookup(username)
        if credential is None:
            self._state = "done"
            # Kafka answers an unknown user as a wrong password (its SaslServerAuthenticator
            # keeps the SaslException's text out of the answer): no user enumeration.
            raise SaslFailure(self._generic, f"unknown SCRAM user {username!r}")
        self.username = username
        self._credential = credential
        self._gs2 = f"{flag},{authzid},"
        self._first_bare = bare
        self._nonce = nonce + self._server_nonce
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        self._state = "final"
        return self._server_first.encode()

    def _client_final(self, token: bytes) -> bytes:
        self._state = "done"
        credential = self._credential
        assert credential is not None
        try:
            text = token.decode("utf-8")
            without_proof, sep, proof_b64 = text.rpartition(",p=")
            if not sep:
                raise ValueError("no proof")
            attrs = _attributes(without_proof)
            if len(attrs) < 2 or attrs[0][0] != "c" or attrs[1][0] != "r":
                raise ValueError("client-final-message must start with c= and r=")
            binding = base64.b64decode(attrs[0][1], validate=True)
            proof = base64.b64decode(proof_b64, validate=True)
        except (UnicodeDecodeError, ValueError) as e:
            raise SaslFailure(self._generic, f"invalid SCRAM client-final-message: {e}") from None
        auth_message = f"{self._first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self._digest, credential.stored_key, auth_message)
        # Always the full computation, then one constant-time comparison of everything.
        padded = proof.ljust(len(signature), b"\0")[:len(signature)]
        client_key = bytes(a ^ b for a, b in zip(padded, signature, strict=True))
        computed = hashlib.new(self._digest, client_key).digest()
        ok = hmac.compare_digest(computed, credential.stored_key)
        ok &= hmac.compare_digest(attrs[1][1].encode(), self._nonce.encode())
        ok &= hmac.compare_digest(binding, self._gs2.encode())
        ok &= len(proof) == len(signature)
        if not ok:
            raise SaslFailure(self._generic, "SCRAM proof, nonce or channel binding mismatch")
        server_signature = _hmac(self._digest, credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)
