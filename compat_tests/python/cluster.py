"""The cluster suite's rows for the Python-hosted clients (confluent-kafka, kafka-python,
aiokafka): `python -m compat_tests.python.cluster --client NAME --bootstrap ... --scenario ...`.

Each row asks the runner for its steps (setup, kill, verify, restore) on stdout and reads the
answers on stdin: the phase protocol of compat_tests/cluster_suite.py. The driver kills
nothing itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from compat_tests.python.common import Ctx, ScenarioFailed, check, main

ACKS_ALL_RECORDS = 300
KILL_AFTER = 100
_lock = threading.Lock()


def ask(ctx: Ctx, step: str, **data: Any) -> dict[str, Any]:
    """One step of the phase protocol: the runner's answer, or the row fails with its error."""
    with _lock:
        sys.stdout.write(json.dumps({"cluster": step, "scenario": ctx.scenario, **data}) + "\n")
        sys.stdout.flush()
        line = sys.stdin.readline()
    if not line:
        raise ScenarioFailed(f"no answer from the runner to {step}")
    reply: dict[str, Any] = json.loads(line)
    if not reply.get("ok"):
        raise ScenarioFailed(f"{step}: {reply.get('error')}")
    return reply


def servers(ctx: Ctx) -> list[str]:
    return ctx.bootstrap.split(",")


# ------------------------------------------------------------------ confluent-kafka

def ck_acks_all(ctx: Ctx) -> str:
    from confluent_kafka import Producer

    s = ask(ctx, "setup")
    acked: list[str] = []
    errors: list[str] = []

    def on_delivery(err: Any, msg: Any) -> None:
        (errors.append(str(err)) if err is not None else acked.append(msg.value().decode()))

    p = Producer({"bootstrap.servers": ctx.bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5, "message.timeout.ms": int(ctx.remaining() * 1000 * 0.6),
                  "log_level": 0})
    for i in range(ACKS_ALL_RECORDS):
        if i == KILL_AFTER:
            check(p.flush(ctx.remaining()) == 0, "records before the kill not acknowledged")
            ask(ctx, "kill")
        p.produce(s["topic"], value=str(i).encode(), partition=i % 3, on_delivery=on_delivery)
        p.poll(0)
        time.sleep(0.002)
    check(p.flush(ctx.remaining()) == 0, f"{len(p)} records unacknowledged at the deadline")
    check(not errors, f"{len(errors)} delivery errors: {errors[:2]}")
    detail = ask(ctx, "verify", acked=acked)["detail"]
    ask(ctx, "restore")
    return str(detail)


def ck_not_enough_replicas(ctx: Ctx) -> str:
    from confluent_kafka import KafkaError, Producer

    s = ask(ctx, "setup")
    ask(ctx, "kill")

    def produce(acks: str) -> Any:
        got: list[Any] = []
        p = Producer({"bootstrap.servers": ctx.bootstrap, "acks": acks, "enable.idempotence": False,
                      "retries": 0, "message.timeout.ms": 15000, "log_level": 0})
        p.produce(s["topic"], b"x", partition=s["partition"], on_delivery=lambda e, m: got.append(e))
        p.flush(20)
        return got[0] if got else "no delivery report"

    err = produce("all")
    check(err is not None and getattr(err, "code", lambda: None)() == KafkaError.NOT_ENOUGH_REPLICAS,
          f"acks=all with one in-sync replica: {err}, expected NOT_ENOUGH_REPLICAS")
    err1 = produce("1")
    check(err1 is None, f"acks=1 with one in-sync replica failed: {err1}")
    ask(ctx, "restore")
    return f"acks=all: {err.name()}; acks=1 accepted"


def ck_group_coordinator(ctx: Ctx) -> str:
    from confluent_kafka import Consumer, KafkaException

    s = ask(ctx, "setup")
    c = Consumer({"bootstrap.servers": ctx.bootstrap, "group.id": s["group"],
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 0})
    c.subscribe([s["topic"]])
    seen: set[str] = set()
    killed = False
    try:
        while len(seen) < s["count"] and time.monotonic() < ctx.deadline - 10:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            seen.add(m.value().decode())
            with contextlib.suppress(KafkaException):  # the coordinator moving: a later
                c.commit(m, asynchronous=False)  # commit covers this record
            if len(seen) == 20 and not killed:
                ask(ctx, "kill")
                killed = True
        # the positions, explicitly: commit() without offsets fails with _NO_OFFSET when the
        # last per-record commit already succeeded
        ctx.wait_for(lambda: c.commit(offsets=c.position(c.assignment()), asynchronous=False)
                     or True, "a final commit")
    finally:
        c.close()
    detail = ask(ctx, "verify", values=sorted(seen))["detail"]
    ask(ctx, "restore")
    return str(detail)


