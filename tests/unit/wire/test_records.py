"""RecordBatch v2: layout, CRC, in-place patches, record iteration, and agreement with the
batches real clients (kafka-python, aiokafka's C builder) write and read."""

from __future__ import annotations

import contextlib
import struct
from typing import Any

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.wire.compression import CompressionType
from odradek.wire.exceptions import ProtocolError, RecordBatchError
from odradek.wire.records import (
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TRANSACTIONAL,
    ATTRIBUTES_OFFSET,
    BATCH_HEADER,
    BATCH_HEADER_PREFIX,
    BATCH_HEADER_SIZE,
    BATCH_LENGTH_OFFSET,
    CRC_OFFSET,
    LEGACY_MAGIC_OFFSET,
    MAX_TIMESTAMP_OFFSET,
    PARTITION_LEADER_EPOCH_OFFSET,
    Record,
    RecordBatch,
    batch_length_at,
    build_batch,
    build_control_batch,
    iter_batches,
    read_header,
    rewrite_batch,
    set_base_offset,
    set_max_timestamp_log_append_time,
    set_partition_leader_epoch,
)

CODECS = list(CompressionType)
INT32_MAX = 2**31 - 1


def test_constants() -> None:
    assert BATCH_HEADER_SIZE == 61
    assert LEGACY_MAGIC_OFFSET == 16


def test_header_layout_byte_by_byte() -> None:
    raw = build_batch(
        [(b"k", b"v")],
        base_offset=0x0102030405060708,
        base_timestamp=1_700_000_000_000,
        producer_id=77,
        producer_epoch=3,
        base_sequence=9,
        is_transactional=True,
        partition_leader_epoch=5,
    )
    assert struct.unpack_from(">q", raw, 0)[0] == 0x0102030405060708
    assert struct.unpack_from(">i", raw, 8)[0] == len(raw) - 12
    assert struct.unpack_from(">i", raw, 12)[0] == 5
    assert raw[16] == 2
    assert struct.unpack_from(">I", raw, 17)[0] == crc32c.crc32c(raw[21:])
    assert struct.unpack_from(">h", raw, 21)[0] == 0x10
    assert struct.unpack_from(">i", raw, 23)[0] == 0
    assert struct.unpack_from(">qq", raw, 27) == (1_700_000_000_000, 1_700_000_000_000)
    assert struct.unpack_from(">qhii", raw, 43) == (77, 3, 9, 1)
    # One record: length 8, attrs 0, ts delta 0, offset delta 0, key len 1 "k", value len 1 "v",
    # no headers (zigzag varints: 1 -> 0x02, 8 -> 0x10).
    assert raw[61:] == bytes([0x10, 0, 0, 0, 0x02]) + b"k" + b"\x02" + b"v" + b"\x00"


def test_named_offsets_and_structs_match_the_layout() -> None:
    assert (BATCH_LENGTH_OFFSET, PARTITION_LEADER_EPOCH_OFFSET, CRC_OFFSET) == (8, 12, 17)
    assert (ATTRIBUTES_OFFSET, MAX_TIMESTAMP_OFFSET) == (21, 35)
    assert BATCH_HEADER.size == BATCH_HEADER_SIZE
    assert BATCH_HEADER_PREFIX.size == 43


def test_read_header_needs_only_the_header_bytes() -> None:
    raw = build_batch([(b"k", b"v"), (b"k2", None)], base_offset=40, base_timestamp=1_000,
                      producer_id=77, producer_epoch=3, base_sequence=9, is_transactional=True,
                      partition_leader_epoch=5)
    head = read_header(b"xx" + raw[:BATCH_HEADER_SIZE], 2)
    b = RecordBatch(raw)
    assert head == (b.base_offset, b.batch_length, b.partition_leader_epoch, b.magic, b.crc,
                    b.attributes, b.last_offset_delta, b.base_timestamp, b.max_timestamp,
                    b.producer_id, b.producer_epoch, b.base_sequence, b.records_count)
    assert (head.producer_id, head.records_count, head.attributes) == (77, 2, 0x10)
    assert batch_length_at(b"xx" + raw, 2) == len(raw) - 12
    assert BATCH_HEADER_PREFIX.unpack_from(raw) == tuple(head[:9])


