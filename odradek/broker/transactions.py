"""The transaction coordinator's shell: producer ids, `__transaction_state`, markers, timers.

The sans-IO `TransactionCoordinator` decides; this module implements its ports with the
broker's storage, synchronously (no await inside a coordinator call, so calls never
interleave and a response is sent only after its record and markers are in the logs):

- Producer ids come in blocks of 1000. Before an id of a block is handed out, the block's end
  is persisted in `<first log dir>/producer-id-block`, so ids are never reused after a restart
  or crash. File layout (UTF-8 JSON, replaced atomically):
  `{"version": 1, "next_block_start": <int64>}`.
- `__transaction_state` is created on first use with `transaction.state.log.num.partitions`
  partitions, `cleanup.policy=compact`, `segment.bytes=transaction.state.log.segment.bytes`;
  each transition is one record in one uncompressed batch (formats in
  `coordinator/txn/log_format.py`).
- Markers are control batches appended to each partition of the transaction with the
  producer's id and epoch (origin COORDINATOR: epoch checks, no sequence checks); a marker on
  `__consumer_offsets` also tells the group coordinator to commit or drop that producer's
  staged offsets. A deleted partition needs no marker.
- On start `__transaction_state` is replayed; a timer task then completes transactions caught
  in PrepareCommit/PrepareAbort (after the group coordinator loaded, since markers may land in
  `__consumer_offsets`), and every
  `transaction.abort.timed.out.transaction.cleanup.interval.ms` aborts timed-out transactions
  and retries failed markers; every `transaction.remove.expired.transaction.cleanup.interval.ms`
  it expires idle transactional ids, and every `producer.id.expiration.check.interval.ms` it
  drops idle producers (`producer.id.expiration.ms`) from every partition's producer state.
"""

from __future__ import annotations

import json
import os
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import structlog

from odradek.broker.cluster import LEADER_EPOCH, ClusterError
from odradek.broker.storage.log import PartitionLog, StorageError
from odradek.broker.storage.producer_state import Origin, ProducerStateError
from odradek.coordinator.txn.coordinator import (
    ProducerIdsExhaustedError,
    TransactionCoordinator,
    TxnConfig,
)
from odradek.coordinator.txn.log_format import (
    TRANSACTION_STATE_TOPIC,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from odradek.coordinator.txn.state import TopicPartition, TxnState, TxnTransit
from odradek.wire import ErrorCode, ProtocolError
from odradek.wire.records import build_batch, build_control_batch, iter_batches

if TYPE_CHECKING:
    from odradek.broker.broker import Broker

log = structlog.get_logger("odradek.transactions")

OFFSETS_TOPIC = "__consumer_offsets"
PRODUCER_ID_BLOCK_FILE = "producer-id-block"
PRODUCER_ID_BLOCK_SIZE = 1000
LOAD_CHUNK_BYTES = 1 << 20
_INT64_MAX = 2**63 - 1


class ProducerIdAllocator:
    """Hands out producer ids from persisted blocks (Kafka's ProducerIdManager, one node)."""

    def __init__(self, path: Path, block_size: int = PRODUCER_ID_BLOCK_SIZE) -> None:
        self.path = path
        self.block_size = block_size
        self._next = self._block_end = self._read()

    def _read(self) -> int:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return 0
        except (OSError, ValueError) as exc:
            raise OSError(f"unreadable producer id block file {self.path}: {exc}") from exc
        start = data.get("next_block_start") if isinstance(data, dict) else None
        if not isinstance(start, int) or start < 0:
            raise OSError(f"producer id block file {self.path} has no valid next_block_start")
        return start

    def _write(self, next_block_start: int) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        data = json.dumps({"version": 1, "next_block_start": next_block_start}).encode()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)

    def next_id(self) -> int:
        if self._next >= self._block_end:
            end = self._next + self.block_size
            if end > _INT64_MAX:
                raise ProducerIdsExhaustedError("producer ids exhausted")
            self._write(end)  # reserve the block before using it
            self._block_end = end
        pid = self._next
        self._next += 1
        return pid


def _int_setting(broker: Broker, name: str) -> int:
    value = broker.config.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"setting {name} is not an integer: {value!r}")
    return value


