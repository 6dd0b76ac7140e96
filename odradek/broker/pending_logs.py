"""Partition logs the metadata names and the disk does not hold yet, made in the background.

Kafka answers CreateTopics once the controller has committed the topic's metadata record;
each broker creates the partition logs afterwards, as it applies the record. Odradek does the
same: CreateTopics registers the topics and writes `topics.json` (fsynced: what makes a topic
survive kill -9), answers, and leaves the logs to this to-do list. A start that finds topics
listed without their logs (a kill -9 before they were all made) puts them here too.

Nothing waits for the list: `LocalPartitions.log` makes a missing log of a partition the
metadata names on the spot (one log, a few syscalls), so a Produce, Fetch, ListOffsets or a
coordinator right after CreateTopics sees the log as if it had been made before the answer.
The background task only gets the rest done: `YIELD_EVERY` logs per turn of the event loop,
the heap settled every `heap.SETTLE_EVERY` (as `cluster._Pace`). It runs on the event loop,
not in a thread: the log manager is not thread-safe, and a lock on every lookup would cost
the produce path what a thread would save here.

Deletion is safe at any point: an entry whose topic is gone (or has fewer partitions now) is
dropped, never made, since the metadata is checked before each log is made; a topic deleted
and created again under the same name simply gets its log made for the new topic. A log that
cannot be made (out of descriptors, every log dir failed) stays listed and is retried after
`RETRY_S`; meanwhile requests for it are answered as for an unknown partition, which clients
retry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import anyio
import anyio.lowlevel
import structlog

from odradek.broker import heap

log = structlog.get_logger("odradek.pending_logs")

YIELD_EVERY = 10  # logs made per turn of the event loop (1-7 ms each on a loaded machine)
RETRY_S = 1.0  # after a log could not be made


class PendingLogs:
    """The to-do list of partition logs to make; `make(topic, partition)` makes one (True),
    or says the metadata no longer names it (False); it raises when the log cannot be made."""

    def __init__(self, make: Callable[[str, int], bool]) -> None:
        self._make = make
        self._wanted: dict[tuple[str, int], None] = {}  # insertion-ordered set
        self._added: anyio.Event | None = None  # made on the loop, by `run`
        self.made = 0  # logs made by this list (not those made on access)

    def __len__(self) -> int:
        return len(self._wanted)

    def add(self, topic: str, partitions: Iterable[int]) -> None:
        wanted = self._wanted
        for p in partitions:
            wanted[(topic, p)] = None
        if self._added is not None and wanted:
            self._added.set()

    def discard(self, topic: str, partition: int) -> None:
        self._wanted.pop((topic, partition), None)

    def discard_topics(self, topics: set[str]) -> None:
        """Drop the deleted topics' entries (`make` would refuse them anyway)."""
        if self._wanted:
            self._wanted = {k: None for k in self._wanted if k[0] not in topics}

    def make_some(self, limit: int) -> bool:
        """Make up to `limit` of the listed logs, oldest first; False when one failed (it
        stays listed)."""
        ok = True
        for key in list(self._wanted)[:limit]:
            if key not in self._wanted:
                continue
            try:
                if self._make(*key):
                    self.made += 1
                    if self.made % heap.SETTLE_EVERY == 0:
                        heap.settle()
            except Exception as exc:  # an OSError, a log dir offline: retried later
                log.warning("cannot create a partition log yet; retrying", topic=key[0],
                            partition=key[1], error=str(exc))
                ok = False
                continue
            self._wanted.pop(key, None)
        return ok

    def make_all(self) -> None:
        """Make every listed log now (tests, and callers that cannot wait for the loop)."""
        while self._wanted:
            if not self.make_some(len(self._wanted)):
                return

    async def run(self) -> None:
        while True:
            while not self._wanted:
                self._added = anyio.Event()
                await self._added.wait()
            if not self.make_some(YIELD_EVERY):
                await anyio.sleep(RETRY_S)
            else:
                await anyio.lowlevel.checkpoint()
