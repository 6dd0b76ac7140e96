"""Exactly-once handlers on a real Broker (through the codec both ways): InitProducerId,
Produce with producer state, and (below) the transaction APIs."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.coordinator.txn.state import TxnState
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.add_offsets_to_txn import AddOffsetsToTxnRequest
from odradek.wire._generated.add_partitions_to_txn import AddPartitionsToTxnRequest
from odradek.wire._generated.describe_producers import DescribeProducersRequest
from odradek.wire._generated.describe_transactions import (
    DescribeTransactionsRequest,
)
from odradek.wire._generated.end_txn import EndTxnRequest
from odradek.wire._generated.fetch import FetchRequest
from odradek.wire._generated.init_producer_id import InitProducerIdRequest
from odradek.wire._generated.list_offsets import ListOffsetsRequest
from odradek.wire._generated.list_transactions import ListTransactionsRequest
from odradek.wire._generated.offset_fetch import OffsetFetchRequest
from odradek.wire._generated.produce import ProduceRequest
from odradek.wire._generated.txn_offset_commit import TxnOffsetCommitRequest
from odradek.wire.records import build_batch


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path)
    b.cluster.create_topic("t", 2, {})
    yield b
    b.close()


def init_pid(broker: Broker, version: int = 4, txn_id: str | None = None, timeout: int = 60_000,
             pid: int = -1, epoch: int = -1) -> tuple[ErrorCode, int, int]:
    r = call(broker, ApiKey.INIT_PRODUCER_ID, version,
             InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=timeout,
                                   producer_id=pid, producer_epoch=epoch))
    return ErrorCode(r.error_code), r.producer_id, r.producer_epoch


def produce(broker: Broker, pid: int, epoch: int, seq: int, n: int = 1, *, partition: int = 0,
            txn_id: str | None = None, version: int = 9) -> tuple[ErrorCode, int]:
    raw = build_batch([(None, b"v%d" % (seq + i)) for i in range(n)], producer_id=pid,
                      producer_epoch=epoch, base_sequence=seq,
                      is_transactional=txn_id is not None)
    P = ProduceRequest
    r = call(broker, ApiKey.PRODUCE, version, P(
        transactional_id=txn_id, acks=-1, timeout_ms=1000, topic_data=[P.TopicProduceData(
            name="t", partition_data=[P.PartitionProduceData(index=partition, records=raw)])]))
    part = r.responses[0].partition_responses[0]
    return ErrorCode(part.error_code), part.base_offset


@pytest.mark.parametrize("version", range(6))
def test_idempotent_producers_get_a_new_id_on_every_call(broker: Broker, version: int) -> None:
    first = init_pid(broker, version)
    second = init_pid(broker, version)
    assert first[0] == second[0] == ErrorCode.NONE
    assert first[2] == second[2] == 0
    assert second[1] > first[1] >= 0


def test_producer_ids_survive_a_restart(tmp_path: Path) -> None:
    b = open_broker(tmp_path)
    seen = {init_pid(b)[1] for _ in range(3)}
    b.close()
    b = open_broker(tmp_path)
    try:
        again = init_pid(b)[1]
        assert again not in seen and again > max(seen)
    finally:
        b.close()


def test_init_producer_id_needs_both_or_neither_of_id_and_epoch(broker: Broker) -> None:
    assert init_pid(broker, 4, pid=5)[0] == ErrorCode.INVALID_REQUEST
    assert init_pid(broker, 4, epoch=5)[0] == ErrorCode.INVALID_REQUEST


def test_produce_retries_get_the_original_offsets_and_epoch_errors(broker: Broker) -> None:
    _, pid, epoch = init_pid(broker)
    assert produce(broker, pid, epoch, 0, 3) == (ErrorCode.NONE, 0)
    assert produce(broker, pid, epoch, 3, 2) == (ErrorCode.NONE, 3)
    assert produce(broker, pid, epoch, 0, 3) == (ErrorCode.NONE, 0)  # a retry: no second copy
    assert produce(broker, pid, epoch, 9, 1)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(broker, pid, epoch + 1, 0, 1) == (ErrorCode.NONE, 5)  # a bumped epoch
    assert produce(broker, pid, epoch, 5, 1)[0] == ErrorCode.INVALID_PRODUCER_EPOCH
    plog = broker.partitions.log("t", 0)
    assert plog is not None and plog.log_end_offset == 6


# -- transactions through the handlers ------------------------------------------------------

APT = AddPartitionsToTxnRequest


def add_partitions(broker: Broker, txn_id: str, pid: int, epoch: int,
                   parts: list[tuple[str, int]], version: int = 3) -> dict[tuple[str, int], int]:
    topics: dict[str, list[int]] = {}
    for t, p in parts:
        topics.setdefault(t, []).append(p)
    r = call(broker, ApiKey.ADD_PARTITIONS_TO_TXN, version, APT(
        v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[APT.AddPartitionsToTxnTopic(name=t, partitions=ps)
                             for t, ps in topics.items()]))
    return {(t.name, p.partition_index): p.partition_error_code
            for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}


def end_txn(broker: Broker, txn_id: str, pid: int, epoch: int, commit: bool,
            version: int = 3) -> ErrorCode:
    r = call(broker, ApiKey.END_TXN, version, EndTxnRequest(
        transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=commit))
    return ErrorCode(r.error_code)


def fetch(broker: Broker, isolation: int, offset: int = 0, version: int = 12) -> object:
    F = FetchRequest
    r = call(broker, ApiKey.FETCH, version, F(
        max_wait_ms=0, min_bytes=0, isolation_level=isolation, topics=[F.FetchTopic(
            topic="t", partitions=[F.FetchPartition(partition=0, fetch_offset=offset,
                                                    partition_max_bytes=1 << 20)])]))
    return r.responses[0].partitions[0]


def begin_txn(broker: Broker, txn_id: str = "tx") -> tuple[int, int]:
    error, pid, epoch = init_pid(broker, txn_id=txn_id)
    assert error == ErrorCode.NONE
    assert add_partitions(broker, txn_id, pid, epoch, [("t", 0)]) == {("t", 0): ErrorCode.NONE}
    return pid, epoch


def test_read_committed_fetch_and_list_offsets_follow_the_lso(broker: Broker) -> None:
    plain_pid = init_pid(broker)[1]
    produce(broker, plain_pid, 0, 0, 2)  # 0-1
    pid, epoch = begin_txn(broker)
    assert produce(broker, pid, epoch, 0, 3, txn_id="tx") == (ErrorCode.NONE, 2)  # 2-4
    produce(broker, plain_pid, 0, 2, 1)  # 5
    part = fetch(broker, 1)
    assert (part.high_watermark, part.last_stable_offset) == (6, 2)  # type: ignore[attr-defined]
    LO = ListOffsetsRequest
    for isolation, want in ((0, 6), (1, 2)):
        r = call(broker, ApiKey.LIST_OFFSETS, 5, LO(replica_id=-1, isolation_level=isolation,
                 topics=[LO.ListOffsetsTopic(name="t", partitions=[
                     LO.ListOffsetsPartition(partition_index=0, timestamp=-1)])]))
        assert r.topics[0].partitions[0].offset == want
    assert end_txn(broker, "tx", pid, epoch, commit=False) == ErrorCode.NONE  # marker at 6
    part = fetch(broker, 1)
    assert part.last_stable_offset == 7  # type: ignore[attr-defined]
    assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [  # type: ignore[attr-defined]
        (pid, 2)]
    assert fetch(broker, 0).aborted_transactions is None  # type: ignore[attr-defined]
    # a fetch starting after the aborted range lists nothing
    assert fetch(broker, 1, offset=7).aborted_transactions == []  # type: ignore[attr-defined]


def test_aborted_transactions_are_sorted_by_first_offset(broker: Broker) -> None:
    a, ea = begin_txn(broker, "a")
    b, eb = begin_txn(broker, "b")
    produce(broker, b, eb, 0, 1, txn_id="b")  # 0
    produce(broker, a, ea, 0, 1, txn_id="a")  # 1
    end_txn(broker, "a", a, ea, commit=False)  # marker 2: indexed first
    end_txn(broker, "b", b, eb, commit=False)  # marker 3
    part = fetch(broker, 1)
    assert [(x.producer_id, x.first_offset) for x in part.aborted_transactions] == [  # type: ignore[attr-defined]
        (b, 0), (a, 1)]


@pytest.mark.parametrize(("version", "code"), [
    (9, ErrorCode.INVALID_TXN_STATE), (11, ErrorCode.TRANSACTION_ABORTABLE)])
def test_transactional_produce_to_a_partition_not_in_the_transaction(
        broker: Broker, version: int, code: ErrorCode) -> None:
    pid, epoch = begin_txn(broker)
    assert produce(broker, pid, epoch, 0, 1, partition=1, txn_id="tx",
                   version=version)[0] == code
    # a stale epoch is an epoch error, not a verification failure
    assert produce(broker, pid, epoch - 1 if epoch else epoch + 5, 0, 1, txn_id="tx",
                   version=version)[0] == ErrorCode.INVALID_PRODUCER_EPOCH
    assert produce(broker, pid, epoch, 0, 1, txn_id="tx", version=version)[0] == ErrorCode.NONE


@pytest.mark.parametrize(("version", "code"), [(3, ErrorCode.INVALID_PRODUCER_EPOCH),
                                               (4, ErrorCode.PRODUCER_FENCED)])
def test_init_fenced_code_per_version(broker: Broker, version: int, code: ErrorCode) -> None:
    _, pid, epoch = init_pid(broker, txn_id="tx")
    assert init_pid(broker, version, txn_id="tx", pid=pid, epoch=epoch + 3)[0] == code


def test_fenced_code_per_version_for_add_and_end(broker: Broker) -> None:
    _, pid, epoch = init_pid(broker, txn_id="tx")
    init_pid(broker, txn_id="tx")  # bump: the first instance is fenced
    assert add_partitions(broker, "tx", pid, epoch, [("t", 0)], version=1) == {
        ("t", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
    assert add_partitions(broker, "tx", pid, epoch, [("t", 0)], version=2) == {
        ("t", 0): ErrorCode.PRODUCER_FENCED}
    assert end_txn(broker, "tx", pid, epoch, True, version=1) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert end_txn(broker, "tx", pid, epoch, True, version=2) == ErrorCode.PRODUCER_FENCED


def test_add_partitions_refuses_unknown_and_internal_partitions(broker: Broker) -> None:
    _, pid, epoch = init_pid(broker, txn_id="tx")
    assert add_partitions(broker, "tx", pid, epoch, [("t", 0), ("t", 9)]) == {
        ("t", 0): ErrorCode.OPERATION_NOT_ATTEMPTED, ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    broker.cluster.create_topic("__consumer_offsets", 1, {})
    assert add_partitions(broker, "tx", pid, epoch, [("__consumer_offsets", 0)]) == {
        ("__consumer_offsets", 0): ErrorCode.TOPIC_AUTHORIZATION_FAILED}


def test_add_partitions_v4_batches_and_verifies(broker: Broker) -> None:
    pid, epoch = begin_txn(broker)
    r = call(broker, ApiKey.ADD_PARTITIONS_TO_TXN, 4, APT(transactions=[
        APT.AddPartitionsToTxnTransaction(
            transactional_id="tx", producer_id=pid, producer_epoch=epoch, verify_only=True,
            topics=[APT.AddPartitionsToTxnTopic(name="t", partitions=[0, 1])]),
        APT.AddPartitionsToTxnTransaction(
            transactional_id="nope", producer_id=1, producer_epoch=0, verify_only=False,
            topics=[APT.AddPartitionsToTxnTopic(name="t", partitions=[1])])]))
    got = {(x.transactional_id, p.partition_index): p.partition_error_code
           for x in r.results_by_transaction for t in x.topic_results
           for p in t.results_by_partition}
    assert got == {("tx", 0): ErrorCode.NONE, ("tx", 1): ErrorCode.TRANSACTION_ABORTABLE,
                   ("nope", 1): ErrorCode.INVALID_PRODUCER_ID_MAPPING}


def offsets_of(broker: Broker, group: str, stable: bool) -> dict[int, tuple[int, int]]:
    OF = OffsetFetchRequest
    r = call(broker, ApiKey.OFFSET_FETCH, 7, OF(group_id=group, require_stable=stable, topics=[
        OF.OffsetFetchRequestTopic(name="t", partition_indexes=[0, 1])]))
    return {p.partition_index: (p.committed_offset, p.error_code)
            for t in r.topics for p in t.partitions}


def txn_commit_offsets(broker: Broker, txn_id: str, pid: int, epoch: int, group: str,
                       offset: int, version: int = 3) -> ErrorCode:
    T = TxnOffsetCommitRequest
    r = call(broker, ApiKey.TXN_OFFSET_COMMIT, version, T(
        transactional_id=txn_id, group_id=group, producer_id=pid, producer_epoch=epoch,
        topics=[T.TxnOffsetCommitRequestTopic(name="t", partitions=[
            T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])]))
    return ErrorCode(r.topics[0].partitions[0].error_code)


def test_transactional_offsets_are_invisible_until_committed(broker: Broker) -> None:
    pid, epoch = begin_txn(broker)
    # TxnOffsetCommit before AddOffsetsToTxn: the offsets partition is not in the transaction
    assert txn_commit_offsets(broker, "tx", pid, epoch, "g", 5) == ErrorCode.INVALID_TXN_STATE
    assert txn_commit_offsets(broker, "tx", pid, epoch, "g", 5,
                              version=4) == ErrorCode.TRANSACTION_ABORTABLE
    r = call(broker, ApiKey.ADD_OFFSETS_TO_TXN, 3, AddOffsetsToTxnRequest(
        transactional_id="tx", producer_id=pid, producer_epoch=epoch, group_id="g"))
    assert r.error_code == ErrorCode.NONE
    assert txn_commit_offsets(broker, "tx", pid, epoch, "g", 5) == ErrorCode.NONE
    assert txn_commit_offsets(broker, "tx", pid, epoch, "g", 6) == ErrorCode.NONE  # twice
    assert offsets_of(broker, "g", stable=False)[0] == (-1, ErrorCode.NONE)
    assert offsets_of(broker, "g", stable=True)[0] == (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)
    assert end_txn(broker, "tx", pid, epoch, commit=True) == ErrorCode.NONE
    assert offsets_of(broker, "g", stable=True)[0] == (6, ErrorCode.NONE)
    # the next transaction's offsets are aborted: the committed ones stay
    r = call(broker, ApiKey.ADD_OFFSETS_TO_TXN, 3, AddOffsetsToTxnRequest(
        transactional_id="tx", producer_id=pid, producer_epoch=epoch, group_id="g"))
    assert txn_commit_offsets(broker, "tx", pid, epoch, "g", 9) == ErrorCode.NONE
    assert end_txn(broker, "tx", pid, epoch, commit=False) == ErrorCode.NONE
    assert offsets_of(broker, "g", stable=True)[0] == (6, ErrorCode.NONE)
    # a fenced producer gets an error answer
    init_pid(broker, txn_id="tx")
    assert txn_commit_offsets(broker, "tx", pid, epoch, "g", 10) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_describe_producers_transactions_and_list(broker: Broker) -> None:
    pid, epoch = begin_txn(broker)
    produce(broker, pid, epoch, 0, 3, txn_id="tx")
    D = DescribeProducersRequest
    r = call(broker, ApiKey.DESCRIBE_PRODUCERS, 0, D(topics=[
        D.TopicRequest(name="t", partition_indexes=[0, 1, 7])]))
    parts = {p.partition_index: p for p in r.topics[0].partitions}
    [state] = parts[0].active_producers
    assert (state.producer_id, state.producer_epoch, state.last_sequence,
            state.current_txn_start_offset) == (pid, epoch, 2, 0)
    assert parts[1].active_producers == []
    assert parts[7].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    r = call(broker, ApiKey.DESCRIBE_TRANSACTIONS, 0,
             DescribeTransactionsRequest(transactional_ids=["tx", "missing"]))
    tx, missing = r.transaction_states
    assert (tx.error_code, tx.transaction_state, tx.producer_id, tx.producer_epoch) == (
        ErrorCode.NONE, "Ongoing", pid, epoch)
    assert [(t.topic, t.partitions) for t in tx.topics] == [("t", [0])]
    assert missing.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    for version in (0, 1):
        r = call(broker, ApiKey.LIST_TRANSACTIONS, version,
                 ListTransactionsRequest(state_filters=["Ongoing", "Weird"]))
        assert r.unknown_state_filters == ["Weird"]
        assert [(s.transactional_id, s.producer_id, s.transaction_state)
                for s in r.transaction_states] == [("tx", pid, "Ongoing")]


TXN_IDS = ["txn-a", "txn-b", "xtxn-c", "TXN-d", "txn.e", "a\nb"]


@pytest.mark.parametrize(("pattern", "expected"), [
    (None, TXN_IDS), ("", TXN_IDS),
    ("txn-.*", ["txn-a", "txn-b"]),  # a whole-id match: not "xtxn-c", and "." is one character
    ("txn", []), ("^txn", []), ("x*", []), ("\\btxn", []),
    ("txn-a|xtxn-c", ["txn-a", "xtxn-c"]),
    (".*b$", ["txn-b"]),  # "." does not match a newline ...
    ("(?s)a.b", ["a\nb"]),  # ... unless asked to
    ("(?i)txn-d", ["TXN-d"]),
    ("txn-[[:alpha:]]", ["txn-a", "txn-b"]),  # RE2/J's POSIX classes, not java.util.regex's
    ("\\p{L}xn-a", ["txn-a"]), ("(?<n>txn)-a", ["txn-a"]), ("txn-\\w", ["txn-a", "txn-b"]),
])
def test_list_transactions_v2_filters_by_a_whole_id_re2j_pattern(
        broker: Broker, pattern: str | None, expected: list[str]) -> None:
    # the answers of a Kafka 4.4.0 broker to the same ids and patterns (probe_versions.py)
    for txn_id in TXN_IDS:
        assert init_pid(broker, 5, txn_id)[0] == ErrorCode.NONE
    r = call(broker, ApiKey.LIST_TRANSACTIONS, 2,
             ListTransactionsRequest(transactional_id_pattern=pattern))
    assert r.error_code == ErrorCode.NONE
    assert sorted(s.transactional_id for s in r.transaction_states) == sorted(expected)


@pytest.mark.parametrize("pattern", ["[", "txn-a++", "(txn)\\1"])
def test_list_transactions_v2_refuses_what_re2j_refuses(broker: Broker, pattern: str) -> None:
    assert init_pid(broker, 5, "txn-a")[0] == ErrorCode.NONE
    r = call(broker, ApiKey.LIST_TRANSACTIONS, 2,
             ListTransactionsRequest(transactional_id_pattern=pattern))
    assert (r.error_code, r.transaction_states) == (ErrorCode.INVALID_REGULAR_EXPRESSION, [])
    # below v2 the pattern is not on the wire: everything is listed
    old = call(broker, ApiKey.LIST_TRANSACTIONS, 1,
               ListTransactionsRequest(transactional_id_pattern=pattern))
    assert [s.transactional_id for s in old.transaction_states] == ["txn-a"]


def test_a_transaction_caught_in_prepare_commit_completes_after_restart(tmp_path: Path) -> None:
    b = open_broker(tmp_path)
    b.cluster.create_topic("t", 2, {})
    pid, epoch = begin_txn(b)
    produce(b, pid, epoch, 0, 2, txn_id="tx")
    # the process "dies" after PrepareCommit is durable, before any marker is written
    append = b.partitions.append_internal

    def no_markers_on_t(topic: str, partition: int, batch: memoryview, now_ms: int,
                        transaction_version: int = 0) -> Any:
        if topic == "t":
            raise OSError("the process died")
        return append(topic, partition, batch, now_ms, transaction_version)

    b.partitions.append_internal = no_markers_on_t  # type: ignore[method-assign]
    assert end_txn(b, "tx", pid, epoch, commit=True) == ErrorCode.NONE
    assert b.transactions.shard.txns["tx"].state is TxnState.PREPARE_COMMIT
    plog = b.partitions.log("t", 0)
    assert plog is not None and plog.last_stable_offset == 0
    b.close()
    b = open_broker(tmp_path)
    try:
        plog = b.partitions.log("t", 0)
        assert plog is not None and plog.last_stable_offset == 0  # still open on disk
        anyio.run(b.transactions.ready)
        assert b.transactions.shard.txns["tx"].state is TxnState.PREPARE_COMMIT
        b.transactions.fire_timers()  # the first timer after loading completes it
        assert b.transactions.shard.txns["tx"].state is TxnState.COMPLETE_COMMIT
        assert plog.last_stable_offset == plog.log_end_offset == 3  # 2 records + COMMIT
        assert fetch(b, 1).aborted_transactions == []  # type: ignore[attr-defined]
    finally:
        b.close()


def test_the_timer_aborts_timed_out_transactions_and_expires_ids_and_producers(
        tmp_path: Path) -> None:
    b = open_broker(tmp_path, **{"producer.id.expiration.ms": "60000",
                                 "transaction.abort.timed.out.transaction.cleanup.interval.ms":
                                 "1000",
                                 "producer.id.expiration.check.interval.ms": "1000",
                                 "transactional.id.expiration.ms": "120000",
                                 "transaction.remove.expired.transaction.cleanup.interval.ms":
                                 "1000"})
    try:
        b.cluster.create_topic("t", 1, {})
        clock = [b.now_ms()]
        b.now_ms = lambda: clock[0]  # type: ignore[method-assign]
        _, pid, epoch = init_pid(b, txn_id="tx", timeout=5_000)
        add_partitions(b, "tx", pid, epoch, [("t", 0)])
        produce(b, pid, epoch, 0, 2, txn_id="tx")
        plog = b.partitions.log("t", 0)
        assert plog is not None
        shell = b.transactions

        def tick(now: int) -> None:  # one round of the coordinator's and the broker's timers
            shell.fire_timers(now)
            b.expire_producers(now)

        tick(clock[0])
        assert plog.last_stable_offset == 0
        clock[0] += 5_001
        tick(clock[0])
        assert plog.last_stable_offset == 3  # the ABORT marker at 2
        assert [(a.producer_id, a.first_offset) for a in fetch(b, 1).aborted_transactions] == [  # type: ignore[attr-defined]
            (pid, 0)]
        assert end_txn(b, "tx", pid, epoch, commit=True) == ErrorCode.PRODUCER_FENCED
        # idle producers leave the partition's state, idle transactional ids the coordinator
        assert pid in plog.producer_state.producers
        clock[0] += 60_000 + 1_000
        tick(clock[0])
        assert pid not in plog.producer_state.producers
        assert "tx" in shell.shard.txns
        clock[0] += 120_000
        tick(clock[0])
        assert "tx" not in shell.shard.txns
    finally:
        b.close()


# -- transactions v2 (KIP-890 part 2): Produce v12+, EndTxn v5, TxnOffsetCommit v5+ ----------


def end_txn_v5(broker: Broker, txn_id: str, pid: int, epoch: int, commit: bool
               ) -> tuple[ErrorCode, int, int]:
    r = call(broker, ApiKey.END_TXN, 5, EndTxnRequest(
        transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=commit))
    return ErrorCode(r.error_code), r.producer_id, r.producer_epoch


def test_v2_produce_adds_the_partition_and_end_txn_v5_bumps_the_epoch(broker: Broker) -> None:
    error, pid, epoch = init_pid(broker, 5, txn_id="tx")
    assert error == ErrorCode.NONE
    # no AddPartitionsToTxn: Produce v12 adds the partition (and starts the transaction)
    assert produce(broker, pid, epoch, 0, 2, txn_id="tx", version=12) == (ErrorCode.NONE, 0)
    desc = broker.transactions.shard.describe("tx")
    assert not isinstance(desc, ErrorCode)
    assert desc.state is TxnState.ONGOING and desc.partitions == {("t", 0)}
    assert broker.transactions.shard.txns["tx"].client_tv == 2
    assert end_txn_v5(broker, "tx", pid, epoch, True) == (ErrorCode.NONE, pid, epoch + 1)
    # the marker carries the bumped epoch: the old epoch is now fenced on the partition
    assert fetch(broker, 1).high_watermark == 3  # type: ignore[attr-defined]
    assert produce(broker, pid, epoch, 2, txn_id="tx", version=12)[0] == \
        ErrorCode.INVALID_PRODUCER_EPOCH
    # a retry of the EndTxn one epoch behind succeeds with the same answer
    assert end_txn_v5(broker, "tx", pid, epoch, True) == (ErrorCode.NONE, pid, epoch + 1)
    assert end_txn_v5(broker, "tx", pid, epoch, False)[0] == ErrorCode.INVALID_TXN_STATE
    # the next transaction at the returned epoch, sequences from 0
    assert produce(broker, pid, epoch + 1, 0, txn_id="tx", version=13 - 1)[0] == ErrorCode.NONE
    assert end_txn_v5(broker, "tx", pid, epoch + 1, False) == (ErrorCode.NONE, pid, epoch + 2)
    assert fetch(broker, 1).high_watermark == 5  # type: ignore[attr-defined]


def test_v2_produce_errors_as_kafka_answers_them(broker: Broker) -> None:
    _, pid, epoch = init_pid(broker, 5, txn_id="tx")
    # a stale epoch (the producer was fenced by another InitProducerId)
    _, pid2, epoch2 = init_pid(broker, 5, txn_id="tx")
    assert pid2 == pid and epoch2 == epoch + 1
    assert produce(broker, pid, epoch, 0, txn_id="tx", version=12)[0] == \
        ErrorCode.INVALID_PRODUCER_EPOCH
    # an unknown producer id for the transactional id
    assert produce(broker, pid + 50, 0, 0, txn_id="tx", version=12)[0] == \
        ErrorCode.INVALID_PRODUCER_ID_MAPPING
    # transactional records without a transactional id: Kafka's authorization answer
    raw = build_batch([(None, b"x")], producer_id=pid2, producer_epoch=epoch2, base_sequence=0,
                      is_transactional=True)
    P = ProduceRequest
    r = call(broker, ApiKey.PRODUCE, 12, P(acks=-1, timeout_ms=1000, topic_data=[
        P.TopicProduceData(name="t", partition_data=[P.PartitionProduceData(index=0,
                                                                           records=raw)])]))
    assert r.responses[0].partition_responses[0].error_code == \
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    # under v1 rules (Produce v11) the same produce outside a transaction is refused
    assert produce(broker, pid2, epoch2, 0, txn_id="tx", version=11)[0] == \
        ErrorCode.TRANSACTION_ABORTABLE
    assert produce(broker, pid2, epoch2, 0, txn_id="tx", version=10)[0] == \
        ErrorCode.INVALID_TXN_STATE
    assert fetch(broker, 0).high_watermark == 0  # type: ignore[attr-defined]


def test_v2_produce_while_the_previous_transaction_completes_is_concurrent(
        broker: Broker) -> None:
    _, pid, epoch = init_pid(broker, 5, txn_id="tx")
    assert produce(broker, pid, epoch, 0, txn_id="tx", version=12)[0] == ErrorCode.NONE
    meta = broker.transactions.shard.txns["tx"]
    meta.state = TxnState.PREPARE_COMMIT  # markers not written yet
    assert produce(broker, pid, epoch, 0, partition=1, txn_id="tx", version=12)[0] == \
        ErrorCode.CONCURRENT_TRANSACTIONS  # after Kafka's 100 ms of retries
    assert produce(broker, pid, epoch, 0, partition=1, txn_id="tx", version=11)[0] == \
        ErrorCode.NOT_ENOUGH_REPLICAS  # v1: retriable for older clients


def test_produce_v13_names_topics_by_id(broker: Broker) -> None:
    pid = init_pid(broker)[1]
    topic_id = broker.cluster.get("t").topic_id  # type: ignore[union-attr]
    raw = build_batch([(None, b"x")], producer_id=pid, producer_epoch=0, base_sequence=0)
    P = ProduceRequest
    unknown = uuid.uuid4()
    r = call(broker, ApiKey.PRODUCE, 13, P(acks=-1, timeout_ms=1000, topic_data=[
        P.TopicProduceData(topic_id=topic_id, partition_data=[
            P.PartitionProduceData(index=0, records=raw)]),
        P.TopicProduceData(topic_id=unknown, partition_data=[
            P.PartitionProduceData(index=0, records=raw)])]))
    assert [(t.topic_id, [p.error_code for p in t.partition_responses]) for t in r.responses] \
        == [(topic_id, [ErrorCode.NONE]), (unknown, [ErrorCode.UNKNOWN_TOPIC_ID])]
    assert fetch(broker, 0).high_watermark == 1  # type: ignore[attr-defined]


def test_txn_offset_commit_v5_adds_the_offsets_partition_v6_by_topic_id(
        broker: Broker) -> None:
    _, pid, epoch = init_pid(broker, 5, txn_id="tx")
    # v5: no AddOffsetsToTxn needed
    assert txn_commit_offsets(broker, "tx", pid, epoch, "g", 7, version=5) == ErrorCode.NONE
    assert txn_commit_offsets(broker, "tx", pid + 9, epoch, "g", 7, version=5) == \
        ErrorCode.INVALID_PRODUCER_ID_MAPPING
    T = TxnOffsetCommitRequest
    topic_id = broker.cluster.get("t").topic_id  # type: ignore[union-attr]
    unknown = uuid.uuid4()
    r = call(broker, ApiKey.TXN_OFFSET_COMMIT, 6, T(
        transactional_id="tx", group_id="g", producer_id=pid, producer_epoch=epoch,
        topics=[T.TxnOffsetCommitRequestTopic(topic_id=topic_id, partitions=[
                    T.TxnOffsetCommitRequestPartition(partition_index=1, committed_offset=3)]),
                T.TxnOffsetCommitRequestTopic(topic_id=unknown, partitions=[
                    T.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=3)])]))
    # errors first, then the committed ones (Kafka's response builder merges in that order)
    assert [(t.topic_id, [p.error_code for p in t.partitions]) for t in r.topics] == [
        (unknown, [ErrorCode.UNKNOWN_TOPIC_ID]), (topic_id, [ErrorCode.NONE])]
    assert offsets_of(broker, "g", stable=False) == {0: (-1, 0), 1: (-1, 0)}
    assert end_txn_v5(broker, "tx", pid, epoch, True)[0] == ErrorCode.NONE
    assert offsets_of(broker, "g", stable=True) == {0: (7, 0), 1: (3, 0)}


def test_a_v2_transaction_survives_a_restart_in_prepare_commit(tmp_path: Path) -> None:
    b = open_broker(tmp_path)
    b.cluster.create_topic("t", 1, {})
    _, pid, epoch = init_pid(b, 5, txn_id="tx")
    assert produce(b, pid, epoch, 0, txn_id="tx", version=12)[0] == ErrorCode.NONE
    b.close()
    b = open_broker(tmp_path)
    try:
        async def load() -> None:
            await b.transactions.ready()

        anyio.run(load)
        meta = b.transactions.shard.txns["tx"]
        assert meta.state is TxnState.ONGOING and meta.client_tv == 2
        assert end_txn_v5(b, "tx", pid, epoch, True) == (ErrorCode.NONE, pid, epoch + 1)
    finally:
        b.close()


def test_a_v2_marker_must_carry_a_bumped_epoch(broker: Broker) -> None:
    """Kafka 4.2's strict epoch validation (KIP-1228): a transactions v2 marker at the epoch
    the partition already has (a late retry) is refused; a classic one is not."""
    from odradek.broker.storage.errors import InvalidProducerEpochError
    from odradek.wire.records import build_control_batch

    _, pid, epoch = init_pid(broker, 5, txn_id="tx")
    assert produce(broker, pid, epoch, 0, txn_id="tx", version=12)[0] == ErrorCode.NONE
    assert end_txn_v5(broker, "tx", pid, epoch, True)[0] == ErrorCode.NONE

    def marker(tv: int) -> None:
        raw = build_control_batch(commit=True, producer_id=pid, producer_epoch=epoch + 1,
                                  coordinator_epoch=0, timestamp_ms=0)
        broker.partitions.append_internal("t", 0, memoryview(bytearray(raw)), 0, tv)

    with pytest.raises(InvalidProducerEpochError):
        marker(2)
    marker(0)  # equal epochs are fine for a classic marker
