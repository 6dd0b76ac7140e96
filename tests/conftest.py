"""The tiers of `./test`. Every test belongs to exactly one tier, by the path it lives in:

    lint         tests/unit/test_quality.py   ruff, mypy --strict, import-linter
    unit         tests/unit (all the rest)    Python only
    integration  tests/integration            real brokers driven by stock clients; kcat
    compat       tests/compat                 the compatibility matrix; kcat and the drivers
    browser      tests/browser                the web console in chromium (Playwright)

Each test gets its tier's marker (`-m "not compat"` works). `--tier NAME`, which `./test`
passes, runs one tier: folders of other tiers are not collected at all, and anything else that
was collected (a path given on the command line) is deselected. A test outside these paths, or
marked with another tier than its path's, stops the run at collection, so no test is run by
two tiers or by none.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
TIERS: dict[str, Path] = {
    "lint": TESTS / "unit" / "test_quality.py",
    "unit": TESTS / "unit",
    "integration": TESTS / "integration",
    "compat": TESTS / "compat",
    "browser": TESTS / "browser",
}


@cache
def tier_of(path: Path) -> str | None:
    """The tier of a test file or folder: the most specific tier path holding it."""
    path = path.resolve()
    best: str | None = None
    for name, root in TIERS.items():
        if (path == root or root in path.parents) and (
            best is None or len(root.parts) > len(TIERS[best].parts)
        ):
            best = name
    return best


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tier",
        choices=list(TIERS),
        default=None,
        help="run only this tier of ./test (lint, unit, integration, compat, browser)",
    )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    tier = config.getoption("tier")
    if tier is None:
        return None
    own = tier_of(collection_path)
    if own is None or own == tier:
        return None  # this tier's, or in no tier: collected (and then refused, below)
    wanted = TIERS[tier]
    if collection_path.resolve() in wanted.parents:
        return None  # another tier's folder that holds this tier's path (unit holds lint's)
    return True


@pytest.hookimpl(tryfirst=True)  # before -m/-k deselect, so the tier markers count there
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    problems = []
    tiers = []
    for item in items:
        tier = tier_of(item.path)
        tiers.append(tier)
        marked = {m.name for m in item.iter_markers() if m.name in TIERS} - {tier}
        if tier is None:
            problems.append(f"{item.nodeid}: in no tier of ./test (see tests/conftest.py)")
        elif marked:
            problems.append(
                f"{item.nodeid}: marked {', '.join(sorted(marked))} but lives in the "
                f"{tier} tier (tiers go by path: move the test)"
            )
        else:
            item.add_marker(tier)
    if problems:
        raise pytest.UsageError("tests outside the tiers of ./test:\n  " + "\n  ".join(problems))
    only = config.getoption("tier")
    if only is not None and any(tier != only for tier in tiers):
        config.hook.pytest_deselected(items=[i for i, t in zip(items, tiers, strict=True) if t != only])
        items[:] = [i for i, t in zip(items, tiers, strict=True) if t == only]
