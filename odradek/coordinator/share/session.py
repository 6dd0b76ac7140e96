"""Share sessions of ShareFetch and ShareAcknowledge (Kafka's ShareSessionCache and the
session handling of SharePartitionManager, sans IO).

A share session belongs to one (group, member): the set of share-partitions the member
fetches from and an epoch that both sides advance with each request, so a request lost or
replayed is noticed. Kafka 4.4's rules (ShareRequestMetadata, SharePartitionManager.newContext
and acknowledgeSessionUpdate, KIP-932's session table):

ShareFetch, by ShareSessionEpoch:
- 0 opens a session (a *full* fetch naming every partition): acknowledgements are not allowed
  (INVALID_REQUEST); an existing session of the member is replaced (`FetchContext.replaced`:
  the caller releases the records the old session held); when `group.share.max.share.sessions`
  sessions exist already, SHARE_SESSION_LIMIT_REACHED. The new session is at epoch 1.
- -1 closes it (a *final* fetch): it may carry acknowledgements but no partitions to add or
  forget (INVALID_REQUEST); SHARE_SESSION_NOT_FOUND without a session. The caller acknowledges,
  releases what the member still holds, and calls `remove`.
- 1..2^31-1 continues it: SHARE_SESSION_NOT_FOUND without a session,
  INVALID_SHARE_SESSION_EPOCH unless the epoch is the session's; the partitions are added,
  the forgotten ones dropped, and the epoch moves on (after 2^31-1 comes 1).

ShareAcknowledge: epoch 0 is INVALID_SHARE_SESSION_EPOCH (it cannot open a session);
otherwise SHARE_SESSION_NOT_FOUND without a session; -1 acknowledges and closes (the caller
releases and `remove`s); any other epoch must be the session's (INVALID_SHARE_SESSION_EPOCH)
and advances it.

A session also remembers the connection it was opened on, so the broker can drop the
sessions of a closed connection (`remove_connection`, as Kafka 4.1+ does).

The broker side is `broker/api/share_fetch.py` / `share_acknowledge.py` (parking, responses)
and `coordinator.py` (the cache lives in the share coordinator shard).

Not implemented yet: dropping the session of a member that left the group (its records are
released; the session goes with its connection or its next epoch -1).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from odradek.wire import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT32_MAX = 2**31 - 1

TopicIdPartition = tuple[uuid.UUID, int]


def next_epoch(epoch: int) -> int:
    """Kafka's ShareRequestMetadata.nextEpoch."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == INT32_MAX:
        return 1
    return epoch + 1


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    epoch: int
    partitions: dict[TopicIdPartition, None] = field(default_factory=dict)  # ordered set
    connection_id: str = ""
    created_ms: int = 0
    last_used_ms: int = 0


@dataclass(frozen=True, slots=True)
class FetchContext:
    """What a ShareFetch may go on with (error NONE) or its top-level error."""

    error: ErrorCode
    message: str | None = None
    session: ShareSession | None = None
    full: bool = False  # epoch 0: the answer lists every partition of the session
    final: bool = False  # epoch -1: acknowledge, release and remove the session
    replaced: ShareSession | None = None  # the member's session a new one replaced
    added: tuple[TopicIdPartition, ...] = ()
    removed: tuple[TopicIdPartition, ...] = ()


def _error(error: ErrorCode, message: str) -> FetchContext:
    return FetchContext(error, message)


class ShareSessionCache:
    def __init__(self, max_sessions: int = 2_000) -> None:
        self.max_sessions = max_sessions  # group.share.max.share.sessions
        self.sessions: dict[tuple[str, str], ShareSession] = {}

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.get((group_id, member_id))

    def remove(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)

    def remove_connection(self, connection_id: str) -> list[ShareSession]:
        """Drop the sessions opened on a closed connection (the caller releases their
        records)."""
        gone = [s for s in self.sessions.values() if s.connection_id == connection_id]
        for s in gone:
            del self.sessions[(s.group_id, s.member_id)]
        return gone

    def fetch(self, group_id: str, member_id: str, epoch: int,
              partitions: Iterable[TopicIdPartition], forgotten: Iterable[TopicIdPartition],
              has_acknowledgements: bool, now: int, connection_id: str = "") -> FetchContext:
        """The session a ShareFetch works in, created, continued or about to close."""
        wanted = list(dict.fromkeys(partitions))
        forget = list(dict.fromkeys(forgotten))
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            if has_acknowledgements:
                return _error(ErrorCode.INVALID_REQUEST,
                              "Acknowledge data present in the initial share fetch request.")
            replaced = self.sessions.pop(key, None)
            if len(self.sessions) >= self.max_sessions:
                if replaced is not None:
                    self.sessions[key] = replaced
                return _error(ErrorCode.SHARE_SESSION_LIMIT_REACHED,
                              "The limit of share sessions has been reached.")
            opened = ShareSession(group_id, member_id, next_epoch(INITIAL_EPOCH),
                                  dict.fromkeys(wanted), connection_id, now, now)
            self.sessions[key] = opened
            return FetchContext(ErrorCode.NONE, session=opened, full=True, replaced=replaced,
                                added=tuple(wanted))
        if epoch == FINAL_EPOCH:
            if wanted or forget:
                return _error(ErrorCode.INVALID_REQUEST,
                              "A final share fetch request cannot add or forget partitions.")
            closing = self.sessions.get(key)
            if closing is None:
                return _error(ErrorCode.SHARE_SESSION_NOT_FOUND,
                              "The share session was not found.")
            return FetchContext(ErrorCode.NONE, session=closing, final=True)
        session = self.sessions.get(key)
        if session is None:
            return _error(ErrorCode.SHARE_SESSION_NOT_FOUND, "The share session was not found.")
        if session.epoch != epoch:
            return _error(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                          f"The share session epoch is {session.epoch}, not {epoch}.")
        added = tuple(tp for tp in wanted if tp not in session.partitions)
        session.partitions.update(dict.fromkeys(wanted))
        removed = tuple(tp for tp in forget if tp in session.partitions)
        for tp in removed:
            del session.partitions[tp]
        session.epoch = next_epoch(session.epoch)
        session.last_used_ms = now
        return FetchContext(ErrorCode.NONE, session=session, added=added, removed=removed)

    def acknowledge(self, group_id: str, member_id: str, epoch: int,
                    now: int) -> FetchContext:
        """The session a ShareAcknowledge works in (final: close it after)."""
        if epoch == INITIAL_EPOCH:
            return _error(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                          "A share acknowledge request cannot open a share session.")
        session = self.sessions.get((group_id, member_id))
        if session is None:
            return _error(ErrorCode.SHARE_SESSION_NOT_FOUND, "The share session was not found.")
        if epoch == FINAL_EPOCH:
            return FetchContext(ErrorCode.NONE, session=session, final=True)
        if session.epoch != epoch:
            return _error(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                          f"The share session epoch is {session.epoch}, not {epoch}.")
        session.epoch = next_epoch(session.epoch)
        session.last_used_ms = now
        return FetchContext(ErrorCode.NONE, session=session)