@pytest.mark.parametrize("codec", CODECS)
def test_rewrite_batch_keeps_offsets_and_producer_fields(codec: int) -> None:
    records = [Record(i, i * 10, f"k{i}".encode(), b"v" * i, [("h", None)]) for i in range(5)]
    raw = build_batch(records, base_offset=100, base_timestamp=5_000, compression=codec,
                      producer_id=8, producer_epoch=2, base_sequence=30, is_transactional=True,
                      partition_leader_epoch=4)
    old = RecordBatch(raw)
    kept = [records[1], records[3]]
    attributes = old.attributes | ATTR_DELETE_HORIZON
    new = RecordBatch(rewrite_batch(old, kept, attributes=attributes, base_timestamp=9_000,
                                    max_timestamp=5_030))
    assert new.crc_ok()
    assert (new.base_offset, new.last_offset_delta, new.partition_leader_epoch) == (100, 4, 4)
    assert (new.producer_id, new.producer_epoch, new.base_sequence) == (8, 2, 30)
    assert (new.attributes, new.compression) == (attributes, codec)
    assert (new.base_timestamp, new.max_timestamp, new.records_count) == (9_000, 5_030, 2)
    assert list(new.records()) == kept
    empty = RecordBatch(rewrite_batch(old, (), attributes=ATTR_TRANSACTIONAL,
                                      base_timestamp=-1, max_timestamp=old.max_timestamp))
    assert empty.size == BATCH_HEADER_SIZE and empty.records_count == 0 and empty.crc_ok()
    assert empty.last_offset == old.last_offset and list(empty.records()) == []


def test_view_fields_and_properties() -> None:
    raw = build_batch(
        [Record(0, 0, b"a", b"1"), Record(1, 5, None, b"2"), Record(4, 2, b"c", None)],
        base_offset=100,
        base_timestamp=1000,
        compression=CompressionType.GZIP,
        producer_id=42,
        producer_epoch=7,
        base_sequence=10,
        is_transactional=True,
        partition_leader_epoch=3,
    )
    b = RecordBatch(memoryview(raw))
    assert (b.base_offset, b.last_offset_delta, b.last_offset, b.next_offset) == (100, 4, 104, 105)
    assert b.batch_length == len(raw) - 12 and b.size == len(raw)
    assert (b.partition_leader_epoch, b.magic, b.records_count) == (3, 2, 3)
    assert (b.base_timestamp, b.max_timestamp) == (1000, 1005)
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.last_sequence) == (42, 7, 10, 14)
    assert b.compression == CompressionType.GZIP
    assert b.timestamp_type == 0 and b.is_transactional and not b.is_control
    assert not b.has_delete_horizon
    assert b.control_type() is None
    assert b.crc_ok()
    assert list(b.records()) == [
        Record(0, 0, b"a", b"1", []),
        Record(1, 5, None, b"2", []),
        Record(4, 2, b"c", None, []),
    ]


def test_accepts_bytes_and_offsets_into_a_larger_buffer() -> None:
    raw = build_batch([(b"k", b"v")])
    buf = b"\xaa" * 10 + raw + b"\xbb" * 5
    b = RecordBatch(buf, 10)
    assert b.crc_ok()
    assert bytes(b.buffer()) == raw
    assert [r.value for r in b.records()] == [b"v"]


def test_buffer_is_zero_copy() -> None:
    buf = bytearray(build_batch([(b"k", b"v")]))
    b = RecordBatch(memoryview(buf))
    view = b.buffer()
    buf[0] = 0x7F
    assert view[0] == 0x7F
    assert view.obj is buf


def test_last_sequence_wraps_like_kafka() -> None:
    raw = build_batch([(None, b"x")] * 3, base_sequence=INT32_MAX - 1)
    assert RecordBatch(raw).last_sequence == 0
    raw = build_batch([(None, b"x")] * 2, base_sequence=INT32_MAX - 1)
    assert RecordBatch(raw).last_sequence == INT32_MAX
    assert RecordBatch(build_batch([(None, b"x")] * 2)).last_sequence == -1


# -- CRC and in-place patches ---------------------------------------------------------------


def test_crc_flipped_bit_in_every_covered_byte_fails() -> None:
    raw = build_batch(
        [Record(0, 0, b"key", b"value", [("h", b"hv")])], producer_id=1, producer_epoch=0
    )
    assert RecordBatch(raw).crc_ok()
    for i in range(21, len(raw)):
        for bit in (0, 7):
            mutated = bytearray(raw)
            mutated[i] ^= 1 << bit
            assert not RecordBatch(mutated).crc_ok(), f"flip at byte {i} bit {bit} undetected"


