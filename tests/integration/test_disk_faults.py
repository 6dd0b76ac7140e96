"""A disk that fills up, and a log dir that fails (issue #10).

Full disk: the broker's data dir is a small tmpfs (`mount -t tmpfs -o size=...`, as root);
where mounting is not permitted, the broker's test hook `ODRADEK_TEST_FAULTS`
(`odradek/broker/storage/faults.py`) makes writes there fail with ENOSPC after a byte budget
instead, and "freeing space" also lifts the rule. An idempotent acks=all confluent-kafka
producer writes until deliveries fail, every acknowledged record is kept, reads go on while
the disk is full, DeleteTopics frees space on the full disk, SIGTERM on a full disk exits 0,
producing resumes without a restart, and after a kill -9 and a clean restart every
acknowledged record is read back once, in order, with no gap and no consumer hang.

Every point of an append: the same hook fails the writes of one partition after a byte
budget chosen from the batch's size, so the failure lands before the batch, inside its
header, in its middle, one byte short, half-way through the offset index entry, half-way
through the time index entry: KAFKA_STORAGE_ERROR, the partition's files byte for byte as
before, the same batch then lands at the next offset without a restart, and every
acknowledged record is read back after a kill -9 and after a clean restart.

Failed dir: two log dirs, EIO injected on one through the same hook: its partition answers
KAFKA_STORAGE_ERROR for produce and fetch (read off the wire), the other dir's partition keeps
working, DescribeLogDirs reports the failed dir with KAFKA_STORAGE_ERROR, and a restart brings
it back with its records.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer, TopicPartition
from it_support import (
    TIMEOUT,
    BrokerProcess,
    Rec,
    StartBroker,
    admin,
    by_partition,
    confluent_consume_all,
    confluent_consumer,
    confluent_produce,
    create_topic,
)

from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.describe_log_dirs import (
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
)
from odradek.wire._generated.fetch import FetchRequest, FetchResponse
from odradek.wire._generated.produce import ProduceRequest, ProduceResponse
from odradek.wire.records import build_batch

pytestmark = [
    pytest.mark.timeout(300),
    # The fault hook is odradek's, and Kafka takes a full disk's dir offline (halting a
    # broker with one dir) instead of answering KAFKA_STORAGE_ERROR until space is freed.
    pytest.mark.skipif(bool(os.environ.get("ODRADEK_IT_SERVER_CMD")),
                       reason="odradek's storage fault handling and test hook"),
]

DISK_SIZE = 8 * 1024 * 1024
VALUE_PAD = b"x" * 1000
PARTITIONS = 2
SMALL_BROKER = {
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
}
# Rolls (and producer-state snapshots) while filling: below log.segment.bytes' 1 MiB floor
# (Kafka 4), so through Kafka's internal topic config.
SMALL_SEGMENTS = {"internal.segment.bytes": "262144"}
# What a delivery may fail with while the disk is full: the broker's answer, or the
# producer giving up on retrying it.
FULL_DISK_ERRORS = {KafkaError.KAFKA_STORAGE_ERROR, KafkaError._MSG_TIMED_OUT,
                    KafkaError._TIMED_OUT}


# --------------------------------------------------------------------------- the small disk


@dataclass
class SmallDisk:
    root: Path
    mounted: bool
    control: Path  # the fault hook's control file (used when not mounted)

    @property
    def env(self) -> dict[str, str]:
        return {} if self.mounted else {"ODRADEK_TEST_FAULTS": str(self.control)}

    def fill_after(self, budget: int) -> None:
        """Without a real small file system: writes there fail after `budget` more bytes."""
        if not self.mounted:
            self.control.write_text(f"ENOSPC {self.root} {budget}\n")

    def free(self) -> None:
        """After space was freed (a file or a topic deleted): lift the hook's rule."""
        if not self.mounted:
            self.control.write_text("")

    def fill_up(self, path: Path) -> None:
        """On the real small file system: take every byte left with a file at `path`."""
        if not self.mounted:
            return
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    root = tmp_path / "disk"
    root.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(root)],
        capture_output=True, check=False).returncode == 0
    control = tmp_path / "faults"
    control.write_text("")
    try:
        yield SmallDisk(root, mounted, control)
    finally:
        if mounted:  # lazily: a broker still running is stopped by its own fixture
            subprocess.run(["umount", "-l", str(root)], capture_output=True, check=False)


