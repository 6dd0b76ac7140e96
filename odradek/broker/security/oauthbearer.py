"""OAUTHBEARER (RFC 7628) with Kafka's default, *unsecured* token validation, sans-IO.

What Kafka's OAuthBearerSaslServer with OAuthBearerUnsecuredValidatorCallbackHandler does:
- The client's initial response is `n,[a=<authzid>],\\x01auth=Bearer <token>\\x01[k=v\\x01...]\\x01`;
  anything else fails with the generic SASL error (the client is told nothing more).
- The token is an unsecured JWS: three dot-separated base64url parts, a header with
  `"alg":"none"`, a JSON claims object and an empty signature. Its principal is the claim
  `sub` (or the JAAS option `unsecuredValidatorPrincipalClaimName`), which must be a string;
  `exp` is required, `iat` optional, both numbers of seconds checked against now with
  `unsecuredValidatorAllowableClockSkewMs`; exp must be after iat; every scope item of
  `unsecuredValidatorRequiredScope` must be in the `scope` claim (or
  `unsecuredValidatorScopeClaimName`), a string or a list.
- A token that fails gets, as Kafka answers, a *successful* SaslAuthenticate carrying the
  RFC 7628 error `{"status":"invalid_token"}` (`insufficient_scope` with the required scope
  for a missing scope); the client answers `\\x01` and then gets SASL_AUTHENTICATION_FAILED
  with that JSON as the message.
- An authzid must equal the principal. Extensions (`k=v`) must match RFC 7628's grammar and
  `auth` is reserved; Kafka's default handler accepts every other extension and does nothing
  with it, so do we.
- The token's `exp` bounds the session (KIP-368): the session lifetime is
  min(connections.max.reauth.ms, exp - now), even when connections.max.reauth.ms is 0.
Not implemented: the secured (JWKS) validator (`sasl.oauthbearer.jwks.endpoint.url`) and
custom `sasl.server.callback.handler.class`es.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from odradek.broker.security.scram import SaslFailure

MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
_SEP = "\x01"
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"  # ASCII but ',' and '='
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7E \t\r\n]+"
_INITIAL = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,{_SEP}(?P<kv>(?:{_KEY}={_VALUE}{_SEP})*){_SEP}",
    re.DOTALL)
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)")
_KEY_RE = re.compile(_KEY)
_VALUE_RE = re.compile(_VALUE)
_B64URL = re.compile(r"[A-Za-z0-9_-]*={0,2}")
_SCOPE_ITEM = re.compile(r"[\x21\x23-\x5B\x5D-\x7E]+")  # RFC 6749 scope-token


def _generic(reauth: bool = False) -> str:
    phase = "re-authentication" if reauth else "authentication"
    return (f"Authentication failed during {phase} due to invalid credentials with SASL "
            "mechanism OAUTHBEARER")


class OAuthConfigError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class UnsecuredValidator:
    """The options of the listener's OAuthBearerLoginModule (`unsecuredValidator*`)."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> UnsecuredValidator:
        def opt(name: str, default: str) -> str:
            v = options.get("unsecuredValidator" + name, "").strip()
            return v or default

        skew_raw = opt("AllowableClockSkewMs", "0")
        try:
            skew = int(skew_raw)
        except ValueError:
            raise OAuthConfigError(f"unsecuredValidatorAllowableClockSkewMs {skew_raw!r} is "
                                   "not an integer") from None
        if skew < 0:
            raise OAuthConfigError("Allowable clock skew millis must not be negative: "
                                   f"{skew_raw}")
        scope: list[str] = []
        for item in opt("RequiredScope", "").split(" "):
            if item and not _SCOPE_ITEM.fullmatch(item):
                raise OAuthConfigError(f"Invalid scope value: {item}")
            if item:
                scope.append(item)
        return cls(opt("PrincipalClaimName", "sub"), opt("ScopeClaimName", "scope"),
                   tuple(scope), skew)


class _Invalid(Exception):
    """A token the validator refuses; `scope` set for a missing required scope."""

    def __init__(self, reason: str, scope: str | None = None) -> None:
        super().__init__(reason)
        self.scope = scope


@dataclass(frozen=True, slots=True)
class Token:
    principal: str
    expires_ms: int  # exp in ms since the epoch
    claims: dict[str, object]


def _b64_json(part: str) -> dict[str, object]:
    # base64url, padding optional, as Kafka decodes it since KAFKA-17089 (4.1): the
    # standard alphabet's '+' and '/' are refused.
    if not _B64URL.fullmatch(part):
        raise _Invalid("malformed Base64 URL encoded value")
    try:
        raw = base64.urlsafe_b64decode(part.rstrip("=") + "=" * (-len(part.rstrip("=")) % 4))
    except (binascii.Error, ValueError):
        raise _Invalid("malformed Base64 URL encoded value") from None
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise _Invalid("malformed JSON") from None
    if not isinstance(value, dict):
        raise _Invalid("malformed JSON")
    out: dict[str, object] = {}
    for k, v in value.items():
        # As Kafka's reader: arrays become lists of their items' text, numbers stay numbers,
        # anything else becomes its text.
        if isinstance(v, list):
            out[k] = [x if isinstance(x, str) else json.dumps(x) for x in v]
        elif (isinstance(v, int | float) and not isinstance(v, bool)) or isinstance(v, str):
            out[k] = v
        else:
            out[k] = "" if v is None else json.dumps(v)
    return out


