"""Records of `__transaction_state`, in Kafka's format (TransactionLog.scala).

Each record's key and value are "version-prefixed" messages from Kafka's internal specs:

    key    int16 version (0) | TransactionLogKey v0: transactional_id string (int16 length)
    value  int16 version (0 or 1) | TransactionLogValue:
             producer_id int64 | producer_epoch int16 | transaction_timeout_ms int32 |
             transaction_status int8 | transaction_partitions nullable array of
             (topic string, partition_ids int32 array) | last_update_timestamp_ms int64 |
             start_timestamp_ms int64        (v1 is the flexible form with tagged fields:
             PreviousProducerId 0, NextProducerId 1, ClientTransactionVersion 2,
             NextProducerEpoch 3)
    value  null: a tombstone, the transactional id expired

As Kafka, we write value version 0 while the finalized `transaction.version` is 0 and the
flexible version 1 from level 1 on, with the transaction's ClientTransactionVersion. Kafka
4.x writes no other tag; we also write NextProducerId and PreviousProducerId when a TV2
transaction whose epoch ran out moves to a new producer id (the only time they differ from
their defaults), which Kafka's loader reads, so that a restart between PrepareCommit and
CompleteCommit still completes onto the new id. Empty carries null partitions. A transactional id lives in partition
`abs(javaHashCode(id)) % transaction.state.log.num.partitions`.
"""

from __future__ import annotations

import struct

from odradek.coordinator.txn.state import (
    NO_PRODUCER_ID,
    TopicPartition,
    TxnMetadata,
    TxnState,
    TxnTransit,
)
from odradek.wire._generated.internal import TransactionLogKey, TransactionLogValue
from odradek.wire.exceptions import ProtocolError
from odradek.wire.primitives import Buffer

TRANSACTION_STATE_TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSION = 0  # the version written when none is given (transaction.version 0)
_VERSION = struct.Struct(">h")


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: over UTF-16 code units, in int32 arithmetic."""
    h = 0
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(transactional_id: str, partitions: int) -> int:
    """Kafka's `Utils.abs(id.hashCode) % partitions` (abs(Integer.MIN_VALUE) is 0 there)."""
    h = java_string_hash(transactional_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def _prefixed(version: int, parts: list[Buffer]) -> bytes:
    return _VERSION.pack(version) + b"".join(bytes(p) for p in parts)


def encode_key(transactional_id: str) -> bytes:
    return _prefixed(KEY_VERSION,
                     TransactionLogKey(transactional_id=transactional_id).encode(KEY_VERSION))


def encode_value(transit: TxnTransit, version: int = VALUE_VERSION) -> bytes:
    if transit.state is TxnState.EMPTY and transit.partitions:
        raise ValueError(f"an Empty transaction cannot hold partitions: {transit}")
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(transit.partitions):
        by_topic.setdefault(topic, []).append(partition)
    value = TransactionLogValue(
        producer_id=transit.producer_id,
        producer_epoch=transit.producer_epoch,
        transaction_timeout_ms=transit.timeout_ms,
        transaction_status=transit.state.id,
        transaction_last_update_timestamp_ms=transit.last_update_ms,
        transaction_start_timestamp_ms=transit.txn_start_ms,
    )
    if version >= 1:
        value.client_transaction_version = transit.client_tv
        if transit.next_producer_id != NO_PRODUCER_ID:
            value.next_producer_id = transit.next_producer_id
        if transit.last_producer_id not in (NO_PRODUCER_ID, transit.producer_id):
            value.previous_producer_id = transit.last_producer_id
    value.transaction_partitions = None if transit.state is TxnState.EMPTY else [
        TransactionLogValue.PartitionsSchema(topic=t, partition_ids=ps)
        for t, ps in by_topic.items()]
    return _prefixed(version, value.encode(version))


def decode_key(data: Buffer) -> str | None:
    """The transactional id of a record key; None for key versions we do not know."""
    mv = memoryview(data)
    if len(mv) < 2:
        raise ProtocolError(f"__transaction_state key of {len(mv)} bytes has no version")
    version = _VERSION.unpack_from(mv)[0]
    if not TransactionLogKey.MIN_VERSION <= version <= TransactionLogKey.MAX_VERSION:
        return None
    key, _ = TransactionLogKey.decode(mv, version, 2)
    return key.transactional_id


def decode_value(transactional_id: str, data: Buffer | None) -> TxnMetadata | None:
    """The metadata a value records; None for a tombstone. Raises ProtocolError."""
    if data is None:
        return None
    mv = memoryview(data)
    if len(mv) < 2:
        raise ProtocolError(f"__transaction_state value of {len(mv)} bytes has no version")
    version = _VERSION.unpack_from(mv)[0]
    if not TransactionLogValue.MIN_VERSION <= version <= TransactionLogValue.MAX_VERSION:
        raise ProtocolError(f"unknown TransactionLogValue version {version}")
    value, _ = TransactionLogValue.decode(mv, version, 2)
    try:
        state = TxnState.from_id(value.transaction_status)
    except ValueError as e:
        raise ProtocolError(str(e)) from None
    partitions: set[TopicPartition] = set()
    if state is not TxnState.EMPTY:
        for schema in value.transaction_partitions or []:
            partitions.update((schema.topic, p) for p in schema.partition_ids)
    return TxnMetadata(
        transactional_id=transactional_id,
        producer_id=value.producer_id,
        producer_epoch=value.producer_epoch,
        timeout_ms=value.transaction_timeout_ms,
        state=state,
        last_update_ms=value.transaction_last_update_timestamp_ms,
        partitions=partitions,
        txn_start_ms=value.transaction_start_timestamp_ms,
        last_producer_id=value.previous_producer_id,
        client_tv=value.client_transaction_version,
        next_producer_id=value.next_producer_id,
    )
