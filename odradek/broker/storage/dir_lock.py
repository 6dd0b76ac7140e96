"""The `.lock` file in every log dir, held for the broker's life (as Kafka's).

An exclusive, non-blocking `flock` on `<log dir>/.lock`: a second broker pointed at the same
dir fails to take it and stops before it reads or writes anything there. The file holds the
holder's process id as decimal text (for the refusal message only; the lock itself is the
flock, which the kernel drops when the process dies, so a crash never leaves a stale lock).

A start that fails leaves no trace (issue #10): each lock remembers the folders it created,
whether it created `.lock`, and what the dir held once locked, so `undo_start()` removes what
this process added (before releasing the lock, so no other broker can be in the dir), and a
failure while taking the locks undoes the ones already taken. A dir held by another broker is
never touched.
"""

from __future__ import annotations

import contextlib
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

    def __init__(self, log_dir: Path, fd: int, *, created_dirs: tuple[Path, ...] = (),
                 created_lock_file: bool = False) -> None:
        self.log_dir = log_dir
        self._fd: int | None = fd
        self.created_dirs = created_dirs  # outermost first
        self.created_lock_file = created_lock_file
        try:
            self.entries_at_lock: frozenset[str] = frozenset(os.listdir(log_dir))
        except OSError:
            self.entries_at_lock = frozenset()

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def undo_start(self) -> None:
        """After a failed start: remove the files this process added at the top of the dir,
        its `.lock` if it made one, and the folders it created (when empty), then release.
        Best effort: what cannot be removed stays."""
        if self._fd is None:
            return
        try:
            added = set(os.listdir(self.log_dir)) - self.entries_at_lock - {LOCK_FILE}
        except OSError:
            added = set()
        for name in sorted(added):
            path = self.log_dir / name
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()  # only if empty: never a folder of records
                else:
                    path.unlink()
        if self.created_lock_file:
            with contextlib.suppress(OSError):
                (self.log_dir / LOCK_FILE).unlink()  # still holding the flock
        self.release()
        _remove_dirs(self.created_dirs)


def _holder(path: Path) -> str:
    try:
        text = path.read_text().strip()
    except OSError:
        text = ""
    return f"process {text}" if text.isdigit() else "unknown process"


def _missing(path: Path) -> tuple[Path, ...]:
    """The folders `path.mkdir(parents=True)` would create, outermost first."""
    out: list[Path] = []
    while not os.path.lexists(path) and path != path.parent:
        out.append(path)
        path = path.parent
    return tuple(reversed(out))


def _remove_dirs(dirs: tuple[Path, ...]) -> None:
    for d in reversed(dirs):  # innermost first; each only if empty
        with contextlib.suppress(OSError):
            d.rmdir()


def _open_lock_file(path: Path) -> tuple[int, bool]:
    """(descriptor, whether this call created the file)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644), True
    except FileExistsError:
        return os.open(path, os.O_RDWR), False


def lock_log_dir(log_dir: Path) -> DirLock:
    """Create the dir if needed and take its lock. Raises LogDirLockedError when another
    process holds it, OSError when the dir cannot be created or written; either way what this
    call created is removed again."""
    missing = _missing(log_dir)
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        path = log_dir / LOCK_FILE
        fd, created = _open_lock_file(path)
    except BaseException:
        _remove_dirs(missing)
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)  # never unlink another broker's .lock
        _remove_dirs(missing)
        raise LogDirLockedError(log_dir, _holder(path)) from None
    except BaseException:
        if created:
            with contextlib.suppress(OSError):
                path.unlink()
        os.close(fd)
        _remove_dirs(missing)
        raise
    lock = DirLock(log_dir, fd, created_dirs=missing, created_lock_file=created)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
    except BaseException:
        lock.undo_start()
        raise
    return lock


def lock_log_dirs(log_dirs: list[Path]) -> list[DirLock]:
    """Lock every dir, or none: on a failure the locks taken so far are undone (what they
    created removed) and released."""
    held: list[DirLock] = []
    try:
        for log_dir in dict.fromkeys(log_dirs):
            held.append(lock_log_dir(log_dir))
    except BaseException:
        for lock in reversed(held):
            lock.undo_start()
        raise
    return held
