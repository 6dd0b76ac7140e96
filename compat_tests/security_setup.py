"""The broker set-up of the matrix's security suite (and of sasl_check), on either target.

One broker with the listeners of docs/security.md: PLAINTEXT (the admin listener, principal
User:ANONYMOUS, a super user), SASL_PLAINTEXT (PLAIN, SCRAM-SHA-512, OAUTHBEARER), SSL with
ssl.client.auth=required and principal mapping, SASL_SSL (SCRAM-SHA-512, OAUTHBEARER); the
StandardAuthorizer with allow.everyone.if.no.acl.found=true. Odradek gets the SCRAM user from
`scram.bootstrap.credentials`, Kafka from `kafka-storage format --add-scram` (same value).

`start(target, workdir)` makes the certificates and the broker, starts it and returns a
`SecuritySetup`: the broker, the listener ports and the `--security` JSON the drivers read
(compat_tests/python/common.py, the contract in the drivers' scenarios). `deny_mallory` creates
the suite's DENY bindings through the admin listener, `throttle_quota_client` the
quota-throttle row's client quota.
"""

from __future__ import annotations

import base64
import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat_tests.brokers import Broker, KafkaBroker, OdradekBroker, free_port
from compat_tests.drivers import DRIVERS
from odradek.testing.certs import make_test_certs

PLAIN_USERS = {"alice": "alice-pw", "mallory": "mallory-pw"}
# username/password: the broker's own login (Kafka wants one for PLAIN); admin is a super user.
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-pw" user_admin="admin-pw" '
              + " ".join(f'user_{u}="{p}"' for u, p in PLAIN_USERS.items()) + ";")
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
OAUTH_JAAS = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
SCRAM_USER = "SCRAM-SHA-512=[name=bob,password=bob-pw]"
OAUTH_PRINCIPAL = "carol"
DENIED_USER, DENIED_PREFIX = "mallory", "denied-"
# The quota-throttle row: producer_byte_rate (bytes/s) for client id quota-throttled-<driver>,
# on both targets. One id per driver: a client-id quota is one budget shared by every
# connection with that id (Kafka's ClientQuotaManager), and the drivers run at once.
QUOTA_CLIENT_ID, QUOTA_PRODUCER_BYTE_RATE = "quota-throttled", 20480


def quota_client_id(client: str) -> str:
    return f"{QUOTA_CLIENT_ID}-{client}"
CLIENT_SUBJECT = "/O=Example/CN=alice"  # Kafka's DN form: CN=alice,O=Example -> alice
PRINCIPAL_RULES = "RULE:^CN=([a-z]+),.*$/$1/,DEFAULT"
LISTENERS = ("SASL_PLAINTEXT", "SSL", "SASL_SSL")
MECHANISMS = {"SASL_PLAINTEXT": ("PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"),
              "SASL_SSL": ("SCRAM-SHA-512", "OAUTHBEARER")}
JAAS = {"PLAIN": PLAIN_JAAS, "SCRAM-SHA-512": SCRAM_JAAS, "OAUTHBEARER": OAUTH_JAAS}
AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS;User:admin",
    "allow.everyone.if.no.acl.found": "true",
}


def odradek_mechanisms() -> tuple[str, ...]:
    """The SASL mechanisms this checkout's Odradek accepts in sasl.enabled.mechanisms (it
    refuses to start with any other)."""
    try:
        from odradek.broker.security.authenticator import SUPPORTED_MECHANISMS
    except ImportError:
        return ()
    return tuple(SUPPORTED_MECHANISMS)


def broker_settings(certs: Path, left_out: tuple[str, ...] = ()) -> dict[str, str]:
    """Kafka-named settings for both targets; `left_out`: mechanisms not enabled anywhere."""
    settings = {
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs / "server-keystore.pem"),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs / "ca.pem"),
        "listener.name.ssl.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": PRINCIPAL_RULES,
        **AUTHORIZER,
    }
    for listener, mechs in MECHANISMS.items():
        enabled = [m for m in mechs if m not in left_out]
        prefix = f"listener.name.{listener.lower()}."
        settings[prefix + "sasl.enabled.mechanisms"] = ",".join(enabled)
        for m in enabled:
            settings[f"{prefix}{m.lower()}.sasl.jaas.config"] = JAAS[m]
    return settings


