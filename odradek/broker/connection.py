"""Sans-IO connection state: bytes in -> requests; a response -> the bytes to send.

A request frame is: size int32 | request header (see odradek.wire.headers) | body. The
header is decoded here; the body is decoded by dispatch once the version is known to be
served. Responses are: size int32 | response header | body parts (record views unjoined).
"""

from __future__ import annotations

from dataclasses import dataclass

from odradek.wire.framing import FrameDecoder, frame_size_prefix
from odradek.wire.headers import decode_request_header, encode_response_header
from odradek.wire.primitives import Buffer


@dataclass(slots=True)
class IncomingRequest:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    frame: bytearray  # the whole payload, writable (produce patches batches in place)
    body_pos: int  # where the body starts in `frame`


class Connection:
    """One client connection's protocol state. Raises ProtocolError on malformed input."""

    __slots__ = ("_frames",)

    def __init__(self, max_frame_size: int) -> None:
        self._frames = FrameDecoder(max_frame_size)

    @property
    def reserved_bytes(self) -> int:
        """Bytes the requests being read and waiting will take (their announced sizes)."""
        return self._frames.reserved_bytes

    @property
    def in_request(self) -> bool:
        """True while a request's size is known but not all of it has arrived."""
        return self._frames.in_frame

    def receive_data(self, data: Buffer) -> None:
        self._frames.feed(data)

    def next_frame(self) -> bytearray | None:
        """The next whole frame's payload, undecoded (a raw SASL token after SaslHandshake v0)."""
        return self._frames.next_frame()

    def next_request(self) -> IncomingRequest | None:
        frame = self._frames.next_frame()
        if frame is None:
            return None
        header, pos = decode_request_header(memoryview(frame))
        return IncomingRequest(header.request_api_key, header.request_api_version,
                               header.correlation_id, header.client_id, frame, pos)


def response_frame(correlation_id: int, header_version: int, body: list[Buffer]) -> list[Buffer]:
    head = encode_response_header(correlation_id, header_version)
    size = len(head) + sum(len(p) for p in body)
    return [frame_size_prefix(size) + head, *body]


class CloseConnection(Exception):
    """A protocol violation (or a failed acks=0 produce) Kafka answers by closing the
    connection; the server logs the reason and closes."""
