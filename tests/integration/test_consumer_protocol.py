"""KIP-848 consumer groups (group.protocol=consumer) with confluent-kafka (librdkafka).

- Three members in one group split the partitions through the server-side assignor; one
  member leaves and a new one joins while records keep coming; every record is consumed
  exactly once (each member commits synchronously after every record).
- The admin view: the group is listed with type "consumer" and described through
  ConsumerGroupDescribe.
- After kill -9 the broker rebuilds the group from `__consumer_offsets`: same group epoch,
  same members, and a member resumes from the committed offsets.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer, KafkaException
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
    "offsets.topic.num.partitions": "3",
}


def _consumer(bootstrap: str, group: str, **extra: Any) -> Consumer:
    return Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
        **extra,
    })


class Member(threading.Thread):
    def __init__(self, name: str, bootstrap: str, group: str, topic: str,
                 delivered: Counter[tuple[int, int]], lock: threading.Lock) -> None:
        super().__init__(name=name, daemon=True)
        self.consumer = _consumer(bootstrap, group)
        self.topic, self.delivered, self.lock = topic, delivered, lock
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.assigned: set[int] = set()

    def run(self) -> None:
        self.consumer.subscribe([self.topic],
                                on_assign=lambda c, ps: self.assigned.update(p.partition for p in ps),
                                on_revoke=lambda c, ps: self.assigned.difference_update(
                                    p.partition for p in ps))
        try:
            while not self.stop.is_set():
                msg = self.consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error():
                    self.errors.append(str(msg.error()))
                    continue
                with self.lock:
                    self.delivered[(msg.partition(), msg.offset())] += 1
                self.consumer.commit(message=msg, asynchronous=False)
        except KafkaException as exc:
            self.errors.append(repr(exc))
        finally:
            self.consumer.close()  # leaves the group (member epoch -1)


def _records(start: int, n: int) -> list[Rec]:
    return [Rec(key=b"k%d" % i, value=b"v%d" % i) for i in range(start, start + n)]


def test_librdkafka_supports_the_consumer_protocol() -> None:
    major, minor, *_ = (int(x) for x in confluent_kafka.libversion()[0].split("."))
    assert (major, minor) >= (2, 12), confluent_kafka.libversion()


def test_three_members_leave_and_rejoin_every_record_once(start_broker: StartBroker,
                                                          tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", OVERRIDES)
    bootstrap = broker.bootstrap
    topic, group = topic_name(), topic_name("g")
    create_topic(bootstrap, topic, PARTITIONS)
    produced = confluent_produce(bootstrap, topic, _records(0, 300))
    delivered: Counter[tuple[int, int]] = Counter()
    lock = threading.Lock()
    members = [Member(f"m{i}", bootstrap, group, topic, delivered, lock) for i in range(3)]
    for m in members:
        m.start()

    def split() -> bool:
        owned = [m.assigned for m in members if m.is_alive()]
        return (len(owned) == 3 and all(len(o) == 2 for o in owned)
                and set().union(*owned) == set(range(PARTITIONS)))

    wait_until(split, what="three members with two partitions each")
    wait_until(lambda: sum(delivered.values()) >= 150, what="half the records consumed")

    client = admin(bootstrap)
    listed = client.list_consumer_groups(request_timeout=TIMEOUT).result(TIMEOUT)
    mine = [g for g in listed.valid if g.group_id == group]
    assert len(mine) == 1 and str(mine[0].type).endswith("CONSUMER"), mine
    described = client.describe_consumer_groups([group], request_timeout=TIMEOUT)[group].result(TIMEOUT)
    assert len(described.members) == 3

    members[0].stop.set()
    members[0].join(TIMEOUT)
    assert not members[0].is_alive()
    produced += confluent_produce(bootstrap, topic, _records(300, 150))
    try:
        wait_until(lambda: sorted(len(m.assigned) for m in members[1:]) == [3, 3],
                   what="two members with three partitions each")
    except AssertionError as e:  # a member that stopped says why
        raise AssertionError(f"{e}; member errors: {[m.errors for m in members]}") from None
    newcomer = Member("m3", bootstrap, group, topic, delivered, lock)
    newcomer.start()
    members.append(newcomer)
    produced += confluent_produce(bootstrap, topic, _records(450, 150))
    wait_until(split, what="three members again")
    wait_until(lambda: sum(delivered.values()) >= len(produced), what="every record consumed")
    for m in members[1:]:
        m.stop.set()
    for m in members[1:]:
        m.join(TIMEOUT)
    assert all(not m.errors for m in members), [m.errors for m in members]
    wanted = {(r.partition, r.offset) for r in produced}
    assert set(delivered) == wanted
    assert [k for k, n in delivered.items() if n != 1] == []


def test_group_survives_kill_9(start_broker: StartBroker, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", OVERRIDES)
    topic, group = topic_name(), topic_name("g")
    create_topic(broker.bootstrap, topic, 2)
    confluent_produce(broker.bootstrap, topic, _records(0, 20))
    c = _consumer(broker.bootstrap, group)
    c.subscribe([topic])
    got = 0
    while got < 20:
        msg = c.poll(TIMEOUT)
        assert msg is not None and not msg.error()
        got += 1
    c.commit(asynchronous=False)
    client = admin(broker.bootstrap)
    before = client.describe_consumer_groups([group], request_timeout=TIMEOUT)[group].result(TIMEOUT)
    assert len(before.members) == 1
    member_id = before.members[0].member_id
    broker.kill()
    broker.start()
    client = admin(broker.bootstrap)
    after = client.describe_consumer_groups([group], request_timeout=TIMEOUT)[group].result(TIMEOUT)
    assert [m.member_id for m in after.members] == [member_id]
    assert str(after.state).endswith("STABLE")
    # The same consumer keeps going (its epoch is still valid) and sees only new records.
    confluent_produce(broker.bootstrap, topic, _records(20, 4))
    fresh = 0
    deadline_msgs = []
    while fresh < 4:
        msg = c.poll(TIMEOUT)
        assert msg is not None, "no record after the restart"
        if msg.error():
            deadline_msgs.append(str(msg.error()))
            continue
        assert msg.value() >= b"v2" and msg.value() in {b"v20", b"v21", b"v22", b"v23"}
        fresh += 1
    c.close()
