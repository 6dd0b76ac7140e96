"""Client quotas enforced on requests (issue #13 point 4); the configs are `quotas.py`.

Enforcement, as Kafka's KafkaApis and ClientQuotaManagers do it, runs only while some
producer_byte_rate, consumer_byte_rate or request_percentage quota is set (`active`);
otherwise dispatch pays one attribute test per request. The user is the principal's name
(`ANONYMOUS` on PLAINTEXT), the client id the request header's ("" when null).
- Produce: the request's size (header and body) counts in producer_byte_rate; its handler
  time in request_percentage, except for acks=0.
- Fetch: max_bytes is first capped by the bytes one quota window can carry (Kafka's
  getMaxValueInQuotaWindow: bound * (quota.window.num - 1) * window seconds); the handler
  time counts in request_percentage, the response's size in consumer_byte_rate. A throttled
  fetch is answered without records (no partitions, the session's id) and its size is
  taken back from the rate.
- Every other request: its handler time counts in request_percentage.
- The throttle time is the larger of the byte-rate and request throttles; it goes in the
  response's throttle_time_ms, and the connection reads no further request until it has
  passed (KIP-219: the response is sent at once, the channel muted; Kafka 4.4 does so for
  every version, clients at Produce v6+ / Fetch v8+ also wait on their side).
Handler time is the time the handler's coroutine runs on the event loop (its steps between
suspensions), so a long poll's wait costs nothing, as a Kafka request handler thread is not
held by a parked fetch; response encoding and sending are not counted.
Not implemented: ShareFetch byte quotas, controller_mutation_rate enforcement (stored and
described only), ip connection_creation_rate quotas, `client.quota.callback.class`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Generator
from time import perf_counter_ns
from typing import Any

import structlog

from odradek.broker.connection import IncomingRequest, response_frame
from odradek.broker.context import RequestContext
from odradek.coordinator.quota.configs import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
)
from odradek.coordinator.quota.manager import NANOS_TO_PERCENTAGE
from odradek.wire import ApiKey
from odradek.wire.headers import response_header_version
from odradek.wire.primitives import Buffer
from odradek.wire.regions import FileRegion

log = structlog.get_logger("odradek.quotas")

_INT32_MAX = 2**31 - 1


class _Timed:
    """Awaits a coroutine, adding up the time each of its steps runs (`ns`)."""

    __slots__ = ("_coro", "ns")

    def __init__(self, coro: Any) -> None:
        self._coro = coro
        self.ns = 0

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self._coro
        send: Any = None
        error: BaseException | None = None
        while True:
            started = perf_counter_ns()
            try:
                yielded = coro.send(send) if error is None else coro.throw(error)
            except StopIteration as done:
                return done.value
            finally:
                self.ns += perf_counter_ns() - started
            try:
                send, error = (yield yielded), None
            except BaseException as e:  # cancellation and close go on into the handler
                send, error = None, e


def user_name(principal: str) -> str:
    """A KafkaPrincipal's name ("User:alice" -> "alice")."""
    return principal.partition(":")[2] or principal


async def dispatch_counted(ctx: RequestContext, request: IncomingRequest, body: Any,
                           handler: Callable[[RequestContext, Any], Awaitable[Any]]
                           ) -> list[Buffer] | None:
    """dispatch's tail while a quota is set: run the handler counted, set throttle_time_ms,
    encode, and mute the connection for the throttle time."""
    quotas = ctx.quotas
    assert quotas is not None
    m = quotas.manager
    key, version = request.api_key, request.api_version
    user, client_id = user_name(ctx.client.principal), request.client_id or ""
    request_size = len(request.frame)
    if key == ApiKey.FETCH and m.enabled(CONSUMER_BYTE_RATE):
        cap = m.max_value_in_window(CONSUMER_BYTE_RATE, user, client_id)
        if cap is not None:
            body.max_bytes = min(body.max_bytes, int(min(cap, _INT32_MAX)))
            body.min_bytes = min(body.min_bytes, body.max_bytes)
    timed = _Timed(handler(ctx, body))
    response = await timed
    metrics = ctx.metrics
    if metrics is not None:
        metrics.record(key, version, body, response, timed.ns)
    now = ctx.clock.now_ms()
    request_throttle = 0
    if m.enabled(REQUEST_PERCENTAGE) and not (key == ApiKey.PRODUCE and body.acks == 0):
        request_throttle = m.record(REQUEST_PERCENTAGE, user, client_id,
                                    timed.ns * NANOS_TO_PERCENTAGE, now)
    bandwidth_throttle = 0
    parts: list[Buffer] | None = None
    if key == ApiKey.PRODUCE and m.enabled(PRODUCER_BYTE_RATE):
        bandwidth_throttle = m.record(PRODUCER_BYTE_RATE, user, client_id, request_size, now)
    elif key == ApiKey.FETCH and response is not None:
        size = 0
        if m.enabled(CONSUMER_BYTE_RATE):
            parts = response.encode(version)
            size = 4 + sum(len(p) for p in parts)  # Kafka's FetchResponse.sizeOf
            bandwidth_throttle = m.record(CONSUMER_BYTE_RATE, user, client_id, size, now)
        if max(bandwidth_throttle, request_throttle) > 0:
            # Kafka answers a throttled fetch without records, by either quota
            if size:
                m.unrecord(CONSUMER_BYTE_RATE, user, client_id, size, now)
            for p in parts if parts is not None else response.encode(version):
                if isinstance(p, FileRegion):
                    p.close()  # the segment descriptors the records would have been sent from
            parts = None
            response = type(response)(error_code=0, session_id=response.session_id)
    throttle = max(bandwidth_throttle, request_throttle)
    if throttle > 0:
        ctx.client.throttled_until = time.monotonic() + throttle / 1000
        log.debug("throttled", client=ctx.client.address, user=user, client_id=client_id,
                  api_key=key, throttle_ms=throttle)
    if response is None:
        return None
    if parts is None:
        if throttle > 0 and hasattr(response, "throttle_time_ms"):
            response.throttle_time_ms = throttle
        parts = response.encode(version)
    return response_frame(request.correlation_id, response_header_version(key, version), parts)