def test_crc_field_flip_fails() -> None:
    mutated = bytearray(build_batch([(b"k", b"v")]))
    mutated[17] ^= 0x01
    assert not RecordBatch(mutated).crc_ok()


def test_patches_keep_crc_valid() -> None:
    buf = bytearray(b"\x00" * 7 + build_batch([(b"k", b"v")] * 3, compression=2) + b"\x00")
    mv = memoryview(buf)
    set_base_offset(mv, 7, 123_456_789_012)
    set_partition_leader_epoch(mv, 7, 17)
    b = RecordBatch(mv, 7)
    assert (b.base_offset, b.partition_leader_epoch) == (123_456_789_012, 17)
    assert b.last_offset == 123_456_789_014
    assert b.crc_ok()
    assert [r.key for r in b.records()] == [b"k"] * 3


def test_log_append_time_rewrite_recomputes_crc() -> None:
    buf = bytearray(build_batch([(b"k", b"v")], base_timestamp=5, compression=1))
    set_max_timestamp_log_append_time(buf, 0, 9_999)
    b = RecordBatch(buf)
    assert b.timestamp_type == 1 and b.max_timestamp == 9_999
    assert b.compression == 1
    assert b.crc_ok()


# -- control batches -----------------------------------------------------------------------


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch(commit: bool) -> None:
    raw = build_control_batch(
        commit=commit,
        producer_id=1234,
        producer_epoch=5,
        coordinator_epoch=9,
        base_offset=50,
        timestamp_ms=1_000_000,
        partition_leader_epoch=2,
    )
    b = RecordBatch(raw)
    assert b.crc_ok()
    assert b.is_control and b.is_transactional
    assert b.control_type() == (1 if commit else 0)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (1234, 5, -1)
    assert (b.base_offset, b.last_offset, b.partition_leader_epoch) == (50, 50, 2)
    assert (b.base_timestamp, b.max_timestamp) == (1_000_000, 1_000_000)
    (rec,) = b.records()
    assert rec.key == struct.pack(">hh", 0, 1 if commit else 0)
    assert rec.value == struct.pack(">hi", 0, 9)
    assert b.control_marker() == (1 if commit else 0, 9)


def test_control_marker_of_data_and_empty_control_batches() -> None:
    data = RecordBatch(build_batch([(b"k", b"v")]))
    assert data.control_marker() is None
    marker = RecordBatch(build_control_batch(commit=True, producer_id=1, producer_epoch=0,
                                             coordinator_epoch=3, timestamp_ms=0))
    emptied = RecordBatch(rewrite_batch(marker, (), attributes=ATTR_TRANSACTIONAL | ATTR_CONTROL,
                                        base_timestamp=-1, max_timestamp=0))
    assert emptied.is_control and emptied.control_marker() is None
    short_value = RecordBatch(rewrite_batch(
        marker, [Record(0, 0, struct.pack(">hh", 0, 0), b"\x00")],
        attributes=ATTR_TRANSACTIONAL | ATTR_CONTROL, base_timestamp=0, max_timestamp=0))
    assert short_value.control_marker() == (0, -1)


# -- round trips ----------------------------------------------------------------------------

blobs = st.one_of(st.none(), st.binary(max_size=64))
headers = st.lists(st.tuples(st.text(max_size=10), blobs), max_size=3)
records_strategy = st.lists(
    st.tuples(blobs, blobs, headers, st.integers(-(2**40), 2**40)), min_size=1, max_size=20
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codec=st.sampled_from(CODECS), items=records_strategy, base_offset=st.integers(0, 2**62))
def test_round_trip_property(
    codec: int, items: list[tuple[bytes | None, bytes | None, list[Any], int]], base_offset: int
) -> None:
    records = [
        Record(offset_delta=i * 2, timestamp_delta=ts, key=k, value=v, headers=h)
        for i, (k, v, h, ts) in enumerate(items)
    ]
    raw = build_batch(records, base_offset=base_offset, base_timestamp=2**41, compression=codec)
    b = RecordBatch(raw)
    assert b.crc_ok()
    assert b.compression == codec
    assert b.records_count == len(records)
    assert b.last_offset_delta == 2 * (len(records) - 1)
    assert b.max_timestamp == 2**41 + max(0, *(r.timestamp_delta for r in records))
    assert list(b.records()) == records


def test_extreme_varint_values_round_trip() -> None:
    records = [
        Record(INT32_MAX, 2**63 - 1 - 2**40, b"", b""),
        Record(0, -(2**40), None, None, [("", None), ("ü", b"")]),
    ]
    raw = build_batch(records, base_timestamp=2**40)
    assert list(RecordBatch(raw).records()) == records


