"""franz-go's own kgo integration tests against Odradek (or Apache Kafka):

    python -m compat_tests.upstream.franz_go [--target odradek|kafka] [--run REGEX] [--records N] [--brokers 1|3]

The kgo package source comes from the Go module cache (the version compat_tests/go pins),
copied into compat_tests/upstream/work/ (ignored by git) because the cache is read-only; then
`go test ./pkg/kgo -run REGEX -v` with KGO_SEEDS, KGO_TEST_RF=1 and KGO_TEST_RECORDS. Results
per test and per subtest (e.g. `TestGroupETL/range/848`, the KIP-848 consumer-protocol runs
the tests enable when the broker advertises ConsumerGroupHeartbeat v1) are compared with the
allow-list franz_go_allow.txt (tests that must pass); the exit status is non-zero when an
allowed test did not pass. Results go to work/franz-go-<target>.json.

`--brokers 3` runs the same tests against three brokers (Odradek `--brokers 3` or the
three-node Kafka cluster: compat_tests/upstream/three_brokers.py) with KGO_SEEDS naming all
three and KGO_TEST_RF=3 (kgo's own default), every test topic replicated three times; its
allow-list is franz_go_rf3_allow.txt, results work/franz-go-<target>-3brokers.json.

`--sasl` also starts a SASL_PLAINTEXT listener (SCRAM-SHA-256 and -512, a user made at start:
Odradek's `scram.bootstrap.credentials`, Kafka's `kafka-storage format --add-scram`; and
OAUTHBEARER with Kafka's unsecured validation) and runs kgo's SCRAM and OAUTHBEARER tests
against it (KGO_TEST_SCRAM_SEEDS, KGO_TEST_SCRAM, KGO_TEST_OAUTH_SEEDS), which skip without it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from compat_tests.brokers import Broker, KafkaBroker, OdradekBroker, free_port, make_broker
from compat_tests.upstream.three_brokers import make_three_brokers

HERE = Path(__file__).resolve().parent
WORK = HERE / "work"
ALLOW = HERE / "franz_go_allow.txt"
RF3_ALLOW = HERE / "franz_go_rf3_allow.txt"
GO_DIR = HERE.parent / "go"
RESULT = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+) \(([\d.]+)s\)")
# Which test the following output lines belong to (go test -v marks each switch).
OWNER = re.compile(r"^=== (?:RUN|CONT|NAME)\s+(\S+)")
# kgo's ETL tests skip their final checks when a KIP-848 commit got STALE_MEMBER_EPOCH (a
# broker without KIP-1251's assignment epochs): such a PASS checked less.
SKIPPED_CHECKS = "stale commit encountered, skipping validation"

# Tests that need a broker; the pure unit tests of kgo pass anywhere and are left out.
DEFAULT_RUN = (
    "^(TestGroupETL|TestTxnEtl|TestIssue325|TestConsumeTopicRetrieval|TestConsumeRegex|TestIssue337"
    "|TestDirectPartitionPurge|TestIssue434|TestAddRemovePartitions|TestPauseIssue489|TestPauseIssueOct2023"
    "|TestIssue523|TestIssue648|TestIssue810|TestIssue865|TestIssueFetchLargerThanBrokerMaxReadBytes"
    "|TestGroupSimple|TestLookbackMilli|TestConsumeMaxDecompressBatchBytes|TestUnknownGroupOffsetFetchPinned"
    "|TestPing|TestIssue1034|TestPooling|TestHookPollStart|Test848RegexBrokerResolves"
    # KIP-932 share groups
    "|TestShareGroup|TestShareGroupETL|TestShareGroupAckOnClose|TestShareGroupOffsetsAdmin"
    "|TestConsumeRegexShareSkipsInternal)$"
)


# kgo's tests that need a SASL listener (skipped without KGO_TEST_SCRAM_SEEDS).
SASL_TESTS = ("TestSCRAMAuth", "TestSCRAMAuthBadCredentials", "TestOAuthAuth")
SCRAM_USER, SCRAM_PASSWORD = "kgo", "kgo-pw"
SCRAM_CREDENTIALS = (f"SCRAM-SHA-256=[name={SCRAM_USER},password={SCRAM_PASSWORD}];"
                     f"SCRAM-SHA-512=[name={SCRAM_USER},password={SCRAM_PASSWORD}]")
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
# Kafka's default OAUTHBEARER validator takes unsecured tokens (kgo's TestOAuthAuth sends one)
OAUTH_JAAS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
              'unsecuredLoginStringClaim_sub="admin";')


def sasl_broker(target: str, workdir: Path, port: int) -> Broker:
    """A broker with PLAINTEXT (the tests' KGO_SEEDS) and SASL_PLAINTEXT on `port`."""
    settings = {"listener.name.sasl_plaintext.sasl.enabled.mechanisms":
                    "SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
                "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
                "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
                "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": OAUTH_JAAS}
    data = Path(tempfile.mkdtemp(prefix=f"compat-{target}-", dir=workdir))
    log = workdir / f"broker-{target}.log"
    if target == "odradek":
        return OdradekBroker(data, log, {**settings, "scram.bootstrap.credentials": SCRAM_CREDENTIALS,
                                         "listeners": f"PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:{port}"})
    return KafkaBroker(data, log, settings, extra_listeners={"SASL_PLAINTEXT": ("SASL_PLAINTEXT", port)},
                       format_args=["--add-scram", SCRAM_CREDENTIALS.split(";")[0],
                                    "--add-scram", SCRAM_CREDENTIALS.split(";")[1]])


def module_dir() -> tuple[Path, str]:
    out = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", "github.com/twmb/franz-go"],
                         cwd=GO_DIR, capture_output=True, text=True, check=True).stdout.split()
    return Path(out[0]), out[1]


