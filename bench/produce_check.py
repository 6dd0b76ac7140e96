"""The produce path's record check, alone and in the handler: CPU seconds per GB of records.

`walk`: `RecordBatch.check_records` on one batch (default 1 MiB of 1 KiB records), with the
Python record walker and with the C one (odradek/wire/_speedups.c), uncompressed (the hot
path: every field of every record; and keys required, as on a compacted topic) and compressed (the
decompression is the same for both; the walk over its chunks is what differs).

`handler`: the Produce handler in-process (a real Broker on a temp dir, the request encoded
and decoded as the handler tests do it, all calls on one event loop), ProduceRequest v9 of
one batch of 500 x 1 KiB records, `--calls` times, process CPU time; for this checkout and each `--source` checkout
(e.g. `git worktree add /tmp/base <commit>`), each in its own process, alternated `--rounds`
times, median reported.

    python -m bench.produce_check walk [--record-size 1024] [--batch-bytes 1048576]
    python -m bench.produce_check handler [--source PATH ...] [--calls 400] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _cpu_per_call(fn: object, budget: float) -> float:
    """Process CPU seconds per call of `fn`, over at least `budget` seconds; best of 5."""
    assert callable(fn)
    fn()
    n = 1
    while True:
        t0 = time.process_time()
        for _ in range(n):
            fn()
        spent = time.process_time() - t0
        if spent >= budget / 5:
            break
        n *= 2
    best = spent / n
    for _ in range(4):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        best = min(best, (time.process_time() - t0) / n)
    return best


def walk(args: argparse.Namespace) -> None:
    from odradek.wire import records
    from odradek.wire.compression import CompressionType
    from odradek.wire.records import RecordBatch, build_batch

    count = args.batch_bytes // args.record_size
    # A record's own overhead (length, attributes, deltas, key and value lengths, headers
    # count) is ~12 bytes here: the value makes up the rest of record_size. A quarter of each
    # value is random, so compressed batches are not all zeros.
    rng = random.Random(0)
    value = args.record_size - 20
    items = [(b"%08d" % i, rng.randbytes(value // 4) + bytes(value - value // 4))
             for i in range(count)]
    walkers = [records._PY_WALKERS] + ([records._C_WALKERS] if records._C_WALKERS else [])
    print(f"check_records on one batch of {count} records of ~{args.record_size} B; process "
          f"CPU, best of 5; C walkers: {'built' if records._C_WALKERS else 'NOT BUILT'}")
    print(f"{'batch':34} {'walker':7} {'us/batch':>10} {'ns/record':>10} {'CPU s/GB':>9}")
    for codec in (CompressionType.NONE, CompressionType.LZ4, CompressionType.ZSTD):
        raw = build_batch(items, base_timestamp=0, compression=codec)
        batch = RecordBatch(memoryview(bytearray(raw)))
        for keys in ((False, True) if codec == CompressionType.NONE else (False,)):
            label = f"{codec.name.lower()}{', keys required' if keys else ''} ({len(raw) >> 10} KiB)"
            for w in walkers:
                records._walkers = w
                assert batch.check_records(1 << 30, keys_required=keys) == []
                per = _cpu_per_call(
                    lambda b=batch, k=keys: b.check_records(1 << 30, keys_required=k),
                    args.budget)
                gb = count * args.record_size / 1e9
                print(f"{label:34} {w.name:7} {per * 1e6:10.1f} {per / count * 1e9:10.1f} "
                      f"{per / gb:9.3f}")


_CHILD = r"""
import json, sys, tempfile, time
from pathlib import Path
import anyio
source, calls, size, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for sub in ("tests/unit/broker/api", "tests/unit/api"):  # where admin_testutil lives
    if (Path(source) / sub / "admin_testutil.py").exists():
        sys.path.insert(0, str(Path(source) / sub))
        break
