"""What a broker costs before any traffic (issue #12, points 3-5), per broker in one run:

- `start`: launch to the first answered Metadata (Odradek: a fixed port probed every 2 ms
  with a raw Metadata v1 request; Kafka: from the `kafka.Kafka` launch, after storage
  format, to the first Metadata naming the broker, as `compat_tests.brokers` waits for it,
  probed every 0.5 s, so it is an upper bound), the best of `--starts` launches; next to it
  the floor: the same interpreter starting and importing asyncio alone, best of as many;
- `idle RSS`: the broker's resident set once started, and with `--connections` idle
  connections (each has answered one ApiVersions, then sends nothing);
- `create`: a `--partitions`-partition topic created (CreateTopics answered, admin client);
- `ping`: broker CPU (user + system) per request over `--pings` ApiVersions sent one at a
  time on one connection (send, read the answer, repeat): the receive path's cost, waits
  for a readable socket included.

    python -m bench.startup [--baseline PATH] [--reference] [--connections 10000]
                            [--partitions 2000] [--starts 5]
"""

from __future__ import annotations

import argparse
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.throughput import cpu_seconds
from compat_tests.brokers import REPO, Broker, KafkaBroker, OdradekBroker, free_port

_METADATA_V1 = struct.pack(">hhih", 3, 1, 1, 5) + b"bench" + struct.pack(">i", -1)
_API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 2, 5) + b"bench"


def _request(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _read_frame(sock: socket.socket) -> bytes:
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            raise ConnectionError("closed")
        head += chunk
    (size,) = struct.unpack(">i", head)
    body = bytearray()
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            raise ConnectionError("closed")
        body += chunk
    return bytes(body)


def python_floor() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import asyncio"], check=True)
    return time.perf_counter() - t0


def odradek_first_metadata(source: Path, data_dir: Path) -> float:
    """Seconds from launch to the first Metadata answered; the broker is stopped after."""
    port = free_port()
    argv = [sys.executable, "-m", "odradek", "serve",
            "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
            "--override", f"log.dirs={data_dir}"]
    env = {"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=source, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"odradek exited with {proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(_request(_METADATA_V1))
                    _read_frame(s)
                    return time.perf_counter() - t0
            except OSError:
                time.sleep(0.002)
    finally:
        proc.terminate()
        proc.wait(30)


def kafka_first_metadata(broker: KafkaBroker) -> float:
    launched: list[float] = []

    def watch() -> None:  # the launch of kafka.Kafka, not of the storage format before it
        while broker.proc is None:
            time.sleep(0.001)
        launched.append(time.perf_counter())

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    broker.start()
    t.join()
    return time.perf_counter() - launched[0]


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def idle_connections(port: int, n: int) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(_request(_API_VERSIONS_V0))
        _read_frame(s)
        socks.append(s)
    return socks


def create_topic_s(bootstrap: str, partitions: int) -> float:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    admin.list_topics(timeout=30)  # connected before the clock starts
    t0 = time.perf_counter()
    futures = admin.create_topics([NewTopic("bench-create", partitions, 1)],
                                  operation_timeout=120, request_timeout=120)
    for f in futures.values():
        f.result()
    return time.perf_counter() - t0


def ping_cpu_us(port: int, pid: int, n: int) -> float:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        frame = _request(_API_VERSIONS_V0)
        before = cpu_seconds(pid)
        for _ in range(n):
            s.sendall(frame)
            _read_frame(s)
        return (cpu_seconds(pid) - before) / n * 1e6


def measure(broker: Broker, connections: int, partitions: int, pings: int) -> dict[str, float]:
    assert broker.proc is not None
    time.sleep(1.0)  # start-up work done, background loops settled
    out = {"rss_idle": rss_mib(broker.proc.pid)}
    out["ping_us"] = ping_cpu_us(broker.port, broker.proc.pid, pings)
    socks = idle_connections(broker.port, connections)
    time.sleep(1.0)
    out["rss_conns"] = rss_mib(broker.proc.pid)
    for s in socks:
        s.close()
    out["create_s"] = create_topic_s(broker.bootstrap, partitions)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", type=Path, action="append", default=[],
                    help="also run the Odradek of this checkout; repeatable")
    ap.add_argument("--reference", action="store_true", help="also run Apache Kafka 4.4")
    ap.add_argument("--connections", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--pings", type=int, default=20_000)
    args = ap.parse_args()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the client's idle sockets
    sources = {"odradek": REPO, **{p.resolve().name: p.resolve() for p in args.baseline}}
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as work:
        floors, starts = [], {name: [] for name in sources}  # type: dict[str, list[float]]
        order = list(sources)
        for i in range(args.starts):  # interleaved, each first in turn: load hits all alike
            floors.append(python_floor())
            for name in order[i % len(order):] + order[:i % len(order)]:
                starts[name].append(odradek_first_metadata(sources[name],
                                                           Path(tempfile.mkdtemp(dir=work))))
        for name, src in sources.items():
            broker = OdradekBroker(Path(tempfile.mkdtemp(dir=work)), Path(work) / f"{name}.log",
                                   {"num.partitions": "1"}, source=src)
            broker.start()
            try:
                rows[name] = {"start_s": min(starts[name]), **measure(broker, args.connections,
                                                                       args.partitions,
                                                                       args.pings)}
            finally:
                broker.stop()
        if args.reference:
            kafka = KafkaBroker(Path(tempfile.mkdtemp(dir=work)), Path(work) / "kafka.log")
            try:
                start = kafka_first_metadata(kafka)
                rows["kafka"] = {"start_s": start, **measure(kafka, args.connections,
                                                             args.partitions, args.pings)}
            finally:
                kafka.stop()
    floor = min(floors)
    print(f"python + import asyncio: {floor * 1000:.0f} ms (best of {args.starts}); "
          f"{args.connections} idle connections; {args.partitions}-partition topic")
    print(f"{'broker':16} {'start ms':>9} {'x floor':>8} {'RSS MiB':>8} {'+conns MiB':>11} "
          f"{'create s':>9} {'ping CPU us':>12}")
    for name, r in rows.items():
        print(f"{name:16} {r['start_s'] * 1000:9.0f} {r['start_s'] / floor:8.2f} "
              f"{r['rss_idle']:8.1f} {r['rss_conns'] - r['rss_idle']:11.1f} {r['create_s']:9.2f} "
              f"{r['ping_us']:12.1f}")


if __name__ == "__main__":
    main()