def unsecured_token(principal: str, lifetime_s: int = 3600) -> str:
    """An unsecured JWS (alg none, empty signature) as Kafka's default OAUTHBEARER validator
    accepts it: sub, iat, exp."""
    def b64(obj: dict[str, Any]) -> str:
        raw = json.dumps(obj, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    now = int(time.time())
    return f"{b64({'alg': 'none'})}.{b64({'sub': principal, 'iat': now, 'exp': now + lifetime_s})}."


@dataclass
class SecuritySetup:
    target: str
    broker: Broker
    ports: dict[str, int]
    certs: Path
    security_file: Path
    left_out: tuple[str, ...] = field(default=())  # mechanisms the broker could not enable

    def listener(self, name: str) -> str:
        return f"127.0.0.1:{self.ports[name]}"


def security_document(ports: dict[str, int], certs: Path, token: str) -> dict[str, Any]:
    return {
        "listeners": {n: f"127.0.0.1:{p}" for n, p in ports.items()},
        "ca_pem": str(certs / "ca.pem"),
        "client_cert_pem": str(certs / "client.pem"),
        "client_key_pem": str(certs / "client.key"),
        "client_keystore_pem": str(certs / "client-keystore.pem"),
        "plain": {"user": "alice", "password": PLAIN_USERS["alice"]},
        "scram_sha_512": {"user": "bob", "password": "bob-pw"},
        "oauthbearer": {"principal": OAUTH_PRINCIPAL, "token": token},
        "quota": {"client_ids": {c: quota_client_id(c) for c in DRIVERS},
                  "producer_byte_rate": QUOTA_PRODUCER_BYTE_RATE},
        "denied": {"user": DENIED_USER, "password": PLAIN_USERS[DENIED_USER], "mechanism": "PLAIN",
                   "listener": "SASL_PLAINTEXT", "prefix": DENIED_PREFIX},
    }


def make(target: str, workdir: Path) -> SecuritySetup:
    """Certificates, ports, the security JSON and the broker (not started) for `target`."""
    certs = workdir / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    make_test_certs(certs, client_subject=CLIENT_SUBJECT)
    (certs / "client-keystore.pem").write_text((certs / "client.key").read_text()
                                              + (certs / "client.pem").read_text())
    ports = {n: free_port() for n in LISTENERS}
    doc_path = workdir / "security.json"
    doc_path.write_text(json.dumps(security_document(ports, certs, unsecured_token(OAUTH_PRINCIPAL)),
                                   indent=1) + "\n")
    data = Path(tempfile.mkdtemp(prefix=f"security-{target}-", dir=workdir))
    log = workdir / f"broker-security-{target}.log"
    broker: Broker
    left_out: tuple[str, ...] = ()
    if target == "odradek":
        supported = odradek_mechanisms()
        left_out = tuple(sorted({m for ms in MECHANISMS.values() for m in ms} - set(supported)))
        listeners = ",".join(f"{n}://127.0.0.1:{p}" for n, p in ports.items())
        broker = OdradekBroker(data, log, {
            **broker_settings(certs, left_out), "scram.bootstrap.credentials": SCRAM_USER,
            "listeners": f"PLAINTEXT://127.0.0.1:0,{listeners}"})
    elif target in ("kafka", "kafka-4.4"):
        broker = KafkaBroker(data, log, broker_settings(certs),
                             extra_listeners={n: (n, p) for n, p in ports.items()},
                             format_args=["--add-scram", SCRAM_USER])
    else:
        raise ValueError(f"unknown target {target!r}")
    return SecuritySetup(target, broker, ports, certs, doc_path, left_out)


def start(target: str, workdir: Path) -> SecuritySetup:
    setup = make(target, workdir)
    setup.broker.start()
    return setup


def deny_mallory(bootstrap: str, timeout: float = 30.0) -> list[str]:
    """DENY ALL for User:mallory on PREFIXED `denied-` TOPIC, GROUP and TRANSACTIONAL_ID,
    created through the PLAINTEXT admin listener (User:ANONYMOUS, a super user), then read
    back; returns the bindings as text."""
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    bindings = [AclBinding(rt, DENIED_PREFIX, ResourcePatternType.PREFIXED, f"User:{DENIED_USER}",
                           "*", AclOperation.ALL, AclPermissionType.DENY)
                for rt in (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID)]
    for fut in admin.create_acls(bindings, request_timeout=timeout).values():
        fut.result(timeout=timeout)
    # Kafka's StandardAuthorizer applies bindings once the metadata log has them: wait until
    # DescribeAcls lists all three.
    flt = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, f"User:{DENIED_USER}",
                           None, AclOperation.ANY, AclPermissionType.ANY)
    deadline = time.monotonic() + timeout
    while True:
        got = admin.describe_acls(flt, request_timeout=timeout).result(timeout=timeout)
        if len(got) >= len(bindings):
            return [str(b) for b in got]
        if time.monotonic() > deadline:
            raise RuntimeError(f"DENY bindings not listed after {timeout} s: {got}")
        time.sleep(0.2)


