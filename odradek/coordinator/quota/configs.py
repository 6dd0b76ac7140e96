"""The client quota configs, altered and described as Kafka's controller does
(ClientQuotaControlManager, ClientQuotasImage), and resolved for a request as Kafka's
ClientQuotaManager's default callback does.

An entity is a set of (type, name) pairs, types `user` and `client-id`; a null name is the
type's default entity (`<default>` in kafka-configs). Keys: `producer_byte_rate` and
`consumer_byte_rate` (whole numbers), `request_percentage` and `controller_mutation_rate`
(the last stored and described, not enforced). `ip` entities (connection_creation_rate) are
not supported: AlterClientQuotas answers them as Kafka answers an unknown entity type.

Precedence (`resolve`), for user u and client id c, the first entity holding the key:
/users/u/clients/c, /users/u/clients/<default>, /users/u, /users/<default>/clients/c,
/users/<default>/clients/<default>, /users/<default>, /clients/c, /clients/<default>. The
match also names the rate the request is counted in (Kafka's metric tags): (u, c) for the
user-and-client levels, (u, "") for the user levels, ("", c) for the client levels, so
every client of a user with a user quota shares one rate.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"

_LONG_MAX = 9223372036854775807
# key -> integral (Kafka's LONG) or not (DOUBLE)
KEYS: Mapping[str, bool] = {
    PRODUCER_BYTE_RATE: True,
    CONSUMER_BYTE_RATE: True,
    REQUEST_PERCENTAGE: False,
    CONTROLLER_MUTATION_RATE: False,
}
# the keys whose rates are enforced on requests
ENFORCED = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

Entity = tuple[tuple[str, str | None], ...]  # (type, name) pairs, sorted by type
Tags = tuple[str, str]  # (user, client id) naming the rate a request is counted in


class QuotaError(Exception):
    """INVALID_REQUEST (or, with `unsupported`, UNSUPPORTED_VERSION) with Kafka's message."""

    def __init__(self, message: str, unsupported: bool = False) -> None:
        super().__init__(message)
        self.unsupported = unsupported


@dataclass(frozen=True, slots=True)
class Op:
    key: str
    value: float | None  # None: remove


def entity_of(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    return tuple(sorted(pairs, key=lambda p: p[0]))


def _show(entity: Entity) -> str:
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={n}" for t, n in entity) + "})"


def _validate_entity(pairs: list[tuple[str, str | None]]) -> Entity:
    if not pairs:
        raise QuotaError("Invalid empty client quota entity")
    seen: set[str] = set()
    for entity_type, name in pairs:
        if entity_type in seen:
            raise QuotaError(f"Invalid client quota entity, duplicate entity entry {entity_type}")
        seen.add(entity_type)
        if entity_type not in (USER, CLIENT_ID):  # ip: not supported (module docstring)
            raise QuotaError(f"Unhandled client quota entity type: {entity_type}")
        if name is not None and not name:
            raise QuotaError(f"Empty {entity_type} not supported")
    return entity_of(pairs)


def _validate_value(key: str, value: float) -> None:
    integral = KEYS.get(key)
    if integral is None:
        raise QuotaError(f"Invalid configuration key {key}")
    if not value > 0.0:
        raise QuotaError(f"Quota {key} must be greater than 0")
    if integral:
        if value > _LONG_MAX:
            raise QuotaError(f"Proposed value for {key} is too large for a LONG.")
        if abs(math.fmod(value, 1.0)) > 1e-6:
            raise QuotaError(f"{key} cannot be a fractional value.")


