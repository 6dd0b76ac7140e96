"""IncrementalAlterConfigs (key 44), versions 0-1.

- TOPIC resources: operations on the topic's overrides, applied together and checked as a
  whole (Kafka's controller): SET (0) sets a value, DELETE (1) removes the override (back to
  the broker setting or default), APPEND (2) and SUBTRACT (3) add or remove comma-separated
  items of a LIST config such as `cleanup.policy`, starting from the override or else the
  config's default (as Kafka). APPEND/SUBTRACT on a non-list config is INVALID_CONFIG; unknown
  names and bad values are INVALID_CONFIG; a missing topic is UNKNOWN_TOPIC_OR_PARTITION.
  Changes take effect at once on the partition logs (retention, segment size, max message
  size...).
- BROKER resources (name "" for the cluster-wide defaults, or this node's id): the same
  operations on that resource's dynamic broker configs (APPEND/SUBTRACT start from the
  dynamic value or else the setting's default, as Kafka), checked whole, stored and in effect
  at once (`_common.alter_broker_configs`).
- GROUP resources (any group name, as Kafka): SET and DELETE of the group's overrides,
  checked whole with Kafka 4.4's messages (INVALID_CONFIG: unknown name, a value its
  validator refuses, outside the broker's group.*.min/max.* bounds); APPEND and SUBTRACT are
  INVALID_CONFIG for every group config; saved in `group-configs.json` before the answer and
  read by the coordinators at once (`broker/group_configs.py` says which configs act).
- Each resource at most once, each key at most once per resource, null values only with
  DELETE, known operation ids only (INVALID_REQUEST otherwise, as Kafka's broker-side checks).
  BROKER_LOGGER (log levels) and other resource types: INVALID_REQUEST.
- validate_only runs every check and changes nothing.
Authorization (when an authorizer is on): TOPIC / CLUSTER ALTER_CONFIGS per resource
(TOPIC_ / CLUSTER_AUTHORIZATION_FAILED), GROUP ALTER_CONFIGS for a group
(GROUP_AUTHORIZATION_FAILED).
Not implemented: logger levels, client-metrics configs, alter-config policies.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping

import structlog

from odradek.broker.api._auth import Op as AclOp
from odradek.broker.api._auth import config_resource_error
from odradek.broker.api._common import (
    ApiError,
    ResourceType,
    alter_broker_configs,
    apply_topic_configs,
    check_broker_name,
    check_duplicate_keys,
    replace_group_configs,
)
from odradek.broker.cluster import ClusterError
from odradek.broker.context import RequestContext
from odradek.config import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigType, format_value
from odradek.config.broker import CLUSTER_DEFAULT, PER_BROKER
from odradek.config.types import SettingDef
from odradek.wire import ErrorCode
from odradek.wire._generated.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

log = structlog.get_logger("odradek.admin")

Result = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse
Resource = IncrementalAlterConfigsRequest.AlterConfigsResource
Change = IncrementalAlterConfigsRequest.AlterableConfig


class Op(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


def _ops(resource: Resource) -> list[tuple[Change, Op]]:
    out = []
    for c in resource.configs:
        try:
            out.append((c, Op(c.config_operation)))
        except ValueError:
            raise ApiError(ErrorCode.INVALID_REQUEST,
                           f"Unknown operations type {c.config_operation}") from None
    return out


def _list_items(value: str | None) -> list[str]:
    return [part for part in (value or "").split(",") if part]


def updated_overrides(current: dict[str, str], ops: list[tuple[Change, Op]],
                      table: Mapping[str, SettingDef] = TOPIC_CONFIGS) -> dict[str, str | None]:
    """The topic's overrides (or a broker resource's dynamic configs, with the broker
    `table`) after `ops` (Kafka's incrementalAlterConfigResource)."""
    result: dict[str, str | None] = dict(current)
    for change, op in ops:
        key = change.name
        if op is Op.SET:
            result[key] = change.value
        elif op is Op.DELETE:
            result.pop(key, None)
        else:
            definition = table.get(key)
            if definition is None or definition.type is not ConfigType.LIST:
                raise ApiError(ErrorCode.INVALID_CONFIG,
                               f"Can't {op.name} to key {key} because its type is not LIST.")
            base = current.get(key)
            default = getattr(definition, "default", None)
            items = _list_items(base if base is not None else format_value(default))
            for item in (change.value or "").split(","):
                if op is Op.APPEND and item not in items:
                    items.append(item)
                elif op is Op.SUBTRACT and item in items:
                    items.remove(item)
            result[key] = ",".join(items)
    return result


def _alter(ctx: RequestContext, resource: Resource, validate_only: bool) -> None:
    check_duplicate_keys([c.name for c in resource.configs])
    nulls = [c.name for c in resource.configs
             if c.value is None and c.config_operation != Op.DELETE]
    if nulls:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")
    kind, name = resource.resource_type, resource.resource_name
    if kind == ResourceType.BROKER:
        check_broker_name(ctx, name)
        ops = _ops(resource)
        scope = CLUSTER_DEFAULT if not name else PER_BROKER
        new = updated_overrides(ctx.config.dynamic(scope), ops, BROKER_CONFIGS)
        alter_broker_configs(ctx, name, {k: v for k, v in new.items() if v is not None},
                             validate_only)
        if not validate_only:
            log.info("broker configs altered", resource=name or "<default>", configs=new,
                     client=ctx.client_id, ops=[f"{op.name} {c.name}" for c, op in ops])
        return
    if kind == ResourceType.BROKER_LOGGER:
        raise ApiError(ErrorCode.INVALID_REQUEST,
                       "Changing logger levels at run time is not supported by this broker.")
    if kind == ResourceType.GROUP and ctx.group_configs is not None:
        ops = _ops(resource)
        # Kafka 4.4 refuses APPEND/SUBTRACT on every group config, LIST ones included.
        new = updated_overrides(ctx.group_configs.overrides(name), ops, {})
        replace_group_configs(ctx, name, {k: v for k, v in new.items() if v is not None},
                              validate_only)
        return
    if kind != ResourceType.TOPIC:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {kind}")
    ops = _ops(resource)
    topic = ctx.cluster.get(name)
    new = updated_overrides(dict(topic.configs) if topic is not None else {}, ops)
    try:
        apply_topic_configs(ctx, name, new, validate_only)
    except ClusterError as e:
        raise ApiError(e.code, e.message) from None
    if not validate_only:
        log.info("topic configs altered", topic=name, configs=new, client=ctx.client_id,
                 ops=[f"{op.name} {c.name}" for c, op in ops])


async def handle(ctx: RequestContext,
                 request: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
    seen = Counter((r.resource_type, r.resource_name) for r in request.resources)
    results: list[Result] = []
    for resource in request.resources:
        out = Result(resource_type=resource.resource_type, resource_name=resource.resource_name,
                     error_code=ErrorCode.NONE, error_message=None)
        try:
            if seen[(resource.resource_type, resource.resource_name)] > 1:
                raise ApiError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            denied = config_resource_error(ctx, resource.resource_type, resource.resource_name,
                                           AclOp.ALTER_CONFIGS)
            if denied is not None:
                raise ApiError(denied)
            _alter(ctx, resource, request.validate_only)
        except ApiError as e:
            out.error_code, out.error_message = e.code, e.message
        results.append(out)
    return IncrementalAlterConfigsResponse(responses=results)
