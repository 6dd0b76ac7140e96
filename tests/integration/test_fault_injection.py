"""Fault injection against real clients (issue #16): a broker started with `running_broker`
(admin HTTP on a free loopback port), rules set through `TestBroker.faults`, the CLI and
the plugin's `odradek_faults` fixture; stock clients see the injected error, delay or close
and recover as they would from a real broker's."""

from __future__ import annotations

import importlib.metadata
import json
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from odradek.testing import TestBroker, running_broker, unique_name

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def broker() -> Iterator[TestBroker]:
    with running_broker(start_timeout=120) as handle:
        yield handle


@pytest.fixture(autouse=True)
def _no_rules_left(broker: TestBroker) -> Iterator[None]:
    yield
    broker.faults.clear()


def _deliver(producer: Producer, topic: str, value: bytes, timeout: float = 60) -> int:
    results: list[tuple[object, int]] = []
    producer.produce(topic, value, on_delivery=lambda e, m: results.append(
        (e, m.offset() if e is None else -1)))
    producer.flush(timeout)
    [(error, offset)] = results
    assert error is None, error
    return offset


def test_health_and_ready(broker: TestBroker) -> None:
    assert broker.admin_url is not None and broker.admin_url.startswith("http://127.0.0.1:")
    for path, body in (("/health", b"ok\n"), ("/ready", b"ready\n")):
        with urllib.request.urlopen(broker.admin_url + path, timeout=10) as resp:
            assert resp.status == 200 and resp.read() == body


def test_confluent_retries_not_leader_then_succeeds(broker: TestBroker) -> None:
    topic = broker.create_topic()
    rule = broker.faults.add("Produce", error="NOT_LEADER_OR_FOLLOWER", count=2, topic=topic)
    mark = broker.process.log_position if broker.process else 0
    producer = Producer({"bootstrap.servers": broker.bootstrap, "retry.backoff.ms": 20,
                         "enable.idempotence": True})
    assert _deliver(producer, topic, b"after two errors") == 0  # written once, at offset 0
    assert broker.faults.get(rule["id"])["injected"] == 2
    log = broker.log_text(mark)
    assert log.count("fault injected") == 2 and "NOT_LEADER_OR_FOLLOWER" in log


def test_kafka_python_retries_not_leader_then_succeeds(broker: TestBroker) -> None:
    kafka = pytest.importorskip("kafka")
    topic = broker.create_topic()
    rule = broker.faults.add("Produce", error="NOT_LEADER_OR_FOLLOWER", count=2)
    producer = kafka.KafkaProducer(bootstrap_servers=broker.bootstrap, retries=5,
                                   retry_backoff_ms=20)
    try:
        meta = producer.send(topic, b"v").get(timeout=60)
    finally:
        producer.close()
    assert meta.offset == 0
    assert broker.faults.get(rule["id"])["injected"] == 2


def test_a_delayed_response_hits_the_client_request_timeout(broker: TestBroker) -> None:
    topic = broker.create_topic()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "request.timeout.ms": 500,
                         "message.timeout.ms": 1500, "retries": 0})
    _deliver(producer, topic, b"warm-up")  # connected, metadata known
    broker.faults.add("Produce", "delay", delay_ms=3000, count=1)
    results: list[object] = []
    producer.produce(topic, b"late", on_delivery=lambda e, m: results.append(e))
    producer.flush(10)
    [error] = results
    assert error is not None and "timed out" in str(error).lower(), error


def test_a_closed_connection_and_the_client_reconnects(broker: TestBroker) -> None:
    topic = broker.create_topic()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "retry.backoff.ms": 20,
                         "reconnect.backoff.ms": 20, "enable.idempotence": True})
    _deliver(producer, topic, b"first")
    rule = broker.faults.add("Produce", "close", count=1)
    assert _deliver(producer, topic, b"second") == 1  # resent on a new connection
    assert broker.faults.get(rule["id"])["injected"] == 1


def test_a_dropped_request_is_never_answered(broker: TestBroker) -> None:
    from odradek.client import Admin, BrokerUnreachable

    broker.faults.add("CreateTopics", "drop", count=1)
    with Admin(broker.bootstrap, timeout=1.0) as admin, pytest.raises(BrokerUnreachable):
        admin.create_topic(unique_name("t"), 1)


