"""The C record walker (odradek/wire/_speedups.c) against the Python one it stands in for.

`RecordBatch.check_records` walks every produced batch's records; the C walker must give the
same answer as the Python walker in records.py, which stays the fallback, for every input:
the same (index, pos, need), the same exception with the same message, the same keyless
list. Each check runs both over the same bytes, valid and malformed, and compares.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from odradek.wire import records
from odradek.wire.compression import CompressionType
from odradek.wire.exceptions import InvalidRecordError, RecordBatchError
from odradek.wire.records import BATCH_HEADER_SIZE, Record, RecordBatch, build_batch

try:
    from odradek.wire import _speedups
except ImportError:  # built without a C compiler: only the requirement test below can run
    _speedups = None  # type: ignore[assignment]

needs_c = pytest.mark.skipif(_speedups is None, reason="the C extension was not built")

Walk = Callable[..., tuple[int, int, int]]
STAMPS_EMPTY = (2**63 - 1, -(2**63))  # what check_records starts the walk with
# (python walker, its C counterpart, takes check_deltas)
PAIRS: list[tuple[Walk, Walk, bool]] = [
    (records._walk_records, records._walk_records_c, True),
]


def test_the_extension_is_used_when_required() -> None:
    """.ci/run sets ODRADEK_REQUIRE_SPEEDUPS=1: there, an install that silently fell back to
    Python (the build is optional) fails here instead of passing slower."""
    if os.environ.get("ODRADEK_REQUIRE_SPEEDUPS") != "1":
        pytest.skip("ODRADEK_REQUIRE_SPEEDUPS=1 not set: the C extension is optional")
    assert _speedups is not None, (
        "ODRADEK_REQUIRE_SPEEDUPS=1 but odradek.wire._speedups does not import: was the "
        "editable install built without a C compiler or Python headers? (pip install -e .)")
    assert records.record_walker() == "c", "the C extension imports but records.py does not use it"


def _outcome(fn: Walk, data: Any, end: int, index: int, count: int, keys: bool,
             deltas: bool | None) -> tuple[Any, ...]:
    """What one walk gives: its result or its exception (type and message), the keyless list
    it filled and the [lowest, highest] timestampDelta it found (`STAMPS_EMPTY` when it walked
    no record). Anything but a RecordBatchError propagates and fails the test."""
    keyless: list[int] | None = [] if keys else None
    stamps = list(STAMPS_EMPTY)
    try:
        result: Any = fn(data, 0, end, index, count, keyless,
                         True if deltas is None else deltas, stamps)
    except RecordBatchError as e:
        result = (type(e), str(e))
    return result, keyless, stamps


def _assert_same(data: bytes, count: int, index: int = 0) -> list[tuple[Any, ...]]:
    """Both walkers of each pair, every flag, agree on `data`; the C one on bytes, bytearray,
    a memoryview, and a memoryview slice with bytes after its end (which must not be read)."""
    outcomes = []
    for py, c, has_deltas in PAIRS:
        for keys in (False, True):
            for deltas in ((False, True) if has_deltas else (None,)):
                expected = _outcome(py, data, len(data), index, count, keys, deltas)
                for buf in (data, bytearray(data), memoryview(data),
                            memoryview(data + b"\x80\x01\xff" * 3)[: len(data)]):
                    got = _outcome(c, buf, len(data), index, count, keys, deltas)
                    assert got == expected, (py.__name__, keys, deltas, type(buf), data)
                outcomes.append(expected)
    return outcomes


def _section(batch: bytes) -> bytes:
    """The records of an uncompressed batch: what follows the 61-byte header."""
    return batch[BATCH_HEADER_SIZE:]


def _varint(value: int) -> bytes:
    out = bytearray()
    records._write_varint(out, value)
    return bytes(out)


# -- valid batches ---------------------------------------------------------------------------

blobs = st.one_of(st.none(), st.binary(max_size=300))
record_lists = st.lists(
    st.builds(Record, offset_delta=st.integers(-(2**31), 2**31 - 1),
              timestamp_delta=st.integers(-(2**63), 2**63 - 1), key=blobs, value=blobs,
              headers=st.lists(st.tuples(st.text(max_size=5), blobs), max_size=3),
              attributes=st.integers(0, 255)),
    min_size=1, max_size=12)


@needs_c
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=record_lists, extra=st.integers(-2, 2))
def test_valid_batches_walk_the_same(items: list[Record], extra: int) -> None:
    data = _section(build_batch(items, base_timestamp=0))
    outcomes = _assert_same(data, max(1, len(items) + extra))
    if extra == 0:  # the declared count: the plain length walk sees every record
        (index, pos, need), keyless, stamps = outcomes[0]
        assert (index, pos, need, keyless) == (len(items), len(data), 1, None)
        deltas = [r.timestamp_delta for r in items]
        assert stamps == [min(deltas), max(deltas)]


@needs_c
def test_offset_deltas_and_keys_are_read() -> None:
    data = _section(build_batch([Record(0, 0, None, b"a"), Record(1, 5, b"k", None),
                                 Record(7, -3, None, None)], base_timestamp=0))
    for c in (records._walk_records_c, records._walk_records):
        keyless: list[int] = []
        assert c(data, 0, len(data), 0, 3, keyless, False) == (3, len(data), 1)
        assert keyless == [0, 2]
        with pytest.raises(InvalidRecordError, match="record 2 has offsetDelta 7"):
            c(data, 0, len(data), 0, 3, None, True)


@needs_c
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=record_lists, codec=st.sampled_from(list(CompressionType)),
       keys=st.booleans(), count_change=st.integers(-1, 1))
def test_check_records_is_the_same_with_either_walker(
        items: list[Record], codec: int, keys: bool, count_change: int) -> None:
    """The whole check, compressed batches (whose decompressed chunks are walked) included,
    and header lies about the count (the produce tests' case)."""
    items = [Record(i, r.timestamp_delta, r.key, r.value, r.headers) for i, r in
             enumerate(items)]
    raw = bytearray(build_batch(items, base_timestamp=0, compression=codec))
    count = len(items) + count_change
    raw[57:61] = count.to_bytes(4, "big", signed=True)
    raw[23:27] = (count - 1).to_bytes(4, "big", signed=True)
    results: list[Any] = []
    assert records._C_WALKERS is not None
    for walkers in (records._PY_WALKERS, records._C_WALKERS):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(records, "_walkers", walkers)
            try:
                batch = RecordBatch(raw)
                results.append((batch.check_records(1 << 24, keys_required=keys),
                                batch.timestamp_deltas))
            except RecordBatchError as e:
                results.append((type(e), str(e)))
    assert results[0] == results[1]
    if count_change == 0:
        deltas = [r.timestamp_delta for r in items]
        assert results[0] == ([i for i, r in enumerate(items) if r.key is None] if keys else [],
                              (min(deltas), max(deltas)))


# -- malformed input -------------------------------------------------------------------------

_SAMPLE = _section(build_batch(
    [Record(0, 0, b"key", b"value" * 30, [("h", b"v")]), Record(1, 2**40, None, b"", []),
     Record(2, -1, b"k" * 200, None, [("a", None), ("b", b"x" * 130)])], base_timestamp=0))


@needs_c
@settings(max_examples=1000, deadline=None)
@given(data=st.binary(max_size=64), count=st.integers(1, 4), index=st.integers(0, 2))
@example(data=b"\x80\x80\x80\x80\x80\x01", count=1, index=0)  # a 6-byte varint
@example(data=b"\x0c\x00\x80\x80\x80\x80\x80", count=1, index=0)  # timestampDelta off the end
def test_random_bytes_walk_the_same(data: bytes, count: int, index: int) -> None:
    _assert_same(data, count, index)


@needs_c
@settings(max_examples=1000, deadline=None)
@given(edits=st.lists(st.tuples(st.integers(0, len(_SAMPLE) - 1),
                                st.sampled_from([0x00, 0x01, 0x0c, 0x7f, 0x80, 0xfe, 0xff])
                                | st.integers(0, 255)), max_size=4),
       cut=st.integers(0, len(_SAMPLE)), count=st.integers(1, 4))
def test_mutated_records_walk_the_same(edits: list[tuple[int, int]], cut: int,
                                       count: int) -> None:
    """Valid records with a few bytes changed and a tail cut: deep into the walk, where
    random bytes rarely get."""
    data = bytearray(_SAMPLE)
    for at, value in edits:
        data[at] = value
    _assert_same(bytes(data[:cut]), count)


_RECORD = _section(build_batch([Record(0, 0, b"k", b"v")], base_timestamp=0))  # 9 bytes
assert len(_RECORD) == 9 and _RECORD[0] == 16  # length 8 (zigzag 16), then 8 bytes

# One case per outcome, with what the Python walkers give: the C ones must give exactly this.
# (data, count, check_deltas, keys, expected result or (exception, start of its message)).
# Outcomes of the record lengths alone (with deltas and keys off).
LENGTH_CASES: list[tuple[bytes, int, bool, bool, Any]] = [
    (b"", 1, False, False, (0, 0, 1)),
    (_RECORD, 1, True, True, (1, 9, 1)),
    (_RECORD + b"\x80", 2, False, False, (1, 9, 2)),  # a length cut after its first byte
    (_RECORD + b"\x80\x80\x80\x80", 2, False, False, (1, 9, 5)),
    (_RECORD[:-1], 1, False, False, (0, 0, 9)),  # a record cut short: 9 bytes needed
    (_varint(2**31 - 1) + b"\x00" * 10, 1, False, False, (0, 0, 5 + 2**31 - 1)),
    (b"\x80\x80\x80\x80\x80", 1, False, False,
     (RecordBatchError, "malformed varint at byte 0 ")),  # would need a 6th byte
    (_RECORD + b"\x80\x80\x80\x80\x10", 2, False, False,
     (RecordBatchError, "malformed varint at byte 9 ")),  # 2**32: over 32 bits
    (b"\xff\xff\xff\xff\x0f", 1, False, False,
     (InvalidRecordError, "record 0 declares a length of -2147483648 bytes")),
    (b"\x01", 1, False, False, (InvalidRecordError, "record 0 declares a length of -1 bytes")),
    (_varint(5) + b"\x00" * 5, 1, False, False,
     (InvalidRecordError, "record 0 declares a length of 5 bytes")),
    (_RECORD * 2, 1, False, False, (InvalidRecordError, "record batch declares 1 records but")),
]
# Past the lengths: every field of a record is read, as Kafka's DefaultRecord.readFrom does.
OVERRUN = (InvalidRecordError, "record 0 has fields longer than the record")
FIELD_CASES: list[tuple[bytes, int, bool, bool, Any]] = [
    (b"\x0c\x00\x80\x80\x80\x80\x80", 1, False, False, OVERRUN),  # timestampDelta off the end
    (b"\x0c\x00\x00\x80\x80\x80\x80", 1, False, False, OVERRUN),  # so does offsetDelta
    (b"\x0c\x00\x00\x80\x80\x80\x80\x80\x00", 1, False, False,
     (RecordBatchError, "malformed varint at byte 3 ")),  # offsetDelta of 6 bytes
    (b"\x1e\x00" + b"\x80" * 9 + b"\x01\x00\x00\x00\x00", 1, False, False,
     (1, 16, 1)),  # a timestampDelta of 10 bytes
    (b"\x20\x00" + b"\x80" * 10 + b"\x01\x00\x00\x00\x00", 1, False, False,
     (RecordBatchError, "malformed varint at byte 2 ")),  # of 11
    (b"\x0c\x00\x00\x02\x00\x00\x00", 1, True, False,
     (InvalidRecordError, "record 0 has offsetDelta 1: the deltas must be 0..0")),
    (b"\x0c\x00\x00\x02\x00\x00\x00", 1, False, True, (1, 7, 1)),  # deltas unchecked
    (b"\x0c\x00\x00\x00\x80\x80\x80", 1, False, True, OVERRUN),  # keyLength off the end
    (b"\x0e\x00\x00\x00\x02k\x00\x00", 1, False, True, (1, 8, 1)),  # a key that just fits
    (b"\x0e\x00\x00\x00\x04k\x00\x00", 1, False, True, OVERRUN),  # one byte more
    (b"\x0e\x00\x00\x00\x01\x02v\x00", 1, False, False, (1, 8, 1)),  # a value that fits
    (b"\x0e\x00\x00\x00\x01\x04v\x00", 1, False, False, OVERRUN),  # one byte more
    (b"\x12\x00\x80\x80\x80\x00\x00\x00\x00\x00", 1, False, False, (1, 10, 1)),
    (b"\x0c\x00\x80\x80\x80\x80\x00\x00\x00\x00", 2, False, False, OVERRUN),
    (b"\x0e\x00\x00\x00\x00\x00\x00\x00", 1, False, False,  # a byte the fields leave
     (InvalidRecordError, "record 0 has fields that take 6 bytes, fewer than its length")),
    (b"\x0c\x00\x00\x00\x00\x00\x01", 1, False, False,
     (InvalidRecordError, "record 0 has an invalid number of headers -1")),
    (b"\x0c\x00\x00\x00\x00\x00\xfe\xff\xff\xff\x0f", 1, False, False,
     OVERRUN),  # 2**31 - 1 headers in no bytes
    (b"\x10\x00\x00\x00\x00\x00\x02\x00\x01", 1, False, False, (1, 9, 1)),  # key "", null value
    (b"\x10\x00\x00\x00\x00\x00\x02\x01\x01", 1, False, False,
     (InvalidRecordError, "record 0 has a header key of negative size -1")),
    (b"\x12\x00\x00\x00\x00\x00\x02\x02\xff\x01", 1, False, False,
     (1, 10, 1)),  # a header key that is not UTF-8: Kafka takes it
    (b"\x12\x00\x00\x00\x00\x00\x02\x04\xff\x01", 1, False, False, OVERRUN),
    (b"\x12\x00\x00\x00\x00\x00\x02\x00\x02v", 1, False, False, (1, 10, 1)),
    (b"\x12\x00\x00\x00\x00\x00\x02\x00\x04v", 1, False, False, OVERRUN),
    (b"\x12\x00\x00\x00\x00\x00\x04\x00\x01\x00", 1, False, False, OVERRUN),
]


@needs_c
@pytest.mark.parametrize(("data", "count", "deltas", "keys", "expected"),
                         LENGTH_CASES + FIELD_CASES)
def test_edge_cases(data: bytes, count: int, deltas: bool, keys: bool, expected: Any) -> None:
    for fn in (records._walk_records, records._walk_records_c):
        result, _, _ = _outcome(fn, data, len(data), 0, count, keys, deltas)
        if isinstance(expected[0], type):
            assert result[0] is expected[0] and result[1].startswith(expected[1]), (fn, result)
        else:
            assert result == expected, (fn, result)


@needs_c
def test_a_1_mib_batch_of_1_kib_records() -> None:
    items = [(b"%d" % i, bytes(1000)) for i in range(1000)]
    data = _section(build_batch(items, base_timestamp=0))
    assert _assert_same(data, 1000)[0] == ((1000, len(data), 1), None, [0, 0])


@needs_c
def test_arguments_are_checked() -> None:
    assert _speedups is not None
    with pytest.raises(ValueError, match="pos <= end"):
        _speedups.walk_records(b"abc", 0, 4, 0, 1, None, False)
    with pytest.raises(ValueError, match="pos <= end"):
        _speedups.walk_records(b"abc", 2, 1, 0, 1, None, True)
    with pytest.raises(ValueError, match="pos <= end"):
        _speedups.walk_records(b"abc", -1, 2, 0, 1, None, False)
    with pytest.raises(TypeError, match="keyless"):
        _speedups.walk_records(b"abc", 0, 3, 0, 1, (), True)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _speedups.walk_records("text", 0, 4, 0, 1, None, False)  # type: ignore[arg-type]
    with pytest.raises((BufferError, TypeError)):  # not contiguous
        _speedups.walk_records(memoryview(b"abcdef")[::2], 0, 3, 0, 1, None, False)
    # A view into the middle of a buffer: positions are the view's.
    data = b"\xff" + _RECORD + b"\xff"
    assert _speedups.walk_records(memoryview(data)[1:-1], 0, 9, 0, 1, None, True) == (1, 9, 1, 0, 0)
    assert _speedups.walk_records(data, 1, 10, 0, 1, None, True) == (1, 10, 1, 0, 0)


# -- timestamp deltas -------------------------------------------------------------------------


@needs_c
@pytest.mark.parametrize("deltas", [[0], [5, -3, 70], [2**63 - 1, -(2**63)], [-1, 2**40, 64],
                                    [300, 200, 100]])
def test_timestamp_deltas_are_the_records_span(deltas: list[int]) -> None:
    """The produce path bounds every record's timestamp with the span the walk returns: both
    walkers must find the records' lowest and highest timestampDelta, 10-byte varlongs (the
    extremes of Java's long) included, widening the span they are given."""
    data = _section(build_batch([Record(i, d, b"k", b"v") for i, d in enumerate(deltas)],
                                base_timestamp=0))
    for fn in (records._walk_records, records._walk_records_c):
        stamps = list(STAMPS_EMPTY)
        assert fn(data, 0, len(data), 0, len(deltas), None, True, stamps) == (
            len(deltas), len(data), 1)
        assert stamps == [min(deltas), max(deltas)], fn
        wide = [-(2**63), 2**63 - 1]
        fn(data, 0, len(data), 0, len(deltas), None, True, wide)
        assert wide == [-(2**63), 2**63 - 1], fn  # only ever widened
        assert fn(data, 0, len(data), 0, len(deltas), None, True) == (len(deltas), len(data), 1)


@needs_c
@pytest.mark.parametrize("codec", list(CompressionType))
def test_check_records_sets_the_span_with_either_walker(codec: int) -> None:
    """Compressed batches are walked in chunks: the span covers every chunk."""
    deltas = [(i * 7919) % 5000 - 2500 for i in range(3000)]
    raw = build_batch([Record(i, d, b"key", b"v" * 50) for i, d in enumerate(deltas)],
                      base_timestamp=10, compression=codec)
    assert records._C_WALKERS is not None
    for walkers in (records._PY_WALKERS, records._C_WALKERS):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(records, "_walkers", walkers)
            batch = RecordBatch(raw)
            assert batch.timestamp_deltas is None
            batch.check_records(1 << 24)
            assert batch.timestamp_deltas == (min(deltas), max(deltas)), walkers.name


@needs_c
def test_stamps_must_be_a_pair() -> None:
    assert _speedups is not None
    for bad in ((0, 0), [0], [0, 0, 0], ["a", 0]):
        with pytest.raises(TypeError):
            _speedups.walk_records(_RECORD, 0, len(_RECORD), 0, 1, None, True, bad)
