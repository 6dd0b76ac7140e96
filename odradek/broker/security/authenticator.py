"""SASL on a listener: what each listener enables (from its settings) and the per-connection
state machine the server consults before each request.

Per listener, with Kafka's names and precedence: `listener.name.<listener>.<setting>` over
`<setting>` for `sasl.enabled.mechanisms` and `connections.max.reauth.ms`, and the JAAS
config of a mechanism from `listener.name.<listener>.<mechanism>.sasl.jaas.config` (lower
case names), else `sasl.jaas.config`. PLAIN users are the `user_<name>="<password>"` options
of its PlainLoginModule; SCRAM users are in the credential store; OAUTHBEARER takes the
`unsecuredValidator*` options of its OAuthBearerLoginModule (oauthbearer.py).

A connection on a SASL listener, as Kafka's SaslServerAuthenticator: before authentication
only ApiVersions and SaslHandshake are served, then SaslAuthenticate (after a v1 handshake) or
bare size-prefixed tokens (after a v0 one, `raw_token`); any other request closes the
connection. An unsupported mechanism gets UNSUPPORTED_SASL_MECHANISM with the
enabled list, a failed exchange SASL_AUTHENTICATION_FAILED with Kafka's text; both close the
connection once answered. The session lifetime, min(`connections.max.reauth.ms` when > 0,
an OAUTHBEARER token's exp - now), is sent (SaslAuthenticate v1+) and a request other than
SaslHandshake after it expires closes the connection (KIP-368); re-authentication must keep
the mechanism and the principal.
Not implemented: GSSAPI, OAUTHBEARER's secured (JWKS) validator.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import structlog

from odradek.broker.security import oauthbearer
from odradek.broker.security.jaas import JaasError, single_module
from odradek.broker.security.oauthbearer import (
    OAuthBearerServer,
    OAuthConfigError,
    UnsecuredValidator,
)
from odradek.broker.security.scram import MECHANISMS as SCRAM_MECHANISMS
from odradek.broker.security.scram import SaslFailure, ScramServer
from odradek.broker.security.store import ScramStore
from odradek.wire import ApiKey

log = structlog.get_logger("odradek.security")

SUPPORTED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS, "OAUTHBEARER")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_MODULES = {"PLAIN": _PLAIN_MODULE, **dict.fromkeys(SCRAM_MECHANISMS, _SCRAM_MODULE),
            "OAUTHBEARER": oauthbearer.MODULE}


class SecurityConfigError(ValueError):
    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


def listener_value(settings: Mapping[str, str], listener: str, name: str) -> str | None:
    """`listener.name.<listener>.<name>` if set, else None (the caller falls back)."""
    return settings.get(f"listener.name.{listener.lower()}.{name}")


@dataclass(slots=True)
class ListenerSasl:
    listener: str
    mechanisms: tuple[str, ...]
    plain_users: dict[str, str]
    scram: ScramStore
    reauth_ms: int
    oauth: UnsecuredValidator = field(default_factory=UnsecuredValidator)

    def plain_check(self, token: bytes) -> str:
        """The user name of a valid PLAIN token (authzid NUL user NUL password)."""
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise SaslFailure(_generic("PLAIN"), f"PLAIN token of {len(parts)} parts")
        authzid, user_b, password_b = parts
        try:
            user, password = user_b.decode(), password_b.decode()
            authz = authzid.decode()
        except UnicodeDecodeError:
            raise SaslFailure(_generic("PLAIN"), "PLAIN token not UTF-8") from None
        if not user:
            raise SaslFailure("Authentication failed: username not specified")
        if not password:
            raise SaslFailure("Authentication failed: password not specified")
        expected = self.plain_users.get(user)
        # Compare against something even for unknown users: one comparison, same cost.
        ok = hmac.compare_digest(password.encode(), (expected or "\0" + password).encode())
        if not ok or expected is None:
            raise SaslFailure("Authentication failed: Invalid username or password",
                              f"PLAIN authentication of {user!r} failed")
        if authz and authz != user:
            raise SaslFailure("Authentication failed: Client requested an authorization id "
                              "that is different from username")
        return user


def _generic(mechanism: str, reauth: bool = False) -> str:
    phase = "re-authentication" if reauth else "authentication"
    return (f"Authentication failed during {phase} due to invalid credentials with SASL "
            f"mechanism {mechanism}")


def listener_sasl(listener: str, settings: Mapping[str, str], get: Callable[[str], object],
                  scram: ScramStore) -> ListenerSasl:
    """The SASL setup of one listener; `settings` are the raw (prefixed) settings, `get` reads
    the parsed global ones."""
    raw = listener_value(settings, listener, "sasl.enabled.mechanisms")
    if raw is not None:
        mechanisms = tuple(m.strip().upper() for m in raw.split(",") if m.strip())
    else:
        value = get("sasl.enabled.mechanisms")
        mechanisms = tuple(str(m).upper() for m in value) if isinstance(value, list | tuple) else ()
    key = f"listener.name.{listener.lower()}.sasl.enabled.mechanisms"
    if not mechanisms:
        raise SecurityConfigError(f"listener {listener} enables no SASL mechanism", key)
    for mech in mechanisms:
        if mech not in SUPPORTED_MECHANISMS:
            raise SecurityConfigError(
                f"SASL mechanism {mech} is not supported (supported: "
                f"{', '.join(SUPPORTED_MECHANISMS)})", key)
    plain_users: dict[str, str] = {}
    oauth = UnsecuredValidator()
    for mech in mechanisms:
        jaas_key = f"listener.name.{listener.lower()}.{mech.lower()}.sasl.jaas.config"
        text = settings.get(jaas_key)
        if text is None:
            global_value = get("sasl.jaas.config")
            text = str(global_value) if global_value else None
        if text is None:
            if mech == "PLAIN":
                raise SecurityConfigError(
                    f"listener {listener} enables PLAIN but has no JAAS config with its users",
                    jaas_key)
            continue
        try:
            module = single_module(text)
        except JaasError as e:
            raise SecurityConfigError(str(e), jaas_key) from None
        if module.name != _MODULES[mech]:
            raise SecurityConfigError(
                f"{mech} on listener {listener} needs login module {_MODULES[mech]}, not "
                f"{module.name}", jaas_key)
        if mech == "PLAIN":
            plain_users = {k[5:]: v for k, v in module.options.items() if k.startswith("user_")}
        elif mech == "OAUTHBEARER":
            try:
                oauth = UnsecuredValidator.from_options(module.options)
            except OAuthConfigError as e:
                raise SecurityConfigError(str(e), jaas_key) from None
    reauth_raw = listener_value(settings, listener, "connections.max.reauth.ms")
    reauth = int(reauth_raw) if reauth_raw is not None else int(str(get("connections.max.reauth.ms")))
    return ListenerSasl(listener, mechanisms, plain_users, scram, reauth, oauth)


_PRE_AUTH = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE})


@dataclass(slots=True)
class SaslSession:
    """One connection's authentication state."""

    setup: ListenerSasl
    address: str
    clock: Callable[[], float] = time.monotonic
    wall_ms: Callable[[], int] = lambda: int(time.time() * 1000)  # token exp is wall time
    state: str = "start"  # start -> handshake -> complete (-> handshake again to re-auth)
    mechanism: str | None = None
    principal: str | None = None
    expires_at: float | None = None
    closing: bool = False  # close once the response in flight is sent
    reauthenticating: bool = False
    raw_tokens: bool = False  # after a v0 SaslHandshake: tokens as bare size-prefixed frames
    _scram: ScramServer | None = field(default=None, repr=False)
    _oauth: OAuthBearerServer | None = field(default=None, repr=False)

    def admit(self, api_key: int) -> str | None:
        """None if the request may be served now, else why the connection closes."""
        if self.state == "complete" and not self.reauthenticating:
            if self.expires_at is not None and self.clock() >= self.expires_at \
                    and api_key != ApiKey.SASL_HANDSHAKE:
                return "session expired without re-authentication (connections.max.reauth.ms)"
            return None
        if self.state == "handshake":
            if api_key == ApiKey.SASL_AUTHENTICATE:
                return None
            return f"unexpected request (api {api_key}) during SASL authentication"
        if api_key in _PRE_AUTH:
            return None
        return f"unexpected request (api {api_key}) during SASL handshake"

    def handshake(self, mechanism: str, version: int = 1) -> tuple[bool, tuple[str, ...]]:
        """(accepted, enabled mechanisms). A refusal closes the connection once answered.
        After an accepted v0 handshake the tokens come as bare frames (`raw_token`)."""
        enabled = self.setup.mechanisms
        if self.state == "complete":
            if mechanism != self.mechanism:
                self.closing = True
                log.warning("re-authentication refused", client=self.address,
                            reason="mechanism changed")
                return False, enabled
            self.reauthenticating = True
        if mechanism not in enabled:
            self.closing = True
            log.warning("authentication failed", client=self.address,
                        reason="unsupported SASL mechanism", mechanism=mechanism[:64])
            return False, enabled
        self.mechanism = mechanism
        self.state = "handshake"
        self.raw_tokens = version == 0
        if mechanism in SCRAM_MECHANISMS:
            store = self.setup.scram
            self._scram = ScramServer(mechanism, lambda user: store.lookup(user, mechanism))
        elif mechanism == "OAUTHBEARER":
            self._oauth = OAuthBearerServer(self.setup.oauth, self.wall_ms)
        return True, enabled

    def raw_token(self, token: bytes) -> bytes | None:
        """One bare SASL token after a v0 handshake: the bare token to send back, or None
        when the exchange failed (Kafka closes a v0 connection without an answer)."""
        out, error, _lifetime = self.authenticate(token)
        if error is not None:
            return None
        if self.state == "complete":
            self.raw_tokens = False  # Kafka requests again from here on
        return out

    def authenticate(self, token: bytes) -> tuple[bytes, str | None, int]:
        """(response token, error message or None, session lifetime ms). Errors close the
        connection once answered; success sets `principal`."""
        mechanism = self.mechanism
        assert mechanism is not None
        credential_expiry_ms: int | None = None
        try:
            if mechanism == "PLAIN":
                user = self.setup.plain_check(token)
                out = b""
            elif mechanism == "OAUTHBEARER":
                assert self._oauth is not None
                out = self._oauth.evaluate(token)
                if not self._oauth.complete or self._oauth.token is None:
                    log.info("OAUTHBEARER token refused", client=self.address,
                             reason=self._oauth.reason)
                    return out, None, 0  # the error challenge; the client answers \x01
                user = self._oauth.token.principal
                credential_expiry_ms = self._oauth.token.expires_ms
            else:
                assert self._scram is not None
                out = self._scram.evaluate(token)
                if not self._scram.complete:
                    return out, None, 0
                user = self._scram.username or ""
        except SaslFailure as e:
            self.closing = True
            message = e.client_message
            if self.reauthenticating and message.startswith("Authentication failed during "):
                message = _generic(mechanism, reauth=True)
            log.warning("authentication failed", client=self.address, mechanism=mechanism,
                        reason=str(e))
            return b"", message, 0
        principal = f"User:{user}"
        if self.reauthenticating and principal != self.principal:
            self.closing = True
            log.warning("re-authentication refused", client=self.address,
                        reason="principal changed")
            return b"", "Cannot change principals during re-authentication from " \
                        f"{self.principal}: {principal}", 0
        self.principal = principal
        self.state = "complete"
        self.reauthenticating = False
        self._scram = self._oauth = None
        # KIP-368 as Kafka's authenticator computes it: the credential's expiry (an
        # OAUTHBEARER token's exp) bounds the session even without connections.max.reauth.ms.
        reauth_ms = self.setup.reauth_ms if self.setup.reauth_ms > 0 else None
        if credential_expiry_ms is None and reauth_ms is None:
            lifetime, self.expires_at = 0, None
        else:
            left = None if credential_expiry_ms is None \
                else max(0, credential_expiry_ms - self.wall_ms())
            lifetime = min(x for x in (left, reauth_ms) if x is not None)
            self.expires_at = self.clock() + lifetime / 1000
        log.info("authenticated", client=self.address, principal=principal,
                 mechanism=mechanism, listener=self.setup.listener,
                 handshake="v0" if self.raw_tokens else "v1")
        return out, None, lifetime
