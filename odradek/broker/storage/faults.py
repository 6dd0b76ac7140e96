"""TEST HOOK, not a feature: make file I/O of a broker process fail, to test what the broker
does when a disk fills up or a log dir breaks (`tests/integration/test_disk_faults.py`).

Off unless the environment variable `ODRADEK_TEST_FAULTS` names a control file when the
broker starts (`server.serve` calls `install_from_environment`); off, nothing is wrapped and
it costs nothing. On, it wraps `os.write`, `os.pwrite`, `os.pread` and `os.fsync` for the
whole process: before each call the control file is re-read when it changed (a stat per
call), and a call on a file under a directory it names fails. Control file lines (blank lines
and `#` comments ignored):

    <ERRNO> <directory>            every write, read and fsync of a file under <directory>
                                   fails with that errno (ENOSPC: writes only)
    <ERRNO> <directory> <bytes>    writes there succeed for <bytes> more bytes (the last one
                                   short), then fail; the count restarts when the file changes

e.g. `EIO /data/d2` or `ENOSPC /data/d1 1048576`. A file's path comes from
`/proc/self/fd/<fd>` (Linux only).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ENV = "ODRADEK_TEST_FAULTS"


@dataclass
class _Rule:
    code: int
    directory: str
    budget: int | None  # bytes still writable, None: fail at once

    def covers(self, path: str) -> bool:
        return path == self.directory or path.startswith(self.directory + os.sep)


class _Faults:
    def __init__(self, control: str) -> None:
        self.control = control
        self.stamp: tuple[int, int] | None = None
        self.rules: list[_Rule] = []

    def _reload(self) -> None:
        try:
            st = os.stat(self.control)
        except FileNotFoundError:
            self.stamp, self.rules = None, []
            return
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp == self.stamp:
            return
        rules = []
        with open(self.control) as f:
            for line in f:
                words = line.split("#", 1)[0].split()
                if not words:
                    continue
                code = getattr(errno, words[0])
                budget = int(words[2]) if len(words) > 2 else None
                rules.append(_Rule(code, os.path.realpath(words[1]), budget))
        self.stamp, self.rules = stamp, rules

    def rule_for(self, fd: int, *, writing: bool) -> _Rule | None:
        self._reload()
        if not self.rules:
            return None
        try:
            path = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
        for rule in self.rules:
            if rule.covers(path) and (writing or rule.code != errno.ENOSPC):
                return rule
        return None


def _fail(rule: _Rule, fd: int) -> OSError:
    return OSError(rule.code, f"{os.strerror(rule.code)} (injected by {ENV})")


def install(control: str) -> None:
    """Wrap the os functions (see the module docstring); `control` is the control file."""
    faults = _Faults(control)
    real_write, real_pwrite = os.write, os.pwrite
    real_pread, real_fsync = os.pread, os.fsync

    def writer(real: Callable[..., int]) -> Callable[..., int]:
        def wrapped(fd: int, data: Any, *rest: Any) -> int:
            rule = faults.rule_for(fd, writing=True)
            if rule is None:
                return real(fd, data, *rest)
            if rule.budget is None or rule.budget <= 0:
                raise _fail(rule, fd)
            view = memoryview(data)[: rule.budget]
            written = real(fd, view, *rest)
            rule.budget -= written
            return written

        return wrapped

    def pread(fd: int, size: int, offset: int) -> bytes:
        rule = faults.rule_for(fd, writing=False)
        if rule is not None and rule.budget is None:
            raise _fail(rule, fd)
        return real_pread(fd, size, offset)

    def fsync(fd: Any) -> None:
        number = fd if isinstance(fd, int) else fd.fileno()
        rule = faults.rule_for(number, writing=False)
        if rule is not None and rule.budget is None:
            raise _fail(rule, number)
        real_fsync(fd)

    os.write = writer(real_write)
    os.pwrite = writer(real_pwrite)
    os.pread = pread
    os.fsync = fsync


def install_from_environment() -> bool:
    """Install the hook when `ODRADEK_TEST_FAULTS` is set; True if it was."""
    control = os.environ.get(ENV)
    if not control:
        return False
    install(control)
    return True
