"""A broker subprocess for tests: `python -m odradek serve` on a free port, ready on `listening`.

`BrokerProcess(data_dir, overrides)` runs the broker with `listeners=PLAINTEXT://127.0.0.1:0`
(the kernel picks a free port; after a restart the same port again) and `log.dirs=data_dir`,
reads its stderr in a thread and returns from `start()` once the `listening` event names the
bound port: no polling of the port, no sleeps, a deadline. `stop()` sends SIGTERM and returns
the exit code (0: a clean shutdown), `kill()` is kill -9, `restart()` keeps port and data.
The broker's environment drops every ODRADEK_* variable of the caller (settings come from
`overrides` only) and adds `env`.

Why a subprocess rather than the broker on a thread of the test process: start-up is about the
same (importing the broker dominates either way), while a subprocess shares no GIL with the
clients under test (kafka-python and aiokafka are pure Python), no logging configuration, no
signal handlers, no RLIMIT_NOFILE, and a crash or hang of the broker cannot take the test
run with it. See docs/testing.md for the measurements.
"""

from __future__ import annotations

import os
import re
import resource
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

__all__ = ["LISTENING", "BrokerProcess", "BrokerStartError"]

START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
# The `listening` event in key=value or JSON form; the port is the real bound one.
LISTENING = re.compile(
    r"listening.*\bport=(\d+)"  # key=value
    r'|^(?=.*"event": "listening").*"port": (\d+)'  # JSON, keys in any order
)


_ADMIN_URL = re.compile(r'admin http endpoint.*\burl(?:=|": )"?(http://[^\s"]+)')


class BrokerStartError(RuntimeError):
    """The broker exited or did not announce `listening` in time; holds its stderr."""


class BrokerProcess:
    """One broker subprocess; restartable on the same port and data directory.

    `command`: the argv that `serve --override key=value ...` is appended to (default: this
    interpreter's `-m odradek`). `clean_exit_codes`: what `stop()` counts as a clean exit.
    """

    def __init__(self, data_dir: Path, overrides: Mapping[str, str] | None = None,
                 env: Mapping[str, str] | None = None,
                 nofile: tuple[int, int] | None = None, *,
                 command: Sequence[str] | None = None,
                 clean_exit_codes: tuple[int, ...] = (0,)) -> None:
        self.data_dir = data_dir
        self.overrides = dict(overrides or {})
        self.env = dict(env or {})  # added to the broker's environment (e.g. a test hook)
        self.base_command = list(command) if command else [sys.executable, "-m", "odradek"]
        self.clean_exit_codes = clean_exit_codes
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None
        self.returncodes: list[int] = []
        self._lines: list[str] = []
        self._cond = threading.Condition()
        self._eof = True
        self._reader: threading.Thread | None = None
        self.preexec_fn: Callable[[], None] | None = None  # run in the child before exec
        if nofile is not None:  # the broker's RLIMIT_NOFILE (soft, hard)
            self.preexec_fn = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, nofile)

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    @property
    def admin_url(self) -> str | None:
        """The admin HTTP endpoint the broker logged at its last start, if it has one."""
        with self._cond:
            for line in reversed(self._lines):
                m = _ADMIN_URL.search(line)
                if m:
                    return m.group(1)
                if line.startswith("----- start:"):
                    return None
        return None

    def settings(self) -> dict[str, str]:
        """The `--override`s the broker is started with."""
        return {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.data_dir),
            **self.overrides,
        }

    def command(self) -> list[str]:
        argv = [*self.base_command, "serve"]
        for key, value in self.settings().items():
            argv += ["--override", f"{key}={value}"]
        return argv

    def start(self, timeout: float = START_TIMEOUT) -> None:
        assert not self.running, "broker already running"
        env = {k: v for k, v in os.environ.items() if not k.startswith("ODRADEK_")}
        env["PYTHONUNBUFFERED"] = "1"
        env.update(self.env)
        with self._cond:
            first_line = len(self._lines)
            self._lines.append(f"----- start: {shlex.join(self.command())}\n")
            self._eof = False
        self.proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=env,
            preexec_fn=self.preexec_fn,
        )
        self._reader = threading.Thread(
            target=self._read, args=(self.proc,), name="broker-stderr", daemon=True
        )
        self._reader.start()
        deadline = time.monotonic() + timeout
        with self._cond:
            scanned = first_line
            while True:
                for line in self._lines[scanned:]:
                    m = LISTENING.search(line)
                    if m:
                        self.port = int(m.group(1) or m.group(2))
                        return
                scanned = len(self._lines)
                remaining = deadline - time.monotonic()
                if self._eof or remaining <= 0:
                    break
                self._cond.wait(remaining)
        what = "exited" if self._eof else f"did not log `listening` within {timeout:.0f}s"
        self.kill()
        raise BrokerStartError(f"broker {what}; stderr:\n{self.stderr_text()}")

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            with self._cond:
                self._lines.append(line)
                self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def _reap(self) -> int:
        assert self.proc is not None
        code = self.proc.wait(timeout=STOP_TIMEOUT)
        if self._reader is not None:
            self._reader.join(timeout=STOP_TIMEOUT)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        with self._cond:
            self._lines.append(f"----- exited with {code}\n")
        self.returncodes.append(code)
        self.proc = None
        return code

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM and wait; returns the exit code (0 for a clean shutdown)."""
        if self.proc is None:
            raise RuntimeError("broker not started")
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self._reap()
                raise RuntimeError(f"broker ignored SIGTERM for {timeout:.0f}s") from None
        return self._reap()

    def kill(self) -> int:
        """SIGKILL (kill -9) and wait."""
        if self.proc is None:
            raise RuntimeError("broker not started")
        if self.proc.poll() is None:
            self.proc.kill()
        return self._reap()

    def restart(self, *, hard: bool = False) -> None:
        """Stop (or kill -9 when `hard`) and start again on the same port and data dir."""
        if self.running:
            if hard:
                self.kill()
            else:
                self.stop()
        elif self.proc is not None:
            self._reap()
        self.start()

    # -- output ----------------------------------------------------------------------------

    def stderr_text(self, since: int = 0) -> str:
        """What the broker logged, from line `since` on (see `log_position`)."""
        with self._cond:
            return "".join(self._lines[since:])

    @property
    def log_position(self) -> int:
        """The number of stderr lines so far: mark it, then `stderr_text(since=mark)`."""
        with self._cond:
            return len(self._lines)

    def open_descriptors(self) -> int:
        """How many descriptors the broker process holds now (/proc/PID/fd)."""
        assert self.proc is not None
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def wait_for_log(self, pattern: str, timeout: float = 10.0) -> str:
        """The first stderr line matching `pattern`, waiting up to `timeout` for it."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            scanned = 0
            while True:
                for line in self._lines[scanned:]:
                    if regex.search(line):
                        return line
                scanned = len(self._lines)
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._eof:
                    raise AssertionError(f"no log line matching {pattern!r}")
                self._cond.wait(remaining)
