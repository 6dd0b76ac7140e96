"""Kafka's text checkpoint files (`leader-epoch-checkpoint`, `recovery-point-offset-checkpoint`,
`log-start-offset-checkpoint`).

Layout (UTF-8 text, one item per line, '\\n' line ends):

    <version>            decimal int, 0 for every file written here
    <count>              decimal int, the number of entry lines that follow
    <entry>              `count` lines, fields separated by whitespace:
                         "epoch startOffset" or "topic partition offset"

Written with `files.atomic_write` (`<name>.tmp`, fsynced, renamed over the old file, the
directory fsynced), so a reader sees either the old or the new content, never a mix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from odradek.broker.storage.errors import CheckpointError as CheckpointError  # re-exported
from odradek.broker.storage.files import atomic_write

CURRENT_VERSION = 0


def write_checkpoint(path: Path, lines: Iterable[str], *, version: int = CURRENT_VERSION) -> None:
    entries = list(lines)
    text = f"{version}\n{len(entries)}\n" + "".join(f"{line}\n" for line in entries)
    atomic_write(path, text.encode())


def read_checkpoint(path: Path, fields: int, *, version: int = CURRENT_VERSION) -> list[list[str]]:
    """Entry lines split into `fields` fields each; [] when the file is missing or empty."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = text.splitlines()
    if not lines:
        return []
    try:
        found_version = int(lines[0])
    except ValueError:
        raise CheckpointError(f"{path}: malformed version line {lines[0]!r}") from None
    if found_version != version:
        raise CheckpointError(f"{path}: version {found_version}, expected {version}")
    if len(lines) < 2:
        return []
    try:
        count = int(lines[1])
    except ValueError:
        raise CheckpointError(f"{path}: malformed count line {lines[1]!r}") from None
    entries: list[list[str]] = []
    for line in lines[2:]:
        parts = line.split()
        if len(parts) != fields:
            raise CheckpointError(f"{path}: malformed line {line!r}")
        entries.append(parts)
    if len(entries) != count:
        raise CheckpointError(f"{path}: expected {count} entries, found {len(entries)}")
    return entries


def write_offsets_checkpoint(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    """`topic partition offset` lines, e.g. the recovery points of every log in a log dir."""
    write_checkpoint(path, (f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())))


def read_offsets_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    result: dict[tuple[str, int], int] = {}
    for topic, partition, offset in read_checkpoint(path, 3):
        try:
            result[(topic, int(partition))] = int(offset)
        except ValueError:
            raise CheckpointError(f"{path}: malformed line {topic} {partition} {offset}") from None
    return result
