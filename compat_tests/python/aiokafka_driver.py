"""aiokafka driver (asyncio client): each scenario runs in its own event loop."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiokafka
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.abc import AbstractTokenProvider
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import (
    GroupAuthorizationFailedError,
    InvalidPartitionsError,
    KafkaError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailed,
)
from aiokafka.helpers import create_ssl_context

from compat_tests.python.common import (
    LARGE_TOPIC_MAX,
    Ctx,
    NotSupported,
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

CLIENT = "aiokafka"
VERSION = aiokafka.__version__
TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS = 36, 37


async def wait_for(ctx: Ctx, predicate: Callable[[], Any], what: str, step: Callable[[], Awaitable[Any]] | None = None) -> Any:
    last: Exception | None = None
    while True:
        try:
            if step is not None:
                await step()
            got = predicate()
            if asyncio.iscoroutine(got):
                got = await got
            if got:
                return got
        except ScenarioFailed:
            raise
        except Exception as exc:
            last = exc
        if time.monotonic() > ctx.deadline:
            raise ScenarioFailed(f"timed out waiting for {what}" + (f" (last error: {last!r})" if last else ""))
        if step is None:
            await asyncio.sleep(0.05)


def errors_of(resp: Any) -> list[int]:
    """Every error_code in a response object, however nested."""
    codes: list[int] = []

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            for k, v in o.items():
                if k == "error_code" and isinstance(v, int):
                    codes.append(v)
                else:
                    walk(v)
        elif isinstance(o, (list, tuple)):
            for v in o:
                walk(v)

    walk(resp.to_object() if hasattr(resp, "to_object") else resp)
    return codes


async def admin(ctx: Ctx) -> AIOKafkaAdminClient:
    a = AIOKafkaAdminClient(bootstrap_servers=ctx.bootstrap, request_timeout_ms=15000)
    await a.start()
    return a


async def create_topic(ctx: Ctx, name: str, partitions: int, config: dict[str, str] | None = None) -> None:
    a = await admin(ctx)
    try:
        resp = await a.create_topics([NewTopic(name, partitions, 1, topic_configs=config or {})], timeout_ms=10000)
        check(not any(errors_of(resp)), f"create_topics errors {errors_of(resp)}")

        async def ready() -> bool:
            d = await a.describe_topics([name])
            return d[0]["error_code"] == 0 and len(d[0]["partitions"]) == partitions and all(p["leader"] >= 0 for p in d[0]["partitions"])

        await wait_for(ctx, ready, f"topic {name} in metadata")
    finally:
        await a.close()


async def produce_all(ctx: Ctx, topic: str, records: list[dict[str, Any]], p: AIOKafkaProducer | None = None, **conf: Any) -> list[Any]:
    own = p is None
    if p is None:
        p = AIOKafkaProducer(bootstrap_servers=ctx.bootstrap, acks="all", linger_ms=5, **conf)
        await p.start()
    try:
        futs = [await p.send(topic, **r) for r in records]
        return [await asyncio.wait_for(f, ctx.remaining()) for f in futs]
    finally:
        if own:
            await p.stop()


def consumer(ctx: Ctx, *topics: str, **conf: Any) -> AIOKafkaConsumer:
    base: dict[str, Any] = {"bootstrap_servers": ctx.bootstrap, "enable_auto_commit": False, "auto_offset_reset": "earliest"}
    base.update(conf)
    return AIOKafkaConsumer(*topics, **base)


async def read_all(ctx: Ctx, topic: str, partitions: int, count: int, **conf: Any) -> list[Any]:
    c = consumer(ctx, **conf)
    await c.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        got: list[Any] = []

        async def step() -> None:
            for recs in (await c.getmany(timeout_ms=200)).values():
                got.extend(recs)

        await wait_for(ctx, lambda: len(got) >= count, f"{count} records (have {len(got)})", step)
        return got
    finally:
        await c.stop()


async def produce_consume(ctx: Ctx) -> None:
    t = ctx.topic()
    await create_topic(ctx, t, 3)
    sent = keyed_records()
    await produce_all(ctx, t, [{"key": k, "value": v} for k, v in sent])
    got = await read_all(ctx, t, 3, len(sent))
    check_produce_consume(sent, [(r.partition, r.offset, r.key, r.value) for r in got])


def compression(codec: str):
    async def run(ctx: Ctx) -> None:
        t = ctx.topic()
        await create_topic(ctx, t, 1)
        values = compressible_values()
        await produce_all(ctx, t, [{"value": v} for v in values], compression_type=codec)
        got = await read_all(ctx, t, 1, len(values))
        check([r.value for r in got] == values, "values differ after the round trip")
        check([r.offset for r in got] == list(range(len(values))), "offsets not 0..n-1")
    return run


async def headers_and_nulls(ctx: Ctx) -> str:
    t = ctx.topic()
    await create_topic(ctx, t, 1)
    recs = [
        {"key": None, "value": b"v-null-key", "headers": [("h", b"1"), ("h", b"2"), ("empty", b"")]},
        {"key": b"k-tombstone", "value": None},
        {"key": b"", "value": b""},
        {"key": b"k", "value": b"v", "headers": [("nullhdr", None)]},
    ]
    await produce_all(ctx, t, recs)
    got = await read_all(ctx, t, 1, len(recs))
    check([(r.key, r.value) for r in got] == [(r["key"], r["value"]) for r in recs], f"keys/values differ: {[(r.key, r.value) for r in got]}")
    check(list(got[0].headers) == [("h", b"1"), ("h", b"2"), ("empty", b"")], f"headers differ: {got[0].headers}")
    check(not got[1].headers and not got[2].headers, "unexpected headers")
    check(list(got[3].headers) == [("nullhdr", None)], f"null header value differs: {got[3].headers}")
    return "null header value included"


async def large_message(ctx: Ctx) -> None:
    t = ctx.topic()
    await create_topic(ctx, t, 1, {"max.message.bytes": LARGE_TOPIC_MAX})
    value = large_value()
    await produce_all(ctx, t, [{"value": value}], max_request_size=5_000_000)
    got = await read_all(ctx, t, 1, 1)
    check(got[0].value == value, "value differs")


async def list_offsets(ctx: Ctx) -> None:
    t = ctx.topic()
    await create_topic(ctx, t, 1)
    t0 = int(time.time() * 1000) - 60_000
    await produce_all(ctx, t, [{"value": f"r{i}".encode(), "timestamp_ms": t0 + 1000 * i} for i in range(3)])
    c = consumer(ctx)
    await c.start()
    tp = TopicPartition(t, 0)
    try:
        check((await c.beginning_offsets([tp]))[tp] == 0, "earliest != 0")
        check((await c.end_offsets([tp]))[tp] == 3, "latest != 3")
        by = (await c.offsets_for_times({tp: t0 + 500}))[tp]
        check(by is not None and by.offset == 1, f"by time T+500: {by}")
        by = (await c.offsets_for_times({tp: t0 + 1000}))[tp]
        check(by is not None and by.offset == 1, f"by time T+1000: {by}")
        by = (await c.offsets_for_times({tp: t0 + 10_000}))[tp]
        check(by is None, f"by time after the last record: {by}, expected none")
    finally:
        await c.stop()


async def admin_topics(ctx: Ctx) -> None:
    a = await admin(ctx)
    t = ctx.topic()
    try:
        resp = await a.create_topics([NewTopic(t, 2, 1, topic_configs={"retention.ms": "3600000"})], timeout_ms=10000)
        check(not any(errors_of(resp)), f"create: {errors_of(resp)}")
        resp = await a.create_topics([NewTopic(t, 2, 1)], timeout_ms=10000)
        check(errors_of(resp) == [TOPIC_ALREADY_EXISTS], f"create again: error codes {errors_of(resp)}")

        async def partitions() -> int:
            d = await a.describe_topics([t])
            return len([p for p in d[0]["partitions"] if p["leader"] >= 0])

        await wait_for(ctx, lambda: partitions(), "partitions", None)
        await wait_for(ctx, lambda: _eq(partitions(), 2), "2 partitions with leaders")

        async def retention() -> str:
            r = await a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, t)])
            for res in r[0].to_object()["resources"]:
                for e in res["config_entries"]:
                    if e["config_names"] == "retention.ms":
                        return str(e["config_value"])
            return ""

        got = await retention()
        check(got == "3600000", f"retention.ms = {got}")
        # aiokafka has only the legacy AlterConfigs (whole-resource replace), no incremental API.
        resp = await a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, t, {"retention.ms": "7200000"})])
        check(not any(errors_of(resp[0])), f"alter_configs: {errors_of(resp[0])}")
        await wait_for(ctx, lambda: _eq(retention(), "7200000"), "altered retention.ms")
        resp = await a.create_partitions({t: NewPartitions(4)}, timeout_ms=10000)
        check(not any(errors_of(resp)), f"create_partitions 4: {errors_of(resp)}")
        await wait_for(ctx, lambda: _eq(partitions(), 4), "4 partitions")
        try:
            resp = await a.create_partitions({t: NewPartitions(3)}, timeout_ms=10000)
            check(errors_of(resp) == [INVALID_PARTITIONS], f"decrease: error codes {errors_of(resp)}")
        except InvalidPartitionsError:
            pass
        resp = await a.delete_topics([t], timeout_ms=10000)
        check(not any(errors_of(resp)), f"delete: {errors_of(resp)}")

        async def gone() -> bool:
            return t not in await a.list_topics()

        await wait_for(ctx, gone, "topic gone")
    finally:
        await a.close()


async def _eq(coro: Awaitable[Any], want: Any) -> bool:
    return (await coro) == want


async def consumer_group(ctx: Ctx) -> None:
    t = ctx.topic()
    await create_topic(ctx, t, 4)
    g = ctx.group()
    conf = {"group_id": g, "session_timeout_ms": 10000, "heartbeat_interval_ms": 500}
    a = consumer(ctx, t, **conf)
    b = consumer(ctx, t, **conf)
    got: dict[str, list[Any]] = {"a": [], "b": [], "c": []}

    def poller(name: str, c: AIOKafkaConsumer) -> Callable[[], Awaitable[None]]:
        async def poll() -> None:
            for recs in (await c.getmany(timeout_ms=100)).values():
                got[name].extend(recs)
        return poll

    async def both() -> None:
        await asyncio.gather(poller("a", a)(), poller("b", b)())

    def parts(c: AIOKafkaConsumer) -> set[int]:
        return {tp.partition for tp in c.assignment()}

    await a.start()
    await wait_for(ctx, lambda: parts(a) == {0, 1, 2, 3}, "A owns all 4 partitions", poller("a", a))
    await b.start()

    def split() -> bool:
        pa, pb = parts(a), parts(b)
        return len(pa) == 2 and len(pb) == 2 and pa | pb == {0, 1, 2, 3}

    await wait_for(ctx, split, "A and B 2+2", both)
    pa, pb = parts(a), parts(b)
    await produce_all(ctx, t, [{"value": f"p{p}-{i}".encode(), "partition": p} for p in range(4) for i in range(10)])
    await wait_for(ctx, lambda: len(got["a"]) + len(got["b"]) >= 40, "40 records", both)
    check(len(got["a"]) + len(got["b"]) == 40, "duplicates")
    check({r.partition for r in got["a"]} <= pa and {r.partition for r in got["b"]} <= pb, "record from a partition the member does not own")
    await a.commit()
    await b.commit()
    await b.stop()
    got["a"].clear()
    await wait_for(ctx, lambda: parts(a) == {0, 1, 2, 3}, "A owns all 4 after B left", poller("a", a))
    await produce_all(ctx, t, [{"value": f"p{p}-x{i}".encode(), "partition": p} for p in range(4) for i in range(2)])
    await wait_for(ctx, lambda: len(got["a"]) >= 8, "8 new records on A", poller("a", a))
    check(sorted(r.value for r in got["a"]) == sorted(f"p{p}-x{i}".encode() for p in range(4) for i in range(2)),
          f"A did not resume at the commits: {[r.value for r in got['a']][:10]}")
    await a.commit()
    await a.stop()
    await produce_all(ctx, t, [{"value": f"p{p}-y".encode(), "partition": p} for p in range(4)])
    c = consumer(ctx, t, **conf)
    await c.start()
    try:
        await wait_for(ctx, lambda: len(got["c"]) >= 4, "4 records on C", poller("c", c))
        check(sorted(r.value for r in got["c"]) == sorted(f"p{p}-y".encode() for p in range(4)),
              f"C did not resume at A's commits: {[r.value for r in got['c']]}")
        committed = [await c.committed(TopicPartition(t, p)) for p in range(4)]
        check(committed == [12, 12, 12, 12], f"committed {committed}")
    finally:
        await c.stop()


async def idempotent(ctx: Ctx) -> None:
    t = ctx.topic()
    await create_topic(ctx, t, 1)
    values = [f"i{i:03d}".encode() for i in range(100)]
    await produce_all(ctx, t, [{"value": v} for v in values], enable_idempotence=True)
    got = await read_all(ctx, t, 1, 100)
    check([r.offset for r in got] == list(range(100)), "offsets not contiguous 0..99")
    check([r.value for r in got] == values, "values duplicated, lost or reordered")


async def tx_producer(ctx: Ctx, txn_id: str) -> AIOKafkaProducer:
    p = AIOKafkaProducer(bootstrap_servers=ctx.bootstrap, transactional_id=txn_id, transaction_timeout_ms=60000)
    await p.start()  # start() runs InitProducerId for a transactional producer
    return p


async def transactions(ctx: Ctx) -> None:
    t = ctx.topic()
    await create_topic(ctx, t, 1)
    p = await tx_producer(ctx, ctx.txn_id())
    batches = [("c1", True), ("a", False), ("c2", True)]
    try:
        for tag, commit in batches:
            await p.begin_transaction()
            for i in range(5):
                await p.send_and_wait(t, value=f"{tag}-{i}".encode())
            if commit:
                await p.commit_transaction()
            else:
                await p.abort_transaction()
    finally:
        await p.stop()
    committed = [f"{tag}-{i}".encode() for tag, c in batches if c for i in range(5)]
    allv = [f"{tag}-{i}".encode() for tag, _ in batches for i in range(5)]
    rc = await read_all(ctx, t, 1, 10, isolation_level="read_committed")
    check([r.value for r in rc] == committed, f"read_committed saw {[r.value for r in rc]}")
    ru = await read_all(ctx, t, 1, 15, isolation_level="read_uncommitted")
    check([r.value for r in ru] == allv, f"read_uncommitted saw {[r.value for r in ru]}")


async def consume_transform_produce(ctx: Ctx) -> None:
    src, dst = ctx.topic("in"), ctx.topic("out")
    await create_topic(ctx, src, 1)
    await create_topic(ctx, dst, 1)
    g = ctx.group()
    await produce_all(ctx, src, [{"value": f"in-{i}".encode()} for i in range(10)])
    c = consumer(ctx, src, group_id=g, isolation_level="read_committed")
    await c.start()
    p = await tx_producer(ctx, ctx.txn_id())
    tp = TopicPartition(src, 0)
    try:
        async def process(n: int, commit: bool) -> None:
            msgs: list[Any] = []

            async def step() -> None:
                for recs in (await c.getmany(timeout_ms=100)).values():
                    msgs.extend(recs)
            await wait_for(ctx, lambda: len(msgs) >= n, f"{n} inputs", step)
            check(len(msgs) == n, f"read {len(msgs)} inputs, expected {n}")
            await p.begin_transaction()
            for m in msgs:
                await p.send_and_wait(dst, value=(m.value or b"").upper())
            await p.send_offsets_to_transaction({tp: msgs[-1].offset + 1}, g)
            if commit:
                await p.commit_transaction()
            else:
                await p.abort_transaction()

        await process(10, True)
        # The group coordinator applies transactional offsets when the commit marker lands.
        await wait_for(ctx, lambda: _eq(c.committed(tp), 10), "committed offset 10 after the commit")
        await produce_all(ctx, src, [{"value": f"in-{i}".encode()} for i in range(10, 15)])
        await process(5, False)
        c2 = consumer(ctx, group_id=g)
        await c2.start()
        committed = await c2.committed(tp)
        await c2.stop()
        check(committed == 10, f"committed offset {committed} after the aborted transaction")
    finally:
        await c.stop()
        await p.stop()
    out = await read_all(ctx, dst, 1, 10, isolation_level="read_committed")
    check([r.value for r in out] == [f"IN-{i}".encode() for i in range(10)], f"outputs {[r.value for r in out]}")
    c3 = consumer(ctx)
    await c3.start()
    try:
        end = (await c3.end_offsets([TopicPartition(dst, 0)]))[TopicPartition(dst, 0)]
        check(end == 17, f"output end offset {end}, expected 17 (10 + marker + 5 + marker)")
    finally:
        await c3.stop()


async def fencing(ctx: Ctx) -> None:
    t = ctx.topic()
    await create_topic(ctx, t, 1)
    txn = ctx.txn_id()
    p1 = await tx_producer(ctx, txn)
    await p1.begin_transaction()
    await p1.send_and_wait(t, value=b"from-p1")
    p2 = await tx_producer(ctx, txn)
    try:
        await p1.commit_transaction()
        raise ScenarioFailed("the fenced producer committed")
    except KafkaError as exc:
        name = type(exc).__name__.lower()
        check("fenced" in name or "epoch" in name, f"unexpected error for the fenced producer: {exc!r}")
    finally:
        await p1.stop()
    try:
        await p2.begin_transaction()
        await p2.send_and_wait(t, value=b"from-p2")
        await p2.commit_transaction()
    finally:
        await p2.stop()
    got = await read_all(ctx, t, 1, 1, isolation_level="read_committed")
    check([r.value for r in got] == [b"from-p2"], f"read_committed saw {[r.value for r in got]}")


# ------------------------------------------------------------------ the security suite

class UnsecuredToken(AbstractTokenProvider):
    """The contract's unsecured JWS (alg none, sub carol) as the client's OAUTHBEARER token
    provider: aiokafka makes no token of its own."""

    def __init__(self, token: str) -> None:
        self._token = token

    async def token(self) -> str:
        return self._token


def secure_conf(ctx: Ctx, how: str) -> dict[str, Any]:
    """Client settings for scram (SASL_SSL), plain / oauth (SASL_PLAINTEXT), mtls (SSL) and
    denied (mallory, PLAIN on SASL_PLAINTEXT)."""
    s = ctx.sec()
    listeners = s["listeners"]
    if how == "mtls":
        return {"bootstrap_servers": listeners["SSL"], "security_protocol": "SSL",
                "ssl_context": create_ssl_context(cafile=s["ca_pem"], certfile=s["client_cert_pem"],
                                                  keyfile=s["client_key_pem"])}
    if how == "scram":
        return {"bootstrap_servers": listeners["SASL_SSL"], "security_protocol": "SASL_SSL",
                "ssl_context": create_ssl_context(cafile=s["ca_pem"]),
                "sasl_mechanism": "SCRAM-SHA-512",
                "sasl_plain_username": s["scram_sha_512"]["user"],
                "sasl_plain_password": s["scram_sha_512"]["password"]}
    if how == "oauth":
        return {"bootstrap_servers": listeners["SASL_PLAINTEXT"], "security_protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "OAUTHBEARER",
                "sasl_oauth_token_provider": UnsecuredToken(s["oauthbearer"]["token"])}
    who = s["plain"] if how == "plain" else s["denied"]
    return {"bootstrap_servers": listeners["SASL_PLAINTEXT"], "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN", "sasl_plain_username": who["user"],
            "sasl_plain_password": who["password"]}


def secure_round_trip(how: str, label: str) -> Callable[[Ctx], Awaitable[str]]:
    async def run_(ctx: Ctx) -> str:
        conf = secure_conf(ctx, how)
        t = ctx.topic()
        await create_topic(ctx, t, 1)
        values = secure_values()
        p = AIOKafkaProducer(**conf, acks="all", linger_ms=5)
        await p.start()
        await produce_all(ctx, t, [{"value": v} for v in values], p)
        await p.stop()
        c = AIOKafkaConsumer(t, **conf, group_id=ctx.group(), auto_offset_reset="earliest",
                             enable_auto_commit=False)
        await c.start()
        try:
            got: list[bytes] = []

            async def step() -> None:
                for recs in (await c.getmany(timeout_ms=200)).values():
                    got.extend(r.value for r in recs)

            await wait_for(ctx, lambda: len(got) >= len(values),
                           f"{len(values)} records in the group (have {len(got)})", step)
            check(got == values, f"consumed {got[:3]}..., produced {values[:3]}...")
            await c.commit()
            committed = await c.committed(TopicPartition(t, 0))
            check(committed == len(values), f"committed offset {committed}")
        finally:
            await c.stop()
        return f"{label}: {len(values)} produced, consumed in a group, committed offset {len(values)}"
    return run_


async def expect_raise(ctx: Ctx, error: type[Exception], call: Callable[[], Awaitable[object]],
                       what: str) -> Exception:
    """Await `call()` until it raises `error` (FAIL on another non-retriable error, or when it
    never raises before the deadline)."""
    others: list[str] = []
    while time.monotonic() < ctx.deadline:
        try:
            await asyncio.wait_for(call(), max(0.1, ctx.remaining()))
        except error as exc:
            return exc
        except (TimeoutError, KafkaError) as exc:
            if isinstance(exc, asyncio.TimeoutError) or getattr(exc, "retriable", False):
                others.append(repr(exc))
                continue
            raise ScenarioFailed(f"{what}: {exc!r}, not {error.__name__}") from None
    raise ScenarioFailed(f"{what}: no {error.__name__} within the timeout "
                         f"(saw: {'; '.join(dict.fromkeys(others))[:300] or 'nothing'})")


async def end_offset(ctx: Ctx, topic: str) -> int:
    c = consumer(ctx)
    await c.start()
    try:
        tp = TopicPartition(topic, 0)
        return int((await c.end_offsets([tp]))[tp])
    finally:
        await c.stop()


class _Captured(logging.Handler):
    """Keeps the first log records of `logger` containing `text` and silences that logger
    (aiokafka logs the same error thousands of times a second) while in use."""

    def __init__(self, logger: str, text: str) -> None:
        super().__init__()
        self.logger, self.text = logging.getLogger(logger), text
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if self.text in msg and len(self.records) < 5:
            self.records.append(msg)

    def __enter__(self) -> _Captured:
        self._propagate = self.logger.propagate
        self.logger.propagate = False
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self)
        self.logger.propagate = self._propagate


async def acl_denied_produce(ctx: Ctx) -> str:
    t = denied_name(ctx, "produce")
    await create_topic(ctx, t, 1)
    p = AIOKafkaProducer(**secure_conf(ctx, "denied"), acks="all", request_timeout_ms=10000)
    await p.start()
    try:
        async def send() -> None:
            await (await p.send(t, b"must-not-land"))

        exc = await expect_raise(ctx, TopicAuthorizationFailedError, send, "the denied produce")
    finally:
        await p.stop()
    end = await end_offset(ctx, t)
    check(end == 0, f"the topic holds {end} records after the denied produce")
    return f"{type(exc).__name__} seen; topic still empty (end offset 0)"


async def acl_denied_consume(ctx: Ctx) -> str:
    t = denied_name(ctx, "consume")
    await create_topic(ctx, t, 1)
    await produce_all(ctx, t, [{"value": b"admin-only"}])
    c = AIOKafkaConsumer(**secure_conf(ctx, "denied"), group_id=None, enable_auto_commit=False,
                         auto_offset_reset="earliest")
    await c.start()
    got: list[Any] = []
    try:
        tp = TopicPartition(t, 0)
        c.assign([tp])

        # aiokafka raises nothing for an assigned partition whose topic Metadata answers
        # TOPIC_AUTHORIZATION_FAILED (on Kafka as on Odradek): getmany() returns nothing and
        # position() waits, while the client refreshes metadata in a loop and logs the error
        # at each answer ("Topic .. is not authorized for this client", aiokafka.cluster).
        # That log record is how this client reports it.
        with _Captured("aiokafka.cluster", "is not authorized") as seen:
            async def poll() -> None:
                for recs in (await c.getmany(timeout_ms=200)).values():
                    got.extend(recs)

            await wait_for(ctx, lambda: seen.records, "the client's topic authorization error", poll)
            for _ in range(5):  # 1 s more of polling: still nothing delivered
                await poll()
        check(not got, f"{len(got)} records delivered to the denied consumer")
    finally:
        await c.stop()
    return (f"TOPIC_AUTHORIZATION_FAILED reported by the client's log ({seen.records[0]!r}: "
            "aiokafka raises nothing for an assigned partition); no record delivered")


async def acl_denied_group(ctx: Ctx) -> str:
    t = ctx.topic("grp")
    await create_topic(ctx, t, 1)
    await produce_all(ctx, t, [{"value": b"allowed"}])
    c = AIOKafkaConsumer(t, **secure_conf(ctx, "denied"), group_id=denied_name(ctx, "group"),
                         enable_auto_commit=False, auto_offset_reset="earliest")
    got: list[Any] = []
    try:
        async def poll() -> None:
            for recs in (await c.getmany(timeout_ms=200)).values():
                got.extend(recs)

        # start() looks the group's coordinator up (FindCoordinator: the first denial).
        exc = await expect_raise(ctx, GroupAuthorizationFailedError, c.start, "start() in the denied group")
        check(not got, f"{len(got)} records delivered to the member of the denied group")
    finally:
        await c.stop()
    return f"{type(exc).__name__} raised in the denied group; no record delivered"


async def acl_denied_txn(ctx: Ctx) -> str:
    p = AIOKafkaProducer(**secure_conf(ctx, "denied"), transactional_id=denied_name(ctx, "txn"))
    try:
        # start() runs FindCoordinator and InitProducerId for a transactional producer.
        exc = await expect_raise(ctx, TransactionalIdAuthorizationFailed, p.start, "start()")
    finally:
        await p.stop()
    return f"{type(exc).__name__} raised by start() (InitProducerId)"


def sync(fn: Callable[[Ctx], Awaitable[Any]]) -> Callable[[Ctx], Any]:
    return lambda ctx: asyncio.run(fn(ctx))


async def quota_throttle(ctx: Ctx) -> str:
    # Checked in aiokafka 0.14.0's source: throttle_time_ms appears only in its protocol
    # structs; no hook, metric or log line reports it, so the client cannot observe a throttle.
    raise NotSupported(f"aiokafka {aiokafka.__version__} exposes no throttle time (throttle_time_ms "
                       "is decoded and never reported: no callback, metric or log)")


SCENARIOS = {
    name: sync(fn)
    for name, fn in {
        "quota-throttle": quota_throttle,
        "sasl-scram-sha-512": secure_round_trip("scram", "SASL_SSL SCRAM-SHA-512 as bob"),
        "sasl-plain": secure_round_trip("plain", "SASL_PLAINTEXT PLAIN as alice"),
        "mtls": secure_round_trip("mtls", "SSL with the client certificate"),
        "sasl-oauthbearer": secure_round_trip("oauth", "SASL_PLAINTEXT OAUTHBEARER, the unsecured "
                                                       "token through sasl_oauth_token_provider"),
        "acl-denied-produce": acl_denied_produce,
        "acl-denied-consume": acl_denied_consume,
        "acl-denied-group": acl_denied_group,
        "acl-denied-txn": acl_denied_txn,
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
        "transactions": transactions,
        "consume-transform-produce": consume_transform_produce,
        "fencing": fencing,
    }.items()
}

if __name__ == "__main__":
    main(CLIENT, VERSION, SCENARIOS)
