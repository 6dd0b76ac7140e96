"""Start-up failures: one line naming the problem and what to do, a distinct exit code, and
nothing written into a data dir (issue #10: port in use, a second broker on a locked dir, a
log dir that is a file, that cannot be created, that is read-only, unreadable metadata; with
two log dirs, a failure in one leaves nothing in the other)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from it_support import BrokerProcess, StartBroker

TIMEOUT = 60


def serve(data_dir: Path, port: int, *overrides: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ODRADEK_")}
    extra = [a for o in overrides for a in ("--override", o)]
    return subprocess.run(
        [sys.executable, "-m", "odradek", "serve",
         "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
         "--override", f"log.dirs={data_dir}", *extra],
        capture_output=True, text=True, timeout=TIMEOUT, env=env, stdin=subprocess.DEVNULL,
        check=False)


def failure_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    """What the broker said besides its `starting` log line."""
    return [line for line in result.stderr.splitlines() if "event=starting" not in line]


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_a_port_in_use_is_one_line_and_creates_nothing(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = serve(tmp_path / "data", taken.getsockname()[1])
    assert result.returncode == 3
    (line,) = failure_lines(result)
    assert line.startswith("odradek: cannot start: cannot listen on PLAINTEXT://127.0.0.1:")
    assert "listeners" in line
    assert not (tmp_path / "data").exists()


def test_an_unsupported_setting_that_changes_what_clients_see_is_one_line_and_exit_2(
        tmp_path: Path) -> None:
    # Issue #18: never stored and silently ignored; nothing written into the data dir.
    result = serve(tmp_path / "data", 0, "ssl.cipher.suites=TLS_AES_128_GCM_SHA256")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "odradek: configuration error: ssl.cipher.suites: not supported by Odradek yet "
        "(issue #13: so far TLS with PEM keys and SASL PLAIN and SCRAM only); remove it or set "
        "its default ()"]
    assert not (tmp_path / "data").exists()


def test_a_value_outside_kafkas_range_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = serve(tmp_path / "data", 0, "log.segment.bytes=1048575")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "odradek: configuration error: log.segment.bytes: Invalid value 1048575 for "
        "configuration log.segment.bytes: Value must be at least 1048576"]


def test_a_second_broker_on_a_locked_dir_stops_before_touching_it(
        tmp_path: Path, start_broker: StartBroker) -> None:
    first: BrokerProcess = start_broker(tmp_path / "data")
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "data").rglob("*") if p.is_file()}
    result = serve(tmp_path / "data", 0)
    assert result.returncode == 5
    (line,) = failure_lines(result)
    assert str(tmp_path / "data") in line and f"process {first.proc.pid}" in line  # type: ignore[union-attr]
    after = {p: p.stat().st_mtime_ns for p in (tmp_path / "data").rglob("*") if p.is_file()}
    assert after == before  # nothing written, no clean-shutdown marker either
    assert not (tmp_path / "data" / ".kafka_cleanshutdown").exists()
    assert first.running


def test_the_lock_is_released_when_the_broker_stops(tmp_path: Path,
                                                    start_broker: StartBroker) -> None:
    first = start_broker(tmp_path / "data")
    first.stop()
    again = start_broker(tmp_path / "data")
    assert again.running


def test_a_log_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a dir")
    result = serve(tmp_path / "data", 0)
    assert result.returncode == 4
    (line,) = failure_lines(result)
    assert str(tmp_path / "data") in line and "log.dirs" in line
    assert (tmp_path / "data").read_text() == "not a dir"


def test_unreadable_meta_properties(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "meta.properties").write_bytes(b"\xff\xfe\x00garbage")
    result = serve(data, 0)
    assert result.returncode == 6
    (line,) = failure_lines(result)
    assert "meta.properties" in line and "backup" in line
    assert tree(data) == ["meta.properties"]  # not even the .lock is left


def test_unreadable_topics_json(tmp_path: Path, start_broker: StartBroker) -> None:
    data = tmp_path / "data"
    start_broker(data).stop()
    (data / "topics.json").write_text("{not json")
    result = serve(data, 0)
    assert result.returncode == 6
    (line,) = failure_lines(result)
    assert "topics.json" in line


def snapshot(path: Path) -> dict[str, tuple[int, int]]:
    """Every file under `path` with its size and mtime: "nothing written" compares two."""
    return {str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in path.rglob("*") if p.is_file()}


def test_a_port_in_use_by_the_broker_on_the_same_dir_touches_nothing(
        tmp_path: Path, start_broker: StartBroker) -> None:
    # Finding 2: a second start that failed on its port wrote a clean-shutdown marker into the
    # running broker's folder (so after a later crash with a torn tail the broker refused to
    # start). The listener is bound before the dir is even looked at.
    first = start_broker(tmp_path / "data")
    before = snapshot(tmp_path / "data")
    result = serve(tmp_path / "data", first.port)
    assert result.returncode == 3
    (line,) = failure_lines(result)
    assert line.startswith("odradek: cannot start: cannot listen on")
    assert snapshot(tmp_path / "data") == before
    assert not (tmp_path / "data" / ".kafka_cleanshutdown").exists()
    assert first.running


def test_a_log_dir_that_cannot_be_created(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("a file, not a folder")
    result = serve(tmp_path / "file" / "deeper" / "data", 0)
    assert result.returncode == 4
    (line,) = failure_lines(result)
    assert str(tmp_path / "file") in line and "log.dirs" in line
    assert tree(tmp_path) == ["file"]


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A read-only file system (as root, permission bits do not stop writes: a read-only
    tmpfs mount does)."""
    where = tmp_path / "ro"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(where)],
                             capture_output=True, check=False).returncode == 0
    if not mounted:
        if os.geteuid() == 0:
            pytest.fail("mount -t tmpfs -o ro is not permitted here")
        where.chmod(0o555)  # not root: the permission bits are enough
    try:
        yield where
    finally:
        if mounted:
            subprocess.run(["umount", str(where)], capture_output=True, check=False)
        else:
            where.chmod(0o755)


