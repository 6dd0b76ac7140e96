"""SCRAM credentials by user and mechanism, kept as Kafka keeps them (salt, StoredKey,
ServerKey, iterations), persisted in the first log dir (`scram-credentials.json`, replaced
atomically: written aside, fsynced, renamed).

Bootstrap users come from Odradek's `scram.bootstrap.credentials` setting, in the syntax of
`kafka-storage format --add-scram` (`SCRAM-SHA-512=[name=alice,password=alice-secret]`,
several separated by `;`); as with `kafka-storage format`, they are written when the broker
starts and never override a credential already stored.
"""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

from odradek.broker.security.scram import (
    DEFAULT_ITERATIONS,
    MECHANISMS,
    MIN_ITERATIONS,
    ScramCredential,
    make_credential,
)

FILE_NAME = "scram-credentials.json"

_ENTRY = re.compile(r"\s*(?P<mech>[A-Z0-9-]+)=\[(?P<body>[^\]]*)\]\s*")


def parse_bootstrap(text: str) -> list[tuple[str, str, ScramCredential]]:
    """(user, mechanism, credential) for each entry; ValueError names no secret."""
    out: list[tuple[str, str, ScramCredential]] = []
    for item in filter(str.strip, text.split(";")):
        m = _ENTRY.fullmatch(item)
        if m is None or m["mech"] not in MECHANISMS:
            raise ValueError("expected MECHANISM=[name=...,password=...] with SCRAM-SHA-256 or "
                             "SCRAM-SHA-512")
        fields: dict[str, str] = {}
        for part in m["body"].split(","):
            key, sep, value = part.partition("=")
            if not sep:
                raise ValueError(f"{m['mech']} entry: expected key=value pairs")
            fields[key.strip()] = value.strip().strip('"')
        name = fields.get("name")
        if not name or "password" not in fields:
            raise ValueError(f"{m['mech']} entry: name and password are required")
        iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
        if iterations < MIN_ITERATIONS:
            raise ValueError(f"{m['mech']} entry for {name}: iterations below {MIN_ITERATIONS}")
        salt = base64.b64decode(fields["salt"]) if "salt" in fields else None
        out.append((name, m["mech"], make_credential(m["mech"], fields["password"],
                                                     iterations, salt)))
    return out


class ScramStore:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.credentials: dict[str, dict[str, ScramCredential]] = {}
        if path is not None and path.exists():
            raw = json.loads(path.read_text())
            for user, mechs in raw.items():
                self.credentials[user] = {
                    mech: ScramCredential(base64.b64decode(c["salt"]),
                                          base64.b64decode(c["stored_key"]),
                                          base64.b64decode(c["server_key"]), c["iterations"])
                    for mech, c in mechs.items()}

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.credentials.get(user, {}).get(mechanism)

    def bootstrap(self, entries: list[tuple[str, str, ScramCredential]]) -> None:
        changed = False
        for user, mech, credential in entries:
            if self.lookup(user, mech) is None:
                self.credentials.setdefault(user, {})[mech] = credential
                changed = True
        if changed:
            self.save()

    def upsert(self, user: str, mechanism: str, credential: ScramCredential) -> None:
        self.credentials.setdefault(user, {})[mechanism] = credential

    def delete(self, user: str, mechanism: str) -> bool:
        mechs = self.credentials.get(user)
        if not mechs or mechanism not in mechs:
            return False
        del mechs[mechanism]
        if not mechs:
            del self.credentials[user]
        return True

    def save(self) -> None:
        if self.path is None:
            return
        data = {user: {mech: {"salt": base64.b64encode(c.salt).decode(),
                              "stored_key": base64.b64encode(c.stored_key).decode(),
                              "server_key": base64.b64encode(c.server_key).decode(),
                              "iterations": c.iterations}
                       for mech, c in mechs.items()}
                for user, mechs in self.credentials.items()}
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
