"""ApiVersions (key 18), versions 0-4.

- The advertised list comes from the handler registry (`registry.HANDLERS`), capped at each
  api's highest stable version: only what really works is advertised.
- An ApiVersions version we do not know gets a v0-shaped UNSUPPORTED_VERSION answer with the
  list (KIP-511), sent by dispatch before the body is decoded; clients then retry at our max.
- v3+: client_software_name/version must match Kafka's pattern, else INVALID_REQUEST.
- No supported or finalized features are sent (finalized_features_epoch stays -1 and the
  default-valued tagged fields are left out): clients use the classic group and
  transaction protocols. Not implemented: feature flags (KIP-584), throttling.
"""

from __future__ import annotations

import re

from odradek.broker.context import RequestContext
from odradek.broker.registry import advertised
from odradek.wire import ErrorCode
from odradek.wire._generated.api_versions import ApiVersionsRequest, ApiVersionsResponse

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _api_list() -> list[ApiVersionsResponse.ApiVersion]:
    return [ApiVersionsResponse.ApiVersion(api_key=key, min_version=low, max_version=high)
            for key, low, high in advertised()]


def unsupported_version_response() -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=_api_list())


async def handle(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    if ctx.api_version >= 3:
        name, version = request.client_software_name, request.client_software_version
        if not (_SOFTWARE.fullmatch(name) and _SOFTWARE.fullmatch(version)):
            return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST,
                                       api_keys=_api_list())
        ctx.client.software_name, ctx.client.software_version = name, version
    return ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=_api_list())
