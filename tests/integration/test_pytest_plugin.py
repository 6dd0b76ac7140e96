"""The pytest plugin (odradek/testing/pytest_plugin.py), run the way a user runs it: pytester
writes a small test file that uses the fixtures and runs pytest on it in a subprocess, which
starts its own broker; the outcomes (passed, failed, skipped) and the report are checked.
Also `odradek.testing.running_broker`, the context manager for unittest and scripts."""

from __future__ import annotations

import importlib.metadata
import re

import pytest

from odradek.client import Admin
from odradek.testing import running_broker

pytest_plugins = ["pytester"]

PLUGIN = "odradek.testing.pytest_plugin"

# The user's project: warnings are errors (so the plugin must raise none), except the one
# kafka-python 3.0 itself raises on Python 3.11+.
INI = """
[pytest]
filterwarnings =
    error
    ignore:(read|open)_text is deprecated:DeprecationWarning
"""


def _plugin_args() -> list[str]:
    """`-p` the plugin unless the installed package already registers it (entry point)."""
    registered = any(ep.value == PLUGIN
                     for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if registered else ["-p", PLUGIN]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider", *args,
                                         timeout=240)


USER_TESTS = '''
import time

import pytest

from confluent_kafka import TopicPartition


def poll_one(consumer):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            return msg
    raise AssertionError("no record within 30 s")


def test_confluent_round_trip(kafka_topic, confluent_producer, confluent_consumer):
    confluent_producer.produce(kafka_topic, key=b"k", value=b"confluent", headers=[("h", b"1")])
    assert confluent_producer.flush(10) == 0
    confluent_consumer.subscribe([kafka_topic])
    msg = poll_one(confluent_consumer)
    assert (msg.key(), msg.value(), msg.headers()) == (b"k", b"confluent", [("h", b"1")])


def test_kafka_python_round_trip(kafka_topic, kafka_python_producer, kafka_python_consumer):
    meta = kafka_python_producer.send(kafka_topic, key=b"k", value=b"kafka-python").get(10)
    assert meta.offset == 0  # a fresh topic
    kafka_python_consumer.subscribe([kafka_topic])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for records in kafka_python_consumer.poll(200).values():
            assert [r.value for r in records] == [b"kafka-python"]
            return
    raise AssertionError("no record within 30 s")


SEEN = {}


def test_first_writes_into_its_topic(kafka_topic, kafka_group_id, confluent_producer):
    SEEN["first"] = (kafka_topic, kafka_group_id)
    for i in range(5):
        confluent_producer.produce(kafka_topic, value=b"first %d" % i)
    assert confluent_producer.flush(10) == 0


def test_second_sees_nothing_of_the_first(kafka_topic, kafka_group_id, confluent_admin,
                                          confluent_consumer):
    first_topic, first_group = SEEN["first"]
    assert kafka_topic != first_topic and kafka_group_id != first_group
    topics = confluent_admin.list_topics(timeout=10).topics
    assert kafka_topic in topics
    assert first_topic not in topics  # deleted after the first test
    low, high = confluent_consumer.get_watermark_offsets(TopicPartition(kafka_topic, 0), 10)
    assert (low, high) == (0, 0)  # empty


@pytest.mark.odradek_topic(partitions=3, configs={"cleanup.policy": "compact"})
def test_marker_shapes_the_topic(kafka_topic, confluent_admin):
    meta = confluent_admin.list_topics(kafka_topic, timeout=10).topics[kafka_topic]
    assert len(meta.partitions) == 3


def test_a_failing_user_test(kafka_topic, confluent_producer):
    confluent_producer.produce(kafka_topic, value=b"x")
    confluent_producer.flush(10)
    assert 1 + 1 == 3, "this user test fails on purpose"
'''


def test_fixtures_produce_consume_isolate_and_report_a_failure(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_user=USER_TESTS)
    result = run(pytester, "-v")
    result.assert_outcomes(passed=5, failed=1)
    text = result.stdout.str()
    assert re.search(r"test_a_failing_user_test FAILED", text), text
    assert "this user test fails on purpose" in text
    # The failed test's report carries what the broker logged while it ran.
    assert "odradek broker log (call)" in text
    # Passing tests get no such section; one broker served the session.
    assert text.count("odradek broker log") == 1
    assert len(re.findall(r"odradek: test broker started in [0-9.]+ s", text)) == 1


