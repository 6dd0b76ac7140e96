"""CreateTopics (key 19), versions 0-7.

- As in Kafka, the answer comes once the topic is durable in the metadata (topics.json
  written and fsynced, once per request): Metadata lists it from then on; its partition
  logs are made after the answer (`broker/pending_logs.py`), and any request for a partition
  whose log is not made yet makes it first, so a Produce right after the answer works.
  `timeout_ms` is therefore ignored.
- Checks per topic, in Kafka's order: a name given twice in the request or the name
  `__cluster_metadata` (INVALID_REQUEST; one result per name), illegal or colliding names
  (INVALID_TOPIC_EXCEPTION), existing topics (TOPIC_ALREADY_EXISTS), null or invalid configs
  (INVALID_CONFIG), then partitions and replication.
- num_partitions -1 takes `num.partitions`; replication_factor -1 takes
  `default.replication.factor`. With one broker only a factor of 1 can be met; more is
  INVALID_REPLICATION_FACTOR with Kafka's replica placer message. With `--brokers N`
  (docs/cluster.md) up to the number of live brokers, placed as `replication/controller.py`
  says; manual assignments are still checked against this node alone (not implemented).
- Manual assignments (num_partitions and replication_factor must then be -1): partitions
  0..n-1, each with exactly this node as replica; anything else is INVALID_REPLICA_ASSIGNMENT
  or INVALID_REQUEST, as Kafka words them.
- validate_only (v1+) runs every check and creates nothing; the result carries a random topic
  id that never exists, as Kafka's.
- v5+ results carry the partition count, replication factor 1 and every effective topic
  config (value, read-only, source, sensitive); v7+ the topic id.
- More than 10,000 new partitions in one request are refused with POLICY_VIOLATION (Kafka's
  controller refuses such an oversized batch too).
- Large requests do not stall other clients: checks, log creation and answers yield to the
  event loop every few hundred items, and topics.json is written once per request. The
  topics of one request become visible together; admin requests that change topics run one
  at a time. When topics.json cannot be written (e.g. a full disk) every topic of the request
  is answered KAFKA_STORAGE_ERROR and none is created. A log that cannot be made later (e.g.
  out of file descriptors) is retried; until then its partition is answered as unknown.
Not implemented: create-topic policies, controller mutation quotas (throttle_time_ms 0),
authorization.
"""

from __future__ import annotations

import uuid
from collections import Counter

import anyio.lowlevel
import structlog

from odradek.broker.api._auth import Op, cluster_allowed, topic_allowed
from odradek.broker.api._common import MAX_PARTITIONS_PER_REQUEST, ApiError
from odradek.broker.cluster import ClusterError, NewTopic
from odradek.broker.context import RequestContext
from odradek.broker.storage.errors import error_code_for
from odradek.config import describe_topic_config
from odradek.wire import ErrorCode
from odradek.wire._generated.create_topics import CreateTopicsRequest, CreateTopicsResponse

log = structlog.get_logger("odradek.admin")

Resp = CreateTopicsResponse
CLUSTER_METADATA_TOPIC = "__cluster_metadata"  # KRaft's metadata log: Kafka refuses the name
Topic = CreateTopicsRequest.CreatableTopic
# Checking and answering topics yields to the event loop this often (creating the logs
# yields every `cluster.YIELD_EVERY` partitions).
YIELD_EVERY_TOPICS = 100


def _partition_count(ctx: RequestContext, topic: Topic) -> int:
    """The number of partitions to create; raises ApiError when the layout is refused."""
    node = ctx.node.node_id
    if topic.assignments:
        if topic.replication_factor != -1:
            raise ApiError(ErrorCode.INVALID_REQUEST,
                           "A manual partition assignment was specified, but replication "
                           "factor was not set to -1.")
        if topic.num_partitions != -1:
            raise ApiError(ErrorCode.INVALID_REQUEST,
                           "A manual partition assignment was specified, but numPartitions "
                           "was not set to -1.")
        seen: set[int] = set()
        for a in topic.assignments:
            if a.partition_index in seen:
                raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                               "Found multiple manual partition assignments for partition "
                               f"{a.partition_index}")
            seen.add(a.partition_index)
            _check_replicas(a.broker_ids, node)
        if seen != set(range(len(seen))):
            raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           "partitions should be a consecutive 0-based integer sequence")
        return len(seen)
    rf = topic.replication_factor
    if rf < -1 or rf == 0:
        raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR,
                       "Replication factor must be larger than 0, or -1 to use the default value.")
    if topic.num_partitions < -1 or topic.num_partitions == 0:
        raise ApiError(ErrorCode.INVALID_PARTITIONS,
                       "Number of partitions was set to an invalid non-positive value.")
    if rf == -1:
        rf = ctx.config.get_int("default.replication.factor")
    if ctx.replicas is not None:  # --brokers N (docs/cluster.md)
        refused = ctx.replicas.check_replication(rf)
        if refused is not None:
            raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR, refused)
        ctx.replicas.expect_replication(topic.name, rf)
    elif rf > 1:
        raise ApiError(ErrorCode.INVALID_REPLICATION_FACTOR,
                       f"Unable to replicate the partition {rf} time(s): The target replication "
                       f"factor of {rf} cannot be reached because only 1 broker(s) are registered.")
    if topic.num_partitions == -1:
        return ctx.config.get_int("num.partitions")
    return topic.num_partitions


def _check_replicas(broker_ids: list[int], node: int) -> None:
    """Kafka's validateManualPartitionAssignment, with one registered broker: this node."""
    if not broker_ids:
        raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                       "The manual partition assignment includes an empty replica list.")
    for b in sorted(broker_ids):
        if b != node:
            raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                           f"The manual partition assignment includes broker {b}, but no such "
                           "broker is registered.")
    if len(broker_ids) > 1:
        raise ApiError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                       f"The manual partition assignment includes the broker {node} more than "
                       "once.")


