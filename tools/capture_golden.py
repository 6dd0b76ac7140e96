"""Capture request frames from real Kafka clients as golden bytes for the wire tests.

A throwaway loopback fake broker: it records the first frame of every (api, version) a client
sends and answers with minimal valid responses built with Odradek's generated classes (one
broker, every topic has one partition led by it, every group/transaction call succeeds), so the
client goes on to Produce, Fetch, JoinGroup, transactions... Each scenario drives one real client
(librdkafka through confluent-kafka, kafka-python) for a few seconds.

Frame layout recorded (the 4-byte size prefix stripped): request header v0-2 | request body.

    python -m tools.capture_golden [--out tests/unit/wire/golden] [--only SCENARIO]

Writes `<scenario>__<Api>-v<N>.bin` files and `manifest.json` (client versions, api, versions).
Needs no running Kafka; listens on 127.0.0.1 only.

Java mode (`--java`): the Java client is driven by the compatibility matrix's Java driver
(`compat_tests/java`, built by `compat_tests/setup.sh`) against a real Odradek, because its
scenarios need a broker that keeps state. A loopback `RecordingProxy` sits in front of the
broker, which advertises the proxy's port so that every later connection (coordinators,
partition leaders) goes through it too; the proxy frames the client-to-broker stream, records
each request and passes the bytes on unchanged (responses are piped back untouched). One frame
is kept per (api, version) per client version, from the first scenario that sent it, except
Produce, kept once per kind of batch (plain, transactional, each compression codec):

    python -m tools.capture_golden --java [--java-clients java-4.4,java-4.1,java-3.9]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from odradek.wire import API_SPECS
from odradek.wire.headers import decode_request_header, response_header_version
from odradek.wire.records import build_batch
from odradek.wire.registry import api_classes

log = logging.getLogger("capture_golden")

NODE_ID = 1
TOPIC = "golden"
GROUP = "golden-group"
PRODUCER_ID = 4242
PADDING = b"golden padding " * 64
# Versions advertised by the fake broker: everything our specs know that is stable, except
# where the newest versions move to shapes a lone fake broker cannot sensibly answer.
VERSION_CAPS = {
    10: 3,  # FindCoordinator v4+ batches coordinator keys (librdkafka copes either way)
}
HANDLED = {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 18, 19, 22, 24, 25, 26, 28, 32, 60}


def topic_id(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_DNS, f"{name}.odradek.golden")


class FakeBroker:
    def __init__(self, scenario: str) -> None:
        self.scenario = scenario
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.frames: dict[tuple[int, int], bytes] = {}
        self.lock = threading.Lock()
        self.stopping = False
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    # -- plumbing --------------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            while True:
                head = _recv_exact(conn, 4)
                if head is None:
                    return
                frame = _recv_exact(conn, struct.unpack(">i", head)[0])
                if frame is None:
                    return
                out = self.handle(frame)
                if out is not None:
                    conn.sendall(struct.pack(">i", len(out)) + out)
        except OSError:
            return
        except Exception:
            log.exception("%s: fake broker failed; closing the connection", self.scenario)
        finally:
            conn.close()

    def stop(self) -> None:
        self.stopping = True
        self.sock.close()
        for c in self.conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            c.close()

    def seen(self) -> set[int]:
        with self.lock:
            return {k for k, _ in self.frames}

    # -- requests ----------------------------------------------------------------------------------

    def handle(self, frame: bytes) -> bytes | None:
        mv = memoryview(frame)
        header, pos = decode_request_header(mv)
        key, version = header.request_api_key, header.request_api_version
        with self.lock:
            self.frames.setdefault((key, version), frame)
        req_cls, resp_cls = api_classes(key)
        if key == 18 and version > API_SPECS[18].max_version:
            resp = resp_cls(error_code=35, api_keys=self.api_versions(resp_cls))
            body = resp.encode(0)
            return struct.pack(">i", header.correlation_id) + b"".join(bytes(p) for p in body)
        req, _ = req_cls.decode(mv, version, pos)
        log.info("%s: %s v%d", self.scenario, API_SPECS[key].name, version)
        handler: Callable[[Any, Any, int], Any] | None = getattr(self, f"on_{key}", None)
        if key == 0 and req.acks == 0:
            return None
        resp = handler(req, resp_cls, version) if handler else resp_cls()
        hv = response_header_version(key, version)
        head = struct.pack(">i", header.correlation_id) + (b"\x00" if hv >= 1 else b"")
        return head + b"".join(bytes(p) for p in resp.encode(version))

    def api_versions(self, resp_cls: Any) -> list[Any]:
        return [
            resp_cls.ApiVersion(
                api_key=k,
                min_version=API_SPECS[k].min_version,
                max_version=VERSION_CAPS.get(k, API_SPECS[k].max_stable_version),
            )
            for k in sorted(HANDLED)
        ]

    def on_18(self, req: Any, R: Any, v: int) -> Any:  # ApiVersions
        return R(api_keys=self.api_versions(R))

    def on_3(self, req: Any, R: Any, v: int) -> Any:  # Metadata
        names = [TOPIC] if not req.topics else [t.name or TOPIC for t in req.topics]
        part = R.MetadataResponsePartition(
            partition_index=0, leader_id=NODE_ID, leader_epoch=0, replica_nodes=[1], isr_nodes=[1]
        )
        topics = [
            R.MetadataResponseTopic(name=n, topic_id=topic_id(n), partitions=[part]) for n in names
        ]
        broker = R.MetadataResponseBroker(node_id=NODE_ID, host="127.0.0.1", port=self.port)
        return R(
            brokers=[broker], cluster_id="golden-cluster", controller_id=NODE_ID, topics=topics
        )

    def on_0(self, req: Any, R: Any, v: int) -> Any:  # Produce
        return R(
            responses=[
                R.TopicProduceResponse(
                    name=t.name,
                    partition_responses=[
                        R.PartitionProduceResponse(index=p.index, base_offset=0, log_start_offset=0)
                        for p in t.partition_data
                    ],
                )
                for t in req.topic_data
            ]
        )

    def on_1(self, req: Any, R: Any, v: int) -> Any:  # Fetch
        batch = build_batch([(b"k0", b"golden value 0"), (None, b"golden value 1")])
        served = False
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                records = batch if p.fetch_offset == 0 else b""
                served = served or bool(records)
                parts.append(
                    R.PartitionData(
                        partition_index=p.partition,
                        high_watermark=2,
                        last_stable_offset=2,
                        log_start_offset=0,
                        aborted_transactions=[],
                        records=records,
                    )
                )
            topics.append(
                R.FetchableTopicResponse(topic=t.topic, topic_id=t.topic_id, partitions=parts)
            )
        if not served:
            time.sleep(min(req.max_wait_ms, 200) / 1000)  # a long poll, roughly
        return R(responses=topics)

    def on_2(self, req: Any, R: Any, v: int) -> Any:  # ListOffsets
        return R(
            topics=[
                R.ListOffsetsTopicResponse(
                    name=t.name,
                    partitions=[
                        R.ListOffsetsPartitionResponse(
                            partition_index=p.partition_index,
                            old_style_offsets=[0],
                            timestamp=-1,
                            offset=0,
                            leader_epoch=0,
                        )
                        for p in t.partitions
                    ],
                )
                for t in req.topics
            ]
        )

    def on_10(self, req: Any, R: Any, v: int) -> Any:  # FindCoordinator
        coords = [
            R.Coordinator(key=k, node_id=NODE_ID, host="127.0.0.1", port=self.port)
            for k in req.coordinator_keys
        ]
        return R(node_id=NODE_ID, host="127.0.0.1", port=self.port, coordinators=coords)

    def on_11(self, req: Any, R: Any, v: int) -> Any:  # JoinGroup
        member = req.member_id or "golden-member-1"
        proto = req.protocols[0]
        return R(
            generation_id=1,
            protocol_type=req.protocol_type,
            protocol_name=proto.name,
            leader=member,
            member_id=member,
            members=[R.JoinGroupResponseMember(member_id=member, metadata=proto.metadata)],
        )

    def on_14(self, req: Any, R: Any, v: int) -> Any:  # SyncGroup
        mine = [a.assignment for a in req.assignments if a.member_id == req.member_id]
        return R(
            protocol_type=req.protocol_type,
            protocol_name=req.protocol_name,
            assignment=mine[0] if mine else b"",
        )

    def on_9(self, req: Any, R: Any, v: int) -> Any:  # OffsetFetch
        def part(i: int) -> Any:
            return R.OffsetFetchResponsePartition(partition_index=i, committed_offset=-1)

        topics = [
            R.OffsetFetchResponseTopic(
                name=t.name, partitions=[part(i) for i in t.partition_indexes]
            )
            for t in req.topics or []
        ]
        groups = [
            R.OffsetFetchResponseGroup(
                group_id=g.group_id,
                topics=[
                    R.OffsetFetchResponseTopics(
                        name=t.name,
                        partitions=[
                            R.OffsetFetchResponsePartitions(partition_index=i, committed_offset=-1)
                            for i in t.partition_indexes
                        ],
                    )
                    for t in g.topics or []
                ],
            )
            for g in req.groups
        ]
        return R(topics=topics, groups=groups)

    def on_8(self, req: Any, R: Any, v: int) -> Any:  # OffsetCommit
        return R(
            topics=[
                R.OffsetCommitResponseTopic(
                    name=t.name,
                    partitions=[
                        R.OffsetCommitResponsePartition(partition_index=p.partition_index)
                        for p in t.partitions
                    ],
                )
                for t in req.topics
            ]
        )

    def on_28(self, req: Any, R: Any, v: int) -> Any:  # TxnOffsetCommit
        return R(
            topics=[
                R.TxnOffsetCommitResponseTopic(
                    name=t.name,
                    partitions=[
                        R.TxnOffsetCommitResponsePartition(partition_index=p.partition_index)
                        for p in t.partitions
                    ],
                )
                for t in req.topics
            ]
        )

    def on_13(self, req: Any, R: Any, v: int) -> Any:  # LeaveGroup
        return R(
            members=[
                R.MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id)
                for m in req.members
            ]
        )

    def on_22(self, req: Any, R: Any, v: int) -> Any:  # InitProducerId
        return R(producer_id=PRODUCER_ID, producer_epoch=0)

    def on_24(self, req: Any, R: Any, v: int) -> Any:  # AddPartitionsToTxn
        def topics(ts: list[Any]) -> list[Any]:
            return [
                R.AddPartitionsToTxnTopicResult(
                    name=t.name,
                    results_by_partition=[
                        R.AddPartitionsToTxnPartitionResult(partition_index=i) for i in t.partitions
                    ],
                )
                for t in ts
            ]

        return R(
            results_by_topic_v3_and_below=topics(req.v3_and_below_topics),
            results_by_transaction=[
                R.AddPartitionsToTxnResult(
                    transactional_id=t.transactional_id, topic_results=topics(t.topics)
                )
                for t in req.transactions
            ],
        )

    def on_26(self, req: Any, R: Any, v: int) -> Any:  # EndTxn
        return R(producer_id=PRODUCER_ID, producer_epoch=0)

    def on_60(self, req: Any, R: Any, v: int) -> Any:  # DescribeCluster
        broker = R.DescribeClusterBroker(broker_id=NODE_ID, host="127.0.0.1", port=self.port)
        return R(cluster_id="golden-cluster", controller_id=NODE_ID, brokers=[broker])


# -- scenarios --------------------------------------------------------------------------------------


def _wait_for(broker: FakeBroker, keys: set[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not keys <= broker.seen():
        time.sleep(0.05)


def ck_producer(broker: FakeBroker) -> None:
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{broker.port}",
            "enable.idempotence": True,
            "compression.type": "lz4",
            "linger.ms": 5,
        }
    )
    p.produce(TOPIC, key=b"k0", value=b"golden value 0", headers=[("h", b"v")])
    p.produce(TOPIC, key=None, value=b"golden value 1")
    p.produce(TOPIC, key=None, value=PADDING)  # compressible: tiny batches go uncompressed
    p.flush(10)


def ck_transactional(broker: FakeBroker) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    p = Producer(
        {"bootstrap.servers": f"127.0.0.1:{broker.port}", "transactional.id": "golden-txn"}
    )
    p.init_transactions(10)
    p.begin_transaction()
    p.produce(TOPIC, key=b"k0", value=b"golden value 0")
    c = Consumer({"bootstrap.servers": f"127.0.0.1:{broker.port}", "group.id": GROUP})
    p.send_offsets_to_transaction([TopicPartition(TOPIC, 0, 1)], c.consumer_group_metadata(), 10)
    p.commit_transaction(10)
    c.close()


def ck_consumer(broker: FakeBroker) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{broker.port}",
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([TOPIC])
    deadline = time.monotonic() + 15
    got = 0
    while time.monotonic() < deadline and got < 2:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got += 1
    c.commit(offsets=[TopicPartition(TOPIC, 0, 2)], asynchronous=False)
    c.close()


def kp_producer(broker: FakeBroker) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{broker.port}", compression_type="gzip", linger_ms=5
    )
    p.send(TOPIC, key=b"k0", value=b"golden value 0", headers=[("h", b"v")])
    p.send(TOPIC, value=b"golden value 1")
    p.send(TOPIC, value=PADDING)
    p.flush(10)
    p.close(5)


def kp_transactional(broker: FakeBroker) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.structs import OffsetAndMetadata, TopicPartition

    p = KafkaProducer(bootstrap_servers=f"127.0.0.1:{broker.port}", transactional_id="golden-txn")
    p.init_transactions()
    p.begin_transaction()
    p.send(TOPIC, key=b"k0", value=b"golden value 0")
    c = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{broker.port}", group_id=GROUP)
    p.send_offsets_to_transaction({TopicPartition(TOPIC, 0): OffsetAndMetadata(1, "", -1)}, GROUP)
    p.commit_transaction()
    p.close(5)
    c.close()


def kp_consumer(broker: FakeBroker) -> None:
    from kafka import KafkaConsumer
    from kafka.structs import OffsetAndMetadata, TopicPartition

    c = KafkaConsumer(
        TOPIC,
        bootstrap_servers=f"127.0.0.1:{broker.port}",
        group_id=GROUP,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    deadline = time.monotonic() + 15
    got = 0
    while time.monotonic() < deadline and got < 2:
        got += sum(len(v) for v in c.poll(500).values())
    c.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(2, "", -1)})
    c.close()


SCENARIOS: dict[str, tuple[str, Callable[[FakeBroker], None]]] = {
    "librdkafka-producer": ("librdkafka", ck_producer),
    "librdkafka-transactional": ("librdkafka", ck_transactional),
    "librdkafka-consumer": ("librdkafka", ck_consumer),
    "kafka-python-producer": ("kafka-python", kp_producer),
    "kafka-python-transactional": ("kafka-python", kp_transactional),
    "kafka-python-consumer": ("kafka-python", kp_consumer),
}


def client_versions() -> dict[str, str]:
    import confluent_kafka
    import kafka

    return {
        "librdkafka": f"librdkafka {confluent_kafka.libversion()[0]} "
        f"(confluent-kafka {confluent_kafka.version()[0]})",
        "kafka-python": f"kafka-python {kafka.__version__}",
    }


def _load_manifest(out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else {"frames": {}}


def _save_manifest(out: Path, manifest: dict[str, Any]) -> None:
    manifest["frames"] = dict(sorted(manifest["frames"].items()))
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


def _forget(out: Path, manifest: dict[str, Any], pattern: str) -> None:
    """Delete earlier captures matching `pattern` (a glob) and their manifest entries."""
    for old in out.glob(pattern):
        old.unlink()
        manifest["frames"].pop(old.name, None)


def _write_frames(
    out: Path,
    manifest: dict[str, Any],
    scenario: str,
    client: str,
    frames: dict[tuple[int, int], bytes],
) -> None:
    for (key, version), frame in sorted(frames.items()):
        api = API_SPECS[key].name
        fname = f"{scenario}__{api}-v{version}.bin"
        (out / fname).write_bytes(frame)
        manifest["frames"][fname] = {
            "client": client,
            "scenario": scenario,
            "api_key": key,
            "api": api,
            "api_version": version,
        }
    log.warning(
        "%s: captured %s",
        scenario,
        ", ".join(f"{API_SPECS[k].name} v{v}" for k, v in sorted(frames)),
    )


def run(out: Path, only: str | None) -> None:
    manifest = _load_manifest(out)
    versions = client_versions()
    for name, (client, fn) in SCENARIOS.items():
        if only and name != only:
            continue
        broker = FakeBroker(name)
        try:
            fn(broker)
        except Exception:
            log.exception("%s: client stopped early; keeping what was captured", name)
        finally:
            broker.stop()
        _forget(out, manifest, f"{name}__*.bin")
        _write_frames(out, manifest, name, versions[client], broker.frames)
    _save_manifest(out, manifest)


# -- Java: a recording proxy in front of a real Odradek ---------------------------------------------

PRODUCE_KEY = 0
# A kept frame longer than this gives way to a shorter one of the same (api, version): the
# golden files stay small (the producers' batches hold short values anyway).
MAX_KEPT_FRAME = 8192
JAVA_CLIENTS = ("java-4.4", "java-4.1", "java-3.9")
# Java driver scenarios (compat_tests/scenarios.py), in order of preference for the frames kept.
JAVA_SCENARIOS = (
    # ApiVersions, CreateTopics, Metadata, DescribeCluster, InitProducerId, Produce (the
    # producer is idempotent by default), ListOffsets, Fetch
    "produce-consume",
    # FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetFetch, OffsetCommit,
    # OffsetForLeaderEpoch, LeaveGroup
    "consumer-group",
    "transactions",  # AddPartitionsToTxn, EndTxn
    "consume-transform-produce",  # AddOffsetsToTxn, TxnOffsetCommit
    "compression-gzip",
    "compression-snappy",
    "compression-lz4",
    "compression-zstd",
)
# More for the 4.4 client, which speaks the newest versions: KIP-848 consumer groups (OffsetCommit
# and OffsetFetch v10 by topic id) and `compat_tests/java44/AdminVersionsProbe.java`, run as
# the pseudo-scenario "admin-versions" (ListOffsets v11, DescribeGroups v6, DeleteGroups v3,
# ListTransactions v2 with a pattern, ApiVersions v5).
JAVA_EXTRA_SCENARIOS = {"java-4.4": ("consumer-protocol-group", "admin-versions")}
ADMIN_PROBE = Path(__file__).resolve().parent.parent / "compat_tests" / "java44" / "AdminVersionsProbe.java"
# Produce frames are kept once per kind of batch: the scenarios named here write their own
# (transactional, one per codec); every other scenario's are plain (acks=all, which the Java
# producer makes idempotent by default) and the first plain one is kept.
JAVA_PRODUCE_FLAVOURS = {
    "transactions": "transactional",
    "compression-gzip": "gzip",
    "compression-snappy": "snappy",
    "compression-lz4": "lz4",
    "compression-zstd": "zstd",
}


def _better(kept: bytes | None, frame: bytes) -> bool:
    """Whether `frame` should replace the frame kept so far for its (api, version)."""
    return kept is None or (len(kept) > MAX_KEPT_FRAME and len(frame) < len(kept))


def _recv_exact(conn: socket.socket, n: int) -> bytes | None:
    """n bytes from `conn`, or None when it closes first."""
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _shut(*socks: socket.socket) -> None:
    for s in socks:
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        s.close()


class RecordingProxy:
    """A loopback TCP proxy that records the request frames clients send to a broker.

    Listens on 127.0.0.1 (an ephemeral port, `port`) and connects each client to
    127.0.0.1:`upstream_port`. Client-to-broker bytes are read frame by frame (int32 size |
    request header | body), recorded, and forwarded unchanged; broker-to-client bytes are
    copied as they arrive. Per (api key, version) it keeps the first frame, or a shorter one
    when the first is longer than MAX_KEPT_FRAME.
    """

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]
        self.upstream_port = 0  # set once the broker behind is listening
        self.frames: dict[tuple[int, int], bytes] = {}
        self.open = 0  # client connections whose request stream is not finished
        self.cond = threading.Condition()
        self.socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return  # stopped
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            with self.cond:
                self.open += 1
                self.socks += [client, upstream]
            threading.Thread(target=self._requests, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._responses, args=(upstream, client), daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        try:
            while (head := _recv_exact(client, 4)) is not None:
                frame = _recv_exact(client, struct.unpack(">i", head)[0])
                if frame is None:
                    break
                self._record(frame)
                upstream.sendall(head + frame)
        except OSError:
            pass
        finally:
            _shut(client, upstream)
            with self.cond:
                self.open -= 1
                self.cond.notify_all()

    def _responses(self, upstream: socket.socket, client: socket.socket) -> None:
        try:
            while chunk := upstream.recv(65536):
                client.sendall(chunk)
        except OSError:
            pass
        finally:
            _shut(upstream, client)

    def _record(self, frame: bytes) -> None:
        key, version = struct.unpack_from(">hh", frame)  # request header: api key, version
        with self.cond:
            if _better(self.frames.get((key, version)), frame):
                self.frames[(key, version)] = frame

    def take(self, timeout: float = 30.0) -> dict[tuple[int, int], bytes]:
        """The frames recorded so far, once every client connection has closed; then resets."""
        with self.cond:
            if not self.cond.wait_for(lambda: self.open == 0, timeout):
                log.warning("proxy: %d client connections still open", self.open)
            frames, self.frames = self.frames, {}
        return frames

    def stop(self) -> None:
        self.sock.close()
        with self.cond:
            _shut(*self.socks)


def _run_java_scenario(argv: list[str], bootstrap: str, scenario: str, timeout: float) -> str:
    """Run one Java driver scenario; returns the kafka-clients version it reported."""
    cmd = [*argv, "--bootstrap", bootstrap, "--topic-prefix", "golden"]
    cmd += ["--timeout", str(timeout), "--scenario", scenario]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=timeout + 60, stdin=subprocess.DEVNULL
    )
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            if row.get("status") != "PASS":
                log.warning("%s: %s %s", scenario, row.get("status"), row.get("reason"))
            return str(row.get("client_version", "?"))
    log.warning(
        "%s: driver exited %d without a result: %s", scenario, proc.returncode, proc.stderr[-400:]
    )
    return "?"


def _run_admin_probe(bootstrap: str, timeout: float) -> str:
    """Run the Java 4.4 AdminVersionsProbe (single-file source) on the 4.4 classpath."""
    from compat_tests.brokers import java_classpath

    cmd = ["java", "-cp", java_classpath("clients-4.4"), str(ADMIN_PROBE), bootstrap, "golden"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 60,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        log.warning("admin-versions: exited %d: %s", proc.returncode, proc.stderr[-400:])
    return "4.4.0"


def run_java(out: Path, clients: list[str], timeout: float = 60.0) -> None:
    # The matrix knows how to start Odradek and the Java driver; reuse it.
    from compat_tests.brokers import OdradekBroker
    from compat_tests.drivers import DRIVERS

    manifest = _load_manifest(out)
    proxy = RecordingProxy()
    workdir = Path(tempfile.mkdtemp(prefix="golden-java-"))
    # Odradek listens on its own ephemeral port but advertises the proxy's, so the clients'
    # connections to the leader and coordinators come back through the proxy.
    broker = OdradekBroker(
        workdir / "data",
        workdir / "odradek.log",
        overrides={"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"},
    )
    try:
        broker.start()
        proxy.upstream_port = broker.port
        for client in clients:
            argv = DRIVERS[client].command()
            # (api key, version, Produce flavour or "") -> (scenario, frame)
            kept: dict[tuple[int, int, str], tuple[str, bytes]] = {}
            version = "?"
            scenarios = (*JAVA_SCENARIOS, *JAVA_EXTRA_SCENARIOS.get(client, ()))
            for scenario in scenarios:
                bootstrap = f"127.0.0.1:{proxy.port}"
                if scenario == "admin-versions":
                    _run_admin_probe(bootstrap, timeout)
                else:
                    version = _run_java_scenario(argv, bootstrap, scenario, timeout)
                for (key, v), frame in proxy.take().items():
                    if key not in API_SPECS:
                        log.warning("%s %s: unknown api key %d skipped", client, scenario, key)
                        continue
                    flavour = JAVA_PRODUCE_FLAVOURS.get(scenario, "plain")
                    slot = (key, v, flavour if key == PRODUCE_KEY else "")
                    if _better(kept[slot][1] if slot in kept else None, frame):
                        kept[slot] = (scenario, frame)
            _forget(out, manifest, f"{client}-*__*.bin")
            label = f"kafka-clients {version} (Java)"
            for scenario in scenarios:
                frames = {(k, v): f for (k, v, _), (sc, f) in kept.items() if sc == scenario}
                if frames:
                    _write_frames(out, manifest, f"{client}-{scenario}", label, frames)
    finally:
        proxy.stop()
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    _save_manifest(out, manifest)


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m tools.capture_golden")
    ap.add_argument("--out", type=Path, default=Path("tests/unit/wire/golden"))
    ap.add_argument("--only", choices=sorted(SCENARIOS))
    ap.add_argument(
        "--java",
        action="store_true",
        help="capture the Java client through a recording proxy in front of Odradek instead",
    )
    ap.add_argument("--java-clients", default=",".join(JAVA_CLIENTS))
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    if args.java:
        run_java(args.out, [c for c in args.java_clients.split(",") if c])
    else:
        run(args.out, args.only)


if __name__ == "__main__":
    main()
