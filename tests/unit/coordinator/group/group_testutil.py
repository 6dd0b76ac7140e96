"""A fake clock and an in-memory `__consumer_offsets` for driving the sans-IO coordinator."""

from __future__ import annotations

import itertools
import struct
from collections import defaultdict
from dataclasses import dataclass, field

from odradek.coordinator.common import Pending, Write
from odradek.coordinator.group.coordinator import (
    GroupConfig,
    GroupCoordinator,
    JoinRequest,
    SyncRequest,
)
from odradek.coordinator.group.model import JoinResult, SyncResult
from odradek.wire import ErrorCode
from odradek.wire._generated.data import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from odradek.wire.records import RecordBatch, build_batch

START = 1_700_000_000_000


class FakeClock:
    def __init__(self, t: int = START) -> None:
        self.t = t

    def now_ms(self) -> int:
        return self.t


def subscription(*topics: str) -> bytes:
    return struct.pack(">h", 0) + b"".join(ConsumerProtocolSubscription(topics=list(topics)).encode(0))


def assignment(topic: str, *partitions: int) -> bytes:
    a = ConsumerProtocolAssignment(assigned_partitions=[
        ConsumerProtocolAssignment.TopicPartition(topic=topic, partitions=list(partitions))])
    return struct.pack(">h", 0) + b"".join(a.encode(0))


@dataclass
class Harness:
    config: GroupConfig = field(default_factory=GroupConfig)
    clock: FakeClock = field(default_factory=FakeClock)
    hold: bool = False  # leave appends unacknowledged until `release()`
    fail_with: ErrorCode | None = None

    def __post_init__(self) -> None:
        ids = itertools.count(1)
        self.coord = GroupCoordinator(self.config, self.clock, new_uuid=lambda: f"u{next(ids)}")
        # partition -> [(offset, key, value, producer_id, transactional)]
        self.log: dict[int, list[tuple[bytes, bytes | None]]] = defaultdict(list)
        self.held: list[Write] = []

    # -- the runtime's job -------------------------------------------------------------------

    def flush(self) -> None:
        while appends := self.coord.outbox.take():
            for a in appends:
                if self.hold:
                    self.held.append(a)
                else:
                    self._write(a)

    def _write(self, a: Write) -> None:
        if self.fail_with is not None:
            a.on_done(self.fail_with, -1)
            return
        base = len(self.log[a.partition])
        self.log[a.partition].extend(a.records)
        a.on_done(ErrorCode.NONE, base)

    def release(self) -> None:
        held, self.held = self.held, []
        for a in held:
            self._write(a)
        self.flush()

    def advance(self, ms: int) -> None:
        self.clock.t += ms
        self.coord.on_timer(self.clock.t)
        self.flush()

    def replay(self) -> GroupCoordinator:
        """A fresh coordinator loaded from what this one wrote (a broker restart)."""
        coord = GroupCoordinator(self.config, self.clock)
        coord.begin_load()
        for records in self.log.values():
            for offset, rec in enumerate(records):
                raw = build_batch([rec], base_offset=offset, base_timestamp=self.clock.t)
                coord.replay(RecordBatch(raw))
        coord.finish_load()
        return coord

    # -- client calls ------------------------------------------------------------------------

    def join(self, group: str = "g", member_id: str = "", *, instance: str | None = None,
             protocols: list[tuple[str, bytes]] | None = None, session: int = 10_000,
             rebalance: int = 30_000, protocol_type: str = "consumer", client: str = "c",
             require_known: bool = True, skip: bool = False) -> Pending[JoinResult]:
        p = self.coord.join_group(JoinRequest(
            group_id=group, member_id=member_id, protocol_type=protocol_type,
            protocols=protocols if protocols is not None else [("range", subscription("t"))],
            session_timeout_ms=session, rebalance_timeout_ms=rebalance, group_instance_id=instance,
            client_id=client, client_host="/127.0.0.1",
            require_known_member_id=require_known and instance is None,
            support_skip_assignment=skip))
        self.flush()
        return p

    def join_new(self, group: str = "g", **kw: object) -> Pending[JoinResult]:
        """The v4+ round trip: MEMBER_ID_REQUIRED, then the join with the given id."""
        first = self.join(group, **kw).result()  # type: ignore[arg-type]
        assert first.error == ErrorCode.MEMBER_ID_REQUIRED, first
        return self.join(group, first.member_id, **kw)  # type: ignore[arg-type]

    def sync(self, group: str, member_id: str, generation: int,
             assignments: dict[str, bytes] | None = None, *, instance: str | None = None,
             protocol_type: str | None = None, protocol_name: str | None = None,
             ) -> Pending[SyncResult]:
        p = self.coord.sync_group(SyncRequest(group, generation, member_id, instance,
                                              protocol_type, protocol_name, assignments or {}))
        self.flush()
        return p

    def stable_group(self, n: int, group: str = "g", **kw: object) -> list[JoinResult]:
        """n dynamic members that joined together and synced; returns their join results."""
        ids = []
        for _ in range(n):
            r = self.join(group, **kw).result()  # type: ignore[arg-type]
            assert r.error == ErrorCode.MEMBER_ID_REQUIRED
            ids.append(r.member_id)
        pendings = [self.join(group, mid, **kw) for mid in ids]  # type: ignore[arg-type]
        results = [p.result() for p in pendings]
        leader = next(r for r in results if r.members)
        syncs = [self.sync(group, r.member_id, r.generation_id,
                           {m.member_id: assignment("t", i) for i, m in enumerate(leader.members)}
                           if r is leader else None)
                 for r in results]
        assert all(s.done and s.result().error == ErrorCode.NONE for s in syncs)
        return results
