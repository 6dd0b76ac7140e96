"""Consumer groups against a real broker with kafka-python, confluent-kafka and aiokafka.

- A lone member is assigned every partition in well under a second (the broker does not
  sit out `group.initial.rebalance.delay.ms` for it).
- Three members split the partitions and rebalance as members join, leave and come back
  while a producer keeps writing; every produced message is consumed, and no message at an
  offset below an already acknowledged commit is ever delivered again.
- Committed offsets survive a broker restart (clean or kill -9): OffsetFetch returns them
  and a new member resumes exactly where the group left off.
- The admin view: list, describe and delete groups.

Each member runs in its own thread (aiokafka members run their own event loop there).
Waiting is always for a condition with a deadline.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from it_support import (
    TIMEOUT,
    BrokerProcess,
    StartBroker,
    admin,
    confluent_consumer,
    create_topic,
    topic_name,
    wait_until,
)

CLIENTS = ("kafka-python", "confluent", "aiokafka")
SESSION_MS = 6000  # the broker's default group.min.session.timeout.ms
HEARTBEAT_MS = 500


class Ledger:
    """Every delivery and acknowledged commit, from every member, in one place."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked: dict[int, int] = {}  # partition -> highest acknowledged committed offset
        self.delivered: Counter[tuple[int, int]] = Counter()
        self.violations: list[str] = []

    def deliver(self, member: str, partition: int, offset: int) -> None:
        with self.lock:
            floor = self.acked.get(partition, 0)
            if offset < floor:
                self.violations.append(f"{member} got {partition}@{offset} after a commit of "
                                       f"{floor} was acknowledged")
            self.delivered[(partition, offset)] += 1

    def committed(self, partition: int, offset: int) -> None:
        with self.lock:
            self.acked[partition] = max(self.acked.get(partition, 0), offset)


