"""Distinguished names as Kafka prints them, ssl.principal.mapping.rules, and the listener
TLS settings (certificates made by openssl in a temp dir)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from odradek.broker.security.authenticator import SecurityConfigError
from odradek.broker.security.tls import listener_tls, map_principal, parse_mapping_rules, rfc2253
from odradek.testing.certs import make_test_certs

SUBJECT = ((("countryName", "US"),), (("organizationName", "Example, Inc"),),
           (("organizationalUnitName", "eng"),), (("commonName", "Alice"),))


def test_dn_in_kafkas_form() -> None:
    assert rfc2253(SUBJECT) == "CN=Alice,OU=eng,O=Example\\, Inc,C=US"
    assert rfc2253(((("commonName", "a"), ("userId", "7")),)) == "CN=a+UID=7"


@pytest.mark.parametrize("rules,dn,name", [
    ("DEFAULT", "CN=Alice,OU=eng,O=Example,C=US", "CN=Alice,OU=eng,O=Example,C=US"),
    ("RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/", "CN=Alice,OU=eng,O=Example,C=US", "Alice@eng"),
    ("RULE:^CN=(.*?),.*$/$1/L,DEFAULT", "CN=Alice,OU=eng,C=US", "alice"),
    ("RULE:^CN=(.*?),.*$/$1/U", "CN=Alice,OU=eng", "ALICE"),
    ("RULE:^OU=x,.*$/nope/, DEFAULT", "CN=Alice,OU=eng", "CN=Alice,OU=eng"),
    ("RULE:^CN=([^,]*)\\/x,.*$/$1/", "CN=a/x,O=b", "a"),
])
def test_mapping_rules(rules: str, dn: str, name: str) -> None:
    assert map_principal(dn, parse_mapping_rules(rules)) == name


def test_a_dn_no_rule_matches_is_refused() -> None:
    with pytest.raises(ValueError):
        map_principal("CN=x", parse_mapping_rules("RULE:^OU=(.*)$/$1/"))


@pytest.mark.parametrize("rules", ["RULE:abc", "NOPE", "RULE:a/b/X"])
def test_malformed_rules(rules: str) -> None:
    with pytest.raises(SecurityConfigError):
        parse_mapping_rules(rules)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    d = tmp_path_factory.mktemp("certs")
    make_test_certs(d)
    return d


def _get(values: dict[str, object]) -> object:
    defaults: dict[str, object] = {
        "ssl.keystore.type": "JKS", "ssl.truststore.type": "JKS", "ssl.client.auth": "none",
        "ssl.enabled.protocols": ["TLSv1.2", "TLSv1.3"], "ssl.principal.mapping.rules": "DEFAULT"}
    return lambda name: values.get(name, defaults.get(name))


def test_listener_tls_settings(certs: Path) -> None:
    import ssl

    pem = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs / "server-keystore.pem")}
    setup = listener_tls("SSL", {}, _get(pem))  # type: ignore[arg-type]
    assert setup.context.verify_mode == ssl.CERT_NONE
    assert setup.context.minimum_version == ssl.TLSVersion.TLSv1_2
    text = {"listener.name.ssl.ssl.keystore.type": "PEM",
            "listener.name.ssl.ssl.keystore.key": (certs / "server-enc.key").read_text(),
            "listener.name.ssl.ssl.key.password": "kpw",
            "listener.name.ssl.ssl.keystore.certificate.chain": (certs / "server.pem").read_text(),
            "listener.name.ssl.ssl.truststore.type": "PEM",
            "listener.name.ssl.ssl.truststore.certificates": (certs / "ca.pem").read_text(),
            "listener.name.ssl.ssl.client.auth": "requested",
            "listener.name.ssl.ssl.enabled.protocols": "TLSv1.3"}
    setup = listener_tls("SSL", text, _get({}))  # type: ignore[arg-type]
    assert setup.context.verify_mode == ssl.CERT_OPTIONAL
    assert setup.context.minimum_version == ssl.TLSVersion.TLSv1_3
    with pytest.raises(SecurityConfigError, match="cannot load the keystore"):
        listener_tls("SSL", {**text, "listener.name.ssl.ssl.key.password": "wrong"},
                     _get({}))  # type: ignore[arg-type]


@pytest.mark.parametrize("values,fault", [
    ({}, "needs ssl.keystore.location for its JKS keystore"),
    ({"ssl.keystore.type": "PKCS12"}, "needs ssl.keystore.location for its PKCS12 keystore"),
    ({"ssl.keystore.type": "JCEKS"}, "JCEKS is not JKS, PKCS12 or PEM"),
    ({"ssl.keystore.type": "PEM"}, "needs ssl.keystore.location"),
    ({"ssl.keystore.type": "PEM", "ssl.enabled.protocols": ["TLSv1.1"]}, "TLSv1.2"),
    ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "KEYSTORE",
      "ssl.client.auth": "required", "ssl.truststore.type": "PEM"}, "needs a truststore"),
])
def test_unusable_tls_settings(certs: Path, values: dict[str, object], fault: str) -> None:
    values = {k: str(certs / "server-keystore.pem") if v == "KEYSTORE" else v
              for k, v in values.items()}
    with pytest.raises(SecurityConfigError, match=fault):
        listener_tls("SSL", {}, _get(values))  # type: ignore[arg-type]
