"""SASL_PLAINTEXT against Odradek and the Apache Kafka oracle with the same settings (issue #13):
confluent-kafka and the Java 4.4 client (Kafka's own ProducerPerformance and ConsoleConsumer,
with a consumer group) with PLAIN and SCRAM-SHA-512, and a wrong password's error text.

    python -m compat_tests.sasl_check --target odradek|kafka

The broker is the security suite's (compat_tests/security_setup.py: SASL_PLAINTEXT, SSL and
SASL_SSL listeners, the StandardAuthorizer); SCRAM users: Odradek's
`scram.bootstrap.credentials`, Kafka's `kafka-storage format --add-scram` with the same value.
Prints one line per check and exits 1 if any fails.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from compat_tests import security_setup
from compat_tests.brokers import java_classpath

LISTENER = "SASL_PLAINTEXT"
USERS = {"PLAIN": ("alice", "alice-pw"), "SCRAM-SHA-512": ("bob", "bob-pw")}
WRONG = {"PLAIN": "Authentication failed: Invalid username or password",
         "SCRAM-SHA-512": "Authentication failed during authentication due to invalid "
                          "credentials with SASL mechanism SCRAM-SHA-512"}


def confluent(port: int, mech: str, user: str, pw: str,
              extra: dict[str, Any] | None = None) -> tuple[bool, str]:
    from confluent_kafka import Consumer, Producer

    conf: dict[str, Any] = {"bootstrap.servers": f"127.0.0.1:{port}",
                            "security.protocol": LISTENER, "sasl.mechanisms": mech,
                            "sasl.username": user, "sasl.password": pw, **(extra or {})}
    if mech == "-":  # TLS only
        conf = {k: v for k, v in conf.items() if not k.startswith("sasl.")}
    errors: list[str] = []
    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    producer = Producer({**conf, "error_cb": lambda e: errors.append(str(e))})
    if mech in USERS and pw != USERS[mech][1]:
        deadline = time.monotonic() + 20
        while not errors and time.monotonic() < deadline:
            producer.poll(0.2)
        return any(WRONG[mech] in e for e in errors), (errors or ["no error"])[0][:200]
    for i in range(20):
        producer.produce(topic, f"v{i}".encode())
    if producer.flush(30):
        return False, f"produce did not finish: {errors[:1]}"
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 30
    while got < 20 and time.monotonic() < deadline:
        msg = consumer.poll(1)
        if msg is not None and not msg.error():
            got += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    return got == 20, f"consumed {got}/20 in a group"


def java(port: int, mech: str, user: str, pw: str, workdir: Path,
         protocol: str = LISTENER, certs: Path | None = None) -> tuple[bool, str]:
    cp = java_classpath("clients-4.4")
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mech == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    props = workdir / f"client-{mech}.properties"
    tls = (f"ssl.truststore.type=PEM\nssl.truststore.location={certs / 'ca.pem'}\n"
           if certs is not None else "")
    props.write_text(f"security.protocol={protocol}\nsasl.mechanism={mech}\n{tls}"
                     f'sasl.jaas.config={module} required username="{user}" password="{pw}";\n')
    topic = f"jsasl-{uuid.uuid4().hex[:8]}"
    base = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", cp]
    prod = subprocess.run([*base, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
                           "--num-records", "200", "--record-size", "100", "--throughput", "-1",
                           "--producer-props", f"bootstrap.servers=127.0.0.1:{port}", "acks=all",
                           "--producer.config", str(props)],
                          capture_output=True, text=True, timeout=120)
    if prod.returncode != 0 or "200 records sent" not in prod.stdout:
        return False, f"producer failed: {(prod.stdout + prod.stderr)[-300:]}"
    cons = subprocess.run([*base, "org.apache.kafka.tools.consumer.ConsoleConsumer",
                           "--bootstrap-server", f"127.0.0.1:{port}", "--topic", topic,
                           "--from-beginning", "--max-messages", "200", "--group", f"g-{topic}",
                           "--timeout-ms", "30000", "--consumer.config", str(props)],
                          capture_output=True, text=True, timeout=120)
    lines = [ln for ln in cons.stdout.splitlines() if len(ln) == 100]  # the records
    return len(lines) == 200, f"java 4.4 produced 200, consumed {len(lines)} in a group"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", choices=("odradek", "kafka"), default="odradek")
    ap.add_argument("--no-java", action="store_true")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="sasl-check-"))
    setup = security_setup.start(args.target, workdir)
    broker, ports, certs = setup.broker, setup.ports, setup.certs
    port = ports[LISTENER]
    failed = 0
    ca = str(certs / "ca.pem")
    mtls = {"security.protocol": "SSL", "ssl.ca.location": ca,
            "ssl.certificate.location": str(certs / "client.pem"),
            "ssl.key.location": str(certs / "client.key")}
    sasl_ssl = {"security.protocol": "SASL_SSL", "ssl.ca.location": ca}
    tls_checks: list[tuple[str, str, Any]] = [
        ("SSL mTLS", "confluent", lambda: confluent(ports["SSL"], "-", "-", "-", mtls)),
        ("SASL_SSL", "confluent SCRAM-SHA-512",
         lambda: confluent(ports["SASL_SSL"], "SCRAM-SHA-512", "bob", "bob-pw", sasl_ssl))]
    if not args.no_java:
        tls_checks.append(("SASL_SSL", "java-4.4 SCRAM-SHA-512", lambda: java(
            ports["SASL_SSL"], "SCRAM-SHA-512", "bob", "bob-pw", workdir, "SASL_SSL", certs)))
    try:
        for what, name, check in tls_checks:
            t = time.monotonic()
            ok, detail = check()
            failed += not ok
            print(f"{args.target:8} {what:14} {name:25} {'PASS' if ok else 'FAIL'} "
                  f"({time.monotonic() - t:.1f}s) {detail}", flush=True)
        for mech, (user, pw) in USERS.items():
            checks = [("confluent", lambda m=mech, u=user, p=pw: confluent(port, m, u, p)),
                      ("confluent-wrong-password",
                       lambda m=mech, u=user: confluent(port, m, u, "not-the-password"))]
            if not args.no_java:
                checks.append(("java-4.4", lambda m=mech, u=user, p=pw: java(port, m, u, p, workdir)))
            for name, check in checks:
                t = time.monotonic()
                ok, detail = check()
                failed += not ok
                print(f"{args.target:8} {mech:14} {name:25} {'PASS' if ok else 'FAIL'} "
                      f"({time.monotonic() - t:.1f}s) {detail}", flush=True)
    finally:
        broker.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
