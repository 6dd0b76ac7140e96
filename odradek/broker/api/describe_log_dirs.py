"""DescribeLogDirs (key 35), versions 0-5.

- One result per log dir (`log.dirs`), named by its absolute path, listing the requested
  partitions it holds (null topics = every partition): size in bytes (sum of its segment
  files), offset lag 0 and is_future false (no replica moves between dirs). Topics without a
  requested partition in a dir are left out of that dir's result.
- v4: total_bytes and usable_bytes of the dir's file system (statvfs: blocks and blocks
  available to unprivileged users, as Java's FileStore reports them); a dir whose file
  system cannot be read gets KAFKA_STORAGE_ERROR.
- A log dir that failed (offline, see `storage/manager.py`) gets KAFKA_STORAGE_ERROR and no
  topics, as Kafka's ReplicaManager.describeLogDirs answers an offline dir.
- Top-level error_code (v3+) is NONE; is_cordoned (v5, KIP-1066) is always false (no dir
  is cordoned: cordoning is not implemented).
- Authorization (when an authorizer is on): CLUSTER DESCRIBE, else the top-level
  CLUSTER_AUTHORIZATION_FAILED with no results (v0-2 carry no top-level error: an empty
  answer, as Kafka's).
Not implemented: future (moving) replicas.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from odradek.broker.api._auth import Op, cluster_allowed
from odradek.broker.context import RequestContext
from odradek.wire import ErrorCode
from odradek.wire._generated.describe_log_dirs import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)

Resp = DescribeLogDirsResponse


def _dir_result(ctx: RequestContext, log_dir: Path,
                wanted: set[tuple[str, int]] | None) -> Resp.DescribeLogDirsResult:
    logs = ctx.partitions
    path = str(log_dir.resolve())
    if not logs.is_log_dir_online(log_dir):
        return Resp.DescribeLogDirsResult(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=path)
    try:
        st = os.statvfs(log_dir)
    except OSError:
        return Resp.DescribeLogDirsResult(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=path)
    by_topic: dict[str, list[Resp.DescribeLogDirsPartition]] = defaultdict(list)
    for (topic, partition), plog in sorted(logs.logs().items()):
        if logs.log_dir_of(topic, partition) != log_dir:
            continue
        if wanted is not None and (topic, partition) not in wanted:
            continue
        by_topic[topic].append(Resp.DescribeLogDirsPartition(
            partition_index=partition, partition_size=plog.size_in_bytes, offset_lag=0,
            is_future_key=False))
    return Resp.DescribeLogDirsResult(
        error_code=ErrorCode.NONE, log_dir=path,
        topics=[Resp.DescribeLogDirsTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
        total_bytes=st.f_blocks * st.f_frsize, usable_bytes=st.f_bavail * st.f_frsize)


async def handle(ctx: RequestContext, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    if not cluster_allowed(ctx, Op.DESCRIBE):
        return DescribeLogDirsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                       results=[])
    wanted = None if request.topics is None else {
        (t.topic, p) for t in request.topics for p in t.partitions}
    dirs = list(dict.fromkeys(ctx.partitions.log_dirs))
    return DescribeLogDirsResponse(error_code=ErrorCode.NONE,
                                   results=[_dir_result(ctx, d, wanted) for d in dirs])
