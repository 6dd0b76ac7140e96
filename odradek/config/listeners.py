"""Listeners: `NAME://host:port` entries, the listener security protocol map, which advertised
listeners are acceptable, and what they become once the listeners are bound."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

from odradek.config.types import SECURITY_PROTOCOLS, ConfigError

_WILDCARD_HOSTS = ("", "0.0.0.0", "::")
_SERVED_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class Listener(NamedTuple):
    """A listener: normalised (upper-case) name, host ('' = every interface), port (0 = any)."""

    name: str
    host: str
    port: int


_LISTENER_RE = re.compile(
    r"(?P<name>[A-Za-z0-9_\-.]+)://(?:\[(?P<v6>[0-9A-Za-z:.%]*)\]|(?P<host>[0-9A-Za-z\-._]*))"
    r":(?P<port>[0-9]+)"
)


def parse_listeners(items: Iterable[str], key: str = "listeners") -> list[Listener]:
    """Parse `NAME://host:port` entries (IPv6 hosts in brackets). Names must be unique."""
    listeners: list[Listener] = []
    for item in items:
        m = _LISTENER_RE.fullmatch(item.strip())
        if m is None:
            raise ConfigError(
                f"cannot parse listener {item!r}; expected NAME://host:port, e.g. "
                "PLAINTEXT://127.0.0.1:9092 or PLAINTEXT://[::1]:9092",
                key,
            )
        port = int(m["port"])
        if port > 65535:
            raise ConfigError(f"listener {item!r}: port {port} out of range 0-65535", key)
        name = m["name"].upper()
        if any(existing.name == name for existing in listeners):
            raise ConfigError(f"listener name {name} is used more than once", key)
        host = m["v6"] if m["v6"] is not None else m["host"]
        listeners.append(Listener(name, host, port))
    return listeners


def parse_protocol_map(items: Iterable[str]) -> dict[str, str]:
    """`listener.security.protocol.map` entries `LISTENER:PROTOCOL` -> {LISTENER: PROTOCOL}."""
    key = "listener.security.protocol.map"
    result: dict[str, str] = {}
    for item in items:
        name, sep, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name.strip():
            raise ConfigError(f"entry {item!r} is not of the form LISTENER:PROTOCOL", key)
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(f"unknown security protocol {protocol!r} in {item!r}", key)
        result[name.strip().upper()] = protocol
    return result


def checked_listeners(
    items: Iterable[str],
    protocols: Mapping[str, str],
    key: str,
    controller_names: Collection[str] = (),
) -> list[Listener]:
    """Parse the `key` setting's listeners and return the client ones: at least one, each
    with a security protocol. Listeners named in `controller_names` (KRaft's
    `controller.listener.names`) belong to the controller, which Odradek does not run as a
    separate server: they are parsed, then left out."""
    parsed = parse_listeners(items, key)
    listeners = [listener for listener in parsed if listener.name not in controller_names]
    if not listeners:
        if parsed:
            raise ConfigError(
                "every listener is a controller listener (controller.listener.names); at "
                "least one client listener is needed",
                key,
            )
        raise ConfigError("at least one listener is needed", key)
    for listener in listeners:
        protocol = protocols.get(listener.name)
        if protocol is None:
            raise ConfigError(
                f"no security protocol for listener {listener.name}; add it to "
                "listener.security.protocol.map",
                key,
            )
        if protocol not in _SERVED_PROTOCOLS:
            raise ConfigError(
                f"listener {listener.name} uses {protocol}; only "
                f"{' and '.join(_SERVED_PROTOCOLS)} are supported for now",
                key,
            )
    return listeners


def parse_listener_names(text: str | None) -> frozenset[str]:
    """`controller.listener.names`: comma-separated listener names, normalised upper-case."""
    if not text:
        return frozenset()
    return frozenset(name.strip().upper() for name in text.split(",") if name.strip())


def check_advertised(advertised: Sequence[Listener], listeners: Sequence[Listener]) -> None:
    """Each advertised listener names a listener and a routable host."""
    names = {listener.name for listener in listeners}
    for listener in advertised:
        if listener.name not in names:
            raise ConfigError(
                f"advertised listener {listener.name} is not among the listeners",
                "advertised.listeners",
            )
        if listener.host in ("0.0.0.0", "::"):
            raise ConfigError(
                f"cannot advertise the non-routable address {listener.host}",
                "advertised.listeners",
            )


def bound_advertised(
    advertised: Sequence[Listener],
    listeners: Sequence[Listener],
    bound_ports: Mapping[str, int],
    fallback_host: str,
) -> list[Listener]:
    """Advertised listeners once bound: port 0 becomes the listener's real port (by name),
    an empty or wildcard host becomes the listener's host or else `fallback_host`."""
    hosts = {listener.name: listener.host for listener in listeners}
    result: list[Listener] = []
    for listener in advertised:
        port = listener.port or bound_ports.get(listener.name, 0)
        host = listener.host
        if host in _WILDCARD_HOSTS:
            bound_host = hosts.get(listener.name, "")
            host = bound_host if bound_host not in _WILDCARD_HOSTS else fallback_host
        result.append(Listener(listener.name, host, port))
    return result
