"""The pytest plugin: a real Odradek broker for the session, a fresh topic per test.

Registered through the `pytest11` entry point `odradek` (disable with `-p no:odradek`).
Nothing starts until a test asks for a broker fixture; then one broker runs for the whole
session (per xdist worker) in a subprocess on a free loopback port with a data dir under
pytest's basetemp, and stops with SIGTERM at the end (an unclean exit fails the run).

Fixtures (docs/testing.md has examples):
    odradek_broker        session  the broker (odradek.testing.TestBroker): .bootstrap,
                                   .create_topic(), .admin(), .process (None if external)
    kafka_bootstrap       session  "127.0.0.1:PORT"
    odradek_overrides     session  broker settings (dict); override it in a conftest.py
    kafka_unique          function a name used by no other test: t-<test name>-<10 hex>
    kafka_topic           function a new empty topic (1 partition; `@pytest.mark.odradek_topic
                                   (partitions=3, configs={...})` to change), deleted after
    kafka_topic_factory   function make(partitions=1, configs=None, name=None) -> topic name
    kafka_group_id        function a consumer group id no other test uses
    odradek_cluster       function with `--odradek-brokers N` (N > 1): the simulated cluster
                                   (odradek.client.cluster.ClusterAdmin): .stop(2), .start(2),
                                   .leader(topic, 0), .describe(); every broker stopped by the
                                   test is started again after it (skips with one broker)
    odradek_faults        function the broker's fault rules (odradek.client.faults.FaultAdmin):
                                   .add("Produce", error="NOT_LEADER_OR_FOLLOWER", count=2),
                                   .list(), .clear(); every rule is cleared after the test
    confluent_producer / confluent_consumer / confluent_admin            (confluent-kafka)
    kafka_python_producer / kafka_python_consumer / kafka_python_admin   (kafka-python)
    aiokafka_producer_factory / aiokafka_consumer_factory (aiokafka: make(**config) -> an
                                   unstarted client; use `async with make() as producer:`)
Client fixtures skip the test, saying which package to install, when the library is missing.
Consumers use the test's own group id and `auto.offset.reset=earliest`.

Options: `--odradek-brokers N` (or ini `odradek_brokers`, default 1) starts a simulated
cluster of N brokers in the one process (`simulated.brokers`, docs/cluster.md): topics may
then have replication factor up to N, and `kafka_bootstrap` lists every broker.
`--odradek-bootstrap HOST:PORT` (or ini `odradek_bootstrap`) uses a running broker
instead of starting one; `--odradek-override KEY=VALUE` (repeatable) and ini
`odradek_overrides` (one KEY=VALUE per line) set broker settings; ini `odradek_start_timeout`
(seconds, default 30); ini `odradek_delete_topics` (default true) deletes the topics the
fixtures made after each test.
A failed test that used the broker gets what the broker logged during it in its report.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any

import pytest

from odradek.testing import TestBroker, running_broker, unique_name

__all__ = ["pytest_addoption", "pytest_configure"]

_BROKER = pytest.StashKey["TestBroker"]()
_STARTED_IN = pytest.StashKey[float]()
_LOG_MARK = pytest.StashKey[int]()
_OVERRIDES = pytest.StashKey[Mapping[str, str]]()

TopicFactory = Callable[..., str]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("odradek", "Odradek test broker (odradek.testing)")
    group.addoption("--odradek-bootstrap", default=None, metavar="HOST:PORT",
                    help="use this running Kafka-compatible broker instead of starting one")
    group.addoption("--odradek-brokers", default=None, type=int, metavar="N",
                    help="start a simulated cluster of N brokers (default 1)")
    group.addoption("--odradek-override", action="append", default=[], metavar="KEY=VALUE",
                    help="a setting for the broker the plugin starts (repeatable)")
    parser.addini("odradek_bootstrap", "use this running broker instead of starting one",
                  default="")
    parser.addini("odradek_overrides", "settings for the broker the plugin starts, one "
                  "KEY=VALUE per line", type="linelist", default=[])
    parser.addini("odradek_brokers", "brokers of the simulated cluster the plugin starts",
                  default="1")
    parser.addini("odradek_start_timeout", "seconds the broker may take to start",
                  default="30")
    parser.addini("odradek_delete_topics", "delete the topics the fixtures created after "
                  "each test", type="bool", default=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "odradek_topic(partitions=1, configs=None): what `kafka_topic` creates")
    # Checked here, so a malformed setting stops the run at once with one line.
    ini: list[str] = config.getini("odradek_overrides")
    cli: list[str] = config.getoption("odradek_override")
    config.stash[_OVERRIDES] = {**_parse_overrides(ini, "odradek_overrides"),
                                **_parse_overrides(cli, "--odradek-override")}
    try:
        float(config.getini("odradek_start_timeout"))
    except ValueError:
        raise pytest.UsageError("odradek_start_timeout: not a number of seconds") from None
    brokers = _brokers(config)
    if brokers > 1:
        current: Mapping[str, str] = config.stash[_OVERRIDES]
        merged = {"simulated.brokers": str(brokers), **current}  # an explicit override wins
        config.stash[_OVERRIDES] = merged


def _brokers(config: pytest.Config) -> int:
    raw = config.getoption("odradek_brokers") or config.getini("odradek_brokers")
    try:
        brokers = int(raw)
    except ValueError:
        raise pytest.UsageError(f"odradek_brokers: {raw!r} is not a number") from None
    if brokers < 1:
        raise pytest.UsageError("odradek_brokers: at least 1")
    return brokers


def _parse_overrides(lines: list[str], where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"{where}: {line!r} is not KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


# -- the broker ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def odradek_overrides(pytestconfig: pytest.Config) -> dict[str, str]:
    """Settings for the broker the plugin starts: ini `odradek_overrides`, then
    `--odradek-override`. Override this fixture (session scope) to set them in code."""
    overrides = pytestconfig.stash[_OVERRIDES]
    return dict(overrides)


@pytest.fixture(scope="session")
def odradek_broker(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory,
                   odradek_overrides: dict[str, str]) -> Iterator[TestBroker]:
    """The session's broker: started on first use, stopped (SIGTERM, must exit 0) at the end."""
    bootstrap = pytestconfig.getoption("odradek_bootstrap") or pytestconfig.getini(
        "odradek_bootstrap") or None
    timeout = float(pytestconfig.getini("odradek_start_timeout"))
    data_dir = None if bootstrap else tmp_path_factory.mktemp("odradek", numbered=True)
    started = time.perf_counter()
    with running_broker(odradek_overrides, data_dir=data_dir, bootstrap=bootstrap,
                        start_timeout=timeout) as broker:
        pytestconfig.stash[_STARTED_IN] = time.perf_counter() - started
        pytestconfig.stash[_BROKER] = broker
        try:
            yield broker
        finally:
            del pytestconfig.stash[_BROKER]


