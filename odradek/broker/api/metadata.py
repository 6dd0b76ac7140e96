"""Metadata (key 3), versions 0-13.

- This node is the only broker, the controller, and the leader (epoch 0) and only replica/ISR
  of every partition; the advertised endpoint is that of the listener the client used.
- Topics: v0 empty list = all topics; v1+ null = all, empty = none; v12+ topics may be named
  by id. As Kafka's KafkaApis: once any requested topic carries a (non-zero) id, the request
  is answered by ids alone: each entry's name is ignored (the Java client sends "" beside the
  id), entries without an id are dropped (never auto-created), a repeated id is answered
  once, unknown ids come first (UNKNOWN_TOPIC_ID, null name), then the known topics in request
  order. Topic ids are returned from v10. In v10-11 requests (whose schema allows them) a
  null name or a topic id is refused as Kafka refuses it: every requested topic gets
  INVALID_REQUEST (MetadataRequest.getErrorResponse).
- Auto-creation (`auto.create.topics.enable`, `num.partitions`) when the request allows it
  (always for v0-3): the topic is created synchronously and returned ready, not
  LEADER_NOT_AVAILABLE. Internal topic names and illegal names are never auto-created; the
  error entry of an internal name is flagged is_internal, as Kafka flags it.
- v13: the top-level error_code is NONE (Kafka sets it only to ask a client to
  re-bootstrap, KIP-1102, which one node never needs).
- authorized operations: INT32_MIN unless requested; when requested without an authorizer,
  all operations are reported allowed, also on the error entries of unknown or illegal names
  (not on those of unknown topic ids), as from Kafka; with one, each topic's and the
  cluster's allowed operations (the cluster's are 0 without CLUSTER DESCRIBE, as Kafka's).
- Authorization (when an authorizer is on): listing all topics leaves out those the caller
  may not DESCRIBE; a named one it may not describe is TOPIC_AUTHORIZATION_FAILED (by id:
  with a null name); auto-creation needs CLUSTER or TOPIC CREATE, else
  TOPIC_AUTHORIZATION_FAILED. Not implemented: racks.
- `--brokers N` (docs/cluster.md): every live simulated broker, the controller's id, and
  each partition's leader, leader epoch, replicas, ISR and offline replicas; a partition
  without a leader is LEADER_NOT_AVAILABLE (leader -1).
- A partition whose log dir failed (see storage/manager.py) is answered as Kafka answers a
  partition without a live replica: LEADER_NOT_AVAILABLE, leader -1, this node in
  offline_replicas.
"""

from __future__ import annotations

import uuid

import structlog

from odradek.broker.api._auth import (
    Op,
    Res,
    authorized_operations,
    cluster_allowed,
    topic_allowed,
)
from odradek.broker.cluster import (
    INTERNAL_TOPICS,
    LEADER_EPOCH,
    ClusterError,
    Topic,
    topic_name_error,
)
from odradek.broker.context import RequestContext
from odradek.broker.replication.simulated import SimulatedCluster
from odradek.coordinator.acl.authorizer import CLUSTER_NAME
from odradek.wire import ErrorCode
from odradek.wire._generated.metadata import MetadataRequest, MetadataResponse
from odradek.wire.primitives import ZERO_UUID

log = structlog.get_logger("odradek.metadata")

AUTHORIZED_OPS_NOT_REQUESTED = -(2**31)
# READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (AclOperation bits)
TOPIC_OPS_ALL = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
# CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE:
# what Kafka reports for the cluster without an authorizer (AclEntry.supportedOperations)
CLUSTER_OPS_ALL = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))

Resp = MetadataResponse


