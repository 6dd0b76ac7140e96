"""A seconds-long smoke run of the Jepsen-style checker (compat_tests/jepsen.py) against
`odradek serve --brokers 3`: the workload, a controlled-stop nemesis, the history and the
checker end to end. The long runs (minutes, against Odradek and Kafka) are opt-in:
`python -m compat_tests.jepsen --target odradek|kafka --seconds N`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from compat_tests import jepsen

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(bool(os.environ.get("ODRADEK_IT_SERVER_CMD")),
                       reason="odradek's simulated cluster and its admin endpoint"),
]


def test_jepsen_smoke_run_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    code = jepsen.main(["--target", "odradek", "--seconds", "7", "--seed", "3",
                        "--nemesis", "stop", "--history", str(path)])
    events = [json.loads(line) for line in path.read_text().splitlines()]
    kinds = {e["type"] for e in events}
    assert {"send", "ack", "txn", "poll", "final", "assign"} <= kinds
    assert any(e["type"] == "nemesis" and e["op"] == "stop" for e in events)
    assert code == 0
