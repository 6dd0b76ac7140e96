"""Helpers shared by the admin and offset handlers (not a handler: no entry in HANDLERS).

- Leader epoch fencing as Kafka's Partition.checkCurrentLeaderEpoch does it (the epoch
  lookups themselves live in storage: `PartitionLog.end_offset_for_epoch` and friends).
- Config resource types (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs) and the
  checks every alter handler makes on a resource before touching it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from odradek.broker.cluster import LEADER_EPOCH, ClusterError, topic_name_error
from odradek.broker.context import RequestContext
from odradek.config import ConfigError, validate_topic_configs
from odradek.config.broker import CLUSTER_DEFAULT, PER_BROKER
from odradek.wire import ErrorCode

NO_EPOCH = -1
NO_OFFSET = -1
NO_TIMESTAMP = -1
# Kafka's controller refuses a single operation writing more than this many metadata records;
# we apply it to partitions created by one request so a huge count cannot stall the loop.
MAX_PARTITIONS_PER_REQUEST = 10_000


class ApiError(Exception):
    """An error code plus message for one resource of a request."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


# -- leader epochs ------------------------------------------------------------------------------


def check_current_leader_epoch(requested: int, current: int = LEADER_EPOCH) -> ErrorCode:
    """-1 (not given) always passes; older than ours is fenced, newer is unknown to us."""
    if requested in (NO_EPOCH, current):
        return ErrorCode.NONE
    return ErrorCode.FENCED_LEADER_EPOCH if requested < current else ErrorCode.UNKNOWN_LEADER_EPOCH


def replica_error(ctx: RequestContext, topic: str, partition: int, requested_epoch: int
                  ) -> ErrorCode:
    """`--brokers N` (docs/cluster.md): NOT_LEADER_OR_FOLLOWER unless this broker leads the
    partition, then the current leader epoch check (Kafka's ReplicaManager order)."""
    sim = ctx.replicas
    if sim is None:
        return check_current_leader_epoch(requested_epoch)
    state = sim.state(topic, partition)
    if state is None:
        return ErrorCode.NONE
    if state.leader != ctx.node.node_id:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return check_current_leader_epoch(requested_epoch, state.leader_epoch)


def leader_epoch(ctx: RequestContext, topic: str, partition: int) -> int:
    """The partition's current leader epoch (0 with one broker)."""
    return LEADER_EPOCH if ctx.replicas is None else ctx.replicas.leader_epoch(topic, partition)



# -- config resources ---------------------------------------------------------------------------


class ResourceType(enum.IntEnum):
    """Kafka's ConfigResource.Type ids."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


def check_broker_name(ctx: RequestContext, name: str) -> None:
    """A BROKER resource names this node (or is "" for the cluster-wide defaults)."""
    if not name:
        return
    try:
        node = int(name)
    except ValueError:
        raise ApiError(ErrorCode.INVALID_REQUEST,
                       f"Node id must be an integer, but it is: {name}") from None
    if node != ctx.node.node_id:
        raise ApiError(ErrorCode.INVALID_REQUEST,
                       f"Unexpected broker id, expected {ctx.node.node_id}, but received {name}")


def alter_broker_configs(ctx: RequestContext, name: str, configs: Mapping[str, str],
                         validate_only: bool) -> None:
    """Replace the dynamic configs of a BROKER resource: this node's ("<id>") or the
    cluster-wide defaults (""), checked whole (as Kafka 4.4: INVALID_REQUEST for a setting it
    cannot change at run time or a value its validator refuses; INVALID_CONFIG for a setting
    Odradek does not support or cannot apply while it runs yet, or an unknown name); stored,
    and in effect on the topics' logs at once."""
    scope = CLUSTER_DEFAULT if not name else PER_BROKER
    try:
        ctx.cluster.set_broker_configs(scope, configs, validate_only=validate_only)
    except ClusterError as e:
        raise ApiError(e.code, e.message) from None


def replace_group_configs(ctx: RequestContext, group: str, configs: Mapping[str, str],
                          validate_only: bool) -> None:
    """Replace a GROUP resource's overrides (any group name, existing or not, as Kafka),
    checked whole: INVALID_CONFIG with Kafka's message for an unknown name or a bad value."""
    store = ctx.group_configs
    if store is None:
        raise ApiError(ErrorCode.INVALID_REQUEST, "Group configs are not served here.")
    try:
        if validate_only:
            store.check(configs)
        else:
            store.replace(group, configs)
    except ConfigError as e:
        raise ApiError(ErrorCode.INVALID_CONFIG, e.reason) from None


def check_duplicate_keys(names: list[str]) -> None:
    if len(set(names)) != len(names):
        raise ApiError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")


def apply_topic_configs(ctx: RequestContext, topic: str, new_configs: Mapping[str, str | None],
                        validate_only: bool) -> None:
    """Replace a topic's whole set of overrides, checked as Kafka's controller checks them
    (name, null values, each value, then existence); takes effect on the logs at once."""
    if not topic:
        raise ApiError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
    reason = topic_name_error(topic)
    if reason:
        raise ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
    nulls = [k for k, v in new_configs.items() if v is None]
    if nulls:
        raise ApiError(ErrorCode.INVALID_CONFIG,
                       f"Null value not supported for topic configs: {','.join(nulls)}")
    reason = validate_topic_configs(new_configs, ctx.config)
    if reason:
        raise ApiError(ErrorCode.INVALID_CONFIG, reason)
    if ctx.cluster.get(topic) is None:
        raise ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{topic}' does not exist.")
    clean = {k: v for k, v in new_configs.items() if v is not None}
    ctx.cluster.set_configs(topic, clean, validate_only=validate_only)