class TransactionShell:
    """Implements `TxnPorts` for the broker's coordinator."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        cfg = broker.config
        existing = broker.cluster.get(TRANSACTION_STATE_TOPIC)
        partitions = existing.partitions if existing else cfg.transaction_state_log_num_partitions
        self.coordinator = TransactionCoordinator(
            TxnConfig(max_timeout_ms=cfg.transaction_max_timeout_ms,
                      state_partitions=partitions,
                      id_expiration_ms=cfg.transactional_id_expiration_ms),
            self)
        self.producer_ids = ProducerIdAllocator(cfg.log_dirs[0] / PRODUCER_ID_BLOCK_FILE)
        self._loaded = False
        self._recovered = False
        self._appended = False
        self._next_id_expiry: int | None = None
        self._next_producer_expiry: int | None = None

    # -- TxnPorts -------------------------------------------------------------------------------

    def now_ms(self) -> int:
        return self.broker.now_ms()

    def next_producer_id(self) -> int:
        return self.producer_ids.next_id()

    def persist(self, transactional_id: str, partition: int, transit: TxnTransit | None
                ) -> ErrorCode:
        plog = self._state_log(partition)
        if plog is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        value = None if transit is None else encode_value(transit)
        now = self.broker.now_ms()
        raw = build_batch([(encode_key(transactional_id), value)], base_timestamp=now)
        try:
            plog.append(memoryview(bytearray(raw)), leader_epoch=LEADER_EPOCH, now_ms=now,
                        origin=Origin.COORDINATOR)
        except (StorageError, OSError) as exc:
            log.error("cannot write __transaction_state", partition=partition,
                      transactional_id=transactional_id, error=str(exc))
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.NONE

    def write_markers(self, transactional_id: str, producer_id: int, producer_epoch: int,
                      coordinator_epoch: int, commit: bool,
                      partitions: set[TopicPartition]) -> set[TopicPartition]:
        done: set[TopicPartition] = set()
        broker = self.broker
        now = broker.now_ms()
        for topic, partition in sorted(partitions):
            plog = broker.partition_log(topic, partition)
            if plog is None or not broker.cluster.has_partition(topic, partition):
                done.add((topic, partition))  # deleted: nothing to mark
                continue
            raw = build_control_batch(commit=commit, producer_id=producer_id,
                                      producer_epoch=producer_epoch,
                                      coordinator_epoch=coordinator_epoch, timestamp_ms=now)
            try:
                plog.append(memoryview(bytearray(raw)), leader_epoch=LEADER_EPOCH, now_ms=now,
                            origin=Origin.COORDINATOR)
            except ProducerStateError as exc:
                # As Kafka: a marker the partition refuses (a newer epoch or coordinator wrote
                # there) will never be accepted; give up on it rather than block forever.
                log.error("transaction marker refused", transactional_id=transactional_id,
                          topic=topic, partition=partition, error=str(exc))
            except (StorageError, OSError) as exc:
                log.error("cannot write transaction marker", transactional_id=transactional_id,
                          topic=topic, partition=partition, error=str(exc))
                continue
            done.add((topic, partition))
            self._appended = True
            if topic == OFFSETS_TOPIC:
                self._complete_group_offsets(producer_id, commit)
        return done

    def _complete_group_offsets(self, producer_id: int, commit: bool) -> None:
        from odradek.broker import groups

        groups.shell(self.broker).coordinator.complete_txn(producer_id, commit)

    # -- __transaction_state ---------------------------------------------------------------------

    def ensure_state_topic(self) -> bool:
        cluster = self.broker.cluster
        if cluster.get(TRANSACTION_STATE_TOPIC) is not None:
            return True
        configs: dict[str, str | None] = {
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",
            "segment.bytes": str(_int_setting(self.broker, "transaction.state.log.segment.bytes")),
        }
        try:
            topic = cluster.create_topic(TRANSACTION_STATE_TOPIC,
                                         self.coordinator.config.state_partitions, configs)
        except (ClusterError, OSError) as exc:
            log.error("cannot create __transaction_state", error=str(exc))
            return False
        log.info("created __transaction_state", partitions=topic.partitions)
        return True

    def _state_log(self, partition: int) -> PartitionLog | None:
        if not self.ensure_state_topic():
            return None
        return self.broker.partition_log(TRANSACTION_STATE_TOPIC, partition)

    def load(self) -> None:
        """Replay every partition of `__transaction_state` into the coordinator."""
        if self._loaded:
            return
        self._loaded = True
        topic = self.broker.cluster.get(TRANSACTION_STATE_TOPIC)
        if topic is None:
            return
        records = 0
        for partition in range(topic.partitions):
            plog = self.broker.partition_log(TRANSACTION_STATE_TOPIC, partition)
            if plog is None:
                continue
            offset = plog.log_start_offset
            while offset < plog.log_end_offset:
                data = plog.read(offset, LOAD_CHUNK_BYTES)
                if not data:
                    break
                for batch in iter_batches(data):
                    offset = batch.next_offset
                    if batch.is_control:
                        continue
                    try:
                        decoded = [(tid, decode_value(tid, r.value)) for r in batch.records()
                                   if r.key is not None
                                   and (tid := decode_key(r.key)) is not None]
                    except ProtocolError as exc:
                        log.error("skipping unreadable __transaction_state batch",
                                  partition=partition, offset=batch.base_offset, error=str(exc))
                        continue
                    records += len(decoded)
                    self.coordinator.load(decoded)
        txns = self.coordinator.txns
        log.info("transaction coordinator loaded", records=records, transactional_ids=len(txns),
                 unfinished=sum(m.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
                                for m in txns.values()))

    async def recover(self) -> None:
        """Complete transactions caught in PrepareCommit/PrepareAbort by the last shutdown."""
        if self._recovered:
            return
        self._recovered = True
        if any(tp[0] == OFFSETS_TOPIC for m in self.coordinator.txns.values()
               for tp in m.partitions):
            from odradek.broker import groups

            await groups.shell(self.broker).ready()
        found = self.coordinator.complete_recovered()
        self.flush_notifications()
        if found:
            log.info("completed transactions left unfinished at shutdown", count=found)

    # -- timers ---------------------------------------------------------------------------------

    async def run(self) -> None:
        abort_every = _int_setting(
            self.broker, "transaction.abort.timed.out.transaction.cleanup.interval.ms")
        await self.recover()
        while True:
            await anyio.sleep(abort_every / 1000)
            try:
                self.tick(self.broker.now_ms())
            except Exception:
                log.exception("transaction coordinator timer failed")

    def tick(self, now: int) -> None:
        """One round of the timer task: abort timed-out transactions and retry failed markers;
        when their intervals passed, expire idle transactional ids and idle producers."""
        for tid in self.coordinator.abort_timed_out():
            log.info("aborted timed-out transaction", transactional_id=tid)
        self.coordinator.retry_markers()
        id_every = _int_setting(
            self.broker, "transaction.remove.expired.transaction.cleanup.interval.ms")
        if self._next_id_expiry is None:
            self._next_id_expiry = now + id_every
        if now >= self._next_id_expiry:
            self._next_id_expiry = now + id_every
            for tid in self.coordinator.expire_transactional_ids():
                log.info("expired transactional id", transactional_id=tid)
        producer_every = _int_setting(self.broker, "producer.id.expiration.check.interval.ms")
        if self._next_producer_expiry is None:
            self._next_producer_expiry = now + producer_every
        if now >= self._next_producer_expiry:
            self._next_producer_expiry = now + producer_every
            expiration = self.broker.config.producer_id_expiration_ms
            removed = sum(plog.producer_state.remove_expired(now, expiration)
                          for plog in self.broker.logs.logs().values())
            if removed:
                log.info("expired idle producers", count=removed)
        self.flush_notifications()

    def flush_notifications(self) -> None:
        """Wake fetches waiting on the partitions markers were written to."""
        if self._appended:
            self._appended = False
            self.broker.notify_appended()


_SHELLS: weakref.WeakKeyDictionary[Broker, TransactionShell] = weakref.WeakKeyDictionary()


def shell(broker: Broker) -> TransactionShell:
    """The broker's transaction coordinator shell (created and loaded on first use)."""
    found = _SHELLS.get(broker)
    if found is None:
        found = _SHELLS[broker] = TransactionShell(broker)
        found.load()
    return found


async def start(broker: Broker, tg: anyio.abc.TaskGroup) -> None:
    """Broker start-up hook: replay `__transaction_state` and run the timers in `tg`."""
    tg.start_soon(shell(broker).run, name="transaction-coordinator")
