"""Client quotas end to end (issue #13 point 4): AlterClientQuotas / DescribeClientQuotas on
the wire (Odradek's own client), a confluent-kafka producer and consumer throttled by
producer_byte_rate and consumer_byte_rate (their rate bounded near the quota once the first
windows' allowance is spent, librdkafka's throttle callback fired), quotas kept across
kill -9, a throttled connection muted (no pipelined request read before the throttle time
passed), and Kafka's kafka-configs tool (org.apache.kafka.tools.ConfigCommand) adding,
describing and deleting quotas next to SCRAM users. The clients are PLAINTEXT, so the user
is ANONYMOUS. Run against Apache Kafka 4.4 with
ODRADEK_IT_SERVER_CMD="python -m compat_tests.kafka_it_server"."""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from it_support import StartBroker, create_topic, topic_name, wait_until

from odradek.client import BrokerConnection, parse_bootstrap
from odradek.wire import ErrorCode
from odradek.wire._generated.alter_client_quotas import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
)
from odradek.wire._generated.describe_client_quotas import (
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from odradek.wire._generated.header import RequestHeader
from odradek.wire._generated.produce import ProduceRequest, ProduceResponse
from odradek.wire.headers import request_header_version
from odradek.wire.records import Record, build_batch

Entity = dict[str, str | None]
EXACT, DEFAULT, SPECIFIED = 0, 1, 2


def _conn(bootstrap: str) -> BrokerConnection:
    host, port = parse_bootstrap(bootstrap)[0]
    return BrokerConnection(host, port)


def alter(bootstrap: str, entity: Entity, ops: dict[str, float | None],
          validate_only: bool = False) -> list[tuple[int, str | None]]:
    """One entity's alteration (None removes a key): [(error code, message)]."""
    req = AlterClientQuotasRequest(validate_only=validate_only, entries=[
        AlterClientQuotasRequest.EntryData(
            entity=[AlterClientQuotasRequest.EntityData(entity_type=t, entity_name=n)
                    for t, n in entity.items()],
            ops=[AlterClientQuotasRequest.OpData(key=k, value=v or 0.0, remove=v is None)
                 for k, v in ops.items()])])
    with _conn(bootstrap) as conn:
        resp, _ = conn.call(req, AlterClientQuotasResponse)
    return [(e.error_code, e.error_message) for e in resp.entries]


def describe(bootstrap: str, components: list[tuple[str, int, str | None]],
             strict: bool = False) -> tuple[int, dict[frozenset[tuple[str, str | None]],
                                                    dict[str, float]]]:
    req = DescribeClientQuotasRequest(strict=strict, components=[
        DescribeClientQuotasRequest.ComponentData(entity_type=t, match_type=m, match=s)
        for t, m, s in components])
    with _conn(bootstrap) as conn:
        resp, _ = conn.call(req, DescribeClientQuotasResponse)
    found = {frozenset((e.entity_type, e.entity_name) for e in entry.entity):
             {v.key: v.value for v in entry.values} for entry in resp.entries or []}
    return resp.error_code, found


def ent(**names: str | None) -> frozenset[tuple[str, str | None]]:
    return frozenset((k.replace("_", "-"), v) for k, v in names.items())


def test_alter_describe_validate_and_survive_kill_9(start_broker: StartBroker,
                                                    tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data")
    bs = broker.bootstrap
    ok = [(ErrorCode.NONE, None)]
    assert alter(bs, {"user": "alice"}, {"producer_byte_rate": 1024,
                                         "request_percentage": 25.5}) == ok
    assert alter(bs, {"user": "alice", "client-id": "app"}, {"consumer_byte_rate": 4096}) == ok
    assert alter(bs, {"user": None}, {"producer_byte_rate": 2048}) == ok
    assert alter(bs, {"client-id": None}, {"controller_mutation_rate": 10}) == ok
    assert alter(bs, {"client-id": "app"}, {"producer_byte_rate": 512},
                 validate_only=True) == ok  # checked, not applied

    bad = [
        ({"user": "bob"}, {"bogus": 1.0}, "Invalid configuration key bogus"),
        ({"user": "bob"}, {"producer_byte_rate": 1.5},
         "producer_byte_rate cannot be a fractional value."),
        ({"user": "bob"}, {"producer_byte_rate": 0.0},
         "Quota producer_byte_rate must be greater than 0"),
        ({"user": ""}, {"producer_byte_rate": 1.0}, "Empty user not supported"),
        ({"group": "g"}, {"producer_byte_rate": 1.0},
         "Unhandled client quota entity type: group"),
    ]
    for entity, ops, message in bad:
        assert alter(bs, entity, ops) == [(ErrorCode.INVALID_REQUEST, message)], entity

    def everything() -> dict[frozenset[tuple[str, str | None]], dict[str, float]]:
        return describe(bs, [])[1]

    expected = {
        ent(user="alice"): {"producer_byte_rate": 1024.0, "request_percentage": 25.5},
        ent(user="alice", client_id="app"): {"consumer_byte_rate": 4096.0},
        ent(user=None): {"producer_byte_rate": 2048.0},
        ent(client_id=None): {"controller_mutation_rate": 10.0},
    }
    # Kafka's brokers learn the controller's quotas a moment after the answer
    wait_until(lambda: everything() == expected, what="the quotas described")
    assert describe(bs, [("user", EXACT, "alice")])[1].keys() == {
        ent(user="alice"), ent(user="alice", client_id="app")}
    assert describe(bs, [("user", EXACT, "alice")], strict=True)[1].keys() == {
        ent(user="alice")}
    assert describe(bs, [("user", DEFAULT, None)])[1].keys() == {ent(user=None)}
    assert describe(bs, [("user", SPECIFIED, None)], strict=True)[1].keys() == {
        ent(user="alice"), ent(user=None)}
    assert describe(bs, [("client-id", SPECIFIED, None)])[1].keys() == {
        ent(user="alice", client_id="app"), ent(client_id=None)}
    assert describe(bs, [("user", EXACT, None)]) == (ErrorCode.INVALID_REQUEST, {})
    assert describe(bs, [("user", SPECIFIED, "x")]) == (ErrorCode.INVALID_REQUEST, {})
    assert describe(bs, [("user", 7, None)]) == (ErrorCode.INVALID_REQUEST, {})
    assert describe(bs, [("group", SPECIFIED, None)]) == (ErrorCode.UNSUPPORTED_VERSION, {})

    # removing the last key removes the entity
    assert alter(bs, {"user": "alice", "client-id": "app"}, {"consumer_byte_rate": None}) == ok
    del expected[ent(user="alice", client_id="app")]
    wait_until(lambda: everything() == expected, what="the removal described")

    broker.restart(hard=True)  # kill -9
    bs = broker.bootstrap
    wait_until(lambda: everything() == expected, what="the quotas after a restart")


def _set_quota(bootstrap: str, entity: Entity, key: str, value: float) -> None:
    assert alter(bootstrap, entity, {key: value}) == [(ErrorCode.NONE, None)]
    wait_until(lambda: describe(bootstrap, [(t, EXACT if n is not None else DEFAULT, n)
                                            for t, n in entity.items()],
                                strict=True)[1].get(frozenset(entity.items()), {}).get(key)
               == value, what="the quota in effect")


RUN_S = 14.0  # long enough that the first windows' allowance no longer dominates the rate
QUOTA = 20_000  # bytes/s


def _second_half_rate(events: list[tuple[float, int]], start: float) -> float:
    """Bytes/s over the second half of the run (after the first windows' allowance)."""
    half = start + RUN_S / 2
    return sum(n for t, n in events if t >= half) / (RUN_S / 2)


def test_producer_throttled_by_producer_byte_rate(start_broker: StartBroker,
                                                  tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data")
    bs = broker.bootstrap
    topic, client_id = topic_name("q"), topic_name("producer")
    create_topic(bs, topic)
    _set_quota(bs, {"client-id": client_id}, "producer_byte_rate", QUOTA)

    throttles: list[float] = []
    delivered: list[tuple[float, int]] = []
    p = Producer({"bootstrap.servers": bs, "client.id": client_id, "linger.ms": 5,
                  "batch.size": 4096, "queue.buffering.max.kbytes": 64,
                  "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            delivered.append((time.monotonic(), len(msg.value())))

    start = time.monotonic()
    while time.monotonic() - start < RUN_S:
        try:
            p.produce(topic, b"x" * 1000, on_delivery=on_delivery)
        except BufferError:
            p.poll(0.05)
        p.poll(0)
    p.purge()
    p.flush(10)
    rate = _second_half_rate(delivered, start)
    print(f"producer: {rate:.0f} B/s in the second half, quota {QUOTA}; throttles {throttles}")
    assert throttles, "librdkafka saw no throttle_time_ms"
    assert 0.3 * QUOTA < rate < 2 * QUOTA, rate


def test_consumer_throttled_by_consumer_byte_rate(start_broker: StartBroker,
                                                  tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data")
    bs = broker.bootstrap
    topic, client_id = topic_name("q"), topic_name("consumer")
    create_topic(bs, topic)
    # small batches: a fetch returns its first batch whole, and one larger than a quota
    # window's bytes would be throttled on every try (Kafka's rule too)
    p = Producer({"bootstrap.servers": bs, "linger.ms": 20, "batch.size": 4096})
    for _ in range(int(QUOTA * RUN_S * 3 / 1000)):  # more than the run can fetch
        p.produce(topic, b"y" * 1000)
        p.poll(0)
    assert p.flush(30) == 0
    del p
    _set_quota(bs, {"client-id": client_id}, "consumer_byte_rate", QUOTA)

    throttles: list[float] = []
    received: list[tuple[float, int]] = []
    c = Consumer({"bootstrap.servers": bs, "group.id": topic_name("g"),
                  "client.id": client_id,
                  "max.partition.fetch.bytes": 8192, "fetch.wait.max.ms": 100,
                  "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
    c.assign([TopicPartition(topic, 0, 0)])
    try:
        start = time.monotonic()
        while time.monotonic() - start < RUN_S:
            msg = c.poll(0.1)
            if msg is not None and msg.error() is None:
                received.append((time.monotonic(), len(msg.value())))
    finally:
        c.close()
    rate = _second_half_rate(received, start)
    print(f"consumer: {rate:.0f} B/s in the second half, quota {QUOTA}; throttles {throttles}")
    assert throttles, "librdkafka saw no throttle_time_ms"
    assert 0.3 * QUOTA < rate < 2 * QUOTA, rate


def _produce_frame(topic: str, client_id: str, correlation_id: int, size: int) -> bytes:
    batch = build_batch([Record(0, 0, None, b"z" * size, [])], base_timestamp=0)
    body = ProduceRequest(acks=1, timeout_ms=10_000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=bytes(batch))])])
    header = RequestHeader(request_api_key=0, request_api_version=9,
                           correlation_id=correlation_id, client_id=client_id)
    payload = b"".join(bytes(p) for p in [*header.encode(request_header_version(0, 9)),
                                          *body.encode(9)])
    return struct.pack(">i", len(payload)) + payload


def _read_frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            assert chunk, "connection closed"
            out += chunk
        return out
    return exactly(struct.unpack(">i", exactly(4))[0])


def test_a_throttled_connection_reads_no_request_until_the_throttle_passed(
        start_broker: StartBroker, tmp_path: Path) -> None:
    """Two pipelined Produce requests: the first answer says throttle_time_ms and comes at
    once; the second request is not read (so not answered) before that time (KIP-219)."""
    broker = start_broker(tmp_path / "data")
    bs = broker.bootstrap
    topic, client_id = topic_name("q"), topic_name("muted")
    create_topic(bs, topic)
    first = _produce_frame(topic, client_id, 1, 20_000)
    # the first request's size over the padded 10 s is 1.2x the bound: about 2 s of throttle
    _set_quota(bs, {"client-id": client_id}, "producer_byte_rate", (len(first) - 4) // 12)
    host, port = parse_bootstrap(bs)[0]
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(first + _produce_frame(topic, client_id, 2, 10))
        answer = _read_frame(sock)
        first_at = time.monotonic()
        response, _ = ProduceResponse.decode(answer, 9, 5)  # correlation id, tagged fields
        assert response.responses[0].partition_responses[0].error_code == ErrorCode.NONE
        throttle = response.throttle_time_ms
        assert 1500 <= throttle <= 2500, throttle
        _read_frame(sock)
        waited_ms = (time.monotonic() - first_at) * 1000
    print(f"throttle_time_ms {throttle}, second answer {waited_ms:.0f} ms after the first")
    assert waited_ms >= throttle - 100


CLASSPATH = Path(__file__).resolve().parents[2] / "compat_tests/java/target/cp-clients-4.4.txt"


@pytest.mark.skipif(not CLASSPATH.exists() or shutil.which("java") is None,
                    reason="Kafka 4.4 tools not built (bash compat_tests/setup.sh)")
def test_kafka_configs_tool_quotas_and_scram_users(start_broker: StartBroker,
                                                   tmp_path: Path) -> None:
    """kafka-configs.sh --bootstrap-server: quotas for users, clients, users+clients and
    defaults; --describe for users lists SCRAM credentials too; --delete-config."""
    broker = start_broker(tmp_path / "data")

    def configs(*args: str) -> str:
        done = subprocess.run(
            ["java", "-cp", CLASSPATH.read_text().strip(), "org.apache.kafka.tools.ConfigCommand",
             "--bootstrap-server", broker.bootstrap, *args],
            capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    configs("--alter", "--add-config", "producer_byte_rate=1024,request_percentage=50",
            "--entity-type", "users", "--entity-name", "alice")
    configs("--alter", "--add-config", "consumer_byte_rate=2048",
            "--entity-type", "clients", "--entity-name", "app")
    configs("--alter", "--add-config", "producer_byte_rate=99", "--entity-type", "users",
            "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app")
    configs("--alter", "--add-config", "producer_byte_rate=77",
            "--entity-type", "users", "--entity-default")
    configs("--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=secret]",
            "--entity-type", "users", "--entity-name", "carol")

    def users() -> str:
        return configs("--describe", "--entity-type", "users")

    wait_until(lambda: "'alice'" in users() and "'carol'" in users(), what="users described")
    out = users()
    assert "Quota configs for the default user-principal are producer_byte_rate=77.0" in out
    assert ("Quota configs for user-principal 'alice' are" in out
            and "producer_byte_rate=1024.0" in out and "request_percentage=50.0" in out)
    assert "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-256=iterations=8192" \
        in out
    both = configs("--describe", "--entity-type", "users", "--entity-name", "alice",
                   "--entity-type", "clients", "--entity-name", "app")
    assert "user-principal 'alice', client-id 'app' are producer_byte_rate=99.0" in both
    clients = configs("--describe", "--entity-type", "clients")
    assert "Quota configs for client-id 'app' are consumer_byte_rate=2048.0" in clients

    configs("--alter", "--delete-config", "request_percentage", "--entity-type", "users",
            "--entity-name", "alice")
    wait_until(lambda: "request_percentage" not in configs(
        "--describe", "--entity-type", "users", "--entity-name", "alice"),
        what="the deleted quota gone")
    assert "producer_byte_rate=1024.0" in configs("--describe", "--entity-type", "users",
                                                  "--entity-name", "alice")
