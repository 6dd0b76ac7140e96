"""Exactly-once handlers on a real Broker (through the codec both ways): InitProducerId,
Produce with producer state, and (below) the transaction APIs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.init_producer_id import InitProducerIdRequest
from odradek.wire._generated.produce import ProduceRequest
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
    plog = broker.partition_log("t", 0)
    assert plog is not None and plog.log_end_offset == 6
