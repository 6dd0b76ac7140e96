"""The handler time request_percentage counts (broker/throttle.py): only the coroutine's own
steps on the event loop, not the time it waits; results, errors and cancellation pass
through."""

from __future__ import annotations

import time

import anyio
import pytest

from odradek.broker.throttle import _Timed, user_name


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_waits_are_not_counted() -> None:
    async def handler() -> str:
        _spin(0.02)
        await anyio.sleep(0.3)  # a long poll's wait
        _spin(0.02)
        return "done"

    async def main() -> tuple[str, int]:
        timed = _Timed(handler())
        return await timed, timed.ns

    result, ns = anyio.run(main)
    assert result == "done"
    assert 0.04e9 <= ns < 0.2e9


def test_errors_and_cancellation_pass_through() -> None:
    async def failing() -> None:
        await anyio.sleep(0)
        raise ValueError("bad")

    async def main() -> None:
        with pytest.raises(ValueError, match="bad"):
            await _Timed(failing())
        cleaned = []

        async def parked() -> None:
            try:
                await anyio.sleep(10)
            finally:
                cleaned.append(True)

        with anyio.move_on_after(0.05):
            await _Timed(parked())
        assert cleaned == [True]

    anyio.run(main)


def test_user_name_is_the_principal_name() -> None:
    assert user_name("User:alice") == "alice"
    assert user_name("User:CN=a,O=b") == "CN=a,O=b"
    assert user_name("User:ANONYMOUS") == "ANONYMOUS"
