"""TLS for SSL and SASL_SSL listeners: the server context from Kafka's ssl.* settings, the
handshake, and `TlsSocket`, a stand-in for the raw socket the server reads and
writes, so the plaintext path stays exactly as it is.

Settings, each with Kafka's `listener.name.<listener>.` prefix first: `ssl.keystore.type`
JKS (the default, as Kafka's) or PKCS12 with `ssl.keystore.location` and
`ssl.keystore.password` (keystores.py decodes them in memory), or PEM with
`ssl.keystore.location` (key and certificate chain in one PEM file) or `ssl.keystore.key` +
`ssl.keystore.certificate.chain` (PEM text); `ssl.key.password` for an encrypted key (a
JKS key's own password); `ssl.truststore.type` JKS, PKCS12 (with `ssl.truststore.location`
and `ssl.truststore.password`) or PEM (`ssl.truststore.location` or
`ssl.truststore.certificates`); `ssl.client.auth` none|requested|required;
`ssl.enabled.protocols` (TLSv1.2, TLSv1.3); `ssl.principal.mapping.rules` (DEFAULT and
RULE:pattern/replacement/[LU]) turn the client certificate's distinguished name, in the
RFC 2253 form Kafka prints (`CN=alice,OU=eng,O=Example,C=US`), into the principal.
Not implemented: JCEKS stores, ssl.cipher.suites,
ssl.endpoint.identification.algorithm on the broker side, ssl.engine.factory.class.
"""

from __future__ import annotations

import os
import re
import socket
import ssl
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio

from odradek.broker.security.authenticator import SecurityConfigError, listener_value
from odradek.broker.security.keystores import KeystoreError, load_store

_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                "required": ssl.CERT_REQUIRED}
_SHORT = {"commonName": "CN", "countryName": "C", "localityName": "L",
          "stateOrProvinceName": "ST", "organizationName": "O",
          "organizationalUnitName": "OU", "streetAddress": "STREET",
          "domainComponent": "DC", "userId": "UID"}
_SEND_CHUNK = 64 * 1024
_STORE_TYPES = ("JKS", "PKCS12", "PEM")


@dataclass(frozen=True, slots=True)
class MappingRule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""


_RULE_RE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU])?)\s*(?:,|$)")


def parse_mapping_rules(text: str) -> list[MappingRule]:
    rules: list[MappingRule] = []
    pos, text = 0, text.strip()
    while pos < len(text):
        m = _RULE_RE.match(text, pos)
        if m is None or m.end() == pos:
            raise SecurityConfigError(f"invalid rule at {text[pos:pos + 40]!r}",
                                      "ssl.principal.mapping.rules")
        pos = m.end()
        if m[1]:
            rules.append(MappingRule(None))
        else:
            # Java's $1 references become Python's \g<1>.
            repl = re.sub(r"\$(\d+)", r"\\g<\1>", m[3].replace("\\/", "/"))
            rules.append(MappingRule(re.compile(m[2].replace("\\/", "/")), repl, m[4] or ""))
    return rules or [MappingRule(None)]


def map_principal(dn: str, rules: Sequence[MappingRule]) -> str:
    """The user name for `dn`: the first rule whose pattern matches the whole DN; a DN no rule
    matches is refused, as Kafka's SslPrincipalMapper refuses it."""
    for rule in rules:
        if rule.pattern is None:
            return dn
        if rule.pattern.fullmatch(dn):
            name = rule.pattern.sub(rule.replacement, dn, count=1)
            return name.lower() if rule.case == "L" else name.upper() if rule.case == "U" else name
    raise ValueError(f"no ssl.principal.mapping.rules rule matches {dn}")


def _escape(value: str) -> str:
    out = re.sub(r'([,+"\\<>;])', r"\\\1", value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" "):
        out = out[:-1] + "\\ "
    return out


def rfc2253(subject: Sequence[Sequence[tuple[str, str]]]) -> str:
    """`getpeercert()['subject']` (RDNs in certificate order) as RFC 2253: last RDN first."""
    return ",".join("+".join(f"{_SHORT.get(k, k)}={_escape(v)}" for k, v in rdn)
                    for rdn in reversed(subject))


@dataclass(frozen=True, slots=True)
class ListenerTls:
    context: ssl.SSLContext
    rules: tuple[MappingRule, ...]


