"""The coordinators are built after the listeners are up, or on first use (issue #12)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio

from odradek.broker.broker import COORDINATOR_MODULES, Broker
from odradek.config import BrokerConfig


def _broker(tmp_path: Path) -> Broker:
    return Broker(BrokerConfig({"log.dirs": str(tmp_path / "data")}))


def test_built_on_first_use_and_run_once(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    assert broker._coordinators is None
    started: list[str] = []

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            original = tg.start_soon

            def spy(func, *args, name=None):  # type: ignore[no-untyped-def]
                started.append(str(name))
                return original(func, *args, name=name)

            tg.start_soon = spy  # type: ignore[method-assign]
            await broker.start(tg)
            assert broker._coordinators is None  # start does not build them
            groups = broker.groups  # a request needing them builds and runs them at once
            assert broker.groups is groups and broker.share is broker.share
            await broker.start_coordinators()  # the after-listening build: nothing more
            assert broker.groups is groups
            tg.cancel_scope.cancel()

    anyio.run(main)
    broker.close()
    coordinator_tasks = [n for n in started if n.endswith("-coordinator")]
    assert sorted(coordinator_tasks) == ["group-coordinator", "share-coordinator",
                                         "transaction-coordinator"]


def test_start_coordinators_builds_them(tmp_path: Path) -> None:
    broker = _broker(tmp_path)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            await broker.start(tg)
            await broker.start_coordinators()
            assert broker._coordinators is not None
            with anyio.fail_after(10):
                await broker.groups.ready()  # loaded from its (empty) topic
            tg.cancel_scope.cancel()

    anyio.run(main)
    broker.close()


def test_serving_imports_leave_out_the_coordinators() -> None:
    code = ("import sys, odradek.cli, odradek.broker.server; "
            f"print(sorted(m for m in {list(COORDINATOR_MODULES)!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60).stdout.strip()
    assert out == "[]"
