"""The compatibility matrix as pytest tests: one broker, every driver, one test per row.

`matrix` runs `python -m compat_tests.run --target odradek --no-doc` once per session (its
output goes to the run's work dir and is attached on failure); each test then asserts its
(client, scenario) row. The drivers need `bash compat_tests/setup.sh` first (CI runs it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "compat: the stock-client compatibility matrix (minutes; needs compat_tests/setup.sh)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.compat)


class Matrix:
    def __init__(self, rows: list[dict[str, Any]], log: str) -> None:
        self.rows = {(r["client"], r["scenario"]): r for r in rows}
        self.log = log


@pytest.fixture(scope="session")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Matrix:
    out = tmp_path_factory.mktemp("compat")
    result = out / "rows.json"
    log = out / "runner.log"
    argv = [sys.executable, "-m", "compat_tests.run", "--target", "odradek", "--no-doc", "--json", str(result)]
    extra = os.environ.get("ODRADEK_COMPAT_ARGS")  # e.g. "--clients kcat,confluent-kafka"
    if extra:
        argv += extra.split()
    with log.open("w") as f:
        proc = subprocess.run(argv, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, timeout=1800)
    text = log.read_text(errors="replace")
    if proc.returncode != 0 or not result.exists():
        pytest.fail(f"the matrix runner failed ({proc.returncode}):\n{text[-3000:]}")
    return Matrix(json.loads(result.read_text())["rows"], text)
