"""The web console under load: a 2,000-partition topic holding 1,000,000 records (produced
with confluent-kafka), a consumer group committed on every partition; then the time of each
JSON endpoint (median of 5, over HTTP) and of a page load in headless chromium (navigation to
the partitions table drawn). `python bench/console_load.py [--records N] [--partitions P]`.
Numbers: docs/console.md."""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import urllib.request

import confluent_kafka as ck

from odradek.client.groups import commit_offsets
from odradek.console.api import Console
from odradek.console.server import make_server
from odradek.testing import running_broker


def timed(url: str, n: int = 5) -> tuple[float, int]:
    times, size = [], 0
    for _ in range(n):
        t0 = time.perf_counter()
        with urllib.request.urlopen(url, timeout=120) as r:
            size = len(r.read())
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=2000)
    args = ap.parse_args()
    with running_broker() as broker:
        broker.create_topic("big", partitions=args.partitions)
        t0 = time.perf_counter()
        p = ck.Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50,
                         "batch.num.messages": 10000, "queue.buffering.max.messages": 500000,
                         "compression.type": "none", "acks": 1})
        value = b"x" * 100
        for i in range(args.records):
            while True:
                try:
                    p.produce("big", value, key=str(i).encode())
                    break
                except BufferError:
                    p.poll(0.1)
            if i % 10000 == 0:
                p.poll(0)
        p.flush(300)
        del p  # librdkafka's handle gone before the broker stops: no reconnect noise
        print(f"produced {args.records} records to {args.partitions} partitions in "
              f"{time.perf_counter() - t0:.1f} s")
        admin = broker.admin()
        commit_offsets(admin, "bench-group", {("big", q): 10 for q in range(args.partitions)})
        console = Console(broker.bootstrap, timeout=60)
        server = make_server(console, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        total = 0
        for start in range(0, args.partitions, 500):
            with urllib.request.urlopen(f"{base}/api/topics/big?start={start}&limit=500") as r:
                total += sum(q["messages"] for q in json.loads(r.read())["partitions"])
        print(f"the partitions table counts {total} records")
        for path in ["/api/cluster", "/api/topics", "/api/topics/big?start=0&limit=100",
                     "/api/topics/big?start=1900&limit=100", "/api/topics/big?start=0&limit=500",
                     "/api/topics/big/producers?start=0&limit=100",
                     "/api/topics/big/messages?partition=7&limit=50",
                     "/api/topics/big/messages?partition=7&offset=300&limit=50",
                     "/api/topics/big/messages?partition=7&timestamp=0&limit=50",
                     "/api/topics/big/configs", "/api/groups", "/api/groups/bench-group",
                     "/api/transactions"]:
            ms, size = timed(base + path)
            print(f"{path:55} {ms:8.1f} ms  {size:>9} bytes")
        t0 = time.perf_counter()
        console.sample_lag()
        print(f"one lag sample (all groups)                             "
              f"{(time.perf_counter() - t0) * 1000:8.1f} ms")
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            return
        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path="/usr/bin/chromium", args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"])
            page = b.new_page()
            for hash_, ready in [("#/topic/big", "#partitions tr[data-partition='99']"),
                                 ("#/topic/big?start=1900", "#partitions tr[data-partition='1999']"),
                                 ("#/messages/big?partition=7", "#messages tr.record"),
                                 ("#/group/bench-group", "#offsets tr[data-partition='99']"),
                                 ("#/group/bench-group?start=1900",
                                  "#offsets tr[data-partition='1999']")]:
                loads = []
                for _ in range(3):
                    page.goto("about:blank")
                    t0 = time.perf_counter()
                    page.goto(base + "/" + hash_)
                    page.wait_for_selector(ready, timeout=120_000)
                    loads.append((time.perf_counter() - t0) * 1000)
                print(f"page load {hash_:45} {statistics.median(loads):8.1f} ms")
            b.close()
        server.shutdown()
        console.close()


if __name__ == "__main__":
    main()