def prepare() -> tuple[Path, str]:
    src, version = module_dir()
    dst = WORK / f"franz-go@{version}"
    if not dst.exists():
        tmp = Path(tempfile.mkdtemp(dir=WORK.parent if WORK.exists() else None))
        shutil.copytree(src, tmp / "m")
        for root, dirs, files in os.walk(tmp / "m"):
            for name in dirs + files:
                p = Path(root) / name
                p.chmod(p.stat().st_mode | stat.S_IWUSR)
        WORK.mkdir(parents=True, exist_ok=True)
        (tmp / "m").rename(dst)
        shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(["go", "mod", "download"], cwd=dst, check=True)
    return dst, version


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compat_tests.upstream.franz_go")
    ap.add_argument("--target", choices=["odradek", "kafka"], default="odradek")
    ap.add_argument("--run", default=DEFAULT_RUN)
    ap.add_argument("--records", type=int, default=20000, help="KGO_TEST_RECORDS")
    ap.add_argument("--timeout", default="15m", help="go test -timeout")
    ap.add_argument("--sasl", action="store_true", help="add a SASL_PLAINTEXT listener and kgo's SCRAM tests")
    ap.add_argument("--brokers", type=int, choices=[1, 3], default=1,
                    help="3: three brokers and KGO_TEST_RF=3")
    args = ap.parse_args(argv)
    if args.sasl and args.brokers != 1:
        ap.error("--sasl runs against one broker")
    three = args.brokers == 3
    allow_file = RF3_ALLOW if three else ALLOW
    run = args.run
    if args.sasl:
        run = run.rstrip("$").rstrip(")") + "|" + "|".join(SASL_TESTS) + ")$" if run == DEFAULT_RUN else run
    mod, version = prepare()
    workdir = Path(tempfile.mkdtemp(prefix="franz-go-upstream-"))
    sasl_port = free_port() if args.sasl else 0
    broker: Any
    if three:
        broker = make_three_brokers(args.target, workdir)
    else:
        broker = sasl_broker(args.target, workdir, sasl_port) if args.sasl else make_broker(args.target, workdir)
    broker.start()
    print(f"franz-go {version} kgo tests against {broker.name} at {broker.bootstrap}", file=sys.stderr)
    env = dict(os.environ, KGO_SEEDS=broker.bootstrap, KGO_TEST_RF=str(args.brokers),
               KGO_TEST_RECORDS=str(args.records))
    if args.sasl:
        env.update(KGO_TEST_SCRAM_SEEDS=f"127.0.0.1:{sasl_port}", KGO_TEST_SCRAM=f"{SCRAM_USER}:{SCRAM_PASSWORD}",
                   KGO_TEST_OAUTH_SEEDS=f"127.0.0.1:{sasl_port}")
    log = workdir / "go-test.log"
    try:
        with log.open("w") as f:
            proc = subprocess.run(["go", "test", "./pkg/kgo", "-count=1", "-v", "-timeout", args.timeout, "-run", run],
                                  cwd=mod, env=env, stdout=f, stderr=subprocess.STDOUT)
    finally:
        broker.stop()
    results: dict[str, dict[str, object]] = {}
    owner, skipped_checks = "", set()
    for line in log.read_text(errors="replace").splitlines():
        if o := OWNER.match(line):
            owner = o.group(1)
        elif SKIPPED_CHECKS in line:
            skipped_checks.add(owner)
        m = RESULT.match(line)
        if m:
            results[m.group(2)] = {"status": m.group(1), "seconds": float(m.group(3))}
    for name in skipped_checks:
        results.setdefault(name, {"status": "?", "seconds": 0.0})["skipped_checks"] = True
    allowed = ([t.strip() for t in allow_file.read_text().splitlines() if t.strip() and not t.startswith("#")]
               if allow_file.exists() else [])
    if not args.sasl:  # they need the SASL listener
        allowed = [t for t in allowed if t not in SASL_TESTS]
    # A narrower --run checks only the allow-listed tests it ran.
    missing = [t for t in allowed if results.get(t, {}).get("status") != "PASS"
               and (args.run == DEFAULT_RUN or t in results)]
    WORK.mkdir(parents=True, exist_ok=True)
    out = WORK / f"franz-go-{args.target}{'-3brokers' if three else ''}.json"
    out.write_text(json.dumps({"version": version, "target": args.target, "brokers": args.brokers,
                               "go_test_exit": proc.returncode,
                               "results": results, "allowed_not_passing": missing}, indent=1) + "\n")
    for name, r in sorted(results.items()):
        print(f"{r['status']:5} {name} ({r['seconds']}s){'  [allow-listed]' if name in allowed else ''}"
              f"{'  [checks skipped: a commit got STALE_MEMBER_EPOCH]' if r.get('skipped_checks') else ''}")
    for label, group in (("tests", {k: r for k, r in results.items() if "/" not in k}),
                         ("subtests", {k: r for k, r in results.items() if "/" in k})):
        counts = {s: sum(1 for r in group.values() if r["status"] == s) for s in ("PASS", "FAIL", "SKIP")}
        print(f"{label}: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    print(f"go test exit {proc.returncode}; log {log}")
    if missing:
        print(f"allow-listed tests not passing: {missing}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
