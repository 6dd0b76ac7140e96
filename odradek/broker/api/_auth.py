"""The one authorization layer handlers call (issue #13).

`ctx.authorizer` is None when authorization is off, so each check costs one attribute test;
hot handlers (Produce, Fetch) test it themselves before calling in.
"""

from __future__ import annotations

from collections.abc import Callable

from odradek.broker.context import RequestContext
from odradek.coordinator.acl.authorizer import (
    CLUSTER_NAME,
    AclOperation,
    ResourceType,
)
from odradek.wire import ErrorCode

Op = AclOperation
Res = ResourceType

AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def host(ctx: RequestContext) -> str:
    """The client's IP, as ACL hosts name it (the address is "ip:port")."""
    return ctx.client.address.rpartition(":")[0] or ctx.client.address


def allowed(ctx: RequestContext, op: AclOperation, resource: ResourceType, name: str) -> bool:
    a = ctx.authorizer
    return a is None or a.authorize(ctx.client.principal, host(ctx), op, resource, name)


def cluster_allowed(ctx: RequestContext, op: AclOperation) -> bool:
    return allowed(ctx, op, ResourceType.CLUSTER, CLUSTER_NAME)


def topic_allowed(ctx: RequestContext, op: AclOperation, topic: str) -> bool:
    return allowed(ctx, op, ResourceType.TOPIC, topic)


def group_allowed(ctx: RequestContext, op: AclOperation, group: str) -> bool:
    return allowed(ctx, op, ResourceType.GROUP, group)


def txn_allowed(ctx: RequestContext, op: AclOperation, transactional_id: str) -> bool:
    return allowed(ctx, op, ResourceType.TRANSACTIONAL_ID, transactional_id)


def describable_topics(ctx: RequestContext) -> Callable[[set[str]], set[str]] | None:
    """The topics of a set this request's principal may DESCRIBE, for the group coordinator to
    filter a regex's topics with when it resolves them later (Kafka keeps the request
    context); None when authorization is off."""
    a = ctx.authorizer
    if a is None:
        return None
    p, h = ctx.client.principal, host(ctx)
    return lambda names: {t for t in names
                          if a.authorize(p, h, AclOperation.DESCRIBE, ResourceType.TOPIC, t)}


def idempotent_write_allowed(ctx: RequestContext) -> bool:
    """CLUSTER IDEMPOTENT_WRITE, or WRITE on some topic (Kafka 2.8+, KIP-679)."""
    a = ctx.authorizer
    if a is None:
        return True
    p, h = ctx.client.principal, host(ctx)
    return (a.authorize(p, h, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME)
            or a.authorize_any(p, h, AclOperation.WRITE, ResourceType.TOPIC))


def authorized_operations(ctx: RequestContext, resource: ResourceType, name: str,
                          default: int) -> int:
    """The bit set to report; `default` (every supported operation) when authorization is off."""
    a = ctx.authorizer
    if a is None:
        return default
    return a.authorized_operations(ctx.client.principal, host(ctx), resource, name)


_CONFIG_TOPIC, _CONFIG_BROKER, _CONFIG_BROKER_LOGGER, _CONFIG_GROUP = 2, 4, 8, 32  # config types


def config_resource_error(ctx: RequestContext, resource_type: int, name: str,
                          op: AclOperation) -> ErrorCode | None:
    """Kafka's check on a configs resource: TOPIC `op` on a topic, CLUSTER `op` on a broker
    or broker logger, GROUP `op` on a group; None when allowed (or another type, left to the
    handler)."""
    if ctx.authorizer is None:
        return None
    if resource_type == _CONFIG_TOPIC:
        return None if topic_allowed(ctx, op, name) else ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if resource_type in (_CONFIG_BROKER, _CONFIG_BROKER_LOGGER):
        return None if cluster_allowed(ctx, op) else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    if resource_type == _CONFIG_GROUP:
        return None if group_allowed(ctx, op, name) else ErrorCode.GROUP_AUTHORIZATION_FAILED
    return None
