"""LogManager: loading log dirs, placement, checkpoints, clean shutdown, deletion."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from storage_testutil import abandon, append, values_of

from odradek.broker.storage.manager import LogManager
from odradek.config import LogConfig

CONFIG = LogConfig.from_overrides({"internal.segment.bytes": "1024"})


def test_new_partitions_go_to_the_emptiest_log_dir(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    manager = LogManager(dirs, CONFIG, now_ms=0)
    for p in range(6):
        manager.create("orders", p)
    placed = [manager.log_dir_of("orders", p) for p in range(6)]
    assert placed == dirs + dirs
    assert (tmp_path / "b" / "orders-1" / "00000000000000000000.log").exists()
    assert manager.create("orders", 0) is manager.get("orders", 0)  # idempotent
    manager.close_all()


def test_restart_keeps_logs_and_log_start_offsets(tmp_path: Path) -> None:
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    manager = LogManager(dirs, CONFIG, now_ms=0)
    for p in range(3):
        log = manager.create("my-topic", p)
        for i in range(20):
            append(log, [f"{p}-{i}".encode() * 10])
    log1 = manager.get("my-topic", 1)
    assert log1 is not None
    log1.delete_records_before(7)
    # DeleteRecords is checkpointed at once
    start_cp = (log1.directory.parent / "log-start-offset-checkpoint").read_text()
    assert "my-topic 1 7\n" in start_cp
    manager.close_all()
    for d in dirs:
        assert json.loads((d / ".kafka_cleanshutdown").read_text()) == {
            "version": 0,
            "brokerEpoch": -1,
        }
        assert (d / "recovery-point-offset-checkpoint").read_text().startswith("0\n")

    reopened = LogManager(dirs, CONFIG, now_ms=0)
    assert sorted(reopened.logs()) == [("my-topic", 0), ("my-topic", 1), ("my-topic", 2)]
    for d in dirs:
        assert not (d / ".kafka_cleanshutdown").exists()  # a crash from now on is detected
    log1 = reopened.get("my-topic", 1)
    assert log1 is not None
    assert log1.log_start_offset == 7
    assert log1.log_end_offset == 20
    assert log1.recovery_point == 20  # clean shutdown: nothing to recover
    assert values_of(log1.read(19, 100)) == [(19, b"1-19" * 10)]
    reopened.close_all()


def test_crash_recovers_from_the_checkpointed_recovery_point(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], CONFIG, now_ms=0)
    log = manager.create("t", 0)
    for i in range(30):
        append(log, [b"x" * 50, str(i).encode()])
    manager.flush_rolled_segments()
    rolled_up_to = log.active_segment.base_offset
    assert rolled_up_to > 0
    assert f"t 0 {rolled_up_to}\n" in (tmp_path / "recovery-point-offset-checkpoint").read_text()
    for _ in range(5):
        append(log, [b"y"])
    end = log.log_end_offset
    # kill: no close, no marker; tear the last batch
    abandon(log)
    active = sorted((tmp_path / "t-0").glob("*.log"))[-1]
    with open(active, "r+b") as f:
        f.truncate(active.stat().st_size - 1)
    reopened = LogManager([tmp_path], CONFIG, now_ms=0)
    log = reopened.get("t", 0)
    assert log is not None
    assert log.log_end_offset == end - 1
    assert log.recovery_point == rolled_up_to
    reopened.close_all()


def test_delete_topic(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], CONFIG, now_ms=0)
    for p in range(2):
        append(manager.create("gone", p), [b"a"])
    append(manager.create("gone-2", 0), [b"b"])
    assert manager.delete("gone") == 2
    assert manager.get("gone", 0) is None
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["gone-2-0"]
    assert "gone " not in (tmp_path / "recovery-point-offset-checkpoint").read_text()
    assert manager.partitions_of("gone-2") == [0]
    manager.close_all()


def test_leftover_delete_dirs_and_other_entries_are_handled(tmp_path: Path) -> None:
    (tmp_path / "old-0.0123456789abcdef-delete").mkdir()
    (tmp_path / "old-0.0123456789abcdef-delete" / "00000000000000000000.log").write_bytes(b"")
    (tmp_path / "not a partition").mkdir()
    (tmp_path / "meta.properties").write_text("node.id=1\n")
    manager = LogManager([tmp_path], CONFIG, now_ms=0)
    assert manager.logs() == {}
    assert not (tmp_path / "old-0.0123456789abcdef-delete").exists()
    assert (tmp_path / "not a partition").exists()
    manager.close_all()


def test_same_partition_in_two_log_dirs_is_an_error(tmp_path: Path) -> None:
    for d in ("a", "b"):
        (tmp_path / d / "dup-0").mkdir(parents=True)
    with pytest.raises(RuntimeError, match="dup-0"):
        LogManager([tmp_path / "a", tmp_path / "b"], CONFIG, now_ms=0)


def test_retention_and_flush_passes(tmp_path: Path) -> None:
    configs = {
        "short": LogConfig.from_overrides({"internal.segment.bytes": "512", "retention.ms": "100"}),
        "flushy": LogConfig.from_overrides({"flush.ms": "10"}),
    }
    manager = LogManager([tmp_path], CONFIG, config_for=lambda t: configs.get(t, CONFIG), now_ms=0)
    short = manager.create("short", 0, now_ms=0)
    flushy = manager.create("flushy", 0, now_ms=0)
    keep = manager.create("keep", 0, now_ms=0)
    for i in range(20):
        append(short, [b"z" * 80], timestamp=1_000 + i)
        append(keep, [b"z" * 80], timestamp=1_000 + i)
    append(flushy, [b"f"])
    assert manager.retention_pass(now_ms=1_000_000) > 0
    assert short.log_start_offset == 20
    assert keep.log_start_offset == 0
    assert manager.flush_pass(now_ms=1_000_000) == 1
    assert flushy.recovery_point == 1
    manager.close_all()
    reopened = LogManager([tmp_path], CONFIG, config_for=lambda t: configs.get(t, CONFIG))
    assert reopened.get("short", 0).log_start_offset == 20  # type: ignore[union-attr]
    reopened.close_all()


def test_unreadable_checkpoint_means_full_recovery(tmp_path: Path) -> None:
    manager = LogManager([tmp_path], CONFIG, now_ms=0)
    append(manager.create("t", 0), [b"a"])
    manager.close_all()
    (tmp_path / "recovery-point-offset-checkpoint").write_text("garbage")
    reopened = LogManager([tmp_path], CONFIG, now_ms=0)
    log = reopened.get("t", 0)
    assert log is not None and log.log_end_offset == 1 and log.recovery_point == 0
    reopened.close_all()
    with pytest.raises(RuntimeError):
        reopened.create("t", 1)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_idle_partitions_hold_no_descriptor(tmp_path: Path) -> None:
    """Issue #10: new partitions keep no file open (3 descriptors each ran a 10,000-partition
    CreateTopics out of descriptors, and then 1 each still bounded partitions by the limit);
    the first write or read opens what it needs (see test_storage_handles.py)."""
    manager = LogManager([tmp_path / "d"], CONFIG, now_ms=0)
    before = _open_fds()
    for p in range(200):
        manager.create("wide", p, now_ms=0)
    assert _open_fds() - before <= 5
    pl = manager.get("wide", 0)
    assert pl is not None
    append(pl, [b"v"] * 3)
    assert values_of(pl.read(0, 1 << 20)) == [(0, b"v"), (1, b"v"), (2, b"v")]
    manager.close_all()
    assert _open_fds() <= before + 5
