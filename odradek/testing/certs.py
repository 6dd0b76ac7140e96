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
