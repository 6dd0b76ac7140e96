"""OAUTHBEARER with Kafka's unsecured validator (odradek/broker/security/oauthbearer.py) and
its place in the connection's SASL session."""

from __future__ import annotations

import base64
import json

import pytest

from odradek.broker.security.authenticator import ListenerSasl, SaslSession
from odradek.broker.security.oauthbearer import (
    OAuthBearerServer,
    OAuthConfigError,
    UnsecuredValidator,
    parse_initial_response,
)
from odradek.broker.security.scram import SaslFailure
from odradek.broker.security.store import ScramStore

NOW_MS = 1_700_000_000_000
GENERIC = ("Authentication failed during authentication due to invalid credentials with SASL "
           "mechanism OAUTHBEARER")


def _b64(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def jws(claims: dict[str, object], header: dict[str, object] | None = None, sig: str = "") -> str:
    return f"{_b64(header or {'alg': 'none'})}.{_b64(claims)}.{sig}"


def initial(token: str, authzid: str = "", ext: str = "") -> bytes:
    a = f"a={authzid}" if authzid else ""
    return f"n,{a},\x01auth=Bearer {token}\x01{ext}\x01".encode()


def claims(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {"sub": "alice", "iat": NOW_MS / 1000 - 10,
                               "exp": NOW_MS / 1000 + 3600}
    base.update(kw)
    return {k: v for k, v in base.items() if v is not None}


def server(**opts: str) -> OAuthBearerServer:
    return OAuthBearerServer(UnsecuredValidator.from_options(opts), lambda: NOW_MS)


def test_valid_token_with_extensions_and_authzid() -> None:
    s = server()
    assert s.evaluate(initial(jws(claims()), "alice", "traceId=abc\x01other=x y\x01")) == b""
    assert s.complete and s.token is not None
    assert s.token.principal == "alice" and s.token.expires_ms == NOW_MS + 3_600_000


def test_initial_response_grammar() -> None:
    tok, authz, ext = parse_initial_response(initial("a.b.", "bob", "k=v\x01"))
    assert (tok, authz, ext) == ("a.b.", "bob", {"k": "v"})
    for bad in (b"", b"n,,\x01auth=Bearer a.b.\x01",  # missing final \x01
                b"y,,\x01auth=Bearer a.b.\x01\x01",  # gs2 flag must be n
                b"n,,\x01\x01",  # no auth
                b"n,,\x01auth=Basic a.b.\x01\x01",
                b"n,,\x01auth=Bearer a.b.\x01k1=v\x01\x01",  # key must be letters
                b"n,,\x01auth=Bearer a b\x01\x01", b"\xff"):
        with pytest.raises(SaslFailure) as e:
            parse_initial_response(bad)
        assert e.value.client_message == GENERIC


@pytest.mark.parametrize("token", [
    jws(claims(exp=NOW_MS / 1000 - 1)),  # expired
    jws(claims(exp=None)),  # exp required
    jws(claims(sub=None)),  # no principal
    jws(claims(sub=42)),  # principal not a string
    jws(claims(iat=NOW_MS / 1000 + 60)),  # issued in the future
    jws(claims(iat=NOW_MS / 1000 + 10, exp=NOW_MS / 1000 + 5)),  # exp before iat
    jws(claims(), {"alg": "HS256"}),  # signed tokens are not unsecured
    jws(claims(), sig="c2ln"),
    "abc.def", "a..b", "x.y.", jws(claims()).replace(".", "..", 1),
])
def test_invalid_tokens_get_the_challenge_then_the_failure(token: str) -> None:
    s = server()
    assert s.evaluate(initial(token)) == b'{"status":"invalid_token"}' and not s.complete
    with pytest.raises(SaslFailure) as e:
        s.evaluate(b"\x01")
    assert e.value.client_message == '{"status":"invalid_token"}'


def test_clock_skew_required_scope_and_principal_claim() -> None:
    expired = jws(claims(exp=NOW_MS / 1000 - 1))
    assert server(unsecuredValidatorAllowableClockSkewMs="5000").evaluate(initial(expired)) == b""
    s = server(unsecuredValidatorRequiredScope="read write")
    assert s.evaluate(initial(jws(claims(scope="read")))) == \
        b'{"status":"insufficient_scope", "scope":"[read, write]"}'
    assert server(unsecuredValidatorRequiredScope="read write").evaluate(
        initial(jws(claims(scope=["write", "read"])))) == b""
    s = server(unsecuredValidatorPrincipalClaimName="user")
    assert s.evaluate(initial(jws(claims(user="carol")))) == b""
    assert s.token is not None and s.token.principal == "carol"
    with pytest.raises(OAuthConfigError):
        UnsecuredValidator.from_options({"unsecuredValidatorAllowableClockSkewMs": "-1"})


def test_authzid_must_be_the_principal() -> None:
    with pytest.raises(SaslFailure) as e:
        server().evaluate(initial(jws(claims()), "mallory"))
    assert "(mallory) that is different from the token's principal name (alice)" in \
        e.value.client_message


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("reauth_ms", "lifetime"), [(0, 3_600_000), (60_000, 60_000),
                                                     (7_200_000, 3_600_000)])
def test_session_lifetime_is_bounded_by_the_token(reauth_ms: int, lifetime: int) -> None:
    clock = Clock()
    setup = ListenerSasl("SASL", ("OAUTHBEARER",), {}, ScramStore(None), reauth_ms)
    session = SaslSession(setup, "c", clock=clock, wall_ms=lambda: NOW_MS)
    assert session.handshake("OAUTHBEARER")[0]
    assert session.authenticate(initial(jws(claims()))) == (b"", None, lifetime)
    assert session.principal == "User:alice"
    clock.now += lifetime / 1000 - 0.001
    assert session.admit(3) is None
    clock.now += 0.002
    assert session.admit(3) is not None  # expired: the connection closes


def test_session_refused_token_closes_after_the_ack() -> None:
    setup = ListenerSasl("SASL", ("OAUTHBEARER",), {}, ScramStore(None), 0)
    session = SaslSession(setup, "c", wall_ms=lambda: NOW_MS)
    session.handshake("OAUTHBEARER")
    out, err, _ = session.authenticate(initial(jws(claims(exp=1))))
    assert (out, err, session.closing) == (b'{"status":"invalid_token"}', None, False)
    out, err, _ = session.authenticate(b"\x01")
    assert err == '{"status":"invalid_token"}' and session.closing and session.principal is None


def test_reauthentication_with_a_new_token_renews_the_session() -> None:
    clock = Clock()
    setup = ListenerSasl("SASL", ("OAUTHBEARER",), {}, ScramStore(None), 0)
    session = SaslSession(setup, "c", clock=clock, wall_ms=lambda: NOW_MS)
    session.handshake("OAUTHBEARER")
    assert session.authenticate(initial(jws(claims(exp=NOW_MS / 1000 + 10))))[2] == 10_000
    clock.now += 9
    assert session.handshake("OAUTHBEARER")[0] and session.reauthenticating
    assert session.authenticate(initial(jws(claims(exp=NOW_MS / 1000 + 100))))[2] == 100_000
    clock.now += 50
    assert session.admit(3) is None
    session.handshake("OAUTHBEARER")  # another principal may not take the connection over
    _, err, _ = session.authenticate(initial(jws(claims(sub="mallory"))))
    assert err is not None and "Cannot change principals" in err and session.closing


def test_v0_session_takes_bare_tokens_until_complete() -> None:
    setup = ListenerSasl("SASL", ("OAUTHBEARER",), {}, ScramStore(None), 0)
    session = SaslSession(setup, "c", wall_ms=lambda: NOW_MS)
    session.handshake("OAUTHBEARER", version=0)
    assert session.raw_tokens
    assert session.raw_token(initial(jws(claims(exp=1)))) == b'{"status":"invalid_token"}'
    assert session.raw_tokens and not session.closing
    assert session.raw_token(b"\x01") is None and session.closing
    session = SaslSession(setup, "c", wall_ms=lambda: NOW_MS)
    session.handshake("OAUTHBEARER", version=0)
    assert session.raw_token(initial(jws(claims()))) == b""
    assert not session.raw_tokens and session.principal == "User:alice"


def test_token_parts_are_base64url() -> None:
    """Kafka decodes base64url (KAFKA-17089): '-' and '_' are fine, '+' and '/' are not."""
    c = claims(data=">>>???<<<~~~")
    token = jws(c)
    assert "-" in token or "_" in token
    assert server().evaluate(initial(token)) == b""
    std = base64.b64encode(json.dumps(c).encode()).decode().rstrip("=")
    assert "+" in std or "/" in std
    bad = f"{_b64({'alg': 'none'})}.{std}."
    assert server().evaluate(initial(bad)) == b'{"status":"invalid_token"}'
