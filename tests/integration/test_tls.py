"""SSL and SASL_SSL listeners end to end (issue #13) with confluent-kafka, kafka-python and
aiokafka: TLS with a PEM keystore, mTLS (ssl.client.auth=required) with the principal taken
from the client certificate through ssl.principal.mapping.rules, SCRAM and PLAIN over TLS.
Certificates are made by openssl in the test's temp dir."""

from __future__ import annotations

import shutil
import ssl
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from it_support import BrokerProcess, StartBroker, python_clients_round_trip

from odradek.testing.certs import make_test_certs

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")]

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'user_alice="alice-pw";')


@pytest.fixture
def certs(tmp_path: Path) -> Path:
    d = tmp_path / "certs"
    d.mkdir()
    make_test_certs(d)
    return d


def _tls_settings(certs: Path, protocol: str, client_auth: str = "none") -> dict[str, str]:
    return {"listeners": f"{protocol}://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(certs / "server-keystore.pem"),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs / "ca.pem"),
            "ssl.client.auth": client_auth,
            "ssl.principal.mapping.rules": "RULE:^CN=([a-z]+),.*$/$1/L,DEFAULT"}


def _round_trip(conf: dict[str, Any]) -> int:
    topic = f"tls-{uuid.uuid4().hex[:8]}"
    producer = Producer(conf)
    for i in range(10):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 30
    while got < 10 and time.monotonic() < deadline:
        msg = consumer.poll(1)
        if msg is not None and not msg.error():
            got += 1
    consumer.close()
    return got


def test_mtls_principal_from_the_client_certificate(start_broker: StartBroker, tmp_path: Path,
                                                    certs: Path) -> None:
    broker = start_broker(tmp_path / "data", _tls_settings(certs, "SSL", "required"))
    conf = {"bootstrap.servers": broker.bootstrap, "security.protocol": "SSL",
            "ssl.ca.location": str(certs / "ca.pem"),
            "ssl.certificate.location": str(certs / "client.pem"),
            "ssl.key.location": str(certs / "client.key")}
    assert _round_trip(conf) == 10
    assert "principal=User:alice" in broker.stderr_text()
    assert "CN=alice,OU=eng,O=Example,C=US" in broker.stderr_text()
    # without a client certificate the handshake fails and the broker keeps serving
    errors: list[str] = []
    producer = Producer({k: v for k, v in conf.items() if "certificate" not in k and "key" not in k}
                        | {"error_cb": lambda e: errors.append(str(e))})
    deadline = time.monotonic() + 15
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors
    assert _round_trip(conf) == 10


def test_tls_versions(start_broker: StartBroker, tmp_path: Path, certs: Path) -> None:
    broker = start_broker(tmp_path / "data", {**_tls_settings(certs, "SSL"),
                                              "ssl.enabled.protocols": "TLSv1.3"})
    import socket

    for version, ok in ((ssl.TLSVersion.TLSv1_2, False), (ssl.TLSVersion.TLSv1_3, True)):
        ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
        ctx.minimum_version = ctx.maximum_version = version
        with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as raw:
            if ok:
                with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                    assert s.version() == "TLSv1.3"
            else:
                with pytest.raises(ssl.SSLError):
                    ctx.wrap_socket(raw, server_hostname="127.0.0.1")


@pytest.mark.parametrize("mech,user,pw", [("SCRAM-SHA-512", "bob", "bob-pw"),
                                          ("PLAIN", "alice", "alice-pw")])
def test_sasl_ssl_clients(start_broker: StartBroker, tmp_path: Path, certs: Path, mech: str,
                          user: str, pw: str) -> None:
    broker = start_broker(tmp_path / "data", {
        **_tls_settings(certs, "SASL_SSL"),
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "scram.bootstrap.credentials": "SCRAM-SHA-512=[name=bob,password=bob-pw]"})
    conf = {"bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(certs / "ca.pem"), "sasl.mechanisms": mech,
            "sasl.username": user, "sasl.password": pw}
    assert _round_trip(conf) == 10
    assert f"principal=User:{user}" in broker.stderr_text()
    _python_clients(broker, certs, mech, user, pw)


