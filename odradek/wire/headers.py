"""Request header v0-2 and response header v0-1, chosen per (api key, api version).

Request header layout: api_key int16 | api_version int16 | correlation_id int32 |
  v1+: client_id nullable string (int16 length, never compact) | v2: tagged fields.
Response header layout: correlation_id int32 | v1: tagged fields (one 0 byte when empty).

v2/v1 are used exactly in an api's flexible versions, with two exceptions Kafka makes:
ControlledShutdown v0 uses request header v0, and ApiVersions responses always use header
v0 so a client can read the answer before it knows which versions the broker speaks.
"""

from __future__ import annotations

import struct

from odradek.wire._generated.api_keys import API_SPECS, ApiKey
from odradek.wire._generated.header import RequestHeader
from odradek.wire.exceptions import ProtocolError

_KEY_VERSION = struct.Struct(">hh")
_CORRELATION = struct.Struct(">i")


def is_flexible(api_key: int, api_version: int) -> bool:
    flex = API_SPECS[api_key].flexible_min_version
    return flex is not None and api_version >= flex


def request_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if is_flexible(api_key, api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


def peek_api(frame: memoryview) -> tuple[int, int]:
    """The api key and version of a request frame, read before choosing a header version."""
    if len(frame) < 8:
        raise ProtocolError(f"request of {len(frame)} bytes is shorter than a request header")
    key, version = _KEY_VERSION.unpack_from(frame, 0)
    return int(key), int(version)


def decode_request_header(frame: memoryview) -> tuple[RequestHeader, int]:
    """Decode the header; returns it and the offset where the request body starts.

    An api key this protocol does not define raises ProtocolError (the connection is closed).
    """
    api_key, api_version = peek_api(frame)
    if api_key not in API_SPECS:
        raise ProtocolError(f"unknown api key {api_key}")
    return RequestHeader.decode(frame, request_header_version(api_key, api_version))


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    head = _CORRELATION.pack(correlation_id)
    return head + b"\x00" if header_version >= 1 else head