def throttle_quota_client(bootstrap: str, timeout: float = 30.0) -> str:
    """producer_byte_rate for each driver's client id (quota_client_id), set with
    AlterClientQuotas through the PLAINTEXT admin listener (User:ANONYMOUS, a super user;
    confluent-kafka has no alter_client_quotas, so the project's own connection), then read back
    with DescribeClientQuotas until all are in effect; returns them as text."""
    from odradek.client import BrokerConnection, parse_bootstrap
    from odradek.wire._generated.alter_client_quotas import (
        AlterClientQuotasRequest,
        AlterClientQuotasResponse,
    )
    from odradek.wire._generated.describe_client_quotas import (
        DescribeClientQuotasRequest,
        DescribeClientQuotasResponse,
    )

    ids = {quota_client_id(c) for c in DRIVERS}
    host, port = parse_bootstrap(bootstrap)[0]
    alter = AlterClientQuotasRequest(validate_only=False, entries=[AlterClientQuotasRequest.EntryData(
        entity=[AlterClientQuotasRequest.EntityData(entity_type="client-id", entity_name=i)],
        ops=[AlterClientQuotasRequest.OpData(key="producer_byte_rate",
                                             value=float(QUOTA_PRODUCER_BYTE_RATE), remove=False)])
        for i in sorted(ids)])
    describe = DescribeClientQuotasRequest(strict=True, components=[  # MATCH_TYPE_SPECIFIED
        DescribeClientQuotasRequest.ComponentData(entity_type="client-id", match_type=2, match=None)])
    with BrokerConnection(host, port) as conn:
        resp, _ = conn.call(alter, AlterClientQuotasResponse)
        errors = [(e.error_code, e.error_message) for e in resp.entries if e.error_code]
        if errors:
            raise RuntimeError(f"AlterClientQuotas failed: {errors}")
        deadline = time.monotonic() + timeout
        while True:  # Kafka applies them once the metadata log has them
            got, _ = conn.call(describe, DescribeClientQuotasResponse)
            have = {e.entity_name for entry in got.entries or [] for e in entry.entity
                    if any(v.key == "producer_byte_rate" and v.value == QUOTA_PRODUCER_BYTE_RATE
                           for v in entry.values)}
            if ids <= have:
                return (f"producer_byte_rate={QUOTA_PRODUCER_BYTE_RATE} for client-id "
                        f"{QUOTA_CLIENT_ID}-<driver> ({len(ids)} drivers)")
            if time.monotonic() > deadline:
                raise RuntimeError(f"quotas not described after {timeout} s: {sorted(ids - have)} missing")
            time.sleep(0.2)
