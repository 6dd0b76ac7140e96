"""ElectLeaders (key 43), versions 0-2.

- As Kafka 4.4's controller (ReplicationControlManager.electLeaders): per requested
  partition PREFERRED (v0 always) or UNCLEAN (v1+) election, decided by
  `replication/elections.py` with `--brokers N` (docs/cluster.md): NONE when the leader
  moved (epoch + 1), ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
  ELIGIBLE_LEADERS_NOT_AVAILABLE; an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION
  ("No such topic as ..." / "No such partition as ..."). Error messages are null otherwise.
- topic_partitions null: every partition of every topic (internal ones too) is tried, and
  only those whose answer is not ELECTION_NOT_NEEDED are listed (each topic is listed).
- With one broker every partition already has its preferred leader: ELECTION_NOT_NEEDED.
- The election is applied before the answer (`timeout_ms` is not waited on).
- Authorization (when an authorizer is on): CLUSTER ALTER, else every requested partition
  and the top-level error_code (v2) are CLUSTER_AUTHORIZATION_FAILED, as Kafka's
  ElectLeadersRequest.getErrorResponse builds it; an unknown election type is the same
  answer with INVALID_REQUEST.
"""

from __future__ import annotations

import structlog

from odradek.broker.api._auth import Op, cluster_allowed
from odradek.broker.context import RequestContext
from odradek.broker.replication.elections import PREFERRED, UNCLEAN
from odradek.wire import ErrorCode
from odradek.wire._generated.elect_leaders import ElectLeadersRequest, ElectLeadersResponse

log = structlog.get_logger("odradek.admin")

Result = ElectLeadersResponse.ReplicaElectionResult
PartitionResult = ElectLeadersResponse.PartitionResult


def _error_response(request: ElectLeadersRequest, code: ErrorCode, message: str
                    ) -> ElectLeadersResponse:
    results = [Result(topic=t.topic, partition_result=[
        PartitionResult(partition_id=p, error_code=code, error_message=message)
        for p in t.partitions]) for t in request.topic_partitions or []]
    return ElectLeadersResponse(error_code=code, replica_election_results=results)


def _elect(ctx: RequestContext, topic: str, partition: int, election_type: int
           ) -> tuple[ErrorCode, str | None]:
    if ctx.cluster.get(topic) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
    sim = ctx.replicas
    if (not ctx.cluster.has_partition(topic, partition)
            or (sim is not None and sim.state(topic, partition) is None)):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{partition}"
    if sim is None:  # one broker: it leads every partition, its only replica
        return ErrorCode.ELECTION_NOT_NEEDED, None
    result = sim.elect_leader(topic, partition, election_type)
    return result.error, result.message


async def handle(ctx: RequestContext, request: ElectLeadersRequest) -> ElectLeadersResponse:
    if not cluster_allowed(ctx, Op.ALTER):
        return _error_response(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                               "Request is not authorized.")
    election_type = request.election_type if ctx.api_version >= 1 else PREFERRED
    if election_type not in (PREFERRED, UNCLEAN):
        return _error_response(request, ErrorCode.INVALID_REQUEST,
                               f"Unknown election type {election_type}")
    results: list[Result] = []
    if request.topic_partitions is None:
        for topic in ctx.cluster:
            listed = []
            for p in range(topic.partitions):
                code, message = _elect(ctx, topic.name, p, election_type)
                if code != ErrorCode.ELECTION_NOT_NEEDED:
                    listed.append(PartitionResult(partition_id=p, error_code=code,
                                                  error_message=message))
            results.append(Result(topic=topic.name, partition_result=listed))
    else:
        for t in request.topic_partitions:
            listed = []
            for p in t.partitions:
                code, message = _elect(ctx, t.topic, p, election_type)
                listed.append(PartitionResult(partition_id=p, error_code=code,
                                              error_message=message))
            results.append(Result(topic=t.topic, partition_result=listed))
    log.info("elect leaders", election_type=election_type,
             elected=sum(r.error_code == ErrorCode.NONE
                         for t in results for r in t.partition_result))
    return ElectLeadersResponse(error_code=ErrorCode.NONE, replica_election_results=results)
