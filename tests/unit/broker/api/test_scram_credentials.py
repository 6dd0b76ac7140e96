"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51): what kafka-configs
sends (a salted password), Kafka's per-user errors, and the store written to disk."""

from __future__ import annotations

import hashlib
from pathlib import Path

from admin_testutil import call, open_broker

from odradek.broker.security.scram import SaslFailure, ScramServer
from odradek.broker.security.store import ScramStore
from odradek.wire import ErrorCode
from odradek.wire._generated.alter_user_scram_credentials import AlterUserScramCredentialsRequest
from odradek.wire._generated.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
)

Up = AlterUserScramCredentialsRequest.ScramCredentialUpsertion
Del = AlterUserScramCredentialsRequest.ScramCredentialDeletion
Name = DescribeUserScramCredentialsRequest.UserName


def _upsert(name: str, password: str, mech: int = 2, iterations: int = 4096) -> Up:
    salt = b"0123456789abcdef"
    digest = "sha512" if mech == 2 else "sha256"
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    return Up(name=name, mechanism=mech, iterations=iterations, salt=salt, salted_password=salted)


def test_alter_then_describe_then_authenticate(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.scram = ScramStore(tmp_path / "creds.json")
    resp = call(broker, 51, 0, AlterUserScramCredentialsRequest(
        upsertions=[_upsert("carol", "pw"), _upsert("carol", "pw", mech=1, iterations=8192)]))
    assert [(r.user, r.error_code) for r in resp.results] == [("carol", 0)]
    desc = call(broker, 50, 0, DescribeUserScramCredentialsRequest(users=None))
    assert [(i.mechanism, i.iterations) for i in desc.results[0].credential_infos] == [
        (1, 8192), (2, 4096)]
    # persisted, and usable for a SCRAM exchange (the server never saw the password)
    stored = ScramStore(tmp_path / "creds.json")
    assert "pw" not in (tmp_path / "creds.json").read_text().replace("pwd", "")
    server = ScramServer("SCRAM-SHA-512", lambda u: stored.lookup(u, "SCRAM-SHA-512"))
    assert server.evaluate(b"n,,n=carol,r=abc").startswith(b"r=abc")
    resp = call(broker, 51, 0, AlterUserScramCredentialsRequest(
        deletions=[Del(name="carol", mechanism=2)]))
    assert resp.results[0].error_code == 0
    server = ScramServer("SCRAM-SHA-512", lambda u: ScramStore(tmp_path / "creds.json").lookup(
        u, "SCRAM-SHA-512"))
    try:
        server.evaluate(b"n,,n=carol,r=abc")
        raise AssertionError("deleted credential still there")
    except SaslFailure:
        pass


def test_errors_per_user(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.scram = ScramStore(None)
    resp = call(broker, 51, 0, AlterUserScramCredentialsRequest(
        deletions=[Del(name="nobody", mechanism=2), Del(name="x", mechanism=9)],
        upsertions=[_upsert("few", "p", iterations=4095), _upsert("many", "p", iterations=16385),
                    _upsert("", "p"), _upsert("twice", "a"), _upsert("twice", "b"),
                    _upsert("ok", "p")]))
    got = {r.user: (r.error_code, r.error_message) for r in resp.results}
    assert got == {
        "nobody": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"),
        "x": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "few": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "many": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "twice": (ErrorCode.DUPLICATE_RESOURCE,
                  "A user credential cannot be altered twice in the same request"),
        "ok": (ErrorCode.NONE, None),
    }
    assert set(broker.scram.credentials) == {"ok"}
    desc = call(broker, 50, 0, DescribeUserScramCredentialsRequest(
        users=[Name(name="ok"), Name(name="nobody"), Name(name="d"), Name(name="d")]))
    assert [(r.user, r.error_code) for r in desc.results] == [
        ("ok", 0), ("nobody", ErrorCode.RESOURCE_NOT_FOUND), ("d", ErrorCode.DUPLICATE_RESOURCE)]