import admin_testutil as tu
from odradek.wire import ApiKey
from odradek.wire._generated.produce import ProduceRequest
from odradek.wire.records import build_batch
import odradek, odradek.wire.records as records
assert Path(odradek.__file__).resolve().is_relative_to(Path(source).resolve()), odradek.__file__
walker = (records.record_walker() if hasattr(records, "record_walker") else
          "python" if hasattr(records.RecordBatch, "check_records") else "none")
batch = build_batch([(b"%08d" % i, bytes(size - 20)) for i in range(count)], base_timestamp=0)
request = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[
    ProduceRequest.TopicProduceData(name="t", partition_data=[
        ProduceRequest.PartitionProduceData(index=0, records=batch)])])

if hasattr(tu, "acall"):  # the handler on a running loop, through the codec both ways
    async def one(broker):
        return await tu.acall(broker, ApiKey.PRODUCE, 9, request)
else:  # older checkouts (c5ebc4b): what their tu.call does, without an event loop per call
    from odradek.broker.api.produce import handle
    from odradek.broker.context import ClientInfo, RequestContext
    async def one(broker):
        ctx = RequestContext(broker=broker, client=ClientInfo("127.0.0.1", "PLAINTEXT"),
                             api_key=0, api_version=9, correlation_id=7,
                             client_id="test-client")
        return tu.roundtrip(await handle(ctx, tu.roundtrip(request, 9)), 9)

async def main(broker):
    for _ in range(10):
        await one(broker)
    t0 = time.process_time()
    for _ in range(calls):
        r = await one(broker)
        assert r.responses[0].partition_responses[0].error_code == 0
    return time.process_time() - t0

with tempfile.TemporaryDirectory() as tmp:
    broker = tu.open_broker(Path(tmp), **{"log.segment.bytes": str(1 << 30)})
    broker.cluster.create_topic("t", 1, {})
    cpu = anyio.run(main, broker)
print(json.dumps({"cpu_s_gb": cpu / (calls * count * size / 1e9), "walker": walker}))
"""


def handler(args: argparse.Namespace) -> None:
    sources = [REPO] + [Path(s).resolve() for s in args.source]
    results: dict[Path, list[float]] = {s: [] for s in sources}
    walkers: dict[Path, str] = {}
    for _ in range(args.rounds):
        for source in sources:
            env = dict(os.environ, PYTHONPATH=str(source))
            out = subprocess.run(
                [sys.executable, "-c", _CHILD, str(source), str(args.calls), "1024", "500"],
                cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True, check=False)
            if out.returncode != 0:
                raise SystemExit(f"{source}: {out.stderr[-2000:]}")
            row = json.loads(out.stdout.strip().splitlines()[-1])
            results[source].append(row["cpu_s_gb"])
            walkers[source] = row["walker"]
    print(f"Produce handler in-process, v9, 1 batch of 500 x 1 KiB, {args.calls} calls; "
          f"process CPU s per GB, median of {args.rounds} (each round's in brackets)")
    first = statistics.median(results[REPO])
    for source in sources:
        med = statistics.median(results[source])
        runs = ", ".join(f"{v:.2f}" for v in results[source])
        print(f"{source!s:40} walker={walkers[source]:6} {med:6.2f} s/GB  [{runs}]  "
              f"this/that {first / med:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    w = sub.add_parser("walk", help="check_records alone, Python and C walkers")
    w.add_argument("--record-size", type=int, default=1024)
    w.add_argument("--batch-bytes", type=int, default=1 << 20)
    w.add_argument("--budget", type=float, default=0.5, help="CPU seconds per measurement")
    h = sub.add_parser("handler", help="the Produce handler in-process, per checkout")
    h.add_argument("--source", action="append", default=[],
                   help="another checkout to measure beside this one (repeatable)")
    h.add_argument("--calls", type=int, default=400)
    h.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    walk(args) if args.what == "walk" else handler(args)


if __name__ == "__main__":
    main()