@pytest.mark.parametrize("inside", [False, True], ids=["the dir itself", "a dir inside it"])
def test_a_read_only_log_dir(read_only_dir: Path, inside: bool) -> None:
    data = read_only_dir / "data" if inside else read_only_dir
    result = serve(data, 0)
    assert result.returncode == 4
    (line,) = failure_lines(result)
    assert str(read_only_dir) in line and "log.dirs" in line
    assert tree(read_only_dir) == []


def test_a_failed_second_log_dir_leaves_nothing_in_the_first(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    first = tmp_path / "new" / "d1"
    result = serve(first, 0, f"log.dirs={first},{tmp_path / 'file' / 'd2'}")
    assert result.returncode == 4
    (line,) = failure_lines(result)
    assert str(tmp_path / "file" / "d2") in line
    assert tree(tmp_path) == ["file"]  # d1 and its parent were created, then removed


def test_a_second_log_dir_held_by_another_broker_leaves_nothing_in_the_first(
        tmp_path: Path, start_broker: StartBroker) -> None:
    running = start_broker(tmp_path / "held")
    before = snapshot(tmp_path / "held")
    fresh = tmp_path / "fresh"
    result = serve(fresh, 0, f"log.dirs={fresh},{tmp_path / 'held'}")
    assert result.returncode == 5
    (line,) = failure_lines(result)
    assert str(tmp_path / "held") in line and f"process {running.proc.pid}" in line  # type: ignore[union-attr]
    assert not fresh.exists()
    assert snapshot(tmp_path / "held") == before
    assert running.running


def test_unreadable_metadata_in_one_log_dir_leaves_nothing_in_a_new_one(
        tmp_path: Path, start_broker: StartBroker) -> None:
    old = tmp_path / "old"
    start_broker(old).stop()
    (old / "topics.json").write_text("{not json")
    before = snapshot(old)
    fresh = tmp_path / "fresh"
    result = serve(old, 0, f"log.dirs={old},{fresh}")  # metadata lives in the first
    assert result.returncode == 6
    (line,) = failure_lines(result)
    assert "topics.json" in line
    assert not fresh.exists()  # no meta.properties, no .lock, no folder
    after = snapshot(old)
    del after[".lock"], before[".lock"]  # its lock was taken (the pid written), then released
    assert after == before
