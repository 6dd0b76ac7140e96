"""One blocking connection to one Kafka-compatible broker, on the project's own wire layer.

`BrokerConnection(host, port)` opens a TCP socket, asks ApiVersions (v3, or v0 when the broker
answers UNSUPPORTED_VERSION with its v0-shaped list, as KIP-511 has clients do) and then
`call(request)` sends any generated request at the highest version both sides speak (or at
most `max_version`) and returns the decoded response. Requests on one connection are answered
in order, so one request is in flight at a time: this is a tool's client (the admin CLI, the
test fixtures), not a producer for throughput.

Failures are `ClientError`s with one line of text: `BrokerUnreachable` when the socket cannot
be opened, read or written, `UnsupportedVersion` when no version is common.
"""

from __future__ import annotations

import socket
import struct
from typing import Any, TypeVar

from odradek import __version__
from odradek.wire import ApiKey, ErrorCode, ProtocolError
from odradek.wire._generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from odradek.wire._generated.header import RequestHeader, ResponseHeader
from odradek.wire.framing import SIZE_PREFIX
from odradek.wire.headers import request_header_version, response_header_version

__all__ = [
    "BrokerConnection",
    "BrokerUnreachable",
    "ClientError",
    "KafkaError",
    "UnsupportedVersion",
    "parse_bootstrap",
]

_I32 = struct.Struct(">i")
_MAX_RESPONSE = 1 << 30  # a response larger than this is a broken stream, not an answer

R = TypeVar("R")


class ClientError(Exception):
    """A failure a tool reports as one line (no traceback)."""


class BrokerUnreachable(ClientError):
    """The broker could not be connected to, or the connection broke."""


class UnsupportedVersion(ClientError):
    """The broker and this client have no version of an api in common."""


class KafkaError(ClientError):
    """The broker answered with an error code."""

    def __init__(self, code: int, what: str, message: str | None = None) -> None:
        self.code = code
        name = error_name(code)
        detail = f": {message}" if message else ""
        super().__init__(f"{what}: {name}{detail}")


def error_name(code: int) -> str:
    try:
        return ErrorCode._value2member_map_[code].name
    except KeyError:
        return f"error code {code}"


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    """`host:port[,host:port...]` (IPv6 as `[::1]:9092`) -> addresses; ValueError if malformed."""
    out: list[tuple[str, int]] = []
    for item in bootstrap.split(","):
        item = item.strip()
        if "://" in item:  # PLAINTEXT://host:port, as listeners are written
            item = item.split("://", 1)[1]
        if item.startswith("["):
            host, sep, rest = item[1:].partition("]")
            port_text = rest[1:] if rest.startswith(":") else ""
            if not sep:
                raise ValueError(f"bad address {item!r}: expected [host]:port")
        else:
            host, _, port_text = item.rpartition(":")
        if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError(f"bad address {item!r}: expected host:port")
        out.append((host, int(port_text)))
    if not out:
        raise ValueError("no address given")
    return out


class BrokerConnection:
    """A blocking, in-order connection; `versions` holds the broker's (min, max) per api."""

    def __init__(self, host: str, port: int, *, timeout: float = 10.0,
                 client_id: str = "odradek-cli") -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self._correlation = 0
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise BrokerUnreachable(
                f"cannot connect to {self.address}: {exc.strerror or exc}") from None
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.versions: dict[int, tuple[int, int]] = {}
        try:
            self._negotiate()
        except BaseException:
            self.close()
            raise

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> BrokerConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def set_timeout(self, timeout: float) -> None:
        self._sock.settimeout(timeout)

    # -- requests ------------------------------------------------------------------------------

    def _negotiate(self) -> None:
        request = ApiVersionsRequest(client_software_name="odradek",
                                     client_software_version=__version__)
        frame, pos = self._exchange(ApiKey.API_VERSIONS, 3, request)
        if len(frame) >= pos + 2 and _error_at(frame, pos) == ErrorCode.UNSUPPORTED_VERSION:
            frame, pos = self._exchange(ApiKey.API_VERSIONS, 0, request)
            response, _ = ApiVersionsResponse.decode(frame, 0, pos)
        else:
            response, _ = ApiVersionsResponse.decode(frame, 3, pos)
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(response.error_code, f"ApiVersions from {self.address}")
        self.versions = {a.api_key: (a.min_version, a.max_version) for a in response.api_keys}

    def version_for(self, request_cls: Any, max_version: int | None = None) -> int:
        api_key: int = request_cls.API_KEY
        ours_max: int = request_cls.MAX_VERSION if max_version is None else min(
            max_version, request_cls.MAX_VERSION)
        theirs = self.versions.get(api_key)
        if theirs is None:
            raise UnsupportedVersion(f"{self.address} does not serve {ApiKey(api_key).name}")
        version = min(ours_max, theirs[1])
        if version < max(theirs[0], request_cls.MIN_VERSION):
            raise UnsupportedVersion(
                f"{self.address} serves {ApiKey(api_key).name} v{theirs[0]}-{theirs[1]}, "
                f"this client v{request_cls.MIN_VERSION}-{ours_max}")
        return version

    def call(self, request: Any, response_cls: type[R], *, max_version: int | None = None,
             version: int | None = None) -> tuple[R, int]:
        """Send `request` at the best common version (or `version`); (response, version)."""
        if version is None:
            version = self.version_for(type(request), max_version)
        api_key: int = request.API_KEY
        frame, pos = self._exchange(api_key, version, request)
        try:
            response, _ = response_cls.decode(frame, version, pos)  # type: ignore[attr-defined]
        except ProtocolError as exc:
            raise ClientError(f"undecodable answer from {self.address}: {exc}") from None
        return response, version

    def _exchange(self, api_key: int, version: int, request: Any) -> tuple[memoryview, int]:
        self._correlation += 1
        correlation = self._correlation
        header = RequestHeader(request_api_key=api_key, request_api_version=version,
                               correlation_id=correlation, client_id=self.client_id)
        parts = [*header.encode(request_header_version(api_key, version)),
                 *request.encode(version)]
        payload = b"".join(bytes(p) if not isinstance(p, bytes) else p for p in parts)
        try:
            self._sock.sendall(_I32.pack(len(payload)) + payload)
            size = _I32.unpack(self._recv(SIZE_PREFIX))[0]
            if not 0 <= size <= _MAX_RESPONSE:
                raise BrokerUnreachable(f"{self.address} sent a frame of {size} bytes")
            frame = memoryview(self._recv(size))
        except TimeoutError:
            raise BrokerUnreachable(
                f"{self.address} did not answer {ApiKey(api_key).name} in time") from None
        except OSError as exc:
            raise BrokerUnreachable(
                f"connection to {self.address} failed: {exc.strerror or exc}") from None
        head, pos = ResponseHeader.decode(frame, response_header_version(api_key, version))
        if head.correlation_id != correlation:
            raise ClientError(f"{self.address} answered correlation id {head.correlation_id}, "
                              f"expected {correlation}")
        return frame, pos

    def _recv(self, n: int) -> bytearray:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self._sock.recv_into(view[got:])
            if k == 0:
                raise BrokerUnreachable(f"{self.address} closed the connection")
            got += k
        return buf


def _error_at(frame: memoryview, pos: int) -> int:
    code: int = struct.unpack_from(">h", frame, pos)[0]
    return code
