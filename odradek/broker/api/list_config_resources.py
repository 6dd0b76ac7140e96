"""ListConfigResources (key 74), versions 0-1: the config resources that exist, for
kafka-configs.sh --describe --entity-type groups|client-metrics without a name and
kafka-client-metrics.sh --list.

- v0 (ListClientMetricsResources, KIP-714) lists only client-metrics resources.
- v1: the resources of the asked types, of every type when the list is empty: topics (2,
  internal ones included), brokers (4) and broker loggers (8) by node id (every simulated
  broker with `--brokers N`), client-metrics (16), groups (32) that have a config override
  (a group without one is not listed, even if it exists, as Kafka 4.4). Any other type is
  UNSUPPORTED_VERSION with no resources; a type asked twice is listed once. Order: by type as
  listed here, then by name.
- The caller needs CLUSTER DESCRIBE_CONFIGS: else CLUSTER_AUTHORIZATION_FAILED.
Not implemented: client-metrics resources (KIP-714 subscriptions are not served), so that
type is always empty.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, cluster_allowed
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.list_config_resources import (
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
)

Resp = ListConfigResourcesResponse
TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
ALL_TYPES = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)


def _names(ctx: RequestContext, resource_type: int) -> list[str]:
    if resource_type == TOPIC:
        return sorted(t.name for t in ctx.cluster)
    if resource_type in (BROKER, BROKER_LOGGER):
        nodes = [ctx.node.node_id] if ctx.replicas is None else ctx.replicas.ids
        return [str(n) for n in nodes]
    if resource_type == GROUP:
        return ctx.group_configs.configured() if ctx.group_configs is not None else []
    return []  # CLIENT_METRICS: none can be made here


async def handle(ctx: RequestContext,
                 request: ListConfigResourcesRequest) -> ListConfigResourcesResponse:
    if not cluster_allowed(ctx, Op.DESCRIBE_CONFIGS):
        return Resp(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, config_resources=[])
    asked = request.resource_types if ctx.api_version >= 1 else [CLIENT_METRICS]
    if any(t not in ALL_TYPES for t in asked):
        return Resp(error_code=ErrorCode.UNSUPPORTED_VERSION, config_resources=[])
    types = [t for t in ALL_TYPES if t in asked] if asked else list(ALL_TYPES)
    return Resp(error_code=ErrorCode.NONE, config_resources=[
        Resp.ConfigResource(resource_name=name, resource_type=t)
        for t in types for name in _names(ctx, t)])
