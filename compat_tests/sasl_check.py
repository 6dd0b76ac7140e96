"""SASL_PLAINTEXT against Odradek and the Apache Kafka oracle with the same settings (issue #13):
confluent-kafka and the Java 4.4 client (Kafka's own ProducerPerformance and ConsoleConsumer,
with a consumer group) with PLAIN and SCRAM-SHA-512, and a wrong password's error text;
OAUTHBEARER with Kafka's unsecured tokens (the Java client's default login module,
librdkafka's unsecured JWT, a rejected expired token and a missing scope); SSL with mTLS
where the broker's keystore and truststore are JKS (keytool) and PKCS12 (openssl/keytool).

    python -m compat_tests.sasl_check --target odradek|kafka

SCRAM users: Odradek's `scram.bootstrap.credentials`, Kafka's `kafka-storage format
--add-scram` with the same value. Prints one line per check and exits 1 if any fails.
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from compat_tests import sasl_raw
from compat_tests.brokers import (
    Broker,
    KafkaBroker,
    OdradekBroker,
    free_port,
    java_classpath,
)
from odradek.testing.certs import make_java_stores, make_test_certs

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
SCRAM_USER = "SCRAM-SHA-512=[name=bob,password=bob-pw]"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
OAUTH_JAAS = (f'{OAUTH_MODULE} required unsecuredLoginStringClaim_sub="admin" '
              'unsecuredValidatorRequiredScope="kafka";')
LISTENER = "SASL_PLAINTEXT"
SETTINGS = {
    "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512,OAUTHBEARER",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
    "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": OAUTH_JAAS,
}
STORE_PW, KEY_PW = "storepw", "key-pw"
# Two more SSL listeners, named for their stores: {name: (keystore, truststore, type)}
STORE_LISTENERS = {"JKS": ("server.jks", "truststore.jks", "JKS"),
                   "PKCS": ("server.p12", "truststore-keytool.p12", "PKCS12")}
USERS = {"PLAIN": ("alice", "alice-pw"), "SCRAM-SHA-512": ("bob", "bob-pw")}
WRONG = {"PLAIN": "Authentication failed: Invalid username or password",
         "SCRAM-SHA-512": "Authentication failed during authentication due to invalid "
                          "credentials with SASL mechanism SCRAM-SHA-512"}


def tls_settings(certs: Path) -> dict[str, str]:
    return {
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs / "server-keystore.pem"),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs / "ca.pem"),
        "listener.name.ssl.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=([a-z]+),.*$/$1/,DEFAULT",
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        **{k: v for name in STORE_LISTENERS for k, v in store_settings(certs, name).items()},
    }


def store_settings(certs: Path, name: str) -> dict[str, str]:
    keystore, truststore, kind = STORE_LISTENERS[name]
    p = f"listener.name.{name.lower()}."
    return {p + "ssl.keystore.type": kind, p + "ssl.keystore.location": str(certs / keystore),
            p + "ssl.keystore.password": STORE_PW,
            p + "ssl.key.password": KEY_PW if kind == "JKS" else STORE_PW,
            p + "ssl.truststore.type": kind, p + "ssl.truststore.location": str(certs / truststore),
            p + "ssl.truststore.password": STORE_PW, p + "ssl.client.auth": "required"}


def protocol(listener: str) -> str:
    return "SSL" if listener in STORE_LISTENERS else listener


def start(target: str, workdir: Path, ports: dict[str, int], certs: Path) -> Broker:
    data = Path(tempfile.mkdtemp(prefix=f"sasl-{target}-", dir=workdir))
    log = workdir / f"broker-sasl-{target}.log"
    broker: Broker
    settings = {**SETTINGS, **tls_settings(certs)}
    if target == "odradek":
        listeners = ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items())
        protocol_map = ",".join(f"{n}:{protocol(n)}" for n in ["PLAINTEXT", *ports])
        broker = OdradekBroker(data, log, {
            **settings, "scram.bootstrap.credentials": SCRAM_USER,
            "listener.security.protocol.map": protocol_map,
            "listeners": f"PLAINTEXT://127.0.0.1:0,{listeners}"})
    else:
        broker = KafkaBroker(data, log, settings,
                             extra_listeners={n: (protocol(n), p) for n, p in ports.items()},
                             format_args=["--add-scram", SCRAM_USER])
    broker.start()
    return broker


def confluent(port: int, mech: str, user: str, pw: str,
              extra: dict[str, Any] | None = None) -> tuple[bool, str]:
    from confluent_kafka import Consumer, Producer

    conf: dict[str, Any] = {"bootstrap.servers": f"127.0.0.1:{port}",
                            "security.protocol": LISTENER, "sasl.mechanisms": mech,
                            "sasl.username": user, "sasl.password": pw, **(extra or {})}
    if mech == "-":  # TLS only
        conf = {k: v for k, v in conf.items() if not k.startswith("sasl.")}
    if mech == "OAUTHBEARER":
        conf = {k: v for k, v in conf.items() if k not in ("sasl.username", "sasl.password")}
    errors: list[str] = []
    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    producer = Producer({**conf, "error_cb": lambda e: errors.append(str(e))})
    expected = WRONG.get(mech) if mech in USERS and pw != USERS[mech][1] else None
    if mech == "OAUTHBEARER" and pw:  # pw: the error a refused token must get
        expected = pw
    if expected is not None:
        deadline = time.monotonic() + 20
        while not errors and time.monotonic() < deadline:
            producer.poll(0.2)
        return any(expected in e for e in errors), (errors or ["no error"])[0][:200]
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
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mech == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    tls = (f"ssl.truststore.type=PEM\nssl.truststore.location={certs / 'ca.pem'}\n"
           if certs is not None else "")
    return java_client(port, workdir, mech,
                       f"security.protocol={protocol}\nsasl.mechanism={mech}\n{tls}"
                       f'sasl.jaas.config={module} required username="{user}" password="{pw}";\n')


def java_client(port: int, workdir: Path, label: str, properties: str) -> tuple[bool, str]:
    """Kafka's ProducerPerformance then ConsoleConsumer (in a group) with a client
    properties file."""
    cp = java_classpath("clients-4.4")
    props = workdir / f"client-{label}.properties"
    props.write_text(properties)
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


def unsecured_jws(claims: dict[str, Any]) -> str:
    """An unsecured JWS (alg none, no signature), as Kafka's unsecured login module makes."""
    def part(obj: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    return f"{part({'alg': 'none'})}.{part(claims)}."


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", choices=("odradek", "kafka"), default="odradek")
    ap.add_argument("--no-java", action="store_true")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="sasl-check-"))
    certs = workdir / "certs"
    certs.mkdir()
    make_test_certs(certs, client_subject="/O=Example/CN=alice")
    make_java_stores(certs, password=STORE_PW, key_password=KEY_PW)
    ports = {LISTENER: free_port(), "SSL": free_port(), "SASL_SSL": free_port(),
             **{name: free_port() for name in STORE_LISTENERS}}
    port = ports[LISTENER]
    broker = start(args.target, workdir, ports, certs)
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
    for name, (_, _, kind) in STORE_LISTENERS.items():
        tls_checks.append((f"SSL {kind}", "confluent mTLS",
                           lambda n=name: confluent(ports[n], "-", "-", "-", mtls)))
    oauth = {"enable.sasl.oauthbearer.unsecure.jwt": True}
    now = time.time()
    expired = unsecured_jws({"sub": "alice", "iat": now - 120, "exp": now - 60, "scope": "kafka"})
    tls_checks += [
        ("OAUTHBEARER", "confluent unsecured JWT", lambda: confluent(
            port, "OAUTHBEARER", "-", "",
            {**oauth, "sasl.oauthbearer.config": "principal=alice scope=kafka"})),
        ("OAUTHBEARER", "confluent missing scope", lambda: confluent(
            port, "OAUTHBEARER", "-", '{"status":"insufficient_scope", "scope":"[kafka]"}',
            {**oauth, "sasl.oauthbearer.config": "principal=alice scope=other"})),
        ("OAUTHBEARER", "confluent expired token", lambda: confluent(
            port, "OAUTHBEARER", "-", '{"status":"invalid_token"}',
            {"oauth_cb": lambda _cfg: (expired, time.time() + 3600, "alice")}))]
    # '>>>???<<<~~~' puts '-' and '_' in base64url and '+' and '/' in standard base64
    url_claims = {"sub": "alice", "iat": now, "exp": now + 60, "scope": "kafka",
                  "data": ">>>???<<<~~~"}
    valid = unsecured_jws(url_claims)
    standard = valid.split(".")[0] + "." + base64.b64encode(
        json.dumps(url_claims).encode()).decode().rstrip("=") + "."
    tls_checks += [
        ("v0 handshake", "raw PLAIN", lambda: sasl_raw.v0_plain(port, "alice", "alice-pw")),
        ("v0 handshake", "raw PLAIN wrong password",
         lambda: sasl_raw.v0_plain(port, "alice", "alice-pw", wrong=True)),
        ("v0 handshake", "raw SCRAM-SHA-512", lambda: sasl_raw.v0_scram(port, "bob", "bob-pw")),
        ("OAUTHBEARER", "raw token lifetime", lambda: sasl_raw.oauth_lifetime(port, valid, 60)),
        ("OAUTHBEARER", "raw expired token", lambda: sasl_raw.oauth_refused(
            port, expired, '{"status":"invalid_token"}')),
        ("OAUTHBEARER", "raw base64 not base64url", lambda: sasl_raw.oauth_refused(
            port, standard, '{"status":"invalid_token"}')),
        ("OAUTHBEARER", "raw missing scope", lambda: sasl_raw.oauth_refused(
            port, unsecured_jws({"sub": "alice", "iat": now, "exp": now + 60}),
            '{"status":"insufficient_scope", "scope":"[kafka]"}'))]
    if not args.no_java:
        tls_checks.append(("SASL_SSL", "java-4.4 SCRAM-SHA-512", lambda: java(
            ports["SASL_SSL"], "SCRAM-SHA-512", "bob", "bob-pw", workdir, "SASL_SSL", certs)))
        tls_checks.append(("OAUTHBEARER", "java-4.4 unsecured login", lambda: java_client(
            port, workdir, "oauth",
            f"security.protocol={LISTENER}\nsasl.mechanism=OAUTHBEARER\n"
            f'sasl.jaas.config={OAUTH_MODULE} required unsecuredLoginStringClaim_sub="alice" '
            'unsecuredLoginStringClaim_scope="kafka";\n')))
        for name, (_, _, kind) in STORE_LISTENERS.items():
            client_store = {"JKS": "client.jks", "PKCS12": "client.p12"}[kind]
            trust = STORE_LISTENERS[name][1]
            tls_checks.append((f"SSL {kind}", "java-4.4 mTLS", lambda n=name, k=kind,
                               c=client_store, t=trust: java_client(
                ports[n], workdir, f"ssl-{k}",
                f"security.protocol=SSL\nssl.keystore.type={k}\n"
                f"ssl.keystore.location={certs / c}\nssl.keystore.password={STORE_PW}\n"
                f"ssl.truststore.type={k}\nssl.truststore.location={certs / t}\n"
                f"ssl.truststore.password={STORE_PW}\n")))
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
