"""Online migration of a group between the classic and the consumer (KIP-848) protocols.

Two kafka-python consumers (classic protocol, eager `range`) share a topic; a confluent-kafka
consumer with group.protocol=consumer joins: the broker upgrades the group to a consumer
group and the classic members go on inside it (JoinGroup/SyncGroup/Heartbeat served by the
consumer group). The broker is killed (-9) in the middle and rebuilds the mixed group. Then the
consumer-protocol member leaves: the group is downgraded to a classic one and the two
kafka-python members take every partition again. Records keep flowing throughout.

A record counts as consumed when the commit after it succeeded (each member commits
synchronously after every record); a failed commit (the member's generation moved on) means
the record is delivered again, as with Kafka. The check: every produced record committed
exactly once, none committed twice.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from it_support import (
    TIMEOUT,
    Rec,
    StartBroker,
    admin,
    confluent_produce,
    create_topic,
    topic_name,
    wait_until,
)

PARTITIONS = 6
OVERRIDES = {
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.session.timeout.ms": "6000",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
}

Delivered = Counter[tuple[int, int]]


class ClassicMember(threading.Thread):
    """A kafka-python consumer: records counted once their commit succeeded."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str,
                 delivered: Delivered, lock: threading.Lock) -> None:
        super().__init__(name=name, daemon=True)
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.delivered, self.lock = delivered, lock
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.commit_failures: list[str] = []
        self.retried: list[str] = []  # retriable errors poll() raised
        self.assigned: set[int] = set()

    def run(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer
        from kafka.errors import CommitFailedError, KafkaError
        from kafka.structs import OffsetAndMetadata

        member = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                member.assigned.difference_update(tp.partition for tp in revoked)

            def on_partitions_assigned(self, assigned: Any) -> None:
                member.assigned.update(tp.partition for tp in assigned)

        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap, group_id=self.group, enable_auto_commit=False,
            auto_offset_reset="earliest", session_timeout_ms=6000, heartbeat_interval_ms=300,
            max_poll_records=20, fetch_max_wait_ms=100, request_timeout_ms=20000,
            retry_backoff_ms=100, reconnect_backoff_ms=100)
        consumer.subscribe([self.topic], listener=Listener())
        try:
            while not self.stop.is_set():
                try:
                    batches = consumer.poll(timeout_ms=200)
                except KafkaError as exc:
                    if not exc.retriable:
                        raise
                    # kafka-python raises a refused connect from poll() while the broker
                    # restarts; an application polls again.
                    self.retried.append(repr(exc))
                    continue
                for tp, msgs in batches.items():
                    for msg in msgs:
                        if tp.partition not in member.assigned:
                            break  # revoked while handling this batch
                        try:
                            consumer.commit({tp: OffsetAndMetadata(msg.offset + 1, None, -1)})
                        except (CommitFailedError, KafkaError) as exc:
                            # Read it again (or its next owner will, from the last commit).
                            self.commit_failures.append(repr(exc))
                            if tp.partition in member.assigned:
                                consumer.seek(tp, msg.offset)
                            break
                        with self.lock:
                            self.delivered[(msg.partition, msg.offset)] += 1
        except Exception as exc:  # reported by the test
            self.errors.append(repr(exc))
        finally:
            consumer.close()  # LeaveGroup


class ConsumerProtocolMember(threading.Thread):
    """A confluent-kafka consumer with group.protocol=consumer."""

    def __init__(self, bootstrap: str, group: str, topic: str, delivered: Delivered,
                 lock: threading.Lock) -> None:
        super().__init__(name="kip848", daemon=True)
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100})
        self.topic, self.delivered, self.lock = topic, delivered, lock
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.commit_failures: list[str] = []
        self.assigned: set[int] = set()

    def run(self) -> None:
        self.consumer.subscribe(
            [self.topic],
            on_assign=lambda c, ps: self.assigned.update(p.partition for p in ps),
            on_revoke=lambda c, ps: self.assigned.difference_update(p.partition for p in ps))
        try:
            while not self.stop.is_set():
                msg = self.consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error():
                    self.errors.append(str(msg.error()))
                    continue
                try:
                    self.consumer.commit(message=msg, asynchronous=False)
                except KafkaException as exc:
                    # Read it again (or its next owner will, from the last commit).
                    self.commit_failures.append(repr(exc))
                    if msg.partition() in self.assigned:
                        self.consumer.seek(TopicPartition(self.topic, msg.partition(), msg.offset()))
                    continue
                with self.lock:
                    self.delivered[(msg.partition(), msg.offset())] += 1
        finally:
            self.consumer.close()  # ConsumerGroupHeartbeat with epoch -1


def _records(start: int, n: int) -> list[Rec]:
    return [Rec(key=b"k%d" % i, value=b"v%d" % i) for i in range(start, start + n)]


