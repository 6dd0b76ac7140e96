"""Start-up: the SASL and TLS setup of every listener that has them, and the SCRAM store the
SASL listeners share."""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek.broker.security.authenticator import (
    SASL_PROTOCOLS,
    ListenerSasl,
    SecurityConfigError,
    listener_sasl,
)
from odradek.broker.security.store import FILE_NAME, ScramStore, parse_bootstrap
from odradek.broker.security.tls import ListenerTls, listener_tls
from odradek.config import BrokerConfig

TLS_PROTOCOLS = ("SSL", "SASL_SSL")


@dataclass(slots=True)
class Security:
    sasl: dict[str, ListenerSasl] = field(default_factory=dict)  # by listener name
    tls: dict[str, ListenerTls] = field(default_factory=dict)
    scram: ScramStore = field(default_factory=lambda: ScramStore(None))


def build_security(config: BrokerConfig) -> Security:
    """SecurityConfigError names the setting at fault (and never a secret)."""
    protocols = config.listener_security_protocol_map
    settings = {**config.unknown}
    security = Security()
    sasl_listeners = [lst.name for lst in config.listeners
                      if protocols.get(lst.name) in SASL_PROTOCOLS]
    for lst in config.listeners:
        if protocols.get(lst.name) in TLS_PROTOCOLS:
            security.tls[lst.name] = listener_tls(lst.name, settings, config.get)
    store = security.scram = ScramStore(config.log_dirs[0] / FILE_NAME)
    # The store serves AlterUserScramCredentials on any listener, as Kafka's does.
    bootstrap = config.get("scram.bootstrap.credentials")
    if bootstrap:
        try:
            store.bootstrap(parse_bootstrap(str(bootstrap)))
        except ValueError as e:
            raise SecurityConfigError(str(e), "scram.bootstrap.credentials") from None
    security.sasl = {name: listener_sasl(name, settings, config.get, store)
                     for name in sasl_listeners}
    return security
