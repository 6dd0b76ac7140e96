"""Producer state: Kafka's validation table, duplicates, transactions and the LSO, snapshots,
and the rebuild after clean and unclean restarts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from storage_testutil import abandon

from odradek.broker.storage import files
from odradek.broker.storage.log import PartitionLog
from odradek.broker.storage.producer_state import (
    BatchInfo,
    CoordinatorFencedError,
    CorruptSnapshotError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    Origin,
    OutOfOrderSequenceError,
    ProducerStateEntry,
    ProducerStateManager,
    decode_snapshot,
    decrement_sequence,
    encode_snapshot,
    read_snapshot,
)
from odradek.broker.storage.txn_index import AbortedTxn
from odradek.config import LogConfig
from odradek.wire._generated.internal import ProducerSnapshot
from odradek.wire.records import CONTROL_ABORT, CONTROL_COMMIT, build_batch, build_control_batch

INT32_MAX = 2**31 - 1
PID = 7


def data(base: int, count: int, *, seq: int, epoch: int = 0, pid: int = PID, txn: bool = False,
         ts: int = 1_000) -> BatchInfo:
    return BatchInfo(base, base + count - 1, pid, epoch, seq, ts, txn, None, False)


def marker(base: int, *, commit: bool, epoch: int = 0, pid: int = PID,
           coordinator_epoch: int = 0) -> BatchInfo:
    kind = CONTROL_COMMIT if commit else CONTROL_ABORT
    return BatchInfo(base, base, pid, epoch, -1, 2_000, True, (kind, coordinator_epoch), True)


def state(tmp_path: Path) -> ProducerStateManager:
    return ProducerStateManager(tmp_path)


def push(ps: ProducerStateManager, *infos: BatchInfo, origin: Origin = Origin.CLIENT) -> None:
    prepared = ps.prepare(list(infos), origin)
    assert prepared.duplicate is None
    for txn in ps.apply(prepared):
        ps.complete_txn(txn)


# -- the validation table -----------------------------------------------------------------


def test_unknown_producer_may_start_at_any_sequence(tmp_path: Path) -> None:
    # KIP-360 / Kafka 2.5+: no UNKNOWN_PRODUCER_ID; the producer's first batch sets the state.
    ps = state(tmp_path)
    push(ps, data(0, 3, seq=42))
    assert ps.producers[PID].last_seq == 44


def test_in_sequence_and_out_of_order(tmp_path: Path) -> None:
    ps = state(tmp_path)
    push(ps, data(0, 3, seq=0))
    push(ps, data(3, 2, seq=3))
    with pytest.raises(OutOfOrderSequenceError, match="Out of order sequence number"):
        ps.prepare([data(5, 1, seq=6)], Origin.CLIENT)  # a gap
    with pytest.raises(OutOfOrderSequenceError):
        ps.prepare([data(5, 1, seq=2)], Origin.CLIENT)  # behind, and no duplicate
    push(ps, data(5, 1, seq=5))


def test_duplicates_of_the_last_five_batches_get_their_original_offsets(tmp_path: Path) -> None:
    ps = state(tmp_path)
    offset = seq = 0
    for size in (1, 2, 3, 4, 5, 6):
        push(ps, data(offset, size, seq=seq))
        offset, seq = offset + size, seq + size
    # batch 1 (seq 0) fell out of the window of 5; batches 2..6 are remembered
    with pytest.raises(OutOfOrderSequenceError):
        ps.prepare([data(100, 1, seq=0)], Origin.CLIENT)
    prepared = ps.prepare([data(100, 3, seq=3)], Origin.CLIENT)
    assert prepared.duplicate is not None
    assert (prepared.duplicate.first_offset, prepared.duplicate.last_offset) == (3, 5)
    # same sequences under another epoch are not a duplicate
    assert ps.prepare([data(100, 3, seq=0, epoch=1)], Origin.CLIENT).duplicate is None
    # only client appends are answered as duplicates
    assert ps.prepare([data(100, 3, seq=3)], Origin.COORDINATOR).duplicate is None


def test_older_epoch_is_invalid_producer_epoch_not_out_of_order(tmp_path: Path) -> None:
    ps = state(tmp_path)
    push(ps, data(0, 1, seq=0, epoch=3))
    with pytest.raises(InvalidProducerEpochError, match="smaller than the last seen epoch 3"):
        ps.prepare([data(1, 1, seq=1, epoch=2)], Origin.CLIENT)
    with pytest.raises(InvalidProducerEpochError):  # markers too
        ps.prepare([marker(1, commit=True, epoch=2)], Origin.COORDINATOR)


def test_epoch_bump_restarts_sequences_at_zero(tmp_path: Path) -> None:
    ps = state(tmp_path)
    push(ps, data(0, 5, seq=0, epoch=0))
    with pytest.raises(OutOfOrderSequenceError, match="new epoch"):
        ps.prepare([data(5, 1, seq=5, epoch=1)], Origin.CLIENT)
    push(ps, data(5, 1, seq=0, epoch=1))
    assert ps.producers[PID].producer_epoch == 1
    assert len(ps.producers[PID].batches) == 1  # the old epoch's batches are forgotten


def test_sequence_wraps_after_int32_max(tmp_path: Path) -> None:
    ps = state(tmp_path)
    push(ps, data(0, 2, seq=INT32_MAX - 1))
    assert ps.producers[PID].last_seq == INT32_MAX
    push(ps, data(2, 3, seq=0))
    # a batch that itself wraps: sequences MAX-1, MAX, 0
    info = data(10, 3, seq=INT32_MAX - 1, pid=8)
    assert info.last_sequence == 0
    assert decrement_sequence(0, 2) == INT32_MAX - 1


def test_non_transactional_write_inside_a_transaction(tmp_path: Path) -> None:
    ps = state(tmp_path)
    push(ps, data(0, 2, seq=0, txn=True))
    with pytest.raises(InvalidTxnStateError):
        ps.prepare([data(2, 1, seq=2)], Origin.CLIENT)


def test_marker_from_a_fenced_coordinator(tmp_path: Path) -> None:
    ps = state(tmp_path)
    push(ps, data(0, 1, seq=0, txn=True))
    push(ps, marker(1, commit=True, coordinator_epoch=5), origin=Origin.COORDINATOR)
    with pytest.raises(CoordinatorFencedError):
        ps.prepare([marker(2, commit=True, coordinator_epoch=4)], Origin.COORDINATOR)


def test_coordinator_appends_skip_sequence_checks(tmp_path: Path) -> None:
    # transactional offset commits carry no sequence numbers
    ps = state(tmp_path)
    push(ps, data(0, 1, seq=-1, txn=True), origin=Origin.COORDINATOR)
    push(ps, data(1, 1, seq=-1, txn=True), origin=Origin.COORDINATOR)
    assert ps.first_unstable_offset() == 0


def test_transactions_and_the_first_unstable_offset(tmp_path: Path) -> None:
    ps = state(tmp_path)
    push(ps, data(0, 2, seq=0, pid=1, txn=True))
    push(ps, data(2, 2, seq=0, pid=2, txn=True))
    push(ps, data(4, 2, seq=2, pid=1, txn=True))
    assert ps.first_unstable_offset() == 0
    assert ps.ongoing_transactions() == [(0, 1), (2, 2)]
    prepared = ps.prepare([marker(6, commit=False, pid=1)], Origin.COORDINATOR)
    (done,) = ps.apply(prepared)
    assert (done.producer_id, done.first_offset, done.last_offset, done.is_aborted) == (1, 0, 6, True)
    assert ps.last_stable_offset_after(done) == 2  # producer 2 still open at 2
    ps.complete_txn(done)
    assert ps.first_unstable_offset() == 2
    (done2,) = ps.apply(ps.prepare([marker(7, commit=True, pid=2)], Origin.COORDINATOR))
    assert ps.last_stable_offset_after(done2) == 8
    ps.complete_txn(done2)
    assert ps.first_unstable_offset() is None
    # a marker for a producer with nothing open on this partition completes nothing
    assert ps.apply(ps.prepare([marker(8, commit=True, pid=3)], Origin.COORDINATOR)) == []


def test_expiration_keeps_producers_with_open_transactions(tmp_path: Path) -> None:
    ps = state(tmp_path)
    push(ps, data(0, 1, seq=0, pid=1, ts=1_000))
    push(ps, data(1, 1, seq=0, pid=2, ts=1_000, txn=True))
    push(ps, data(2, 1, seq=0, pid=3, ts=50_000))
    assert ps.remove_expired(now_ms=60_000, expiration_ms=30_000) == 1
    assert sorted(ps.producers) == [2, 3]


# -- snapshots ------------------------------------------------------------------------------


def test_snapshot_round_trip_in_kafkas_layout(tmp_path: Path) -> None:
    entries = [
        ProducerStateEntry(1, 3, 2, 5_000, None),
        ProducerStateEntry(2, 0, -1, 6_000, 40),
    ]
    entries[0].add_batch(3, 19, 120, 9, 5_000)
    raw = encode_snapshot(entries)
    assert raw[:2] == b"\x00\x01"  # version 1
    back = decode_snapshot(raw)
    assert [(e.producer_id, e.producer_epoch, e.coordinator_epoch, e.last_timestamp,
             e.current_txn_first_offset, list(e.batches)) for e in back] == [
        (1, 3, 2, 5_000, None, list(entries[0].batches)),
        (2, 0, -1, 6_000, 40, []),
    ]
    # the generated ProducerSnapshot (Kafka's JSON spec) reads the same bytes after the version
    snap, end = ProducerSnapshot.decode(memoryview(raw), 1, 2)
    assert end == len(raw)
    assert [(p.producer_id, p.last_sequence, p.last_offset, p.offset_delta,
             p.current_txn_first_offset) for p in snap.producer_entries] == [
        (1, 19, 120, 9, -1), (2, -1, -1, 0, 40)]
    import crc32c
    assert snap.crc == crc32c.crc32c(raw[6:])


@pytest.mark.parametrize("cut", [0, 1, 5, 9, 20])
def test_corrupt_snapshots_are_refused(tmp_path: Path, cut: int) -> None:
    entry = ProducerStateEntry(1, 0, -1, 5, None)
    entry.add_batch(0, 0, 0, 0, 5)
    raw = bytearray(encode_snapshot([entry]))
    path = tmp_path / "x.snapshot"
    path.write_bytes(bytes(raw[:cut]))
    with pytest.raises(CorruptSnapshotError):
        read_snapshot(path)
    raw[-1] ^= 1
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptSnapshotError, match="CRC"):
        read_snapshot(path)


# -- through the partition log --------------------------------------------------------------


def open_log(directory: Path, *, segment_bytes: int = 10_000, had_clean_shutdown: bool = False,
             recovery_point: int = 0) -> PartitionLog:
    config = LogConfig.from_overrides({"internal.segment.bytes": str(segment_bytes)})
    return PartitionLog.open(directory / "t-0", config, now_ms=1_000,
                             had_clean_shutdown=had_clean_shutdown, recovery_point=recovery_point)


def produce(log: PartitionLog, seq: int, n: int = 2, *, epoch: int = 0, pid: int = PID,
            txn: bool = False) -> tuple[int, int, bool]:
    raw = build_batch([(b"k", b"v%d" % (seq + i)) for i in range(n)], base_timestamp=1_000,
                      producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                      is_transactional=txn)
    info = log.append(memoryview(bytearray(raw)), leader_epoch=0, now_ms=1_000)
    return info.first_offset, info.last_offset, info.duplicate


def end_txn(log: PartitionLog, *, commit: bool, epoch: int = 0, pid: int = PID) -> int:
    raw = build_control_batch(commit=commit, producer_id=pid, producer_epoch=epoch,
                              coordinator_epoch=0, timestamp_ms=2_000)
    return log.append(memoryview(bytearray(raw)), leader_epoch=0, now_ms=1_000,
                      origin=Origin.COORDINATOR).first_offset


def test_log_answers_a_retry_with_the_original_offsets(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    assert produce(log, 0) == (0, 1, False)
    assert produce(log, 2) == (2, 3, False)
    assert produce(log, 0) == (0, 1, True)
    assert log.log_end_offset == 4  # no second copy
    with pytest.raises(OutOfOrderSequenceError):
        produce(log, 7)
    log.close()


def test_log_tracks_the_lso_and_indexes_aborts(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    produce(log, 0, pid=1)  # 0-1, idempotent only
    produce(log, 0, pid=2, txn=True)  # 2-3
    produce(log, 0, pid=3, txn=True)  # 4-5
    assert log.last_stable_offset == 2
    assert end_txn(log, commit=False, pid=2) == 6
    assert log.last_stable_offset == 4
    assert log.collect_aborted_txns(0, 100) == [AbortedTxn(2, 2, 6, 4)]
    end_txn(log, commit=True, pid=3)
    assert log.last_stable_offset == log.high_watermark == 8
    log.close()


@pytest.mark.parametrize("clean", [True, False])
def test_restart_rebuilds_state_open_transactions_and_missing_abort_entries(
        tmp_path: Path, clean: bool) -> None:
    log = open_log(tmp_path, segment_bytes=300)
    for i in range(10):  # several segments, so snapshots at rolls
        produce(log, 2 * i, pid=1)
    produce(log, 0, pid=2, txn=True)
    produce(log, 0, pid=3, txn=True)
    first_open = log.last_stable_offset
    abort_at = end_txn(log, commit=False, pid=3)
    assert len(log.segments) > 2
    assert log.producer_state.snapshot_offsets  # written at rolls
    if clean:
        log.close()
        assert log.producer_state.snapshot_offsets[-1] == log.log_end_offset
    else:
        abandon(log)
        # simulate the crash window between the ABORT marker and its index entry
        seg = log.segments[-1]
        txnindex = files.txn_index_file(log.directory, seg.base_offset)
        assert txnindex.exists()
        os.truncate(txnindex, 0)
    again = open_log(tmp_path, segment_bytes=300, had_clean_shutdown=clean,
                     recovery_point=0)
    assert again.last_stable_offset == first_open  # pid 2 still open
    assert again.collect_aborted_txns(0, 1000) == [AbortedTxn(3, abort_at - 2, abort_at, first_open)]
    assert produce(again, 18, pid=1)[2] is True  # the last batch is still a known duplicate
    assert produce(again, 20, pid=1)[2] is False
    with pytest.raises(OutOfOrderSequenceError):
        produce(again, 40, pid=1)
    end_txn(again, commit=True, pid=2)
    assert again.last_stable_offset == again.log_end_offset
    again.close()


def test_stale_and_torn_snapshots_are_ignored(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    produce(log, 0)
    produce(log, 2)
    log.close()
    snap = files.snapshot_file(log.directory, 4)
    assert snap.exists()
    # a snapshot beyond the log end (the log lost its tail) and a torn one
    files.snapshot_file(log.directory, 99).write_bytes(snap.read_bytes())
    snap.write_bytes(snap.read_bytes()[:-3])
    again = open_log(tmp_path, had_clean_shutdown=True)
    assert not files.snapshot_file(log.directory, 99).exists()
    assert produce(again, 2)[2] is True  # rebuilt from the log itself
    assert produce(again, 4)[2] is False
    again.close()
