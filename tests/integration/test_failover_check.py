"""compat_tests/failover_check.py's three checks on Odradek --brokers 3 with hard kills (issue
#15): acks=all through a leader kill with nothing lost or duplicated, NOT_ENOUGH_REPLICAS
with two of three replicas down, and a transactional producer and a committing consumer group
through their coordinators' kills. `python -m compat_tests.failover_check --target kafka`
runs the same checks on the three-node Apache Kafka 4.4 cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from compat_tests.failover_check import CHECKS, OdradekFailoverCluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> OdradekFailoverCluster:
    target = OdradekFailoverCluster(Path(tmp_path_factory.mktemp("failover")))
    target.start()
    yield target  # type: ignore[misc]
    target.__exit__()


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_failover_check(cluster: OdradekFailoverCluster, name: str) -> None:
    try:
        CHECKS[name](cluster, 1)
    finally:
        for node in cluster.node_ids:  # the next check starts with every node up
            if not cluster.alive(node):
                cluster.restart(node)
