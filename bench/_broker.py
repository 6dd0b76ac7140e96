"""Start an Odradek broker for a benchmark: port 0, a temp data dir, wait for `listening`."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

_PORT = re.compile(r"listening.*\bport=(\d+)")


class BenchBroker:
    def __init__(self, *overrides: str) -> None:
        self.data = tempfile.mkdtemp(prefix="odradek-bench-")
        args = [sys.executable, "-m", "odradek", "serve", "--log-level", "warning",
                "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                "--override", f"log.dirs={Path(self.data) / 'data'}"]
        for o in overrides:
            args += ["--override", o]
        # warning level hides the listening line; ask for it at info instead.
        args[args.index("warning")] = "info"
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
        self.port = self._wait_port()
        threading.Thread(target=self._drain, daemon=True).start()

    def _wait_port(self, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        assert self.proc.stderr is not None
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            m = _PORT.search(line)
            if m:
                return int(m.group(1))
        raise RuntimeError("broker did not start")

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for _ in self.proc.stderr:
            pass

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
