"""kcat driver: the kcat command line (librdkafka inside) run as subprocesses.

kcat has no admin operations, so topics are created beforehand with confluent-kafka's
AdminClient (set-up, not under test) and admin-topics is NOT_SUPPORTED. Transactions use kcat's
own `-X transactional.id`: one transaction per run, committed when stdin closes, aborted on
SIGINT. It cannot send consumer offsets in a transaction: consume-transform-produce is
NOT_SUPPORTED.

The security suite runs kcat with librdkafka's `-X` settings on the SASL/TLS listeners. kcat
expresses all of it (SASL_SSL, mTLS, OAUTHBEARER with librdkafka's unsecured JWT; a denied
produce, consume, group and transactional.id end kcat with the broker's error on stderr);
committed offsets are read back with confluent-kafka through the admin listener.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from compat_tests.python import confluent
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

CLIENT = "kcat"
KCAT = shutil.which("kcat") or shutil.which("kafkacat") or "kcat"
RS, US = "\\x1e", "\\x1f"  # record and key separators given to -D/-K


def _version() -> str:
    try:
        out = subprocess.run([KCAT, "-V"], capture_output=True, text=True, timeout=10).stdout
        m = re.search(r"Version (\S+).*?librdkafka (\S+)", out, re.S)
        return f"{m.group(1)} (librdkafka {m.group(2)})" if m else "unknown"
    except Exception:
        return "not installed"


VERSION = _version()


def run(ctx: Ctx, args: list[str], data: bytes = b"", bootstrap: str | None = None) -> bytes:
    p = subprocess.run([KCAT, "-b", bootstrap or ctx.bootstrap, *args], input=data, capture_output=True,
                       timeout=ctx.remaining())
    if p.returncode != 0:
        raise ScenarioFailed(f"kcat {' '.join(args[:6])} exited {p.returncode}: {p.stderr.decode(errors='replace')[-300:]}")
    return p.stdout


def produce(ctx: Ctx, topic: str, values: list[bytes], extra: Sequence[str] = (), keys: list[bytes] | None = None) -> None:
    args = ["-P", "-t", topic, "-D", RS, "-X", "acks=all", *extra]
    if keys is not None:
        args += ["-K", US]
        payload = b"\x1e".join(k + b"\x1f" + v for k, v in zip(keys, values, strict=False))
    else:
        payload = b"\x1e".join(values)
    run(ctx, args, payload)


def consume(ctx: Ctx, topic: str, count: int, extra: Sequence[str] = ()) -> list[dict[str, Any]]:
    out = run(ctx, ["-C", "-t", topic, "-o", "beginning", "-c", str(count), "-J", "-q", "-m", "10", *extra])
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def produce_consume(ctx: Ctx) -> None:
    t = ctx.topic()
    confluent.create_topic(ctx, t, 3)
    sent = keyed_records()
    produce(ctx, t, [v for _, v in sent], keys=[k for k, _ in sent])
    got = consume(ctx, t, len(sent))
    check_produce_consume(sent, [(m["partition"], m["offset"], m["key"].encode(), m["payload"].encode()) for m in got])


def compression(codec: str) -> Callable[[Ctx], str]:
    def run_(ctx: Ctx) -> str:
        t = ctx.topic()
        confluent.create_topic(ctx, t, 1)
        values = compressible_values()
        # kcat's -z knows snappy|gzip|lz4; zstd goes through librdkafka's compression.codec.
        produce(ctx, t, values, ["-X", f"compression.codec={codec}", "-X", "linger.ms=100"])
        got = consume(ctx, t, len(values))
        check([m["payload"].encode() for m in got] == values, "values differ after the round trip")
        check([m["offset"] for m in got] == list(range(len(values))), "offsets not 0..n-1")
        return ""
    return run_


def headers_and_nulls(ctx: Ctx) -> str:
    t = ctx.topic()
    confluent.create_topic(ctx, t, 1)
    run(ctx, ["-P", "-t", t, "-H", "h=1", "-H", "h=2", "-H", "empty="], b"v-null-key")
    run(ctx, ["-P", "-t", t, "-K", US, "-Z"], b"k-tombstone\x1f")
    run(ctx, ["-P", "-t", t, "-K", US], b"\x1f")
    run(ctx, ["-P", "-t", t, "-K", US, "-H", "nullhdr"], b"k\x1fv")
    got = consume(ctx, t, 4)
    kv = [(m.get("key"), m.get("payload")) for m in got]
    check(kv == [(None, "v-null-key"), ("k-tombstone", None), ("", ""), ("k", "v")], f"keys/values differ: {kv}")
    check(got[0].get("headers") == ["h", "1", "h", "2", "empty", ""], f"headers differ: {got[0].get('headers')}")
    check(not got[1].get("headers") and not got[2].get("headers"), "unexpected headers")
    check(got[3].get("headers") == ["nullhdr", None], f"null header value differs: {got[3].get('headers')}")
    return "null header value included"


def large_message(ctx: Ctx) -> None:
    t = ctx.topic()
    confluent.create_topic(ctx, t, 1, {"max.message.bytes": LARGE_TOPIC_MAX})
    value = large_value()
    # -D with a byte the value never holds (values are < 251) keeps it one message.
    run(ctx, ["-P", "-t", t, "-D", "\\xff", "-X", "message.max.bytes=5000000"], value)
    out = run(ctx, ["-C", "-t", t, "-o", "beginning", "-c", "1", "-q", "-f", "%s", "-m", "10"])
    check(len(out) == len(value), f"read {len(out)} bytes, produced {len(value)}")
    check(out == value, "value differs")


def list_offsets(ctx: Ctx) -> str:
    t = ctx.topic()
    confluent.create_topic(ctx, t, 1)
    t0 = int(time.time() * 1000) - 60_000
    # kcat cannot set a record timestamp: the records come from confluent-kafka.
    confluent.produce_all(ctx, confluent.producer(ctx), t, [{"value": f"r{i}".encode(), "timestamp": t0 + 1000 * i} for i in range(3)])

    def q(ts: int) -> int:
        out = run(ctx, ["-Q", "-t", f"{t}:0:{ts}", "-m", "10"]).decode()
        m = re.search(r"offset\s+(-?\d+)", out)
        check(m is not None, f"kcat -Q said {out!r}")
        assert m is not None
        return int(m.group(1))

    check(q(-2) == 0, "earliest != 0")
    check(q(-1) == 3, "latest != 3")
    check(q(t0 + 500) == 1, "by time T+500 != 1")
    check(q(t0 + 1000) == 1, "by time T+1000 != 1")
    after = q(t0 + 10_000)
    check(after == -1, f"by time after the last record: {after}, expected -1 (none)")
    return "records produced with confluent-kafka (kcat sets no timestamps); queried with kcat -Q"


def admin_topics(ctx: Ctx) -> None:
    raise NotSupported("kcat has no admin operations (metadata listing only)")


class Member:
    """A `kcat -G` balanced consumer: its JSON records and its rebalance lines, read by threads."""

    def __init__(self, ctx: Ctx, group: str, topic: str) -> None:
        self.records: list[dict[str, Any]] = []
        self.assigned: set[int] = set()
        self.log: list[str] = []  # before the reader threads start: they append to it
        self.proc = subprocess.Popen(
            # auto.offset.reset, not -o: kcat -G applies -o to every assignment, over commits.
            [KCAT, "-b", ctx.bootstrap, "-G", group, "-J", "-u", "-X", "auto.offset.reset=earliest",
             "-X", "session.timeout.ms=10000", "-X", "heartbeat.interval.ms=500",
             "-X", "auto.commit.interval.ms=200", topic],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        threading.Thread(target=self._out, daemon=True).start()
        threading.Thread(target=self._err, daemon=True).start()

    def _out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                self.records.append(json.loads(line))

    def _err(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode(errors="replace")
            self.log.append(line)
            if "rebalanced" in line:
                if "assigned:" in line:
                    self.assigned = {int(p) for p in re.findall(r"\[(\d+)\]", line.split("assigned:", 1)[1])}
                elif "revoked" in line:
                    self.assigned = set()

    def stop(self) -> None:
        # SIGINT: kcat closes the consumer, committing its offsets and leaving the group.
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise ScenarioFailed("kcat -G did not stop on SIGINT") from None


def consumer_group(ctx: Ctx) -> str:
    t = ctx.topic()
    confluent.create_topic(ctx, t, 4)
    g = ctx.group()
    members: list[Member] = []
    try:
        a = Member(ctx, g, t)
        members.append(a)
        ctx.wait_for(lambda: a.assigned == {0, 1, 2, 3}, "A owns all 4 partitions")
        b = Member(ctx, g, t)
        members.append(b)
        ctx.wait_for(lambda: len(a.assigned) == 2 and len(b.assigned) == 2 and a.assigned | b.assigned == {0, 1, 2, 3}, "A and B 2+2")
        pa, pb = set(a.assigned), set(b.assigned)
        for p in range(4):
            produce(ctx, t, [f"p{p}-{i}".encode() for i in range(10)], ["-p", str(p)])
        ctx.wait_for(lambda: len(a.records) + len(b.records) >= 40, "40 records")
        check(len(a.records) + len(b.records) == 40, "duplicates")
        check({r["partition"] for r in a.records} <= pa and {r["partition"] for r in b.records} <= pb, "record from a partition the member does not own")
        b.stop()
        a.records.clear()
        ctx.wait_for(lambda: a.assigned == {0, 1, 2, 3}, "A owns all 4 after B left")
        for p in range(4):
            produce(ctx, t, [f"p{p}-x{i}".encode() for i in range(2)], ["-p", str(p)])
        ctx.wait_for(lambda: len(a.records) >= 8, "8 new records on A")
        check(sorted(r["payload"] for r in a.records) == sorted(f"p{p}-x{i}" for p in range(4) for i in range(2)),
              f"A did not resume at the commits: {[r['payload'] for r in a.records][:10]}")
        a.stop()
        for p in range(4):
            produce(ctx, t, [f"p{p}-y".encode()], ["-p", str(p)])
        c = Member(ctx, g, t)
        members.append(c)
        ctx.wait_for(lambda: len(c.records) >= 4, "4 records on C")
        check(sorted(r["payload"] for r in c.records) == sorted(f"p{p}-y" for p in range(4)),
              f"C did not resume at A's commits: {[r['payload'] for r in c.records]}")
        return "kcat -G members (offsets auto-committed, committed on SIGINT close)"
    except ScenarioFailed as exc:
        tails = "; ".join(f"member {i}: {sorted(m.assigned)} " + " / ".join(x.strip() for x in m.log[-4:]) for i, m in enumerate(members))
        raise ScenarioFailed(f"{exc}; {tails}"[:1500]) from None
    finally:
        for m in members:
            if m.proc.poll() is None:
                m.proc.kill()


def idempotent(ctx: Ctx) -> None:
    t = ctx.topic()
    confluent.create_topic(ctx, t, 1)
    values = [f"i{i:03d}".encode() for i in range(100)]
    produce(ctx, t, values, ["-X", "enable.idempotence=true"])
    got = consume(ctx, t, 100)
    check([m["offset"] for m in got] == list(range(100)), "offsets not contiguous 0..99")
    check([m["payload"].encode() for m in got] == values, "values duplicated, lost or reordered")


class TxnProducer:
    """`kcat -P -X transactional.id=..`: commits when stdin closes, aborts on SIGINT.

    kcat reads its input to the end before producing, so nothing reaches the broker while
    stdin is open; `-d eos` logs tell when InitProducerId is done (begin_transaction called).
    """

    def __init__(self, ctx: Ctx, topic: str, txn_id: str) -> None:
        self.proc = subprocess.Popen(
            [KCAT, "-b", ctx.bootstrap, "-P", "-t", topic, "-X", f"transactional.id={txn_id}", "-d", "eos"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.log: list[str] = []
        threading.Thread(target=self._err, daemon=True).start()
        ctx.wait_for(lambda: any("begin_transaction" in line for line in self.log) or self.proc.poll() is not None,
                     "the transactional kcat to initialise")

    def _err(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.log.append(raw.decode(errors="replace"))

    def send(self, values: list[bytes]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(v + b"\n" for v in values))
        self.proc.stdin.flush()

    def commit(self, ctx: Ctx) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(ctx.remaining())

    def abort(self, ctx: Ctx) -> int:
        # SIGINT marks the run for abort; kcat notices once its blocking stdin read returns.
        self.proc.send_signal(signal.SIGINT)
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(ctx.remaining())

    def stderr(self) -> str:
        return "".join(line for line in self.log if not line.startswith("%7"))[-300:]


def transactions(ctx: Ctx) -> str:
    t = ctx.topic()
    confluent.create_topic(ctx, t, 1)
    txn = ctx.txn_id()
    batches = [("c1", True), ("a", False), ("c2", True)]
    for tag, commit in batches:
        p = TxnProducer(ctx, t, txn)
        p.send([f"{tag}-{i}".encode() for i in range(5)])
        rc = p.commit(ctx) if commit else p.abort(ctx)
        if commit:
            check(rc == 0, f"kcat transactional producer exited {rc}: {p.stderr()}")
    committed = [f"{tag}-{i}" for tag, c in batches if c for i in range(5)]
    rc_ = consume(ctx, t, 10, ["-X", "isolation.level=read_committed"])
    check([m["payload"] for m in rc_] == committed, f"read_committed saw {[m['payload'] for m in rc_]}")
    ru = subprocess.run([KCAT, "-b", ctx.bootstrap, "-C", "-t", t, "-o", "beginning", "-e", "-q", "-J",
                         "-X", "isolation.level=read_uncommitted"], capture_output=True, timeout=ctx.remaining())
    seen = [json.loads(line)["payload"] for line in ru.stdout.splitlines() if line.strip()]
    aborted = [v for v in seen if v.startswith("a-")]
    check([v for v in seen if not v.startswith("a-")] == committed, f"read_uncommitted saw {seen}")
    return ("one kcat run per transaction: stdin closed commits, SIGINT aborts; kcat reads stdin "
            f"to the end before producing, so the aborted run sent {len(aborted)} of 5 records")


def consume_transform_produce(ctx: Ctx) -> None:
    raise NotSupported("kcat cannot send consumer offsets in a transaction")


def fencing(ctx: Ctx) -> str:
    t = ctx.topic()
    confluent.create_topic(ctx, t, 1)
    txn = ctx.txn_id()
    p1 = TxnProducer(ctx, t, txn)
    p1.send([b"from-p1"])  # produced, with P1's epoch, only when its stdin closes
    p2 = TxnProducer(ctx, t, txn)
    p2.send([b"from-p2"])
    rc2 = p2.commit(ctx)
    check(rc2 == 0, f"P2 exited {rc2}: {p2.stderr()}")
    rc1 = p1.commit(ctx)
    err = p1.stderr()
    check(rc1 != 0, "the fenced producer's commit succeeded")
    check("fenced" in err.lower() or "epoch" in err.lower(), f"P1 failed, but not as fenced: {err}")
    got = consume(ctx, t, 1, ["-X", "isolation.level=read_committed"])
    check([m["payload"] for m in got] == ["from-p2"], f"read_committed saw {[m['payload'] for m in got]}")
    return "two kcat runs with one transactional.id; P1's record is sent after P2 initialised"


# ------------------------------------------------------------------ the security suite

def librdkafka_version() -> tuple[int, ...]:
    m = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+)", VERSION)
    return tuple(int(x) for x in m.groups()) if m else (0,)


def secure_args(ctx: Ctx, how: str) -> tuple[str, list[str]]:
    """(bootstrap, -X arguments) for scram (SASL_SSL), plain / oauth / denied
    (SASL_PLAINTEXT) and mtls (SSL)."""
    s = ctx.sec()
    listeners = s["listeners"]
    if how == "mtls":
        conf = {"security.protocol": "SSL", "ssl.ca.location": s["ca_pem"],
                "ssl.certificate.location": s["client_cert_pem"], "ssl.key.location": s["client_key_pem"]}
        bootstrap = listeners["SSL"]
    elif how == "scram":
        conf = {"security.protocol": "SASL_SSL", "ssl.ca.location": s["ca_pem"], "sasl.mechanisms": "SCRAM-SHA-512",
                "sasl.username": s["scram_sha_512"]["user"], "sasl.password": s["scram_sha_512"]["password"]}
        bootstrap = listeners["SASL_SSL"]
    elif how == "oauth":
        conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "OAUTHBEARER",
                "enable.sasl.oauthbearer.unsecure.jwt": "true",
                "sasl.oauthbearer.config": f"principal={s['oauthbearer']['principal']}"}
        bootstrap = listeners["SASL_PLAINTEXT"]
    else:
        who = s["plain"] if how == "plain" else s["denied"]
        conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                "sasl.username": who["user"], "sasl.password": who["password"]}
        bootstrap = listeners["SASL_PLAINTEXT"]
    return bootstrap, [a for k, v in conf.items() for a in ("-X", f"{k}={v}")]


def run_secure(ctx: Ctx, bootstrap: str, args: list[str], data: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([KCAT, "-b", bootstrap, *args], input=data, capture_output=True,
                          timeout=ctx.remaining())


def _err(p: subprocess.CompletedProcess[bytes]) -> str:
    lines = [ln for ln in p.stderr.decode(errors="replace").splitlines() if "ERROR" in ln or "failed" in ln]
    return " / ".join(dict.fromkeys(lines))[-400:] or p.stderr.decode(errors="replace")[-300:]


def secure_round_trip(how: str, label: str) -> Callable[[Ctx], str]:
    def run_(ctx: Ctx) -> str:
        bootstrap, sec = secure_args(ctx, how)
        t = ctx.topic()
        confluent.create_topic(ctx, t, 1)
        values = secure_values()
        p = run_secure(ctx, bootstrap, ["-P", "-t", t, "-D", RS, "-X", "acks=all", *sec], b"\x1e".join(values))
        if p.returncode != 0:
            err = _err(p)
            if how == "scram" and librdkafka_version() < (2, 6, 1) and "invalid credentials" in err:
                # librdkafka #4895, fixed in 2.6.1: its client-final message repeats the client
                # nonce; Kafka 4.4 rejects the proof as Odradek does.
                raise NotSupported(f"this kcat's librdkafka ({VERSION}) sends a wrong SCRAM "
                                   f"client-final nonce (librdkafka #4895, fixed in 2.6.1): {err}")
            raise ScenarioFailed(f"kcat -P exited {p.returncode}: {err}")
        g = ctx.group()
        # kcat -G -c N: a balanced consumer that exits after N records, committing on close.
        c = run_secure(ctx, bootstrap, ["-G", g, "-c", str(len(values)), "-J", "-q",
                                        "-X", "auto.offset.reset=earliest", *sec, t])
        check(c.returncode == 0, f"kcat -G exited {c.returncode}: {_err(c)}")
        got = [json.loads(line)["payload"].encode() for line in c.stdout.splitlines() if line.strip()]
        check(got == values, f"consumed {got[:3]}... ({len(got)}), produced {values[:3]}...")
        reader = confluent.consumer(ctx, group_id=g)
        try:
            committed = reader.committed([confluent.TopicPartition(t, 0)], timeout=ctx.remaining())[0].offset
        finally:
            reader.close()
        check(committed == len(values), f"committed offset {committed}")
        return f"{label}: {len(values)} produced, consumed with kcat -G, committed offset {len(values)}"
    return run_


def _expect_refusal(p: subprocess.CompletedProcess[bytes], text: str, what: str) -> str:
    err = _err(p)
    check(p.returncode != 0, f"{what} succeeded (exit 0): {err}")
    check(text.lower() in p.stderr.decode(errors="replace").lower(), f"{what} failed, but not with {text!r}: {err}")
    return err


def acl_denied_produce(ctx: Ctx) -> str:
    t = denied_name(ctx, "produce")
    confluent.create_topic(ctx, t, 1)
    bootstrap, sec = secure_args(ctx, "denied")
    p = run_secure(ctx, bootstrap, ["-P", "-t", t, "-X", "acks=all", *sec], b"must-not-land")
    _expect_refusal(p, "Topic authorization failed", "the denied produce")
    hw = confluent.high_watermark(ctx, t)
    check(hw == 0, f"the topic holds {hw} records after the denied produce")
    return "kcat -P: 'Delivery failed for message: Broker: Topic authorization failed'; topic still empty"


def acl_denied_consume(ctx: Ctx) -> str:
    t = denied_name(ctx, "consume")
    confluent.create_topic(ctx, t, 1)
    confluent.produce_all(ctx, confluent.producer(ctx), t, [{"value": b"admin-only"}])
    bootstrap, sec = secure_args(ctx, "denied")
    p = run_secure(ctx, bootstrap, ["-C", "-t", t, "-p", "0", "-o", "beginning", "-e", "-J", *sec])
    _expect_refusal(p, "Topic authorization failed", "the denied consume")
    check(not p.stdout.strip(), f"records delivered to the denied consumer: {p.stdout[:200]!r}")
    return "kcat -C -p 0: 'Broker: Topic authorization failed'; no record delivered"


def acl_denied_group(ctx: Ctx) -> str:
    t = ctx.topic("grp")
    confluent.create_topic(ctx, t, 1)
    confluent.produce_all(ctx, confluent.producer(ctx), t, [{"value": b"allowed"}])
    bootstrap, sec = secure_args(ctx, "denied")
    p = run_secure(ctx, bootstrap, ["-G", denied_name(ctx, "group"), "-J", "-X", "auto.offset.reset=earliest",
                                    *sec, t])
    err = _expect_refusal(p, "Group authorization failed", "kcat -G in the denied group")
    check(not p.stdout.strip(), f"records delivered in the denied group: {p.stdout[:200]!r}")
    return f"kcat -G: {err[-160:]}; no record delivered"


def acl_denied_txn(ctx: Ctx) -> str:
    t = ctx.topic("txn")
    confluent.create_topic(ctx, t, 1)
    bootstrap, sec = secure_args(ctx, "denied")
    p = run_secure(ctx, bootstrap, ["-P", "-t", t, "-X", f"transactional.id={denied_name(ctx, 'txn')}", *sec],
                   b"must-not-land")
    _expect_refusal(p, "Transactional Id authorization failed", "the denied transactional kcat")
    return "kcat -P -X transactional.id: init_transactions() failed with TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


SCENARIOS = {
    "sasl-scram-sha-512": secure_round_trip("scram", "SASL_SSL SCRAM-SHA-512 as bob"),
    "sasl-plain": secure_round_trip("plain", "SASL_PLAINTEXT PLAIN as alice"),
    "mtls": secure_round_trip("mtls", "SSL with the client certificate"),
    "sasl-oauthbearer": secure_round_trip("oauth", "SASL_PLAINTEXT OAUTHBEARER (librdkafka's unsecured JWT, principal=carol)"),
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
}

if __name__ == "__main__":
    main(CLIENT, VERSION, SCENARIOS)
