"""DescribeQuorum (key 55), versions 0-2: kafka-metadata-quorum.sh describe --status and
--replication.

Odradek has no KRaft quorum: its one controller (this node, or the simulated cluster's
controller with `--brokers N`) is reported as the only voter and the leader of
`__cluster_metadata`-0 at leader epoch 1, and every other live broker as an observer, as a
Kafka cluster with one combined controller+broker node reports them.
- The caller needs CLUSTER DESCRIBE: else CLUSTER_AUTHORIZATION_FAILED at the top level.
- A topic other than `__cluster_metadata` or a partition other than 0: that partition's
  UNKNOWN_TOPIC_OR_PARTITION with Kafka's message, as Kafka's raft layer answers.
- Error messages are "" (not null) in every version, as Kafka 4.4 sends them.
- v1+: every replica's last fetch and last caught-up timestamps are now: they share this
  process, so none lags. v2: the directory ids are zero (as Kafka's for a statically
  configured voter) and `nodes` lists the voter with the listener the client connected to.
Not implemented: a metadata log. High watermark and log end offsets are 0 (the tool's lag
column stays 0); Kafka counts its metadata records there.
"""

from __future__ import annotations

import uuid

from odradek.broker.api._auth import Op, cluster_allowed
from odradek.broker.api.metadata import brokers
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse

Resp = DescribeQuorumResponse
METADATA_TOPIC = "__cluster_metadata"
NOT_HOSTED = "This server does not host this topic-partition."
LEADER_EPOCH = 1
ZERO_UUID = uuid.UUID(int=0)


def _replica(node: int, now: int) -> Resp.ReplicaState:
    return Resp.ReplicaState(replica_id=node, replica_directory_id=ZERO_UUID, log_end_offset=0,
                             last_fetch_timestamp=now, last_caught_up_timestamp=now)


async def handle(ctx: RequestContext, request: DescribeQuorumRequest) -> DescribeQuorumResponse:
    if not cluster_allowed(ctx, Op.DESCRIBE):
        return Resp(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message="",
                    topics=[], nodes=[])
    host, port = ctx.node.advertised_endpoint(ctx.client.listener)
    live = brokers(ctx, host, port)
    voter = (ctx.node.node_id if ctx.replicas is None
             else ctx.replicas.controller.controller_id)
    now = ctx.clock.now_ms()
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            if t.topic_name != METADATA_TOPIC or p.partition_index != 0:
                parts.append(Resp.PartitionData(
                    partition_index=p.partition_index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    error_message=NOT_HOSTED, leader_id=0, leader_epoch=0, high_watermark=0,
                    current_voters=[], observers=[]))
                continue
            parts.append(Resp.PartitionData(
                partition_index=0, error_code=ErrorCode.NONE, error_message="",
                leader_id=voter, leader_epoch=LEADER_EPOCH, high_watermark=0,
                current_voters=[_replica(voter, now)],
                observers=[_replica(n, now) for n, _, _ in live if n != voter]))
        topics.append(Resp.TopicData(topic_name=t.topic_name, partitions=parts))
    endpoint = next(((h, p) for n, h, p in live if n == voter), (host, port))
    nodes = [Resp.Node(node_id=voter, listeners=[Resp.Listener(
        name=ctx.client.listener, host=endpoint[0], port=endpoint[1])])] if topics else []
    return Resp(error_code=ErrorCode.NONE, error_message="", topics=topics, nodes=nodes)
