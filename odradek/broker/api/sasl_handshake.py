"""SaslHandshake (key 17), versions 0-1.

- On a SASL listener before authentication (and to start re-authentication, KIP-368): the
  mechanism is accepted if the listener enables it, else UNSUPPORTED_SASL_MECHANISM with the
  enabled list, and the connection closes once answered (as Kafka's authenticator does).
- v0: after an accepted handshake the client sends its SASL tokens as raw size-prefixed
  frames, without SaslAuthenticate (the server reads them: `RAW_TOKENS`); a failure closes
  the connection, as there is no frame to carry an error. Kafka still serves v0, and
  librdkafka before 2.11.1 enables SASL only when the broker's range includes v0 (it then
  uses v1 with SaslAuthenticate).
- On a listener without SASL, or after a handshake already accepted: ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from odradek.broker.context import RequestContext
from odradek.broker.security.authenticator import SaslSession
from odradek.wire import ErrorCode
from odradek.wire._generated.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse

# ClientInfo.extra key: set after an accepted v0 handshake until the exchange ends.
RAW_TOKENS = "sasl_raw_tokens"


async def handle(ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
    session = ctx.client.extra.get("sasl")
    if not isinstance(session, SaslSession) or (session.state == "handshake"):
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    accepted, enabled = session.handshake(request.mechanism)
    if accepted and ctx.api_version == 0:
        ctx.client.extra[RAW_TOKENS] = True
    return SaslHandshakeResponse(
        error_code=ErrorCode.NONE if accepted else ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        mechanisms=list(enabled))
