"""The matrix runner: `python -m compat_tests.run [--target odradek|kafka] [--clients ..] [--scenarios ..]`.

Starts one broker for the whole run (Odradek on port 0 with a temp data dir, or Apache Kafka
4.4 in KRaft mode), runs every selected driver (a few at a time) with every selected scenario,
collects one row per (client, scenario), stores them in docs/compat-results/<target>.json and
rewrites docs/compat.md. A driver that dies or hangs still yields a FAIL row for each scenario
it did not report. Exit status 0 whatever the rows say (the pytest entry judges them),
unless --strict (used for the Apache Kafka oracle, where every row must pass).

`--suite security` runs the security rows (scenarios.SECURITY_SCENARIOS) instead, on a broker
with SASL/TLS listeners and ACLs (compat_tests/security_setup.py); each driver also gets
`--security FILE` (listeners, certificates, users, token). Its results go to
docs/compat-results/security-<target>.json and the security section of docs/compat.md.

`--suite cluster` runs the failover rows (scenarios.CLUSTER_SCENARIOS) on three brokers
(Odradek --brokers 3 or a three-node Apache Kafka KRaft cluster), one driver at a time; the
runner makes the faults when a driver asks (compat_tests/cluster_suite.py, the phase
protocol). Results: docs/compat-results/cluster-<target>.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from compat_tests import cluster_suite, report
from compat_tests.brokers import Broker, make_broker
from compat_tests.drivers import DRIVERS, SLOW_ROWS, Driver
from compat_tests.scenarios import ALL_SCENARIOS, CLUSTER_SCENARIOS, SECURITY_SCENARIOS

SCENARIO_TIMEOUT = 45.0
CLUSTER_TIMEOUT = 150.0  # a Kafka node's restart and ISR rejoin take up to a minute
# Security rows that need a SASL mechanism the broker may not enable (Odradek before it has it).
NEEDS_MECHANISM = {"sasl-oauthbearer": "OAUTHBEARER"}


def run_driver(driver: Driver, scenarios: list[str], broker: Broker, workdir: Path, timeout: float,
               skip_slow: bool = False, suite: str = "main",
               security_file: Path | None = None,
               conductor: cluster_suite.Conductor | None = None) -> list[dict[str, Any]]:
    wanted = [s for s in scenarios if s in driver.suite_scenarios(suite)
              and not (skip_slow and (driver.name, s) in SLOW_ROWS)]
    if not wanted:
        return []
    rows: dict[str, dict[str, Any]] = {}

    def fail_all(reason: str) -> list[dict[str, Any]]:
        return [rows.get(s) or {"client": driver.name, "client_version": "?", "scenario": s, "status": "FAIL", "reason": reason}
                for s in wanted]

    try:
        argv = driver.command() if conductor is None else cluster_suite.command(driver)
    except RuntimeError as exc:
        return fail_all(f"driver unavailable: {exc}")
    argv += ["--bootstrap", broker.bootstrap, "--topic-prefix", f"{driver.name.replace('.', '')}-{uuid.uuid4().hex[:6]}",
             "--timeout", str(timeout), "--scenario", ",".join(wanted)]
    if driver.name.startswith("java-"):
        argv += ["--log-dirs", ",".join(str(d) for d in broker.log_dirs())]
    if security_file is not None:
        argv += ["--security", str(security_file)]
    err_path = workdir / f"driver-{driver.name}{'-' + suite if suite != 'main' else ''}.stderr"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    started = time.monotonic()
    with err_path.open("wb") as err:
        # The cluster suite answers the driver's steps on its stdin.
        stdin = subprocess.DEVNULL if conductor is None else subprocess.PIPE
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=stdin,
                                env=env, cwd=report.REPO, start_new_session=True)
        # The driver bounds each scenario itself; this is the backstop for a stuck process.
        # (streams-eos has twice the time: the Java driver gives it 2 x --timeout.)
        budget = (len(wanted) + wanted.count("streams-eos") + wanted.count("streams-groups")) * (timeout + 20) + 60
        killer = threading.Timer(budget, lambda: _kill(proc))
        killer.start()
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode(errors="replace").strip()
            if not line.startswith("{"):
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if conductor is not None and "cluster" in row:
                cluster_suite.talk(proc, conductor, row)
                continue
            if row.get("scenario") in wanted:
                row["client"] = driver.name
                if row.get("status") == "UNSUPPORTED":  # the security contract's spelling
                    row["status"] = "NOT_SUPPORTED"
                rows[row["scenario"]] = row
        code = proc.wait()
        killer.cancel()
    if len(rows) < len(wanted):
        tail = err_path.read_text(errors="replace")[-400:].strip().replace("\n", " / ")
        elapsed = time.monotonic() - started
        why = "timeout (driver killed)" if elapsed >= budget else f"driver exited {code} before reporting"
        return fail_all(f"{why}: {tail}")
    return [rows[s] for s in wanted]


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compat_tests.run", description=__doc__.splitlines()[0])
    ap.add_argument("--target", choices=["odradek", "kafka", "kafka-4.4"], default="odradek")
    ap.add_argument("--suite", choices=["main", "security", "cluster"], default="main",
                    help="security: the SASL/TLS/ACL rows on a broker with those listeners; "
                         "cluster: the failover rows on three brokers")
    ap.add_argument("--transaction-version", type=int, default=None,
                    help="finalize transaction.version at this level (default: the broker's, 2 "
                         "on Odradek and Kafka 4.4)")
    ap.add_argument("--clients", default="", help=f"comma list of {', '.join(DRIVERS)} (default: all)")
    ap.add_argument("--scenarios", default="", help="comma list (default: all)")
    ap.add_argument("--jobs", type=int, default=3, help="drivers run at once")
    ap.add_argument("--timeout", type=float, default=0.0,
                    help=f"seconds per scenario (default {SCENARIO_TIMEOUT:.0f}; the cluster "
                         f"suite {CLUSTER_TIMEOUT:.0f})")
    ap.add_argument("--bootstrap", default="", help="use a running broker instead of starting one")
    ap.add_argument("--log-dirs", default="", help="with --bootstrap: the broker's log dirs (for cli-dump-log-segments)")
    ap.add_argument("--json", default="", help="also write the rows to this file")
    ap.add_argument("--no-doc", action="store_true", help="leave docs/compat.md and docs/compat-results alone")
    ap.add_argument("--strict", action="store_true", help="exit 1 when any row is FAIL (for the oracle run)")
    ap.add_argument("--skip-slow", action="store_true",
                    help="leave out the rows of drivers.SLOW_ROWS (the compat tier; slow.sh runs them)")
    args = ap.parse_args(argv)

    clients = [c for c in args.clients.split(",") if c] or list(DRIVERS)
    unknown = [c for c in clients if c not in DRIVERS]
    if unknown:
        ap.error(f"unknown clients {unknown}")
    names = {"security": SECURITY_SCENARIOS, "cluster": CLUSTER_SCENARIOS}.get(args.suite, ALL_SCENARIOS)
    if not args.timeout:
        args.timeout = CLUSTER_TIMEOUT if args.suite == "cluster" else SCENARIO_TIMEOUT
    all_names = [s for s in names if any(s in d.suite_scenarios(args.suite) for d in DRIVERS.values())]
    scenarios = [s for s in args.scenarios.split(",") if s] or all_names
    bad = [s for s in scenarios if s not in all_names]
    if bad:
        ap.error(f"unknown scenarios {bad} in suite {args.suite}")
    if args.suite in ("security", "cluster") and args.bootstrap:
        ap.error(f"--suite {args.suite} starts its own broker (no --bootstrap)")

    workdir = Path(tempfile.mkdtemp(prefix=f"compat-run-{args.target}-"))
    started = time.monotonic()
    broker: Broker | cluster_suite.Target
    cluster: cluster_suite.Target | None = None
    security_file: Path | None = None
    broker_lacks: dict[str, str] = {}  # scenario -> why the broker cannot run it
    if args.suite == "security":
        from compat_tests import security_setup

        setup = security_setup.make(args.target, workdir)
        broker, security_file = setup.broker, setup.security_file
        broker_lacks = {s: f"broker lacks {m} (left out of its sasl.enabled.mechanisms: "
                           f"{setup.target} refuses to start with it)"
                        for s, m in NEEDS_MECHANISM.items() if m in setup.left_out}
        print(f"starting {broker.name} with SASL/TLS listeners {setup.ports} ...", file=sys.stderr)
        broker.start()
        try:
            acls = security_setup.deny_mallory(broker.bootstrap)
            quota = security_setup.throttle_quota_client(broker.bootstrap)
        except Exception:
            broker.stop()
            raise
        print(f"DENY bindings: {'; '.join(acls)}; quota {quota}", file=sys.stderr)
    elif args.suite == "cluster":
        broker = cluster = cluster_suite.make(args.target, workdir)
        args.jobs = 1  # a fault hits every client of the cluster
        print(f"starting {broker.name} (3 brokers) ...", file=sys.stderr)
        broker.start()
    elif args.bootstrap:
        from compat_tests.brokers import OdradekBroker

        broker = OdradekBroker(Path(args.log_dirs.split(",")[0]) if args.log_dirs else workdir, workdir / "none.log")
        broker.port = int(args.bootstrap.rsplit(":", 1)[1])
        broker.name = "external"
    else:
        features = ({} if args.transaction_version is None
                    else {"transaction.version": args.transaction_version})
        broker = make_broker(args.target, workdir, features=features)
        print(f"starting {broker.name} ...", file=sys.stderr)
        broker.start()
    print(f"{broker.name} {broker.version} at {broker.bootstrap}; work dir {workdir}", file=sys.stderr)
    rows: list[dict[str, Any]] = []
    try:
        runnable = [s for s in scenarios if s not in broker_lacks]
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = {c: pool.submit(run_driver, DRIVERS[c], runnable, broker, workdir, args.timeout,
                                      args.skip_slow, args.suite, security_file,
                                      None if cluster is None else
                                      cluster_suite.Conductor(cluster, c.replace(".", "")))
                       for c in clients}
            for c, fut in futures.items():
                got = fut.result()
                # Rows the broker cannot serve are not run: FAIL, with the reason.
                got += [{"client": c, "client_version": "?", "scenario": s, "status": "FAIL",
                         "reason": why} for s, why in broker_lacks.items()
                        if s in scenarios and s in DRIVERS[c].suite_scenarios(args.suite)]
                for r in got:
                    print(f"{r['status']:13} {c:16} {r['scenario']:26} {r.get('reason', '')[:150]}", file=sys.stderr)
                rows += got
    finally:
        if not args.bootstrap:
            broker.stop()
    seconds = time.monotonic() - started
    run = {
        "suite": args.suite,
        "target": args.target,
        "broker": broker.name,
        "broker_version": broker.version,
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "host": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "seconds": seconds,
        "rows": rows,
    }
    if args.json:
        Path(args.json).write_text(json.dumps(run, indent=1) + "\n")
    full = not args.clients and not args.scenarios and not args.bootstrap and not args.skip_slow
    if not args.no_doc and full:
        report.save(args.target if args.suite == "main" else f"{args.suite}-{args.target}", run)
        report.write()
        print(f"wrote {report.DOC}", file=sys.stderr)
    elif not args.no_doc:
        print("partial run (--clients/--scenarios/--bootstrap): docs/compat.md left alone", file=sys.stderr)
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in ("PASS", "FAIL", "NOT_SUPPORTED")}
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['NOT_SUPPORTED']} not supported in {seconds:.0f} s",
          file=sys.stderr)
    return 1 if args.strict and counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
