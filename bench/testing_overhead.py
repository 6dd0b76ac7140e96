"""What the test fixtures cost (docs/testing.md): broker start-up and the per-test topic.

    python -m bench.testing_overhead [--rounds 5] [--topics 50] [--pytest-tests 30]
                                     [--inprocess] [--kafka --java-dir compat_tests/java]

- start: `odradek.testing.BrokerProcess.start()` (spawn `python -m odradek serve`, wait for
  the `listening` line) and then the first Metadata answered, as `running_broker()` does;
  stop: SIGTERM until the process exited.
- topic: what `kafka_topic` does per test: CreateTopics (1 partition) and Metadata until it
  has a leader, then DeleteTopics after the test; through the package's own client.
- pytest: a real pytest session (the plugin, in a subprocess) of N tests that each take a
  `kafka_topic`, with --durations: setup + teardown of tests 2..N is the per-test overhead as
  pytest counts it; test 1's setup includes the broker start.
- --inprocess: the alternative design measured for comparison, the broker on a thread of the
  calling process (a prototype: the broker's SIGTERM watcher is replaced, since signal
  handlers need the main thread), each round in a fresh interpreter: import + start until
  the port accepts.
- --kafka: the same start and topic numbers for Apache Kafka 4.4's JVM (KRaft, one node,
  started as compat_tests/brokers.py does: storage format, then the server, ready at the
  first Metadata that lists the broker). No container runtime is assumed.

Only 127.0.0.1 is used. Medians (and min-max) over the rounds.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from odradek.client import Admin
from odradek.testing import TEST_DEFAULTS, BrokerProcess, unique_name

_INPROC = r'''
import socket, sys, tempfile, time
t0 = time.perf_counter()
import anyio
from anyio.from_thread import start_blocking_portal
from odradek.broker import server
from odradek.config import load_config

async def no_signals(scope, *, task_status=anyio.TASK_STATUS_IGNORED):
    task_status.started()
    await anyio.sleep_forever()

server._watch_signals = no_signals
ports = []
real_run = server._run

async def run(broker, bound):
    ports.append(bound[0][1].port)
    await real_run(broker, bound)

server._run = run
config = load_config(None, ["listeners=PLAINTEXT://127.0.0.1:0",
                            f"log.dirs={tempfile.mkdtemp()}"], {})
with start_blocking_portal(backend="asyncio") as portal:
    future = portal.start_task_soon(server.serve, config)
    while not ports:
        time.sleep(0.001)
    socket.create_connection(("127.0.0.1", ports[0])).close()
    sys.stderr.write(f"READY {time.perf_counter() - t0}\n")
    future.cancel()
'''


def _stats(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{statistics.median(ms):7.1f} ms (min {min(ms):.1f}, max {max(ms):.1f}, n={len(ms)})"


def odradek_start(rounds: int) -> tuple[list[float], list[float], list[float]]:
    listening, ready, stop = [], [], []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            proc = BrokerProcess(Path(tmp), TEST_DEFAULTS)
            t0 = time.perf_counter()
            proc.start()
            t1 = time.perf_counter()
            with Admin(proc.bootstrap) as admin:
                admin.metadata([])
            t2 = time.perf_counter()
            code = proc.stop()
            t3 = time.perf_counter()
            assert code == 0, proc.stderr_text()
            listening.append(t1 - t0)
            ready.append(t2 - t0)
            stop.append(t3 - t2)
    return listening, ready, stop


def topic_ops(bootstrap: str, n: int) -> tuple[list[float], list[float]]:
    create, delete = [], []
    with Admin(bootstrap, timeout=30) as admin:
        for _ in range(n):
            name = unique_name("bench")
            t0 = time.perf_counter()
            admin.create_topic(name, 1)
            t1 = time.perf_counter()
            admin.delete_topics([name])
            t2 = time.perf_counter()
            create.append(t1 - t0)
            delete.append(t2 - t1)
    return create, delete


_TIMING_CONFTEST = """
import json, time
import pytest

SPENT = {}

@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    t0 = time.perf_counter()
    try:
        return (yield)
    finally:
        SPENT[item.name] = SPENT.get(item.name, 0.0) + time.perf_counter() - t0

