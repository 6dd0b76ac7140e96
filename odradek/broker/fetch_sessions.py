"""Incremental fetch sessions (KIP-227), sans IO: the session cache and the per-request
fetch context, as Kafka's broker keeps them.

A consumer's Fetch names a session id and an epoch:

- epoch 0 (INITIAL) is a *full* fetch: any session the id names is closed, the request's
  partitions are read as listed, and a new session caching them is created if the cache has
  room (the response carries its id; 0 if no room).
- epoch -1 (FINAL) is a full fetch that closes the named session and creates none
  (sessionless; session id 0 in the response). Fetch v4-6 have no session fields and are
  always this.
- any other epoch is *incremental*: the session must exist (else FETCH_SESSION_ID_NOT_FOUND)
  and expect exactly this epoch (else INVALID_FETCH_SESSION_EPOCH), and a session created
  from v13+ (topic ids) serves only v13+ requests and one from v12- only v12- (else
  FETCH_SESSION_TOPIC_ID_ERROR). Partitions the request names are added or have their fetch
  parameters replaced, `forgotten_topics_data` removes partitions; the session's epoch
  advances (after 2**31-1 comes 1). A session left with no partition is closed and the
  request answered sessionless. Every partition of the session is read, and the response
  leaves out each partition with no records, no error and the same high watermark and log
  start offset as last sent (Kafka tracks no more than these, plus the preferred read replica
  and a diverging epoch, which this broker never sets). A partition that returned records
  moves to the end of the session's order, so the next fetches read the others first.

Errors answer with session id 0 and no partitions. A session whose epoch moved on while a
fetch on it waited (a duplicate request) answers INVALID_FETCH_SESSION_EPOCH with its id, at
once: the newer request calls the parked fetch's `on_moved`.

The cache holds at most `max.incremental.fetch.session.cache.slots` sessions. When full, a new
session may take the place of (1) the least recently used session if unused for more than
`MIN_EVICTION_MS` (Kafka's fixed 120 s), else (2) the session with the fewest partitions (then
the lowest id) among those evictable, if the new one has more (a follower's new session also
wins over any consumer's, whatever the sizes): a consumer's
session is evictable by any once older than `MIN_EVICTION_MS` and by a follower's
(privileged, replica id >= 0) at once; a follower's session is evictable only once older
than that. Evictability is judged when a session is last used, as Kafka does. One shard:
Kafka splits the slots over `num.io.threads` shards; this broker has one request thread.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from odradek.wire import ErrorCode

if TYPE_CHECKING:  # the Fetch codec is loaded by the first Fetch, not at start-up
    from odradek.broker.partitions import Watch
    from odradek.wire._generated.fetch import FetchRequest, FetchResponse

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1
MIN_EVICTION_MS = 120_000  # Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, not a setting

# A partition's key in a session: (topic name, partition) for v12-, (topic id, partition) v13+.
Key = tuple[str | uuid.UUID, int]
Names = Callable[[uuid.UUID], str | None]


def next_epoch(epoch: int) -> int:
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_EPOCH else epoch + 1


class CachedPartition:
    """One partition of a session: the fetcher's last request parameters (named as in the
    request, so the handler reads either alike) and what the last response told it."""

    __slots__ = (
        "current_leader_epoch",
        "fetch_offset",
        "high_watermark",
        "key",
        "last_fetched_epoch",
        "local_log_start_offset",
        "log_start_offset",
        "partition",
        "partition_max_bytes",
        "topic",
        "topic_id",
    )

    def __init__(self, key: Key, topic: str | None, topic_id: uuid.UUID,
                 p: FetchRequest.FetchPartition, high_watermark: int = -1,
                 local_log_start_offset: int = -1) -> None:
        self.key = key
        self.topic = topic  # None while a v13+ topic id is unknown
        self.topic_id = topic_id
        self.partition = p.partition
        self.fetch_offset = p.fetch_offset
        self.partition_max_bytes = p.partition_max_bytes
        self.current_leader_epoch = p.current_leader_epoch
        self.last_fetched_epoch = p.last_fetched_epoch
        self.log_start_offset = p.log_start_offset  # the fetcher's (followers)
        self.high_watermark = high_watermark
        self.local_log_start_offset = local_log_start_offset  # ours, as last sent

    def update_request(self, p: FetchRequest.FetchPartition) -> None:
        self.fetch_offset = p.fetch_offset
        self.partition_max_bytes = p.partition_max_bytes
        self.current_leader_epoch = p.current_leader_epoch
        self.last_fetched_epoch = p.last_fetched_epoch
        self.log_start_offset = p.log_start_offset

    def must_respond(self, data: FetchResponse.PartitionData, update: bool) -> bool:
        """Whether an incremental response must carry this partition; with `update`, remember
        what it tells the fetcher."""
        respond = bool(data.records)
        if self.high_watermark != data.high_watermark:
            respond = True
            if update:
                self.high_watermark = data.high_watermark
        if self.local_log_start_offset != data.log_start_offset:
            respond = True
            if update:
                self.local_log_start_offset = data.log_start_offset
        if data.preferred_read_replica >= 0:
            respond = True
        if data.error_code != ErrorCode.NONE:
            # An invalid cached high watermark: the partition is sent again once it recovers.
            if update:
                self.high_watermark = -1
            respond = True
        diverging = data.diverging_epoch
        if diverging.epoch != -1 or diverging.end_offset != -1:
            respond = True
        return respond

    def __repr__(self) -> str:
        return (f"CachedPartition({self.topic!r}, {self.topic_id}, {self.partition}, "
                f"fetch_offset={self.fetch_offset}, hw={self.high_watermark})")


class FetchSession:
    __slots__ = (
        "cached_size",
        "creation_ms",
        "epoch",
        "evictable_by_all",
        "evictable_by_privileged",
        "id",
        "last_used_ms",
        "partitions",
        "privileged",
        "uses_topic_ids",
        "watch",
    )

    def __init__(self, session_id: int, privileged: bool, partitions: dict[Key, CachedPartition],
                 uses_topic_ids: bool, now_ms: int) -> None:
        self.id = session_id
        self.privileged = privileged
        self.partitions = partitions  # in fetch order
        self.uses_topic_ids = uses_topic_ids
        self.creation_ms = now_ms
        self.last_used_ms = now_ms
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.cached_size = -1  # the size the cache last saw; -1 while not in it
        self.evictable_by_all = False
        self.evictable_by_privileged = False
        # The broker's watch on the session's partitions (see broker/partitions.py), made by
        # the first fetch that waits and kept across polls, so an idle poll registers
        # nothing: fired when a newer request moves the session on (a parked fetch answers
        # INVALID_FETCH_SESSION_EPOCH now); dropped when the partition set or a topic name
        # changes, closed with the session.
        self.watch: Watch | None = None

    def update(self, version: int, request: FetchRequest, names: Names
               ) -> tuple[int, int, int]:
        """Apply an incremental request: (added, updated, removed) partition counts."""
        added = updated = removed = 0
        parts = self.partitions
        by_id = version >= 13
        for topic in request.topics:
            tkey: str | uuid.UUID
            if by_id:
                tkey, name = topic.topic_id, names(topic.topic_id)
            else:
                tkey = name = topic.topic
            for p in topic.partitions:
                key = (tkey, p.partition)
                cached = parts.get(key)
                if cached is None:
                    parts[key] = CachedPartition(key, name, topic.topic_id, p)
                    added += 1
                else:
                    cached.update_request(p)
                    updated += 1
        for forgotten in request.forgotten_topics_data:
            fkey = forgotten.topic_id if by_id else forgotten.topic
            for index in forgotten.partitions:
                if parts.pop((fkey, index), None) is not None:
                    removed += 1
        return added, updated, removed

    def __repr__(self) -> str:
        return (f"FetchSession(id={self.id}, epoch={self.epoch}, privileged={self.privileged}, "
                f"partitions={len(self.partitions)}, uses_topic_ids={self.uses_topic_ids})")


# -- what a request gets: its fetch context ----------------------------------------------------


class SessionError:
    """The request named a session it cannot use: answered with `error`, session id 0, no
    partitions, at once."""

    __slots__ = ("error",)

    def __init__(self, error: ErrorCode) -> None:
        self.error = error


class Sessionless:
    """A full fetch that keeps no session (epoch FINAL, or an incremental fetch that removed
    the session's last partition): the request's partitions, session id 0."""

    __slots__ = ()


class FullFetch:
    """A full fetch (epoch INITIAL): the request's partitions; once read, a new session
    caching them (if the cache has room)."""

    __slots__ = ("_cache", "_privileged", "_uses_topic_ids")

    def __init__(self, cache: FetchSessionCache, privileged: bool, uses_topic_ids: bool) -> None:
        self._cache = cache
        self._privileged = privileged
        self._uses_topic_ids = uses_topic_ids

    def create_session(self, now_ms: int, count: int,
                       entries: Callable[[], Iterable[tuple[Key, CachedPartition]]]) -> int:
        """The new session's id, or 0 if there is no room; `entries` (the partitions as
        answered, `count` of them) is only called when there is."""
        return self._cache.maybe_create(now_ms, self._privileged, count, self._uses_topic_ids,
                                        lambda: dict(entries()))


class IncrementalFetch:
    """An incremental fetch on `session` (already updated from the request, epoch advanced)."""

    __slots__ = ("expected_epoch", "session")

    def __init__(self, session: FetchSession) -> None:
        self.session = session
        self.expected_epoch = session.epoch

    def still_current(self) -> bool:
        """False if another request moved the session on while this one waited."""
        return self.session.epoch == self.expected_epoch

    def sent(self, cached: CachedPartition, had_records: bool) -> None:
        """A partition that returned records goes to the end of the session's order."""
        if had_records:
            parts = self.session.partitions
            moved = parts.pop(cached.key, None)
            if moved is not None:
                parts[cached.key] = moved


