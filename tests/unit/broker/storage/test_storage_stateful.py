"""A hypothesis state machine drives a PartitionLog (append, read, roll, DeleteRecords, clean
restart, crash restart) and checks it against a plain in-memory list of records."""

from __future__ import annotations

import shutil
import tempfile
from itertools import pairwise
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from storage_testutil import abandon, batches_of, verify_segment_files

from odradek.broker.storage.log import PartitionLog
from odradek.config import LogConfig
from odradek.wire.records import build_batch

values = st.binary(min_size=0, max_size=200)
batch_values = st.lists(values, min_size=1, max_size=5)


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="odradek-stateful-"))
        self.directory = self.root / "model-0"
        self.model: list[bytes] = []  # value of offset i
        self.start = 0
        self.clock = 1_000
        self.log: PartitionLog | None = None
        self.config = LogConfig.from_overrides()

    @initialize(
        segment_bytes=st.sampled_from([200, 400, 1000, 1 << 20]),
        interval=st.sampled_from([0, 50, 300, 4096]),
    )
    def open_log(self, segment_bytes: int, interval: int) -> None:
        self.config = LogConfig.from_overrides(
            {"internal.segment.bytes": str(segment_bytes), "index.interval.bytes": str(interval)}
        )
        self.log = PartitionLog.open(self.directory, self.config, now_ms=self.clock)

    @property
    def plog(self) -> PartitionLog:
        assert self.log is not None
        return self.log

    def teardown(self) -> None:
        if self.log is not None and not self.log.closed:
            self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)

    @rule(request=st.lists(batch_values, min_size=1, max_size=3), epoch=st.integers(0, 3))
    def append(self, request: list[list[bytes]], epoch: int) -> None:
        self.clock += 7
        buf = bytearray()
        for vals in request:
            buf += build_batch(
                [(None, v) for v in vals], base_offset=12345, base_timestamp=self.clock
            )
        info = self.plog.append(memoryview(buf), leader_epoch=epoch, now_ms=self.clock)
        assert info.first_offset == len(self.model)
        for vals in request:
            self.model.extend(vals)
        assert info.last_offset == len(self.model) - 1

    @precondition(lambda self: self.log is not None)
    @rule(data=st.data(), max_bytes=st.integers(0, 1500), min_one=st.booleans())
    def read(self, data: st.DataObject, max_bytes: int, min_one: bool) -> None:
        end = len(self.model)
        offset = data.draw(st.integers(self.start, end), label="offset")
        got = self.plog.read(offset, max_bytes, min_one_message=min_one)
        if offset == end:
            assert got == b""
            return
        batches = batches_of(got)
        if min_one:
            assert batches, "min_one_message must return at least one batch"
        if not batches:
            assert not min_one and max_bytes < 200_000
            return
        assert batches[0].base_offset <= offset <= batches[0].last_offset
        if len(batches) > 1 or not min_one:
            assert len(got) <= max(max_bytes, batches[0].size)
        expected = batches[0].base_offset
        for b in batches:
            assert b.base_offset == expected
            assert b.crc_ok()
            for r in b.records():
                o = b.base_offset + r.offset_delta
                if o >= self.start:
                    assert r.value == self.model[o]
            expected = b.last_offset + 1

    @rule()
    def roll(self) -> None:
        self.clock += 1
        self.plog.roll(now_ms=self.clock)

    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        target = data.draw(st.integers(0, len(self.model)), label="delete before")
        assert self.plog.delete_records_before(target) == max(self.start, target)
        self.start = max(self.start, target)

    @rule()
    def clean_restart(self) -> None:
        self.plog.close()
        for segment in self.plog.segments:
            verify_segment_files(self.directory, segment.base_offset)
        self.log = PartitionLog.open(
            self.directory,
            self.config,
            now_ms=self.clock,
            recovery_point=len(self.model),
            log_start_offset=self.start,
            had_clean_shutdown=True,
        )

    @rule(recovery_point=st.integers(0, 10**6))
    def crash_restart(self, recovery_point: int) -> None:
        # Every write completed before the 'kill', so nothing may be lost.
        abandon(self.plog)
        self.log = PartitionLog.open(
            self.directory,
            self.config,
            now_ms=self.clock,
            recovery_point=min(recovery_point, len(self.model)),
            log_start_offset=self.start,
        )

    @invariant()
    def offsets_agree(self) -> None:
        if self.log is None:
            return
        assert self.plog.log_end_offset == len(self.model)
        assert self.plog.high_watermark == len(self.model)
        assert self.plog.log_start_offset == self.start
        segments = self.plog.segments
        assert segments[0].base_offset <= self.start
        for prev, nxt in pairwise(segments):
            assert prev.next_offset == nxt.base_offset
            assert prev.size > 0
        assert segments[-1].next_offset == len(self.model)


LogMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestLogMachine = LogMachine.TestCase
