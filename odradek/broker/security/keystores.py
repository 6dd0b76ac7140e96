"""Java keystores for TLS listeners: JKS and PKCS12 keystores and truststores, decoded in
memory into what Python's ssl module takes (PEM text).

- JKS (Sun's JavaKeyStore, magic 0xFEEDFEED, version 1 or 2): entries of private keys
  (a PKCS#8 key protected by Sun's key-protection algorithm, with its certificate chain) and
  trusted certificates, then a SHA-1 digest keyed with the store password; decoded here
  with hashlib alone. Without a store password the entries are read unchecked, as Java reads
  a truststore without one; a private key always needs its password (`ssl.key.password`,
  else the store password, as Kafka's DefaultSslEngineFactory falls back).
- PKCS12: decoded with the `cryptography` package (the `security` extra), imported only
  when a PKCS12 store is configured.
Not implemented: JCEKS (0xCECECECE) and PKCS12 stores with several private keys (the first
key is used; Java would let `ssl.keystore.alias`-less Kafka pick any).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ssl
import struct
from dataclasses import dataclass, field

_JKS_MAGIC = 0xFEEDFEED
_JCEKS_MAGIC = 0xCECECECE
_WHITENER = b"Mighty Aphrodite"  # the constant Sun's JavaKeyStore mixes into its digest
_KEY_PROTECTOR_OID = "1.3.6.1.4.1.42.2.17.1.1"


class KeystoreError(ValueError):
    """A store that cannot be read; the message names no secret."""


@dataclass(slots=True)
class KeyMaterial:
    key_pem: str | None = None  # PKCS#8, unencrypted: kept in memory only
    chain_pem: list[str] = field(default_factory=list)  # the key's chain, leaf first
    trusted_pem: list[str] = field(default_factory=list)  # trusted certificate entries


def _password_bytes(password: str) -> bytes:
    # Java's char[] as big-endian 16-bit units, as both JavaKeyStore and KeyProtector use.
    return password.encode("utf-16-be")


def _key_pem(der: bytes) -> str:
    body = base64.encodebytes(der).decode().replace("\n", "")
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise KeystoreError("truncated or corrupt keystore")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u16(self) -> int:
        return int(struct.unpack(">H", self.take(2))[0])

    def u32(self) -> int:
        return int(struct.unpack(">I", self.take(4))[0])

    def utf(self) -> str:
        return self.take(self.u16()).decode("utf-8", "replace")  # Java's modified UTF-8

    def cert(self, version: int) -> bytes:
        if version == 2:
            kind = self.utf()
            if kind != "X.509":
                raise KeystoreError(f"certificate type {kind} is not X.509")
        return self.take(self.u32())


def _der(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start of content, end of content) of the DER element at `pos`."""
    if pos + 2 > len(data):
        raise KeystoreError("corrupt private key entry")
    tag, length = data[pos], data[pos + 1]
    pos += 2
    if length & 0x80:
        n = length & 0x7F
        if n == 0 or n > 4 or pos + n > len(data):
            raise KeystoreError("corrupt private key entry")
        length = int.from_bytes(data[pos:pos + n], "big")
        pos += n
    if pos + length > len(data):
        raise KeystoreError("corrupt private key entry")
    return tag, pos, pos + length


