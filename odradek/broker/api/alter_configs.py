"""AlterConfigs (key 33), versions 0-2: the legacy whole-set replacement.

- TOPIC resources: the given configs become the topic's whole set of overrides (any override
  not listed is removed), checked as Kafka's controller checks them (INVALID_CONFIG for an
  unknown name or a bad value, UNKNOWN_TOPIC_OR_PARTITION for a missing topic). They take
  effect at once on the partition logs (retention, segment size, max message size...).
- BROKER resources (name "" for the cluster-wide defaults, or this node's id): the given
  configs become that resource's whole set of dynamic broker configs (sources
  DYNAMIC_DEFAULT_BROKER_CONFIG / DYNAMIC_BROKER_CONFIG), stored in `broker-configs.json` and
  in effect at once (`_common.alter_broker_configs`): INVALID_REQUEST for a setting Kafka
  cannot change at run time, INVALID_CONFIG for a bad value.
- Each resource at most once, each key at most once, no null values (INVALID_REQUEST, as
  Kafka's broker-side checks). BROKER_LOGGER and unknown types: INVALID_REQUEST.
- GROUP resources: the given configs become the group's whole set of overrides (checked as
  IncrementalAlterConfigs checks them; any group name).
- validate_only runs every check and changes nothing.
Authorization (when an authorizer is on): TOPIC / CLUSTER ALTER_CONFIGS per resource
(TOPIC_ / CLUSTER_AUTHORIZATION_FAILED); GROUP ALTER_CONFIGS for a group
(GROUP_AUTHORIZATION_FAILED).
Not implemented: group and client-metrics configs, alter-config policies.
"""

from __future__ import annotations

from collections import Counter

import structlog

from odradek.broker.api._auth import Op, config_resource_error
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
from odradek.wire import ErrorCode
from odradek.wire._generated.alter_configs import AlterConfigsRequest, AlterConfigsResponse

log = structlog.get_logger("odradek.admin")

Result = AlterConfigsResponse.AlterConfigsResourceResponse
Resource = AlterConfigsRequest.AlterConfigsResource


def _alter(ctx: RequestContext, resource: Resource, validate_only: bool) -> None:
    names = [c.name for c in resource.configs]
    check_duplicate_keys(names)
    nulls = [c.name for c in resource.configs if c.value is None]
    if nulls:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")
    kind, name = resource.resource_type, resource.resource_name
    if kind == ResourceType.BROKER:
        check_broker_name(ctx, name)
        alter_broker_configs(ctx, name, {c.name: c.value for c in resource.configs
                                         if c.value is not None}, validate_only)
        if not validate_only:
            log.info("broker configs replaced", resource=name or "<default>",
                     configs=sorted(names), client=ctx.client_id)
        return
    if kind == ResourceType.GROUP and ctx.group_configs is not None:
        replace_group_configs(ctx, name, {c.name: c.value for c in resource.configs
                                          if c.value is not None}, validate_only)
        return
    if kind != ResourceType.TOPIC:
        raise ApiError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {kind}")
    configs = {c.name: c.value for c in resource.configs}
    try:
        apply_topic_configs(ctx, name, configs, validate_only)
    except ClusterError as e:
        raise ApiError(e.code, e.message) from None
    if not validate_only:
        log.info("topic configs replaced", topic=name, configs=configs, client=ctx.client_id)


async def handle(ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    seen = Counter((r.resource_type, r.resource_name) for r in request.resources)
    results: list[Result] = []
    for resource in request.resources:
        out = Result(resource_type=resource.resource_type, resource_name=resource.resource_name,
                     error_code=ErrorCode.NONE, error_message=None)
        try:
            if seen[(resource.resource_type, resource.resource_name)] > 1:
                raise ApiError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            denied = config_resource_error(ctx, resource.resource_type, resource.resource_name,
                                           Op.ALTER_CONFIGS)
            if denied is not None:
                raise ApiError(denied)
            _alter(ctx, resource, request.validate_only)
        except ApiError as e:
            out.error_code, out.error_message = e.code, e.message
        results.append(out)
    return AlterConfigsResponse(responses=results)