def test_a_missing_client_library_skips_with_the_reason(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    # As if aiokafka were not installed: importing it fails.
    pytester.makeconftest("import sys\nsys.modules['aiokafka'] = None\n")
    pytester.makepyfile(test_user='''
        def test_uses_aiokafka(aiokafka_producer_factory):
            raise AssertionError("not reached")
    ''')
    result = run(pytester, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*aiokafka is not installed (pip install aiokafka)*"])
    # Skipped before the broker was needed: none was started.
    assert "test broker started" not in result.stdout.str()


def test_aiokafka_factories(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_user='''
        import asyncio

        def test_round_trip(kafka_topic, aiokafka_producer_factory, aiokafka_consumer_factory):
            async def go():
                async with aiokafka_producer_factory() as producer:
                    await producer.send_and_wait(kafka_topic, b"aiokafka")
                async with aiokafka_consumer_factory(kafka_topic) as consumer:
                    msg = await asyncio.wait_for(consumer.getone(), 30)
                    assert msg.value == b"aiokafka"
            asyncio.run(go())
    ''')
    run(pytester).assert_outcomes(passed=1)


CLUSTER_TESTS = '''
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic


def test_acks_all_through_a_leader_stop(kafka_bootstrap, odradek_cluster, confluent_admin,
                                        kafka_unique):
    assert kafka_bootstrap.count(",") == 2  # every broker, so clients survive a stop
    topic = kafka_unique
    confluent_admin.create_topics([NewTopic(topic, 1, 3, config={"min.insync.replicas": "2"})]
                                  )[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "acks": "all",
                         "enable.idempotence": True})
    acked = []
    def sent(err, msg):
        assert err is None, err
        acked.append(msg.value())
    for i in range(10):
        producer.produce(topic, b"%d" % i, on_delivery=sent)
    assert producer.flush(30) == 0
    leader = odradek_cluster.leader(topic, 0)
    odradek_cluster.stop(leader)
    for i in range(10, 20):
        producer.produce(topic, b"%d" % i, on_delivery=sent)
    assert producer.flush(60) == 0
    assert odradek_cluster.leader(topic, 0) != leader
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": topic,
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen = []
    deadline = time.monotonic() + 30
    while len(seen) < 20 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen.append(msg.value())
    consumer.close()
    assert seen == acked == [b"%d" % i for i in range(20)]


def test_the_next_test_finds_every_broker_again(odradek_cluster):
    assert [b["live"] for b in odradek_cluster.describe()["brokers"]] == [True, True, True]
'''


def test_brokers_option_starts_a_simulated_cluster(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_user=CLUSTER_TESTS)
    run(pytester, "-v", "--odradek-brokers", "3").assert_outcomes(passed=2)


def test_the_cluster_fixture_skips_with_one_broker(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_user="def test_needs_it(odradek_cluster):\n    raise AssertionError\n")
    result = run(pytester, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs a simulated cluster: --odradek-brokers N*"])


def test_bootstrap_option_uses_a_running_broker_and_overrides_reach_ours(
        pytester: pytest.Pytester) -> None:
    pytester.makeini(INI + "odradek_delete_topics = false\n")
    pytester.makepyfile(test_user='''
        def test_writes(kafka_topic, odradek_broker):
            assert odradek_broker.external
            odradek_broker.create_topic("kept-by-the-user-test")
    ''')
    with running_broker({"num.partitions": "2"}) as outer:
        run(pytester, f"--odradek-bootstrap={outer.bootstrap}").assert_outcomes(passed=1)
        with Admin(outer.bootstrap) as admin:
            assert [t.name for t in admin.topics(["kept-by-the-user-test"])] == [
                "kept-by-the-user-test"]

    # --odradek-override and the ini reach the broker the plugin starts: a topic created by
    # a producer (auto-create) gets the overridden default partition count.
    pytester.makeini(INI + "odradek_overrides =\n    num.partitions=4\n")
    pytester.makepyfile(test_user='''
        def test_defaults(kafka_unique, confluent_producer, confluent_admin):
            confluent_producer.produce(kafka_unique, value=b"x")
            assert confluent_producer.flush(10) == 0
            topic = confluent_admin.list_topics(kafka_unique, timeout=10).topics[kafka_unique]
            assert len(topic.partitions) == 5
    ''')
    run(pytester, "--odradek-override", "num.partitions=5").assert_outcomes(passed=1)


def test_a_malformed_override_is_one_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user="def test_x(kafka_bootstrap): pass\n")
    result = run(pytester, "--odradek-override", "no-equals-sign")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--odradek-override: 'no-equals-sign' is not KEY=VALUE*"])


def test_a_broker_that_cannot_start_errors_the_tests_with_its_reason(
        pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_user="def test_x(kafka_topic): pass\n")
    result = run(pytester, "--odradek-override", "num.partitions=0")
    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert "BrokerStartError: broker exited" in text
    assert "odradek: configuration error: num.partitions" in text


def test_running_broker_context_manager() -> None:
    with running_broker() as broker:
        process = broker.process
        assert process is not None and process.running
        assert broker.data_dir is not None and broker.data_dir.is_dir()
        topic = broker.create_topic(partitions=2)
        with Admin(broker.bootstrap) as admin:
            (info,) = admin.topics([topic])
            assert len(info.partitions) == 2
        data_dir = broker.data_dir
    assert not process.running and process.returncodes == [0]
    assert not data_dir.exists()  # the temporary data dir is removed


def test_user_file_uses_the_same_names_as_the_docs() -> None:
    # docs/testing.md lists the fixtures; keep it and the plugin in step.
    from pathlib import Path

    import odradek.testing.pytest_plugin as plugin

    fixtures = {name for name, value in vars(plugin).items()
                if hasattr(value, "_fixture_function_marker") or type(value).__name__ ==
                "FixtureFunctionDefinition"}
    doc = (Path(__file__).resolve().parents[2] / "docs" / "testing.md").read_text()
    missing = sorted(f for f in fixtures if f"`{f}`" not in doc)
    assert fixtures and not missing, f"fixtures not in docs/testing.md: {missing}"

