"""Throwaway certificates for a TLS test broker, made with the `openssl` command.

`make_test_certs(d)` writes into `d`: `ca.pem` / `ca.key` (a CA valid two days),
`server.pem` / `server.key` for `localhost` and 127.0.0.1, `server-keystore.pem` (key and
certificate in one file, for `ssl.keystore.type=PEM` with `ssl.keystore.location`),
`server-enc.key` (the server key encrypted with `key_password`, for `ssl.key.password`),
and `client.pem` / `client.key` for mTLS, whose subject is `client_subject`. Nothing is kept
anywhere else; never use these outside tests.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def make_test_certs(d: Path, *, client_subject: str = "/C=US/O=Example/OU=eng/CN=alice",
                    key_password: str = "kpw") -> None:
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=Test CA")
    (d / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for name, subject in (("server", "/CN=localhost"), ("client", client_subject)):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
            f"{name}.csr", "-subj", subject)
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2",
            *(["-extfile", "san.ext"] if name == "server" else []))
    (d / "server-keystore.pem").write_text((d / "server.key").read_text()
                                           + (d / "server.pem").read_text())
    run("pkey", "-in", "server.key", "-aes256", "-passout", f"pass:{key_password}",
        "-out", "server-enc.key")


def make_java_stores(d: Path, *, password: str = "storepw", key_password: str = "key-pw") -> None:
    """Keystores and truststores of the certificates `make_test_certs(d)` made, in Java's
    formats, written into `d`: by `openssl pkcs12`, `server.p12` (server key and chain),
    `client.p12` and `truststore.p12` (the CA only, marked trusted for Java); by Java's
    `keytool`, `server.jks` (its key protected by `key_password`, not the store password),
    `client.jks`, `truststore.jks` and `truststore-keytool.p12`. Every store's password is
    `password`. Needs `keytool` on PATH for the JKS ones."""
    def run(*args: str) -> None:
        subprocess.run(list(args), cwd=d, check=True, capture_output=True)

    for name in ("server", "client"):
        run("openssl", "pkcs12", "-export", "-inkey", f"{name}.key", "-in", f"{name}.pem",
            "-certfile", "ca.pem", "-name", name, "-passout", f"pass:{password}",
            "-out", f"{name}.p12")
    trust = ["openssl", "pkcs12", "-export", "-nokeys", "-in", "ca.pem", "-name", "ca",
             "-passout", f"pass:{password}", "-out", "truststore.p12"]
    try:  # OpenSSL 3.2+: mark the CA trusted as Java's keytool does, so Java trusts it
        run(*trust, "-jdktrust", "anyExtendedKeyUsage")
    except subprocess.CalledProcessError:
        run(*trust)
    for name, keypass in (("server", key_password), ("client", password)):
        run("keytool", "-importkeystore", "-noprompt", "-srckeystore", f"{name}.p12",
            "-srcstoretype", "PKCS12", "-srcstorepass", password, "-srcalias", name,
            "-destkeystore", f"{name}.jks", "-deststoretype", "JKS", "-deststorepass", password,
            "-destkeypass", keypass, "-destalias", name)
    for store, kind in (("truststore.jks", "JKS"), ("truststore-keytool.p12", "PKCS12")):
        run("keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem",
            "-keystore", store, "-storetype", kind, "-storepass", password)
