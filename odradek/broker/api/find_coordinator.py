"""FindCoordinator (key 10), versions 0-6.

- This node coordinates every group and every transactional id: the answer is always this
  broker's endpoint on the listener the client used.
- Key type 0 (group) creates `__consumer_offsets` on first use, as Kafka does, so the group
  coordinator can write; if that fails the key gets COORDINATOR_NOT_AVAILABLE. Key type 1
  (transaction) is answered without touching `__transaction_state` (its coordinator creates
  it). Key type 2 (share, v6+: a "group:topicId:partition" key, asked by brokers for
  KIP-932's share coordinator; another form is INVALID_REQUEST) creates `__share_group_state` as Kafka's does. Unknown key
  types: INVALID_REQUEST.
- v0-3 look up one `key`; v4+ look up the batched `coordinator_keys`, each with its own error.
- GROUP / TRANSACTIONAL_ID DESCRIBE is checked (GROUP_ / TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
- v1+ carry Kafka's error message: "NONE" on success (v1-3, as Kafka sends), else the
  error's default text as Kafka's Errors has it (clients print it: kcat shows "Group
  authorization failed."); the error name where that text is not known here.
- `--brokers N` (docs/cluster.md): the coordinator is the leader of the key's partition of
  `__consumer_offsets` / `__transaction_state` (before that topic exists, and for share
  keys, the controller's node); a partition without a leader is COORDINATOR_NOT_AVAILABLE.
  Coordinator failover is not simulated yet: one coordinator serves every broker.
"""

from __future__ import annotations

import base64
import binascii

from odradek.broker.api._auth import Op, group_allowed, txn_allowed
from odradek.broker.context import RequestContext
from odradek.coordinator.group.records import OFFSETS_TOPIC
from odradek.coordinator.txn.log_format import TRANSACTION_STATE_TOPIC
from odradek.wire import ErrorCode
from odradek.wire._generated.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)

KEY_GROUP = 0
KEY_TRANSACTION = 1
KEY_SHARE = 2
# Kafka's Errors.<error>.message() for the errors _lookup returns.
_MESSAGES = {
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
}


def _share_key_ok(key: str) -> bool:
    """Kafka's SharePartitionKey form: group, a base64 topic id and a partition number."""
    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[0] or not parts[2].isdigit():
        return False
    try:
        return len(base64.urlsafe_b64decode(parts[1] + "==")) == 16
    except (ValueError, binascii.Error):
        return False


def _lookup(ctx: RequestContext, key_type: int, key: str) -> ErrorCode:
    if key_type == KEY_GROUP and not group_allowed(ctx, Op.DESCRIBE, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if key_type == KEY_TRANSACTION and not txn_allowed(ctx, Op.DESCRIBE, key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if key_type == KEY_GROUP:
        ok = ctx.groups.ensure_topic()
        return ErrorCode.NONE if ok else ErrorCode.COORDINATOR_NOT_AVAILABLE
    if key_type == KEY_TRANSACTION:
        # With --brokers N the coordinator is the leader of the id's __transaction_state
        # partition, so the topic is made now, as Kafka makes it on this lookup. One broker
        # is the coordinator of every id either way: the topic is made at InitProducerId.
        if ctx.replicas is not None and not ctx.transactions.ensure_topic():
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.NONE
    if key_type == KEY_SHARE:
        if not _share_key_ok(key):
            return ErrorCode.INVALID_REQUEST
        ok = ctx.share.ensure_topic()
        return ErrorCode.NONE if ok else ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.INVALID_REQUEST


def _placed(ctx: RequestContext, key_type: int, key: str) -> tuple[ErrorCode, int, str, int]:
    """The key's coordinator with `--brokers N`: (error, node, host, port)."""
    sim = ctx.replicas
    assert sim is not None
    node = sim.controller.controller_id
    if key_type == KEY_GROUP:
        state = sim.state(OFFSETS_TOPIC, ctx.groups.shard.partition_for(key))
    elif key_type == KEY_TRANSACTION:
        state = sim.state(TRANSACTION_STATE_TOPIC, ctx.transactions.shard.partition_for(key))
    else:
        state = None
    if state is not None:
        node = state.leader
    if node < 0:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, "", -1
    host, port = sim.nodes[node].advertised_endpoint(ctx.client.listener)
    return ErrorCode.NONE, node, host, port


def _find(ctx: RequestContext, key_type: int, key: str) -> tuple[ErrorCode, int, str, int]:
    error = _lookup(ctx, key_type, key)
    if error != ErrorCode.NONE:
        return error, -1, "", -1
    if ctx.replicas is not None:
        return _placed(ctx, key_type, key)
    host, port = ctx.node.advertised_endpoint(ctx.client.listener)
    return ErrorCode.NONE, ctx.node.node_id, host, port


async def handle(ctx: RequestContext, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    key_type = request.key_type if ctx.api_version >= 1 else KEY_GROUP
    if ctx.api_version < 4:
        error, node, host, port = _find(ctx, key_type, request.key)
        if error != ErrorCode.NONE:
            return FindCoordinatorResponse(error_code=error,
                                           error_message=_MESSAGES.get(error, error.name),
                                           node_id=-1, host="", port=-1)
        return FindCoordinatorResponse(error_code=ErrorCode.NONE, error_message="NONE",
                                       node_id=node, host=host, port=port)
    coordinators = []
    for key in request.coordinator_keys:
        error, node, host, port = _find(ctx, key_type, key)
        ok = error == ErrorCode.NONE
        coordinators.append(FindCoordinatorResponse.Coordinator(
            key=key, node_id=node if ok else -1, host=host if ok else "",
            port=port if ok else -1, error_code=error,
            error_message=None if ok else _MESSAGES.get(error, error.name)))
    return FindCoordinatorResponse(coordinators=coordinators)