@pytest.fixture(scope="session")
def kafka_bootstrap(odradek_broker: TestBroker, odradek_overrides: dict[str, str]) -> str:
    """The broker's bootstrap address, `127.0.0.1:PORT` (every broker's, comma-separated,
    for a simulated cluster)."""
    if int(odradek_overrides.get("simulated.brokers", "1")) > 1 and not odradek_broker.external:
        return odradek_broker.all_bootstrap()
    return odradek_broker.bootstrap


@pytest.fixture
def odradek_cluster(odradek_broker: TestBroker,
                    odradek_overrides: dict[str, str]) -> Iterator[Any]:
    """The simulated cluster (`--odradek-brokers N`); after the test every broker it stopped
    is started again, so the next test finds the whole cluster. Skips with one broker."""
    if int(odradek_overrides.get("simulated.brokers", "1")) <= 1 or odradek_broker.external:
        pytest.skip("needs a simulated cluster: --odradek-brokers N (N > 1)")
    cluster = odradek_broker.cluster
    try:
        yield cluster
    finally:
        for b in cluster.describe()["brokers"]:
            if not b["live"]:
                cluster.start(int(b["node_id"]))


@pytest.fixture
def odradek_faults(odradek_broker: TestBroker) -> Iterator[Any]:
    """Fault injection on the session broker; the rules are cleared after the test. Skips
    the test for an external broker with no admin endpoint known."""
    if odradek_broker.admin_url is None:
        pytest.skip("the broker has no admin HTTP endpoint (admin.http.port) for faults")
    faults = odradek_broker.faults
    faults.clear()
    try:
        yield faults
    finally:
        faults.clear()


# -- per-test names and topics -------------------------------------------------------------------


@pytest.fixture
def kafka_unique(request: pytest.FixtureRequest) -> str:
    """A name no other test uses: `t-<test name>-<10 hex digits>` (a valid topic name)."""
    return unique_name("t", hint=request.node.name)


@pytest.fixture
def kafka_group_id(request: pytest.FixtureRequest) -> str:
    """A consumer group id no other test uses."""
    return unique_name("g", hint=request.node.name)


@pytest.fixture
def kafka_topic_factory(odradek_broker: TestBroker, request: pytest.FixtureRequest,
                        pytestconfig: pytest.Config) -> Iterator[TopicFactory]:
    """`make(partitions=1, configs=None, name=None)` creates a topic (a unique name by
    default) and returns its name once every partition has a leader; they are deleted after
    the test unless ini `odradek_delete_topics` is false."""
    made: list[str] = []

    def make(partitions: int = 1, configs: Mapping[str, str] | None = None,
             name: str | None = None) -> str:
        topic = odradek_broker.create_topic(
            name or unique_name("t", hint=request.node.name), partitions, configs)
        made.append(topic)
        return topic

    yield make
    if made and pytestconfig.getini("odradek_delete_topics"):
        odradek_broker.delete_topics(*made)