# ------------------------------------------------------------------ kafka-python

def kp_acks_all(ctx: Ctx) -> str:
    from kafka import KafkaProducer

    s = ask(ctx, "setup")
    acked: list[str] = []
    errors: list[str] = []
    p = KafkaProducer(bootstrap_servers=servers(ctx), acks="all", enable_idempotence=True,
                      linger_ms=5, retries=2**31 - 1, delivery_timeout_ms=int(ctx.remaining() * 600))
    futures = []
    for i in range(ACKS_ALL_RECORDS):
        if i == KILL_AFTER:
            p.flush(ctx.remaining())
            ask(ctx, "kill")
        f = p.send(s["topic"], value=str(i).encode(), partition=i % 3)
        f.add_callback(lambda md, v=str(i): acked.append(v))
        f.add_errback(lambda e: errors.append(repr(e)))
        futures.append(f)
        time.sleep(0.002)
    p.flush(ctx.remaining())
    p.close(5)
    check(not errors, f"{len(errors)} delivery errors: {errors[:2]}")
    detail = ask(ctx, "verify", acked=acked)["detail"]
    ask(ctx, "restore")
    return str(detail)


def kp_not_enough_replicas(ctx: Ctx) -> str:
    from kafka import KafkaProducer
    from kafka.errors import NotEnoughReplicasError

    s = ask(ctx, "setup")
    ask(ctx, "kill")

    def produce(acks: int | str) -> BaseException | None:
        p = KafkaProducer(bootstrap_servers=servers(ctx), acks=acks, retries=0)
        try:
            p.send(s["topic"], b"x", partition=s["partition"]).get(20)
            return None
        except Exception as exc:
            return exc
        finally:
            p.close(5)

    err = produce("all")
    check(isinstance(err, NotEnoughReplicasError),
          f"acks=all with one in-sync replica: {err!r}, expected NotEnoughReplicasError")
    err1 = produce(1)
    check(err1 is None, f"acks=1 with one in-sync replica failed: {err1!r}")
    ask(ctx, "restore")
    return f"acks=all: {type(err).__name__}; acks=1 accepted"


def kp_group_coordinator(ctx: Ctx) -> str:
    from kafka import KafkaConsumer

    s = ask(ctx, "setup")
    c = KafkaConsumer(s["topic"], bootstrap_servers=servers(ctx), group_id=s["group"],
                      auto_offset_reset="earliest", enable_auto_commit=False)
    seen: set[str] = set()
    killed = False
    try:
        while len(seen) < s["count"] and time.monotonic() < ctx.deadline - 10:
            for records in c.poll(500).values():
                for r in records:
                    seen.add(r.value.decode())
                    with contextlib.suppress(Exception):  # the coordinator moving: a later
                        c.commit()  # commit covers this record
                    if len(seen) >= 20 and not killed:
                        ask(ctx, "kill")
                        killed = True
        ctx.wait_for(lambda: c.commit() or True, "a final commit")
    finally:
        c.close()
    detail = ask(ctx, "verify", values=sorted(seen))["detail"]
    ask(ctx, "restore")
    return str(detail)


# ------------------------------------------------------------------ aiokafka

def _in_loop(fn: Callable[[Ctx], Any]) -> Callable[[Ctx], str]:
    def run(ctx: Ctx) -> str:
        return str(asyncio.run(asyncio.wait_for(fn(ctx), ctx.remaining())))
    return run


async def _ask(ctx: Ctx, step: str, **data: Any) -> dict[str, Any]:
    return await asyncio.to_thread(ask, ctx, step, **data)


