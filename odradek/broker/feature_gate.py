"""The answer of an api whose feature UpdateFeatures set to 0 (share.version,
streams.version, group.version): Kafka 4.4 keeps advertising it and answers each request
with the api's error response carrying UNSUPPORTED_VERSION (null message); the describe
apis, which have no top-level error, carry it on every group they were asked about.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from odradek.broker.fault_inject import error_response
from odradek.wire import ApiKey, ErrorCode
from odradek.wire.registry import api_classes

# apis whose response has no top-level error code: the request's group ids, per group
_PER_GROUP: dict[int, Callable[[Any], list[str]]] = {
    ApiKey.CONSUMER_GROUP_DESCRIBE: lambda body: list(body.group_ids),
    ApiKey.SHARE_GROUP_DESCRIBE: lambda body: list(body.group_ids),
    ApiKey.STREAMS_GROUP_DESCRIBE: lambda body: list(body.group_ids),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: lambda body: [g.group_id for g in body.groups],
}


def disabled_response(api_key: int, body: Any) -> Any:
    groups = _PER_GROUP.get(api_key)
    if groups is None:
        return error_response(api_key, 0, body, ErrorCode.UNSUPPORTED_VERSION)
    _, response_cls = api_classes(api_key)
    item_cls = next(v for n, v in vars(response_cls).items()
                    if isinstance(v, type) and "group_id" in getattr(v, "__slots__", ()))
    return response_cls(groups=[item_cls(group_id=g, error_code=ErrorCode.UNSUPPORTED_VERSION,
                                         error_message=None) for g in groups(body)])
