"""Consumer groups: list, describe (classic and KIP-848 consumer groups), committed offsets,
lag, and a standalone commit (generation -1, no member: allowed while the group is empty).

A group's coordinator is found with FindCoordinator (batched keys from v4, one key before)
and asked directly. Classic members' assignments are the ConsumerProtocolAssignment bytes
of DescribeGroups (protocol type "consumer"); consumer-protocol groups come from
ConsumerGroupDescribe. Lag is the partition's end offset (ListOffsets LATEST) minus the
committed offset, as kafka-consumer-groups reports it.
"""

from __future__ import annotations

import functools
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from odradek.client.admin import Admin
from odradek.client.connection import BrokerConnection, ClientError, KafkaError
from odradek.client.data import LATEST, list_offsets
from odradek.wire import ErrorCode

__all__ = ["GroupDescription", "GroupListing", "GroupMember", "GroupOffset", "commit_offsets",
           "committed_offsets", "describe_group", "group_lag", "list_groups"]

T = TypeVar("T")

_OFFSET_FETCH_MAX = 9  # v10 names topics by id only
_OFFSET_COMMIT_MAX = 9


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str
    group_type: str


@dataclass(frozen=True)
class GroupMember:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    assignment: dict[str, list[int]]


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    group_type: str  # classic or consumer
    protocol_type: str
    protocol: str  # classic: the chosen assignor; consumer: the server-side assignor
    coordinator: int
    members: list[GroupMember] = field(default_factory=list)


@dataclass(frozen=True)
class GroupOffset:
    topic: str
    partition: int
    committed: int  # -1: nothing committed
    end: int
    lag: int | None
    member: str | None  # the member the partition is assigned to, if any


def list_groups(admin: Admin) -> list[GroupListing]:
    """Every group of every broker (ListGroups is answered per coordinator)."""
    from odradek.wire._generated.list_groups import ListGroupsRequest, ListGroupsResponse

    def ask(node: int) -> ListGroupsResponse:
        response, _ = admin.connection_to(node).call(ListGroupsRequest(), ListGroupsResponse)
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(response.error_code, "list groups")
        return response

    found: dict[str, GroupListing] = {}
    for node in sorted(admin.brokers()):
        response = _retrying(admin, functools.partial(ask, node))
        for g in response.groups:
            found[g.group_id] = GroupListing(g.group_id, g.protocol_type, g.group_state,
                                             g.group_type or "classic")
    return sorted(found.values(), key=lambda g: g.group_id)


# What a coordinator answers while it is being created or loaded, or after it moved: ask
# again (the first use of groups creates __consumer_offsets; Kafka answers
# COORDINATOR_NOT_AVAILABLE until its partitions have leaders).
_RETRY = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                    ErrorCode.NOT_COORDINATOR})


def _retrying(admin: Admin, fn: Callable[[], T]) -> T:
    """`fn()`, again while it raises a retriable coordinator error, until admin.timeout."""
    deadline = time.monotonic() + admin.timeout
    delay = 0.05
    while True:
        try:
            return fn()
        except KafkaError as exc:
            if exc.code not in _RETRY or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def coordinator(admin: Admin, group_id: str) -> tuple[int, BrokerConnection]:
    from odradek.wire._generated.find_coordinator import (
        FindCoordinatorRequest,
        FindCoordinatorResponse,
    )

    def find() -> int:
        version = admin.conn.version_for(FindCoordinatorRequest)
        request = FindCoordinatorRequest(key=group_id, key_type=0, coordinator_keys=[group_id])
        response, _ = admin.conn.call(request, FindCoordinatorResponse, version=version)
        if version >= 4:
            (c,) = response.coordinators
            code, message, node = c.error_code, c.error_message, c.node_id
        else:
            code, message, node = response.error_code, response.error_message, response.node_id
        if code != ErrorCode.NONE:
            raise KafkaError(code, f"find the coordinator of group {group_id}", message)
        return node

    node = _retrying(admin, find)
    return node, admin.connection_to(node)


def _decode_assignment(data: bytes) -> dict[str, list[int]]:
    from odradek.wire._generated.data import ConsumerProtocolAssignment

    if len(data) < 2:
        return {}
    version = struct.unpack_from(">h", data, 0)[0]
    version = min(max(version, 0), ConsumerProtocolAssignment.MAX_VERSION)
    try:
        assignment, _ = ConsumerProtocolAssignment.decode(data, version, 2)
    except Exception:  # not the consumer protocol's bytes (e.g. a Connect group)
        return {}
    return {tp.topic: sorted(tp.partitions) for tp in assignment.assigned_partitions}


def describe_group(admin: Admin, group_id: str) -> GroupDescription:
    return _retrying(admin, lambda: _describe_group(admin, group_id))


