"""Helpers for the handler tests: a real Broker on a temp dir, and calls that go through the
codec both ways (the request is encoded and decoded at the version under test before the
handler sees it; the response is encoded and decoded again before the test looks at it)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import anyio

from odradek.broker.broker import Broker
from odradek.broker.connection import IncomingRequest
from odradek.broker.context import ClientInfo
from odradek.broker.dispatch import dispatch
from odradek.broker.registry import HANDLERS
from odradek.config import BrokerConfig
from odradek.wire._generated.header import RequestHeader
from odradek.wire.headers import request_header_version, response_header_version
from odradek.wire.records import Record, build_batch
from odradek.wire.regions import FileRegion
from odradek.wire.registry import api_classes


def open_broker(tmp_path: Path, **settings: str) -> Broker:
    return Broker(BrokerConfig({"log.dirs": str(tmp_path / "data"), **settings}))


# Fetch answers with file regions when the transport sends them (`ClientInfo.zero_copy`);
# the Fetch tests run once each way by setting this.
ZERO_COPY = False


def _bytes(part: Any) -> bytes:
    """A body part's bytes; a file region is read (as a copying transport would) and closed."""
    if isinstance(part, FileRegion):
        assert not part.closed
        data = os.pread(part.fd, part.length, part.offset)
        assert len(data) == part.length
        part.close()
        return data
    return bytes(part)


def _join(parts: list[Any]) -> bytes:
    return b"".join(_bytes(p) for p in parts)


def roundtrip(message: Any, version: int) -> Any:
    data = _join(message.encode(version))
    decoded, end = type(message).decode(data, version)
    assert end == len(data)
    return decoded


def call(broker: Broker, api_key: int, version: int, request: Any,
         *, listener: str = "PLAINTEXT", principal: str = "User:ANONYMOUS") -> Any:
    """Run the registered handler for `api_key` at `version`, through the codec both ways."""

    async def run() -> Any:
        return await acall(broker, api_key, version, request, listener=listener,
                           principal=principal)

    return anyio.run(run)


async def acall(broker: Broker, api_key: int, version: int, request: Any,
                *, listener: str = "PLAINTEXT", principal: str = "User:ANONYMOUS") -> Any:
    """`call` on a running event loop (e.g. a long-polling Fetch beside an append)."""
    entry = HANDLERS[api_key]
    assert entry.min_version <= version <= entry.max_version, (api_key, version)
    request_cls, response_cls = api_classes(api_key)
    assert isinstance(request, request_cls)
    decoded = roundtrip(request, version)
    ctx = broker.context(ClientInfo("127.0.0.1:50000", listener, principal=principal,
                                    zero_copy=ZERO_COPY),
                         IncomingRequest(api_key, version, 7, "test-client", bytearray(), 0))
    handle = importlib.import_module(f"odradek.broker.api.{entry.module}").handle
    response = await handle(ctx, decoded)
    assert isinstance(response, response_cls)
    return roundtrip(response, version)


def produce(broker: Broker, topic: str, partition: int, timestamps: list[int],
            *, epoch: int = 0) -> int:
    """Append one batch with a record per timestamp; returns the batch's first offset."""
    plog = broker.partitions.log(topic, partition)
    assert plog is not None
    base = timestamps[0]
    records = [Record(i, ts - base, b"k", b"v%d" % i, []) for i, ts in enumerate(timestamps)]
    data = bytearray(build_batch(records, base_timestamp=base))
    info = plog.append(memoryview(data), leader_epoch=epoch, now_ms=broker.now_ms())
    return info.first_offset


def dispatched(broker: Broker, client: ClientInfo, api_key: int, version: int, body: Any,
               client_id: str = "app") -> Any:
    """Send `body` through the dispatcher (version checks, feature gates, quotas, faults) as
    the connection would; the decoded response, or None when nothing is sent."""
    header = RequestHeader(request_api_key=api_key, request_api_version=version,
                           correlation_id=3, client_id=client_id)
    head = b"".join(bytes(p) for p in header.encode(request_header_version(api_key, version)))
    frame = bytearray(head + b"".join(bytes(p) for p in body.encode(version)))
    request = IncomingRequest(api_key, version, 3, client_id, frame, len(head))

    async def run() -> Any:
        return await dispatch(broker.context(client, request), request)

    out = anyio.run(run)
    if out is None:
        return None
    data = b"".join(bytes(p) for p in out)[4:]
    pos = 4 if response_header_version(api_key, version) == 0 else 5
    return api_classes(api_key)[1].decode(data, version, pos)[0]
