"""Applying a fault rule to a decoded request: what it names, and its error response.

An injected error goes where the api carries errors, as a Kafka broker would put it: every
partition of a Produce, Fetch, ListOffsets or OffsetCommit; every topic of a Metadata (the
topics asked for, or none: an all-topics Metadata then lists no topic); every key of a
batched FindCoordinator (v4+), every group of a batched OffsetFetch (v8+) or DescribeGroups
(and every partition as well as the top level of an OffsetFetch v0-7); the top-level
`error_code` of every other api that has one. The request is not handled, so nothing is
written or committed. Other apis whose errors are only per item (CreateTopics, DeleteTopics,
DescribeConfigs, OffsetForLeaderEpoch, ...) accept only delay, drop and close for now.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from odradek.broker.cluster import Cluster
from odradek.broker.connection import CloseConnection, IncomingRequest, response_frame
from odradek.broker.fault_rules import Action, FaultRules, error_name
from odradek.wire import API_SPECS, ApiKey
from odradek.wire.headers import response_header_version
from odradek.wire.primitives import Buffer
from odradek.wire.registry import api_classes

if TYPE_CHECKING:
    from odradek.broker.context import RequestContext

log = structlog.get_logger("odradek.faults")

_TOPIC_APIS = (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.OFFSET_COMMIT,
               ApiKey.METADATA, ApiKey.DESCRIBE_GROUPS)


def can_error(api_key: int) -> bool:
    if api_key in _TOPIC_APIS:
        return True
    try:
        _, response_cls = api_classes(api_key)
    except KeyError:
        return False
    return "error_code" in response_cls.__slots__


def _name(cluster: Cluster, name: str | None, topic_id: uuid.UUID | None) -> str:
    if name:
        return name
    topic = cluster.by_id.get(topic_id) if topic_id is not None else None
    return topic.name if topic is not None else ""


def targets(api_key: int, body: Any, cluster: Cluster) -> Callable[[], Iterable[tuple[str, int]]]:
    """The (topic, partition) pairs the request names (partition -1 for a Metadata topic)."""

    def pairs() -> Iterator[tuple[str, int]]:
        if api_key == ApiKey.PRODUCE:
            for t in body.topic_data:
                name = _name(cluster, t.name, t.topic_id)
                for p in t.partition_data:
                    yield name, p.index
        elif api_key == ApiKey.FETCH:
            for t in body.topics:
                name = _name(cluster, t.topic, t.topic_id)
                for p in t.partitions:
                    yield name, p.partition
        elif api_key in (ApiKey.LIST_OFFSETS, ApiKey.OFFSET_COMMIT):
            for t in body.topics:
                name = _name(cluster, t.name, getattr(t, "topic_id", None))
                for p in t.partitions:
                    yield name, p.partition_index
        elif api_key == ApiKey.METADATA:
            for t in body.topics or ():
                yield _name(cluster, t.name, t.topic_id), -1

    return pairs


def error_response(api_key: int, version: int, body: Any, error_code: int) -> Any:
    """The api's response carrying `error_code` in each place it has one at `version`."""
    _, response_cls = api_classes(api_key)
    resp = response_cls()
    if api_key == ApiKey.PRODUCE:
        resp.responses = [
            response_cls.TopicProduceResponse(
                name=t.name, topic_id=t.topic_id,
                partition_responses=[response_cls.PartitionProduceResponse(
                    index=p.index, error_code=error_code, base_offset=-1)
                    for p in t.partition_data])
            for t in body.topic_data]
    elif api_key == ApiKey.FETCH:
        resp.session_id = body.session_id
        resp.responses = [
            response_cls.FetchableTopicResponse(
                topic=t.topic, topic_id=t.topic_id,
                partitions=[response_cls.PartitionData(
                    partition_index=p.partition, error_code=error_code, high_watermark=-1,
                    last_stable_offset=-1, log_start_offset=-1) for p in t.partitions])
            for t in body.topics]
    elif api_key == ApiKey.LIST_OFFSETS:
        resp.topics = [
            response_cls.ListOffsetsTopicResponse(
                name=t.name, partitions=[response_cls.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index, error_code=error_code, timestamp=-1,
                    offset=-1) for p in t.partitions])
            for t in body.topics]
    elif api_key == ApiKey.OFFSET_COMMIT:
        resp.topics = [
            response_cls.OffsetCommitResponseTopic(
                name=t.name, topic_id=t.topic_id,
                partitions=[response_cls.OffsetCommitResponsePartition(
                    partition_index=p.partition_index, error_code=error_code)
                    for p in t.partitions])
            for t in body.topics]
    elif api_key == ApiKey.METADATA:
        resp.topics = [response_cls.MetadataResponseTopic(
            error_code=error_code, name=t.name, topic_id=t.topic_id or uuid.UUID(int=0))
            for t in body.topics or ()]
        if "error_code" in response_cls.__slots__:
            resp.error_code = 0
    elif api_key == ApiKey.FIND_COORDINATOR and version >= 4:  # batched (KIP-699)
        resp.coordinators = [response_cls.Coordinator(key=k, node_id=-1, host="", port=-1,
                                                      error_code=error_code)
                             for k in body.coordinator_keys]
    elif api_key == ApiKey.FIND_COORDINATOR:
        resp.error_code, resp.node_id, resp.host, resp.port = error_code, -1, "", -1
    elif api_key == ApiKey.OFFSET_FETCH and version >= 8:  # per group (KIP-709)
        resp.groups = [response_cls.OffsetFetchResponseGroup(group_id=g.group_id,
                                                             error_code=error_code)
                       for g in body.groups]
    elif api_key == ApiKey.OFFSET_FETCH:  # v0-1 have only partition errors; v2-7 both
        resp.error_code = error_code
        resp.topics = [response_cls.OffsetFetchResponseTopic(
            name=t.name, partitions=[response_cls.OffsetFetchResponsePartition(
                partition_index=i, committed_offset=-1, error_code=error_code)
                for i in t.partition_indexes])
            for t in body.topics or ()]
    elif api_key == ApiKey.DESCRIBE_GROUPS:
        resp.groups = [response_cls.DescribedGroup(error_code=error_code, group_id=g)
                       for g in body.groups]
    else:
        resp.error_code = error_code
    return resp


