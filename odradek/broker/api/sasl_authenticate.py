"""SaslAuthenticate (key 36), versions 0-2.

- After an accepted v1 SaslHandshake: one SASL token of the chosen mechanism (PLAIN,
  SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER with Kafka's unsecured tokens) per request; on
  success the connection's principal becomes `User:<name>` and v1+ carries
  session_lifetime_ms (KIP-368: `connections.max.reauth.ms`, bounded by an OAUTHBEARER
  token's exp; 0 when neither applies).
- OAUTHBEARER's refused token: a success carrying the RFC 7628 error JSON, then, on the
  client's `\x01`, SASL_AUTHENTICATION_FAILED with that JSON, as Kafka answers.
- A failed exchange: SASL_AUTHENTICATION_FAILED with Kafka's message, then the connection
  closes.
- Without an exchange in progress (a listener without SASL, or after authentication):
  ILLEGAL_SASL_STATE, and the connection stays usable, as Kafka's KafkaApis answers.
Not implemented: GSSAPI, OAUTHBEARER's secured (JWKS) validator.
"""

from __future__ import annotations

from odradek.broker.context import RequestContext
from odradek.broker.security.authenticator import SaslSession
from odradek.wire import ErrorCode
from odradek.wire._generated.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)


async def handle(ctx: RequestContext,
                 request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    session = ctx.client.extra.get("sasl")
    if not isinstance(session, SaslSession) or session.state != "handshake":
        return SaslAuthenticateResponse(
            error_code=ErrorCode.ILLEGAL_SASL_STATE,
            error_message="SaslAuthenticate request received after successful authentication",
            auth_bytes=b"", session_lifetime_ms=0)
    out, error, lifetime = session.authenticate(bytes(request.auth_bytes))
    if error is not None:
        return SaslAuthenticateResponse(error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                                        error_message=error, auth_bytes=b"",
                                        session_lifetime_ms=0)
    if session.principal is not None:
        ctx.client.principal = session.principal
    return SaslAuthenticateResponse(error_code=ErrorCode.NONE, error_message=None,
                                    auth_bytes=out, session_lifetime_ms=lifetime)
