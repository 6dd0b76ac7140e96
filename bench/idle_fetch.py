"""What an idle consumer costs: Fetch bytes on the wire and broker CPU per poll, with and
without fetch sessions (KIP-227).

A kafka-python consumer (it keeps fetch sessions, as the Java client does) is assigned every
partition of an N-partition topic holding no records and polls for `--seconds`, through a
loopback proxy that counts the bytes each way and the Fetch requests. The broker advertises
the proxy's port, so every connection passes through it. Runs, in the same run:

- `sessions`: this checkout, default `max.incremental.fetch.session.cache.slots`;
- `no-sessions`: this checkout with the cache at 0 slots (every poll is a full fetch);
- with `--baseline PATH`, the Odradek of another checkout (e.g. the commit before sessions).

CPU is the broker process's user + system time (from /proc) during the idle window, per
Fetch; "net" subtracts what the broker spends in as long a window with no client connected
(its background loops over the partitions). The broker answers each idle fetch after `fetch.wait.max.ms` (here 100 ms), so the
poll rate is about 10/s whatever the cost.

    python -m bench.idle_fetch [--partitions 1000] [--seconds 10] [--baseline PATH] [--rounds 1]
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path

from bench.throughput import cpu_seconds
from compat_tests.brokers import OdradekBroker

FETCH = 1


class CountingProxy:
    """Forwards loopback TCP to `target`; counts bytes each way and Fetch request frames."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.target = 0
        self.up = self.down = self.fetches = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self) -> tuple[int, int, int]:
        with self._lock:
            out = (self.up, self.down, self.fetches)
            self.up = self.down = self.fetches = 0
            return out

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, up: bool) -> None:
        buf = bytearray()
        try:
            while data := src.recv(1 << 16):
                dst.sendall(data)
                fetches = 0
                if up:  # count Fetch request frames by their api key
                    buf += data
                    while len(buf) >= 6:
                        size = int.from_bytes(buf[:4], "big") + 4
                        if len(buf) < size:
                            break
                        fetches += int.from_bytes(buf[4:6], "big") == FETCH
                        del buf[:size]
                with self._lock:
                    if up:
                        self.up += len(data)
                        self.fetches += fetches
                    else:
                        self.down += len(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)


def run(partitions: int, seconds: float, source: Path | None, slots: str | None,
        work: Path) -> dict[str, float]:
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka import KafkaConsumer, TopicPartition

    proxy = CountingProxy()
    overrides = {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"}
    if slots is not None:
        overrides["max.incremental.fetch.session.cache.slots"] = slots
    broker = OdradekBroker(Path(tempfile.mkdtemp(dir=work)), work / "broker.log", overrides,
                           source=source)
    broker.start()
    proxy.target = broker.port
    consumer = None
    try:
        topic = f"idle-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
        assert broker.proc is not None
        time.sleep(2)
        alone0 = cpu_seconds(broker.proc.pid)  # the broker's own background work, no client
        time.sleep(seconds)
        alone = cpu_seconds(broker.proc.pid) - alone0
        consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{proxy.port}", group_id=None,
                                 enable_auto_commit=False, fetch_max_wait_ms=100)
        deadline = time.monotonic() + 60
        while len(consumer.partitions_for_topic(topic) or ()) < partitions:
            assert time.monotonic() < deadline, "topic metadata incomplete"
            time.sleep(0.2)
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        warm = time.monotonic() + 2
        while time.monotonic() < warm:  # the first (full) fetch and any re-sent partitions
            assert not consumer.poll(timeout_ms=200)
        proxy.reset()
        cpu0 = cpu_seconds(broker.proc.pid)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            assert not consumer.poll(timeout_ms=200)
        cpu = cpu_seconds(broker.proc.pid) - cpu0
        up, down, fetches = proxy.reset()
    finally:
        if consumer is not None:
            consumer.close()
        broker.stop()
        proxy.close()
    n = max(fetches, 1)
    return {"fetches": fetches, "up_b": up / n, "down_b": down / n, "cpu_ms": cpu * 1000 / n,
            "net_ms": max(cpu - alone, 0) * 1000 / n, "alone_ms_s": alone * 1000 / seconds}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--baseline", type=Path,
                    help="also run the Odradek of this checkout (a worktree of another commit)")
    ap.add_argument("--rounds", type=int, default=1, help="alternate the brokers this often")
    args = ap.parse_args()
    targets: list[tuple[str, Path | None, str | None]] = [
        ("sessions", None, None), ("no-sessions", None, "0")]
    if args.baseline:
        targets.append(("baseline", args.baseline.resolve(), None))
    rounds: dict[str, list[dict[str, float]]] = {t[0]: [] for t in targets}
    with tempfile.TemporaryDirectory() as work:
        for _ in range(args.rounds):
            for name, source, slots in targets:
                rounds[name].append(run(args.partitions, args.seconds, source, slots, Path(work)))
    print(f"idle kafka-python consumer on {args.partitions} partitions, {args.seconds:.0f} s, "
          f"median of {args.rounds} round(s); per Fetch: bytes on the wire, broker CPU")
    print(f"{'broker':12} {'fetches':>8} {'request B':>10} {'response B':>11} {'CPU ms':>8} "
          f"{'net CPU ms':>11} {'idle broker CPU ms/s':>21}")
    for name, rs in rounds.items():
        r = {k: statistics.median(x[k] for x in rs) for k in rs[0]}
        print(f"{name:12} {r['fetches']:8.0f} {r['up_b']:10.0f} {r['down_b']:11.0f} "
              f"{r['cpu_ms']:8.3f} {r['net_ms']:11.3f} {r['alone_ms_s']:21.1f}")


if __name__ == "__main__":
    main()