def _topic_entry(ctx: RequestContext, topic: Topic, ops: int) -> Resp.MetadataResponseTopic:
    if ctx.replicas is not None:
        return _replicated_entry(ctx.replicas, topic, ops)
    node = ctx.node.node_id
    parts = [Resp.MetadataResponsePartition(
        error_code=ErrorCode.NONE, partition_index=p, leader_id=node, leader_epoch=LEADER_EPOCH,
        replica_nodes=[node], isr_nodes=[node], offline_replicas=[])
        for p in range(topic.partitions)]
    for p in ctx.partitions.offline_partitions(topic.name, topic.partitions):
        # Its only replica is in a failed log dir: no leader, as Kafka's metadata cache
        # answers once the controller has moved leadership off an offline replica.
        part = parts[p]
        part.error_code = ErrorCode.LEADER_NOT_AVAILABLE
        part.leader_id = -1
        part.offline_replicas = [node]
    return Resp.MetadataResponseTopic(error_code=ErrorCode.NONE, name=topic.name,
                                      topic_id=topic.topic_id, is_internal=topic.internal,
                                      partitions=parts, topic_authorized_operations=ops)


def _replicated_entry(sim: SimulatedCluster, topic: Topic, ops: int
                      ) -> Resp.MetadataResponseTopic:
    """`--brokers N`: each partition's leader, epoch, replicas, ISR and offline replicas as
    the controller holds them; no leader is LEADER_NOT_AVAILABLE, as Kafka's metadata cache."""
    live = sim.controller.live
    parts = []
    for p in range(topic.partitions):
        state = sim.state(topic.name, p)
        if state is None:
            parts.append(Resp.MetadataResponsePartition(
                error_code=ErrorCode.LEADER_NOT_AVAILABLE, partition_index=p, leader_id=-1,
                leader_epoch=-1, replica_nodes=[], isr_nodes=[], offline_replicas=[]))
            continue
        parts.append(Resp.MetadataResponsePartition(
            error_code=ErrorCode.NONE if state.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
            partition_index=p, leader_id=state.leader, leader_epoch=state.leader_epoch,
            replica_nodes=list(state.replicas), isr_nodes=list(state.isr),
            offline_replicas=state.offline(live)))
    return Resp.MetadataResponseTopic(error_code=ErrorCode.NONE, name=topic.name,
                                      topic_id=topic.topic_id, is_internal=topic.internal,
                                      partitions=parts, topic_authorized_operations=ops)


def brokers(ctx: RequestContext, host: str, port: int) -> list[tuple[int, str, int]]:
    """(node id, host, port) of every live broker on the client's listener: this node's,
    or with `--brokers N` every simulated broker's."""
    sim = ctx.replicas
    if sim is None:
        return [(ctx.node.node_id, host, port)]
    return [(n, *sim.nodes[n].advertised_endpoint(ctx.client.listener))
            for n in sim.live_brokers()]


def _error_entry(name: str | None, code: ErrorCode, topic_id: uuid.UUID = ZERO_UUID,
                 ops: int = AUTHORIZED_OPS_NOT_REQUESTED) -> Resp.MetadataResponseTopic:
    """As Kafka's: a name is flagged internal by name alone (Topic.isInternal)."""
    return Resp.MetadataResponseTopic(error_code=code, name=name, topic_id=topic_id,
                                      is_internal=name in INTERNAL_TOPICS,
                                      topic_authorized_operations=ops)


def _auto_create(ctx: RequestContext, name: str) -> Topic | ErrorCode:
    if topic_name_error(name):
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    if name in INTERNAL_TOPICS or not ctx.config.get_bool("auto.create.topics.enable"):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    try:
        topic = ctx.cluster.create_topic(name, ctx.config.get_int("num.partitions"), {})
    except ClusterError as e:
        log.warning("auto-create failed", topic=name, error=e.message)
        return e.code
    log.info("topic auto-created", topic=name, partitions=topic.partitions, client=ctx.client_id)
    return topic


def _invalid_request(request: MetadataRequest) -> MetadataResponse:
    """Kafka's answer to a request it throws InvalidRequestException for: no brokers."""
    return MetadataResponse(topics=[
        Resp.MetadataResponseTopic(error_code=ErrorCode.INVALID_REQUEST, name=want.name or "",
                                   topic_id=want.topic_id, is_internal=False, partitions=[])
        for want in request.topics or []])


