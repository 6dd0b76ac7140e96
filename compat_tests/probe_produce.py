"""Produce validation and live broker configs probe (issue #18): the same requests to Odradek
and to Apache Kafka 4.4.0, answers compared.

`python -m compat_tests.probe_produce [--target odradek|kafka|both]`

- IncrementalAlterConfigs (validate_only) of the dynamic settings Odradek reads at each use
  or reconfigures (connection limits, producer expiry, the cleaner's) and of the listener
  settings, at the cluster default and for broker 1;
- Produce v9 of a batch whose header maxTimestamp is in bounds but one record is two hours
  ahead (INVALID_TIMESTAMP and record_errors), of one whose header maxTimestamp is not its
  records' largest (Fetch shows what was stored), and of batches the producer marked
  LogAppendTime, on a LogAppendTime and a CreateTime topic.

Time-dependent numbers are shown relative to the probe's clock. Kafka 4.4.0 and Odradek agree
on all but the per-broker listener changes (Kafka validates and applies them; Odradek binds its
listeners at start-up: docs/configuration.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from compat_tests.brokers import make_broker
from compat_tests.probe_configs import Conn
from odradek.wire import ApiKey
from odradek.wire._generated.fetch import FetchRequest, FetchResponse
from odradek.wire._generated.incremental_alter_configs import (
    IncrementalAlterConfigsRequest as IAC,
)
from odradek.wire._generated.incremental_alter_configs import (
    IncrementalAlterConfigsResponse as IACR,
)
from odradek.wire._generated.produce import ProduceRequest, ProduceResponse
from odradek.wire.records import Record, build_batch, iter_batches, set_max_timestamp


def alter(c: Conn, name: str, key: str, value: str, validate_only: bool = True) -> list[Any]:
    req = IAC(resources=[IAC.AlterConfigsResource(resource_type=4, resource_name=name, configs=[
        IAC.AlterableConfig(name=key, config_operation=0, value=value)])], validate_only=validate_only)
    [r] = c.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, req, IACR).responses
    return [r.error_code, r.error_message]

def produce(c: Conn, topic: str, raw: bytes) -> list[Any]:
    req = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=raw)])])
    r = c.call(ApiKey.PRODUCE, 9, req, ProduceResponse).responses[0].partition_responses[0]
    return [r.error_code, r.error_message, [(e.batch_index, e.batch_index_error_message) for e in r.record_errors], r.base_offset]

def fetch_headers(c: Conn, topic: str) -> list[tuple[int, int, int, int]]:
    req = FetchRequest(replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1<<20, isolation_level=0,
        topics=[FetchRequest.FetchTopic(topic=topic, partitions=[FetchRequest.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1<<20)])])
    r = c.call(ApiKey.FETCH, 11, req, FetchResponse)
    p = r.responses[0].partitions[0]
    return [(b.base_offset, b.timestamp_type, b.base_timestamp, b.max_timestamp) for b in iter_batches(memoryview(bytes(p.records or b"")), allow_partial_tail=True)]

def run(target: str, workdir: Path) -> dict[str, Any]:
    b = make_broker(target, workdir)
    b.start()
    out: dict[str, Any] = {}
    try:
        c = Conn(b.port)
        for scope in ("", "1"):
            for key, value in [("listeners", "PLAINTEXT://127.0.0.1:19999"),
                               ("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,X:PLAINTEXT"),
                               ("max.connections", "50"), ("max.connections.per.ip", "50"),
                               ("producer.id.expiration.ms", "60000"), ("log.cleaner.backoff.ms", "2000"),
                               ("log.cleaner.io.max.bytes.per.second", "1000000")]:
                out[f"alter[{scope!r}] {key}"] = alter(c, scope, key, value)
        for t in ("ts", "lat", "latc"):
            cfg = {"message.timestamp.type": "LogAppendTime"} if t == "lat" else {}
            r = c.create(t, cfg, validate_only=False)
            out[f"create {t}"] = r.error_code
        time.sleep(1)
        now = int(time.time() * 1000)
        recs = [Record(0, 0, b"k", b"ok", []), Record(1, 2 * 3600_000, b"k", b"future", []), Record(2, 5, b"k", b"ok", [])]
        raw = bytearray(build_batch(recs, base_timestamp=now))
        set_max_timestamp(raw, 0, 0, now + 5)
        r = produce(c, "ts", bytes(raw))
        # normalise the time-dependent numbers
        out["lying header"] = [r[0], r[1], [(i, m.replace(str(now + 2 * 3600_000), "T")[:60]) for i, m in r[2]]]
        ok = [Record(0, 0, b"k", b"a", []), Record(1, 300, b"k", b"b", []), Record(2, 100, b"k", b"c", [])]
        raw = bytearray(build_batch(ok, base_timestamp=now))
        set_max_timestamp(raw, 0, 0, now - 50_000)
        out["wrong max produce"] = produce(c, "ts", bytes(raw))[0]
        out["wrong max stored"] = [(o, tt, bt - now, mt - now) for o, tt, bt, mt in fetch_headers(c, "ts")]
        lat = bytearray(build_batch([Record(0, 0, b"key", b"value", []), Record(1, 0, None, b"", [])], base_timestamp=now))
        set_max_timestamp(lat, 0, 1, now)
        r = produce(c, "lat", bytes(lat))
        out["LAT batch on LAT topic"] = [r[0], r[1], [(i, m.replace(str(now), "NOW")) for i, m in r[2]]]
        r = produce(c, "latc", bytes(lat))
        out["LAT batch on CreateTime topic"] = r[0]
        out["LAT batch stored"] = [(o, tt, bt - now, mt - now) for o, tt, bt, mt in fetch_headers(c, "latc")]
        lat2 = bytearray(build_batch([Record(0, 0, b"key", b"value", [])], base_timestamp=-1))
        set_max_timestamp(lat2, 0, 1, -1)
        r = produce(c, "latc", bytes(lat2))
        out["LAT batch -1 on CreateTime topic"] = [r[0], r[1], r[2]]
    finally:
        b.stop()
    return out

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=["odradek", "kafka", "both"], default="both")
    args = ap.parse_args()
    targets = ["odradek", "kafka"] if args.target == "both" else [args.target]
    with tempfile.TemporaryDirectory(prefix="probe-produce-") as tmp:
        results = {t: run(t, Path(tmp)) for t in targets}
    if len(results) == 1:
        print(json.dumps(results[targets[0]], indent=1))
        return 0
    a, b = results["odradek"], results["kafka"]
    diff = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    for k in diff:
        print(f"{k}\n  odradek: {json.dumps(a.get(k))}\n  kafka:   {json.dumps(b.get(k))}")
    print(f"{len(a) - len(diff)} of {len(a)} answers the same")
    return 0


if __name__ == "__main__":
    sys.exit(main())
