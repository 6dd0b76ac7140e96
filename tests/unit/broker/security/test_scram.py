"""SCRAM server exchanges (RFC 5802/7677): the RFC's own vector, then every way a client
message can be wrong."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from odradek.broker.security.scram import (
    SaslFailure,
    ScramCredential,
    ScramServer,
    make_credential,
)

# RFC 7677 section 3.
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CNONCE = "rOprNGfwEbeRWgbNEkqO"
SNONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
FINAL = ("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
         "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
GENERIC = ("Authentication failed during authentication due to invalid credentials with SASL "
           "mechanism SCRAM-SHA-256")


def _server(credential: ScramCredential | None = None, mech: str = "SCRAM-SHA-256") -> ScramServer:
    cred = credential or make_credential(mech, "pencil", 4096, SALT)
    return ScramServer(mech, lambda user: cred if user == "user" else None, nonce=SNONCE)


def test_rfc7677_vector() -> None:
    server = _server()
    first = server.evaluate(f"n,,n=user,r={CNONCE}".encode())
    assert first == f"r={CNONCE}{SNONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode()
    assert server.evaluate(FINAL.encode()) == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.username == "user"


def test_credential_is_kafkas_form_not_the_password() -> None:
    cred = make_credential("SCRAM-SHA-512", "secret", 4096, b"salt")
    salted = hashlib.pbkdf2_hmac("sha512", b"secret", b"salt", 4096)
    client_key = hmac.new(salted, b"Client Key", "sha512").digest()
    assert cred.stored_key == hashlib.sha512(client_key).digest()
    assert cred.server_key == hmac.new(salted, b"Server Key", "sha512").digest()
    assert b"secret" not in cred.stored_key + cred.server_key + cred.salt


def _client_final(password: str, server_first: str, first_bare: str, mech: str = "sha256",
                  nonce: str | None = None, binding: str = "biws") -> bytes:
    attrs = dict(a.split("=", 1) for a in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(mech, password.encode(), base64.b64decode(attrs["s"]),
                                 int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", mech).digest()
    stored = hashlib.new(mech, client_key).digest()
    without = f"c={binding},r={nonce or attrs['r']}"
    auth = f"{first_bare},{server_first},{without}".encode()
    sig = hmac.new(stored, auth, mech).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, sig, strict=True))
    return f"{without},p={base64.b64encode(proof).decode()}".encode()


@pytest.mark.parametrize("mech,digest", [("SCRAM-SHA-256", "sha256"), ("SCRAM-SHA-512", "sha512")])
def test_right_and_wrong_password(mech: str, digest: str) -> None:
    cred = make_credential(mech, "right", 4096)
    for password, ok in (("right", True), ("wrong", False)):
        server = ScramServer(mech, lambda _u: cred)
        bare = "n=user,r=abc"
        first = server.evaluate(f"n,,{bare}".encode()).decode()
        final = _client_final(password, first, bare, digest)
        if ok:
            assert server.evaluate(final).startswith(b"v=")
        else:
            with pytest.raises(SaslFailure) as e:
                server.evaluate(final)
            assert e.value.client_message == GENERIC.replace("SCRAM-SHA-256", mech)


def test_mismatched_nonce_and_channel_binding_fail() -> None:
    for kwargs in ({"nonce": CNONCE + "other"}, {"binding": base64.b64encode(b"y,,").decode()}):
        server = _server()
        bare = f"n=user,r={CNONCE}"
        first = server.evaluate(f"n,,{bare}".encode()).decode()
        with pytest.raises(SaslFailure) as e:
            server.evaluate(_client_final("pencil", first, bare, **kwargs))  # type: ignore[arg-type]
        assert e.value.client_message == GENERIC


def test_replayed_final_message_fails_on_a_new_exchange() -> None:
    """A recorded client-final is bound to the server nonce of its exchange."""
    server = _server()
    server.evaluate(f"n,,n=user,r={CNONCE}".encode())
    assert server.evaluate(FINAL.encode()).startswith(b"v=")
    fresh = ScramServer("SCRAM-SHA-256", lambda _u: make_credential("SCRAM-SHA-256", "pencil",
                                                                   4096, SALT))
    fresh.evaluate(f"n,,n=user,r={CNONCE}".encode())
    with pytest.raises(SaslFailure):
        fresh.evaluate(FINAL.encode())
    with pytest.raises(SaslFailure):  # and nothing is accepted once an exchange is over
        server.evaluate(FINAL.encode())


@pytest.mark.parametrize("first", [
    b"", b"garbage", b"p=tls-unique,,n=user,r=x", b"y,,n=user,r=x", b"n,,r=x,n=user",
    b"n,,n=user", b"n,,n=us=er,r=x", b"n,a=other,n=user,r=x", b"n,,n=user,r=", b"\xff\xfe",
    b"n,,n=user,r=a,b",
])
def test_malformed_client_first(first: bytes) -> None:
    with pytest.raises(SaslFailure) as e:
        _server().evaluate(first)
    assert e.value.client_message == GENERIC


@pytest.mark.parametrize("final", [
    b"", b"c=biws", b"r=x,c=biws,p=AAAA", b"c=biws,r=x,p=!!notbase64", b"c=!!,r=x,p=AAAA",
    b"\xff", FINAL.replace("p=d", "p=e").encode(), FINAL[:-8].encode() + b"AAAAAAA=",
])
def test_malformed_or_wrong_client_final(final: bytes) -> None:
    server = _server()
    server.evaluate(f"n,,n=user,r={CNONCE}".encode())
    with pytest.raises(SaslFailure) as e:
        server.evaluate(final)
    assert e.value.client_message == GENERIC


def test_unknown_user_gets_the_wrong_password_text() -> None:
    """Kafka's answer does not tell an unknown user from a wrong password."""
    with pytest.raises(SaslFailure) as e:
        _server().evaluate(b"n,,n=nobody,r=abc")
    assert e.value.client_message == GENERIC
    assert "nobody" in str(e.value)  # the log line keeps the reason


def test_escaped_user_names() -> None:
    seen: list[str] = []
    server = ScramServer("SCRAM-SHA-256",
                         lambda u: seen.append(u) or make_credential("SCRAM-SHA-256", "p", 4096))
    server.evaluate(b"n,,n=a=2Cb=3Dc,r=abc")
    assert seen == ["a,b=c"]