def _python_clients(broker: BrokerProcess, certs: Path, mech: str, user: str, pw: str) -> None:


    sec: dict[str, Any] = {"bootstrap_servers": broker.bootstrap, "security_protocol": "SASL_SSL",
                           "sasl_mechanism": mech, "sasl_plain_username": user,
                           "sasl_plain_password": pw}
    topic = f"py-{uuid.uuid4().hex[:8]}"
    kafka_python_read, aiokafka_read = python_clients_round_trip(topic, sec, cafile=str(certs / "ca.pem"))
    assert kafka_python_read == 5
    assert aiokafka_read == 10


# --- Java keystores: JKS and PKCS12, made by keytool and openssl pkcs12

STORE_PW, KEY_PW = "storepw", "key-pw"


def _store_settings(certs: Path, kind: str) -> dict[str, str]:
    store = {"JKS": "server.jks", "PKCS12": "server.p12"}[kind]
    trust = {"JKS": "truststore.jks", "PKCS12": "truststore-keytool.p12"}[kind]
    return {"listeners": "SSL://127.0.0.1:0",
            "ssl.keystore.type": kind, "ssl.keystore.location": str(certs / store),
            "ssl.keystore.password": STORE_PW,
            **({"ssl.key.password": KEY_PW} if kind == "JKS" else {}),
            # the per-listener prefix wins over the unprefixed settings
            "ssl.truststore.type": "PEM",
            "listener.name.ssl.ssl.truststore.type": kind,
            "listener.name.ssl.ssl.truststore.location": str(certs / trust),
            "listener.name.ssl.ssl.truststore.password": STORE_PW,
            "ssl.client.auth": "required",
            "ssl.principal.mapping.rules": "RULE:^CN=([a-z]+),.*$/$1/L,DEFAULT"}


@pytest.fixture
def java_certs(certs: Path) -> Path:
    if shutil.which("keytool") is None:
        pytest.skip("needs Java's keytool")
    from odradek.testing.certs import make_java_stores

    make_java_stores(certs, password=STORE_PW, key_password=KEY_PW)
    return certs


@pytest.mark.parametrize("kind", ["JKS", "PKCS12"])
def test_keystores_with_mtls(start_broker: StartBroker, tmp_path: Path, java_certs: Path,
                             kind: str) -> None:
    broker = start_broker(tmp_path / "data", _store_settings(java_certs, kind))
    conf = {"bootstrap.servers": broker.bootstrap, "security.protocol": "SSL",
            "ssl.ca.location": str(java_certs / "ca.pem"),
            "ssl.certificate.location": str(java_certs / "client.pem"),
            "ssl.key.location": str(java_certs / "client.key")}
    assert _round_trip(conf) == 10
    assert "principal=User:alice" in broker.stderr_text()


@pytest.mark.parametrize("kind,override,setting", [
    ("JKS", {"ssl.keystore.password": "not-it"}, "ssl.keystore.password"),
    ("JKS", {"ssl.key.password": "not-it"}, "ssl.key.password"),
    ("PKCS12", {"ssl.keystore.password": "not-it"}, "ssl.keystore.password"),
    ("JKS", {"listener.name.ssl.ssl.truststore.password": "not-it"}, "ssl.truststore.password"),
    ("PKCS12", {"ssl.keystore.location": "CORRUPT"}, "ssl.keystore.password"),
])
def test_unusable_keystores_stop_start_up(tmp_path: Path, java_certs: Path, kind: str,
                                          override: dict[str, str], setting: str) -> None:
    import os
    import subprocess
    import sys

    if os.environ.get("ODRADEK_IT_SERVER_CMD"):
        pytest.skip("Odradek's exit codes")
    corrupt = tmp_path / "corrupt.p12"
    corrupt.write_bytes((java_certs / "server.p12").read_bytes()[:300])
    settings = {**_store_settings(java_certs, kind), "log.dirs": str(tmp_path / "data"),
                **{k: str(corrupt) if v == "CORRUPT" else v for k, v in override.items()}}
    args = [a for k, v in settings.items() for a in ("--override", f"{k}={v}")]
    result = subprocess.run([sys.executable, "-m", "odradek", "serve", *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 8, result.stderr
    assert f"listener.name.ssl.{setting}`" in result.stderr
    assert "Traceback" not in result.stderr and "not-it" not in result.stderr
    assert STORE_PW not in result.stderr
