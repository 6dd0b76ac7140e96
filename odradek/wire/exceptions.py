"""The one exception type the codec raises for malformed input.

A `ProtocolError` means the bytes cannot be a valid Kafka message: the broker answers it by
closing the connection (as Kafka does) after a log line. Its message says what was wrong and
at which byte offset.
"""

from __future__ import annotations


class ProtocolError(ValueError):
    """Malformed bytes: truncated, negative or oversized lengths, invalid varints, bad UTF-8."""


class RecordBatchError(ProtocolError):
    """A record batch that is well framed but invalid: bad CRC, wrong magic, inconsistent sizes.

    Unlike other protocol errors these are answered with an error code on the partition
    (CORRUPT_MESSAGE, UNSUPPORTED_FOR_MESSAGE_FORMAT, INVALID_RECORD), not a closed connection.
    """


class InvalidRecordError(RecordBatchError):
    """A batch whose header disagrees with its records (count, offset deltas, records
    present) or whose records are malformed: Kafka's InvalidRecordException, INVALID_RECORD."""


class DecompressedTooLargeError(RecordBatchError):
    """Compressed records that decompress to more than the bound the broker validates up to;
    answered MESSAGE_TOO_LARGE (see the Produce handler)."""
