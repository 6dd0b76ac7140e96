"""Integration-test harness: a real broker process per test, driven by stock clients.

`start_broker(data_dir, overrides=..., env=..., nofile=(soft, hard))` runs `python -m odradek
serve` (under that RLIMIT_NOFILE when given) with `listeners=PLAINTEXT://127.0.0.1:0` and
`log.dirs=<data_dir>`, reads its stderr in a thread and returns once the `listening` event
names the bound port (deadline, no blind polling). `broker` is one such broker in the test's
tmp_path. On a failed test every broker's stderr is attached to the report; at teardown each
running broker gets SIGTERM and must exit 0.

Set ODRADEK_IT_SERVER_CMD (a shell-style command line) to run the same tests against another
server that accepts `serve --override key=value ...` and logs the same `listening` line, e.g. a
wrapper around Apache Kafka used to check that a scenario is right.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from pathlib import Path

import pytest
from it_support import BrokerProcess, StartBroker

_BROKERS = pytest.StashKey[list["BrokerProcess"]]()


def pytest_configure(config: pytest.Config) -> None:
    # kafka-python 3.0 loads its protocol schemas with importlib.resources.read_text (which
    # calls open_text), deprecated on Python 3.11+; the suite runs with warnings as errors.
    config.addinivalue_line(
        "filterwarnings",
        "ignore:(read|open)_text is deprecated:DeprecationWarning:"
        r"(kafka\.protocol\.schemas\.load_json|importlib\.resources\._legacy)",
    )


@pytest.fixture
def start_broker(request: pytest.FixtureRequest) -> Iterator[StartBroker]:
    """Factory: `start_broker(data_dir, overrides={"key": "value"}, env={"VAR": "value"},
    nofile=(soft, hard))` -> a running broker (`env` is added to its environment, `nofile` is
    its RLIMIT_NOFILE)."""
    brokers: list[BrokerProcess] = []
    request.node.stash[_BROKERS] = brokers

    def start(data_dir: Path, overrides: Mapping[str, str] | None = None,
              env: Mapping[str, str] | None = None,
              nofile: tuple[int, int] | None = None) -> BrokerProcess:
        data_dir.mkdir(parents=True, exist_ok=True)
        broker = BrokerProcess(data_dir, overrides or {}, env, nofile)
        brokers.append(broker)
        broker.start()
        return broker

    yield start

    unclean: list[str] = []
    for broker in brokers:
        if broker.running:
            try:
                code = broker.stop()
            except RuntimeError as exc:
                unclean.append(str(exc))
                continue
            if code not in broker.clean_exit_codes:
                unclean.append(f"broker exited with {code} after SIGTERM")
    if unclean:
        pytest.fail("; ".join(unclean) + "\n" + "".join(b.stderr_text() for b in brokers))


@pytest.fixture
def broker(start_broker: StartBroker, tmp_path: Path) -> BrokerProcess:
    return start_broker(tmp_path / "data")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        for i, broker in enumerate(item.stash.get(_BROKERS, [])):
            report.sections.append((f"broker {i} stderr ({report.when})", broker.stderr_text()))
    return report
