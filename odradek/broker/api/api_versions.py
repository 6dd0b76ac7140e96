"""ApiVersions (key 18), versions 0-5.

- The advertised list comes from the handler registry (`registry.HANDLERS`), capped at each
  api's highest stable version: only what really works is advertised.
- An ApiVersions version we do not know gets a v0-shaped UNSUPPORTED_VERSION answer with the
  list (KIP-511), sent by dispatch before the body is decoded; clients then retry at our max.
- v3+: client_software_name/version must match Kafka's pattern, else INVALID_REQUEST with
  an empty api list (as Kafka 4.4 answers; checked before v5's cluster/node check).
- v5 (KIP-1242): a client that names the cluster and node it means to reach (after a
  rebootstrap or a DNS change) is told when it reached another one. cluster_id and node_id
  come together: one without the other (node_id -1 meaning none) is INVALID_REQUEST; a
  cluster id (even "") or node id other than ours is REBOOTSTRAP_REQUIRED. Both answers have
  no api list and no features, and the connection stays open, as Kafka 4.4's.
- v3+ carries the feature levels of `broker/features.py` (KIP-584) as a Kafka 4.4 broker
  does: SupportedFeatures (v3 leaves out ranges whose minimum is 0, KAFKA-17011; v4+ lists
  them all), FinalizedFeaturesEpoch and FinalizedFeatures (metadata.version 33 and
  `transaction.version` at the level the broker setting selects, 2 by default, which makes
  Java 4.x producers use transactions v2), ZkMigrationReady false (KRaft only).
  group.version is not finalized until KIP-848 groups are served.
- The unsupported-version answer (v0 form) carries no features, as Kafka's.
- Not implemented: throttling.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from odradek.broker.context import RequestContext
from odradek.broker.registry import advertised
from odradek.wire import ErrorCode
from odradek.wire._generated.api_versions import ApiVersionsRequest, ApiVersionsResponse

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _api_list(levels: Mapping[str, int] | None = None) -> list[ApiVersionsResponse.ApiVersion]:
    return [ApiVersionsResponse.ApiVersion(api_key=key, min_version=low, max_version=high)
            for key, low, high in advertised(levels)]


def unsupported_version_response() -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=_api_list())


def _with_features(resp: ApiVersionsResponse, ctx: RequestContext) -> ApiVersionsResponse:
    features = ctx.features
    resp.supported_features = [
        ApiVersionsResponse.SupportedFeatureKey(name=name, min_version=rng.min_version,
                                                max_version=rng.max_version)
        for name, rng in features.supported(ctx.api_version)]
    resp.finalized_features_epoch = features.epoch
    resp.finalized_features = [
        ApiVersionsResponse.FinalizedFeatureKey(name=name, min_version_level=level,
                                                max_version_level=level)
        for name, level in features.levels.items()]
    resp.zk_migration_ready = False
    return resp


NO_NODE = -1


def _target_error(ctx: RequestContext, request: ApiVersionsRequest) -> ErrorCode | None:
    """v5: is this the cluster and node the client meant to reach? (KIP-1242)"""
    if request.cluster_id is None and request.node_id == NO_NODE:
        return None
    if request.cluster_id is None or request.node_id == NO_NODE:
        return ErrorCode.INVALID_REQUEST
    if request.cluster_id != ctx.cluster.cluster_id or request.node_id != ctx.node.node_id:
        return ErrorCode.REBOOTSTRAP_REQUIRED
    return None


async def handle(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    if ctx.api_version >= 3:
        name, version = request.client_software_name, request.client_software_version
        if not (_SOFTWARE.fullmatch(name) and _SOFTWARE.fullmatch(version)):
            return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
        ctx.client.software_name, ctx.client.software_version = name, version
    if ctx.api_version >= 5:
        error = _target_error(ctx, request)
        if error is not None:
            return ApiVersionsResponse(error_code=error)
    return _with_features(ApiVersionsResponse(error_code=ErrorCode.NONE,
                                              api_keys=_api_list(ctx.features.levels)), ctx)
