"""What the raw-protocol probes share: one connection, a case table, the runner, the table.

The probes (`probe_kip848`, `probe_versions`, `probe_edges`, `probe_configs`,
`probe_produce`) send the same hand-built requests to Odradek and to Apache Kafka and compare
the answers. This module holds the parts that do not depend on what is probed:

- `Conn`: one blocking client connection. Frames are `int32 size | header | body`; the
  request header version (v1 or v2) follows the api's flexible versions, as a real client's
  does, and answers are read in order (the correlation id is checked).
- `Case` and `run_cases`: start a broker with the matrix's settings (`compat_tests.brokers`),
  prepare it, run each case on a connection of its own, and keep each answer (a probe's own
  exception is kept as the answer, so one broken case does not hide the others).
- `markdown`: the comparison table, one row per case, "same" or "**different**".
- `compare_main`: the command line the case-table probes share.
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from odradek.wire._generated.error_codes import ErrorCode
from odradek.wire._generated.header import RequestHeader, ResponseHeader
from odradek.wire.headers import request_header_version, response_header_version

# a coordinator still loading on a fresh broker (Kafka creates its internal topic lazily)
RETRIABLE = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
             ErrorCode.NOT_COORDINATOR}


def err(code: int) -> str:
    """An error code's Kafka name (the number itself when Kafka has no such code)."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


class Conn:
    """One client connection: request header by the api's flexible versions, in order."""

    client_id = "probe"

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.correlation = 0

    def call(self, api_key: int, version: int, request: Any, response_cls: Any) -> Any:
        self.correlation += 1
        header = RequestHeader(request_api_key=api_key, request_api_version=version,
                               correlation_id=self.correlation, client_id=self.client_id)
        payload = b"".join(bytes(p) for p in header.encode(request_header_version(api_key, version)))
        payload += b"".join(bytes(p) for p in request.encode(version))
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", self._recv(4))[0]
        frame = self._recv(size)
        head, pos = ResponseHeader.decode(frame, response_header_version(api_key, version))
        assert head.correlation_id == self.correlation, "response out of order"
        response, _ = response_cls.decode(frame, version, pos)
        return response

    def _recv(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            out += chunk
        return out

    def close(self) -> None:
        self.sock.close()

    def retrying(self, send: Callable[[], Any], code: Callable[[Any], int], deadline_s: float = 30) -> Any:
        """Repeat while the coordinator is still starting (a fresh Kafka creates its topic)."""
        end = time.monotonic() + deadline_s
        while True:
            resp = send()
            if code(resp) not in RETRIABLE or time.monotonic() > end:
                return resp
            time.sleep(0.3)


@dataclass
class Case:
    name: str
    what: str
    run: Callable[[Any], dict[str, Any]]
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)


def run_cases(target: str, cases: list[Case], prepare: Callable[[int], None], *, probe: str,
              conn: Callable[[int], Any] = Conn, **broker_options: Any) -> None:
    """Start `target` with the matrix's settings, prepare it, and record each case's answer."""
    from compat_tests.brokers import make_broker

    work = Path(tempfile.mkdtemp(prefix=f"{probe}-{target}-"))
    broker = make_broker(target, work, **broker_options)
    print(f"starting {target} ...", file=sys.stderr)
    broker.start()
    try:
        prepare(broker.port)
        for case in cases:
            c = conn(broker.port)
            try:
                case.answers[target] = case.run(c)
            except Exception as exc:  # the probe's own failure, shown as the answer
                case.answers[target] = {"probe failed": f"{type(exc).__name__}: {exc}"}
            finally:
                c.close()
            print(f"{target:8} {case.name:28} {case.answers[target]}", file=sys.stderr)
    finally:
        broker.stop()


def fmt(answer: dict[str, Any] | None) -> str:
    if answer is None:
        return ""
    return str(answer).replace("|", "\\|").replace("\n", " ")


def same_everywhere(case: Case, targets: list[str]) -> bool:
    return len({repr(case.answers.get(t)) for t in targets}) == 1


def markdown(cases: list[Case], targets: list[str]) -> str:
    lines = ["| case | request | " + " | ".join(targets) + (" | same? |" if len(targets) > 1 else ""),
             "| --- | --- |" + " --- |" * (len(targets) + (1 if len(targets) > 1 else 0))]
    for case in cases:
        cells = [fmt(case.answers.get(t)) for t in targets]
        row = f"| {case.name} | {case.what} | " + " | ".join(cells) + " |"
        if len(targets) > 1:
            row += " same |" if same_everywhere(case, targets) else " **different** |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def probe_arguments(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """The options every case-table probe takes; a probe adds its own before parsing."""
    ap = argparse.ArgumentParser(prog=f"python -m compat_tests.{prog}", description=(doc or "").splitlines()[0])
    ap.add_argument("--target", choices=["odradek", "kafka", "both"], default="both")
    ap.add_argument("--cases", default="", help="comma list of case names (default: all)")
    ap.add_argument("--markdown", default="", help="write the results table to this file")
    return ap


def compare_main(args: argparse.Namespace, cases: list[Case], run_target: Callable[[str, list[Case]], None],
                 *, fail_on_difference: bool = False) -> int:
    """Run the chosen cases on each target, print (and maybe write) the table.

    With `fail_on_difference`, the exit status is 1 when two targets answered a case
    differently (for probes whose cases must all agree)."""
    chosen = [c for c in cases if not args.cases or c.name in args.cases.split(",")]
    targets = ["odradek", "kafka"] if args.target == "both" else [args.target]
    for t in targets:
        run_target(t, chosen)
    table = markdown(chosen, targets)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table)
    if fail_on_difference and len(targets) > 1:
        return 0 if all(same_everywhere(c, targets) for c in chosen) else 1
    return 0