# --------------------------------------------------------------------------- producing


def value_of(seq: int) -> bytes:
    return b"%08d:" % seq + VALUE_PAD


def seq_of(value: bytes | None) -> int:
    assert value is not None
    return int(value[:8])


def idempotent_producer(bootstrap: str, timeout_ms: int) -> Producer:
    return Producer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 5,
        "message.timeout.ms": timeout_ms,
        "retry.backoff.ms": 50,
    })


def produce_until_errors(bootstrap: str, topic: str, seq: int) -> tuple[list[Rec], list[Any], int]:
    """Produce until deliveries fail (the disk is full); returns (acked, errors, next seq)."""
    producer = idempotent_producer(bootstrap, 3000)
    acked: list[Rec] = []
    errors: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked.append(Rec(msg.key(), msg.value(), partition=msg.partition(),
                             offset=msg.offset()))

    deadline = time.monotonic() + 120
    while not errors:
        assert time.monotonic() < deadline, f"no delivery failed after {len(acked)} acks"
        if len(producer) >= 2000:  # enough in flight: wait for them to be answered
            producer.poll(0.05)
            continue
        try:
            producer.produce(topic, key=b"k%d" % (seq % 7), value=value_of(seq),
                             on_delivery=on_delivery)
            seq += 1
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(TIMEOUT) == 0
    return acked, errors, seq


def produce_all(bootstrap: str, topic: str, seq: int, count: int) -> tuple[list[Rec], int]:
    """Produce `count` records that must all be acknowledged."""
    producer = idempotent_producer(bootstrap, int(TIMEOUT * 1000))
    acked: list[Rec] = []
    errors: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked.append(Rec(msg.key(), msg.value(), partition=msg.partition(),
                             offset=msg.offset()))

    for n in range(count):
        while True:
            try:
                producer.produce(topic, key=b"k%d" % ((seq + n) % 7), value=value_of(seq + n),
                                 on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(TIMEOUT) == 0
    assert not errors, f"delivery errors after space was freed: {errors[:5]}"
    assert len(acked) == count
    return acked, seq + count


def check_stored(bootstrap: str, topic: str, acked: list[Rec]) -> list[Rec]:
    """Every acknowledged record at its offset, once; per partition no gap, no duplicate, in
    the order produced; the end offsets (a restart's) match what is there."""
    stored = confluent_consume_all(bootstrap, topic, PARTITIONS)
    where = {(r.partition, r.offset): r.value for r in stored}
    missing = [r for r in acked if where.get((r.partition, r.offset)) != r.value]
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged records lost: {missing[:3]}"
    seqs = [seq_of(r.value) for r in stored]
    assert len(seqs) == len(set(seqs)), "a record is stored twice"
    consumer = confluent_consumer(bootstrap)
    try:
        for partition, group in by_partition(stored).items():
            offsets = [r.offset for r in group]
            assert offsets == list(range(len(group))), f"gap in partition {partition}"
            in_order = [seq_of(r.value) for r in group]
            assert in_order == sorted(in_order), f"partition {partition} out of order"
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                       timeout=10)
            assert (low, high) == (0, len(group)), f"wrong end offset of partition {partition}"
    finally:
        consumer.close()
    return stored


def stderr_since(broker: BrokerProcess, mark: int) -> str:
    return broker.stderr_text()[mark:]


# --------------------------------------------------------------------------- full disk


