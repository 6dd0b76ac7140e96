"""UpdateFeatures (key 57), versions 0-2: kafka-features.sh upgrade / downgrade.

- The caller needs CLUSTER ALTER: else CLUSTER_AUTHORIZATION_FAILED for the whole request.
- Each update is checked as Kafka 4.4's controller does (`features.plan_update`): the upgrade
  type, a level below 0, an unknown feature, a level outside the supported range, a downgrade
  asked as an upgrade or the reverse, and any metadata.version downgrade (Kafka 4.4 refuses
  every one from its latest level). The first refusal fails the whole request with
  INVALID_UPDATE_VERSION and "The update failed for all features since the following feature
  had an error: ..."; nothing changes. A level 0 (with a downgrade type) removes the feature.
- v0's allow_downgrade is not read: Kafka's controller reads the upgrade type, which v0
  lacks, so every v0 update is an upgrade (a downgrade in v0 is refused, as on Kafka 4.4).
- validate_only (v1+) checks without changing. Changes are stored (features.json) before the
  answer; the next ApiVersions carries the new levels with a larger epoch, and
  transaction.version takes effect for the transactions the coordinator starts next.
- On success v0-1 answer one result per feature (NONE, message "NONE", as Kafka); v2 none.
- A share, streams or consumer-group feature set to 0 keeps its apis advertised; they answer
  UNSUPPORTED_VERSION (dispatch.py), as Kafka 4.4.
Not implemented: eligible.leader.replicas.version (not supported here: "does not support
this feature"); timeout_ms is not needed (the change is local and immediate).
"""

from __future__ import annotations

from odradek.broker.api._auth import Op, cluster_allowed
from odradek.broker.context import RequestContext
from odradek.broker.features import UPGRADE, FeatureUpdate
from odradek.wire import ErrorCode
from odradek.wire._generated.update_features import UpdateFeaturesRequest, UpdateFeaturesResponse

FAILED_FOR_ALL = "The update failed for all features since the following feature had an error: "


async def handle(ctx: RequestContext, request: UpdateFeaturesRequest) -> UpdateFeaturesResponse:
    control = ctx.feature_control
    if control is None or not cluster_allowed(ctx, Op.ALTER):
        return UpdateFeaturesResponse(
            error_code=(ErrorCode.CLUSTER_AUTHORIZATION_FAILED if control is not None
                        else ErrorCode.UNKNOWN_SERVER_ERROR),
            error_message=None, results=[])
    updates = [FeatureUpdate(u.feature, u.max_version_level,
                             UPGRADE if ctx.api_version == 0 else u.upgrade_type)
               for u in request.feature_updates]
    controller = (ctx.node.node_id if ctx.replicas is None
                  else ctx.replicas.controller.controller_id)
    validate_only = ctx.api_version >= 1 and request.validate_only
    error = control.update(updates, controller, validate_only)
    if error is not None:
        return UpdateFeaturesResponse(error_code=ErrorCode.INVALID_UPDATE_VERSION,
                                      error_message=FAILED_FOR_ALL + error, results=[])
    results = ([] if ctx.api_version >= 2 else
               [UpdateFeaturesResponse.UpdatableFeatureResult(
                   feature=u.feature, error_code=ErrorCode.NONE, error_message="NONE")
                for u in request.feature_updates])
    return UpdateFeaturesResponse(error_code=ErrorCode.NONE, error_message=None, results=results)