def test_out_of_range_deltas_are_refused() -> None:
    with pytest.raises(ValueError, match="int32"):
        build_batch([Record(2**31, 0, None, None)])
    with pytest.raises(ValueError, match="int64"):
        build_batch([Record(0, 2**63, None, None)])


def test_iter_batches_mixed_codecs() -> None:
    raws = [build_batch([(b"k%d" % c, b"v")], base_offset=c * 10, compression=c) for c in CODECS]
    raws.append(
        build_control_batch(
            commit=True,
            producer_id=1,
            producer_epoch=0,
            coordinator_epoch=0,
            timestamp_ms=1,
            base_offset=60,
        )
    )
    batches = list(iter_batches(memoryview(b"".join(raws))))
    assert [b.base_offset for b in batches] == [0, 10, 20, 30, 40, 60]
    assert all(b.crc_ok() for b in batches)
    assert [next(iter(b.records())).key for b in batches[:5]] == [b"k%d" % c for c in CODECS]
    assert batches[-1].control_type() == 1
    assert list(iter_batches(b"")) == []


def test_iter_batches_partial_tail() -> None:
    one = build_batch([(b"a", b"b")], base_offset=0)
    two = build_batch([(b"c", b"d")], base_offset=1)
    three = build_batch([(b"e", b"f")], base_offset=2)
    for cut in range(1, len(three)):
        buf = one + two + three[:cut]
        assert [b.base_offset for b in iter_batches(buf, allow_partial_tail=True)] == [0, 1]
        with pytest.raises(RecordBatchError, match=f"at byte {len(one) + len(two)}"):
            list(iter_batches(buf))


# -- invalid input --------------------------------------------------------------------------


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_sets_are_rejected(magic: int) -> None:
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic, 0, 1 << 20)
    builder.append(0, 1000 if magic else None, b"k", b"v")
    legacy = bytes(builder.build())
    assert legacy[LEGACY_MAGIC_OFFSET] == magic
    with pytest.raises(RecordBatchError, match=rf"legacy message format \(magic {magic}\)"):
        RecordBatch(legacy)
    with pytest.raises(RecordBatchError, match=rf"magic {magic}"):
        list(iter_batches(legacy))
    with pytest.raises(RecordBatchError, match=rf"magic {magic}"):
        list(iter_batches(legacy, allow_partial_tail=True))


def test_unknown_magic() -> None:
    raw = bytearray(build_batch([(b"k", b"v")]))
    raw[16] = 3
    with pytest.raises(RecordBatchError, match="magic 3"):
        RecordBatch(raw)


def test_every_truncation_raises() -> None:
    raw = build_batch([Record(0, 0, b"key", b"value", [("h", b"x")])])
    for cut in range(len(raw)):
        with pytest.raises(RecordBatchError, match="truncated"):
            RecordBatch(raw[:cut])


def test_batch_length_below_minimum() -> None:
    raw = bytearray(build_batch([(b"k", b"v")]))
    struct.pack_into(">i", raw, 8, 48)
    with pytest.raises(RecordBatchError, match="batchLength 48"):
        RecordBatch(raw)
    struct.pack_into(">i", raw, 8, -5)
    with pytest.raises(RecordBatchError, match="negative batchLength"):
        list(iter_batches(raw, allow_partial_tail=True))


def _with_count(raw: bytes, count: int) -> bytearray:
    out = bytearray(raw)
    struct.pack_into(">i", out, 57, count)
    return out


def test_records_count_mismatch() -> None:
    raw = build_batch([(b"a", b"b"), (b"c", b"d")])
    with pytest.raises(RecordBatchError, match="declares 3 records"):
        list(RecordBatch(_with_count(raw, 3)).records())
    with pytest.raises(RecordBatchError, match="after its 1 declared records"):
        list(RecordBatch(_with_count(raw, 1)).records())
    with pytest.raises(RecordBatchError, match="negative records count"):
        RecordBatch(_with_count(raw, -1)).records()


def test_record_length_inconsistent_with_fields() -> None:
    raw = bytearray(build_batch([(b"k", b"v")]))
    assert raw[61] == 0x10  # record length 8
    raw[61] = 0x0E  # claim 7
    with pytest.raises(RecordBatchError, match="record 0"):
        list(RecordBatch(raw).records())