async def ak_acks_all(ctx: Ctx) -> str:
    from aiokafka import AIOKafkaProducer

    s = await _ask(ctx, "setup")
    acked: list[str] = []
    p = AIOKafkaProducer(bootstrap_servers=ctx.bootstrap, acks="all", enable_idempotence=True,
                         linger_ms=5, request_timeout_ms=int(ctx.remaining() * 600))
    await p.start()
    try:
        pending = []
        for i in range(ACKS_ALL_RECORDS):
            if i == KILL_AFTER:
                await p.flush()
                await _ask(ctx, "kill")
            fut = await p.send(s["topic"], value=str(i).encode(), partition=i % 3)
            pending.append((str(i), fut))
            await asyncio.sleep(0.002)
        errors = []
        for v, fut in pending:
            try:
                await fut
                acked.append(v)
            except Exception as exc:
                errors.append(repr(exc))
    finally:
        await p.stop()
    check(not errors, f"{len(errors)} delivery errors: {errors[:2]}")
    detail = (await _ask(ctx, "verify", acked=acked))["detail"]
    await _ask(ctx, "restore")
    return str(detail)


async def ak_not_enough_replicas(ctx: Ctx) -> str:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import NotEnoughReplicasError

    s = await _ask(ctx, "setup")
    await _ask(ctx, "kill")

    async def produce(acks: int | str) -> BaseException | None:
        # aiokafka retries a retriable error until request_timeout_ms: a short one shows it
        p = AIOKafkaProducer(bootstrap_servers=ctx.bootstrap, acks=acks, request_timeout_ms=5000)
        await p.start()
        try:
            await p.send_and_wait(s["topic"], b"x", partition=s["partition"])
            return None
        except Exception as exc:
            return exc
        finally:
            await p.stop()

    err = await produce("all")
    check(isinstance(err, NotEnoughReplicasError),
          f"acks=all with one in-sync replica: {err!r}, expected NotEnoughReplicasError")
    err1 = await produce(1)
    check(err1 is None, f"acks=1 with one in-sync replica failed: {err1!r}")
    await _ask(ctx, "restore")
    return f"acks=all: {type(err).__name__}; acks=1 accepted"


async def ak_group_coordinator(ctx: Ctx) -> str:
    from aiokafka import AIOKafkaConsumer

    s = await _ask(ctx, "setup")
    c = AIOKafkaConsumer(s["topic"], bootstrap_servers=ctx.bootstrap, group_id=s["group"],
                         auto_offset_reset="earliest", enable_auto_commit=False)
    await c.start()
    seen: set[str] = set()
    killed = False
    try:
        while len(seen) < s["count"] and time.monotonic() < ctx.deadline - 10:
            for records in (await c.getmany(timeout_ms=500)).values():
                for r in records:
                    seen.add(r.value.decode())
                    with contextlib.suppress(Exception):  # the coordinator moving: a later
                        await c.commit()  # commit covers this record
                    if len(seen) >= 20 and not killed:
                        await _ask(ctx, "kill")
                        killed = True
        while True:
            try:
                await c.commit()
                break
            except Exception:
                if time.monotonic() > ctx.deadline - 5:
                    raise
                await asyncio.sleep(0.5)
    finally:
        await c.stop()
    detail = (await _ask(ctx, "verify", values=sorted(seen)))["detail"]
    await _ask(ctx, "restore")
    return str(detail)


ROWS: dict[str, dict[str, Callable[[Ctx], str | None]]] = {
    "confluent-kafka": {"failover-acks-all": ck_acks_all,
                        "failover-not-enough-replicas": ck_not_enough_replicas,
                        "failover-group-coordinator": ck_group_coordinator},
    "kafka-python": {"failover-acks-all": kp_acks_all,
                     "failover-not-enough-replicas": kp_not_enough_replicas,
                     "failover-group-coordinator": kp_group_coordinator},
    "aiokafka": {"failover-acks-all": _in_loop(ak_acks_all),
                 "failover-not-enough-replicas": _in_loop(ak_not_enough_replicas),
                 "failover-group-coordinator": _in_loop(ak_group_coordinator)},
}


def version(client: str) -> str:
    if client == "confluent-kafka":
        import confluent_kafka

        return f"{confluent_kafka.version()} (librdkafka {confluent_kafka.libversion()[0]})"
    mod = __import__("kafka" if client == "kafka-python" else "aiokafka")
    return str(mod.__version__)


if __name__ == "__main__":
    argv = sys.argv[1:]
    if len(argv) < 2 or argv[0] != "--client" or argv[1] not in ROWS:
        sys.exit(f"usage: python -m compat_tests.python.cluster --client {'|'.join(ROWS)} ...")
    main(argv[1], version(argv[1]), ROWS[argv[1]], argv[2:])