async def handle(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    version = ctx.api_version
    if version < 12 and any(want.name is None or want.topic_id != ZERO_UUID
                            for want in request.topics or []):
        return _invalid_request(request)
    host, port = ctx.node.advertised_endpoint(ctx.client.listener)
    want_topic_ops = version >= 8 and request.include_topic_authorized_operations
    topic_ops = TOPIC_OPS_ALL if want_topic_ops else AUTHORIZED_OPS_NOT_REQUESTED
    cluster_ops = AUTHORIZED_OPS_NOT_REQUESTED
    if 8 <= version <= 10 and request.include_cluster_authorized_operations:
        # as Kafka: none at all without CLUSTER DESCRIBE
        cluster_ops = (authorized_operations(ctx, Res.CLUSTER, CLUSTER_NAME, CLUSTER_OPS_ALL)
                       if cluster_allowed(ctx, Op.DESCRIBE) else 0)
    allow_create = version < 4 or request.allow_auto_topic_creation
    auth = ctx.authorizer
    if auth is None:
        def entry(t: Topic) -> Resp.MetadataResponseTopic:
            return _topic_entry(ctx, t, topic_ops)
    else:
        def entry(t: Topic) -> Resp.MetadataResponseTopic:
            ops = (authorized_operations(ctx, Res.TOPIC, t.name, TOPIC_OPS_ALL)
                   if want_topic_ops else topic_ops)
            return _topic_entry(ctx, t, ops)
    wanted = request.topics
    topics: list[Resp.MetadataResponseTopic] = []
    ids = list(dict.fromkeys(want.topic_id for want in wanted or [] if want.topic_id != ZERO_UUID))
    if wanted is None or (version == 0 and not wanted):
        # With an authorizer, topics the caller may not DESCRIBE are left out.
        topics = [entry(t) for t in ctx.cluster
                  if auth is None or topic_allowed(ctx, Op.DESCRIBE, t.name)]
    elif ids:
        by_id = {tid: ctx.cluster.by_id.get(tid) for tid in ids}
        topics = [_error_entry(None, ErrorCode.UNKNOWN_TOPIC_ID, tid)
                  for tid, known in by_id.items() if known is None]
        for tid, known in by_id.items():
            if known is None:
                continue
            if auth is not None and not topic_allowed(ctx, Op.DESCRIBE, known.name):
                topics.append(_error_entry(None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, tid))
            else:
                topics.append(entry(known))
    else:
        for want in wanted:
            name = want.name
            if name is None:  # and no id (Kafka fails with UNKNOWN_SERVER_ERROR, an NPE)
                topics.append(_error_entry(None, ErrorCode.UNKNOWN_TOPIC_ID, want.topic_id))
                continue
            if auth is not None and not topic_allowed(ctx, Op.DESCRIBE, name):
                topics.append(_error_entry(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            topic = ctx.cluster.get(name)
            if topic is None:
                if (allow_create and auth is not None
                        and ctx.config.get_bool("auto.create.topics.enable")
                        and name not in INTERNAL_TOPICS and not topic_name_error(name)
                        and not cluster_allowed(ctx, Op.CREATE)
                        and not topic_allowed(ctx, Op.CREATE, name)):
                    # Kafka: auto-creation needs CLUSTER or TOPIC CREATE
                    topics.append(_error_entry(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                    continue
                created = _auto_create(ctx, name) if allow_create else (
                    ErrorCode.INVALID_TOPIC_EXCEPTION if topic_name_error(name)
                    else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                if isinstance(created, ErrorCode):  # Kafka sets the operations here too
                    topics.append(_error_entry(name, created, ops=topic_ops))
                    continue
                topic = created
            topics.append(entry(topic))
    return MetadataResponse(
        brokers=[Resp.MetadataResponseBroker(node_id=n, host=h, port=p)
                 for n, h, p in brokers(ctx, host, port)],
        cluster_id=ctx.cluster.cluster_id,
        controller_id=(ctx.node.node_id if ctx.replicas is None
                       else ctx.replicas.controller.controller_id),
        topics=topics,
        cluster_authorized_operations=cluster_ops,
    )