@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    t0 = time.perf_counter()
    try:
        return (yield)
    finally:
        SPENT[item.name] = SPENT.get(item.name, 0.0) + time.perf_counter() - t0

def pytest_unconfigure(config):
    with open("spent.json", "w") as f:
        json.dump(SPENT, f)
"""


def pytest_session(n: int) -> tuple[float, list[float], float]:
    """(first test's setup, per-test setup+teardown of the others, session wall time); the
    last test's teardown holds the session's (the broker's stop) and is left out too."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp)
        (path / "pytest.ini").write_text("[pytest]\n")
        (path / "conftest.py").write_text(_TIMING_CONFTEST)
        (path / "test_overhead.py").write_text(textwrap.dedent(f'''
            import pytest

            @pytest.mark.parametrize("i", range({n}))
            def test_topic(i, kafka_topic):
                assert kafka_topic
        '''))
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "odradek.testing.pytest_plugin",
             "-p", "no:cacheprovider", "-q", "test_overhead.py"],
            cwd=path, capture_output=True, text=True, timeout=600, check=False)
        wall = time.perf_counter() - t0
        assert out.returncode == 0, out.stdout + out.stderr
        spent: dict[str, float] = json.loads((path / "spent.json").read_text())
    per_test = [spent[f"test_topic[{i}]"] for i in range(n)]
    return per_test[0], per_test[1:-1], wall


def inprocess(rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        proc = subprocess.run([sys.executable, "-c", _INPROC], capture_output=True, text=True,
                              timeout=60, check=True)
        # The broker's own log lines share stdout (from another thread): search, not split.
        found = re.search(r"READY ([0-9.]+)", proc.stderr)
        assert found, proc.stdout + proc.stderr
        out.append(float(found.group(1)))
    return out


def kafka(rounds: int, topics: int, java_dir: Path) -> None:
    import compat_tests.brokers as brokers

    brokers.JAVA_DIR = java_dir
    starts = []
    for r in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            broker = brokers.KafkaBroker(Path(tmp), Path(tmp) / "kafka.log")
            t0 = time.perf_counter()
            broker.start()
            starts.append(time.perf_counter() - t0)
            try:
                if r == 0:
                    create, delete = topic_ops(broker.bootstrap, topics)
                    print(f"kafka 4.4 topic create+ready   {_stats(create)}")
                    print(f"kafka 4.4 topic delete         {_stats(delete)}")
            finally:
                broker.stop()
    print(f"kafka 4.4 start to Metadata    {_stats(starts)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--pytest-tests", type=int, default=30)
    parser.add_argument("--inprocess", action="store_true")
    parser.add_argument("--kafka", action="store_true")
    parser.add_argument("--kafka-rounds", type=int, default=2)
    parser.add_argument("--java-dir", type=Path, default=Path("compat_tests/java").resolve())
    args = parser.parse_args()

    listening, ready, stop = odradek_start(args.rounds)
    print(f"odradek spawn to listening     {_stats(listening)}")
    print(f"odradek spawn to Metadata      {_stats(ready)}")
    print(f"odradek SIGTERM to exit        {_stats(stop)}")
    if args.inprocess:
        print(f"in-process import+start        {_stats(inprocess(args.rounds))}")
    with tempfile.TemporaryDirectory() as tmp:
        proc = BrokerProcess(Path(tmp), TEST_DEFAULTS)
        proc.start()
        try:
            create, delete = topic_ops(proc.bootstrap, args.topics)
        finally:
            proc.stop()
    print(f"odradek topic create+ready     {_stats(create)}")
    print(f"odradek topic delete           {_stats(delete)}")
    first, per_test, wall = pytest_session(args.pytest_tests)
    print(f"pytest: first test setup       {first * 1000:7.1f} ms (includes the broker start)")
    print(f"pytest: per-test kafka_topic   {_stats(per_test)} (setup + teardown)")
    print(f"pytest: whole session          {wall * 1000:7.1f} ms for {args.pytest_tests} tests "
          "(interpreter, collection, broker, tests, stop)")
    if args.kafka:
        kafka(args.kafka_rounds, args.topics, args.java_dir)


if __name__ == "__main__":
    main()
