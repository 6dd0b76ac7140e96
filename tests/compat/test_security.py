"""The security suite of the compatibility matrix against Odradek, one test per row.

`security_matrix` runs `python -m compat_tests.run --suite security --target odradek --no-doc`
once per session: one broker with SASL_PLAINTEXT, SSL (mTLS) and SASL_SSL listeners and the
StandardAuthorizer (compat_tests/security_setup.py), every driver with every security scenario
(about 15 s for the Python drivers and kcat, under a minute with the Java/Go/Node ones).
A row must PASS, or be NOT_SUPPORTED where the client cannot (below, with the reason), or fail
for a listed reason as a strict xfail (which turns into a failure once the row passes, so the
entry must go). Nothing is skipped. The Apache Kafka oracle run of the same rows:
`python -m compat_tests.run --suite security --target kafka --strict`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compat_tests.drivers import DRIVERS
from compat_tests.python.kcat import librdkafka_version
from compat_tests.security_setup import odradek_mechanisms

REPO = Path(__file__).resolve().parents[2]

# (client, scenario) -> why the client cannot run it; the driver reports NOT_SUPPORTED.
NOT_SUPPORTED: dict[tuple[str, str], str] = {}
if librdkafka_version() < (2, 6, 1):
    NOT_SUPPORTED[("kcat", "sasl-scram-sha-512")] = (
        "kcat's librdkafka before 2.6.1 sends a wrong SCRAM client-final nonce (librdkafka "
        "#4895); Kafka 4.4 rejects it as Odradek does")
# kafkajs 2.2.4 replaces the broker's GROUP_ / TRANSACTIONAL_ID_AUTHORIZATION_FAILED from
# FindCoordinator with KafkaJSGroupCoordinatorNotFound (the driver checks its debug log for
# the broker's real answer and reports NOT_SUPPORTED, on Kafka too).
NOT_SUPPORTED[("kafkajs", "acl-denied-group")] = "kafkajs hides the coordinator's error"
NOT_SUPPORTED[("kafkajs", "acl-denied-txn")] = "kafkajs hides the coordinator's error"
NOT_SUPPORTED[("aiokafka", "quota-throttle")] = "aiokafka exposes no throttle time"

# (client, scenario) -> why the row fails on Odradek today.
XFAIL: dict[tuple[str, str], str] = {}
if "OAUTHBEARER" not in odradek_mechanisms():
    # The runner leaves the mechanism out (Odradek refuses to start with it) and reports these
    # rows FAIL "broker lacks OAUTHBEARER"; they pass on Kafka.
    XFAIL.update({(c, "sasl-oauthbearer"): "Odradek has no OAUTHBEARER yet (helper authx)"
                  for c, d in DRIVERS.items() if "sasl-oauthbearer" in d.security_scenarios})

_ROWS = [(c, s) for c, d in DRIVERS.items() for s in d.security_scenarios]


@pytest.fixture(scope="session")
def security_matrix(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    out = tmp_path_factory.mktemp("compat-security")
    result, log = out / "rows.json", out / "runner.log"
    argv = [sys.executable, "-m", "compat_tests.run", "--suite", "security", "--target", "odradek",
            "--no-doc", "--json", str(result)]
    with log.open("w") as f:
        proc = subprocess.run(argv, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, timeout=900)
    text = log.read_text(errors="replace")
    if proc.returncode != 0 or not result.exists():
        pytest.fail(f"the security suite runner failed ({proc.returncode}):\n{text[-3000:]}")
    return {(r["client"], r["scenario"]): r for r in json.loads(result.read_text())["rows"]}


def _params() -> list[object]:
    params: list[object] = []
    for client, scenario in _ROWS:
        marks = []
        if (client, scenario) in XFAIL:
            marks.append(pytest.mark.xfail(strict=True, reason=XFAIL[(client, scenario)]))
        params.append(pytest.param(client, scenario, marks=marks, id=f"{client}:{scenario}"))
    return params


@pytest.mark.timeout(900)
@pytest.mark.parametrize(("client", "scenario"), _params())
def test_security(security_matrix: dict[tuple[str, str], dict[str, Any]], client: str,
                  scenario: str) -> None:
    row = security_matrix.get((client, scenario))
    assert row is not None, f"the runner reported no row for {client} / {scenario}"
    if (client, scenario) in NOT_SUPPORTED:
        assert row["status"] == "NOT_SUPPORTED", f"{row['status']}: {row['reason']}"
        return
    assert row["status"] == "PASS", f"{client} / {scenario}: {row['status']}: {row['reason']}"
