"""SASL_PLAINTEXT listeners end to end (issue #13): real clients (confluent-kafka,
kafka-python, aiokafka) with PLAIN and SCRAM, and raw frames for what clients never send
(requests before authentication, frames split at every byte, re-authentication deadlines)."""

from __future__ import annotations

import json
import os
import struct
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from it_support import BrokerProcess, StartBroker, python_clients_round_trip
from test_bad_input import Raw, parse_api_versions_v0, request

from odradek.wire._generated.sasl_authenticate import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
)
from odradek.wire._generated.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse

pytestmark = pytest.mark.timeout(120)

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw";')
SASL = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
    "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    "scram.bootstrap.credentials": "SCRAM-SHA-512=[name=bob,password=bob-pw];"
                                   "SCRAM-SHA-256=[name=bob,password=bob-pw]",
}
SCRAM_FAILED = ("Authentication failed during authentication due to invalid credentials with "
                "SASL mechanism {}")


@pytest.fixture
def sasl_broker(start_broker: StartBroker, tmp_path: Path) -> BrokerProcess:
    return start_broker(tmp_path / "data", SASL)


def _conf(broker: BrokerProcess, mech: str, user: str, pw: str) -> dict[str, Any]:
    return {"bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": mech, "sasl.username": user, "sasl.password": pw}


