"""The admin CLI (`odradek topic|produce|consume|group|cluster`, issue #16) against a real
broker: every command runs as a user runs it (`python -m odradek ...` in a subprocess), and
what it did is checked with stock clients (confluent-kafka) where they can see it: topics,
records with keys and headers, transactions, committed offsets, live group members.
Failures are one line on stderr with the documented exit code, never a traceback.

The broker is the suite's `BrokerProcess`, so `ODRADEK_IT_SERVER_CMD="python -m
compat_tests.kafka_it_server"` runs the same tests against Apache Kafka 4.4: the CLI is meant
for any Kafka-compatible broker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from it_support import BrokerProcess, wait_until

from odradek.testing import TEST_DEFAULTS, TestBroker, unique_name
from odradek.wire.compression import CompressionType
from odradek.wire.records import iter_batches

TIMEOUT = 60


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestBroker]:
    process = BrokerProcess(tmp_path_factory.mktemp("cli-broker"), TEST_DEFAULTS)
    process.start(timeout=120)
    handle = TestBroker(process.bootstrap, process)
    try:
        yield handle
    finally:
        handle.close_admin()
        code = process.stop()
        assert code in process.clean_exit_codes, process.stderr_text()


def odradek(broker: TestBroker | str, *args: str, stdin: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
    bootstrap = broker if isinstance(broker, str) else broker.bootstrap
    env = {k: v for k, v in os.environ.items() if not k.startswith("ODRADEK_")}
    result = subprocess.run([sys.executable, "-m", "odradek", *args, "-b", bootstrap],
                            input=stdin, capture_output=True, text=True, timeout=TIMEOUT,
                            env=env, check=False)
    assert "Traceback" not in result.stderr, result.stderr
    if check:
        assert result.returncode == 0, result.stderr
    return result


def one_line_failure(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(result.stdout)


def json_lines(result: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines()]


# -- topics --------------------------------------------------------------------------------------


def test_topic_create_list_describe_delete(broker: TestBroker) -> None:
    name = unique_name("cli")
    out = odradek(broker, "topic", "create", name, "-p", "3", "-c", "retention.ms=123456")
    assert out.stdout.startswith(f"topic {name} created: 3 partitions")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    meta = admin.list_topics(timeout=10).topics[name]
    assert len(meta.partitions) == 3

    again = one_line_failure(odradek(broker, "topic", "create", name, check=False), 1)
    assert again == (f"odradek topic: create topic {name}: TOPIC_ALREADY_EXISTS: "
                     f"Topic '{name}' already exists.")
    assert as_json(odradek(broker, "topic", "create", name, "--if-not-exists", "--json")) == {
        "name": name, "id": as_json(odradek(broker, "topic", "describe", name, "--json"))["id"],
        "partitions": 3, "created": False}

    listed = {t["name"]: t for t in as_json(odradek(broker, "topic", "list", "--json"))}
    assert listed[name]["partitions"] == 3 and listed[name]["replication_factor"] == 1
    assert name in odradek(broker, "topic", "list").stdout.split()

    described = as_json(odradek(broker, "topic", "describe", name, "--json"))
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
    assert all(p["leader"] == 1 and p["isr"] == [1] for p in described["partitions"])
    assert described["configs"]["retention.ms"] == {"value": "123456", "source": "topic"}
    text = odradek(broker, "topic", "describe", name).stdout
    assert "PARTITION  LEADER" in text and "retention.ms" in text

    assert odradek(broker, "topic", "delete", name).stdout == f"topic {name} deleted\n"
    wait_until(lambda: name not in admin.list_topics(timeout=10).topics, what="deleted")
    gone = one_line_failure(odradek(broker, "topic", "delete", name, check=False), 1)
    assert gone.startswith(f"odradek topic: delete topic {name}: UNKNOWN_TOPIC_OR_PARTITION")
    assert odradek(broker, "topic", "delete", name, "--if-exists").stdout == (
        f"topic {name} does not exist\n")
    missing = one_line_failure(odradek(broker, "topic", "describe", name, check=False), 1)
    assert missing == f"odradek topic: topic {name}: UNKNOWN_TOPIC_OR_PARTITION"


def test_internal_topics_are_listed_only_when_asked(broker: TestBroker) -> None:
    topic = broker.create_topic()
    odradek(broker, "produce", topic, stdin="x\n")
    odradek(broker, "consume", topic, "--from-beginning", "-e", "-g", unique_name("g"))
    plain = {t["name"] for t in as_json(odradek(broker, "topic", "list", "--json"))}
    with_internal = {t["name"]: t for t in
                     as_json(odradek(broker, "topic", "list", "--json", "--internal"))}
    assert "__consumer_offsets" not in plain
    assert with_internal["__consumer_offsets"]["internal"] is True


def test_topic_alter_config(broker: TestBroker) -> None:
    topic = broker.create_topic()

    def configs() -> dict[str, Any]:
        doc = as_json(odradek(broker, "topic", "describe", topic, "--json"))
        return {k: v["value"] for k, v in doc["configs"].items() if v["source"] == "topic"}

    out = odradek(broker, "topic", "alter-config", topic, "--set", "retention.ms=86400000",
                  "--set", "cleanup.policy=compact")
    assert out.stdout == f"topic {topic}: changed retention.ms=86400000 cleanup.policy=compact\n"
    assert configs() == {"retention.ms": "86400000", "cleanup.policy": "compact"}
    odradek(broker, "topic", "alter-config", topic, "--delete", "retention.ms")
    assert configs() == {"cleanup.policy": "compact"}
    odradek(broker, "topic", "alter-config", topic, "--set", "retention.ms=5",
            "--validate-only")
    assert configs() == {"cleanup.policy": "compact"}
    bad = one_line_failure(odradek(broker, "topic", "alter-config", topic, "--set",
                                   "retention.ms=forever", check=False), 1)
    assert bad.startswith(f"odradek topic: alter the configs of {topic}: INVALID_CONFIG")
    nothing = one_line_failure(odradek(broker, "topic", "alter-config", topic, check=False), 2)
    assert nothing == "odradek topic: nothing to change: give --set KEY=VALUE or --delete KEY"


# -- produce and consume -------------------------------------------------------------------------


def read_back(bootstrap: str, topic: str, partitions: int) -> list[Any]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": unique_name("g"),
                         "enable.partition.eof": True, "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out, ends = [], set()
        deadline = time.monotonic() + 30
        while len(ends) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                ends.add(msg.partition())
                continue
            out.append(msg)
        assert len(ends) == partitions, "did not reach the end"
        return out
    finally:
        consumer.close()


def test_produce_keys_headers_partitions_seen_by_a_stock_client(broker: TestBroker) -> None:
    from kafka.partitioner.default import murmur2  # kafka-python's copy of Java's

    topic = broker.create_topic(partitions=4)
    out = odradek(broker, "produce", topic, "--key-separator", ":", "-H", "src=cli",
                  "-H", "n=1", "--json", stdin="k1:v1\nk2:v2\nnokey\nk3:v3 with: colon\n")
    placed = json_lines(out)
    assert len(placed) == 4
    msgs = {m.value(): m for m in read_back(broker.bootstrap, topic, 4)}
    assert set(msgs) == {b"v1", b"v2", b"nokey", b"v3 with: colon"}
    for (key, value), where in zip([(b"k1", b"v1"), (b"k2", b"v2"), (b"k3", b"v3 with: colon")],
                                   [placed[0], placed[1], placed[3]], strict=True):
        msg = msgs[value]
        assert msg.key() == key
        assert msg.headers() == [("src", b"cli"), ("n", b"1")]
        # The Java client's default partitioner: murmur2 of the key, positive, mod 4.
        assert msg.partition() == where["partition"] == (murmur2(key) & 0x7FFFFFFF) % 4
        assert msg.offset() == where["offset"]
    assert msgs[b"nokey"].key() is None

    pinned = odradek(broker, "produce", topic, "--partition", "2", "--key", "same",
                     stdin="a\nb\n")
    assert pinned.stderr == f"produced 2 records to {topic}\n"
    later = [m for m in read_back(broker.bootstrap, topic, 4) if m.value() in (b"a", b"b")]
    assert {(m.partition(), m.key()) for m in later} == {(2, b"same")}
    bad = one_line_failure(odradek(broker, "produce", topic, "--partition", "9",
                                   stdin="x\n", check=False), 1)
    assert bad == f"odradek produce: topic {topic} has no partition 9 (partitions 0-3)"


def test_consume_positions_formats_and_limits(broker: TestBroker) -> None:
    topic = broker.create_topic(partitions=2)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    # Recent timestamps: older than log.retention.ms (7 days) would let retention delete them.
    base = int(time.time() * 1000) - 60_000
    for i in range(6):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 2,
                         headers=[("i", str(i).encode())], timestamp=base + i)
    producer.produce(topic, value=b"\xff\xfe", partition=0, timestamp=base + 100)
    assert producer.flush(10) == 0

    everything = json_lines(odradek(broker, "consume", topic, "--from-beginning", "-e",
                                    "--format", "json"))
    assert sorted((r["partition"], r["offset"]) for r in everything) == [
        (0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1), (1, 2)]
    first = next(r for r in everything if r["value"] == "v0")
    assert first == {"topic": topic, "partition": 0, "offset": 0,
                     "timestamp": base, "key": "k0", "value": "v0",
                     "headers": [["i", "0"]]}
    assert next(r for r in everything if r["offset"] == 3)["value"] == {"base64": "//4="}

    text = odradek(broker, "consume", topic, "--from-beginning", "-e", "-p", "1",
                   "--print-key").stdout
    assert text == "k1\tv1\nk3\tv3\nk5\tv5\n"
    assert odradek(broker, "consume", topic, "-p", "1", "--offset", "2", "-e").stdout == "v5\n"
    stamp = odradek(broker, "consume", topic, "-p", "0", "--timestamp",
                    str(base + 3), "-e", "--format", "json")
    assert [r["value"] for r in json_lines(stamp)] == ["v4", {"base64": "//4="}]
    two = odradek(broker, "consume", topic, "--from-beginning", "-n", "2", "-p", "0")
    assert two.stdout == "v0\nv2\n"
    # From the end (the default), nothing arrives: --wait gives up; too few is exit code 1.
    assert odradek(broker, "consume", topic, "--wait", "0.5").stdout == ""
    short = one_line_failure(odradek(broker, "consume", topic, "-n", "1", "--wait", "0.5",
                                     check=False), 1)
    assert short == "odradek consume: 0 of 1 records within 0.5 s"
    nopart = one_line_failure(odradek(broker, "consume", topic, "-p", "5", check=False), 2)
    assert nopart == f"odradek consume: --partition 5: topic {topic} has partitions 0-1"


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_both_ways(broker: TestBroker, codec: str) -> None:
    topic = broker.create_topic()
    lines = [f"record {i} " + "x" * i for i in range(50)]
    odradek(broker, "produce", topic, "--compression", codec, stdin="\n".join(lines) + "\n")
    assert [m.value().decode() for m in read_back(broker.bootstrap, topic, 1)] == lines
    # The batch really is compressed: its attributes in the segment (Kafka's format on disk).
    assert broker.process is not None
    # (Found anywhere below the data dir: Kafka's wrapper keeps its logs in a subfolder.)
    (segment,) = broker.process.data_dir.rglob(f"{topic}-0/00000000000000000000.log")
    (batch,) = iter_batches(segment.read_bytes())
    assert batch.compression == CompressionType[codec.upper()]
    producer = Producer({"bootstrap.servers": broker.bootstrap, "compression.type": codec,
                         "linger.ms": 50})
    for line in lines:
        producer.produce(topic, value=line.encode())
    assert producer.flush(10) == 0
    out = odradek(broker, "consume", topic, "--from-beginning", "-e").stdout
    assert out.splitlines() == lines + lines


def test_consume_read_committed_hides_aborted_transactions(broker: TestBroker) -> None:
    topic = broker.create_topic()
    producer = Producer({"bootstrap.servers": broker.bootstrap,
                         "transactional.id": unique_name("txn")})
    producer.init_transactions(30)
    for values, commit in (([b"c1", b"c2"], True), ([b"a1", b"a2"], False), ([b"c3"], True)):
        producer.begin_transaction()
        for v in values:
            producer.produce(topic, value=v)
        producer.flush(10)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    committed = odradek(broker, "consume", topic, "--from-beginning", "-e",
                        "--isolation", "read_committed")
    assert committed.stdout.split() == ["c1", "c2", "c3"]
    everything = odradek(broker, "consume", topic, "--from-beginning", "-e")
    assert everything.stdout.split() == ["c1", "c2", "a1", "a2", "c3"]


def test_consume_with_a_group_resumes_where_it_stopped(broker: TestBroker) -> None:
    topic = broker.create_topic()
    group = unique_name("g")
    odradek(broker, "produce", topic, stdin="1\n2\n3\n")
    assert odradek(broker, "consume", topic, "--from-beginning", "-g", group,
                   "-n", "2").stdout == "1\n2\n"
    odradek(broker, "produce", topic, stdin="4\n")
    assert odradek(broker, "consume", topic, "-g", group, "-e").stdout == "3\n4\n"
    assert odradek(broker, "consume", topic, "-g", group, "-e").stdout == ""
    # A stock client sees the same committed offset.
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        (tp,) = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert tp.offset == 4
    finally:
        consumer.close()


def test_interrupting_a_following_consume_commits_and_exits_0(broker: TestBroker) -> None:
    topic = broker.create_topic()
    group = unique_name("g")
    odradek(broker, "produce", topic, stdin="one\ntwo\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ODRADEK_")}
    proc = subprocess.Popen([sys.executable, "-m", "odradek", "consume", topic, "-g", group,
                             "--from-beginning", "-b", broker.bootstrap],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        assert [proc.stdout.readline(), proc.stdout.readline()] == ["one\n", "two\n"]
        time.sleep(0.3)  # let it park in a long-poll Fetch, the request ^C cuts off
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, out, err) == (0, "", "")
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        (tp,) = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert tp.offset == 2
    finally:
        consumer.close()


# -- groups --------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_group_list_and_describe_show_members_assignments_and_lag(
        broker: TestBroker, protocol: str) -> None:
    topic = broker.create_topic(partitions=2)
    group = unique_name("g")
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce(topic, value=b"%d" % i, partition=i % 2)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                         "group.protocol": protocol, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "client.id": "lag-test",
                         "max.poll.interval.ms": 60000})
    try:
        consumer.subscribe([topic])
        got: list[Any] = []
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and not msg.error():
                got.append(msg)
        assert len(got) >= 3
        consumer.commit(offsets=[TopicPartition(topic, 0, 2), TopicPartition(topic, 1, 1)],
                        asynchronous=False)

        def described() -> dict[str, Any] | None:
            doc = as_json(odradek(broker, "group", "describe", group, "--json"))
            owned = [p for m in doc["members"] for p in m["assignment"].get(topic, [])]
            return doc if sorted(owned) == [0, 1] else None

        doc = wait_until(described, what="the member's assignment")
        assert doc["type"] == protocol and doc["state"] == "Stable"
        (member,) = doc["members"]
        assert member["client_id"] == "lag-test"
        offsets = {o["partition"]: o for o in doc["offsets"] if o["topic"] == topic}
        assert offsets[0]["committed"] == 2 and offsets[0]["end"] == 5 and offsets[0]["lag"] == 3
        assert offsets[1]["committed"] == 1 and offsets[1]["lag"] == 4
        assert offsets[0]["member_id"] == member["member_id"]
        assert doc["total_lag"] == 7
        text = odradek(broker, "group", "describe", group).stdout
        assert f"{topic}:0,1" in text and "total lag 7" in text

        listed = {g["group_id"]: g for g in as_json(odradek(broker, "group", "list", "--json"))}
        assert listed[group]["type"] == protocol and listed[group]["state"] == "Stable"
        # A group with members can be neither deleted nor reset.
        busy = one_line_failure(odradek(broker, "group", "delete", group, check=False), 1)
        assert busy.startswith(f"odradek group: delete group {group}: NON_EMPTY_GROUP")
        reset = one_line_failure(odradek(broker, "group", "reset-offsets", group, "-t", topic,
                                         "--to-earliest", "--execute", check=False), 1)
        assert reset == (f"odradek group: group {group} has 1 active member(s); offsets can "
                         "be reset only while it is empty")
    finally:
        consumer.close()
    missing = one_line_failure(odradek(broker, "group", "describe", unique_name("none"),
                                       check=False), 1)
    assert "GROUP_ID_NOT_FOUND" in missing


def test_group_reset_offsets_and_delete(broker: TestBroker) -> None:
    topic = broker.create_topic()
    group = unique_name("g")
    odradek(broker, "produce", topic, stdin="a\nb\nc\nd\n")
    odradek(broker, "consume", topic, "--from-beginning", "-g", group, "-e")

    def committed() -> int:
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
        try:
            (tp,) = consumer.committed([TopicPartition(topic, 0)], timeout=10)
            return int(tp.offset)
        finally:
            consumer.close()

    assert committed() == 4
    plan = odradek(broker, "group", "reset-offsets", group, "-t", topic, "--to-earliest")
    assert "(a plan only: --execute commits it)" in plan.stdout and committed() == 4
    done = as_json(odradek(broker, "group", "reset-offsets", group, "-t", topic,
                           "--to-earliest", "--execute", "--json"))
    assert done["offsets"] == [{"partition": 0, "from": 4, "to": 0}] and committed() == 0
    for how, expected in ((["--shift-by", "3"], 3), (["--shift-by", "-1"], 2),
                          (["--to-offset", "99"], 4), (["--to-latest"], 4),
                          (["--to-timestamp", "0"], 0)):
        odradek(broker, "group", "reset-offsets", group, "-t", topic, *how, "--execute")
        assert committed() == expected, how
    assert odradek(broker, "consume", topic, "-g", group, "-e").stdout == "a\nb\nc\nd\n"

    assert odradek(broker, "group", "delete", group).stdout == f"group {group} deleted\n"
    listed = [g["group_id"] for g in as_json(odradek(broker, "group", "list", "--json"))]
    assert group not in listed
    again = one_line_failure(odradek(broker, "group", "delete", group, check=False), 1)
    assert again.startswith(f"odradek group: delete group {group}: GROUP_ID_NOT_FOUND")


def test_txn_list_and_describe(broker: TestBroker) -> None:
    topic = broker.create_topic(partitions=2)
    txn_id = unique_name("txn")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": 60000})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"x", partition=1)
    producer.flush(10)
    ongoing = as_json(odradek(broker, "txn", "describe", txn_id, "--json"))
    assert ongoing["state"] == "Ongoing"
    assert ongoing["partitions"] == {topic: [1]}
    assert ongoing["timeout_ms"] == 60000 and ongoing["producer_id"] >= 0
    listed = {t["transactional_id"]: t for t in as_json(odradek(broker, "txn", "list", "--json"))}
    assert listed[txn_id]["state"] == "Ongoing"
    assert listed[txn_id]["producer_id"] == ongoing["producer_id"]
    producer.commit_transaction(30)
    done = wait_until(lambda: (d := as_json(odradek(broker, "txn", "describe", txn_id,
                                                    "--json")))["state"] == "CompleteCommit"
                      and d, what="the commit")
    assert done["partitions"] == {}
    assert f"transaction {txn_id}  state CompleteCommit" in odradek(
        broker, "txn", "describe", txn_id).stdout
    unknown = one_line_failure(odradek(broker, "txn", "describe", unique_name("none"),
                                       check=False), 1)
    assert "TRANSACTIONAL_ID_NOT_FOUND" in unknown


# -- the cluster and failures --------------------------------------------------------------------


def test_cluster_info(broker: TestBroker) -> None:
    doc = as_json(odradek(broker, "cluster", "info", "--json"))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    meta = admin.list_topics(timeout=10)
    assert doc["cluster_id"] == meta.cluster_id
    assert doc["controller"] == meta.controller_id
    port = int(broker.bootstrap.rsplit(":", 1)[1])
    assert doc["brokers"] == [{"node_id": 1, "host": "127.0.0.1", "port": port, "rack": None}]
    assert doc["api_versions"]["PRODUCE"]["max"] >= 9
    assert "transaction.version" in doc["features"]
    assert meta.cluster_id in odradek(broker, "cluster", "info").stdout


def test_unreachable_and_malformed_bootstrap_are_one_line(tmp_path: Any) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = one_line_failure(odradek(f"127.0.0.1:{port}", "topic", "list", check=False), 3)
    assert line == f"odradek topic: cannot connect to 127.0.0.1:{port}: Connection refused"
    with socket.socket() as silent:  # accepts, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        addr = f"127.0.0.1:{silent.getsockname()[1]}"
        line = one_line_failure(odradek(addr, "cluster", "info", "--timeout", "0.5",
                                        check=False), 3)
        assert line == f"odradek cluster: {addr} did not answer API_VERSIONS in time"
    line = one_line_failure(odradek("nonsense", "topic", "list", check=False), 2)
    assert line == "odradek topic: --bootstrap-server: bad address 'nonsense': expected host:port"
