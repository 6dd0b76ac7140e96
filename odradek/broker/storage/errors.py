"""The storage layer's exceptions, each naming the Kafka error code a request gets for it,
and `error_code_for`, the one mapping from an exception to that code.

Every class here derives from `CodedError` and sets `error_code` (a class attribute). Three
families, kept apart because callers catch them apart:

- `StorageError`: the log refused or could not do what was asked (`OffsetOutOfRangeError`,
  `MessageTooLargeError`, `LogClosedError`, `UnknownPartitionError`, `AppendFailedError`,
  `LogDirOfflineError`); KAFKA_STORAGE_ERROR unless a subclass says otherwise.
- `ProducerStateError`: an append the producer state refuses (`InvalidProducerEpochError`,
  `OutOfOrderSequenceError`, `InvalidTxnStateError`, `CoordinatorFencedError`).
- Files that cannot be trusted, found while loading (`CorruptSegmentError`,
  `CorruptIndexError`, `CorruptSnapshotError`, `CheckpointError`): recovery handles them, so
  they should not reach a request; should one, it is a KAFKA_STORAGE_ERROR. They keep the
  built-in bases they always had (ValueError, RuntimeError) for the callers that catch those.

`error_code_for(exc)` answers any exception: a `CodedError` its `error_code`; a
`RecordBatchError` (an append's invalid batch) CORRUPT_MESSAGE; any other `OSError` (a failed
read or write) KAFKA_STORAGE_ERROR; anything else UNKNOWN_SERVER_ERROR.

`is_out_of_space(exc)` tells the two kinds of failed write apart (see docs/storage.md,
"Durability"): a full file system (ENOSPC, EDQUOT) is answered with KAFKA_STORAGE_ERROR while
the log dir stays online, any other I/O error takes the log dir offline.
`is_out_of_descriptors(exc)` (EMFILE, ENFILE) is neither: no file could be opened, nothing was
read or written, the request is answered KAFKA_STORAGE_ERROR (retriable) and the dir stays
online (docs/storage.md, "File descriptors").
"""

from __future__ import annotations

import errno
from typing import ClassVar

from odradek.wire import ErrorCode, RecordBatchError


class CodedError(Exception):
    """An exception that names the Kafka error code a request is answered with."""

    error_code: ClassVar[ErrorCode] = ErrorCode.UNKNOWN_SERVER_ERROR


# -- the log ------------------------------------------------------------------------------------


class StorageError(CodedError):
    """Base of the errors the storage layer answers requests with."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class OffsetOutOfRangeError(StorageError):
    """A fetch or delete offset outside [log start offset, log end offset] (or the HW)."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class MessageTooLargeError(StorageError):
    """A batch larger than the log's `max.message.bytes`."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class LogClosedError(StorageError):
    """The log was closed or deleted (e.g. its topic was deleted during the request).
    NOT_LEADER_OR_FOLLOWER is retriable: the client refreshes its metadata and finds out."""

    error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class UnknownPartitionError(StorageError):
    """The partition does not exist (never created, or deleted)."""

    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class AppendFailedError(StorageError):
    """A write of an append failed because the file system is full (or no file descriptor
    was left to open a file with), and was undone: the log is exactly as before the append.
    KAFKA_STORAGE_ERROR is retriable: clients retry, and the retry succeeds once space (or a
    descriptor) is freed."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class OutOfDescriptorsError(StorageError):
    """A read or an fsync could not open its file: the process (EMFILE) or the system
    (ENFILE) has no descriptor left. Nothing changed and the log dir stays online;
    KAFKA_STORAGE_ERROR is retriable."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class LogDirOfflineError(StorageError):
    """The partition's log dir failed (an I/O error other than a full disk, as Kafka's
    LogDirFailureChannel): its partitions refuse every read and write until a restart."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


# -- producer state -----------------------------------------------------------------------------


class ProducerStateError(CodedError):
    """An append the producer state refuses; subclasses name the Kafka error."""

    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class InvalidProducerEpochError(ProducerStateError):
    """INVALID_PRODUCER_EPOCH: the batch's epoch is older than the producer's."""

    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class OutOfOrderSequenceError(ProducerStateError):
    """OUT_OF_ORDER_SEQUENCE_NUMBER."""

    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidTxnStateError(ProducerStateError):
    """INVALID_TXN_STATE: a non-transactional batch inside an open transaction."""

    error_code = ErrorCode.INVALID_TXN_STATE


class CoordinatorFencedError(ProducerStateError):
    """TRANSACTION_COORDINATOR_FENCED: a marker from an older coordinator epoch."""

    error_code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


# -- files that cannot be trusted ---------------------------------------------------------------


class CorruptSegmentError(CodedError, RuntimeError):
    """Bytes in a `.log` file that are not a valid batch where one must start."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class CorruptIndexError(CodedError, ValueError):
    """An index file whose content cannot match its segment; the segment gets recovered."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class CorruptSnapshotError(CodedError):
    """A snapshot file that cannot be trusted (bad version, CRC or framing)."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class CheckpointError(CodedError, ValueError):
    """A checkpoint file that exists but cannot be read: bad version, count or line."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


# -- kinds of I/O error ---------------------------------------------------------------------------

# A full file system or an exhausted quota: writes may succeed again once space is freed.
OUT_OF_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_out_of_space(exc: BaseException) -> bool:
    """True for an OSError saying the file system (or the quota) is full."""
    return isinstance(exc, OSError) and exc.errno in OUT_OF_SPACE_ERRNOS


# No file descriptor left in the process (EMFILE) or the system (ENFILE): an open failed.
OUT_OF_DESCRIPTORS_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE})


def is_out_of_descriptors(exc: BaseException) -> bool:
    """True for an OSError saying no file descriptor is left to open a file with."""
    return isinstance(exc, OSError) and exc.errno in OUT_OF_DESCRIPTORS_ERRNOS


# -- the mapping --------------------------------------------------------------------------------

# Exceptions from outside this module, most specific first.
_FOREIGN: tuple[tuple[type[BaseException], ErrorCode], ...] = (
    (RecordBatchError, ErrorCode.CORRUPT_MESSAGE),
    (OSError, ErrorCode.KAFKA_STORAGE_ERROR),
)


def error_code_for(exc: BaseException) -> ErrorCode:
    """The Kafka error code a request gets for `exc` (see the module docstring)."""
    if isinstance(exc, CodedError):
        return exc.error_code
    for kind, code in _FOREIGN:
        if isinstance(exc, kind):
            return code
    return ErrorCode.UNKNOWN_SERVER_ERROR


__all__ = [
    "OUT_OF_DESCRIPTORS_ERRNOS",
    "OUT_OF_SPACE_ERRNOS",
    "AppendFailedError",
    "CheckpointError",
    "CodedError",
    "CoordinatorFencedError",
    "CorruptIndexError",
    "CorruptSegmentError",
    "CorruptSnapshotError",
    "InvalidProducerEpochError",
    "InvalidTxnStateError",
    "LogClosedError",
    "LogDirOfflineError",
    "MessageTooLargeError",
    "OffsetOutOfRangeError",
    "OutOfDescriptorsError",
    "OutOfOrderSequenceError",
    "ProducerStateError",
    "StorageError",
    "error_code_for",
    "is_out_of_descriptors",
    "is_out_of_space",
]
