"""DescribeConfigs (key 32), versions 0-4.

- TOPIC resources: every topic config with its effective value (override > broker setting >
  default), source (v1+; `is_default` in v0), read-only false, sensitive flag, type (v3+)
  and, when asked (v1+), synonyms: the override, the broker settings that are set, then the
  default under the broker name that carries it. Unknown topic: UNKNOWN_TOPIC_OR_PARTITION;
  illegal name: INVALID_TOPIC_EXCEPTION.
- BROKER resources: the name must be this node's id (every broker setting, read-only unless
  Kafka can change it at run time) or "" (the cluster-wide dynamic defaults: none exist here,
  so an empty list); any other name is INVALID_REQUEST, as Kafka.
- BROKER_LOGGER: this node's id gives an empty list (no log4j loggers to report); "" or
  another id is INVALID_REQUEST, as Kafka.
- GROUP resources (KIP-848/932/1071 group configs, any group name, existing or not, as
  Kafka): the 21 configs Kafka 4.4 describes, each the group's override (source
  GROUP_CONFIG, 8), else the broker setting it defaults from (its source), else the default;
  synonyms the override then the broker setting at its default (`odradek/config/group.py`).
- Other types (CLIENT_METRICS, unknown ids): INVALID_REQUEST.
- `configuration_keys` null or empty means every config; unknown keys are left out.
- Sensitive values are null. `documentation` (v3+, when asked) is null for settings Odradek
  applies; for those it accepts but does not apply, or that mean nothing for one single-node
  process, it says so (the list is in docs/configuration.md). Kafka's own doc strings are
  not shipped.
Authorization (when an authorizer is on): TOPIC DESCRIBE_CONFIGS for a topic
(TOPIC_AUTHORIZATION_FAILED), CLUSTER DESCRIBE_CONFIGS for a broker or broker logger
(CLUSTER_AUTHORIZATION_FAILED), GROUP DESCRIBE_CONFIGS for a group
(GROUP_AUTHORIZATION_FAILED), per resource.
Not implemented: client-metrics configs.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, config_resource_error
from odradek.broker.api._common import ApiError, ResourceType, check_broker_name
from odradek.broker.cluster import topic_name_error
from odradek.broker.context import RequestContext
from odradek.config import ConfigEntry, describe_topic_config
from odradek.config.group import describe_group_config
from odradek.wire import ErrorCode
from odradek.wire._generated.describe_configs import DescribeConfigsRequest, DescribeConfigsResponse

Resp = DescribeConfigsResponse
Resource = DescribeConfigsRequest.DescribeConfigsResource


def _entries(ctx: RequestContext, resource: Resource, synonyms: bool) -> list[ConfigEntry]:
    kind, name = resource.resource_type, resource.resource_name
    denied = config_resource_error(ctx, kind, name, Op.DESCRIBE_CONFIGS)
    if denied is not None:
        raise ApiError(denied)
    if kind == ResourceType.TOPIC:
        reason = topic_name_error(name)
        if reason:
            raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
        topic = ctx.cluster.get(name)
        if topic is None:
            raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return describe_topic_config(topic.configs, ctx.config, include_synonyms=synonyms)
    if kind == ResourceType.BROKER:
        if not name:
            return []
        try:
            check_broker_name(ctx, name)
        except ApiError:
            raise ApiError(ErrorCode.INVALID_REQUEST,
                           f"Unexpected broker id, expected {ctx.node.node_id} or empty string, "
                           f"but received {name}") from None
        return ctx.config.describe()
    if kind == ResourceType.BROKER_LOGGER:
        if not name:
            raise ApiError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
        check_broker_name(ctx, name)
        return []
    if kind == ResourceType.GROUP and ctx.group_configs is not None:
        return describe_group_config(ctx.group_configs.overrides(name), ctx.config,
                                     include_synonyms=synonyms)
    raise ApiError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {kind}")


def _row(e: ConfigEntry, synonyms: bool, docs: bool) -> Resp.DescribeConfigsResourceResult:
    return Resp.DescribeConfigsResourceResult(
        name=e.name, value=e.value, read_only=e.read_only, is_default=e.is_default,
        config_source=e.source, is_sensitive=e.sensitive, config_type=e.type,
        documentation=e.documentation if docs else None,
        synonyms=[Resp.DescribeConfigsSynonym(name=s.name, value=s.value, source=s.source)
                  for s in e.synonyms] if synonyms else [])


async def handle(ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    synonyms = ctx.api_version >= 1 and request.include_synonyms
    docs = ctx.api_version >= 3 and request.include_documentation
    results: list[Resp.DescribeConfigsResult] = []
    for resource in request.resources:
        out = Resp.DescribeConfigsResult(resource_type=resource.resource_type,
                                         resource_name=resource.resource_name,
                                         error_code=ErrorCode.NONE, error_message=None)
        try:
            entries = _entries(ctx, resource, synonyms)
        except ApiError as e:
            out.error_code, out.error_message = e.code, e.message
            results.append(out)
            continue
        keys = resource.configuration_keys
        if keys:
            wanted = set(keys)
            entries = [e for e in entries if e.name in wanted]
        out.configs = [_row(e, synonyms, docs) for e in entries]
        results.append(out)
    return DescribeConfigsResponse(results=results)
