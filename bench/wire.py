"""Wire codec micro-benchmark: Odradek's generated codec beside kio and kafka-python's codec.

Cases (the same logical message for every codec; each codec's object is built by decoding the
Odradek encoding, and the three encodings are checked byte-identical first):

- ProduceRequest v9: 10 partitions x 16 KiB record batches, decode and encode
- FetchResponse v12: 10 partitions x 64 KiB records, encode
- MetadataResponse v12: 100 topics x 12 partitions (3 brokers, 3 replicas), encode and decode
- JoinGroupRequest v9: 2 protocols with consumer subscriptions, encode and decode

Odradek's encode returns a list of buffers (records stay separate parts, for scatter-gather
writes); the "encode+join" rows add the join into one bytes object, as the other codecs return.
Timing is timeit-style: calibrate a loop count to ~0.1 s, take the best of 5 repeats.

    python -m bench.wire [--budget 0.1] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import platform
import pstats
import sys
import timeit
import uuid
from collections.abc import Callable
from typing import Any

from kafka.protocol.consumer.fetch import FetchResponse as KpFetchResponse
from kafka.protocol.consumer.group import JoinGroupRequest as KpJoinGroupRequest
from kafka.protocol.metadata.metadata import MetadataResponse as KpMetadataResponse
from kafka.protocol.producer.produce import ProduceRequest as KpProduceRequest
from kio.schema.fetch.v12.response import FetchResponse as KioFetchResponse
from kio.schema.join_group.v9.request import JoinGroupRequest as KioJoinGroupRequest
from kio.schema.metadata.v12.response import MetadataResponse as KioMetadataResponse
from kio.schema.produce.v9.request import ProduceRequest as KioProduceRequest
from kio.serial import entity_reader, entity_writer

from odradek.wire._generated.fetch import FetchResponse
from odradek.wire._generated.join_group import JoinGroupRequest
from odradek.wire._generated.metadata import MetadataResponse
from odradek.wire._generated.produce import ProduceRequest

Codec = Callable[[], object]


def join(parts: list[Any]) -> bytes:
    return b"".join(parts)


# -- the messages --------------------------------------------------------------------------------


def produce_request() -> ProduceRequest:
    R = ProduceRequest
    parts = [R.PartitionProduceData(index=i, records=bytes([i]) * 16384) for i in range(10)]
    return R(
        transactional_id=None,
        acks=-1,
        timeout_ms=30000,
        topic_data=[R.TopicProduceData(name="bench-topic", partition_data=parts)],
    )


def fetch_response() -> FetchResponse:
    R = FetchResponse
    parts = [
        R.PartitionData(
            partition_index=i,
            high_watermark=1_000_000 + i,
            last_stable_offset=1_000_000 + i,
            log_start_offset=0,
            aborted_transactions=[],
            records=bytes([i]) * 65536,
        )
        for i in range(10)
    ]
    return R(
        session_id=7,
        responses=[R.FetchableTopicResponse(topic="bench-topic", partitions=parts)],
    )


def metadata_response() -> MetadataResponse:
    R = MetadataResponse
    brokers = [
        R.MetadataResponseBroker(node_id=n, host=f"broker-{n}.example", port=9092, rack=f"r{n}")
        for n in (1, 2, 3)
    ]
    topics = [
        R.MetadataResponseTopic(
            name=f"topic-{t:03d}",
            topic_id=uuid.UUID(int=t + 1),
            partitions=[
                R.MetadataResponsePartition(
                    partition_index=p,
                    leader_id=1 + p % 3,
                    leader_epoch=5,
                    replica_nodes=[1, 2, 3],
                    isr_nodes=[1, 2, 3],
                    offline_replicas=[],
                )
                for p in range(12)
            ],
            topic_authorized_operations=-(2**31),
        )
        for t in range(100)
    ]
    return R(brokers=brokers, cluster_id="bench-cluster", controller_id=1, topics=topics)


def join_group_request() -> JoinGroupRequest:
    R = JoinGroupRequest
    # ConsumerProtocolSubscription v1: version | topics | user data | owned partitions
    meta = (
        b"\x00\x01"
        + b"\x00\x00\x00\x03"
        + b"".join(len(t).to_bytes(2, "big") + t for t in (b"orders", b"payments", b"audit"))
        + b"\xff\xff\xff\xff"
        + b"\x00\x00\x00\x00"
    )
    return R(
        group_id="bench-group",
        session_timeout_ms=45000,
        rebalance_timeout_ms=300000,
        member_id="rdkafka-5b3e9c1e-7f4d-4bb0-9a0e-2f1c1b2d3e4f",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[
            R.JoinGroupRequestProtocol(name="range", metadata=meta),
            R.JoinGroupRequestProtocol(name="cooperative-sticky", metadata=meta),
        ],
        reason=None,
    )


# -- codecs per case -----------------------------------------------------------------------------


def kio_encode(cls: type, obj: object) -> bytes:
    buf = io.BytesIO()
    entity_writer(cls)(buf, obj)
    return buf.getvalue()


class Case:
    def __init__(self, label: str, msg: Any, version: int, kio_cls: type, kp_cls: Any) -> None:
        self.label = label
        self.msg = msg
        self.version = version
        self.wire = join(msg.encode(version))
        self.kio_cls = kio_cls
        self.kio_read = entity_reader(kio_cls)
        self.kio_write = entity_writer(kio_cls)
        self.kio_obj, size = self.kio_read(self.wire, 0)
        assert size == len(self.wire)
        self.kp_cls = kp_cls
        self.kp_obj = kp_cls.decode(self.wire, version=version, header=False)
        # The same logical message in each codec: identical bytes out of all three.
        assert kio_encode(kio_cls, self.kio_obj) == self.wire, f"{label}: kio bytes differ"
        assert bytes(self.kp_obj.encode()) == self.wire, f"{label}: kafka-python"

    def ops(self, what: str) -> dict[str, Codec]:
        msg, v, wire = self.msg, self.version, self.wire
        cls = type(msg)
        kio_read, kio_write, kio_obj = self.kio_read, self.kio_write, self.kio_obj
        kp_cls, kp_obj = self.kp_cls, self.kp_obj

        def kio_enc() -> bytes:
            buf = io.BytesIO()
            kio_write(buf, kio_obj)
            return buf.getvalue()

        if what == "decode":
            return {
                "odradek": lambda: cls.decode(wire, v),
                "kio": lambda: kio_read(wire, 0),
                "kafka-python": lambda: kp_cls.decode(wire, version=v, header=False),
            }
        if what == "encode":
            return {
                "odradek": lambda: msg.encode(v),
                "kio": kio_enc,
                "kafka-python": lambda: kp_obj.encode(),
            }
        if what == "encode+join":
            return {
                "odradek": lambda: join(msg.encode(v)),
                "kio": kio_enc,
                "kafka-python": lambda: kp_obj.encode(),
            }
        if what == "decode+encode":
            return {
                "odradek": lambda: cls.decode(wire, v)[0].encode(v),
                "kio": lambda: (buf := io.BytesIO(), kio_write(buf, kio_read(wire, 0)[0])),
                "kafka-python": lambda: kp_cls.decode(wire, version=v, header=False).encode(),
            }
        raise ValueError(what)


def best_us(fn: Codec, budget: float) -> float:
    t = timeit.Timer(fn)
    number = 1
    while True:
        elapsed = t.timeit(number)
        if elapsed >= budget:
            break
        number *= 2 if elapsed < budget / 10 else max(2, int(budget / max(elapsed, 1e-9)))
    runs = [elapsed, *t.repeat(repeat=4, number=number)]
    return min(runs) / number * 1e6


def check_zero_copy(case: Case) -> bool:
    buf = bytearray(case.wire)
    msg, _ = ProduceRequest.decode(buf, case.version)
    views = [p.records for t in msg.topic_data for p in t.partition_data]
    return all(isinstance(r, memoryview) and r.obj is buf for r in views)


ROWS = [
    ("produce", "decode"),
    ("produce", "encode"),
    ("produce", "encode+join"),
    ("produce", "decode+encode"),
    ("fetch", "encode"),
    ("fetch", "encode+join"),
    ("metadata", "encode"),
    ("metadata", "decode"),
    ("join", "encode"),
    ("join", "decode"),
]


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.wire")
    ap.add_argument("--budget", type=float, default=0.1, help="seconds per timing loop")
    ap.add_argument("--profile", action="store_true", help="profile every Odradek case")
    args = ap.parse_args()

    cases = {
        "produce": Case(
            "ProduceRequest v9 (10 x 16 KiB)",
            produce_request(),
            9,
            KioProduceRequest,
            KpProduceRequest,
        ),
        "fetch": Case(
            "FetchResponse v12 (10 x 64 KiB)",
            fetch_response(),
            12,
            KioFetchResponse,
            KpFetchResponse,
        ),
        "metadata": Case(
            "MetadataResponse v12 (100 x 12)",
            metadata_response(),
            12,
            KioMetadataResponse,
            KpMetadataResponse,
        ),
        "join": Case(
            "JoinGroupRequest v9",
            join_group_request(),
            9,
            KioJoinGroupRequest,
            KpJoinGroupRequest,
        ),
    }
    import kafka
    import kio

    print(
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"{platform.machine()}, kio {kio.__version__}, kafka-python {kafka.__version__}"
    )
    print(
        f"records not copied on decode (views over the input buffer): "
        f"{'yes' if check_zero_copy(cases['produce']) else 'NO'}"
    )
    print()
    header = (
        f"| {'case':<46} | {'odradek us':>10} | {'kio us':>10} | {'kafka-python us':>15} "
        f"| {'vs kio':>7} | {'vs kafka-python':>15} |"
    )
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    slower: list[tuple[str, Codec]] = []
    for key, what in ROWS:
        case = cases[key]
        ops = case.ops(what)
        us = {name: best_us(fn, args.budget) for name, fn in ops.items()}
        r_kio = us["kio"] / us["odradek"]
        r_kp = us["kafka-python"] / us["odradek"]
        label = f"{case.label} {what}"
        print(
            f"| {label:<46} | {us['odradek']:>10.1f} | {us['kio']:>10.1f} | "
            f"{us['kafka-python']:>15.1f} | {r_kio:>6.2f}x | {r_kp:>14.2f}x |"
        )
        if args.profile or min(r_kio, r_kp) < 1:
            slower.append((label, ops["odradek"]))
    print("\nratios: the other codec's time / Odradek's (above 1: Odradek is faster).")
    print("kio decodes in its Rust extension (kio._kio_native); its encoders are Python.")
    for label, fn in slower:
        print(f"\n--- profile of Odradek, {label} ---")
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(100):
            fn()
        prof.disable()
        pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(6)


if __name__ == "__main__":
    main()
