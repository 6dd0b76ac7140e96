"""server._Readable: the socket stays registered with the loop across waits, and a busy
connection with bytes waiting is unregistered instead of waking the loop forever."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from odradek.broker.server import _Readable


async def _read(sock: socket.socket, readable: _Readable) -> bytes:
    while True:  # as the server: a wake-up may find nothing yet (a stale callback)
        try:
            return sock.recv(100)
        except BlockingIOError:
            await readable.wait()


def _counting(loop: asyncio.AbstractEventLoop) -> dict[str, int]:
    calls = {"add": 0, "remove": 0}
    add, remove = loop.add_reader, loop.remove_reader

    def add_reader(fd: Any, cb: Any, *args: Any) -> None:
        calls["add"] += 1
        add(fd, cb, *args)

    def remove_reader(fd: Any) -> bool:
        calls["remove"] += 1
        return remove(fd)

    loop.add_reader = add_reader  # type: ignore[method-assign]
    loop.remove_reader = remove_reader  # type: ignore[method-assign]
    return calls


def test_registered_once_across_requests() -> None:
    async def main() -> dict[str, int]:
        calls = _counting(asyncio.get_running_loop())
        a, b = socket.socketpair()
        a.setblocking(False)
        readable = _Readable(a)
        for _ in range(20):  # a request arrives, is read and answered, the next one comes
            asyncio.get_running_loop().call_later(0.001, b.send, b"x")
            assert await _read(a, readable) == b"x"
        readable.close()
        a.close()
        b.close()
        return calls

    assert asyncio.run(main()) == {"add": 1, "remove": 1}


def test_busy_connection_with_bytes_waiting_is_unregistered() -> None:
    async def main() -> tuple[dict[str, int], int]:
        calls = _counting(asyncio.get_running_loop())
        a, b = socket.socketpair()
        a.setblocking(False)
        readable = _Readable(a)
        asyncio.get_running_loop().call_later(0.001, b.send, b"x")
        assert await _read(a, readable) == b"x"  # waited: registered
        assert calls == {"add": 1, "remove": 0}
        b.send(b"next request")  # arrives while the task is busy and not reading
        for _ in range(50):
            await asyncio.sleep(0)
        removed = calls["remove"]
        assert await _read(a, readable) == b"next request"  # reads what waited
        await asyncio.wait_for(_wait_again(a, b, readable), 5)  # registers again
        readable.close()
        a.close()
        b.close()
        return calls, removed

    calls, removed_while_busy = asyncio.run(main())
    assert removed_while_busy == 1
    assert calls["add"] == 2


async def _wait_again(a: socket.socket, b: socket.socket, readable: _Readable) -> None:
    asyncio.get_running_loop().call_later(0.001, b.send, b"y")
    assert await _read(a, readable) == b"y"
