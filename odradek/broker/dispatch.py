"""Dispatch: version check, body decode, the handler, response encode.

The registry (`registry.py`) says which apis and versions are served (`ctx.api_ranges`: an
emulated Kafka release's, `emulation.py`); handler modules are imported on first use. A
request for an api or version not served is a protocol violation (the connection is closed,
as Kafka does), except ApiVersions, which KIP-511 answers in v0 form with the supported list
so the client can retry at a version we know. Fault rules (`fault_rules.py`), when any
exist, are applied to the decoded request before its handler runs (`fault_inject.py`);
metrics (`metrics.py`), when on, count it. While a client quota is set, the handler runs
counted against it (`throttle.py`).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from time import perf_counter_ns
from typing import Any

from odradek.broker.api.api_versions import unsupported_version_response
from odradek.broker.connection import CloseConnection, IncomingRequest, response_frame
from odradek.broker.context import RequestContext
from odradek.broker.registry import FEATURE_GATED, HANDLERS
from odradek.wire import API_SPECS, ApiKey, ProtocolError
from odradek.wire.headers import response_header_version
from odradek.wire.primitives import Buffer
from odradek.wire.registry import api_classes

Handler = Callable[[RequestContext, Any], Awaitable[Any]]

_loaded: dict[int, Handler] = {}


def handler_for(api_key: int) -> Handler:
    """The `handle` function of the api's module (imported once, on first use)."""
    fn = _loaded.get(api_key)
    if fn is None:
        module = importlib.import_module(f"odradek.broker.api.{HANDLERS[api_key].module}")
        fn = _loaded[api_key] = module.handle
    return fn


async def dispatch(ctx: RequestContext, request: IncomingRequest) -> list[Buffer] | None:
    """Decode, check the version, run the handler, encode. None means: send nothing."""
    key, version = request.api_key, request.api_version
    supported = ctx.api_ranges.get(key)  # the registry's, or an emulated release's
    if supported is None or not supported[0] <= version <= supported[1]:
        if key == ApiKey.API_VERSIONS:
            return response_frame(request.correlation_id, 0,
                                  unsupported_version_response(ctx.api_ranges).encode(0))
        what = "unsupported api" if supported is None else f"unsupported version {version} of api"
        name = API_SPECS[key].name if key in API_SPECS else "unknown"
        raise CloseConnection(f"{what} {key} ({name})")
    request_cls, _ = api_classes(key)
    try:
        body, _end = request_cls.decode(request.frame, version, request.body_pos)
    except ProtocolError as e:
        raise CloseConnection(str(e)) from None
    gate = FEATURE_GATED.get(key)
    if gate is not None and ctx.features.level(gate) <= 0:  # set to 0 by UpdateFeatures
        from odradek.broker.feature_gate import disabled_response

        return response_frame(request.correlation_id, response_header_version(key, version),
                              disabled_response(key, body).encode(version))
    if ctx.faults.active:  # fault injection (issue #16): this one check when no rule exists
        from odradek.broker import fault_inject

        faulted = await fault_inject.apply(ctx.faults, ctx, request, body)
        if faulted is not fault_inject.PROCEED:
            return faulted  # type: ignore[return-value]
    quotas = ctx.quotas
    if quotas is not None and quotas.configs.any_enforced:  # client quotas: none set, no cost
        from odradek.broker.throttle import dispatch_counted

        return await dispatch_counted(ctx, request, body, handler_for(key))
    metrics = ctx.metrics
    if metrics is not None:  # `admin.http.metrics`; off: this one check
        started = perf_counter_ns()
        response = await handler_for(key)(ctx, body)
        metrics.record(key, version, body, response, perf_counter_ns() - started)
    else:
        response = await handler_for(key)(ctx, body)
    if response is None:
        return None
    return response_frame(request.correlation_id, response_header_version(key, version),
                          response.encode(version))