def _describe_group(admin: Admin, group_id: str) -> GroupDescription:
    from odradek.wire._generated.describe_groups import (
        DescribeGroupsRequest,
        DescribeGroupsResponse,
    )

    node, conn = coordinator(admin, group_id)
    response, _ = conn.call(DescribeGroupsRequest(groups=[group_id]), DescribeGroupsResponse)
    (g,) = response.groups
    if g.error_code == ErrorCode.NONE:
        if g.group_state != "Dead" or g.protocol_type:
            members = [GroupMember(m.member_id, m.group_instance_id, m.client_id,
                                   m.client_host,
                                   _decode_assignment(m.member_assignment)
                                   if g.protocol_type == "consumer" else {})
                       for m in g.members]
            return GroupDescription(group_id, g.group_state, "classic", g.protocol_type,
                                    g.protocol_data, node, members)
    elif g.error_code != ErrorCode.GROUP_ID_NOT_FOUND:
        raise KafkaError(g.error_code, f"describe group {group_id}", g.error_message)
    # Not a classic group (Kafka answers GROUP_ID_NOT_FOUND or Dead): a consumer group?
    if _serves_consumer_group_describe(conn):
        described = _describe_consumer_group(conn, group_id, node)
        if described is not None:
            return described
    raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"describe group {group_id}")


def _serves_consumer_group_describe(conn: BrokerConnection) -> bool:
    from odradek.wire import ApiKey

    return ApiKey.CONSUMER_GROUP_DESCRIBE in conn.versions


def _describe_consumer_group(conn: BrokerConnection, group_id: str,
                             node: int) -> GroupDescription | None:
    from odradek.wire._generated.consumer_group_describe import (
        ConsumerGroupDescribeRequest,
        ConsumerGroupDescribeResponse,
    )

    response, _ = conn.call(ConsumerGroupDescribeRequest(group_ids=[group_id]),
                            ConsumerGroupDescribeResponse)
    (g,) = response.groups
    if g.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
        return None
    if g.error_code != ErrorCode.NONE:
        raise KafkaError(g.error_code, f"describe group {group_id}", g.error_message)
    members = [GroupMember(m.member_id, m.instance_id, m.client_id, m.client_host,
                           {tp.topic_name: sorted(tp.partitions)
                            for tp in m.assignment.topic_partitions})
               for m in g.members]
    return GroupDescription(group_id, g.group_state, "consumer", "consumer", g.assignor_name,
                            node, members)


def committed_offsets(admin: Admin, group_id: str) -> dict[tuple[str, int], int]:
    """Every committed offset of the group: {(topic, partition): offset}."""
    return _retrying(admin, lambda: _committed_offsets(admin, group_id))


def _committed_offsets(admin: Admin, group_id: str) -> dict[tuple[str, int], int]:
    from odradek.wire._generated.offset_fetch import OffsetFetchRequest, OffsetFetchResponse

    _, conn = coordinator(admin, group_id)
    version = conn.version_for(OffsetFetchRequest, _OFFSET_FETCH_MAX)
    if version < 2:
        raise ClientError("the broker's OffsetFetch is too old to list a group's offsets")
    # Topics null: every partition the group has an offset for (the constructors turn None
    # into [], which would ask for none).
    group = OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group_id)
    group.topics = None
    request = OffsetFetchRequest(group_id=group_id, groups=[group])
    request.topics = None
    response, _ = conn.call(request, OffsetFetchResponse, version=version)
    out: dict[tuple[str, int], int] = {}
    if version >= 8:
        (g,) = response.groups
        if g.error_code != ErrorCode.NONE:
            raise KafkaError(g.error_code, f"fetch the offsets of group {group_id}")
        for t in g.topics:
            for p in t.partitions:
                if p.error_code == ErrorCode.NONE and p.committed_offset >= 0:
                    out[(t.name, p.partition_index)] = p.committed_offset
    else:
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(response.error_code, f"fetch the offsets of group {group_id}")
        for ot in response.topics:
            for op in ot.partitions:
                if op.error_code == ErrorCode.NONE and op.committed_offset >= 0:
                    out[(ot.name, op.partition_index)] = op.committed_offset
    return out