def test_a_full_disk_loses_no_acknowledged_record(small_disk: SmallDisk,
                                                  start_broker: StartBroker) -> None:
    root = small_disk.root
    ballast_file = root / "ballast.bin"
    ballast_file.write_bytes(b"\0" * (1024 * 1024))
    broker = start_broker(root / "data", overrides=SMALL_BROKER, env=small_disk.env)
    bootstrap = broker.bootstrap
    create_topic(bootstrap, "main", partitions=PARTITIONS, config=SMALL_SEGMENTS)
    create_topic(bootstrap, "ballast", partitions=1, config=SMALL_SEGMENTS)
    confluent_consume_all(bootstrap, "main", PARTITIONS)  # __consumer_offsets exists now
    confluent_produce(bootstrap, "ballast", [Rec(b"b", VALUE_PAD * 2)] * 1000)

    # 1. Fill the disk.
    small_disk.fill_after(3 * 1024 * 1024)
    acked, errors, seq = produce_until_errors(bootstrap, "main", 0)
    assert acked, "nothing was acknowledged before the disk filled"
    assert {e.code() for e in errors} <= FULL_DISK_ERRORS, errors[:5]
    broker.wait_for_log("append failed for lack of space")
    assert "Traceback" not in broker.stderr_text()
    # Reads are served while the disk is full.
    check_stored(bootstrap, "main", acked)

    # 2. Delete a topic on the full disk: it frees space, and producing resumes.
    client = admin(bootstrap)
    client.delete_topics(["ballast"], operation_timeout=TIMEOUT)["ballast"].result(TIMEOUT)
    small_disk.free()
    more, seq = produce_all(bootstrap, "main", seq, 300)
    acked += more
    check_stored(bootstrap, "main", acked)

    # 3. Fill it again, and stop the broker (SIGTERM) on the full disk: exit 0, no traceback.
    small_disk.fill_after(0)
    more, errors, seq = produce_until_errors(bootstrap, "main", seq)
    acked += more
    assert {e.code() for e in errors} <= FULL_DISK_ERRORS, errors[:5]
    filler = root / "filler.bin"
    small_disk.fill_up(filler)  # not one byte left for snapshots, index entries, checkpoints
    mark = len(broker.stderr_text())
    assert broker.stop() in broker.clean_exit_codes
    tail = stderr_since(broker, mark)
    assert "Traceback" not in tail, tail
    if small_disk.mounted:
        assert "not written" in tail, tail  # the shutdown skipped what it could not write

    # 4. Free space by deleting files; start, produce, kill -9, start, read everything.
    filler.unlink(missing_ok=True)
    ballast_file.unlink()
    small_disk.free()
    broker.start()
    check_stored(bootstrap, "main", acked)
    more, seq = produce_all(bootstrap, "main", seq, 300)
    acked += more
    broker.kill()
    broker.start()
    check_stored(bootstrap, "main", acked)

    # 5. And a clean restart.
    more, seq = produce_all(bootstrap, "main", seq, 100)
    acked += more
    assert broker.stop() in broker.clean_exit_codes
    broker.start()
    stored = check_stored(bootstrap, "main", acked)
    assert len(stored) >= len(acked)
    assert client.list_topics(timeout=10).topics.get("ballast") is None


# --------------------------------------------------------------------------- a failed log dir


def _call(port: int, api_key: int, version: int, request: Any, response_cls: Any) -> Any:
    """One request on a fresh connection, non-flexible versions only (header v1 / v0)."""
    client = b"disk-faults"
    body = b"".join(bytes(p) for p in request.encode(version))
    header = struct.pack(">hhih", api_key, version, 1, len(client)) + client
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        size = struct.unpack(">i", _recv(sock, 4))[0]
        frame = _recv(sock, size)
    response, _ = response_cls.decode(frame[4:], version)  # after the correlation id
    return response