def test_header_key_not_utf8_is_read_as_java_does() -> None:
    """Kafka stores any bytes as a header key and Java decodes them with replacement
    characters: a record Kafka accepts must stay readable."""
    raw = bytearray(build_batch([Record(0, 0, None, None, [("ab", None)])]))
    pos = raw.index(b"ab")
    raw[pos] = 0xFF
    (record,) = RecordBatch(raw).records()
    assert record.headers == [("\ufffdb", None)]


def test_corrupt_compressed_records() -> None:
    raw = bytearray(build_batch([(b"k", b"v" * 100)], compression=CompressionType.ZSTD))
    raw[70:80] = b"\x00" * 10
    with pytest.raises(RecordBatchError, match="zstd"):
        list(RecordBatch(raw).records())
    raw = bytearray(build_batch([(b"k", b"v")]))
    struct.pack_into(">h", raw, 21, 6)
    with pytest.raises(RecordBatchError, match="codec id 6"):
        list(RecordBatch(raw).records())


def _parse_everything(buf: bytes) -> None:
    for batch in iter_batches(buf, allow_partial_tail=True):
        batch.crc_ok()
        batch.control_type()
        for _ in batch.records():
            pass


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_raise_only_protocol_errors(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        _parse_everything(data)
    with contextlib.suppress(ProtocolError):
        _parse_everything(data[:16] + b"\x02" + data[17:])  # get past the magic check


_SAMPLE = build_batch(
    [Record(i, i * 3, b"key%d" % i, b"value" * i, [("h", b"v"), ("n", None)]) for i in range(4)],
    base_timestamp=1000,
)


@settings(max_examples=500, deadline=None)
@given(
    edits=st.lists(st.tuples(st.integers(0, len(_SAMPLE) - 1), st.integers(0, 255)), max_size=4),
    cut=st.integers(0, len(_SAMPLE)),
    control=st.booleans(),
)
def test_mutated_batches_raise_only_protocol_errors(
    edits: list[tuple[int, int]], cut: int, control: bool
) -> None:
    raw = bytearray(_SAMPLE)
    for index, value in edits:
        if index != 16:
            raw[index] = value
    if control:
        raw[22] |= 0x20
    raw = raw[:cut] if cut >= BATCH_HEADER_SIZE else raw
    with contextlib.suppress(ProtocolError):
        _parse_everything(bytes(raw))


# -- real clients: kafka-python and aiokafka build, we read; we build, they read -----------

kafka_codec = pytest.importorskip("kafka.codec")
_KAFKA_PYTHON_HAS = {
    0: True,
    1: kafka_codec.has_gzip(),
    2: kafka_codec.has_snappy(),
    3: kafka_codec.has_lz4(),
    4: kafka_codec.has_zstd(),
}


def _kafka_python_codec(codec: int) -> None:
    if not _KAFKA_PYTHON_HAS[codec]:
        pytest.skip(f"kafka-python lacks its {CompressionType(codec).name} library")


SAMPLE_RECORDS: list[
    tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]
] = [
    (0, 1_700_000_000_000, b"key-0", b"value-0" * 50, []),
    (1, 1_700_000_000_005, None, b"no key", [("trace", b"abc"), ("empty", b"")]),
    (2, 1_700_000_000_003, b"tombstone", None, []),
    (3, 1_700_000_000_009, b"", b"", [("n", None)]),
    (4, 1_700_000_000_001, b"k" * 300, bytes(range(256)) * 40, [("h", b"x" * 200)]),
]


def _check_ours(raw: bytes | bytearray, *, transactional: bool, codec: int) -> None:
    b = RecordBatch(memoryview(raw))
    assert b.crc_ok()
    assert b.compression == codec
    assert b.is_transactional == transactional
    assert (b.base_offset, b.last_offset_delta, b.records_count) == (0, 4, 5)
    assert b.base_timestamp == 1_700_000_000_000
    assert b.max_timestamp == 1_700_000_000_009
    if transactional:
        assert (b.producer_id, b.producer_epoch, b.base_sequence) == (4242, 3, 17)
        assert b.last_sequence == 21
    got = [
        (r.offset_delta, b.base_timestamp + r.timestamp_delta, r.key, r.value, r.headers)
        for r in b.records()
    ]
    assert got == SAMPLE_RECORDS