def _confluent_round_trip(conf: dict[str, Any]) -> int:
    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    producer = Producer(conf)
    for i in range(10):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 10 and time.monotonic() < deadline:
        msg = consumer.poll(1)
        if msg is not None and not msg.error():
            got.append(msg.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    return len(got)


@pytest.mark.parametrize("mech,user,pw", [("PLAIN", "alice", "alice-pw"),
                                          ("SCRAM-SHA-256", "bob", "bob-pw"),
                                          ("SCRAM-SHA-512", "bob", "bob-pw")])
def test_confluent_produce_consume_group(sasl_broker: BrokerProcess, mech: str, user: str,
                                         pw: str) -> None:
    assert _confluent_round_trip(_conf(sasl_broker, mech, user, pw)) == 10
    assert f"principal=User:{user}" in sasl_broker.stderr_text()


@pytest.mark.parametrize("mech,user,message", [
    ("PLAIN", "alice", "Authentication failed: Invalid username or password"),
    ("SCRAM-SHA-512", "bob", SCRAM_FAILED.format("SCRAM-SHA-512")),
    ("SCRAM-SHA-512", "nobody", SCRAM_FAILED.format("SCRAM-SHA-512")),  # as a wrong password
])
def test_confluent_wrong_password(sasl_broker: BrokerProcess, mech: str, user: str,
                                  message: str) -> None:
    errors: list[str] = []
    producer = Producer({**_conf(sasl_broker, mech, user, "wrong-pw"),
                         "error_cb": lambda e: errors.append(str(e))})
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert any(message in e for e in errors), errors
    assert "wrong-pw" not in sasl_broker.stderr_text()


@pytest.mark.parametrize("mech,user,pw", [("PLAIN", "alice", "alice-pw"),
                                          ("SCRAM-SHA-512", "bob", "bob-pw")])
def test_kafka_python_and_aiokafka(sasl_broker: BrokerProcess, mech: str, user: str,
                                   pw: str) -> None:

    sec: dict[str, Any] = {"bootstrap_servers": sasl_broker.bootstrap,
                           "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mech,
                           "sasl_plain_username": user, "sasl_plain_password": pw}
    topic = f"kp-{uuid.uuid4().hex[:8]}"
    kafka_python_read, aiokafka_read = python_clients_round_trip(topic, sec)
    assert kafka_python_read == 5
    assert aiokafka_read == 10


def _handshake(mech: str, cid: int = 1) -> bytes:
    return request(17, 1, cid, b"".join(SaslHandshakeRequest(mechanism=mech).encode(1)))


def _authenticate(token: bytes, cid: int = 2, version: int = 1) -> bytes:
    body = b"".join(SaslAuthenticateRequest(auth_bytes=token).encode(version))
    return request(36, version, cid, body, flexible=version >= 2)


def _auth_response(raw: Raw, version: int = 1) -> SaslAuthenticateResponse:
    payload = raw.read_frame()
    start = 4 + (1 if version >= 2 else 0)
    return SaslAuthenticateResponse.decode(payload, version, start)[0]


METADATA_V1 = request(3, 1, 9, struct.pack(">i", -1))


def test_requests_before_authentication_close_the_connection(sasl_broker: BrokerProcess) -> None:
    with Raw(sasl_broker) as raw:  # Metadata first
        raw.send(METADATA_V1)
        assert raw.closed_by_broker()
    with Raw(sasl_broker) as raw:  # SaslAuthenticate before the handshake
        raw.send(_authenticate(b"\0alice\0alice-pw"))
        assert raw.closed_by_broker()
    with Raw(sasl_broker) as raw:  # after the handshake, anything but SaslAuthenticate
        raw.send(_handshake("PLAIN"))
        raw.read_frame()
        raw.send(METADATA_V1)
        # Kafka answers a request it can parse with its error response (ILLEGAL_SASL_STATE:
        # Metadata v1 asking for no topics has nowhere to carry it), then closes.
        answer = raw.read_frame()
        assert answer == struct.pack(">iiii", 9, 0, -1, 0)  # no brokers, no controller, no topics
        assert raw.closed_by_broker()
    with Raw(sasl_broker) as raw:  # ApiVersions is served before authentication
        raw.send(request(18, 0, 5))
        assert struct.unpack(">i", raw.read_frame()[:4])[0] == 5


def test_unsupported_mechanism_and_wrong_password(sasl_broker: BrokerProcess) -> None:
    with Raw(sasl_broker) as raw:
        raw.send(_handshake("GSSAPI"))
        resp = SaslHandshakeResponse.decode(raw.read_frame(), 1, 4)[0]
        assert resp.error_code == 33
        assert resp.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert raw.closed_by_broker()
    with Raw(sasl_broker) as raw:
        raw.send(_handshake("PLAIN"))
        raw.read_frame()
        raw.send(_authenticate(b"\0alice\0nope"))
        resp2 = _auth_response(raw)
        assert (resp2.error_code, resp2.error_message) == (
            58, "Authentication failed: Invalid username or password")
        assert raw.closed_by_broker()


def test_handshake_split_at_every_byte(sasl_broker: BrokerProcess) -> None:
    data = _handshake("PLAIN") + _authenticate(b"\0alice\0alice-pw", version=2) + METADATA_V1
    with Raw(sasl_broker) as raw:
        for i in range(len(data)):
            raw.send(data[i:i + 1])
            time.sleep(0.001)
        assert SaslHandshakeResponse.decode(raw.read_frame(), 1, 4)[0].error_code == 0
        resp = _auth_response(raw, version=2)
        assert resp.error_code == 0 and resp.session_lifetime_ms == 0
        assert struct.unpack(">i", raw.read_frame()[:4])[0] == 9  # Metadata served


def test_handshake_v0_then_raw_tokens(sasl_broker: BrokerProcess) -> None:
    """SaslHandshake v0 (advertised 0-1, as Kafka does: librdkafka before 2.11.1 enables SASL
    only then): the tokens follow as raw size-prefixed frames, without SaslAuthenticate."""
    v0 = request(17, 0, 1, b"".join(SaslHandshakeRequest(mechanism="PLAIN").encode(0)))
    with Raw(sasl_broker) as raw:
        raw.send(request(18, 0, 5))
        versions = raw.read_frame()
        # ApiVersions v0: correlation id, error, then (key, min, max) entries
        count = struct.unpack(">i", versions[6:10])[0]
        ranges = {k: (lo, hi) for k, lo, hi in struct.iter_unpack(">hhh", versions[10:10 + 6 * count])}
        assert ranges[17] == (0, 1)
        raw.send(v0)
        assert SaslHandshakeResponse.decode(raw.read_frame(), 0, 4)[0].error_code == 0
        token = b"\0alice\0alice-pw"
        raw.send(struct.pack(">i", len(token)) + token)
        assert raw.read_frame() == b""  # PLAIN's (empty) server token
        raw.send(METADATA_V1)
        assert struct.unpack(">i", raw.read_frame()[:4])[0] == 9  # authenticated: served
    with Raw(sasl_broker) as raw:  # a wrong password: no frame can carry the error, closed
        raw.send(v0)
        raw.read_frame()
        token = b"\0alice\0nope"
        raw.send(struct.pack(">i", len(token)) + token)
        assert raw.closed_by_broker()


def test_sasl_apis_on_a_plaintext_listener_are_illegal_state(broker: BrokerProcess) -> None:
    with Raw(broker) as raw:
        raw.send(_handshake("PLAIN"))
        assert SaslHandshakeResponse.decode(raw.read_frame(), 1, 4)[0].error_code == 34
        raw.send(_authenticate(b"\0a\0b"))
        assert _auth_response(raw).error_code == 34
        raw.send(request(18, 0, 5))  # still usable
        assert struct.unpack(">i", raw.read_frame()[:4])[0] == 5


def test_connections_max_reauth_ms(start_broker: StartBroker, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", {**SASL, "connections.max.reauth.ms": "1500"})
    with Raw(broker) as raw:
        raw.send(_handshake("PLAIN"))
        raw.read_frame()
        raw.send(_authenticate(b"\0alice\0alice-pw"))
        assert _auth_response(raw).session_lifetime_ms == 1500
        raw.send(METADATA_V1)
        raw.read_frame()
        time.sleep(1.7)
        raw.send(METADATA_V1)  # not re-authenticated in time
        assert raw.closed_by_broker()
    with Raw(broker) as raw:  # re-authenticating in time keeps the connection
        raw.send(_handshake("PLAIN"))
        raw.read_frame()
        raw.send(_authenticate(b"\0alice\0alice-pw"))
        _auth_response(raw)
        time.sleep(1.0)
        raw.send(_handshake("PLAIN", 3))
        assert SaslHandshakeResponse.decode(raw.read_frame(), 1, 4)[0].error_code == 0
        raw.send(_authenticate(b"\0alice\0alice-pw", 4))
        assert _auth_response(raw).error_code == 0
        time.sleep(1.0)
        raw.send(METADATA_V1)
        assert struct.unpack(">i", raw.read_frame()[:4])[0] == 9


def test_scram_credentials_survive_a_restart(start_broker: StartBroker, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", SASL)
    broker.stop()
    stored = (tmp_path / "data" / "scram-credentials.json").read_text()
    assert "bob-pw" not in stored and set(json.loads(stored)["bob"]) == {
        "SCRAM-SHA-256", "SCRAM-SHA-512"}
    broker.overrides = {k: v for k, v in SASL.items() if k != "scram.bootstrap.credentials"}
    broker.start()
    assert _confluent_round_trip(_conf(broker, "SCRAM-SHA-512", "bob", "bob-pw")) == 10


# --- SaslHandshake v0: the tokens travel as bare size-prefixed frames (clients before 1.0)


def _handshake_v0(mech: str, cid: int = 1) -> bytes:
    return request(17, 0, cid, b"".join(SaslHandshakeRequest(mechanism=mech).encode(0)))


def _bare(token: bytes) -> bytes:
    return struct.pack(">i", len(token)) + token


def test_api_versions_advertises_sasl_handshake_v0_and_v1(sasl_broker: BrokerProcess) -> None:
    with Raw(sasl_broker) as raw:
        raw.send(request(18, 0, 5))
        _, error, apis = parse_api_versions_v0(raw.read_frame())
        assert error == 0 and apis[17] == (0, 1) and apis[36] == (0, 2)


def test_v0_plain(sasl_broker: BrokerProcess) -> None:
    with Raw(sasl_broker) as raw:
        raw.send(_handshake_v0("PLAIN"))
        resp = SaslHandshakeResponse.decode(raw.read_frame(), 0, 4)[0]
        assert resp.error_code == 0 and "PLAIN" in resp.mechanisms
        raw.send(_bare(b"\0alice\0alice-pw"))
        assert raw.read_frame() == b""  # PLAIN's empty server token, framed
        raw.send(METADATA_V1)  # then requests, as usual
        assert struct.unpack(">i", raw.read_frame()[:4])[0] == 9
    with Raw(sasl_broker) as raw:  # a wrong password: closed without an answer
        raw.send(_handshake_v0("PLAIN"))
        raw.read_frame()
        raw.send(_bare(b"\0alice\0wrong"))
        assert raw.closed_by_broker()


def test_v0_scram_split_at_every_byte(sasl_broker: BrokerProcess) -> None:
    import base64
    import hashlib
    import hmac

    with Raw(sasl_broker) as raw:
        data = _handshake_v0("SCRAM-SHA-512") + _bare(b"n,,n=bob,r=clientnonce")
        for i in range(len(data)):
            raw.send(data[i:i + 1])
        assert SaslHandshakeResponse.decode(raw.read_frame(), 0, 4)[0].error_code == 0
        server_first = raw.read_frame().decode()
        attrs = dict(a.split("=", 1) for a in server_first.split(","))
        assert attrs["r"].startswith("clientnonce")
        salted = hashlib.pbkdf2_hmac("sha512", b"bob-pw", base64.b64decode(attrs["s"]),
                                     int(attrs["i"]))
        client_key = hmac.new(salted, b"Client Key", "sha512").digest()
        stored = hashlib.sha512(client_key).digest()
        without = f"c=biws,r={attrs['r']}"
        auth = f"n=bob,r=clientnonce,{server_first},{without}".encode()
        proof = bytes(a ^ b for a, b in zip(client_key, hmac.new(stored, auth, "sha512").digest(),
                                            strict=True))
        raw.send(_bare(f"{without},p={base64.b64encode(proof).decode()}".encode()))
        server_final = raw.read_frame().decode()
        server_key = hmac.new(salted, b"Server Key", "sha512").digest()
        assert server_final == "v=" + base64.b64encode(
            hmac.new(server_key, auth, "sha512").digest()).decode()
        raw.send(METADATA_V1)
        assert struct.unpack(">i", raw.read_frame()[:4])[0] == 9


def test_kafka_python_with_a_0_11_api_version_uses_v0(sasl_broker: BrokerProcess) -> None:
    """kafka-python told the broker is 0.11 sends SaslHandshake v0 and bare tokens."""
    from kafka import KafkaConsumer, KafkaProducer

    sec: dict[str, Any] = {"bootstrap_servers": sasl_broker.bootstrap,
                           "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                           "sasl_plain_username": "alice", "sasl_plain_password": "alice-pw",
                           "api_version": (0, 11, 0)}
    topic = f"kp0-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(**sec)
    for i in range(5):
        producer.send(topic, f"v{i}".encode())
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=15000,
                             **sec)
    got = [m.value for m in consumer]
    consumer.close()
    assert got == [f"v{i}".encode() for i in range(5)]
    if not os.environ.get("ODRADEK_IT_SERVER_CMD"):  # Odradek's log says which handshake
        assert "handshake=v0" in sasl_broker.stderr_text()
        assert "handshake=v1" not in sasl_broker.stderr_text()


# --- OAUTHBEARER with Kafka's default unsecured validator

OAUTH_SASL = {
    "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
    "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "OAUTHBEARER",
    "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="kafka";',
}


def _jws(claims: dict[str, Any]) -> str:
    import base64

    def b64(o: object) -> str:
        return base64.urlsafe_b64encode(json.dumps(o).encode()).rstrip(b"=").decode()
    return f"{b64({'alg': 'none'})}.{b64(claims)}."


def _oauth_initial(token: str) -> bytes:
    return f"n,,\x01auth=Bearer {token}\x01traceId=t1\x01\x01".encode()


def test_oauthbearer_raw(start_broker: StartBroker, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data", OAUTH_SASL)
    now = time.time()
    good = _jws({"sub": "alice", "iat": now, "exp": now + 2, "scope": "kafka"})
    with Raw(broker) as raw:  # a valid token: its exp bounds the session
        raw.send(_handshake("OAUTHBEARER"))
        raw.read_frame()
        raw.send(_authenticate(_oauth_initial(good)))
        resp = _auth_response(raw)
        assert resp.error_code == 0 and 1000 < resp.session_lifetime_ms <= 2000
        raw.send(METADATA_V1)
        raw.read_frame()
        time.sleep(2.2)
        raw.send(METADATA_V1)
        assert raw.closed_by_broker()
    cases = [
        (_jws({"sub": "alice", "iat": now - 20, "exp": now - 10, "scope": "kafka"}),
         '{"status":"invalid_token"}'),
        (_jws({"sub": "alice", "iat": now, "exp": now + 60}),
         '{"status":"insufficient_scope", "scope":"[kafka]"}'),
    ]
    for token, challenge in cases:
        with Raw(broker) as raw:
            raw.send(_handshake("OAUTHBEARER"))
            raw.read_frame()
            raw.send(_authenticate(_oauth_initial(token)))
            resp = _auth_response(raw)
            assert (resp.error_code, bytes(resp.auth_bytes)) == (0, challenge.encode())
            raw.send(_authenticate(b"\x01", 3))
            resp = _auth_response(raw)
            assert (resp.error_code, resp.error_message) == (58, challenge)
            assert raw.closed_by_broker()


def test_oauthbearer_confluent_unsecured_jwt(start_broker: StartBroker, tmp_path: Path) -> None:
    """librdkafka makes an unsecured JWT from sasl.oauthbearer.config."""
    broker = start_broker(tmp_path / "data", OAUTH_SASL)
    conf = {"bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": "principal=alice scope=kafka"}
    assert _confluent_round_trip(conf) == 10
    errors: list[str] = []
    producer = Producer({**conf, "sasl.oauthbearer.config": "principal=alice scope=other",
                         "error_cb": lambda e: errors.append(str(e))})
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert any("insufficient_scope" in e for e in errors), errors
