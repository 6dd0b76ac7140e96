"""Every (client, scenario) of the compatibility matrix against Odradek.

A row must be PASS, or NOT_SUPPORTED where the client lacks the feature (listed below with the
reason). Rows that fail today because the broker lacks a feature are listed in XFAIL with the
reason, as strict xfails: when the feature lands the row passes, the xfail turns into a
failure, and the entry must be removed here. Nothing is skipped.
"""

from __future__ import annotations

import os

import pytest

from compat_tests.drivers import DRIVERS, SLOW_ROWS

# (client, scenario) -> why the client cannot run it. The driver reports NOT_SUPPORTED.
NOT_SUPPORTED: dict[tuple[str, str], str] = {
    ("kcat", "admin-topics"): "kcat has no admin operations",
    ("kcat", "consume-transform-produce"): "kcat cannot send consumer offsets in a transaction",
    ("kafkajs", "compression-zstd"): "kafkajs has no zstd codec; its plugin needs a native build",
}

# The rows of drivers.SLOW_ROWS only with ODRADEK_COMPAT_SLOW=1 (else compat_tests/slow.sh runs them).
_SLOW = os.environ.get("ODRADEK_COMPAT_SLOW") == "1"
_ALL = [(c, s) for c, d in DRIVERS.items() for s in d.all_scenarios() if _SLOW or (c, s) not in SLOW_ROWS]

# (client, scenario) -> why the row fails on Odradek today (the broker lacks something). Empty:
# every row passed on 2026-11-29. Add an entry with the reason when a row is expected to fail
# (e.g. a feature is being rebuilt); strict, so it is removed once the row passes again.
XFAIL: dict[tuple[str, str], str] = {}


def _params() -> list[object]:
    params: list[object] = []
    for client, scenario in _ALL:
        marks = []
        if (client, scenario) in XFAIL:
            marks.append(pytest.mark.xfail(strict=True, reason=XFAIL[(client, scenario)]))
        params.append(pytest.param(client, scenario, marks=marks, id=f"{client}:{scenario}"))
    return params


@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("client", "scenario"), _params())
def test_matrix(matrix: object, client: str, scenario: str) -> None:
    rows = matrix.rows  # type: ignore[attr-defined]
    selected = os.environ.get("ODRADEK_COMPAT_ARGS")
    row = rows.get((client, scenario))
    if row is None and selected:
        pytest.fail(f"row not run: ODRADEK_COMPAT_ARGS={selected!r} left it out")
    assert row is not None, f"the runner reported no row for {client} / {scenario}"
    if (client, scenario) in NOT_SUPPORTED:
        assert row["status"] == "NOT_SUPPORTED", f"{row['status']}: {row['reason']}"
        return
    assert row["status"] == "PASS", f"{client} / {scenario}: {row['status']}: {row['reason']}"