class QuotaConfigs:
    """Every entity's quota values. `version` moves on every change (callers cache by it)."""

    def __init__(self, entries: Mapping[Entity, Mapping[str, float]] | None = None) -> None:
        self._entries: dict[Entity, dict[str, float]] = {
            e: dict(v) for e, v in (entries or {}).items() if v}
        self.version = 0
        self._enabled: frozenset[str] = frozenset()
        # some enforced key is set: a plain attribute, as dispatch reads it on every request
        self.any_enforced = False
        self._refresh()

    def _refresh(self) -> None:
        self.version += 1
        self._enabled = frozenset(k for values in self._entries.values() for k in values)
        self.any_enforced = any(k in self._enabled for k in ENFORCED)

    def enabled(self, key: str) -> bool:
        """Some entity holds `key`."""
        return key in self._enabled

    def get(self, entity: Entity) -> Mapping[str, float]:
        return self._entries.get(entity, {})

    # -- AlterClientQuotas ------------------------------------------------------------------

    def alter(self, alterations: list[tuple[list[tuple[str, str | None]], list[Op]]],
              validate_only: bool) -> tuple[list[tuple[Entity, QuotaError | None]], bool]:
        """Each entity's outcome (None: done), in request order, one per distinct entity,
        and whether anything changed. An entity with an error changes nothing."""
        results: dict[Entity, QuotaError | None] = {}
        changes: dict[Entity, dict[str, float | None]] = {}
        for pairs, ops in alterations:
            entity = entity_of(pairs)
            alter: dict[str, float | None] = {}
            duplicate_key = False
            for op in ops:
                duplicate_key |= op.key in alter
                alter[op.key] = op.value
            # Kafka records the duplicate key as the entity's error, then finds the entity
            # already answered and says so: both cases read "Ignoring duplicate entity".
            if duplicate_key or entity in results:
                results[entity] = QuotaError(f"Ignoring duplicate entity {_show(entity)}")
                continue
            error: QuotaError | None = None
            if error is None:
                try:
                    entity = _validate_entity(pairs)
                    for key, value in alter.items():
                        if value is not None:
                            _validate_value(key, value)
                except QuotaError as e:
                    error = e
            results[entity] = error
            if error is None:
                changes[entity] = alter
        changed = False
        if not validate_only:
            for entity, alter in changes.items():
                values = self._entries.setdefault(entity, {})
                for key, value in alter.items():
                    if value is None:
                        changed |= values.pop(key, None) is not None
                    elif values.get(key) != value:
                        values[key] = value
                        changed = True
                if not values:
                    del self._entries[entity]
            if changed:
                self._refresh()
        return list(results.items()), changed

    # -- DescribeClientQuotas ---------------------------------------------------------------

    def describe(self, components: list[tuple[str, int, str | None]],
                 strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        """The entities matching the filter and their values; raises QuotaError."""
        exact: dict[str, str | None] = {}
        specified: set[str] = set()
        for entity_type, match_type, match in components:
            if not entity_type:
                raise QuotaError("Invalid empty entity type.")
            if entity_type in exact or entity_type in specified:
                raise QuotaError(f"Entity type {entity_type} cannot appear more than once in "
                                 "the filter.")
            if entity_type not in (IP, USER, CLIENT_ID):
                raise QuotaError(f"Unsupported entity type {entity_type}", unsupported=True)
            if match_type == MATCH_EXACT:
                if match is None:
                    raise QuotaError("Request specified MATCH_TYPE_EXACT, but set match string "
                                     "to null.")
                exact[entity_type] = match
            elif match_type == MATCH_DEFAULT:
                if match is not None:
                    raise QuotaError("Request specified MATCH_TYPE_DEFAULT, but also "
                                     "specified a match string.")
                exact[entity_type] = None
            elif match_type == MATCH_SPECIFIED:
                if match is not None:
                    raise QuotaError("Request specified MATCH_TYPE_SPECIFIED, but also "
                                     "specified a match string.")
                specified.add(entity_type)
            else:
                raise QuotaError(f"Unknown match type {match_type}")
        if (IP in exact or IP in specified) and (
                USER in exact or USER in specified or CLIENT_ID in exact
                or CLIENT_ID in specified):
            raise QuotaError("Invalid entity filter component combination. IP filter "
                             "component should not be used with user or clientId filter "
                             "component.")
        out = []
        for entity, values in self._entries.items():
            names = dict(entity)
            if strict and len(names) != len(exact) + len(specified):
                continue
            if any(t not in names or names[t] != m for t, m in exact.items()):
                continue
            if any(t not in names for t in specified):
                continue
            out.append((entity, dict(values)))
        return out

    # -- enforcement ------------------------------------------------------------------------

    def resolve(self, key: str, user: str, client_id: str) -> tuple[Tags, float] | None:
        """The rate (tags) a request of `user` and `client_id` is counted in for `key`, and
        its bound; None when no entity applies (module docstring: the precedence)."""
        get = self._entries.get
        u: tuple[str, str | None] = (USER, user)
        du: tuple[str, str | None] = (USER, None)
        c: tuple[str, str | None] = (CLIENT_ID, client_id)
        dc: tuple[str, str | None] = (CLIENT_ID, None)
        both = (user, client_id)
        for entity, tags in (((c, u), both), ((dc, u), both), ((u,), (user, "")),
                             ((c, du), both), ((dc, du), both), ((du,), (user, "")),
                             ((c,), ("", client_id)), ((dc,), ("", client_id))):
            values = get(entity)
            if values is not None and key in values:
                return tags, values[key]
        return None

    # -- persistence ------------------------------------------------------------------------

    def to_json(self) -> bytes:
        rows = [{"entity": [[t, n] for t, n in e], "values": v}
                for e, v in sorted(self._entries.items(), key=lambda kv: repr(kv[0]))]
        return json.dumps({"version": 1, "quotas": rows}, indent=0).encode()

    @classmethod
    def from_json(cls, data: bytes) -> QuotaConfigs:
        doc = json.loads(data)
        if not isinstance(doc, dict) or doc.get("version") != 1:
            raise ValueError("unknown quota file version")
        entries: dict[Entity, dict[str, float]] = {}
        for row in doc["quotas"]:
            entity = entity_of((str(t), None if n is None else str(n)) for t, n in row["entity"])
            entries[entity] = {str(k): float(v) for k, v in row["values"].items()}
        return cls(entries)
