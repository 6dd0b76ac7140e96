"""The per-connection SASL state machine and the listener setup (odradek/broker/security)."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.broker.security.authenticator import (
    ListenerSasl,
    SaslSession,
    SecurityConfigError,
    listener_sasl,
)
from odradek.broker.security.scram import make_credential
from odradek.broker.security.store import ScramStore, parse_bootstrap
from odradek.wire import API_SPECS, ApiKey

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
JAAS = f'{PLAIN} required user_alice="alice-pw" user_bob="bob-pw";'


def _setup(reauth_ms: int = 0, mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-512")
           ) -> ListenerSasl:
    store = ScramStore(None)
    store.upsert("carol", "SCRAM-SHA-512", make_credential("SCRAM-SHA-512", "carol-pw"))
    return ListenerSasl("SASL", mechanisms, {"alice": "alice-pw", "bob": "bob-pw"}, store,
                        reauth_ms)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("api", sorted(API_SPECS))
def test_every_api_before_authentication(api: int) -> None:
    """Only ApiVersions and SaslHandshake before the handshake, only SaslAuthenticate after it;
    anything else closes the connection, as Kafka's authenticator does."""
    session = SaslSession(_setup(), "c")
    allowed = api in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE)
    assert (session.admit(api) is None) == allowed
    session.handshake("PLAIN")
    assert (session.admit(api) is None) == (api == ApiKey.SASL_AUTHENTICATE)
    session.authenticate(b"\0alice\0alice-pw")
    assert session.admit(api) is None


def test_plain_success_and_failures() -> None:
    session = SaslSession(_setup(), "c")
    assert session.handshake("PLAIN") == (True, ("PLAIN", "SCRAM-SHA-512"))
    assert session.authenticate(b"\0alice\0alice-pw") == (b"", None, 0)
    assert session.principal == "User:alice" and not session.closing
    cases = {
        b"\0alice\0wrong": "Authentication failed: Invalid username or password",
        b"\0nobody\0alice-pw": "Authentication failed: Invalid username or password",
        b"\0alice\0": "Authentication failed: password not specified",
        b"\0\0pw": "Authentication failed: username not specified",
        b"bob\0alice\0alice-pw": "Authentication failed: Client requested an authorization id "
                                 "that is different from username",
        b"alice-pw": "Authentication failed during authentication due to invalid credentials "
                     "with SASL mechanism PLAIN",
    }
    for token, message in cases.items():
        session = SaslSession(_setup(), "c")
        session.handshake("PLAIN")
        assert session.authenticate(token) == (b"", message, 0)
        assert session.closing and session.principal is None


def test_unsupported_mechanism_lists_the_enabled_ones_and_closes() -> None:
    session = SaslSession(_setup(), "c")
    assert session.handshake("SCRAM-SHA-256") == (False, ("PLAIN", "SCRAM-SHA-512"))
    assert session.closing


def test_reauthentication_deadline_and_rules() -> None:
    clock = Clock()
    session = SaslSession(_setup(reauth_ms=1000), "c", clock=clock)
    session.handshake("PLAIN")
    assert session.authenticate(b"\0alice\0alice-pw")[2] == 1000
    clock.now += 0.999
    assert session.admit(ApiKey.METADATA) is None
    clock.now += 0.002
    assert session.admit(ApiKey.METADATA) is not None  # expired: closes
    assert session.admit(ApiKey.SASL_HANDSHAKE) is None  # but re-authentication may start
    assert session.handshake("PLAIN")[0]
    assert session.admit(ApiKey.SASL_AUTHENTICATE) is None
    assert session.authenticate(b"\0alice\0alice-pw")[1] is None
    assert session.admit(ApiKey.METADATA) is None  # a new lifetime
    # another principal or mechanism on re-authentication is refused
    session.handshake("PLAIN")
    _, error, _ = session.authenticate(b"\0bob\0bob-pw")
    assert error is not None and "Cannot change principals" in error and session.closing
    other = SaslSession(_setup(reauth_ms=1000), "c", clock=clock)
    other.handshake("PLAIN")
    other.authenticate(b"\0alice\0alice-pw")
    assert other.handshake("SCRAM-SHA-512")[0] is False and other.closing


