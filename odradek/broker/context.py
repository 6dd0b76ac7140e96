"""What a handler sees of the world: the broker's state and the request's origin."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odradek.broker.broker import Broker


@dataclass(slots=True)
class ClientInfo:
    """Per-connection facts (from the socket and from ApiVersions v3+)."""

    address: str
    listener: str
    software_name: str | None = None
    software_version: str | None = None
    extra: dict[str, object] = field(default_factory=dict)


@dataclass(slots=True)
class RequestContext:
    broker: Broker
    client: ClientInfo
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
