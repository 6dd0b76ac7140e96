"""Handler registry, version checks, and the ApiVersions list built from the registry.

`HANDLERS` is the single source of which apis and versions the broker serves: ApiVersions
advertises exactly these ranges. Handler modules are imported on first use, so start-up does
not pay for apis nobody calls.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from odradek.broker.connection import IncomingRequest, response_frame
from odradek.wire import API_SPECS, ApiKey, ProtocolError
from odradek.wire.headers import response_header_version
from odradek.wire.primitives import Buffer
from odradek.wire.registry import api_classes

if TYPE_CHECKING:
    from odradek.broker.context import RequestContext

Handler = Callable[["RequestContext", Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class HandlerEntry:
    module: str  # odradek.broker.api.<module>, which defines `async def handle(ctx, request)`
    min_version: int
    max_version: int


# Versions below each api's floor need the legacy message format (Produce v0-2, Fetch v0-3)
# or are not implemented yet; the handler modules' docstrings say what each version lacks.
HANDLERS: dict[int, HandlerEntry] = {
    ApiKey.PRODUCE: HandlerEntry("produce", 3, 11),
    ApiKey.FETCH: HandlerEntry("fetch", 4, 17),
    ApiKey.LIST_OFFSETS: HandlerEntry("list_offsets", 0, 10),
    ApiKey.METADATA: HandlerEntry("metadata", 0, 12),
    ApiKey.API_VERSIONS: HandlerEntry("api_versions", 0, 4),
    ApiKey.CREATE_TOPICS: HandlerEntry("create_topics", 0, 7),
    ApiKey.DELETE_TOPICS: HandlerEntry("delete_topics", 0, 6),
    ApiKey.DELETE_RECORDS: HandlerEntry("delete_records", 0, 2),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: HandlerEntry("offset_for_leader_epoch", 0, 4),
    ApiKey.DESCRIBE_ACLS: HandlerEntry("describe_acls", 0, 3),
    ApiKey.CREATE_ACLS: HandlerEntry("create_acls", 0, 3),
    ApiKey.DELETE_ACLS: HandlerEntry("delete_acls", 0, 3),
    ApiKey.DESCRIBE_CONFIGS: HandlerEntry("describe_configs", 0, 4),
    ApiKey.ALTER_CONFIGS: HandlerEntry("alter_configs", 0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: HandlerEntry("describe_log_dirs", 0, 4),
    ApiKey.CREATE_PARTITIONS: HandlerEntry("create_partitions", 0, 3),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: HandlerEntry("incremental_alter_configs", 0, 1),
    ApiKey.DESCRIBE_CLUSTER: HandlerEntry("describe_cluster", 0, 1),
    ApiKey.FIND_COORDINATOR: HandlerEntry("find_coordinator", 0, 6),
    ApiKey.JOIN_GROUP: HandlerEntry("join_group", 0, 9),
    ApiKey.SYNC_GROUP: HandlerEntry("sync_group", 0, 5),
    ApiKey.HEARTBEAT: HandlerEntry("heartbeat", 0, 4),
    ApiKey.LEAVE_GROUP: HandlerEntry("leave_group", 0, 5),
    ApiKey.OFFSET_COMMIT: HandlerEntry("offset_commit", 0, 9),
    ApiKey.OFFSET_FETCH: HandlerEntry("offset_fetch", 0, 9),
    ApiKey.DESCRIBE_GROUPS: HandlerEntry("describe_groups", 0, 5),
    ApiKey.LIST_GROUPS: HandlerEntry("list_groups", 0, 5),
    ApiKey.DELETE_GROUPS: HandlerEntry("delete_groups", 0, 2),
    ApiKey.OFFSET_DELETE: HandlerEntry("offset_delete", 0, 0),
    ApiKey.INIT_PRODUCER_ID: HandlerEntry("init_producer_id", 0, 5),
    # Transactions: the classic protocol only (EndTxn v5 and Produce v12 are KIP-890's).
    ApiKey.ADD_PARTITIONS_TO_TXN: HandlerEntry("add_partitions_to_txn", 0, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: HandlerEntry("add_offsets_to_txn", 0, 4),
    ApiKey.END_TXN: HandlerEntry("end_txn", 0, 4),
    ApiKey.TXN_OFFSET_COMMIT: HandlerEntry("txn_offset_commit", 0, 4),
    ApiKey.DESCRIBE_PRODUCERS: HandlerEntry("describe_producers", 0, 0),
    ApiKey.DESCRIBE_TRANSACTIONS: HandlerEntry("describe_transactions", 0, 0),
    ApiKey.LIST_TRANSACTIONS: HandlerEntry("list_transactions", 0, 1),
}

_loaded: dict[int, Handler] = {}


def available_handlers() -> dict[int, HandlerEntry]:
    """Registered handlers whose module exists (so ApiVersions never advertises a missing one)."""
    out = {}
    for key, entry in HANDLERS.items():
        if importlib.util.find_spec(f"odradek.broker.api.{entry.module}") is not None:
            out[key] = entry
    return out


def handler_for(api_key: int) -> Handler:
    fn = _loaded.get(api_key)
    if fn is None:
        module = importlib.import_module(f"odradek.broker.api.{HANDLERS[api_key].module}")
        fn = module.handle
        _loaded[api_key] = fn
    return fn


def supported_range(api_key: int, handlers: dict[int, HandlerEntry]) -> tuple[int, int] | None:
    entry = handlers.get(api_key)
    if entry is None:
        return None
    spec = API_SPECS[api_key]
    return entry.min_version, min(entry.max_version, spec.max_stable_version)


class CloseConnection(Exception):
    """A protocol violation Kafka answers by closing the connection."""


async def dispatch(ctx: RequestContext, request: IncomingRequest) -> list[Buffer] | None:
    """Decode, check the version, run the handler, encode. None means: send nothing."""
    key, version = request.api_key, request.api_version
    handlers = ctx.broker.handlers
    supported = supported_range(key, handlers)
    if supported is None or not supported[0] <= version <= supported[1]:
        if key == ApiKey.API_VERSIONS:
            # KIP-511: answer an unknown ApiVersions version in v0 form, listing our ranges.
            from odradek.broker.api.api_versions import unsupported_version_response

            return response_frame(request.correlation_id, 0,
                                  unsupported_version_response(handlers).encode(0))
        what = "unsupported api" if supported is None else f"unsupported version {version} of api"
        raise CloseConnection(f"{what} {key} ({API_SPECS[key].name})")
    request_cls, _ = api_classes(key)
    try:
        body, _end = request_cls.decode(request.frame, version, request.body_pos)
    except ProtocolError as e:
        raise CloseConnection(str(e)) from None
    response = await handler_for(key)(ctx, body)
    if response is None:
        return None
    return response_frame(request.correlation_id, response_header_version(key, version),
                          response.encode(version))