def listener_tls(listener: str, settings: Mapping[str, str],
                 get: Callable[[str], object]) -> ListenerTls:
    def value(name: str) -> str | None:
        v = listener_value(settings, listener, name)
        if v is None:
            g = get(name)
            v = None if g is None else ",".join(map(str, g)) if isinstance(g, list | tuple) else str(g)
        return v

    prefix = f"listener.name.{listener.lower()}."
    protocols = [p.strip() for p in (value("ssl.enabled.protocols") or "").split(",") if p.strip()]
    unknown = [p for p in protocols if p not in _PROTOCOLS]
    if unknown or not protocols:
        raise SecurityConfigError(f"ssl.enabled.protocols must name TLSv1.2 and/or TLSv1.3, "
                                  f"not {unknown or 'nothing'}", prefix + "ssl.enabled.protocols")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = sorted(_PROTOCOLS[p] for p in protocols)
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    _load_keystore(ctx, listener, value, prefix)
    auth = (value("ssl.client.auth") or "none").lower()
    if auth not in _CLIENT_AUTH:
        raise SecurityConfigError(f"ssl.client.auth {auth!r} is not none, requested or required",
                                  prefix + "ssl.client.auth")
    ctx.verify_mode = _CLIENT_AUTH[auth]
    if auth != "none":
        _load_truststore(ctx, listener, value, prefix, auth)
    rules = parse_mapping_rules(value("ssl.principal.mapping.rules") or "DEFAULT")
    return ListenerTls(ctx, tuple(rules))


def _store_type(value: Callable[[str], str | None], name: str, prefix: str) -> str:
    kind = (value(name) or "JKS").upper()  # Kafka's default for both stores
    if kind not in _STORE_TYPES:
        raise SecurityConfigError(f"{name} {kind} is not JKS, PKCS12 or PEM", prefix + name)
    return kind