class Member(threading.Thread):
    """One consumer-group member: poll, record, commit what it processed, until stopped."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str, ledger: Ledger,
                 name: str, **extra: Any) -> None:
        super().__init__(name=f"member-{name}", daemon=True)
        self.client, self.bootstrap, self.group, self.topic = client, bootstrap, group, topic
        self.ledger, self.member_name, self.extra = ledger, name, extra
        self.stop_event = threading.Event()
        self.assignment: frozenset[int] = frozenset()
        self.assigned_at: float | None = None
        self.started_at = time.monotonic()
        self.error: BaseException | None = None
        self.closed = threading.Event()

    def _assigned(self, partitions: frozenset[int]) -> None:
        if partitions and self.assigned_at is None:
            self.assigned_at = time.monotonic()
        self.assignment = partitions

    def _processed(self, batch: dict[int, list[int]]) -> None:
        for p, offsets in batch.items():
            for o in offsets:
                self.ledger.deliver(self.member_name, p, o)

    def _acked(self, batch: dict[int, list[int]]) -> None:
        for p, offsets in batch.items():
            self.ledger.committed(p, max(offsets) + 1)

    def run(self) -> None:
        try:
            {"kafka-python": self._run_kafka_python, "confluent": self._run_confluent,
             "aiokafka": lambda: asyncio.run(self._run_aiokafka())}[self.client]()
        except BaseException as e:  # reported by stop()
            self.error = e
        finally:
            self.closed.set()

    def stop(self) -> None:
        self.stop_event.set()
        self.join(TIMEOUT)
        assert not self.is_alive(), f"{self.member_name} did not stop"
        if self.error is not None:
            raise AssertionError(f"{self.member_name} failed: {self.error!r}") from self.error

    def _run_kafka_python(self) -> None:
        from kafka import KafkaConsumer
        from kafka.errors import KafkaError

        c = KafkaConsumer(
            self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
            client_id=self.member_name, enable_auto_commit=False,
            auto_offset_reset="earliest", session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=HEARTBEAT_MS, fetch_max_wait_ms=100, max_poll_records=100,
            **self.extra)
        try:
            while not self.stop_event.is_set():
                records = c.poll(timeout_ms=100)
                self._assigned(frozenset(tp.partition for tp in c.assignment()))
                batch = {tp.partition: [m.offset for m in msgs] for tp, msgs in records.items()}
                if batch:
                    self._processed(batch)
                    try:
                        c.commit()
                    except KafkaError:
                        continue  # e.g. a rebalance started; the next owner redoes these
                    self._acked(batch)
        finally:
            c.close()

    def _run_confluent(self) -> None:
        c = confluent_consumer(self.bootstrap, **{
            "group.id": self.group, "client.id": self.member_name,
            "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS,
            **self.extra})
        c.subscribe([self.topic])
        try:
            while not self.stop_event.is_set():
                msgs = c.consume(100, 0.1)
                self._assigned(frozenset(tp.partition for tp in c.assignment()))
                batch: dict[int, list[int]] = {}
                for m in msgs:
                    if m.error() is None:
                        batch.setdefault(m.partition(), []).append(m.offset())
                if batch:
                    self._processed(batch)
                    try:
                        c.commit(asynchronous=False)
                    except KafkaException:
                        continue
                    self._acked(batch)
        finally:
            c.close()

    async def _run_aiokafka(self) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.errors import KafkaError

        c = AIOKafkaConsumer(
            self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
            client_id=self.member_name, enable_auto_commit=False,
            auto_offset_reset="earliest", session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=HEARTBEAT_MS, fetch_max_wait_ms=100, max_poll_records=100,
            **self.extra)
        await c.start()
        try:
            while not self.stop_event.is_set():
                records = await c.getmany(timeout_ms=100)
                self._assigned(frozenset(tp.partition for tp in c.assignment()))
                batch = {tp.partition: [m.offset for m in msgs] for tp, msgs in records.items()}
                if batch:
                    self._processed(batch)
                    try:
                        await c.commit()
                    except KafkaError:
                        continue
                    self._acked(batch)
        finally:
            await c.stop()


class BackgroundProducer(threading.Thread):
    """Writes keyed records round the partitions until stopped; remembers what was acked."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(name="producer", daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
        self.topic = topic
        self.stop_event = threading.Event()
        self.acked: set[tuple[int, int]] = set()
        self.errors: list[Any] = []

    def _on_delivery(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(err)
        else:
            self.acked.add((msg.partition(), msg.offset()))

    def run(self) -> None:
        n = 0
        while not self.stop_event.is_set():
            self.producer.produce(self.topic, key=f"k{n}".encode(), value=f"v{n}".encode(),
                                  on_delivery=self._on_delivery)
            self.producer.poll(0.005)
            n += 1
        assert self.producer.flush(TIMEOUT) == 0

    def stop(self) -> set[tuple[int, int]]:
        self.stop_event.set()
        self.join(TIMEOUT)
        assert not self.is_alive() and not self.errors, self.errors[:5]
        return self.acked


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    c = confluent_consumer(bootstrap)
    try:
        return {p: c.get_watermark_offsets(CTopicPartition(topic, p), timeout=10)[1]
                for p in range(partitions)}
    finally:
        c.close()


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """OffsetFetch through confluent-kafka's admin client."""
    request = ConsumerGroupTopicPartitions(group, [CTopicPartition(topic, p)
                                                   for p in range(partitions)])
    client = admin(bootstrap)  # keep a reference: a collected client drops its futures
    result = client.list_consumer_group_offsets([request])[group].result(TIMEOUT)
    return {tp.partition: tp.offset for tp in result.topic_partitions}


def produce_n(bootstrap: str, topic: str, n: int, start: int = 0) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(start, start + n):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    assert p.flush(TIMEOUT) == 0


def split_evenly(members: list[Member], partitions: int) -> Callable[[], bool]:
    def check() -> bool:
        sets = [m.assignment for m in members]
        union = frozenset().union(*sets)
        sizes = sorted(len(s) for s in sets)
        return (union == frozenset(range(partitions)) and sum(sizes) == partitions
                and sizes[-1] - sizes[0] <= 1)
    return check


# -- tests ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("client", CLIENTS)
def test_single_member_is_assigned_in_under_a_second(broker: BrokerProcess, client: str) -> None:
    topic = topic_name()
    create_topic(broker.bootstrap, topic, partitions=3)
    # The broker's first FindCoordinator creates __consumer_offsets (50 partitions): that
    # one-off cost comes before any join, so it is paid here, outside the measurement.
    committed_offsets(broker.bootstrap, topic_name("warm-up"), topic, 1)
    member = Member(client, broker.bootstrap, topic_name("g"), topic, Ledger(), "solo")
    member.start()
    try:
        wait_until(lambda: member.assignment == {0, 1, 2} or member.closed.is_set(),
                   what="assignment")
        assert member.assigned_at is not None, member.error
        took = member.assigned_at - member.started_at
        # includes the client's bootstrap, FindCoordinator, JoinGroup x2 and SyncGroup
        assert took < 1.0, f"{client} waited {took:.2f}s for its assignment"
    finally:
        member.stop()


@pytest.mark.parametrize("client", CLIENTS)
def test_three_members_rebalance_while_producing(broker: BrokerProcess, client: str) -> None:
    partitions = 6
    topic, group = topic_name(), topic_name("g")
    create_topic(broker.bootstrap, topic, partitions=partitions)
    ledger = Ledger()
    producer = BackgroundProducer(broker.bootstrap, topic)
    producer.start()
    members: list[Member] = []

    def add(name: str) -> Member:
        m = Member(client, broker.bootstrap, group, topic, ledger, name)
        m.start()
        members.append(m)
        return m

    try:
        a = add("a")
        wait_until(lambda: a.assignment == frozenset(range(partitions)), what="a owns all")
        b = add("b")
        wait_until(split_evenly([a, b], partitions), what="a and b split")
        c = add("c")
        wait_until(split_evenly([a, b, c], partitions), what="a, b and c split")
        c.stop()  # leaves the group
        members.remove(c)
        wait_until(split_evenly([a, b], partitions), what="split after c left")
        c2 = add("c2")  # c comes back as a new process
        wait_until(split_evenly([a, b, c2], partitions), what="split after c came back")
        a.stop()
        members.remove(a)
        wait_until(split_evenly([b, c2], partitions), what="split after a left")
        produced = producer.stop()
        assert len(produced) > 100
        ends = end_offsets(broker.bootstrap, topic, partitions)

        def all_committed() -> bool:
            with ledger.lock:
                return all(ledger.acked.get(p, 0) >= ends[p] for p in range(partitions))

        wait_until(all_committed, what="every produced message committed")
    finally:
        if producer.is_alive():
            producer.stop_event.set()
        for m in members:
            m.stop()
    assert not ledger.violations, ledger.violations[:10]
    missing = produced - set(ledger.delivered)
    assert not missing, f"{len(missing)} produced messages never consumed, e.g. {sorted(missing)[:5]}"
    assert committed_offsets(broker.bootstrap, group, topic, partitions) == ends


@pytest.mark.parametrize(("client", "hard"), [("kafka-python", False), ("confluent", True),
                                              ("aiokafka", False)])
def test_committed_offsets_survive_a_broker_restart(start_broker: StartBroker, tmp_path: Path,
                                                    client: str, hard: bool) -> None:
    broker = start_broker(tmp_path / "data")
    partitions = 3
    topic, group = topic_name(), topic_name("g")
    create_topic(broker.bootstrap, topic, partitions=partitions)
    produce_n(broker.bootstrap, topic, 30)
    ends = end_offsets(broker.bootstrap, topic, partitions)
    ledger = Ledger()
    first = Member(client, broker.bootstrap, group, topic, ledger, "first")
    first.start()
    try:
        wait_until(lambda: all(ledger.acked.get(p, 0) >= ends[p] for p in range(partitions)),
                   what="first member commits everything")
    finally:
        first.stop()
    assert committed_offsets(broker.bootstrap, group, topic, partitions) == ends

    broker.restart(hard=hard)
    assert committed_offsets(broker.bootstrap, group, topic, partitions) == ends
    produce_n(broker.bootstrap, topic, 15, start=30)
    new_ends = end_offsets(broker.bootstrap, topic, partitions)
    second_ledger = Ledger()
    second = Member(client, broker.bootstrap, group, topic, second_ledger, "second")
    second.start()
    try:
        wait_until(lambda: all(second_ledger.acked.get(p, 0) >= new_ends[p]
                               for p in range(partitions)), what="second member catches up")
    finally:
        second.stop()
    # the restarted broker resumed the group: only the 15 new messages were delivered
    resumed = {p: sorted(o for (q, o) in second_ledger.delivered if q == p)
               for p in range(partitions)}
    for p in range(partitions):
        assert resumed[p] == list(range(ends[p], new_ends[p])), (p, resumed[p][:5], ends[p])
    assert committed_offsets(broker.bootstrap, group, topic, partitions) == new_ends


def test_static_member_restart_keeps_its_partitions(broker: BrokerProcess) -> None:
    partitions = 4
    topic, group = topic_name(), topic_name("g")
    create_topic(broker.bootstrap, topic, partitions=partitions)
    ledger = Ledger()
    a = Member("confluent", broker.bootstrap, group, topic, ledger, "a",
               **{"group.instance.id": "instance-a"})
    b = Member("confluent", broker.bootstrap, group, topic, ledger, "b",
               **{"group.instance.id": "instance-b"})
    a.start()
    b.start()
    try:
        wait_until(split_evenly([a, b], partitions), what="a and b split")
        owned_by_b = b.assignment
        b.stop()  # a static member's close does not leave the group
        b2 = Member("confluent", broker.bootstrap, group, topic, ledger, "b2",
                    **{"group.instance.id": "instance-b"})
        b2.start()
        b = b2
        wait_until(lambda: b2.assignment == owned_by_b, what="b2 gets b's partitions back")
        assert a.assignment == frozenset(range(partitions)) - owned_by_b
    finally:
        a.stop()
        b.stop()


def test_admin_lists_describes_and_deletes_groups(broker: BrokerProcess) -> None:
    topic, group = topic_name(), topic_name("g")
    create_topic(broker.bootstrap, topic, partitions=2)
    produce_n(broker.bootstrap, topic, 10)
    ledger = Ledger()
    m = Member("confluent", broker.bootstrap, group, topic, ledger, "m")
    m.start()
    client = admin(broker.bootstrap)
    try:
        wait_until(lambda: sum(ledger.acked.values()) >= 10, what="member commits")
        desc = client.describe_consumer_groups([group])[group].result(TIMEOUT)
        assert str(desc.state).endswith("STABLE")
        assert len(desc.members) == 1 and desc.members[0].client_id == "m"
        assert {tp.partition for tp in desc.members[0].assignment.topic_partitions} == {0, 1}
        listed = client.list_consumer_groups().result(TIMEOUT)
        assert group in {g.group_id for g in listed.valid}
        busy = client.delete_consumer_groups([group])[group]
        with pytest.raises(KafkaException) as refused:
            busy.result(TIMEOUT)
        assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
    finally:
        m.stop()
    desc = client.describe_consumer_groups([group])[group].result(TIMEOUT)
    assert str(desc.state).endswith("EMPTY")
    client.delete_consumer_groups([group])[group].result(TIMEOUT)
    listed = client.list_consumer_groups().result(TIMEOUT)
    assert group not in {g.group_id for g in listed.valid}
    assert committed_offsets(broker.bootstrap, group, topic, 2) == {0: -1001, 1: -1001}