def commit_offsets(admin: Admin, group_id: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit as a standalone consumer (generation -1, no member id): Kafka accepts this for
    a group with no active members (and refuses it, UNKNOWN_MEMBER_ID or
    ILLEGAL_GENERATION, while members are in it)."""
    if offsets:
        _retrying(admin, lambda: _commit_offsets(admin, group_id, offsets))


def _commit_offsets(admin: Admin, group_id: str, offsets: dict[tuple[str, int], int]) -> None:
    from odradek.wire._generated.offset_commit import OffsetCommitRequest, OffsetCommitResponse
    _, conn = coordinator(admin, group_id)
    topics: dict[str, list[OffsetCommitRequest.OffsetCommitRequestPartition]] = {}
    for (topic, part), offset in sorted(offsets.items()):
        topics.setdefault(topic, []).append(OffsetCommitRequest.OffsetCommitRequestPartition(
            partition_index=part, committed_offset=offset))
    request = OffsetCommitRequest(group_id=group_id, generation_id_or_member_epoch=-1,
                                  member_id="", topics=[
                                      OffsetCommitRequest.OffsetCommitRequestTopic(
                                          name=t, partitions=ps) for t, ps in topics.items()])
    response, _ = conn.call(request, OffsetCommitResponse, max_version=_OFFSET_COMMIT_MAX)
    for t in response.topics:
        for p in t.partitions:
            if p.error_code != ErrorCode.NONE:
                raise KafkaError(p.error_code,
                                 f"commit {t.name}-{p.partition_index} for group {group_id}")


def group_lag(admin: Admin, description: GroupDescription) -> list[GroupOffset]:
    """Committed offset, end offset and lag of every partition the group has committed or
    is assigned, with the member holding it."""
    committed = committed_offsets(admin, description.group_id)
    owner: dict[tuple[str, int], str] = {}
    for m in description.members:
        for topic, parts in m.assignment.items():
            for p in parts:
                owner[(topic, p)] = m.member_id
    keys = sorted(set(committed) | set(owner))
    ends: dict[tuple[str, int], int] = {}
    by_topic: dict[str, list[int]] = {}
    for topic, part in keys:
        by_topic.setdefault(topic, []).append(part)
    for topic, parts in by_topic.items():
        try:
            for part, end in list_offsets(admin, topic, parts, LATEST).items():
                ends[(topic, part)] = end
        except KafkaError:  # e.g. a deleted topic that still has commits
            continue
    out = []
    for key in keys:
        c = committed.get(key, -1)
        end = ends.get(key, -1)
        lag = end - c if c >= 0 and end >= 0 else None
        out.append(GroupOffset(key[0], key[1], c, end, lag, owner.get(key)))
    return out


def delete_groups(admin: Admin, group_ids: list[str]) -> dict[str, KafkaError | None]:
    """DeleteGroups at each group's coordinator: what happened to each (None: deleted)."""
    from odradek.wire._generated.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse

    out: dict[str, KafkaError | None] = {}
    for group_id in group_ids:
        def delete(group_id: str = group_id) -> KafkaError | None:
            _, conn = coordinator(admin, group_id)
            response, _ = conn.call(DeleteGroupsRequest(groups_names=[group_id]),
                                    DeleteGroupsResponse)
            (r,) = response.results
            if r.error_code == ErrorCode.NONE:
                return None
            error = KafkaError(r.error_code, f"delete group {group_id}", r.error_message)
            if r.error_code in _RETRY:
                raise error
            return error

        out[group_id] = _retrying(admin, delete)
    return out


@dataclass(frozen=True)
class Transaction:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    start_time_ms: int
    partitions: dict[str, list[int]]


def list_transactions(admin: Admin) -> list[Transaction]:
    """Every transactional id the brokers' coordinators know, with its state."""
    from odradek.wire._generated.list_transactions import (
        ListTransactionsRequest,
        ListTransactionsResponse,
    )

    found: dict[str, Transaction] = {}
    for node in sorted(admin.brokers()):
        response, _ = admin.connection_to(node).call(ListTransactionsRequest(),
                                                     ListTransactionsResponse)
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(response.error_code, "list transactions")
        for t in response.transaction_states:
            found[t.transactional_id] = Transaction(t.transactional_id, t.producer_id, -1,
                                                    t.transaction_state, -1, -1, {})
    return sorted(found.values(), key=lambda t: t.transactional_id)


def describe_transaction(admin: Admin, transactional_id: str) -> Transaction:
    from odradek.wire._generated.describe_transactions import (
        DescribeTransactionsRequest,
        DescribeTransactionsResponse,
    )
    from odradek.wire._generated.find_coordinator import (
        FindCoordinatorRequest,
        FindCoordinatorResponse,
    )

    def ask() -> Transaction:
        version = admin.conn.version_for(FindCoordinatorRequest)
        request = FindCoordinatorRequest(key=transactional_id, key_type=1,
                                         coordinator_keys=[transactional_id])
        found, _ = admin.conn.call(request, FindCoordinatorResponse, version=version)
        if version >= 4:
            (c,) = found.coordinators
            code, message, node = c.error_code, c.error_message, c.node_id
        else:
            code, message, node = found.error_code, found.error_message, found.node_id
        if code != ErrorCode.NONE:
            raise KafkaError(code, f"find the coordinator of {transactional_id}", message)
        response, _ = admin.connection_to(node).call(
            DescribeTransactionsRequest(transactional_ids=[transactional_id]),
            DescribeTransactionsResponse)
        (t,) = response.transaction_states
        if t.error_code != ErrorCode.NONE:
            raise KafkaError(t.error_code, f"describe transaction {transactional_id}")
        return Transaction(t.transactional_id, t.producer_id, t.producer_epoch,
                           t.transaction_state, t.transaction_timeout_ms,
                           t.transaction_start_time_ms,
                           {d.topic: sorted(d.partitions) for d in t.topics})

    return _retrying(admin, ask)
