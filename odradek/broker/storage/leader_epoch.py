"""The leader epoch cache of one partition: which leader epoch started at which offset.

Persisted as Kafka's `leader-epoch-checkpoint` in the partition directory (see
`checkpoint.py` for the text layout): version 0, the entry count, then one
`<epoch> <startOffset>` line per epoch in increasing order. Rewritten (fsynced, renamed)
whenever an epoch is added; epochs change rarely, so that cost is off the hot path.

This is the one home of the epoch lookups Kafka's LeaderEpochFileCache answers
(`epoch_for_offset`, `end_offset_for`, `earliest_epoch`); handlers reach them through
`PartitionLog`. Kafka records the leader's epoch at the log end when a replica becomes
leader, so even an empty log knows it; this cache learns an epoch only from the first batch
appended in it, so each lookup takes the leader's `current` (epoch, log end) entry and counts
it as the latest one while the cache holds nothing as new.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from pathlib import Path

from odradek.broker.storage.checkpoint import read_checkpoint, write_checkpoint
from odradek.broker.storage.errors import CheckpointError
from odradek.broker.storage.files import LEADER_EPOCH_CHECKPOINT_FILE, atomic_write

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

# (epoch, start offset): the current leader's epoch and where it took over (the log end).
EpochEntry = tuple[int, int]


class LeaderEpochCache:
    def __init__(self, directory: Path) -> None:
        self.path = directory / LEADER_EPOCH_CHECKPOINT_FILE
        self._epochs: list[int] = []
        self._starts: list[int] = []
        try:
            rows = read_checkpoint(self.path, 2)
        except CheckpointError:
            rows = []  # rebuilt from the batches' epochs by recovery
        for epoch, start in rows:
            self._add(int(epoch), int(start))

    @property
    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._epochs, self._starts, strict=True))

    @property
    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    def _add(self, epoch: int, start_offset: int) -> bool:
        if self._epochs and self._epochs[-1] == epoch and start_offset >= self._starts[-1]:
            return False
        # An entry that is not monotonic with the existing ones wins over them (as Kafka).
        while self._epochs and (self._epochs[-1] >= epoch or self._starts[-1] >= start_offset):
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        return True

    def assign(self, epoch: int, start_offset: int, *, persist: bool = True) -> None:
        """Record that `epoch` starts at `start_offset` (no-op when it is already known)."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        if self._add(epoch, start_offset) and persist:
            self.persist()

    def restore(self, entries: list[tuple[int, int]]) -> None:
        """Put back `entries` (as read from `entries` earlier), in memory only: undoes an
        `assign` whose append failed."""
        self._epochs = [e for e, _ in entries]
        self._starts = [s for _, s in entries]

    def persist(self) -> None:
        write_checkpoint(self.path, (f"{e} {s}" for e, s in self.entries))

    def _with_current(self, current: EpochEntry | None) -> tuple[list[int], list[int]]:
        """The epochs and their start offsets, `current` added last when it is newer than
        every entry (see the module docstring)."""
        if current is None or (self._epochs and self._epochs[-1] >= current[0]):
            return self._epochs, self._starts
        return [*self._epochs, current[0]], [*self._starts, current[1]]

    def epoch_for_offset(self, offset: int, *, current: EpochEntry | None = None) -> int | None:
        """The epoch that was current when `offset` was written, if known."""
        epochs, starts = self._with_current(current)
        slot = bisect_right(starts, offset) - 1
        return epochs[slot] if slot >= 0 else None

    def earliest_epoch(
        self, log_start_offset: int, *, current: EpochEntry | None = None
    ) -> int | None:
        """The oldest entry's epoch when it starts at or below `log_start_offset` (what
        ListOffsets EARLIEST reports), else None."""
        epochs, starts = self._with_current(current)
        return epochs[0] if epochs and starts[0] <= log_start_offset else None

    def end_offset_for(
        self, epoch: int, log_end_offset: int, *, current: EpochEntry | None = None
    ) -> tuple[int, int]:
        """(epoch, end offset) as OffsetForLeaderEpoch answers: the largest epoch <= `epoch`
        and the start offset of the next epoch after it (the log end for the latest epoch)."""
        epochs, starts = self._with_current(current)
        if epoch == UNDEFINED_EPOCH or not epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epoch == epochs[-1]:
            return epoch, log_end_offset
        higher = bisect_right(epochs, epoch)
        if higher >= len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            # Older than anything we know: the data is gone, point at the first known epoch.
            return epoch, starts[0]
        return epochs[higher - 1], starts[higher]

    def truncate_from_end(self, end_offset: int) -> None:
        """Forget epochs starting at or after `end_offset` (the log was cut there)."""
        keep = bisect_left(self._starts, end_offset)
        if keep < len(self._epochs):
            del self._epochs[keep:]
            del self._starts[keep:]
            self.persist()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop epochs wholly below the new log start; the one spanning it now starts there."""
        slot = bisect_right(self._starts, start_offset) - 1
        if slot < 0 or (slot == 0 and self._starts[0] == start_offset):
            return
        del self._epochs[:slot]
        del self._starts[:slot]
        self._starts[0] = start_offset
        self.persist()

    def clear(self) -> None:
        # A brand-new partition has nothing to forget: skip the fsync'd rewrite, which cost
        # ~6 ms per partition when __consumer_offsets (50 partitions) is first created.
        had_state = bool(self._epochs) or self.path.exists()
        self._epochs.clear()
        self._starts.clear()
        if had_state:
            self.persist()
        else:  # present like Kafka's, but an empty cache needs no durability
            atomic_write(self.path, b"0\n0\n", sync=False)
