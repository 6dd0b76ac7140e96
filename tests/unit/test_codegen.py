"""The committed generated code matches what the generator makes from the specs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT.parent / "shared" / "kafka-protocol"


@pytest.mark.skipif(not (SPECS / "message").is_dir(), reason="../shared specs absent (fresh clone)")
def test_generated_code_is_up_to_date() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tools.codegen", "--check"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def test_every_api_key_0_to_87_is_generated() -> None:
    from odradek.wire import API_SPECS

    assert sorted(API_SPECS) == list(range(88))
