"""The `.lock` file in every log dir, held for the broker's life (as Kafka's).

An exclusive, non-blocking `flock` on `<log dir>/.lock`: a second broker pointed at the same
dir fails to take it and stops before it reads or writes anything there. The file holds the
holder's process id as decimal text (for the refusal message only; the lock itself is the
flock, which the kernel drops when the process dies, so a crash never leaves a stale lock).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = ".lock"


class LogDirLockedError(Exception):
    """Another process holds the log dir."""

    def __init__(self, log_dir: Path, holder: str) -> None:
        super().__init__(f"log dir {log_dir} is in use by another broker ({holder})")
        self.log_dir = log_dir
        self.holder = holder


class DirLock:
    """A held lock on one log dir; `release()` (or process exit) lets it go."""

    def __init__(self, log_dir: Path, fd: int) -> None:
        self.log_dir = log_dir
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def _holder(path: Path) -> str:
    try:
        text = path.read_text().strip()
    except OSError:
        text = ""
    return f"process {text}" if text.isdigit() else "unknown process"


def lock_log_dir(log_dir: Path) -> DirLock:
    """Create the dir if needed and take its lock. Raises LogDirLockedError when another
    process holds it, OSError when the dir cannot be created or written."""
    log_dir.mkdir(parents=True, exist_ok=True)
    path = log_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LogDirLockedError(log_dir, _holder(path)) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return DirLock(log_dir, fd)


def lock_log_dirs(log_dirs: list[Path]) -> list[DirLock]:
    """Lock every dir, or none: on a failure the locks taken so far are released."""
    held: list[DirLock] = []
    try:
        for log_dir in dict.fromkeys(log_dirs):
            held.append(lock_log_dir(log_dir))
    except BaseException:
        for lock in held:
            lock.release()
        raise
    return held
