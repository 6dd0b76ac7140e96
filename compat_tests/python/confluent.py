"""confluent-kafka (librdkafka) driver: every scenario through the Python binding."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import confluent_kafka
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)

from compat_tests.python.common import (
    LARGE_TOPIC_MAX,
    Ctx,
    ScenarioFailed,
    check,
    check_produce_consume,
    compressible_values,
    denied_name,
    keyed_records,
    large_value,
    main,
    secure_values,
)

CLIENT = "confluent-kafka"
VERSION = f"{confluent_kafka.version()} (librdkafka {confluent_kafka.libversion()[0]})"


def admin(ctx: Ctx) -> AdminClient:
    return AdminClient({"bootstrap.servers": ctx.bootstrap})


def create_topic(ctx: Ctx, name: str, partitions: int, config: dict[str, str] | None = None) -> None:
    a = admin(ctx)  # kept referenced: a collected client cancels its futures
    fut = a.create_topics([NewTopic(name, partitions, 1, config=config or {})], operation_timeout=10)
    fut[name].result(timeout=ctx.remaining())
    # Wait until metadata shows every partition with a leader.

    def ready() -> bool:
        md = a.list_topics(name, timeout=5).topics.get(name)
        return md is not None and md.error is None and len(md.partitions) == partitions and all(p.leader >= 0 for p in md.partitions.values())

    ctx.wait_for(ready, f"topic {name} in metadata")
    # A KRaft broker can list the leaders a moment before the partitions take requests (Kafka
    # 4.4 under load answered a first Produce UNKNOWN_TOPIC_OR_PARTITION, and a plain
    # producer's retry then reordered the partition); ListOffsets reaches the partitions.
    def served() -> bool:
        futs = a.list_offsets({TopicPartition(name, p): OffsetSpec.latest() for p in range(partitions)},
                              request_timeout=5)
        try:
            for f in futs.values():
                f.result(timeout=ctx.remaining())
        except KafkaException:
            return False
        return True

    ctx.wait_for(served, f"partitions of {name} served")


def producer(ctx: Ctx, **conf: Any) -> Producer:
    base = {"bootstrap.servers": ctx.bootstrap, "acks": "all", "linger.ms": 5}
    base.update({k.replace("_", "."): v for k, v in conf.items()})
    return Producer(base)


def produce_all(ctx: Ctx, p: Producer, topic: str, records: list[dict[str, Any]]) -> list[Message]:
    delivered: list[Message] = []
    errors: list[str] = []

    def cb(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            delivered.append(msg)

    for r in records:
        p.produce(topic, on_delivery=cb, **r)
        p.poll(0)
    left = p.flush(ctx.remaining())
    check(not errors, f"delivery failed: {errors[:3]}")
    check(left == 0, f"{left} records not delivered")
    return delivered


def consumer(ctx: Ctx, **conf: Any) -> Consumer:
    base = {
        "bootstrap.servers": ctx.bootstrap,
        "group.id": ctx.group("assign"),
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    base.update({k.replace("_", "."): v for k, v in conf.items()})
    return Consumer(base)


def read_all(ctx: Ctx, topic: str, partitions: int, count: int, **conf: Any) -> list[Message]:
    c = consumer(ctx, **conf)
    try:
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got: list[Message] = []

        def step() -> None:
            for m in c.consume(100, timeout=0.2):
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise ScenarioFailed(f"consume error: {m.error()}")
                got.append(m)

        ctx.wait_for(lambda: len(got) >= count, f"{count} records (have {len(got)})", step)
        return got
    finally:
        c.close()


# ------------------------------------------------------------------ scenarios

def produce_consume(ctx: Ctx) -> None:
    t = ctx.topic()
    create_topic(ctx, t, 3)
    sent = keyed_records()
    produce_all(ctx, producer(ctx), t, [{"key": k, "value": v} for k, v in sent])
    got = read_all(ctx, t, 3, len(sent))
    check_produce_consume(sent, [(m.partition(), m.offset(), m.key(), m.value()) for m in got])


def compression(codec: str):
    def run(ctx: Ctx) -> None:
        t = ctx.topic()
        create_topic(ctx, t, 1)
        values = compressible_values()
        p = producer(ctx, compression_type=codec, linger_ms=100)
        produce_all(ctx, p, t, [{"value": v} for v in values])
        got = read_all(ctx, t, 1, len(values))
        check([m.value() for m in got] == values, "values differ after the round trip")
        check([m.offset() for m in got] == list(range(len(values))), "offsets not 0..n-1")
    return run


def headers_and_nulls(ctx: Ctx) -> str:
    t = ctx.topic()
    create_topic(ctx, t, 1)
    recs = [
        {"key": None, "value": b"v-null-key", "headers": [("h", b"1"), ("h", b"2"), ("empty", b"")]},
        {"key": b"k-tombstone", "value": None},
        {"key": b"", "value": b""},
        {"key": b"k", "value": b"v", "headers": [("nullhdr", None)]},
    ]
    produce_all(ctx, producer(ctx), t, recs)
    got = read_all(ctx, t, 1, len(recs))
    check([(m.key(), m.value()) for m in got] == [(r["key"], r["value"]) for r in recs], f"keys/values differ: {[(m.key(), m.value()) for m in got]}")
    check(got[0].headers() == [("h", b"1"), ("h", b"2"), ("empty", b"")], f"headers differ: {got[0].headers()}")
    check(not got[1].headers() and not got[2].headers(), "unexpected headers")
    check(got[3].headers() == [("nullhdr", None)], f"null header value differs: {got[3].headers()}")
    return "null header value included"


def large_message(ctx: Ctx) -> None:
    t = ctx.topic()
    create_topic(ctx, t, 1, {"max.message.bytes": LARGE_TOPIC_MAX})
    value = large_value()
    produce_all(ctx, producer(ctx, message_max_bytes=5_000_000), t, [{"value": value}])
    got = read_all(ctx, t, 1, 1)
    check(got[0].value() == value, "value differs")


def list_offsets(ctx: Ctx) -> None:
    t = ctx.topic()
    create_topic(ctx, t, 1)
    t0 = int(time.time() * 1000) - 60_000
    produce_all(ctx, producer(ctx), t, [{"value": f"r{i}".encode(), "timestamp": t0 + 1000 * i} for i in range(3)])
    a = admin(ctx)
    tp = TopicPartition(t, 0)

    def lo(spec: OffsetSpec) -> int:
        res = a.list_offsets({tp: spec}, request_timeout=10)
        return int(res[tp].result(timeout=ctx.remaining()).offset)

    check(lo(OffsetSpec.earliest()) == 0, "earliest != 0")
    check(lo(OffsetSpec.latest()) == 3, "latest != 3")
    check(lo(OffsetSpec.for_timestamp(t0 + 500)) == 1, "by time T+500 != 1")
    check(lo(OffsetSpec.for_timestamp(t0 + 1000)) == 1, "by time T+1000 != 1")
    after = lo(OffsetSpec.for_timestamp(t0 + 10_000))
    check(after == -1, f"by time after the last record: {after}, expected -1 (none)")
    # The consumer API path (ListOffsets from the consumer) too.
    c = consumer(ctx)
    try:
        lo_w, hi_w = c.get_watermark_offsets(tp, timeout=10)
        check((lo_w, hi_w) == (0, 3), f"watermarks {(lo_w, hi_w)}")
        r = c.offsets_for_times([TopicPartition(t, 0, t0 + 1500)], timeout=10)
        check(r[0].offset == 2, f"consumer offsets_for_times(T+1500) = {r[0].offset}")
    finally:
        c.close()


def admin_topics(ctx: Ctx) -> None:
    a = admin(ctx)
    t = ctx.topic()
    a.create_topics([NewTopic(t, 2, 1, config={"retention.ms": "3600000"})])[t].result(timeout=ctx.remaining())
    again = a.create_topics([NewTopic(t, 2, 1)])[t]
    try:
        again.result(timeout=ctx.remaining())
        raise ScenarioFailed("creating an existing topic succeeded")
    except KafkaException as exc:
        check(exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS, f"create again: {exc}")

    def partitions() -> int:
        md = a.list_topics(t, timeout=5).topics[t]
        check(md.error is None or md.error.code() == KafkaError.LEADER_NOT_AVAILABLE, f"metadata error {md.error}")
        return len([p for p in md.partitions.values() if p.leader >= 0])

    ctx.wait_for(lambda: partitions() == 2, "2 partitions with leaders")
    res = ConfigResource(ConfigResource.Type.TOPIC, t)
    cfg = a.describe_configs([res])[res].result(timeout=ctx.remaining())
    check(cfg["retention.ms"].value == "3600000", f"retention.ms = {cfg['retention.ms'].value}")
    alter = ConfigResource(ConfigResource.Type.TOPIC, t, incremental_configs=[
        ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([alter])[alter].result(timeout=ctx.remaining())
    ctx.wait_for(lambda: a.describe_configs([res])[res].result(timeout=5)["retention.ms"].value == "7200000", "altered retention.ms")
    a.create_partitions([NewPartitions(t, 4)])[t].result(timeout=ctx.remaining())
    ctx.wait_for(lambda: partitions() == 4, "4 partitions")
    try:
        a.create_partitions([NewPartitions(t, 3)])[t].result(timeout=ctx.remaining())
        raise ScenarioFailed("decreasing partitions succeeded")
    except KafkaException as exc:
        check(exc.args[0].code() == KafkaError.INVALID_PARTITIONS, f"decrease: {exc}")
    a.delete_topics([t], operation_timeout=10)[t].result(timeout=ctx.remaining())
    ctx.wait_for(lambda: t not in a.list_topics(timeout=5).topics, "topic gone")


def consumer_group(ctx: Ctx) -> None:
    t = ctx.topic()
    create_topic(ctx, t, 4)
    g = ctx.group()
    conf = {"group.id": g, "session.timeout.ms": 10000, "heartbeat.interval.ms": 500}
    a = consumer(ctx, **conf)
    b = consumer(ctx, **conf)
    got: dict[str, list[Message]] = {"a": [], "b": []}

    def poll(name: str, c: Consumer) -> None:
        m = c.poll(0.1)
        if m is not None:
            if m.error() is not None:
                if m.error().code() != KafkaError._PARTITION_EOF:
                    raise ScenarioFailed(f"consume error: {m.error()}")
            else:
                got[name].append(m)

    def parts(c: Consumer) -> set[int]:
        return {tp.partition for tp in c.assignment()}

    a.subscribe([t])
    ctx.wait_for(lambda: parts(a) == {0, 1, 2, 3}, "A owns all 4 partitions", lambda: poll("a", a))
    b.subscribe([t])

    def split() -> bool:
        pa, pb = parts(a), parts(b)
        return len(pa) == 2 and len(pb) == 2 and pa | pb == {0, 1, 2, 3}

    ctx.wait_for(split, "A and B 2+2", lambda: (poll("a", a), poll("b", b)))
    pa, pb = parts(a), parts(b)
    produce_all(ctx, producer(ctx), t, [{"value": f"p{p}-{i}".encode(), "partition": p} for p in range(4) for i in range(10)])
    ctx.wait_for(lambda: len(got["a"]) + len(got["b"]) >= 40, "40 records", lambda: (poll("a", a), poll("b", b)))
    check(len(got["a"]) + len(got["b"]) == 40, "duplicates")
    check({m.partition() for m in got["a"]} <= pa and {m.partition() for m in got["b"]} <= pb, "record from a partition the member does not own")
    a.commit(asynchronous=False)
    b.commit(asynchronous=False)
    b.close()
    got["a"].clear()
    ctx.wait_for(lambda: parts(a) == {0, 1, 2, 3}, "A owns all 4 after B left", lambda: poll("a", a))
    produce_all(ctx, producer(ctx), t, [{"value": f"p{p}-x{i}".encode(), "partition": p} for p in range(4) for i in range(2)])
    ctx.wait_for(lambda: len(got["a"]) >= 8, "8 new records on A", lambda: poll("a", a))
    check(sorted(m.value() for m in got["a"]) == sorted(f"p{p}-x{i}".encode() for p in range(4) for i in range(2)),
          f"A did not resume at the commits: {[m.value() for m in got['a']][:10]}")
    a.commit(asynchronous=False)
    a.close()
    produce_all(ctx, producer(ctx), t, [{"value": f"p{p}-y".encode(), "partition": p} for p in range(4)])
    c = consumer(ctx, **conf)
    got["c"] = []
    c.subscribe([t])
    try:
        ctx.wait_for(lambda: len(got["c"]) >= 4, "4 records on C", lambda: poll("c", c))
        check(sorted(m.value() for m in got["c"]) == sorted(f"p{p}-y".encode() for p in range(4)),
              f"C did not resume at A's commits: {[m.value() for m in got['c']]}")
        committed = c.committed([TopicPartition(t, p) for p in range(4)], timeout=10)
        check([tp.offset for tp in committed] == [12, 12, 12, 12], f"committed {[tp.offset for tp in committed]}")
    finally:
        c.close()


def consumer_protocol_group(ctx: Ctx) -> str:
    """KIP-848: three consumer-protocol members, one leaves and comes back; every record once."""
    t = ctx.topic()
    n = 6
    create_topic(ctx, t, n)
    conf = {"group.id": ctx.group(), "group.protocol": "consumer"}
    everything = set(range(n))
    seen: dict[bytes, str] = {}

    class Member:
        def __init__(self, name: str) -> None:
            self.name = name
            self.c = consumer(ctx, **conf)

        def subscribe(self) -> None:
            # With callbacks set, librdkafka changes the assignment only inside consume(),
            # so the commit after each batch lands before a revocation takes effect.
            self.c.subscribe([t], on_assign=lambda c, ps: None, on_revoke=lambda c, ps: None)

        def parts(self) -> set[int]:
            return {tp.partition for tp in self.c.assignment()}

        def poll(self) -> None:
            # Polled after unsubscribe() too: librdkafka serves the revocation (and so leaves
            # the group) only inside a poll.
            last: dict[int, int] = {}
            for m in self.c.consume(100, timeout=0.05):
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise ScenarioFailed(f"{self.name}: consume error: {m.error()}")
                check(m.partition() in self.parts(), f"{self.name} got a record of partition {m.partition()}, which it does not own")
                v = m.value()
                check(v not in seen, f"{v!r} consumed twice: by {seen.get(v)} and by {self.name}")
                seen[v] = self.name
                last[m.partition()] = m.offset()
            if last:
                self.c.commit(offsets=[TopicPartition(t, p, o + 1) for p, o in last.items()], asynchronous=False)

    a, b, c = Member("A"), Member("B"), Member("C")
    members = [a, b, c]

    def balanced(live: list[Member]) -> bool:
        owned = [m.parts() for m in live]
        lo = n // len(live)
        return sum(len(o) for o in owned) == n and set().union(*owned) == everything and all(lo <= len(o) <= lo + 1 for o in owned)

    def poll_all() -> None:
        for m in members:
            m.poll()

    def sizes(live: list[Member]) -> str:
        return " ".join(f"{m.name}={sorted(m.parts())}" for m in live)

    try:
        for m in members:
            m.subscribe()
        ctx.wait_for(lambda: balanced(members), "A, B and C owning 2+2+2", poll_all)
        produced = 0
        for rnd in range(3):
            live = members
            if rnd == 1:
                b.c.unsubscribe()  # leaves the group (member epoch -1)
                live = [a, c]
                ctx.wait_for(lambda: balanced([a, c]) and not b.parts(), "A and C owning 3+3 after B left", poll_all)
            elif rnd == 2:
                b.subscribe()  # joins again (member epoch 0)
                ctx.wait_for(lambda: balanced(members), "2+2+2 after B rejoined", poll_all)
            values = [f"r{rnd}-p{p}-{i}".encode() for p in range(n) for i in range(5)]
            produce_all(ctx, producer(ctx), t, [{"value": v, "partition": int(v.split(b"-")[1][1:])} for v in values])
            produced += len(values)
            ctx.wait_for(lambda want=produced: len(seen) >= want, f"{produced} records consumed", poll_all)
            check(balanced(live), f"assignment changed while consuming: {sizes(live)}")
        want = {f"r{rnd}-p{p}-{i}".encode() for rnd in range(3) for p in range(n) for i in range(5)}
        check(set(seen) == want, f"consumed {len(seen)} distinct records, expected the 90 produced")
        by_b = {v for v, who in seen.items() if who == "B"}
        check(not any(v.startswith(b"r1-") for v in by_b), "B consumed records while it was out of the group")
        check(any(v.startswith(b"r2-") for v in by_b), "B consumed nothing after rejoining")
        committed = a.c.committed([TopicPartition(t, p) for p in range(n)], timeout=10)
        check([tp.offset for tp in committed] == [15] * n, f"committed {[tp.offset for tp in committed]}, expected 15 each")
    finally:
        for m in members:
            m.c.close()
    return "3 members, B left and rejoined; 90 records once each"


def consumer_protocol_regex(ctx: Ctx) -> str:
    """KIP-848: a member subscribed by regex (a ^-prefixed subscription, which librdkafka sends
    to the broker as SubscribedTopicRegex under group.protocol=consumer) picks up a matching
    topic created after it joined; non-matching topics are never assigned."""
    base = ctx.topic()
    m1, m2, n1, n2 = (f"{base}-{s}" for s in ("m1", "m2", "n1", "m2x"))
    parts = {m1: 3, m2: 2, n1: 2, n2: 2}

    def batch(topic: str, tag: str) -> list[dict[str, Any]]:
        return [{"value": f"{topic}/{tag}-{i}".encode(), "partition": i % parts[topic]} for i in range(10)]

    def produce(batches: list[tuple[str, str]]) -> None:
        p = producer(ctx)
        for topic, tag in batches:
            produce_all(ctx, p, topic, batch(topic, tag))

    create_topic(ctx, m1, 3)
    create_topic(ctx, n1, 2)
    produce([(m1, "before"), (n1, "before")])
    c = consumer(ctx, **{"group.id": ctx.group(), "group.protocol": "consumer"})
    seen: dict[bytes, str] = {}
    ever: set[tuple[str, int]] = set()

    def owned() -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in c.assignment()}

    def step() -> None:
        last: dict[tuple[str, int], int] = {}
        for m in c.consume(100, timeout=0.05):
            if m.error() is not None:
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise ScenarioFailed(f"consume error: {m.error()}")
            tp = (m.topic(), m.partition())
            check(tp in owned(), f"got a record of {tp}, which the member does not own")
            v = m.value()
            check(v not in seen, f"{v!r} consumed twice")
            seen[v] = m.topic()
            last[tp] = m.offset()
        ever.update(owned())
        if last:
            c.commit(offsets=[TopicPartition(t, p, o + 1) for (t, p), o in last.items()], asynchronous=False)

    first = {(m1, p) for p in range(3)}
    both = first | {(m2, p) for p in range(2)}
    try:
        # With callbacks set, librdkafka changes the assignment only inside consume(), so the
        # commit after each batch lands before a revocation takes effect.
        c.subscribe([f"^{base}-m[0-9]+$"], on_assign=lambda c, ps: None, on_revoke=lambda c, ps: None)
        ctx.wait_for(lambda: owned() == first, f"the member owning the 3 partitions of {m1}", step)
        ctx.wait_for(lambda: len(seen) >= 10, f"the 10 records of {m1}", step)
        t0 = time.monotonic()
        create_topic(ctx, m2, 2)
        create_topic(ctx, n2, 2)
        produce([(m1, "after"), (m2, "after"), (n1, "after"), (n2, "after")])
        try:
            ctx.wait_for(lambda: owned() == both, f"the member owning the 3 partitions of {m1} and the 2 of the new {m2}", step)
        except ScenarioFailed as exc:
            raise ScenarioFailed(f"{exc} (owns {sorted(owned())})") from None
        picked_up = time.monotonic() - t0
        ctx.wait_for(lambda: len(seen) >= 30, "the 30 records of the matching topics", step)
        end = time.monotonic() + 1.0  # a few more polls: a duplicate or a stray record shows now
        while time.monotonic() < end:
            step()
        want = {r["value"] for t, tag in ((m1, "before"), (m1, "after"), (m2, "after")) for r in batch(t, tag)}
        check(set(seen) == want, f"consumed {sorted(seen)}, expected the {len(want)} records of {m1} and {m2}")
        check(ever <= both, f"the member was assigned {sorted(ever - both)}, which the regex does not match")
        tps = [TopicPartition(t, p) for t, p in sorted(both)]
        committed = c.committed(tps, timeout=10)
        ends = [c.get_watermark_offsets(tp, timeout=10)[1] for tp in tps]
        check([tp.offset for tp in committed] == ends,
              f"committed {[tp.offset for tp in committed]}, end offsets {ends}")
        others = [TopicPartition(t, p) for t in (n1, n2) for p in range(2)]
        check(all(tp.offset < 0 for tp in c.committed(others, timeout=10)), "offsets committed on a non-matching topic")
    finally:
        c.close()
    return f"^-prefixed subscription; the new topic assigned {picked_up:.1f} s after its creation began; 30 records once each"


def rolling_upgrade_to_consumer_protocol(ctx: Ctx) -> str:
    """Online migration: a classic group (A, B) is rolled member by member to
    group.protocol=consumer while records flow; every record once."""
    t = ctx.topic()
    n = 6
    create_topic(ctx, t, n)
    group = ctx.group()
    everything = set(range(n))
    seen: dict[bytes, str] = {}

    class Member:
        def __init__(self, name: str, protocol: str) -> None:
            self.name = name
            extra = {"partition.assignment.strategy": "range"} if protocol == "classic" else {}
            self.c = consumer(ctx, **{"group.id": group, "group.protocol": protocol, **extra})
            # With callbacks set, librdkafka changes the assignment only inside consume(),
            # so the commit after each batch lands before a revocation takes effect.
            self.c.subscribe([t], on_assign=lambda c, ps: None, on_revoke=lambda c, ps: None)

        def parts(self) -> set[int]:
            return {tp.partition for tp in self.c.assignment()}

        def poll(self) -> None:
            last: dict[int, int] = {}
            for m in self.c.consume(100, timeout=0.05):
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise ScenarioFailed(f"{self.name}: consume error: {m.error()}")
                v = m.value()
                check(v not in seen, f"{v!r} consumed twice: by {seen.get(v)} and by {self.name}")
                seen[v] = self.name
                last[m.partition()] = m.offset()
            if last:
                self.c.commit(offsets=[TopicPartition(t, p, o + 1) for p, o in last.items()],
                              asynchronous=False)

    live = [Member("A", "classic"), Member("B", "classic")]

    def balanced() -> bool:
        owned = [m.parts() for m in live]
        return (sum(len(o) for o in owned) == n and set().union(*owned) == everything
                and all(len(o) == n // 2 for o in owned))

    def poll_all() -> None:
        for m in live:
            m.poll()

    def group_type() -> str:
        a = admin(ctx)
        listed = a.list_consumer_groups(request_timeout=10).result(timeout=ctx.remaining())
        mine = [g for g in listed.valid if g.group_id == group]
        return str(mine[0].type).rsplit(".", 1)[-1] if mine else ""

    try:
        ctx.wait_for(balanced, "classic A and B owning 3+3", poll_all)
        check(group_type() == "CLASSIC", f"group type {group_type()} before the upgrade")
        produced = 0
        for rnd in range(3):
            if rnd > 0:
                # Roll one member: the classic one leaves, its replacement speaks KIP-848.
                old = live[rnd - 1]
                old.c.close()
                live[rnd - 1] = Member(old.name + "2", "consumer")
                ctx.wait_for(balanced, f"3+3 after rolling {old.name}", poll_all)
                check(group_type() == "CONSUMER", f"group type {group_type()} after rolling {old.name}")
            values = [f"r{rnd}-p{p}-{i}".encode() for p in range(n) for i in range(5)]
            produce_all(ctx, producer(ctx), t,
                        [{"value": v, "partition": int(v.split(b"-")[1][1:])} for v in values])
            produced += len(values)
            ctx.wait_for(lambda want=produced: len(seen) >= want, f"{produced} records consumed",
                         poll_all)
        want = {f"r{rnd}-p{p}-{i}".encode() for rnd in range(3) for p in range(n) for i in range(5)}
        check(set(seen) == want, f"consumed {len(seen)} distinct records, expected the 90 produced")
        committed = live[0].c.committed([TopicPartition(t, p) for p in range(n)], timeout=10)
        check([tp.offset for tp in committed] == [15] * n,
              f"committed {[tp.offset for tp in committed]}, expected 15 each")
    finally:
        for m in live:
            m.c.close()
    return "classic A, B rolled to group.protocol=consumer one by one; 90 records once each"


def idempotent(ctx: Ctx) -> None:
    t = ctx.topic()
    create_topic(ctx, t, 1)
    p = producer(ctx, enable_idempotence=True, max_in_flight_requests_per_connection=5)
    values = [f"i{i:03d}".encode() for i in range(100)]
    produce_all(ctx, p, t, [{"value": v} for v in values])
    got = read_all(ctx, t, 1, 100)
    check([m.offset() for m in got] == list(range(100)), "offsets not contiguous 0..99")
    check([m.value() for m in got] == values, "values duplicated, lost or reordered")


def tx_producer(ctx: Ctx, txn_id: str) -> Producer:
    p = producer(ctx, transactional_id=txn_id, transaction_timeout_ms=60000)
    p.init_transactions(ctx.remaining())
    return p


def transactions(ctx: Ctx) -> None:
    t = ctx.topic()
    create_topic(ctx, t, 1)
    p = tx_producer(ctx, ctx.txn_id())
    batches = [("c1", True), ("a", False), ("c2", True)]
    for tag, commit in batches:
        p.begin_transaction()
        for i in range(5):
            p.produce(t, value=f"{tag}-{i}".encode())
        p.flush(ctx.remaining())
        if commit:
            p.commit_transaction(ctx.remaining())
        else:
            p.abort_transaction(ctx.remaining())
    committed = [f"{tag}-{i}".encode() for tag, c in batches if c for i in range(5)]
    allv = [f"{tag}-{i}".encode() for tag, _ in batches for i in range(5)]
    rc = read_all(ctx, t, 1, 10, isolation_level="read_committed")
    check([m.value() for m in rc] == committed, f"read_committed saw {[m.value() for m in rc]}")
    ru = read_all(ctx, t, 1, 15, isolation_level="read_uncommitted")
    check([m.value() for m in ru] == allv, f"read_uncommitted saw {[m.value() for m in ru]}")


def consume_transform_produce(ctx: Ctx) -> None:
    src, dst = ctx.topic("in"), ctx.topic("out")
    create_topic(ctx, src, 1)
    create_topic(ctx, dst, 1)
    g = ctx.group()
    produce_all(ctx, producer(ctx), src, [{"value": f"in-{i}".encode()} for i in range(10)])
    c = consumer(ctx, **{"group.id": g, "isolation.level": "read_committed"})
    p = tx_producer(ctx, ctx.txn_id())
    c.subscribe([src])
    try:
        def process(n: int, commit: bool) -> None:
            msgs: list[Message] = []

            def step() -> None:
                m = c.poll(0.1)
                if m is not None and m.error() is None:
                    msgs.append(m)
            ctx.wait_for(lambda: len(msgs) >= n, f"{n} inputs", step)
            check(len(msgs) == n, f"read {len(msgs)} inputs, expected {n}")
            p.begin_transaction()
            for m in msgs:
                p.produce(dst, value=(m.value() or b"").upper())
            last = msgs[-1]
            p.send_offsets_to_transaction([TopicPartition(src, 0, last.offset() + 1)], c.consumer_group_metadata(), ctx.remaining())
            p.flush(ctx.remaining())  # the outputs reach the log before the abort
            if commit:
                p.commit_transaction(ctx.remaining())
            else:
                p.abort_transaction(ctx.remaining())

        process(10, True)
        # The group coordinator applies transactional offsets when the commit marker lands.
        ctx.wait_for(lambda: c.committed([TopicPartition(src, 0)], timeout=5)[0].offset == 10, "committed offset 10 after the commit")
        produce_all(ctx, producer(ctx), src, [{"value": f"in-{i}".encode()} for i in range(10, 15)])
        process(5, False)
        committed = c.committed([TopicPartition(src, 0)], timeout=10)[0].offset
        check(committed == 10, f"committed offset {committed} after the aborted transaction")
    finally:
        c.close()
    out = read_all(ctx, dst, 1, 10, isolation_level="read_committed")
    check([m.value() for m in out] == [f"IN-{i}".encode() for i in range(10)], f"outputs {[m.value() for m in out]}")
    # Nothing from the aborted transaction becomes visible: the LSO passed its marker.
    c2 = consumer(ctx, isolation_level="read_committed")
    try:
        _, hi = c2.get_watermark_offsets(TopicPartition(dst, 0), timeout=10)
        check(hi == 17, f"output high watermark {hi}, expected 17 (10 + marker + 5 + marker)")
    finally:
        c2.close()


def fencing(ctx: Ctx) -> None:
    t = ctx.topic()
    create_topic(ctx, t, 1)
    txn = ctx.txn_id()
    p1 = tx_producer(ctx, txn)
    p1.begin_transaction()
    p1.produce(t, value=b"from-p1")
    p1.flush(ctx.remaining())
    p2 = tx_producer(ctx, txn)
    try:
        p1.commit_transaction(ctx.remaining())
        raise ScenarioFailed("the fenced producer committed")
    except KafkaException as exc:
        err = exc.args[0]
        check(err.fatal() or err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH),
              f"unexpected error for the fenced producer: {err}")
    p2.begin_transaction()
    p2.produce(t, value=b"from-p2")
    p2.commit_transaction(ctx.remaining())
    got = read_all(ctx, t, 1, 1, isolation_level="read_committed")
    check([m.value() for m in got] == [b"from-p2"], f"read_committed saw {[m.value() for m in got]}")


def share_group_split(ctx: Ctx) -> str:
    """KIP-932 with librdkafka's ShareConsumer (2.16: "Preview"): three members of one share
    group on a 1-partition topic; 300 records, each delivered to exactly one of them."""
    topic, group = ctx.topic(), ctx.group()
    create_topic(ctx, topic, 1)
    members = [confluent_kafka.ShareConsumer({"bootstrap.servers": ctx.bootstrap, "group.id": group})
               for _ in range(3)]
    got: list[Counter[str]] = [Counter() for _ in members]
    for m in members:
        m.subscribe([topic])

    def poll_all() -> None:
        for m, seen in zip(members, got, strict=True):
            msgs = m.poll(0.1)
            for msg in (list(msgs) if msgs is not None else []):
                if msg.error() is None:
                    seen[msg.value().decode()] += 1

    try:
        p = producer(ctx)
        # share.auto.offset.reset=latest: probes until the group delivers one.
        n = 0
        while not any(v.startswith("probe-") for c in got for v in c):
            check(time.monotonic() < ctx.deadline, "the share group never delivered a probe record")
            p.produce(topic, f"probe-{n}".encode(), partition=0)
            p.flush(5)
            n += 1
            poll_all()
        total = 300
        for i in range(total):
            p.produce(topic, f"r-{i}".encode(), partition=0)
        p.flush(10)
        ctx.wait_for(lambda: sum(1 for c in got for v in c if v.startswith("r-")) >= total,
                     f"{total} records delivered", poll_all)
        settle = time.monotonic() + 1.5  # a redelivery would show up now
        while time.monotonic() < settle:
            poll_all()
    finally:
        for m in members:
            m.close()
    real = [Counter({v: k for v, k in c.items() if v.startswith("r-")}) for c in got]
    union: Counter[str] = sum(real, Counter())
    twice = sorted(v for v, k in union.items() if k > 1)
    check(not twice, f"delivered more than once: {twice[:5]} ({len(twice)})")
    check(len(union) == total, f"got {len(union)} distinct records of {total}")
    return f"{total} records, each delivered once, split {[len(c) for c in real]} over 3 share consumers"


# ------------------------------------------------------------------ the security suite

def secure_conf(ctx: Ctx, how: str) -> dict[str, Any]:
    """Client settings for one of the suite's identities: scram (SASL_SSL), plain, oauth
    (SASL_PLAINTEXT), mtls (SSL), denied (mallory, PLAIN on SASL_PLAINTEXT)."""
    s = ctx.sec()
    listeners = s["listeners"]
    if how == "mtls":
        return {"bootstrap.servers": listeners["SSL"], "security.protocol": "SSL",
                "ssl.ca.location": s["ca_pem"], "ssl.certificate.location": s["client_cert_pem"],
                "ssl.key.location": s["client_key_pem"]}
    if how == "scram":
        return {"bootstrap.servers": listeners["SASL_SSL"], "security.protocol": "SASL_SSL",
                "ssl.ca.location": s["ca_pem"], "sasl.mechanisms": "SCRAM-SHA-512",
                "sasl.username": s["scram_sha_512"]["user"],
                "sasl.password": s["scram_sha_512"]["password"]}
    if how == "oauth":
        # librdkafka's own unsecured token (alg none, sub=principal), as the contract asks.
        return {"bootstrap.servers": listeners["SASL_PLAINTEXT"], "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanisms": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
                "sasl.oauthbearer.config": f"principal={s['oauthbearer']['principal']}"}
    who = s["plain"] if how == "plain" else s["denied"]
    return {"bootstrap.servers": listeners["SASL_PLAINTEXT"], "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN", "sasl.username": who["user"], "sasl.password": who["password"]}


class Errors:
    """The errors a client reports through error_cb; authentication failures end a scenario."""

    def __init__(self) -> None:
        self.seen: list[KafkaError] = []

    def __call__(self, err: KafkaError) -> None:
        self.seen.append(err)

    def raise_auth(self) -> None:
        for e in self.seen:
            if e.code() in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED,
                            KafkaError._SSL) or e.fatal():
                raise ScenarioFailed(f"client error: {e}")

    def text(self) -> str:
        return "; ".join(dict.fromkeys(str(e) for e in self.seen))[:400] or "no client error"


def secure_round_trip(how: str, label: str) -> Callable[[Ctx], str]:
    def run_(ctx: Ctx) -> str:
        conf = secure_conf(ctx, how)
        t = ctx.topic()
        create_topic(ctx, t, 1)
        errors = Errors()
        p = Producer({**conf, "acks": "all", "linger.ms": 5, "error_cb": errors})
        delivered: list[KafkaError | None] = []
        values = secure_values()
        for v in values:
            p.produce(t, v, on_delivery=lambda err, _m: delivered.append(err))

        def produced() -> bool:
            errors.raise_auth()
            return len(delivered) == len(values)

        ctx.wait_for(produced, f"{len(values)} delivery reports (errors: {errors.text()})",
                     lambda: p.poll(0.2))
        bad = [e for e in delivered if e is not None]
        check(not bad, f"delivery failed: {bad[:2]}")
        c = Consumer({**conf, "group.id": ctx.group(), "auto.offset.reset": "earliest",
                      "enable.auto.commit": False, "error_cb": errors})
        try:
            c.subscribe([t])
            got: list[bytes] = []

            def step() -> None:
                errors.raise_auth()
                for m in c.consume(50, timeout=0.2):
                    if m.error() is None:
                        got.append(m.value())
                    elif m.error().code() != KafkaError._PARTITION_EOF:
                        raise ScenarioFailed(f"consume error: {m.error()}")

            ctx.wait_for(lambda: len(got) >= len(values),
                         f"{len(values)} records in the group (have {len(got)}; errors: {errors.text()})", step)
            check(got == values, f"consumed {got[:3]}..., produced {values[:3]}...")
            c.commit(asynchronous=False)
            committed = c.committed([TopicPartition(t, 0)], timeout=ctx.remaining())
            check(committed[0].offset == len(values), f"committed offset {committed[0].offset}")
        finally:
            c.close()
        return f"{label}: {len(values)} produced, consumed in a group, committed offset {len(values)}"
    return run_


def expect_error(ctx: Ctx, code: int, errors: Errors, sources: list[list[KafkaError]],
                 step: Callable[[], None]) -> KafkaError:
    """Poll with `step` until `code` is among the errors (the lists `step` fills first, then
    error_cb's); FAIL with what was seen instead at the deadline."""
    def found() -> KafkaError | None:
        seen = [e for src in sources for e in src]
        return next((e for e in [*seen, *errors.seen] if e.code() == code), None)

    try:
        return ctx.wait_for(found, KafkaError(code).name(), step)
    except ScenarioFailed:
        seen_text = "; ".join(dict.fromkeys(str(e) for src in sources for e in src))[:300]
        raise ScenarioFailed(f"no {KafkaError(code).name()} within the timeout; saw: "
                             f"{seen_text or 'nothing'}; client errors: {errors.text()}") from None


def high_watermark(ctx: Ctx, topic: str) -> int:
    c = consumer(ctx)
    try:
        return int(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=ctx.remaining())[1])
    finally:
        c.close()


