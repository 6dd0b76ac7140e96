"""A bound on the file descriptors segments hold (issue #10: 100,000 partitions in the
default descriptor limit).

A segment opens its `.log` descriptor on first use and its index write descriptors on their
first write (`segment.py`, `index_file.py`); with a `HandleCache` those descriptors are
closed again when the segment is cold and the total passes the cache's capacity. Closing
loses nothing: every write went to the kernel with `pwrite`/`write` before the call
returned, so the bytes are in the page cache whichever descriptor wrote them, and the next
use reopens the file by its current path. A segment with unflushed writes still gets them
fsynced: on Linux fsync() writes back every dirty page of the inode, not just those written
through the descriptor it is called on, so `LogSegment.flush` of a segment without a
descriptor fsyncs a short-lived one (as `IndexFile.flush` always did). A writeback error the
kernel met while no descriptor was open is reported to the next fsync of the file (Linux
4.16 and later report an unseen error to a descriptor opened after it), so the log dir still
fails on it.

Which segment goes: second chance (CLOCK). The ring is an OrderedDict of the segments holding
descriptors, oldest first. Every use of a segment's descriptor sets its `referenced` flag, a
plain attribute store, so the produce and fetch paths pay no lock and no dict operation for
the bookkeeping; eviction walks from the front, giving a referenced segment another round
(flag cleared, moved to the back) and closing the first one that was not used since the last
walk. A segment is never evicted while pinned (`LogSegment.pinned()`, used when a worker
thread fsyncs the cleaner's new segment) nor by its own descriptor being counted (it is in
the middle of using it).

Threads: the broker runs storage on its event loop thread; only the log cleaner's fsync
steps run in a worker thread, on a pinned segment. Ring and counts change under a lock.
Eviction only runs on the thread that made the cache (the owner): another thread never closes
a descriptor the event loop may be using (a closed number is soon reused by another file, and
a read or write would then hit the wrong one). A descriptor opened from another thread is
counted but evicts nothing, so the total may pass the capacity until the owner next opens one.

Out of descriptors (EMFILE, ENFILE): `open` gives back half the cache's unpinned descriptors
and tries once more before raising, so sockets and segments share the process's limit and the
broker answers the request rather than failing it when cold segments can make room.

Capacity: `default_capacity()` takes half of the soft RLIMIT_NOFILE, keeping at least 256
descriptors for sockets and short-lived files, and never less than `MIN_CAPACITY`.
"""

from __future__ import annotations

import contextlib
import os
import resource
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import structlog

from odradek.broker.storage.errors import is_out_of_descriptors

log = structlog.get_logger(__name__)

# A few segments' worth (a `.log` and three index files each), however low the limit.
MIN_CAPACITY = 16
# Descriptors never given to segments: sockets, checkpoints, snapshots, the interpreter's own.
RESERVED = 256
# The soft limit when the kernel reports none (RLIM_INFINITY): Linux's default nr_open.
_UNLIMITED = 1 << 20
# At most one "out of file descriptors" warning per this many seconds.
_WARN_EVERY_S = 10.0


class Holder(Protocol):
    """What the cache needs of a segment: its descriptor count and the per-holder fields the
    cache keeps on it (`handle_count`, `pins`, `referenced`)."""

    handle_count: int  # descriptors the cache has counted for it (changed under the lock)
    pins: int  # > 0: never evicted
    referenced: bool  # used since the last eviction walk

    def descriptors_held(self) -> int: ...

    def drop_descriptors(self) -> None:
        """Close every descriptor (reopened on demand), writing nothing."""