def test_no_lifetime_without_connections_max_reauth_ms() -> None:
    clock = Clock()
    session = SaslSession(_setup(), "c", clock=clock)
    session.handshake("PLAIN")
    assert session.authenticate(b"\0alice\0alice-pw")[2] == 0
    clock.now += 1e9
    assert session.admit(ApiKey.METADATA) is None


def _get(values: dict[str, object]) -> object:
    defaults: dict[str, object] = {"sasl.enabled.mechanisms": ["GSSAPI"],
                                   "sasl.jaas.config": None, "connections.max.reauth.ms": 0}
    return lambda name: values.get(name, defaults[name])


def test_listener_settings_override_the_global_ones() -> None:
    settings = {"listener.name.sasl.sasl.enabled.mechanisms": "plain, SCRAM-SHA-512",
                "listener.name.sasl.plain.sasl.jaas.config": JAAS,
                "listener.name.sasl.connections.max.reauth.ms": "5000"}
    setup = listener_sasl("SASL", settings, _get({}), ScramStore(None))  # type: ignore[arg-type]
    assert setup.mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert setup.plain_users == {"alice": "alice-pw", "bob": "bob-pw"}
    assert setup.reauth_ms == 5000
    glob = listener_sasl("SASL", {}, _get({  # type: ignore[arg-type]
        "sasl.enabled.mechanisms": ["PLAIN"], "sasl.jaas.config": JAAS}), ScramStore(None))
    assert glob.mechanisms == ("PLAIN",) and glob.reauth_ms == 0


@pytest.mark.parametrize("settings,fault", [
    ({}, "GSSAPI is not supported"),  # Kafka's default mechanism
    ({"listener.name.sasl.sasl.enabled.mechanisms": "PLAIN"}, "no JAAS config"),
    ({"listener.name.sasl.sasl.enabled.mechanisms": "PLAIN",
      "listener.name.sasl.plain.sasl.jaas.config": "x.Y required;"}, "needs login module"),
    ({"listener.name.sasl.sasl.enabled.mechanisms": "PLAIN",
      "listener.name.sasl.plain.sasl.jaas.config": f'{PLAIN} required user_a="s3cret"'},
     "must end with"),
])
def test_unusable_listener_settings_refused(settings: dict[str, str], fault: str) -> None:
    with pytest.raises(SecurityConfigError, match=fault) as e:
        listener_sasl("SASL", settings, _get({}), ScramStore(None))  # type: ignore[arg-type]
    assert "s3cret" not in str(e.value)


def test_store_persists_and_bootstrap_never_overrides(tmp_path: Path) -> None:
    path = tmp_path / "scram-credentials.json"
    store = ScramStore(path)
    store.bootstrap(parse_bootstrap("SCRAM-SHA-512=[name=alice,password=one];"
                                    "SCRAM-SHA-256=[name=alice,password=two,iterations=8192]"))
    assert "one" not in path.read_text() and "two" not in path.read_text()
    again = ScramStore(path)
    assert again.credentials == store.credentials
    assert again.lookup("alice", "SCRAM-SHA-256").iterations == 8192  # type: ignore[union-attr]
    before = again.lookup("alice", "SCRAM-SHA-512")
    again.bootstrap(parse_bootstrap("SCRAM-SHA-512=[name=alice,password=changed]"))
    assert ScramStore(path).lookup("alice", "SCRAM-SHA-512") == before
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("text", [
    "SCRAM-SHA-1=[name=a,password=b]", "SCRAM-SHA-512=[name=a]", "SCRAM-SHA-512=[password=b]",
    "SCRAM-SHA-512=name=a,password=b", "SCRAM-SHA-512=[name=a,password=b,iterations=10]",
])
def test_bad_bootstrap_entries(text: str) -> None:
    with pytest.raises(ValueError) as e:
        parse_bootstrap(text)
    assert "password=b" not in str(e.value)
