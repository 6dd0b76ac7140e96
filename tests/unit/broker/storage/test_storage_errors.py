"""Storage exceptions carry their Kafka error code; `error_code_for` maps any exception."""

from __future__ import annotations

import pytest

from odradek.broker.storage import checkpoint, errors, index_file, log, producer_state, segment
from odradek.broker.storage.errors import error_code_for
from odradek.wire import ErrorCode, RecordBatchError

CODES = [
    (errors.StorageError, ErrorCode.KAFKA_STORAGE_ERROR),
    (errors.OffsetOutOfRangeError, ErrorCode.OFFSET_OUT_OF_RANGE),
    (errors.MessageTooLargeError, ErrorCode.MESSAGE_TOO_LARGE),
    (errors.LogClosedError, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    (errors.AppendFailedError, ErrorCode.KAFKA_STORAGE_ERROR),
    (errors.LogDirOfflineError, ErrorCode.KAFKA_STORAGE_ERROR),
    (errors.ProducerStateError, ErrorCode.UNKNOWN_SERVER_ERROR),
    (errors.InvalidProducerEpochError, ErrorCode.INVALID_PRODUCER_EPOCH),
    (errors.OutOfOrderSequenceError, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER),
    (errors.InvalidTxnStateError, ErrorCode.INVALID_TXN_STATE),
    (errors.CoordinatorFencedError, ErrorCode.TRANSACTION_COORDINATOR_FENCED),
    (errors.CorruptSegmentError, ErrorCode.KAFKA_STORAGE_ERROR),
    (errors.CorruptIndexError, ErrorCode.KAFKA_STORAGE_ERROR),
    (errors.CorruptSnapshotError, ErrorCode.KAFKA_STORAGE_ERROR),
    (errors.CheckpointError, ErrorCode.KAFKA_STORAGE_ERROR),
]


@pytest.mark.parametrize(("kind", "code"), CODES)
def test_each_storage_exception_names_its_code(kind: type[errors.CodedError],
                                               code: ErrorCode) -> None:
    assert kind.error_code == code
    assert error_code_for(kind("message")) == code


@pytest.mark.parametrize(("exc", "code"), [
    (OSError(5, "Input/output error"), ErrorCode.KAFKA_STORAGE_ERROR),
    (FileNotFoundError("gone"), ErrorCode.KAFKA_STORAGE_ERROR),
    (RecordBatchError("bad crc"), ErrorCode.CORRUPT_MESSAGE),
    (ValueError("other"), ErrorCode.UNKNOWN_SERVER_ERROR),
    (RuntimeError("other"), ErrorCode.UNKNOWN_SERVER_ERROR),
    (KeyboardInterrupt(), ErrorCode.UNKNOWN_SERVER_ERROR),
])
def test_foreign_exceptions(exc: BaseException, code: ErrorCode) -> None:
    assert error_code_for(exc) == code


def test_out_of_space_is_told_apart_from_other_io_errors() -> None:
    assert errors.is_out_of_space(OSError(28, "No space left on device"))
    assert errors.is_out_of_space(OSError(122, "Disk quota exceeded"))
    assert not errors.is_out_of_space(OSError(5, "Input/output error"))
    assert not errors.is_out_of_space(ValueError("not an OSError"))


def test_families_and_builtin_bases_are_kept() -> None:
    assert not issubclass(errors.ProducerStateError, errors.StorageError)
    assert not issubclass(errors.StorageError, errors.ProducerStateError)
    assert issubclass(errors.CorruptIndexError, ValueError)
    assert issubclass(errors.CheckpointError, ValueError)
    assert issubclass(errors.CorruptSegmentError, RuntimeError)


def test_old_modules_re_export_the_same_classes() -> None:
    assert log.StorageError is errors.StorageError
    assert log.OffsetOutOfRangeError is errors.OffsetOutOfRangeError
    assert log.MessageTooLargeError is errors.MessageTooLargeError
    assert log.LogClosedError is errors.LogClosedError
    assert producer_state.ProducerStateError is errors.ProducerStateError
    assert producer_state.InvalidProducerEpochError is errors.InvalidProducerEpochError
    assert producer_state.OutOfOrderSequenceError is errors.OutOfOrderSequenceError
    assert producer_state.InvalidTxnStateError is errors.InvalidTxnStateError
    assert producer_state.CoordinatorFencedError is errors.CoordinatorFencedError
    assert producer_state.CorruptSnapshotError is errors.CorruptSnapshotError
    assert segment.CorruptSegmentError is errors.CorruptSegmentError
    assert segment.CorruptIndexError is index_file.CorruptIndexError is errors.CorruptIndexError
    assert checkpoint.CheckpointError is errors.CheckpointError
