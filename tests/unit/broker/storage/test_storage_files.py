"""File names, the atomic metadata write, checkpoint files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from odradek.broker.storage import files
from odradek.broker.storage.checkpoint import (
    CheckpointError,
    read_checkpoint,
    read_offsets_checkpoint,
    write_checkpoint,
    write_offsets_checkpoint,
)


def test_segment_names_are_twenty_digits(tmp_path: Path) -> None:
    assert files.offset_prefix(0) == "00000000000000000000"
    assert files.offset_prefix(2**63 - 1) == "09223372036854775807"
    assert files.log_file(tmp_path, 42).name == "00000000000000000042.log"
    assert files.offset_index_file(tmp_path, 42).name == "00000000000000000042.index"
    assert files.time_index_file(tmp_path, 42).name == "00000000000000000042.timeindex"
    assert files.txn_index_file(tmp_path, 42).name == "00000000000000000042.txnindex"
    assert files.snapshot_file(tmp_path, 7).name == "00000000000000000007.snapshot"
    assert (
        files.log_file(tmp_path, 3, files.DELETED_SUFFIX).name == "00000000000000000003.log.deleted"
    )
    assert files.offset_from_file_name("00000000000000000042.timeindex") == 42
    with pytest.raises(ValueError):
        files.offset_from_file_name("leader-epoch-checkpoint")
    with pytest.raises(ValueError):
        files.offset_prefix(-1)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("orders-0", ("orders", 0)),
        ("my-topic-with-dashes-12", ("my-topic-with-dashes", 12)),
        ("__consumer_offsets-49", ("__consumer_offsets", 49)),
        ("a.b-3", ("a.b", 3)),
    ],
)
def test_partition_dir_names_round_trip(name: str, expected: tuple[str, int]) -> None:
    assert files.parse_partition_dir_name(name) == expected
    assert files.partition_dir_name(*expected) == name


@pytest.mark.parametrize(
    "name", ["orders", "orders-", "-3", "orders-x", "orders-0.0123abc-delete", "t-1-future", "t-+1"]
)
def test_bad_partition_dir_names_are_rejected(name: str) -> None:
    with pytest.raises(ValueError):
        files.parse_partition_dir_name(name)


def test_delete_dir_names() -> None:
    name = files.delete_dir_name("my-topic", 2, "abc123")
    assert name == "my-topic-2.abc123-delete"
    assert files.is_delete_dir_name(name)
    assert not files.is_delete_dir_name("my-topic-2")


def test_checkpoint_layout_matches_kafka(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    write_checkpoint(path, ["0 0", "3 120"])
    assert path.read_text() == "0\n2\n0 0\n3 120\n"
    assert read_checkpoint(path, 2) == [["0", "0"], ["3", "120"]]
    assert not (tmp_path / "leader-epoch-checkpoint.tmp").exists()


def test_offsets_checkpoint_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_offsets_checkpoint(path, {("b-topic", 1): 10, ("a", 0): 5})
    assert path.read_text() == "0\n2\na 0 5\nb-topic 1 10\n"
    assert read_offsets_checkpoint(path) == {("a", 0): 5, ("b-topic", 1): 10}
    assert read_offsets_checkpoint(tmp_path / "missing") == {}


@pytest.mark.parametrize(
    "text", ["1\n0\n", "x\n", "0\ny\n", "0\n2\na 0 5\n", "0\n1\na 0\n", "0\n1\na b c\n"]
)
def test_malformed_checkpoints_raise(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CheckpointError):
        read_offsets_checkpoint(path)




# -- atomic_write ---------------------------------------------------------------------------------


def _record_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Make os.fsync record ("dir" | "file", inode) of each descriptor it is given."""
    calls: list[tuple[str, int]] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        st = os.fstat(fd)
        calls.append(("dir" if stat.S_ISDIR(st.st_mode) else "file", st.st_ino))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def test_atomic_write_round_trip_and_replace(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    files.atomic_write(path, b"first")
    assert path.read_bytes() == b"first"
    files.atomic_write(path, b"second, longer than the first")
    assert path.read_bytes() == b"second, longer than the first"
    files.atomic_write(path, b"")
    assert path.read_bytes() == b""


def test_atomic_write_leaves_no_temp_file(tmp_path: Path) -> None:
    files.atomic_write(tmp_path / "meta.properties", b"version=1\n")
    files.atomic_write(tmp_path / "meta.properties", b"version=1\ncluster.id=x\n")
    assert os.listdir(tmp_path) == ["meta.properties"]


def test_atomic_write_retries_short_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[int] = []
    real = os.write

    def one_byte(fd: int, data: bytes) -> int:
        writes.append(len(data))
        return real(fd, bytes(data[:1]))

    monkeypatch.setattr(os, "write", one_byte)
    data = b"0\n2\na 0 5\nb-topic 1 10\n"
    files.atomic_write(tmp_path / "cp", data)
    monkeypatch.undo()
    assert (tmp_path / "cp").read_bytes() == data
    assert len(writes) == len(data)


def test_atomic_write_fsyncs_the_file_then_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _record_fsyncs(monkeypatch)
    path = tmp_path / "leader-epoch-checkpoint"
    files.atomic_write(path, b"0\n0\n")
    # The temp file's inode is the final file's (it was renamed, not copied).
    assert calls == [("file", path.stat().st_ino), ("dir", tmp_path.stat().st_ino)]


def test_atomic_write_without_sync_still_renames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _record_fsyncs(monkeypatch)
    files.atomic_write(tmp_path / "00000000000000000005.snapshot", b"abc", sync=False)
    assert calls == []
    assert os.listdir(tmp_path) == ["00000000000000000005.snapshot"]


def test_failed_atomic_write_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cp"
    files.atomic_write(path, b"old")

    def failing(fd: int, data: bytes) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", failing)
    with pytest.raises(OSError, match="No space"):
        files.atomic_write(path, b"new")
    monkeypatch.undo()
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["cp"]


def test_checkpoints_are_written_through_atomic_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _record_fsyncs(monkeypatch)
    write_offsets_checkpoint(tmp_path / "cleaner-offset-checkpoint", {("t", 0): 3})
    assert calls[-1] == ("dir", tmp_path.stat().st_ino)
