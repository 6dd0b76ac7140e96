"""The compatibility matrix as pytest tests: one broker, every driver, one test per row.

`matrix` runs `python -m compat_tests.run --target odradek --no-doc` once per session (its
output goes to the run's work dir and is attached on failure); each test then asserts its
(client, scenario) row. When -k selects some rows, the runner runs only their clients and
scenarios. The drivers need `bash compat_tests/setup.sh` first (`./test compat` runs it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compat_tests.drivers import DRIVERS, SLOW_ROWS

REPO = Path(__file__).resolve().parents[2]
# ODRADEK_COMPAT_SLOW=1: the rows left to compat_tests/slow.sh (drivers.SLOW_ROWS) run here too.
SLOW = os.environ.get("ODRADEK_COMPAT_SLOW") == "1"
_ALL = {(c, s) for c, d in DRIVERS.items() for s in d.all_scenarios() if SLOW or (c, s) not in SLOW_ROWS}


class Matrix:
    def __init__(self, rows: list[dict[str, Any]], log: str) -> None:
        self.rows = {(r["client"], r["scenario"]): r for r in rows}
        self.log = log


def _selected(session: pytest.Session) -> list[str]:
    """Runner arguments for the rows this session runs: all of them unless -k (or node ids)
    picked some, then only the clients and scenarios of those (./test compat -k kcat)."""
    rows = {(i.callspec.params["client"], i.callspec.params["scenario"])
            for i in session.items if isinstance(i, pytest.Function) and hasattr(i, "callspec")
            and i.originalname == "test_matrix"}
    if not rows or rows == _ALL:
        return []
    clients = sorted({c for c, _ in rows})
    scenarios = sorted({s for _, s in rows})
    return ["--clients", ",".join(clients), "--scenarios", ",".join(scenarios)]


@pytest.fixture(scope="session")
def matrix(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Matrix:
    out = tmp_path_factory.mktemp("compat")
    result = out / "rows.json"
    log = out / "runner.log"
    argv = [sys.executable, "-m", "compat_tests.run", "--target", "odradek", "--no-doc", "--json", str(result)]
    extra = os.environ.get("ODRADEK_COMPAT_ARGS")  # e.g. "--clients kcat,confluent-kafka"
    argv += extra.split() if extra else _selected(request.session)
    if not SLOW:
        argv.append("--skip-slow")
    with log.open("w") as f:
        proc = subprocess.run(argv, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, timeout=1800)
    text = log.read_text(errors="replace")
    if proc.returncode != 0 or not result.exists():
        pytest.fail(f"the matrix runner failed ({proc.returncode}):\n{text[-3000:]}")
    return Matrix(json.loads(result.read_text())["rows"], text)