def default_capacity(soft_limit: int | None = None) -> int:
    """The descriptors segments may hold under a soft RLIMIT_NOFILE of `soft_limit` (default:
    this process's): half of it, less when fewer than `RESERVED` would be left, at least
    `MIN_CAPACITY`."""
    if soft_limit is None:
        soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft_limit == resource.RLIM_INFINITY or soft_limit < 0:
        soft_limit = _UNLIMITED
    return max(min(soft_limit // 2, soft_limit - RESERVED), MIN_CAPACITY)


class HandleCache:
    """The segments holding descriptors, at most `capacity` descriptors in all (see the
    module docstring)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(capacity, 1)
        self._ring: OrderedDict[Holder, None] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()
        self._owner = threading.get_ident()
        # Counters for logs and tests.
        self.evictions = 0
        self.peak = 0
        self._warned_at = -_WARN_EVERY_S

    @property
    def held(self) -> int:
        """Descriptors counted now."""
        return self._held

    def __len__(self) -> int:
        return len(self._ring)

    def should_warn(self) -> bool:
        """Whether to log an "out of file descriptors" warning now (one per 10 s: under
        pressure every request could say it)."""
        now = time.monotonic()
        if now - self._warned_at < _WARN_EVERY_S:
            return False
        self._warned_at = now
        return True

    def adopt_current_thread(self) -> None:
        """Make the calling thread the owner (the one thread that evicts)."""
        self._owner = threading.get_ident()

    # -- counting -----------------------------------------------------------------------------

    def update(self, holder: Holder) -> None:
        """`holder` opened or closed a descriptor: count it again, then, on the owner thread,
        evict cold segments while the total is above capacity."""
        with self._lock:
            now = holder.descriptors_held()
            before = holder.handle_count
            holder.handle_count = now
            self._held += now - before
            if now:
                if not before:
                    self._ring[holder] = None
                holder.referenced = True
            else:
                self._ring.pop(holder, None)
            if self._held > self.peak:
                self.peak = self._held
            if self._held <= self.capacity or threading.get_ident() != self._owner:
                return
            victims = self._choose(self._held - self.capacity, keep=holder)
        self._drop(victims)

    def _choose(self, excess: int, keep: Holder | None) -> list[Holder]:
        """Take segments worth at least `excess` descriptors off the ring (second chance; see
        the module docstring); fewer when too many are pinned. Called under the lock."""
        victims: list[Holder] = []
        ring = self._ring
        turns = 2 * len(ring)  # one walk clears every flag; the next finds the victims
        while excess > 0 and turns > 0 and ring:
            turns -= 1
            holder, _ = ring.popitem(last=False)
            if holder is keep or holder.pins:
                ring[holder] = None
                continue
            if holder.referenced:
                holder.referenced = False
                ring[holder] = None
                continue
            excess -= holder.handle_count
            self._held -= holder.handle_count
            holder.handle_count = 0
            victims.append(holder)
        self.evictions += len(victims)
        return victims

    @staticmethod
    def _drop(victims: list[Holder]) -> None:
        # Outside the lock: closing calls no cache method (the victims are off the ring), and
        # no other thread uses an unpinned segment (see the module docstring).
        for holder in victims:
            try:
                holder.drop_descriptors()
            except OSError:  # close() releases the number even when it reports an error
                log.debug("closing an evicted segment's descriptor failed", exc_info=True)

    def shrink(self, keep: Holder | None = None) -> int:
        """Give back half of the descriptors held (but `keep`'s and the pinned ones); returns
        how many were closed. A no-op off the owner thread."""
        if threading.get_ident() != self._owner:
            return 0
        with self._lock:
            held = self._held
            for holder in self._ring:  # every segment is a candidate, used or not
                holder.referenced = False
            victims = self._choose(max((held + 1) // 2, 1), keep=keep)
        self._drop(victims)
        return held - self._held

    # -- pinning ------------------------------------------------------------------------------

    def pin(self, holder: Holder) -> None:
        with self._lock:
            holder.pins += 1

    def unpin(self, holder: Holder) -> None:
        with self._lock:
            holder.pins -= 1

    # -- opening ------------------------------------------------------------------------------

    def open(self, path: Path, flags: int, mode: int = 0o644, *,
             keep: Holder | None = None, counted: bool = True) -> int:
        """`os.open` for `keep` (the segment opening it). A `counted` descriptor (kept by the
        segment, which then calls `update`) first makes room, evicting on the owner thread
        while the cache is full, so that the descriptors open never pass the capacity; a
        short-lived one does not. When the process is out of descriptors, give back half of
        the cache's (`shrink`) and try once more."""
        if counted and self._held >= self.capacity and threading.get_ident() == self._owner:
            with self._lock:
                victims = self._choose(self._held + 1 - self.capacity, keep=keep)
            self._drop(victims)
        try:
            return os.open(path, flags, mode)
        except OSError as exc:
            if not is_out_of_descriptors(exc):
                raise
            freed = self.shrink(keep)
            if not freed:
                raise
            if self.should_warn():
                log.warning("out of file descriptors; closed cold segment files to make room",
                            closed=freed, still_open=self._held, capacity=self.capacity)
            return os.open(path, flags, mode)


def open_file(cache: HandleCache | None, path: Path, flags: int, mode: int = 0o644, *,
              keep: Holder | None = None, counted: bool = True) -> int:
    """`cache.open`, or `os.open` without a cache."""
    if cache is None:
        return os.open(path, flags, mode)
    return cache.open(path, flags, mode, keep=keep, counted=counted)


@contextlib.contextmanager
def pinned(cache: HandleCache | None, holder: Holder) -> Iterator[None]:
    """`holder` is not evicted inside the block (a no-op without a cache)."""
    if cache is None:
        yield
        return
    cache.pin(holder)
    try:
        yield
    finally:
        cache.unpin(holder)