class _Proceed:
    """`apply`'s answer when the request is to be handled normally (after any delay)."""


PROCEED = _Proceed()


async def apply(rules: FaultRules, ctx: RequestContext, request: IncomingRequest,
                body: Any) -> list[Buffer] | _Proceed | None:
    """Fault this request if a rule says so: the frames to send, None (send nothing), or
    PROCEED; raises CloseConnection for a `close` rule. Each fault is logged."""
    rule = rules.match(request.api_key, request.client_id,
                       targets(request.api_key, body, ctx.cluster))
    if rule is None:
        return PROCEED
    log.warning("fault injected", rule=rule.rule_id, api=API_SPECS[request.api_key].name,
                version=request.api_version, action=rule.action.value,
                **({"error": error_name(rule.error_code)}
                   if rule.action is Action.ERROR else {}),
                **({"delay_ms": rule.delay_ms} if rule.action is Action.DELAY else {}),
                client=ctx.client.address, client_id=request.client_id)
    if rule.action is Action.DELAY:
        await anyio.sleep(rule.delay_ms / 1000)
        return PROCEED
    if rule.action is Action.DROP:
        return None
    if rule.action is Action.CLOSE:
        raise CloseConnection(f"fault rule {rule.rule_id}")
    if request.api_key == ApiKey.PRODUCE and body.acks == 0:
        return None  # acks=0: Kafka answers nothing, whatever happened
    version = request.api_version
    return response_frame(request.correlation_id,
                          response_header_version(request.api_key, version),
                          error_response(request.api_key, version, body,
                                         rule.error_code).encode(version))
