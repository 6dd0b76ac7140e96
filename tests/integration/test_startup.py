"""Start-up failures: one line naming the problem and what to do, a distinct exit code, and
nothing written into a data dir (issue #10: port in use, a second broker on a locked dir, a
log dir that is a file, unreadable metadata)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

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
    result = serve(tmp_path / "data", 0, "ssl.keystore.location=/etc/kafka/broker.jks")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "odradek: configuration error: ssl.keystore.location: not supported by Odradek yet "
        "(PLAINTEXT only: no TLS, SASL or authentication); remove it"]
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
    assert tree(data) == [".lock", "meta.properties"]


def test_unreadable_topics_json(tmp_path: Path, start_broker: StartBroker) -> None:
    data = tmp_path / "data"
    start_broker(data).stop()
    (data / "topics.json").write_text("{not json")
    result = serve(data, 0)
    assert result.returncode == 6
    (line,) = failure_lines(result)
    assert "topics.json" in line