def _number(claims: Mapping[str, object], name: str) -> float | None:
    v = claims.get(name)
    if v is None:
        return None
    if not isinstance(v, int | float):
        raise _Invalid(f"The '{name}' claim was not of type Number: {type(v).__name__}")
    return float(v)


def validate(token: str, v: UnsecuredValidator, now_ms: int) -> Token:
    """The token's principal and expiry; _Invalid with the reason otherwise."""
    if ".." in token:
        raise _Invalid("Malformed compact serialization contains '..'")
    parts = token.split(".")
    if len(parts) != 3:
        raise _Invalid("Unsecured JWS compact serializations must have 3 dot-separated "
                       "Base64URL-encoded values")
    header = _b64_json(parts[0])
    claims = _b64_json(parts[1])
    if header.get("alg") != "none":
        raise _Invalid("Unsecured JWS must have 'none' for an algorithm")
    if parts[2]:
        raise _Invalid("Unsecured JWS must not contain a digital signature")
    raw_scope = claims.get(v.scope_claim)
    if isinstance(raw_scope, str):
        scope = {raw_scope.strip()} if raw_scope.strip() else set()
    elif isinstance(raw_scope, list):
        scope = {s.strip() for s in raw_scope if isinstance(s, str) and s.strip()}
    elif raw_scope is None:
        scope = set()
    else:
        raise _Invalid(f"The '{v.scope_claim}' claim was not of type List")
    exp = _number(claims, "exp")
    if exp is None:
        raise _Invalid("No expiration time in JWT")
    principal = claims.get(v.principal_claim)
    if principal is not None and not isinstance(principal, str):
        raise _Invalid(f"The '{v.principal_claim}' claim was not of type String")
    if not principal or not principal.strip():
        raise _Invalid(f"No principal name in JWT claim: {v.principal_claim}")
    iat = _number(claims, "iat")
    if iat is not None and 1000 * iat > now_ms + v.clock_skew_ms:
        raise _Invalid("The Issued At value was after the indicated time plus allowable "
                       "clock skew")
    if now_ms - v.clock_skew_ms >= 1000 * exp:
        raise _Invalid("The indicated time minus allowable clock skew was on or after the "
                       "Expiration Time value")
    if iat is not None and exp <= iat:
        raise _Invalid("The Expiration Time time was not after the Issued At time")
    for item in v.required_scope:
        if item not in scope:
            # Kafka sends the required scope as Java prints a list: "[a, b]".
            raise _Invalid(f"The provided scope was missing a required scope ({item})",
                           "[" + ", ".join(v.required_scope) + "]")
    return Token(principal, round(exp * 1000), claims)


def parse_initial_response(data: bytes) -> tuple[str, str, dict[str, str]]:
    """(token, authzid, extensions) of the client's first message; SaslFailure (generic text)
    if it is not one."""
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise SaslFailure(_generic(), "OAUTHBEARER message not UTF-8") from None
    m = _INITIAL.fullmatch(text)
    if m is None:
        raise SaslFailure(_generic(), "Invalid OAUTHBEARER client first message")
    props: dict[str, str] = {}
    for pair in m["kv"].split(_SEP):
        if pair:
            k, _, val = pair.partition("=")
            props[k] = val
    auth = props.pop("auth", None)
    if auth is None:
        raise SaslFailure(_generic(), "OAUTHBEARER client first message: 'auth' not specified")
    am = _AUTH.fullmatch(auth)
    if am is None:
        raise SaslFailure(_generic(), "OAUTHBEARER client first message: invalid 'auth' format")
    if am["scheme"].lower() != "bearer":
        raise SaslFailure(_generic(), "Invalid scheme in OAUTHBEARER client first message")
    for k, val in props.items():  # as Kafka's validateExtensions
        if not _KEY_RE.fullmatch(k) or not _VALUE_RE.fullmatch(val):
            raise SaslFailure(_generic(), "OAUTHBEARER extension does not match RFC 7628")
    return am["token"], m["authzid"] or "", props


class OAuthBearerServer:
    """One exchange. `evaluate` returns the server's message; `complete` and `token` are set
    on success; SaslFailure carries Kafka's client text on failure."""

    __slots__ = ("_clock_ms", "_error", "_validator", "complete", "reason", "token")

    def __init__(self, validator: UnsecuredValidator,
                 clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self._validator = validator
        self._clock_ms = clock_ms
        self._error: str | None = None
        self.complete = False
        self.token: Token | None = None
        self.reason = ""  # why the last token was refused, for the log (never sent)

    def evaluate(self, data: bytes) -> bytes:
        if data == b"\x01" and self._error is not None:
            # The client acknowledged our error challenge: now the exchange fails, with the
            # challenge as the message, as Kafka's server fails it.
            raise SaslFailure(self._error, f"token refused: {self._error}")
        self._error = None
        token_value, authzid, _extensions = parse_initial_response(data)
        try:
            token = validate(token_value, self._validator, self._clock_ms())
        except _Invalid as e:
            if e.scope is not None:
                self._error = f'{{"status":"insufficient_scope", "scope":"{e.scope}"}}'
            else:
                self._error = '{"status":"invalid_token"}'
            self.reason = str(e)
            return self._error.encode()
        if authzid and authzid != token.principal:
            raise SaslFailure(
                f"Authentication failed: Client requested an authorization id ({authzid}) "
                f"that is different from the token's principal name ({token.principal})")
        self.token = token
        self.complete = True
        return b""