def _read_store(path: str, listener: str, setting: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise SecurityConfigError(f"cannot read {path} for listener {listener}: "
                                  f"{e.strerror or e}", setting) from None


def _load_keystore(ctx: ssl.SSLContext, listener: str, value: Callable[[str], str | None],
                   prefix: str) -> None:
    kind = _store_type(value, "ssl.keystore.type", prefix)
    password = value("ssl.key.password")
    location, key, chain = (value("ssl.keystore.location"), value("ssl.keystore.key"),
                            value("ssl.keystore.certificate.chain"))
    if kind != "PEM":
        if not location:
            raise SecurityConfigError(f"listener {listener} needs ssl.keystore.location for "
                                      f"its {kind} keystore", prefix + "ssl.keystore.location")
        data = _read_store(location, listener, prefix + "ssl.keystore.location")
        try:
            material = load_store(kind, data, value("ssl.keystore.password"), password)
        except KeystoreError as e:
            setting = "ssl.key.password" if "ssl.key.password" in str(e) \
                else "ssl.keystore.password"
            raise SecurityConfigError(f"cannot load the {kind} keystore {location} of listener "
                                      f"{listener}: {e}", prefix + setting) from None
        if material.key_pem is None:
            raise SecurityConfigError(f"the {kind} keystore {location} of listener {listener} "
                                      "holds no private key", prefix + "ssl.keystore.location")
        try:
            _load_from_text(ctx, "".join(material.chain_pem), material.key_pem, None)
        except ssl.SSLError as e:
            raise SecurityConfigError(f"cannot use the key of {location} (listener {listener}): "
                                      f"{e.reason or e}", prefix + "ssl.keystore.location") from None
        return
    try:
        if location:
            ctx.load_cert_chain(location, password=password)
        elif key and chain:
            _load_from_text(ctx, chain, key, password)
        else:
            raise SecurityConfigError(
                f"listener {listener} needs ssl.keystore.location or ssl.keystore.key and "
                "ssl.keystore.certificate.chain", prefix + "ssl.keystore.location")
    except (ssl.SSLError, OSError) as e:
        raise SecurityConfigError(f"cannot load the keystore of listener {listener}: "
                                  f"{getattr(e, 'reason', None) or e.__class__.__name__}",
                                  prefix + "ssl.keystore.location") from None


def _load_truststore(ctx: ssl.SSLContext, listener: str, value: Callable[[str], str | None],
                     prefix: str, auth: str) -> None:
    kind = _store_type(value, "ssl.truststore.type", prefix)
    tloc, tcerts = value("ssl.truststore.location"), value("ssl.truststore.certificates")
    if not tloc and not (kind == "PEM" and tcerts):
        raise SecurityConfigError(f"ssl.client.auth={auth} on listener {listener} needs "
                                  "a truststore", prefix + "ssl.truststore.location")
    try:
        if kind != "PEM":
            assert tloc is not None
            data = _read_store(tloc, listener, prefix + "ssl.truststore.location")
            try:
                material = load_store(kind, data, value("ssl.truststore.password"))
            except KeystoreError as e:
                raise SecurityConfigError(f"cannot load the {kind} truststore {tloc} of "
                                          f"listener {listener}: {e}",
                                          prefix + "ssl.truststore.password") from None
            certs = material.trusted_pem + material.chain_pem
            if not certs:
                raise SecurityConfigError(f"the {kind} truststore {tloc} of listener {listener} "
                                          "holds no certificate", prefix + "ssl.truststore.location")
            ctx.load_verify_locations(cadata="".join(certs))
        elif tloc:
            ctx.load_verify_locations(cafile=tloc)
        else:
            ctx.load_verify_locations(cadata=tcerts)
    except (ssl.SSLError, OSError) as e:
        raise SecurityConfigError(f"cannot load the truststore of listener {listener}: {e}",
                                  prefix + "ssl.truststore.location") from None


def _load_from_text(ctx: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    """ssl loads a key only from a path: the PEM goes through an anonymous in-memory file
    (memfd, never on disk), or, where the OS has none, a 0600 temp file removed at once."""
    text = (key.strip() + "\n" + chain.strip() + "\n").encode()
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("odradek-key", getattr(os, "MFD_CLOEXEC", 0))
        try:
            os.write(fd, text)
            ctx.load_cert_chain(f"/proc/self/fd/{fd}", password=password)
        finally:
            os.close(fd)
        return
    fd, path = tempfile.mkstemp(prefix="odradek-key-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text)
        ctx.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)


class TlsSocket:
    """The calls the server makes on a raw non-blocking socket, over TLS: `recv_into` and
    `sendmsg` raise BlockingIOError when TLS must wait for the peer."""

    __slots__ = ("_ssl",)

    def __init__(self, sslsock: ssl.SSLSocket) -> None:
        self._ssl = sslsock

    def fileno(self) -> int:
        return self._ssl.fileno()

    def recv_into(self, buf: memoryview) -> int:
        try:
            return self._ssl.recv_into(buf)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise BlockingIOError from None
        except ssl.SSLEOFError:
            return 0
        except ssl.SSLError as e:
            raise ConnectionError(f"TLS error: {e.reason}") from None

    def sendmsg(self, views: Sequence[memoryview], _ancdata: object = (), _flags: int = 0) -> int:
        # socket.sendmsg's signature; ancillary data and flags (MSG_MORE) mean nothing in TLS.
        # One TLS write of up to 64 KiB; the same views after a BlockingIOError give the same
        # bytes again, as OpenSSL needs for a retried write.
        chunk = bytearray()
        for v in views:
            chunk += v[:_SEND_CHUNK - len(chunk)]
            if len(chunk) >= _SEND_CHUNK:
                break
        try:
            return self._ssl.send(chunk)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise BlockingIOError from None
        except ssl.SSLError as e:
            raise ConnectionError(f"TLS error: {e.reason}") from None

    def peer_dn(self) -> str | None:
        cert = self._ssl.getpeercert()
        if not cert:
            return None
        subject = cert.get("subject", ())
        return rfc2253(subject)  # type: ignore[arg-type]

    def close(self) -> None:
        self._ssl.close()


async def tls_accept(sock: socket.socket, setup: ListenerTls, timeout: float) -> TlsSocket:
    """The server side of the handshake; ConnectionError if it fails or takes too long."""
    sslsock = setup.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
    with anyio.move_on_after(timeout) as scope:
        while True:
            try:
                sslsock.do_handshake()
                return TlsSocket(sslsock)
            except ssl.SSLWantReadError:
                await anyio.wait_readable(sslsock)
            except ssl.SSLWantWriteError:
                await anyio.wait_writable(sslsock)
            except (ssl.SSLError, OSError) as e:
                raise ConnectionError(f"TLS handshake failed: "
                                      f"{getattr(e, 'reason', None) or e}") from None
    assert scope.cancelled_caught
    raise ConnectionError("TLS handshake timed out")