def _recv(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, "connection closed by the broker"
        out += chunk
    return out


def _produce(broker: BrokerProcess, partition: int) -> ErrorCode:
    req = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name="t", partition_data=[
            ProduceRequest.PartitionProduceData(
                index=partition, records=build_batch([(b"k", b"raw")]))])])
    resp = _call(broker.port, ApiKey.PRODUCE, 8, req, ProduceResponse)
    return ErrorCode(resp.responses[0].partition_responses[0].error_code)


def _fetch(broker: BrokerProcess, partition: int) -> ErrorCode:
    req = FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
        topics=[FetchRequest.FetchTopic(topic="t", partitions=[
            FetchRequest.FetchPartition(partition=partition, current_leader_epoch=-1,
                                        fetch_offset=0, log_start_offset=-1,
                                        partition_max_bytes=1 << 20)])])
    resp = _call(broker.port, ApiKey.FETCH, 11, req, FetchResponse)
    return ErrorCode(resp.responses[0].partitions[0].error_code)


def _describe_log_dirs(broker: BrokerProcess) -> dict[str, Any]:
    req = DescribeLogDirsRequest()
    req.topics = None
    resp = _call(broker.port, ApiKey.DESCRIBE_LOG_DIRS, 1, req, DescribeLogDirsResponse)
    return {r.log_dir: r for r in resp.results}


def test_eio_on_one_log_dir_leaves_the_other_working(tmp_path: Path,
                                                      start_broker: StartBroker) -> None:
    d1, d2 = (tmp_path / "d1").resolve(), (tmp_path / "d2").resolve()
    d2.mkdir(parents=True)
    control = tmp_path / "faults"
    control.write_text("")
    broker = start_broker(d1, overrides={"log.dirs": f"{d1},{d2}", **SMALL_BROKER},
                          env={"ODRADEK_TEST_FAULTS": str(control)})
    create_topic(broker.bootstrap, "t", partitions=2, config=SMALL_SEGMENTS)
    placed = {p: (d1 if (d1 / f"t-{p}").exists() else d2) for p in range(2)}
    assert set(placed.values()) == {d1, d2}
    bad = next(p for p, d in placed.items() if d == d2)
    good = 1 - bad
    before = confluent_produce(broker.bootstrap, "t",
                               [Rec(b"k", b"before-%d" % p, partition=p) for p in (0, 1)])

    control.write_text(f"EIO {d2}\n")
    assert _produce(broker, bad) == ErrorCode.KAFKA_STORAGE_ERROR
    control.write_text("")  # a failed dir stays offline until a restart
    assert _produce(broker, bad) == ErrorCode.KAFKA_STORAGE_ERROR
    assert _fetch(broker, bad) == ErrorCode.KAFKA_STORAGE_ERROR
    assert _produce(broker, good) == ErrorCode.NONE
    assert _fetch(broker, good) == ErrorCode.NONE
    after = confluent_produce(broker.bootstrap, "t", [Rec(b"k", b"after", partition=good)])
    dirs = _describe_log_dirs(broker)
    assert dirs[str(d2)].error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert dirs[str(d1)].error_code == ErrorCode.NONE
    assert [(t.name, [p.partition_index for p in t.partitions])
            for t in dirs[str(d1)].topics if t.name == "t"] == [("t", [good])]
    broker.wait_for_log("log dir failed")

    # The broker stops cleanly with a failed dir, and a restart tries the dir again.
    assert broker.stop() in broker.clean_exit_codes
    broker.start()
    stored = {(r.partition, r.value) for r in confluent_consume_all(broker.bootstrap, "t", 2)}
    for rec in before + after:
        assert (rec.partition, rec.value) in stored
    assert _describe_log_dirs(broker)[str(d2)].error_code == ErrorCode.NONE


# --------------------------------------------------------------------------- every point of an append


