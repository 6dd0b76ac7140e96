"""Start-up: the SASL setup of every SASL listener, and the SCRAM store it shares."""

from __future__ import annotations

from odradek.broker.security.authenticator import (
    SASL_PROTOCOLS,
    ListenerSasl,
    SecurityConfigError,
    listener_sasl,
)
from odradek.broker.security.store import FILE_NAME, ScramStore, parse_bootstrap
from odradek.config import BrokerConfig


def build_security(config: BrokerConfig) -> dict[str, ListenerSasl]:
    """{listener name: its SASL setup} for SASL listeners; SecurityConfigError names the
    setting at fault (and never a secret)."""
    protocols = config.listener_security_protocol_map
    sasl_listeners = [lst.name for lst in config.listeners
                      if protocols.get(lst.name) in SASL_PROTOCOLS]
    if not sasl_listeners:
        return {}
    store = ScramStore(config.log_dirs[0] / FILE_NAME)
    bootstrap = config.get("scram.bootstrap.credentials")
    if bootstrap:
        try:
            store.bootstrap(parse_bootstrap(str(bootstrap)))
        except ValueError as e:
            raise SecurityConfigError(str(e), "scram.bootstrap.credentials") from None
    settings = {**config.unknown}
    return {name: listener_sasl(name, settings, config.get, store) for name in sasl_listeners}
