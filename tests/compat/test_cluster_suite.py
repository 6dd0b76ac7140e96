"""The cluster suite of the compatibility matrix against Odradek `--brokers 3`, one test per row.

Opt-in (CI time budget): set ODRADEK_COMPAT_CLUSTER=1. `cluster_matrix` then runs
`python -m compat_tests.run --suite cluster --target odradek --no-doc` once per session: the
runner starts Odradek with three brokers and its admin endpoint, runs every driver that has
cluster rows one at a time and makes the faults each asks for (compat_tests/cluster_suite.py).
A row must PASS, or fail for a listed reason as a strict xfail (which turns into a failure
once the row passes, so the entry must go). The Apache Kafka oracle run of the same rows:
`python -m compat_tests.run --suite cluster --target kafka --strict`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compat_tests.drivers import DRIVERS

REPO = Path(__file__).resolve().parents[2]
ENABLED = os.environ.get("ODRADEK_COMPAT_CLUSTER") == "1"

pytestmark = pytest.mark.skipif(not ENABLED, reason="opt-in: ODRADEK_COMPAT_CLUSTER=1 (minutes)")

# (client, scenario) -> why the row fails on Odradek today (none since coordinator failover:
# every row passed in the full run of 2026-12-02).
XFAIL: dict[tuple[str, str], str] = {}

_ROWS = [(c, s) for c, d in DRIVERS.items() for s in d.cluster_scenarios]


@pytest.fixture(scope="session")
def cluster_matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    out = tmp_path_factory.mktemp("compat-cluster")
    result, log = out / "rows.json", out / "runner.log"
    argv = [sys.executable, "-m", "compat_tests.run", "--suite", "cluster", "--target", "odradek",
            "--no-doc", "--json", str(result)]
    with log.open("w") as f:
        proc = subprocess.run(argv, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, timeout=1800)
    text = log.read_text(errors="replace")
    if proc.returncode != 0 or not result.exists():
        pytest.fail(f"the cluster suite runner failed ({proc.returncode}):\n{text[-3000:]}")
    return {(r["client"], r["scenario"]): r for r in json.loads(result.read_text())["rows"]}


def _params() -> list[object]:
    params: list[object] = []
    for client, scenario in _ROWS:
        marks = []
        if (client, scenario) in XFAIL:
            marks.append(pytest.mark.xfail(strict=True, reason=XFAIL[(client, scenario)]))
        params.append(pytest.param(client, scenario, marks=marks, id=f"{client}:{scenario}"))
    return params


@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("client", "scenario"), _params())
def test_cluster(cluster_matrix: dict[tuple[str, str], dict[str, Any]], client: str,
                 scenario: str) -> None:
    row = cluster_matrix.get((client, scenario))
    assert row is not None, f"the runner reported no row for {client} / {scenario}"
    assert row["status"] == "PASS", f"{client} / {scenario}: {row['status']}: {row['reason']}"
