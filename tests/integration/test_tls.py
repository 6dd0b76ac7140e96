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