def _produce_batch(broker: BrokerProcess, topic: str, batch: bytes) -> tuple[ErrorCode, int]:
    req = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=batch)])])
    resp = _call(broker.port, ApiKey.PRODUCE, 8, req, ProduceResponse)
    part = resp.responses[0].partition_responses[0]
    return ErrorCode(part.error_code), part.base_offset


def _batch(n: int) -> bytes:
    """Batch `n`: three records, timestamps rising with n (so each append adds a time index
    entry), all batches of one size."""
    return build_batch([(b"k%d" % j, b"batch-%03d-record-%d" % (n, j) + VALUE_PAD[:200])
                        for j in range(3)], base_timestamp=1_700_000_000_000 + n * 1000)


# (name, bytes the hook lets through in the failing append, given the batch's size B): the
# append writes the batch to `.log`, then an 8-byte `.index` entry, then a 12-byte
# `.timeindex` entry (index.interval.bytes=0: an entry with every batch after the first).
APPEND_POINTS = {
    "log write, nothing written": lambda size: None,
    "log write, inside the batch header": lambda size: 20,
    "log write, middle of the batch": lambda size: size // 2,
    "log write, one byte short": lambda size: size - 1,
    "offset index entry, half written": lambda size: size + 4,
    "time index entry, half written": lambda size: size + 8 + 6,
}


@pytest.mark.parametrize("point", list(APPEND_POINTS))
def test_a_write_failing_at_each_point_of_an_append_changes_nothing(
        tmp_path: Path, start_broker: StartBroker, point: str) -> None:
    """A real broker, a write failure injected (ENOSPC, the `ODRADEK_TEST_FAULTS` hook) at one
    point of an append: the producer gets KAFKA_STORAGE_ERROR on a connection that stays open,
    the partition's files are byte for byte as before, the same batch then lands at the next
    offset, and confluent-kafka reads every acknowledged record once, in order, also after a
    kill -9 and after a clean restart."""
    control = tmp_path / "faults"
    control.write_text("")
    broker = start_broker(tmp_path / "data", overrides=SMALL_BROKER,
                          env={"ODRADEK_TEST_FAULTS": str(control)})
    create_topic(broker.bootstrap, "t", partitions=1, config={"index.interval.bytes": "0"})
    part_dir = (tmp_path / "data" / "t-0").resolve()
    acked: list[bytes] = []
    for n in range(3):
        code, offset = _produce_batch(broker, "t", _batch(n))
        assert (code, offset) == (ErrorCode.NONE, n * 3)
        acked.append(_batch(n))
    size = len(_batch(3))
    assert {len(b) for b in acked} == {size}
    before = {p.name: p.read_bytes() for p in part_dir.iterdir() if p.is_file()}

    budget = APPEND_POINTS[point](size)
    control.write_text(f"ENOSPC {part_dir}" + ("" if budget is None else f" {budget}") + "\n")
    code, _ = _produce_batch(broker, "t", _batch(3))
    assert code == ErrorCode.KAFKA_STORAGE_ERROR
    after = {p.name: p.read_bytes() for p in part_dir.iterdir() if p.is_file()}
    assert after == before, sorted(k for k in after if after.get(k) != before.get(k))
    broker.wait_for_log("append failed for lack of space")

    control.write_text("")  # space is back: no restart
    assert _produce_batch(broker, "t", _batch(3)) == (ErrorCode.NONE, 9)
    acked.append(_batch(3))
    want = [b"batch-%03d-record-%d" % (n, j) for n in range(4) for j in range(3)]

    def check() -> None:
        stored = confluent_consume_all(broker.bootstrap, "t", 1)
        assert [r.offset for r in stored] == list(range(12))
        assert [(r.value or b"")[:len(want[0])] for r in stored] == want

    check()
    broker.kill()
    broker.start()
    check()
    assert broker.stop() in broker.clean_exit_codes
    broker.start()
    check()
    assert "Traceback" not in broker.stderr_text()