@pytest.mark.parametrize("transactional", [False, True])
@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_kafka_python_built_batches_decode(codec: int, transactional: bool) -> None:
    _kafka_python_codec(codec)
    from kafka.record.default_records import DefaultRecordBatchBuilder

    pid, epoch, seq = (4242, 3, 17) if transactional else (-1, -1, -1)
    builder = DefaultRecordBatchBuilder(2, codec, transactional, pid, epoch, seq, 1 << 20)
    for offset, ts, key, value, hdrs in SAMPLE_RECORDS:
        assert builder.append(offset, ts, key, value, hdrs) is not None
    _check_ours(builder.build(), transactional=transactional, codec=codec)


@pytest.mark.parametrize("transactional", [False, True])
@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_aiokafka_built_batches_decode(codec: int, transactional: bool) -> None:
    aiokafka_codec = pytest.importorskip("aiokafka.codec")
    has = [
        True,
        True,
        aiokafka_codec.has_snappy(),
        aiokafka_codec.has_lz4(),
        aiokafka_codec.has_zstd(),
    ]
    if not has[codec]:
        pytest.skip(f"aiokafka lacks its {CompressionType(codec).name} library")
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    pid, epoch, seq = (4242, 3, 17) if transactional else (-1, -1, -1)
    builder = DefaultRecordBatchBuilder(2, codec, int(transactional), pid, epoch, seq, 1 << 20)
    for offset, ts, key, value, hdrs in SAMPLE_RECORDS:
        assert builder.append(offset, ts, key, value, hdrs) is not None
    _check_ours(builder.build(), transactional=transactional, codec=codec)


def _our_sample(codec: int) -> bytes:
    base = SAMPLE_RECORDS[0][1]
    return build_batch(
        [Record(o, ts - base, k, v, list(h)) for o, ts, k, v, h in SAMPLE_RECORDS],
        base_offset=1000,
        base_timestamp=base,
        compression=codec,
        producer_id=4242,
        producer_epoch=3,
        base_sequence=17,
        is_transactional=True,
        partition_leader_epoch=8,
    )


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_kafka_python_reads_our_batches(codec: int) -> None:
    _kafka_python_codec(codec)
    from kafka.record.default_records import DefaultRecordBatch

    theirs = DefaultRecordBatch(_our_sample(codec))
    assert theirs.validate_crc()
    assert (theirs.base_offset, theirs.last_offset_delta, theirs.compression_type) == (
        1000,
        4,
        codec,
    )
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (4242, 3, 17)
    assert theirs.is_transactional and theirs.leader_epoch == 8
    assert theirs.max_timestamp == 1_700_000_000_009
    got = [(r.offset - 1000, r.timestamp, r.key, r.value, r.headers) for r in theirs]
    assert got == [(o, ts, k, v, list(h)) for o, ts, k, v, h in SAMPLE_RECORDS]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_aiokafka_reads_our_batches(codec: int) -> None:
    aiokafka_codec = pytest.importorskip("aiokafka.codec")
    has = [
        True,
        True,
        aiokafka_codec.has_snappy(),
        aiokafka_codec.has_lz4(),
        aiokafka_codec.has_zstd(),
    ]
    if not has[codec]:
        pytest.skip(f"aiokafka lacks its {CompressionType(codec).name} library")
    from aiokafka.record.default_records import DefaultRecordBatch

    theirs = DefaultRecordBatch(_our_sample(codec))
    assert theirs.validate_crc()
    assert theirs.base_offset == 1000
    got = [(r.offset - 1000, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]
    assert got == [(o, ts, k, v, list(h)) for o, ts, k, v, h in SAMPLE_RECORDS]


@pytest.mark.parametrize("commit", [True, False])
def test_kafka_python_reads_our_control_batches(commit: bool) -> None:
    from kafka.record.default_records import DefaultRecordBatch

    raw = build_control_batch(
        commit=commit, producer_id=9, producer_epoch=2, coordinator_epoch=4, timestamp_ms=77
    )
    theirs = DefaultRecordBatch(raw)
    assert theirs.validate_crc()
    assert theirs.is_control_batch and theirs.is_transactional
    (marker,) = list(theirs)
    assert (marker.commit, marker.abort, marker.version) == (commit, not commit, 0)


def test_last_sequence_matches_kafka_python() -> None:
    from kafka.record.default_records import DefaultRecordBatch

    for base in (0, 5, INT32_MAX - 3, INT32_MAX):
        raw = build_batch([(None, b"x")] * 5, base_sequence=base, producer_id=1, producer_epoch=0)
        assert RecordBatch(raw).last_sequence == DefaultRecordBatch(raw).last_sequence
