"""Builds the authorizer from the settings and keeps its ACLs on disk (issue #13).

`authorizer.class.name` turns authorization on: Kafka's
`org.apache.kafka.metadata.authorizer.StandardAuthorizer` is accepted (its semantics are
`odradek.coordinator.acl.authorizer`); empty leaves it off, as on a Kafka broker without one.
`super.users` and `allow.everyone.if.no.acl.found` are the StandardAuthorizer's own settings
(Kafka keeps them as custom broker configs, so they are not in its config table).

The ACLs live in `acls.json` in the first log dir, replaced atomically (file and directory
fsync) after every CreateAcls or DeleteAcls that changed something, before the answer: a
kill -9 after the response loses nothing.
"""

from __future__ import annotations

from pathlib import Path

import structlog

from odradek.broker.storage.files import atomic_write
from odradek.config import BrokerConfig, ConfigError
from odradek.coordinator.acl.authorizer import Authorizer

log = structlog.get_logger("odradek.acls")

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ACL_FILE = "acls.json"
# read from the broker's custom (unknown) configs, as Kafka's StandardAuthorizer reads them
AUTHORIZER_SETTINGS = frozenset({"super.users", "allow.everyone.if.no.acl.found"})


class StoredAuthorizer(Authorizer):
    """An authorizer whose bindings are saved to `path` by `save()`."""

    def __init__(self, path: Path, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.path = path

    def save(self) -> None:
        atomic_write(self.path, self.to_json())


def build_authorizer(config: BrokerConfig) -> StoredAuthorizer | None:
    name = config.get_str("authorizer.class.name").strip()
    if not name:
        return None
    if name != STANDARD_AUTHORIZER:
        raise ConfigError(f"authorizer.class.name: only {STANDARD_AUTHORIZER} is supported, "
                          f"not {name}", "authorizer.class.name")
    supers = [p.strip() for p in config.unknown.get("super.users", "").split(";") if p.strip()]
    allow = config.unknown.get("allow.everyone.if.no.acl.found", "false").strip().lower()
    if allow not in ("true", "false"):
        raise ConfigError(f"allow.everyone.if.no.acl.found: expected true or false, not {allow}",
                          "allow.everyone.if.no.acl.found")
    path = config.log_dirs[0] / ACL_FILE
    acls = Authorizer.bindings_from_json(path.read_bytes()) if path.exists() else []
    log.info("authorizer on", acls=len(acls), super_users=len(supers),
             allow_everyone_if_no_acl_found=allow == "true")
    return StoredAuthorizer(path, super_users=supers, allow_if_no_acl=allow == "true",
                            acls=acls)