def _wait(members: list[Any], predicate: Any, what: str) -> None:
    """wait_until, reporting what the members saw when it times out."""
    try:
        wait_until(predicate, what=what)
    except AssertionError as exc:
        seen = {m.name: (sorted(m.assigned), m.errors, m.commit_failures[-3:], m.is_alive())
                for m in members}
        raise AssertionError(f"{exc}; members (assigned, errors, last commit failures, alive): "
                             f"{seen}") from None


def _group_type(bootstrap: str, group: str) -> str:
    client = admin(bootstrap)  # kept alive until the answer is in
    listed = client.list_consumer_groups(request_timeout=TIMEOUT).result(TIMEOUT)
    mine = [g for g in listed.valid if g.group_id == group]
    return str(mine[0].type).rsplit(".", 1)[-1] if mine else ""


@pytest.fixture
def kafka_python_closes_refused_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    """kafka-python 3.0.12 does not close a socket whose connect was refused (its
    KafkaNetSocket.sock_connect raises and drops it): while the broker restarts each reconnect
    attempt leaks one, and the ResourceWarning of its finalizer surfaces after the test, which
    fails the session. Close it, as the client should."""
    from kafka.net.inet import KafkaNetSocket

    original = KafkaNetSocket.sock_connect

    async def sock_connect(self: Any, net: Any, sock: Any, sockaddr: Any,
                           timeout_at: float | None = None) -> Any:
        try:
            return await original(self, net, sock, sockaddr, timeout_at=timeout_at)
        except BaseException:
            sock.close()
            raise

    monkeypatch.setattr(KafkaNetSocket, "sock_connect", sock_connect)


@pytest.mark.usefixtures("kafka_python_closes_refused_sockets")
def test_classic_group_upgraded_and_downgraded_online(start_broker: StartBroker,
                                                      tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", OVERRIDES)
    bootstrap = broker.bootstrap
    topic, group = topic_name(), topic_name("g")
    create_topic(bootstrap, topic, PARTITIONS)
    produced = confluent_produce(bootstrap, topic, _records(0, 200))
    delivered: Delivered = Counter()
    lock = threading.Lock()
    classic = [ClassicMember(f"classic{i}", bootstrap, group, topic, delivered, lock)
               for i in range(2)]
    for m in classic:
        m.start()
    modern: ConsumerProtocolMember | None = None

    def wait(predicate: Any, what: str) -> None:
        _wait([*classic, *([modern] if modern is not None else [])], predicate, what)

    def covered(members: list[Any], n: int) -> bool:
        owned = [m.assigned for m in members]
        return (all(owned) and sum(len(o) for o in owned) == PARTITIONS
                and set().union(*owned) == set(range(PARTITIONS)) and len(owned) == n)

    wait(lambda: covered(classic, 2), "two classic members with 3 partitions each")
    wait(lambda: sum(delivered.values()) >= 50, "records consumed by the classic group")
    assert _group_type(bootstrap, group) == "CLASSIC"

    # Upgrade: a consumer-protocol member joins the classic group.
    modern = ConsumerProtocolMember(bootstrap, group, topic, delivered, lock)
    modern.start()
    produced += confluent_produce(bootstrap, topic, _records(200, 100))
    wait(lambda: _group_type(bootstrap, group) == "CONSUMER", "the group upgraded")
    everyone = [*classic, modern]
    wait(lambda: covered(everyone, 3), "three members sharing the partitions")
    client = admin(bootstrap)
    described = client.describe_consumer_groups([group], request_timeout=TIMEOUT)[group].result(
        TIMEOUT)
    assert len(described.members) == 3

    # kill -9 and a restart: the mixed group is rebuilt from __consumer_offsets.
    broker.restart(hard=True)
    produced += confluent_produce(bootstrap, topic, _records(300, 100))
    wait(lambda: sum(delivered.values()) >= len(produced), "records after the restart")
    assert _group_type(bootstrap, group) == "CONSUMER"
    wait(lambda: covered(everyone, 3), "three members after the restart")

    # Downgrade: the consumer-protocol member leaves; the classic ones take everything.
    modern.stop.set()
    modern.join(TIMEOUT)
    assert not modern.is_alive()
    wait(lambda: _group_type(bootstrap, group) == "CLASSIC", "the group downgraded")
    produced += confluent_produce(bootstrap, topic, _records(400, 100))
    wait(lambda: covered(classic, 2), "the classic members own every partition")
    wait(lambda: sum(delivered.values()) >= len(produced), "every record consumed")
    for m in classic:
        m.stop.set()
    for m in classic:
        m.join(TIMEOUT)
    assert all(not m.errors for m in everyone), [m.errors for m in everyone]
    assert set(delivered) == {(r.partition, r.offset) for r in produced}
    assert [k for k, n in delivered.items() if n != 1] == []
