"""A selection of librdkafka's own test suite against Odradek (or Apache Kafka):

    python -m compat_tests.upstream.librdkafka [--target odradek|kafka] [--tests 0012,0017] [--jobs 2]
        [--group-protocol classic|consumer] [--full] [--limit SECONDS] [--brokers 1|3]

librdkafka's source ships in the npm package node-rdkafka (deps/librdkafka); `prepare` packs
it into compat_tests/upstream/work/ (ignored by git) and builds the library and the
test-runner with Debian's packages (libssl-dev, zlib1g-dev, libzstd-dev, rapidjson-dev, pkg-config; no SASL
GSSAPI, no curl). The broker runs the suite's "default" scenario: auto-created topics with
num.partitions=4 (replication factor 1: one node). Every broker test of tests/test.c
(not local-only, not sockem, not a mock-cluster test) runs in quick mode (`--full`: the tests'
full mode), one test-runner process per test number (the runner picks tests by number, so
0045's five tests share one; their local mock tests are left out), two processes at a time,
each with a wall-clock limit, so a hung or crashing test costs only its number. Results per
test go to work/librdkafka-<target>.json; the exit status is non-zero when a test of the
allow-list (librdkafka_allow.txt) did not pass.

`--group-protocol consumer` runs the group-related broker tests (those whose source subscribes,
commits or sets a group id) with TEST_CONSUMER_GROUP_PROTOCOL=consumer: test.c then sets
`group.protocol=consumer` on every consumer (KIP-848, ConsumerGroupHeartbeat) and drops the
settings the consumer protocol forbids (session.timeout.ms, heartbeat.interval.ms,
partition.assignment.strategy, group.protocol.type); some tests change their expectations or
skip parts under it (test_consumer_group_protocol_classic()). That run has its own allow-list,
librdkafka_consumer_allow.txt, results work/librdkafka-<target>-consumer.json and logs
work/logs-consumer/ (`--full` adds -full to both).
`--brokers 3` runs the tests that need three brokers (RF3_TESTS: topics with replication
factor 3, "requires at least 3 brokers") against Odradek `--brokers 3` or the three-node
Kafka cluster (compat_tests/upstream/three_brokers.py), with KAFKA_PATH pointing at a stand-in
made of the Maven jars (0098 runs Kafka's Java transactional producer); allow-list
librdkafka_rf3_allow.txt, results work/librdkafka-<target>-3brokers.json, logs work/logs-3brokers/.
`--tests` picks others (any broker test runs on three brokers; the allow-list gates those it ran).
TEST_KAFKA_VERSION is the oracle's version, 4.4.0: the suite compares it only with 4.0 (tests
that expect Kafka 4's removals) and with the tests' minimum versions, none above 3.x.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from compat_tests.brokers import make_broker
from compat_tests.upstream.three_brokers import kafka_path_shim, make_three_brokers

HERE = Path(__file__).resolve().parent
WORK = HERE / "work"
ALLOW = HERE / "librdkafka_allow.txt"
CONSUMER_ALLOW = HERE / "librdkafka_consumer_allow.txt"
RF3_ALLOW = HERE / "librdkafka_rf3_allow.txt"
# The broker tests that need three brokers: 0008 says so, 0098 and 0103 create topics with
# replication factor 3. 0101_fetch_from_follower (RF 3 too) also needs a broker.rack per
# broker and follower fetching (KIP-392), which the simulated cluster does not have: not here.
RF3_TESTS = ("0008_reqacks", "0098_consumer_txn", "0103_transactions")
KAFKA_VERSION = "4.4.0"  # TEST_KAFKA_VERSION: the oracle's version (compat_tests/brokers.py)
# A test is group-related when its source file subscribes, commits or names a group.
GROUP_RELATED = re.compile(r"subscribe\s*\(|consumer_group|group\.id|rd_kafka_commit|->commit")
NODE_RDKAFKA = "node-rdkafka@3.6.1"  # ships librdkafka 2.12.0
APT = ["libssl-dev", "zlib1g-dev", "libzstd-dev", "rapidjson-dev", "pkg-config"]
TEST_DECL = re.compile(r"_TEST\((\d{4}_\w+),(.*?)\)\s*,\s*$", re.S | re.M)
FAILED = re.compile(r'### Test "(\d{4}_\w+)[^"]*" failed at ([^\n]*?): ###\n([^\n]*)')
# The summary table the runner prints at the end: | name | STATE | 1.234s | reason
TABLE = re.compile(r"^\| (\d{4}_\w+)\s+\|\s+(\w+) \|\s+[\d.]+s \|(.*)$", re.M)
SKIP_FLAGS = ("TEST_F_LOCAL", "TEST_F_SOCKEM", "TEST_F_KNOWN_ISSUE", "TEST_F_MANUAL")


def source_dir() -> Path:
    return WORK / "package" / "deps" / "librdkafka"


def prepare() -> Path:
    src = source_dir()
    runner = src / "tests" / "test-runner"
    if runner.exists():
        return src
    WORK.mkdir(parents=True, exist_ok=True)
    missing = [p for p in APT if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode != 0]
    if missing:
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if not src.exists():
        subprocess.run(["npm", "pack", NODE_RDKAFKA], cwd=WORK, check=True, capture_output=True)
        tgz = sorted(WORK.glob("node-rdkafka-*.tgz"))[-1]
        with tarfile.open(tgz) as tar:
            tar.extractall(WORK, filter="data")
    subprocess.run(["./configure", "--disable-gssapi", "--disable-curl", "--disable-lz4-ext"], cwd=src, check=True,
                   capture_output=True)
    subprocess.run(["make", "-j2", "libs"], cwd=src, check=True, capture_output=True)
    subprocess.run(["make", "-j2", "build"], cwd=src / "tests", check=True, capture_output=True)
    return src


def broker_tests(src: Path) -> list[str]:
    """Tests declared in tests/test.c that need a broker (not local, sockem or mock tests)."""
    text = (src / "tests" / "test.c").read_text()
    start = text.index("struct test tests[]")
    names = []
    for m in TEST_DECL.finditer(text, start):
        name, flags = m.group(1), m.group(2)
        if any(f in flags for f in SKIP_FLAGS) or "mock" in name:
            continue
        names.append(name)
    return names


def group_related(src: Path, names: list[str]) -> list[str]:
    """The tests of `names` whose source files (NNNN-*.c, NNNN-*.cpp) use a consumer group."""
    tests = src / "tests"
    keep = []
    for name in names:
        files = [*tests.glob(f"{name[:4]}-*.c"), *tests.glob(f"{name[:4]}-*.cpp")]
        if any(GROUP_RELATED.search(f.read_text(errors="replace")) for f in files):
            keep.append(name)
    return keep


def run_tests(src: Path, names: list[str], conf: Path, limit: float, group_protocol: str = "classic",
              quick: bool = True, logs: Path = WORK / "logs",
              extra_env: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
    """Run the tests `names`, which share one number (the runner selects tests by number:
    TESTS=0045 runs every 0045 test), in one test-runner process; local (mock-cluster) tests
    of that number are left out (-L). A result for each of `names`."""
    number = names[0][:4]
    # The tests' own cwd: some read ../src/*.json. Parallel runs don't clash there: the
    # runner writes no report without -r and names its stats files uniquely.
    cwd = src / "tests"
    env = dict(os.environ, TESTS=number, RDKAFKA_TEST_CONF=str(conf), TEST_KAFKA_VERSION=KAFKA_VERSION,
               LD_LIBRARY_PATH=f"{src / 'src'}:{src / 'src-cpp'}", **(extra_env or {}))
    env.pop("CI", None)  # the runner changes its concurrency on CI; keep runs alike
    env.pop("TEST_CONSUMER_GROUP_PROTOCOL", None)
    if group_protocol != "classic":
        env["TEST_CONSUMER_GROUP_PROTOCOL"] = group_protocol
    argv = [str(src / "tests" / "test-runner"), *(["-Q"] if quick else []), "-E", "-L", "-p1"]
    try:
        p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=limit)
        out, code = p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace"), p.returncode
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") + (exc.stderr or b"").decode(errors="replace")
        code = -1
    out = re.sub(r"\x1b\[[0-9;]*m", "", out)
    logs.mkdir(parents=True, exist_ok=True)
    (logs / f"{number}.log").write_text(out)
    states = {m.group(1): (m.group(2), m.group(3).strip()) for m in TABLE.finditer(out)}
    return {name: _result(name, out, code, states.get(name), limit) for name in names}


def _result(name: str, out: str, code: int, state: tuple[str, str] | None, limit: float) -> dict[str, str]:
    failure = next((m for m in FAILED.finditer(out) if m.group(1) == name), None)
    if failure:
        return {"status": "FAIL", "reason": f"{failure.group(2)}: {failure.group(3)}"[:300]}
    if state and state[0] == "PASSED":
        return {"status": "PASS", "reason": ""}
    if state and state[0] == "SKIPPED":
        warn = next((ln.split("SKIPPING TEST:", 1)[1].strip() for ln in out.splitlines()
                     if "SKIPPING TEST:" in ln and name in ln), "")
        return {"status": "SKIP", "reason": (state[1] or warn or "skipped by the test itself")[:200]}
    if code == -1:
        return {"status": "FAIL", "reason": f"no result within {limit:.0f}s"}
    return {"status": "FAIL", "reason": f"test-runner exited {code}; state {state[0] if state else 'unknown'}"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compat_tests.upstream.librdkafka")
    ap.add_argument("--target", choices=["odradek", "kafka"], default="odradek")
    ap.add_argument("--tests", default="", help="comma list of test-name prefixes (default: every broker test)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--limit", type=float, default=240.0, help="wall-clock seconds per test")
    ap.add_argument("--group-protocol", choices=["classic", "consumer"], default="classic",
                    help="TEST_CONSUMER_GROUP_PROTOCOL; consumer runs the group-related tests under KIP-848")
    ap.add_argument("--full", action="store_true",
                    help="the tests' full mode (no -Q): e.g. all of 0113's cooperative cases; raise --limit")
    ap.add_argument("--brokers", type=int, choices=[1, 3], default=1,
                    help="3: the tests that need three brokers (RF3_TESTS), against three brokers")
    args = ap.parse_args(argv)
    consumer = args.group_protocol == "consumer"
    three = args.brokers == 3
    # Results and logs of each kind of run apart: -consumer (group protocol), -full (no -Q).
    suffix = ("-consumer" if consumer else "") + ("-full" if args.full else "") + ("-3brokers" if three else "")
    src = prepare()
    names = broker_tests(src)
    if consumer:
        names = group_related(src, names)
    if args.tests or three:
        wanted = args.tests.split(",") if args.tests else list(RF3_TESTS)
        names = [n for n in names if any(n.startswith(w) for w in wanted)]
    workdir = Path(tempfile.mkdtemp(prefix="librdkafka-upstream-"))
    extra_env: dict[str, str] = {}
    broker: Any
    if three:
        broker = make_three_brokers(args.target, workdir, {"num.partitions": "4"})
        extra_env["KAFKA_PATH"] = str(kafka_path_shim(workdir))
    else:
        broker = make_broker(args.target, workdir, {"num.partitions": "4"})
    broker.start()
    conf = workdir / "test.conf"
    conf.write_text(f"metadata.broker.list={broker.bootstrap}\ntest.topic.random=true\n")
    print(f"librdkafka tests ({len(names)}, group.protocol {args.group_protocol}) against {broker.name} at "
          f"{broker.bootstrap}", file=sys.stderr)
    results: dict[str, dict[str, str]] = {}
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            def one(group: list[str]) -> dict[str, dict[str, str]]:
                return run_tests(src, group, conf, args.limit, args.group_protocol, not args.full,
                                 WORK / f"logs{suffix}", extra_env)

            by_number: dict[str, list[str]] = {}
            for name in names:
                by_number.setdefault(name[:4], []).append(name)
            for group_results in pool.map(one, by_number.values()):
                for name, r in group_results.items():
                    results[name] = r
                    print(f"{r['status']:4} {name} {r['reason']}", flush=True)
    finally:
        broker.stop()
    allow = RF3_ALLOW if three else CONSUMER_ALLOW if consumer else ALLOW
    allowed = [t.split()[0] for t in allow.read_text().splitlines() if t.strip() and not t.startswith("#")] if allow.exists() else []
    missing = [t for t in allowed if t in results and results[t]["status"] != "PASS"]
    out = WORK / f"librdkafka-{args.target}{suffix}.json"
    out.write_text(json.dumps({"target": args.target, "brokers": args.brokers, "group_protocol": args.group_protocol,
                               "kafka_version": KAFKA_VERSION,
                               "results": results, "allowed_not_passing": missing}, indent=1) + "\n")
    counts = {s: sum(1 for r in results.values() if r["status"] == s) for s in ("PASS", "FAIL", "SKIP")}
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped; results {out}; broker log {broker.log_path}")
    if missing:
        print(f"allow-listed tests not passing: {missing}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
