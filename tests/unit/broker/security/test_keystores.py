"""JKS and PKCS12 keystores and truststores (odradek/broker/security/keystores.py), made by
Java's keytool and by openssl, as TLS listeners load them."""

from __future__ import annotations

import shutil
import socket
import ssl
import threading
from pathlib import Path

import pytest

from odradek.broker.security.authenticator import SecurityConfigError
from odradek.broker.security.keystores import KeystoreError, load_jks, load_store
from odradek.broker.security.tls import listener_tls, rfc2253
from odradek.testing.certs import make_java_stores, make_test_certs

PW, KEY_PW = "storepw", "key-pw"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None or shutil.which("keytool") is None:
        pytest.skip("openssl and Java's keytool are needed to make the stores")
    d = tmp_path_factory.mktemp("stores")
    make_test_certs(d)
    make_java_stores(d, password=PW, key_password=KEY_PW)
    return d


def _get(values: dict[str, object]) -> object:
    defaults: dict[str, object] = {
        "ssl.keystore.type": "JKS", "ssl.truststore.type": "JKS", "ssl.client.auth": "none",
        "ssl.enabled.protocols": ["TLSv1.2", "TLSv1.3"], "ssl.principal.mapping.rules": "DEFAULT"}
    return lambda name: values.get(name, defaults.get(name))


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> str | None:
    """A TLS handshake over a socket pair; the client DN the server saw."""
    a, b = socket.socketpair()
    seen: list[str | None] = []
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            with server.wrap_socket(a, server_side=True) as s:
                cert = s.getpeercert()
                seen.append(rfc2253(cert["subject"]) if cert else None)  # type: ignore[arg-type]
                s.sendall(b"x")
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=serve)
    t.start()
    try:
        with client.wrap_socket(b, server_hostname="localhost") as c:
            assert c.recv(1) == b"x"
    finally:
        t.join(10)
    if errors:
        raise errors[0]
    return seen[0]


def _client(certs: Path, mtls: bool = False) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    if mtls:
        ctx.load_cert_chain(str(certs / "client.pem"), str(certs / "client.key"))
    return ctx


@pytest.mark.parametrize("store,kind,settings", [
    ("server.jks", "JKS", {"ssl.key.password": KEY_PW}),  # keytool, its own key password
    ("server.p12", "PKCS12", {}),  # openssl pkcs12
])
def test_keystore_serves_tls_and_truststore_checks_clients(certs: Path, store: str, kind: str,
                                                          settings: dict[str, str]) -> None:
    prefix = "listener.name.ssl."
    raw = {prefix + "ssl.keystore.type": kind, prefix + "ssl.keystore.location": str(certs / store),
           prefix + "ssl.keystore.password": PW, **{prefix + k: v for k, v in settings.items()}}
    setup = listener_tls("SSL", raw, _get({}))  # type: ignore[arg-type]
    assert _handshake(setup.context, _client(certs)) is None
    for trust, tkind in (("truststore.jks", "JKS"), ("truststore-keytool.p12", "PKCS12"),
                         ("truststore.p12", "PKCS12")):
        mtls = {**raw, prefix + "ssl.client.auth": "required",
                prefix + "ssl.truststore.type": tkind,
                prefix + "ssl.truststore.location": str(certs / trust),
                prefix + "ssl.truststore.password": PW}
        setup = listener_tls("SSL", mtls, _get({}))  # type: ignore[arg-type]
        assert _handshake(setup.context, _client(certs, mtls=True)) == \
            "CN=alice,OU=eng,O=Example,C=US"
        with pytest.raises(ssl.SSLError):  # no client certificate: refused
            _handshake(setup.context, _client(certs))


def test_jks_without_store_password_reads_trusted_entries_unchecked(certs: Path) -> None:
    m = load_jks((certs / "truststore.jks").read_bytes(), None, None)
    assert m.trusted_pem and m.key_pem is None
    assert m.trusted_pem[0].strip() == ssl.DER_cert_to_PEM_cert(
        ssl.PEM_cert_to_DER_cert((certs / "ca.pem").read_text())).strip()


@pytest.mark.parametrize("store,kind,values,setting,text", [
    ("server.jks", "JKS", {"ssl.keystore.password": "wrong", "ssl.key.password": KEY_PW},
     "ssl.keystore.password", "tampered with, or password was incorrect"),
    ("server.jks", "JKS", {"ssl.keystore.password": PW, "ssl.key.password": "wrong"},
     "ssl.key.password", "wrong ssl.key.password"),
    ("server.jks", "JKS", {"ssl.keystore.password": PW},  # key password defaults to the store's
     "ssl.key.password", "wrong ssl.key.password"),
    ("server.p12", "PKCS12", {"ssl.keystore.password": "wrong"}, "ssl.keystore.password",
     "password was incorrect"),
    ("server.p12", "JKS", {"ssl.keystore.password": PW}, "ssl.keystore.password",
     "not a JKS keystore"),
    ("truststore.jks", "JKS", {"ssl.keystore.password": PW}, "ssl.keystore.location",
     "holds no private key"),
    ("missing.jks", "JKS", {"ssl.keystore.password": PW}, "ssl.keystore.location",
     "cannot read"),
])
def test_unusable_keystores_name_the_setting(certs: Path, store: str, kind: str,
                                             values: dict[str, str], setting: str,
                                             text: str) -> None:
    with pytest.raises(SecurityConfigError, match=text) as e:
        listener_tls("SSL", {}, _get({"ssl.keystore.type": kind,  # type: ignore[arg-type]
                                      "ssl.keystore.location": str(certs / store), **values}))
    assert e.value.key == "listener.name.ssl." + setting
    assert "wrong" not in str(e.value).replace("wrong ssl.key.password", "")
    assert PW not in str(e.value) and KEY_PW not in str(e.value)


def test_corrupt_and_truncated_stores(certs: Path) -> None:
    data = (certs / "server.jks").read_bytes()
    for bad in (data[:-1], data[:40], data[:8] + b"\xff" * 4 + data[12:],
                data[:200] + bytes([data[200] ^ 1]) + data[201:]):
        with pytest.raises(KeystoreError):
            load_jks(bad, PW, KEY_PW)
    p12 = (certs / "server.p12").read_bytes()
    with pytest.raises(KeystoreError):
        load_store("PKCS12", p12[:100], PW)
    with pytest.raises(KeystoreError, match="JCEKS"):
        load_jks(b"\xce\xce\xce\xce" + data[4:], PW, None)