def _oid(content: bytes) -> str:
    first = content[0]
    parts = [first // 40, first % 40]
    value = 0
    for b in content[1:]:
        value = (value << 7) | (b & 0x7F)
        if not b & 0x80:
            parts.append(value)
            value = 0
    return ".".join(map(str, parts))


def _unprotect(encrypted_info: bytes, password: str) -> bytes:
    """The PKCS#8 DER of a JKS private key: EncryptedPrivateKeyInfo whose algorithm is Sun's
    KeyProtector (salt 20 | key XOR a SHA-1 keystream | SHA-1 check 20)."""
    tag, start, _end = _der(encrypted_info, 0)
    if tag != 0x30:
        raise KeystoreError("corrupt private key entry")
    tag, a_start, a_end = _der(encrypted_info, start)  # AlgorithmIdentifier
    if tag != 0x30:
        raise KeystoreError("corrupt private key entry")
    tag, o_start, o_end = _der(encrypted_info, a_start)
    if tag != 0x06 or _oid(encrypted_info[o_start:o_end]) != _KEY_PROTECTOR_OID:
        raise KeystoreError("private key protected by an algorithm other than JKS's")
    tag, d_start, d_end = _der(encrypted_info, a_end)
    if tag != 0x04:
        raise KeystoreError("corrupt private key entry")
    protected = encrypted_info[d_start:d_end]
    if len(protected) < 41:
        raise KeystoreError("corrupt private key entry")
    salt, body, check = protected[:20], protected[20:-20], protected[-20:]
    pw = _password_bytes(password)
    stream = bytearray()
    digest = salt
    while len(stream) < len(body):
        digest = hashlib.sha1(pw + digest).digest()
        stream += digest
    key = bytes(a ^ b for a, b in zip(body, stream, strict=False))
    if not hmac.compare_digest(hashlib.sha1(pw + key).digest(), check):
        raise KeystoreError("cannot recover the private key: wrong ssl.key.password")
    return key


def load_jks(data: bytes, store_password: str | None, key_password: str | None) -> KeyMaterial:
    r = _Reader(data)
    magic = r.u32()
    if magic == _JCEKS_MAGIC:
        raise KeystoreError("JCEKS keystores are not supported; convert with keytool "
                            "-importkeystore -deststoretype PKCS12")
    if magic != _JKS_MAGIC:
        raise KeystoreError("not a JKS keystore (bad magic number)")
    version = r.u32()
    if version not in (1, 2):
        raise KeystoreError(f"unsupported JKS version {version}")
    out = KeyMaterial()
    protected: list[tuple[bytes, list[bytes]]] = []
    for _ in range(r.u32()):
        tag = r.u32()
        r.utf()  # alias
        r.take(8)  # creation date
        if tag == 1:
            key_info = r.take(r.u32())
            chain = [r.cert(version) for _ in range(r.u32())]
            protected.append((key_info, chain))
        elif tag == 2:
            out.trusted_pem.append(ssl.DER_cert_to_PEM_cert(r.cert(version)))
        else:
            raise KeystoreError(f"unknown JKS entry type {tag}")
    if store_password:
        body_end = r.pos
        digest = r.take(20)
        expected = hashlib.sha1(_password_bytes(store_password) + _WHITENER
                                + data[:body_end]).digest()
        if not hmac.compare_digest(digest, expected):
            raise KeystoreError("keystore was tampered with, or password was incorrect")
    if protected:
        password = key_password or store_password
        if not password:
            raise KeystoreError("a private key entry needs ssl.key.password or the store "
                                "password")
        key_info, chain = protected[0]
        out.key_pem = _key_pem(_unprotect(key_info, password))
        out.chain_pem = [ssl.DER_cert_to_PEM_cert(c) for c in chain]
    return out


def load_pkcs12(data: bytes, store_password: str | None, key_password: str | None) -> KeyMaterial:
    try:
        from cryptography.hazmat.primitives.serialization import (
            Encoding,
            NoEncryption,
            PrivateFormat,
            pkcs12,
        )
    except ImportError:
        raise KeystoreError("PKCS12 stores need the cryptography package: pip install "
                            "'odradek[security]'") from None
    last: Exception | None = None
    for password in dict.fromkeys([store_password, key_password]):
        try:
            store = pkcs12.load_pkcs12(data, password.encode() if password else None)
            break
        except (ValueError, TypeError) as e:
            last = e
    else:
        reason = "keystore password was incorrect, or the file is corrupt"
        raise KeystoreError(reason) from last
    out = KeyMaterial()
    if store.key is not None:
        out.key_pem = store.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8,
                                              NoEncryption()).decode()
    if store.cert is not None:
        out.chain_pem.append(store.cert.certificate.public_bytes(Encoding.PEM).decode())
    extra = [c.certificate.public_bytes(Encoding.PEM).decode() for c in store.additional_certs]
    if out.key_pem is not None:
        out.chain_pem += extra
    out.trusted_pem = extra  # a truststore's certificates; a keystore's CA chain
    return out


def load_store(kind: str, data: bytes, store_password: str | None,
               key_password: str | None = None) -> KeyMaterial:
    if kind == "JKS":
        return load_jks(data, store_password, key_password)
    if kind == "PKCS12":
        return load_pkcs12(data, store_password, key_password)
    raise KeystoreError(f"store type {kind} is not JKS, PKCS12 or PEM")