@pytest.fixture
def kafka_topic(kafka_topic_factory: TopicFactory, request: pytest.FixtureRequest) -> str:
    """A new, empty topic only this test knows (see the `odradek_topic` marker)."""
    marker = request.node.get_closest_marker("odradek_topic")
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker else {}
    if marker and marker.args:
        kwargs.setdefault("partitions", marker.args[0])
    return kafka_topic_factory(**kwargs)


# -- client fixtures -----------------------------------------------------------------------------


def _need(module: str, package: str) -> Any:
    return pytest.importorskip(module, reason=f"{package} is not installed "
                                              f"(pip install {package})")


def _bootstrap(request: pytest.FixtureRequest) -> str:
    """The broker, asked for only once the client library is known to be there: a test
    skipped for a missing library starts no broker."""
    bootstrap: str = request.getfixturevalue("kafka_bootstrap")
    return bootstrap


@pytest.fixture
def confluent_producer(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A confluent_kafka.Producer; flushed (10 s) after the test."""
    ck = _need("confluent_kafka", "confluent-kafka")
    kafka_bootstrap = _bootstrap(request)
    producer = ck.Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})
    yield producer
    producer.flush(10)


@pytest.fixture
def confluent_consumer(request: pytest.FixtureRequest, kafka_group_id: str) -> Iterator[Any]:
    """A confluent_kafka.Consumer in the test's own group, reading from the earliest offset."""
    ck = _need("confluent_kafka", "confluent-kafka")
    kafka_bootstrap = _bootstrap(request)
    consumer = ck.Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": kafka_group_id,
                            "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100})
    yield consumer
    consumer.close()


@pytest.fixture
def confluent_admin(request: pytest.FixtureRequest) -> Any:
    """A confluent_kafka.admin.AdminClient."""
    _need("confluent_kafka", "confluent-kafka")
    kafka_bootstrap = _bootstrap(request)
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": kafka_bootstrap})


@pytest.fixture
def kafka_python_producer(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A kafka.KafkaProducer; closed after the test."""
    kafka = _need("kafka", "kafka-python")
    kafka_bootstrap = _bootstrap(request)
    producer = kafka.KafkaProducer(bootstrap_servers=kafka_bootstrap, linger_ms=5)
    yield producer
    producer.close(timeout=10)


@pytest.fixture
def kafka_python_consumer(request: pytest.FixtureRequest, kafka_group_id: str) -> Iterator[Any]:
    """A kafka.KafkaConsumer in the test's own group, reading from the earliest offset."""
    kafka = _need("kafka", "kafka-python")
    kafka_bootstrap = _bootstrap(request)
    consumer = kafka.KafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id=kafka_group_id,
                                   auto_offset_reset="earliest", fetch_max_wait_ms=100)
    yield consumer
    consumer.close()


@pytest.fixture
def kafka_python_admin(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A kafka.KafkaAdminClient; closed after the test."""
    kafka = _need("kafka", "kafka-python")
    kafka_bootstrap = _bootstrap(request)
    admin = kafka.KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    yield admin
    admin.close()


@pytest.fixture
def aiokafka_producer_factory(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """`make(**config)` -> an unstarted aiokafka.AIOKafkaProducer for this broker; call it
    inside the test's event loop: `async with make() as producer: ...`."""
    aiokafka = _need("aiokafka", "aiokafka")
    kafka_bootstrap = _bootstrap(request)

    def make(**config: Any) -> Any:
        return aiokafka.AIOKafkaProducer(**{"bootstrap_servers": kafka_bootstrap, **config})

    return make


@pytest.fixture
def aiokafka_consumer_factory(request: pytest.FixtureRequest, kafka_group_id: str) -> Callable[..., Any]:
    """`make(*topics, **config)` -> an unstarted aiokafka.AIOKafkaConsumer in the test's own
    group from the earliest offset: `async with make(topic) as consumer: ...`."""
    aiokafka = _need("aiokafka", "aiokafka")
    kafka_bootstrap = _bootstrap(request)

    def make(*topics: str, **config: Any) -> Any:
        return aiokafka.AIOKafkaConsumer(*topics, **{
            "bootstrap_servers": kafka_bootstrap, "group_id": kafka_group_id,
            "auto_offset_reset": "earliest", "fetch_max_wait_ms": 100, **config})

    return make


# -- reports -------------------------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    broker = item.config.stash.get(_BROKER, None)
    process = broker.process if broker is not None else None
    item.stash[_LOG_MARK] = process.log_position if process is not None else 0


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        broker = item.config.stash.get(_BROKER, None)
        text = broker.log_text(item.stash.get(_LOG_MARK, 0)) if broker is not None else ""
        if text:  # what our broker logged since this test's setup began
            report.sections.append((f"odradek broker log ({report.when})", text))
    return report


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    started_in = config.stash.get(_STARTED_IN, None)
    if started_in is None:
        return
    if config.getoption("odradek_bootstrap") or config.getini("odradek_bootstrap"):
        return
    terminalreporter.write_line(f"odradek: test broker started in {started_in:.2f} s")
