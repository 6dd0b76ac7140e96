"""Log compaction for `cleanup.policy=compact` logs: keep the last record of every key.

Kafka's log cleaner (LogCleaner, Cleaner, LogCleanerManager), in four modules:

- `scheduler.py` (`LogCleaner`): which log to clean and when, one pass at a time, driven on
  the event loop; `cleaner-offset-checkpoint`, the cleaned offsets.
- `dirty.py`: how dirty a log is (`LogToClean`) and where its cleanable section ends.
- `algorithm.py` (`Cleaner`): one clean of one log: the key map (`OffsetMap`), what each
  batch keeps (`filter_batch`), the segment groups and their crash-safe swap.
- `rewrite.py`: the bytes of a batch that lost records (`rebuild_batch`, `empty_batch`).

Each module's docstring has its rules. Everything is importable from this package, where
the broker (`LogCleaner`) and the tests find it.
"""

from odradek.broker.storage.cleaner.algorithm import (
    MAP_ENTRY_OVERHEAD,
    CleanedTransactions,
    Cleaner,
    CleanerStats,
    CleaningAbortedError,
    CleanResult,
    LastRecord,
    OffsetMap,
    Step,
    filter_batch,
    group_segments_by_size,
    last_records_of_active_producers,
)
from odradek.broker.storage.cleaner.dirty import (
    LogToClean,
    cleanable_offsets,
    log_to_clean,
    max_compaction_delay,
    non_active_segments_from,
    segments_in,
)
from odradek.broker.storage.cleaner.rewrite import NO_TIMESTAMP, empty_batch, rebuild_batch
from odradek.broker.storage.cleaner.scheduler import CLEANER_CHECKPOINT_FILE, LogCleaner

__all__ = [
    "CLEANER_CHECKPOINT_FILE",
    "MAP_ENTRY_OVERHEAD",
    "NO_TIMESTAMP",
    "CleanResult",
    "CleanedTransactions",
    "Cleaner",
    "CleanerStats",
    "CleaningAbortedError",
    "LastRecord",
    "LogCleaner",
    "LogToClean",
    "OffsetMap",
    "Step",
    "cleanable_offsets",
    "empty_batch",
    "filter_batch",
    "group_segments_by_size",
    "last_records_of_active_producers",
    "log_to_clean",
    "max_compaction_delay",
    "non_active_segments_from",
    "rebuild_batch",
    "segments_in",
]
