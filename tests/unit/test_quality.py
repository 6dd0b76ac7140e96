"""The project's own rules, enforced in CI: ruff, mypy --strict on odradek/, the layer contract."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean() -> None:
    proc = _run(sys.executable, "-m", "ruff", "check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_is_clean() -> None:
    proc = _run(sys.executable, "-m", "mypy")  # strict, files = odradek (pyproject.toml)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_layers_are_kept() -> None:
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.fail("lint-imports (import-linter, a test dependency) is not installed")
    proc = _run(exe)
    assert proc.returncode == 0, proc.stdout + proc.stderr