def acl_denied_produce(ctx: Ctx) -> str:
    t = denied_name(ctx, "produce")
    create_topic(ctx, t, 1)
    errors = Errors()
    p = Producer({**secure_conf(ctx, "denied"), "acks": "all", "error_cb": errors})
    reports: list[KafkaError] = []
    delivered: list[Message] = []

    def cb(err: KafkaError | None, msg: Message) -> None:
        (reports.append(err) if err is not None else delivered.append(msg))

    p.produce(t, b"must-not-land", on_delivery=cb)
    err = expect_error(ctx, KafkaError.TOPIC_AUTHORIZATION_FAILED, errors, [reports], lambda: p.poll(0.2))
    check(not delivered, "the denied record was delivered")
    hw = high_watermark(ctx, t)
    check(hw == 0, f"the topic holds {hw} records after the denied produce")
    where = "delivery report" if err in reports else "error_cb"
    return f"TOPIC_AUTHORIZATION_FAILED seen ({where}); topic still empty (high watermark 0)"


def acl_denied_consume(ctx: Ctx) -> str:
    t = denied_name(ctx, "consume")
    create_topic(ctx, t, 1)
    produce_all(ctx, producer(ctx), t, [{"value": b"admin-only"}])
    errors = Errors()
    c = Consumer({**secure_conf(ctx, "denied"), "group.id": ctx.group("assign"),
                  "enable.auto.commit": False, "error_cb": errors})
    seen: list[KafkaError] = []
    metadata: list[KafkaError] = []
    got: list[Message] = []
    try:
        c.assign([TopicPartition(t, 0, OFFSET_BEGINNING)])

        def step() -> None:
            for m in c.consume(10, timeout=0.2):
                (seen.append(m.error()) if m.error() is not None else got.append(m))
            # librdkafka keeps an assigned partition of a topic whose metadata answer is
            # TOPIC_AUTHORIZATION_FAILED waiting for a leader (it fetches nothing and queues
            # no error for it): the client shows the error in the topic's metadata.
            md = c.list_topics(t, timeout=2).topics.get(t)
            if md is not None and md.error is not None:
                metadata.append(md.error)

        err = expect_error(ctx, KafkaError.TOPIC_AUTHORIZATION_FAILED, errors, [seen, metadata], step)
        for _ in range(10):  # 2 s more of polling: still nothing delivered
            step()
        check(not got, f"{len(got)} records delivered to the denied consumer")
    finally:
        c.close()
    where = ("by the assigned consumer" if err in seen else
             "in the consumer's topic metadata (librdkafka queues no error for an assigned "
             "partition it never gets a leader for)")
    return f"TOPIC_AUTHORIZATION_FAILED seen {where}; no record delivered"


