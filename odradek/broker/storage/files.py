"""File and directory names of the segment log, exactly as Kafka spells them.

A log dir holds one directory per partition, `<topic>-<partition>`, plus a few per-dir files
(recovery points, log start offsets, the clean-shutdown marker). A partition directory holds
segments named by their base offset as 20 zero-padded decimal digits, one file per suffix:
`00000000000000000000.log`, `.index`, `.timeindex`, `.txnindex`, and producer-state
`.snapshot` files. Files being deleted or cleaned carry an extra `.deleted` / `.cleaned` suffix;
a partition directory being deleted is renamed `<topic>-<partition>.<uuid hex>-delete`.

It is also the one home of how a metadata file (checkpoints, producer-state snapshots,
`topics.json`, `meta.properties`, ...) is written: `atomic_write` puts the bytes in
`<name>.tmp`, fsyncs it, renames it over `<name>` and fsyncs the directory, so a reader or a
crash finds the old content or the new, never a mix; `fsync_dir` makes renames durable.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
# A metadata file being written by `atomic_write`; leftovers are removed on start.
TMP_SUFFIX = ".tmp"
# Suffix of a whole partition directory scheduled for deletion.
DELETE_DIR_SUFFIX = "-delete"

INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

# Per log dir (the parent of the partition directories).
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
# Per partition directory.
LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"

_OFFSET_DIGITS = 20


def offset_prefix(offset: int) -> str:
    """The 20-digit zero-padded name stem of the segment (or snapshot) starting at `offset`."""
    if offset < 0:
        raise ValueError(f"negative offset {offset} cannot name a segment")
    return f"{offset:0{_OFFSET_DIGITS}d}"


def segment_file(directory: Path, base_offset: int, suffix: str, extra: str = "") -> Path:
    """`<dir>/<20-digit base offset><suffix><extra>`, e.g. extra=`.deleted`."""
    return directory / f"{offset_prefix(base_offset)}{suffix}{extra}"


def log_file(directory: Path, base_offset: int, extra: str = "") -> Path:
    return segment_file(directory, base_offset, LOG_SUFFIX, extra)


def offset_index_file(directory: Path, base_offset: int, extra: str = "") -> Path:
    return segment_file(directory, base_offset, INDEX_SUFFIX, extra)


def time_index_file(directory: Path, base_offset: int, extra: str = "") -> Path:
    return segment_file(directory, base_offset, TIME_INDEX_SUFFIX, extra)


def txn_index_file(directory: Path, base_offset: int, extra: str = "") -> Path:
    return segment_file(directory, base_offset, TXN_INDEX_SUFFIX, extra)


def snapshot_file(directory: Path, offset: int) -> Path:
    return segment_file(directory, offset, SNAPSHOT_SUFFIX)


def offset_from_file_name(name: str) -> int:
    """The offset a segment-style file name starts with (`00000000000000000042.index` -> 42)."""
    stem, dot, _ = name.partition(".")
    if not dot or not stem.isdigit():
        raise ValueError(f"{name!r} is not named by an offset")
    return int(stem)


def partition_dir_name(topic: str, partition: int) -> str:
    if partition < 0:
        raise ValueError(f"negative partition {partition}")
    return f"{topic}-{partition}"


def parse_partition_dir_name(name: str) -> tuple[str, int]:
    """`my-topic-3` -> ("my-topic", 3). Topic names may contain '-': split at the last one.

    Raises ValueError for anything else, including directories being deleted
    (`...-delete`) and Kafka's `-future` / `-stray` directories.
    """
    topic, dash, partition = name.rpartition("-")
    if not dash or not topic or not partition.isdigit() or not partition.isascii():
        raise ValueError(f"{name!r} is not a <topic>-<partition> directory name")
    return topic, int(partition)


def delete_dir_name(topic: str, partition: int, unique: str) -> str:
    """Kafka's name for a partition directory scheduled for deletion."""
    return f"{partition_dir_name(topic, partition)}.{unique}{DELETE_DIR_SUFFIX}"


def is_delete_dir_name(name: str) -> bool:
    return name.endswith(DELETE_DIR_SUFFIX) and "." in name


# -- writing metadata files --------------------------------------------------------------------


def fsync_dir(directory: Path) -> None:
    """Make creations and renames in `directory` durable (Kafka's Utils.flushDir)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Replace `path` with `data`, all or nothing: write `<name>.tmp` next to it (retrying
    short writes), fsync it, rename it over `path`, fsync the directory. `sync=False` skips
    both fsyncs but keeps the rename (a file a power loss may cost, as long as it is never
    torn: e.g. the producer-state snapshot taken at a roll). On failure the `.tmp` file is
    removed and `path` is left as it was."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
    if sync:
        fsync_dir(path.parent)