FetchContext = SessionError | Sessionless | FullFetch | IncrementalFetch


class FetchSessionCache:
    """The broker's fetch sessions (see the module docstring for the rules)."""

    def __init__(self, max_entries: int, eviction_ms: int = MIN_EVICTION_MS,
                 rng: random.Random | None = None) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self._rng = rng or random.Random()
        self._sessions: dict[int, FetchSession] = {}
        self.total_partitions = 0
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def new_session_id(self) -> int:
        while True:
            sid = self._rng.randrange(1, MAX_EPOCH)
            if sid not in self._sessions:
                return sid

    # -- the request's context ----------------------------------------------------------------

    def new_context(self, version: int, request: FetchRequest, *, privileged: bool,
                    names: Names, now_ms: int) -> FetchContext:
        session_id, epoch = request.session_id, request.session_epoch
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)  # a full fetch closes the session it names
            if epoch == FINAL_EPOCH:
                return Sessionless()
            return FullFetch(self, privileged, version >= 13)
        session = self._sessions.get(session_id)
        if session is None:
            return SessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != (version >= 13):
            return SessionError(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        watch = session.watch
        if watch is not None:
            watch.fire()  # a fetch parked on the session's last epoch answers now
        added, _, removed = session.update(version, request, names)
        if not session.partitions:
            self.remove(session)
            return Sessionless()
        self.touch(session, now_ms)
        session.epoch = next_epoch(session.epoch)
        renamed = False
        if session.uses_topic_ids:
            for cached in session.partitions.values():  # ids that became known since
                if cached.topic is None:
                    cached.topic = names(cached.topic_id)
                    renamed = renamed or cached.topic is not None
        if watch is not None and (added or removed or renamed):
            watch.close()
            session.watch = None
        return IncrementalFetch(session)

    # -- the cache ----------------------------------------------------------------------------

    def maybe_create(self, now_ms: int, privileged: bool, size: int, uses_topic_ids: bool,
                     partitions: Callable[[], dict[Key, CachedPartition]]) -> int:
        """A new session's id, or INVALID_SESSION_ID when the cache is full and nothing in it
        may give way (`partitions` is only called when a session is created)."""
        if len(self._sessions) >= self.max_entries and not self._try_evict(
                privileged, size, now_ms):
            return INVALID_SESSION_ID
        session = FetchSession(self.new_session_id(), privileged, partitions(), uses_topic_ids,
                               now_ms)
        self._sessions[session.id] = session
        self.touch(session, now_ms)
        return session.id

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        # Linear scans: this runs only when the cache is full and a full fetch asks for a new
        # session; lookups and touches (every incremental fetch) stay O(1).
        if not self._sessions:
            return False
        stale = min(self._sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stale.last_used_ms > self.eviction_ms:
            self._evict(stale)
            return True
        candidates = [s for s in self._sessions.values()
                      if (s.evictable_by_privileged if privileged else s.evictable_by_all)]
        if not candidates:
            return False
        weakest = min(candidates, key=lambda s: (s.privileged, s.cached_size, s.id))
        if (privileged, size, 0) < (weakest.privileged, weakest.cached_size, weakest.id):
            return False
        self._evict(weakest)
        return True

    def _evict(self, session: FetchSession) -> None:
        self.remove(session)
        self.evictions += 1

    def remove(self, session: int | FetchSession) -> FetchSession | None:
        sid = session if isinstance(session, int) else session.id
        removed = self._sessions.pop(sid, None)
        if removed is not None:
            self.total_partitions -= removed.cached_size
            removed.cached_size = -1
            if removed.watch is not None:  # a fetch parked on it re-checks, on its own watch
                removed.watch.fire()
                removed.watch.close()
                removed.watch = None
        return removed

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """The session was used at `now_ms`: its recency, size and evictability as of now."""
        session.last_used_ms = now_ms
        if session.cached_size != -1:
            self.total_partitions -= session.cached_size
        session.cached_size = len(session.partitions)
        self.total_partitions += session.cached_size
        aged = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = aged or not session.privileged
        session.evictable_by_all = aged
