"""Shared harness of the Python-hosted drivers.

A driver is `python -m compat_tests.python.<client> --bootstrap HOST:PORT --scenario NAME ...
--topic-prefix P`; it prints one JSON line per scenario on stdout:
{"client", "client_version", "scenario", "status": PASS|FAIL|NOT_SUPPORTED, "reason"}.
Each scenario runs in its own daemon thread with a deadline, so a hung client call becomes
FAIL "timeout" and the run goes on; the process leaves with os._exit so a stuck thread can't
keep it alive.

The security suite adds `--security FILE` (compat_tests/security_setup.py writes it): the
SASL/TLS listeners, certificates, users and OAUTHBEARER token, in `Ctx.security`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from compat_tests.scenarios import SCENARIOS

T = TypeVar("T")


class ScenarioFailed(Exception):
    """The broker (or the client) did not do what the scenario expects."""


class NotSupported(Exception):
    """The client has no API for what the scenario needs."""


def check(cond: object, message: str) -> None:
    if not cond:
        raise ScenarioFailed(message)


@dataclass
class Ctx:
    bootstrap: str
    prefix: str
    scenario: str
    timeout: float
    deadline: float = 0.0
    security: dict[str, Any] | None = None  # the --security document

    def sec(self) -> dict[str, Any]:
        if self.security is None:
            raise ScenarioFailed("a security scenario needs --security FILE")
        return self.security

    def topic(self, name: str = "") -> str:
        suffix = uuid.uuid4().hex[:6]
        return f"{self.prefix}-{self.scenario}{'-' + name if name else ''}-{suffix}"

    def group(self, name: str = "g") -> str:
        return f"{self.prefix}-{self.scenario}-{name}-{uuid.uuid4().hex[:6]}"

    def txn_id(self, name: str = "tx") -> str:
        return f"{self.prefix}-{self.scenario}-{name}-{uuid.uuid4().hex[:6]}"

    def remaining(self) -> float:
        return max(0.1, self.deadline - time.monotonic())

    def wait_for(self, predicate: Callable[[], T], what: str, step: Callable[[], None] | None = None) -> T:
        """Call `step` (e.g. a poll) then `predicate` until truthy, or fail at the deadline."""
        last: Exception | None = None
        while True:
            try:
                if step is not None:
                    step()
                got = predicate()
                if got:
                    return got
            except ScenarioFailed:
                raise
            except Exception as exc:  # keep trying; report the last one
                last = exc
            if time.monotonic() > self.deadline:
                extra = f" (last error: {last!r})" if last else ""
                raise ScenarioFailed(f"timed out waiting for {what}{extra}")
            if step is None:
                time.sleep(0.05)


# ------------------------------------------------------------------ shared scenario data

def keyed_records() -> list[tuple[bytes, bytes]]:
    """produce-consume: 30 records over 10 keys; values carry a global sequence number."""
    return [(f"k{i % 10}".encode(), f"v{i:03d}".encode()) for i in range(30)]


def compressible_values(n: int = 50) -> list[bytes]:
    return [(f"record-{i:04d}-" + "abcdefgh" * 64).encode() for i in range(n)]


LARGE_SIZE = 2 * 1024 * 1024
LARGE_TOPIC_MAX = "4194304"


def large_value() -> bytes:
    # Not compressible on purpose would need randomness; a pattern is fine: no codec is set.
    return bytes((i * 7 + 3) % 251 for i in range(LARGE_SIZE))


def check_produce_consume(sent: Sequence[tuple[bytes, bytes]], got: Sequence[tuple[int, int, bytes | None, bytes | None]]) -> None:
    """`got`: (partition, offset, key, value) in the order each partition delivered them."""
    check(len(got) == len(sent), f"read {len(got)} records, produced {len(sent)}")
    check(sorted(v for _, _, _, v in got if v is not None) == sorted(v for _, v in sent), "values differ")
    part_of: dict[bytes | None, int] = {}
    for p, _, k, _ in got:
        check(part_of.setdefault(k, p) == p, f"key {k!r} found in partitions {part_of[k]} and {p}")
    check(len(set(part_of.values())) > 1, "all keys landed in one partition")
    for p in set(x[0] for x in got):
        in_p = [x for x in got if x[0] == p]
        offsets = [x[1] for x in in_p]
        check(offsets == sorted(offsets), f"partition {p} delivered offsets out of order")
        values = [x[3] for x in in_p]
        check(values == sorted(values, key=lambda v: v or b""), f"partition {p} is not in produce order")


# ------------------------------------------------------------------ the security suite

SECURE_COUNT = 20


def secure_values() -> list[bytes]:
    """The records of the authenticated round trips (sasl-*, mtls)."""
    return [f"secure-{i:02d}".encode() for i in range(SECURE_COUNT)]


def denied_name(ctx: Ctx, what: str) -> str:
    """A topic / group / transactional id under the prefix mallory is denied (`denied-P-what-x`)."""
    return f"{ctx.sec()['denied']['prefix']}{ctx.prefix}-{what}-{uuid.uuid4().hex[:6]}"


# ------------------------------------------------------------------ the driver main

def emit(client: str, version: str, scenario: str, status: str, reason: str = "") -> None:
    line = {"client": client, "client_version": version, "scenario": scenario, "status": status, "reason": reason}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def run_one(fn: Callable[[Ctx], str | None], ctx: Ctx) -> tuple[str, str]:
    result: list[tuple[str, str]] = []

    def target() -> None:
        try:
            note = fn(ctx)
            result.append(("PASS", note or ""))
        except NotSupported as exc:
            result.append(("NOT_SUPPORTED", str(exc)))
        except ScenarioFailed as exc:
            result.append(("FAIL", str(exc)))
        except Exception as exc:
            tb = traceback.extract_tb(exc.__traceback__)
            where = f" at {tb[-1].name}:{tb[-1].lineno}" if tb else ""
            result.append(("FAIL", f"{type(exc).__name__}: {exc}{where}"))

    ctx.deadline = time.monotonic() + ctx.timeout
    thread = threading.Thread(target=target, name=ctx.scenario, daemon=True)
    thread.start()
    # A little grace after the scenario's own deadline for its cleanup and error reporting.
    thread.join(ctx.timeout + 10)
    if not result:
        return "FAIL", "timeout"
    return result[0]


def main(client: str, version: str, scenarios: dict[str, Callable[[Ctx], str | None]], argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=f"{client} driver of the compatibility matrix")
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--scenario", action="append", default=[], help="repeatable; default: all")
    ap.add_argument("--topic-prefix", default=f"c{uuid.uuid4().hex[:6]}")
    ap.add_argument("--timeout", type=float, default=45.0, help="seconds per scenario")
    ap.add_argument("--security", default="", help="the security suite's JSON document")
    args = ap.parse_args(argv)
    security = json.loads(Path(args.security).read_text()) if args.security else None
    names: list[str] = []
    for s in args.scenario or ["all"]:
        names += list(SCENARIOS) if s == "all" else s.split(",")
    for name in names:
        fn = scenarios.get(name)
        if fn is None:
            emit(client, version, name, "FAIL", "unknown scenario")
            continue
        ctx = Ctx(args.bootstrap, args.topic_prefix, name, args.timeout, security=security)
        status, reason = run_one(fn, ctx)
        emit(client, version, name, status, reason)
    sys.stderr.flush()
    os._exit(0)
