"""SaslHandshake (key 17), versions 0-1.

- On a SASL listener before authentication (and to start re-authentication, KIP-368): the
  mechanism is accepted if the listener enables it, else UNSUPPORTED_SASL_MECHANISM with the
  enabled list, and the connection closes once answered (as Kafka's authenticator does).
- After an accepted v1 handshake the tokens come in SaslAuthenticate requests; after a v0
  one (clients before Kafka 1.0) as bare size-prefixed frames, answered the same way, until
  the exchange completes (the server reads them: SaslSession.raw_token); a failed v0
  exchange closes the connection without an answer, as Kafka's authenticator does.
- On a listener without SASL, or after a handshake already accepted: ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from odradek.broker.context import RequestContext
from odradek.broker.security.authenticator import SaslSession
from odradek.wire import ErrorCode
from odradek.wire._generated.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse


async def handle(ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    session = ctx.client.extra.get("sasl")
    if not isinstance(session, SaslSession) or (session.state == "handshake"):
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    accepted, enabled = session.handshake(request.mechanism, ctx.api_version)
    return SaslHandshakeResponse(
        error_code=ErrorCode.NONE if accepted else ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        mechanisms=list(enabled))
