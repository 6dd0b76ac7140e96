"""server.send_all: buffers by sendmsg, file regions by sendfile, over a socket whose buffers
are small so that every send is partial and the sender parks on EAGAIN; the bytes arrive in
order and whole, and every region is closed after, also when the send fails."""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

import anyio
import pytest

from odradek.broker.connection import CloseConnection
from odradek.broker.server import send_all
from odradek.wire.regions import FileRegion, Part


def pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    for s in (a, b):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.setblocking(False)
    return a, b


async def drain(sock: socket.socket, size: int) -> bytes:
    got = bytearray()
    while len(got) < size:
        try:
            chunk = sock.recv(1000)  # slowly: the sender must wait for room
        except BlockingIOError:
            await anyio.wait_readable(sock)
            continue
        if not chunk:
            break
        got += chunk
        await anyio.sleep(0)
    return bytes(got)


def run_send(parts: list[Part], size: int) -> bytes:
    a, b = pair()

    async def main() -> bytes:
        received = b""

        async def reader() -> None:
            nonlocal received
            received = await drain(b, size)

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await send_all(a, parts)
        return received

    try:
        return anyio.run(main)
    finally:
        a.close()
        b.close()


@pytest.fixture
def data_file(tmp_path: Path) -> tuple[Path, bytes]:
    content = random.Random(1).randbytes(300_000)
    path = tmp_path / "seg.log"
    path.write_bytes(content)
    return path, content


def region(path: Path, offset: int, length: int) -> FileRegion:
    return FileRegion(os.open(path, os.O_RDONLY), offset, length)


def test_buffers_and_regions_arrive_in_order_through_partial_sends(
        data_file: tuple[Path, bytes]) -> None:
    path, content = data_file
    regions = [region(path, 5, 100_000), region(path, 0, 7), region(path, 150_000, 150_000)]
    parts: list[Part] = [b"head", regions[0], memoryview(b"between"), bytearray(b""),
                         regions[1], regions[2], b"end"]
    want = (b"head" + content[5:100_005] + b"between" + content[:7]
            + content[150_000:300_000] + b"end")
    assert run_send(parts, len(want)) == want
    assert all(r.closed for r in regions)


def test_many_small_buffers_beyond_iov_max(data_file: tuple[Path, bytes]) -> None:
    path, content = data_file
    parts: list[Part] = []
    want = b""
    for i in range(1500):
        parts.append(b"%d," % i)
        want += b"%d," % i
        if i % 500 == 0:
            parts.append(region(path, i, 3000))
            want += content[i:i + 3000]
    assert run_send(parts, len(want)) == want


def test_a_file_shorter_than_its_region_closes_the_connection(
        data_file: tuple[Path, bytes]) -> None:
    path, content = data_file
    short = region(path, len(content) - 10, 20)  # the file ends 10 bytes early
    a, b = pair()

    async def main() -> None:
        await send_all(a, [b"x", short])

    with pytest.raises(CloseConnection, match="10 bytes short"):
        anyio.run(main)
    assert short.closed
    a.close()
    b.close()


def test_regions_are_closed_when_the_peer_is_gone(data_file: tuple[Path, bytes]) -> None:
    path, _ = data_file
    regions = [region(path, 0, 200_000), region(path, 0, 10)]
    a, b = pair()
    b.close()

    async def main() -> None:
        await send_all(a, [b"x", *regions])

    with pytest.raises(OSError):
        anyio.run(main)
    assert all(r.closed for r in regions)
    a.close()
