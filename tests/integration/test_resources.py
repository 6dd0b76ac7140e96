"""Memory and descriptors a client can make the broker hold (issue #10, findings 12-13).

Raw sockets to a broker subprocess; requests are ApiVersions v0 frames: int32 size | int16
api_key 18 | int16 version 0 | int32 correlation_id | int16 client_id length | client_id.
The broker's memory is its resident set size (VmRSS in /proc/PID/status).
"""

from __future__ import annotations

import os
import resource
import socket
import struct
import time
from pathlib import Path

import pytest
from it_support import BrokerProcess, StartBroker, create_topic, wait_until

from odradek.wire._generated.fetch import FetchRequest

pytestmark = pytest.mark.timeout(120)

_API_VERSIONS = struct.pack(">hhih", 18, 0, 7, 1) + b"r"
_REQUEST = struct.pack(">i", len(_API_VERSIONS)) + _API_VERSIONS


def _rss_mib(broker: BrokerProcess) -> float:
    assert broker.proc is not None
    for line in Path(f"/proc/{broker.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _connect(broker: BrokerProcess, timeout: float = 10.0) -> socket.socket:
    return socket.create_connection(("127.0.0.1", broker.port), timeout=timeout)


def _served(sock: socket.socket) -> bool:
    """Send ApiVersions; True if answered, False if the broker closed the connection."""
    try:
        sock.sendall(_REQUEST)
        head = _read(sock, 4)
        if len(head) < 4:
            return False
        body = _read(sock, struct.unpack(">i", head)[0])
    except (ConnectionError, TimeoutError):
        return False
    return len(body) >= 4 and struct.unpack(">i", body[:4])[0] == 7


def _new_client_served(broker: BrokerProcess) -> bool:
    with _connect(broker, timeout=5.0) as sock:
        return _served(sock)


def _read(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def _raise_nofile(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"RLIMIT_NOFILE hard limit {hard} < {need}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


# ODRADEK_SCALE_TESTS=1: the 10,000 of issue #10 (the client needs as many descriptors).
IDLE_CONNECTIONS = 10_000 if os.environ.get("ODRADEK_SCALE_TESTS") == "1" else 2_000


def test_idle_connections_and_announced_frames_hold_little_memory(
        start_broker: StartBroker, tmp_path: Path) -> None:
    _raise_nofile(IDLE_CONNECTIONS + 300)
    broker = start_broker(tmp_path / "data")
    with _connect(broker) as first:
        assert _served(first)
    base = _rss_mib(broker)
    socks: list[socket.socket] = []
    try:
        for i in range(IDLE_CONNECTIONS):
            socks.append(_connect(broker))
            if i % 250 == 249:  # served in accept order: every earlier one is being served
                assert _served(socks[-1])
        # Ten frames announcing 100 MiB each, with a few bytes of them.
        for s in socks[:10]:
            s.sendall(struct.pack(">i", 100 << 20) + b"\0" * 100)
        assert _served(socks[-1])
        held = _rss_mib(broker) - base
        print(f"\n{IDLE_CONNECTIONS} idle connections hold {held:.1f} MiB")
        # 60 KiB each at most (a task, a socket, a frame decoder; no buffer while idle).
        assert held < IDLE_CONNECTIONS * 0.06, f"{IDLE_CONNECTIONS} idle connections hold {held:.0f} MiB"
    finally:
        for s in socks:
            s.close()
    with _connect(broker) as last:
        wait_until(lambda: _new_client_served(broker) and _rss_mib(broker) - base < 60,
                   what="memory released after the connections closed")
        assert _served(last)


@pytest.mark.parametrize("setting", ["max.connections.per.ip", "max.connections"])
def test_max_connections_per_ip(start_broker: StartBroker, tmp_path: Path, setting: str) -> None:
    broker = start_broker(tmp_path / "data", {setting: "3"})
    socks = [_connect(broker) for _ in range(3)]
    try:
        assert all(_served(s) for s in socks)
        with _connect(broker) as extra:
            assert not _served(extra)
        socks.pop().close()
        wait_until(lambda: _new_client_served(broker), what="a slot after one closed")
    finally:
        for s in socks:
            s.close()


def test_max_connections(start_broker: StartBroker, tmp_path: Path) -> None:
    """The broker-wide limit (Kafka's max.connections), below the per-IP one."""
    broker = start_broker(tmp_path / "data", {"max.connections": "2"})
    socks = [_connect(broker) for _ in range(2)]
    try:
        assert all(_served(s) for s in socks)
        with _connect(broker) as extra:
            assert not _served(extra)
        socks.pop().close()
        wait_until(lambda: _new_client_served(broker), what="a slot after one closed")
    finally:
        for s in socks:
            s.close()


def test_queued_max_request_bytes_mutes_reading_until_memory_is_released(
        start_broker: StartBroker, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", {"queued.max.request.bytes": "1000"})
    with _connect(broker) as hog, _connect(broker, timeout=1.0) as other:
        assert _served(other)
        hog.sendall(struct.pack(">i", 5000) + b"\0" * 10)  # reserves 5,000 > 1,000
        broker.wait_for_log("request memory full")
        other.settimeout(1.0)
        other.sendall(_REQUEST)
        with pytest.raises(TimeoutError):  # muted: the broker does not read it
            other.recv(8)
        hog.close()  # releases the reservation
        other.settimeout(10.0)
        head = _read(other, 8)
        assert struct.unpack(">i", head[4:])[0] == 7


def test_accept_out_of_descriptors_recovers(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data", {})
    (tmp_path / "data").mkdir()
    broker.preexec_fn = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (80, 80))
    broker.start()
    socks: list[socket.socket] = []
    try:
        outcome = "served"
        for _ in range(200):
            s = _connect(broker, timeout=5.0)
            socks.append(s)
            try:
                s.sendall(_REQUEST)
                head = _read(s, 4)
                outcome = "served" if len(head) == 4 and _read(
                    s, struct.unpack(">i", head)[0]) else "closed"
            except ConnectionError:
                outcome = "closed"
            except TimeoutError:
                outcome = "left waiting"
            if outcome != "served":
                break
        # Out of descriptors, that one client is closed, not left waiting in the backlog.
        assert outcome == "closed", outcome
        for s in socks[:20]:
            s.close()
        del socks[:20]
        wait_until(lambda: _new_client_served(broker),
                   what="a new client served after descriptors were freed")
        assert broker.running
    finally:
        for s in socks:
            s.close()
        broker.stop()


def _long_poll_fetch(topic: str, max_wait_ms: int) -> bytes:
    """A Fetch v11 frame (header v1) for partition 0 of `topic` at offset 0 that waits up to
    `max_wait_ms` for a first byte."""
    req = FetchRequest(
        replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
        isolation_level=0, session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[
            FetchRequest.FetchPartition(partition=0, current_leader_epoch=-1, fetch_offset=0,
                                        log_start_offset=-1, partition_max_bytes=1 << 20)])])
    body = b"".join(bytes(p) for p in req.encode(11))
    header = struct.pack(">hhih", 1, 11, 9, 1) + b"r"
    return struct.pack(">i", len(header) + len(body)) + header + body


def test_connections_max_idle_ms_closes_idle_connections_only(
    start_broker: StartBroker, tmp_path: Path
) -> None:
    broker = start_broker(tmp_path / "data", {"connections.max.idle.ms": "600"})
    create_topic(broker.bootstrap, "quiet")
    idle, active = _connect(broker), _connect(broker)
    assert _served(idle)
    started = time.monotonic()
    while time.monotonic() - started < 2.0:  # a request every 200 ms keeps it open
        assert _served(active)
        time.sleep(0.2)
    assert not _served(idle)  # no bytes for over 600 ms: closed by the broker
    # A request being answered is not idle time: a 1.5 s long poll gets its answer.
    polling = _connect(broker)
    sent = time.monotonic()
    polling.sendall(_long_poll_fetch("quiet", 1500))
    head = _read(polling, 4)
    assert len(head) == 4
    answer = _read(polling, struct.unpack(">i", head)[0])
    assert struct.unpack(">i", answer[:4])[0] == 9
    assert time.monotonic() - sent >= 1.4
    assert "closing idle connection" in broker.stderr_text()
    for sock in (idle, active, polling):
        sock.close()


def test_negative_connections_max_idle_ms_never_closes(
    start_broker: StartBroker, tmp_path: Path
) -> None:
    broker = start_broker(tmp_path / "data", {"connections.max.idle.ms": "-1"})
    with _connect(broker) as sock:
        assert _served(sock)
        time.sleep(1.0)
        assert _served(sock)