def acl_denied_group(ctx: Ctx) -> str:
    t = ctx.topic("grp")
    create_topic(ctx, t, 1)
    produce_all(ctx, producer(ctx), t, [{"value": b"allowed"}])
    errors = Errors()
    c = Consumer({**secure_conf(ctx, "denied"), "group.id": denied_name(ctx, "group"),
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "error_cb": errors})
    seen: list[KafkaError] = []
    got: list[Message] = []
    try:
        c.subscribe([t])

        def step() -> None:
            for m in c.consume(10, timeout=0.2):
                (seen.append(m.error()) if m.error() is not None else got.append(m))

        expect_error(ctx, KafkaError.GROUP_AUTHORIZATION_FAILED, errors, [seen], step)
        check(not got, f"{len(got)} records delivered to the member of the denied group")
    finally:
        c.close()
    return "GROUP_AUTHORIZATION_FAILED seen by the subscribed consumer; no record delivered"


def acl_denied_txn(ctx: Ctx) -> str:
    errors = Errors()
    p = Producer({**secure_conf(ctx, "denied"), "transactional.id": denied_name(ctx, "txn"),
                  "error_cb": errors})
    try:
        p.init_transactions(ctx.remaining())
    except KafkaException as exc:
        err = exc.args[0]
        check(err.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
              f"init_transactions failed with {err}, not TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
        return f"init_transactions raised TRANSACTIONAL_ID_AUTHORIZATION_FAILED (fatal={err.fatal()})"
    raise ScenarioFailed(f"init_transactions succeeded for the denied transactional.id ({errors.text()})")


QUOTA_BYTES, QUOTA_RECORD = 400 * 1024, 1024


def quota_throttle(ctx: Ctx) -> str:
    """The runner set producer_byte_rate for this client id: librdkafka reports the broker's
    throttle_time_ms through throttle_cb, and the rate over the run stays bounded."""
    q = ctx.sec()["quota"]
    t = ctx.topic()
    create_topic(ctx, t, 1)
    errors = Errors()
    throttles: list[float] = []  # ThrottleEvent.throttle_time: seconds
    p = Producer({**secure_conf(ctx, "plain"), "client.id": q["client_ids"][CLIENT], "acks": "all",
                  "linger.ms": 5, "batch.size": 16384, "error_cb": errors,
                  "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
    delivered: list[KafkaError | None] = []
    count = QUOTA_BYTES // QUOTA_RECORD
    start = time.monotonic()
    for i in range(count):
        p.produce(t, i.to_bytes(4, "big") * (QUOTA_RECORD // 4),
                  on_delivery=lambda err, _m: delivered.append(err))

    def acked() -> bool:
        errors.raise_auth()
        return len(delivered) == count

    ctx.wait_for(acked, f"{count} delivery reports (have {len(delivered)}; errors: {errors.text()})",
                 lambda: p.poll(0.2))
    elapsed = time.monotonic() - start
    p.flush(5)  # the last throttle_cb may come with the last answers
    bad = [e for e in delivered if e is not None]
    check(not bad, f"delivery failed: {bad[:2]}")
    rate, quota = QUOTA_BYTES / elapsed, q["producer_byte_rate"]
    check(any(th > 0 for th in throttles),
          f"no throttle_cb with throttle_time > 0 in {elapsed:.1f} s ({rate:.0f} B/s, quota {quota})")
    check(rate < 3 * quota, f"{rate:.0f} B/s over {elapsed:.1f} s, not under 3 x the quota {quota}")
    return (f"{count} x {QUOTA_RECORD} B acknowledged in {elapsed:.1f} s ({rate:.0f} B/s, quota "
            f"{quota}); throttle_cb {len(throttles)} times, max {max(throttles) * 1000:.0f} ms")


SCENARIOS = {
    "quota-throttle": quota_throttle,
    "sasl-scram-sha-512": secure_round_trip("scram", "SASL_SSL SCRAM-SHA-512 as bob"),
    "sasl-plain": secure_round_trip("plain", "SASL_PLAINTEXT PLAIN as alice"),
    "mtls": secure_round_trip("mtls", "SSL with the client certificate"),
    "sasl-oauthbearer": secure_round_trip("oauth", "SASL_PLAINTEXT OAUTHBEARER (librdkafka's unsecured JWT, principal=carol)"),
    "acl-denied-produce": acl_denied_produce,
    "acl-denied-consume": acl_denied_consume,
    "acl-denied-group": acl_denied_group,
    "acl-denied-txn": acl_denied_txn,
    "share-group-split": share_group_split,
    "produce-consume": produce_consume,
    "compression-gzip": compression("gzip"),
    "compression-snappy": compression("snappy"),
    "compression-lz4": compression("lz4"),
    "compression-zstd": compression("zstd"),
    "headers-and-nulls": headers_and_nulls,
    "large-message": large_message,
    "list-offsets": list_offsets,
    "admin-topics": admin_topics,
    "consumer-group": consumer_group,
    "idempotent-producer": idempotent,
    "consumer-protocol-group": consumer_protocol_group,
    "consumer-protocol-regex": consumer_protocol_regex,
    "rolling-upgrade-to-consumer-protocol": rolling_upgrade_to_consumer_protocol,
    "transactions": transactions,
    "consume-transform-produce": consume_transform_produce,
    "fencing": fencing,
}

if __name__ == "__main__":
    main(CLIENT, VERSION, SCENARIOS)
