"""DescribeCluster (key 60), versions 0-2.

- The cluster id, this node as controller, and this node as the only broker with the
  advertised endpoint of the listener the client connected to (rack null). With
  `--brokers N` (docs/cluster.md): the controller's id and every live simulated broker;
  stopped ones are left out even with include_fenced_brokers (not implemented yet).
- endpoint_type (v1): 1 (brokers) is answered; 2 (controllers) gets MISMATCHED_ENDPOINT_TYPE
  and any other value UNSUPPORTED_ENDPOINT_TYPE, as a Kafka broker answers (this node has no
  separate controller listener). In v0 those cases would be INVALID_REQUEST, but v0 cannot
  carry an endpoint type.
- include_fenced_brokers (v2, KIP-1073) changes nothing: this node is never fenced, so its
  entry has is_fenced false either way.
- cluster_authorized_operations: INT32_MIN unless requested; when requested, those the
  ACLs allow (every cluster operation without an authorizer), or 0 without CLUSTER
  DESCRIBE, as Kafka's AuthHelper computes them. The api itself needs no permission.
Not implemented: racks.
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, Res, authorized_operations, cluster_allowed
from odradek.broker.api.metadata import AUTHORIZED_OPS_NOT_REQUESTED, CLUSTER_OPS_ALL, brokers
from odradek.broker.context import RequestContext
from odradek.coordinator.acl.authorizer import CLUSTER_NAME
from odradek.wire import ErrorCode
from odradek.wire._generated.describe_cluster import DescribeClusterRequest, DescribeClusterResponse

BROKERS = 1
CONTROLLERS = 2


async def handle(ctx: RequestContext, request: DescribeClusterRequest) -> DescribeClusterResponse:
    wanted = request.endpoint_type if ctx.api_version >= 1 else BROKERS
    if wanted != BROKERS:
        v0 = ctx.api_version == 0
        if wanted == CONTROLLERS:
            return DescribeClusterResponse(
                error_code=ErrorCode.INVALID_REQUEST if v0 else ErrorCode.MISMATCHED_ENDPOINT_TYPE,
                error_message="The request was sent to an endpoint of type BROKER, but we "
                              "wanted an endpoint of type CONTROLLER",
                endpoint_type=wanted)
        return DescribeClusterResponse(
            error_code=ErrorCode.INVALID_REQUEST if v0 else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"Unsupported endpoint type {wanted}", endpoint_type=wanted)
    host, port = ctx.node.advertised_endpoint(ctx.client.listener)
    ops = AUTHORIZED_OPS_NOT_REQUESTED
    if request.include_cluster_authorized_operations:
        ops = (authorized_operations(ctx, Res.CLUSTER, CLUSTER_NAME, CLUSTER_OPS_ALL)
               if cluster_allowed(ctx, Op.DESCRIBE) else 0)
    return DescribeClusterResponse(
        error_code=ErrorCode.NONE,
        error_message=None,
        endpoint_type=BROKERS,
        cluster_id=ctx.cluster.cluster_id,
        controller_id=(ctx.node.node_id if ctx.replicas is None
                       else ctx.replicas.controller.controller_id),
        brokers=[DescribeClusterResponse.DescribeClusterBroker(
            broker_id=n, host=h, port=p, rack=None) for n, h, p in brokers(ctx, host, port)],
        cluster_authorized_operations=ops,
    )