def _config_entries(ctx: RequestContext, configs: dict[str, str]) -> list[Resp.CreatableTopicConfigs]:
    return [Resp.CreatableTopicConfigs(name=e.name, value=e.value, read_only=e.read_only,
                                       config_source=e.source, is_sensitive=e.sensitive)
            for e in describe_topic_config(configs, ctx.config, include_synonyms=False)]


def _check_one(ctx: RequestContext, topic: Topic, budget: int) -> NewTopic:
    """Every check CreateTopics makes on one topic; raises ApiError when it is refused."""
    cluster = ctx.cluster
    name = topic.name
    nulls = [c.name for c in topic.configs if c.value is None]
    configs = {c.name: c.value for c in topic.configs if c.value is not None}
    # Name, existence, collisions and config values first, as Kafka's controller orders them.
    try:
        cluster.check_new_topic(name, 1, configs)
    except ClusterError as e:
        if e.code != ErrorCode.INVALID_CONFIG or not nulls:
            raise ApiError(e.code, e.message) from None
    if nulls:
        raise ApiError(ErrorCode.INVALID_CONFIG,
                       f"Null value not supported for topic configs: {','.join(nulls)}")
    partitions = _partition_count(ctx, topic)
    if partitions > budget:
        raise ApiError(ErrorCode.POLICY_VIOLATION,
                       "Unable to perform excessively large batch operation.")
    return NewTopic(name, partitions, configs)


def _created(ctx: RequestContext, want: NewTopic, topic_id: uuid.UUID
             ) -> Resp.CreatableTopicResult:
    return Resp.CreatableTopicResult(
        name=want.name, topic_id=topic_id, error_code=ErrorCode.NONE, error_message=None,
        num_partitions=want.partitions, replication_factor=_replication_factor(ctx, want.name),
        configs=_config_entries(ctx, dict(want.configs)))


def _replication_factor(ctx: RequestContext, name: str) -> int:
    state = None if ctx.replicas is None else ctx.replicas.state(name, 0)
    if state is None:
        rf = None if ctx.replicas is None else ctx.replicas.expected_replication(name)
        return 1 if rf is None else rf
    return len(state.replicas)


def _error(name: str, code: ErrorCode, message: str | None) -> Resp.CreatableTopicResult:
    return Resp.CreatableTopicResult(name=name, error_code=code, error_message=message)


async def handle(ctx: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
    async with ctx.cluster.lock:
        return await _handle(ctx, request)


async def _handle(ctx: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
    cluster = ctx.cluster
    counts = Counter(t.name for t in request.topics)
    validate_only = ctx.api_version >= 1 and request.validate_only
    budget = MAX_PARTITIONS_PER_REQUEST
    # One slot per answered name, in request order; accepted topics are filled in later.
    results: list[Resp.CreatableTopicResult | NewTopic] = []
    accepted: list[NewTopic] = []
    answered: set[str] = set()
    may_create = None if ctx.authorizer is None else cluster_allowed(ctx, Op.CREATE)
    try:
        for i, topic in enumerate(request.topics):
            if i % YIELD_EVERY_TOPICS == YIELD_EVERY_TOPICS - 1:
                await anyio.lowlevel.checkpoint()
            if topic.name in answered:
                continue
            answered.add(topic.name)
            if counts[topic.name] > 1:
                results.append(_error(topic.name, ErrorCode.INVALID_REQUEST,
                                      "Duplicate topic name."))
                continue
            if topic.name == CLUSTER_METADATA_TOPIC:
                results.append(_error(topic.name, ErrorCode.INVALID_REQUEST,
                                      f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is "
                                      "prohibited."))
                continue
            if may_create is not None and not may_create and not topic_allowed(
                    ctx, Op.CREATE, topic.name):
                # Kafka: CLUSTER CREATE, or CREATE on the topic
                results.append(_error(topic.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                      "Authorization failed."))
                continue
            try:
                want = _check_one(ctx, topic, budget)
            except ApiError as e:
                log.info("topic not created", topic=topic.name, error=e.code.name,
                         reason=e.message, validate_only=validate_only)
                results.append(_error(topic.name, e.code, e.message))
                continue
            budget -= want.partitions
            results.append(want)
            if not validate_only:
                # Later topics of this request collide with it, as with one created already.
                cluster.reserve(want.name)
                accepted.append(want)
        outcome = await cluster.create_topics(accepted) if accepted else {}
    finally:
        for want in accepted:
            cluster.release(want.name)
    answers: list[Resp.CreatableTopicResult] = []
    for i, slot in enumerate(results):
        if i % YIELD_EVERY_TOPICS == YIELD_EVERY_TOPICS - 1:
            await anyio.lowlevel.checkpoint()
        if not isinstance(slot, NewTopic):
            answers.append(slot)
            continue
        if validate_only:
            answers.append(_created(ctx, slot, uuid.uuid4()))
            continue
        made = outcome[slot.name]
        if isinstance(made, OSError):
            log.warning("topic not created", topic=slot.name, error=str(made))
            answers.append(_error(slot.name, error_code_for(made),
                                  f"Cannot create the partition logs: {made}"))
            continue
        log.info("topic created", topic=slot.name, partitions=slot.partitions,
                 topic_id=str(made.topic_id), configs=dict(slot.configs) or None,
                 client=ctx.client_id)
        answers.append(_created(ctx, slot, made.topic_id))
    return CreateTopicsResponse(topics=answers)