def test_the_cli_adds_lists_and_clears(broker: TestBroker) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "odradek", "fault", *args,
                               "--admin-url", str(broker.admin_url)],
                              capture_output=True, text=True, timeout=60)

    added = cli("add", "Fetch", "--error", "NOT_LEADER_OR_FOLLOWER", "--count", "3", "--json")
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["error_code"] == 6
    listed = cli("list")
    assert listed.returncode == 0 and "NOT_LEADER_OR_FOLLOWER" in listed.stdout
    for bad, message in ((("add", "Fecth", "--error", "NONE"), "unknown api 'Fecth'"),
                         (("add", "Fetch", "--error", "NOT_LEADR"), "unknown error 'NOT_LEADR'")):
        result = cli(*bad)
        assert result.returncode == 2
        assert result.stderr.strip().splitlines() == [f"odradek fault: {message} " + (
            "(use Kafka's name, e.g. Produce, or the key)" if "api" in message else
            "(use Kafka's name, e.g. NOT_LEADER_OR_FOLLOWER, or the code)")]
    cleared = cli("clear")
    assert cleared.returncode == 0 and "removed 1" in cleared.stdout
    unreachable = subprocess.run([sys.executable, "-m", "odradek", "fault", "list",
                                  "--admin-url", "http://127.0.0.1:1"],
                                 capture_output=True, text=True, timeout=60)
    assert unreachable.returncode == 3 and "Traceback" not in unreachable.stderr


PLUGIN_TEST = '''
from confluent_kafka import Producer


def test_injected_error_then_success(kafka_topic, kafka_bootstrap, odradek_faults):
    rule = odradek_faults.add("Produce", error="NOT_LEADER_OR_FOLLOWER", count=1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "retry.backoff.ms": 20})
    errors = []
    producer.produce(kafka_topic, b"v", on_delivery=lambda e, m: errors.append(e))
    producer.flush(60)
    assert errors == [None]
    assert odradek_faults.get(rule["id"])["injected"] == 1


def test_rules_do_not_leak_into_the_next_test(odradek_faults):
    assert odradek_faults.list() == []
'''


def test_the_plugin_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=PLUGIN_TEST)
    registered = any(ep.value == "odradek.testing.pytest_plugin"
                     for ep in importlib.metadata.entry_points(group="pytest11"))
    plugin = [] if registered else ["-p", "odradek.testing.pytest_plugin"]
    result = pytester.runpytest_subprocess(*plugin, "-p", "no:cacheprovider", timeout=240)
    result.assert_outcomes(passed=2)


def test_a_topic_filter_spares_other_topics(broker: TestBroker) -> None:
    faulted, spared = broker.create_topic(), broker.create_topic()
    broker.faults.add("Produce", error="NOT_LEADER_OR_FOLLOWER", topic=faulted)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.timeout.ms": 2000,
                         "retry.backoff.ms": 50})
    assert _deliver(producer, spared, b"fine") == 0
    with pytest.raises(AssertionError, match=r"NOT_LEADER|timed out"):
        _deliver(producer, faulted, b"never")


def test_the_admin_endpoint_is_opt_in_and_binds_where_told() -> None:
    with running_broker({"admin.http.port": "-1"}, start_timeout=120) as off:
        assert off.admin_url is None and "admin http" not in off.log_text()
        with pytest.raises(RuntimeError, match="no admin HTTP endpoint"):
            off.faults.list()
    with running_broker({"admin.http.host": "127.0.0.2"}, start_timeout=120) as other:
        assert other.admin_url is not None and other.admin_url.startswith("http://127.0.0.2:")
        with urllib.request.urlopen(other.admin_url + "/health", timeout=10) as resp:
            assert resp.status == 200


def test_an_admin_port_in_use_is_one_line_and_touches_nothing(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "odradek", "serve", "--override",
             "listeners=PLAINTEXT://127.0.0.1:0", "--override", f"log.dirs={tmp_path}",
             "--override", f"admin.http.port={port}"],
            capture_output=True, text=True, timeout=60)
    assert result.returncode == 3
    assert result.stderr.strip().splitlines()[-1].startswith(
        f"odradek: cannot start: cannot listen on http://127.0.0.1:{port} for the admin endpoint")
    assert "Traceback" not in result.stderr and list(tmp_path.iterdir()) == []
