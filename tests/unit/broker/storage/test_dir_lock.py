"""The `.lock` of every log dir, and undoing a failed start (issue #10: a start that fails
leaves no file behind, and never touches a dir another broker holds)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from odradek.broker.storage.dir_lock import (
    LOCK_FILE,
    LogDirLockedError,
    lock_log_dir,
    lock_log_dirs,
)


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_the_lock_holds_the_pid_and_refuses_a_second_holder(tmp_path: Path) -> None:
    lock = lock_log_dir(tmp_path / "d")
    try:
        assert (tmp_path / "d" / LOCK_FILE).read_text() == str(os.getpid())
        with pytest.raises(LogDirLockedError, match=f"process {os.getpid()}"):
            lock_log_dir(tmp_path / "d")  # another open file description: refused
        assert tree(tmp_path) == ["d", f"d/{LOCK_FILE}"]
    finally:
        lock.release()
    lock_log_dir(tmp_path / "d").release()  # free again once released


def test_undo_start_removes_what_the_start_created(tmp_path: Path) -> None:
    lock = lock_log_dir(tmp_path / "a" / "b" / "d")
    (tmp_path / "a" / "b" / "d" / "meta.properties").write_text("x")
    (tmp_path / "a" / "b" / "d" / "empty").mkdir()
    lock.undo_start()
    assert tree(tmp_path) == []


def test_undo_start_keeps_what_was_there(tmp_path: Path) -> None:
    d = tmp_path / "d"
    (d / "t-0").mkdir(parents=True)
    (d / "t-0" / "00000000000000000000.log").write_bytes(b"records")
    (d / "meta.properties").write_text("old")
    lock = lock_log_dir(d)
    (d / "meta.properties").write_text("rewritten")  # existed: kept, whatever it holds now
    (d / "t-0" / "new.snapshot").write_bytes(b"")  # inside a partition: never touched
    (d / "topics.json").write_text("{}")  # new at the top: removed
    (d / "t-1").mkdir()
    (d / "t-1" / "00000000000000000000.log").write_bytes(b"")  # a folder with files: kept
    lock.undo_start()
    assert tree(d) == ["meta.properties", "t-0", "t-0/00000000000000000000.log",
                       "t-0/new.snapshot", "t-1", "t-1/00000000000000000000.log"]
    assert not (d / LOCK_FILE).exists()


def test_an_existing_lock_file_is_kept(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / LOCK_FILE).write_text("1")
    lock_log_dir(d).undo_start()
    assert tree(d) == [LOCK_FILE]


def test_a_failure_on_a_later_dir_undoes_the_earlier_ones(tmp_path: Path) -> None:
    held = lock_log_dir(tmp_path / "held")
    try:
        before = tree(tmp_path)
        with pytest.raises(LogDirLockedError):
            lock_log_dirs([tmp_path / "new" / "d1", tmp_path / "held"])
        assert tree(tmp_path) == before  # no "new", and the held dir untouched
        (tmp_path / "file").write_text("x")
        with pytest.raises(NotADirectoryError):
            lock_log_dirs([tmp_path / "new" / "d1", tmp_path / "file" / "d2"])
        assert tree(tmp_path) == sorted([*before, "file"])
    finally:
        held.release()
