"""A sans-IO authorizer with the decisions of Kafka's StandardAuthorizer (issue #13).

An ACL binding is a resource pattern (type, name, LITERAL or PREFIXED) plus an entry
(principal, host, operation, ALLOW or DENY). `authorize` decides one action of one principal
from one host on one literal resource:
- a super user (`super.users`, principals split by ";") may do anything;
- the bindings that apply are those on the resource's type whose name equals the resource's,
  the LITERAL wildcard `*`, and PREFIXED ones whose name starts the resource's;
- of those, a binding matches when its principal is the caller's or `User:*`, its host is the
  caller's address or `*`, and its operation is the action's or ALL; an ALLOW binding for
  READ, WRITE, DELETE or ALTER also allows DESCRIBE, one for ALTER_CONFIGS DESCRIBE_CONFIGS
  (a DENY binding denies only its own operation);
- any matching DENY denies; else any matching ALLOW allows; else, when no binding at all
  applies to the resource, `allow.everyone.if.no.acl.found` decides; else it is denied.

Filters (DescribeAcls, DeleteAcls) add ANY to every enum and MATCH to pattern types (the
bindings that would apply to the named resource), and null for "any" strings.

The bindings persist as JSON (`to_json` / `from_json`); the broker writes the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class PermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"

_IMPLIES_DESCRIBE = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                               AclOperation.DELETE, AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})

# The operations each resource type supports (authorized_operations bit sets, Kafka's
# AclEntry.supportedOperations).
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE,
                         AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.ALTER,
                         AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE,
                         AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION,
                           AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
                           AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}


class InvalidAcl(ValueError):
    """A binding Kafka refuses to create (answered INVALID_REQUEST with this message)."""


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: PermissionType

    def validate(self) -> None:
        """Raise InvalidAcl for what Kafka's AclControlManager and AclApis refuse."""
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            raise InvalidAcl(f"Invalid resourceType {self.resource_type.name}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAcl(f"Invalid patternType {self.pattern_type.name}")
        if self.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
            raise InvalidAcl(f"Invalid operation {self.operation.name}")
        if self.permission not in (PermissionType.ALLOW, PermissionType.DENY):
            raise InvalidAcl(f"Invalid permissionType {self.permission.name}")
        if self.resource_type == ResourceType.CLUSTER and (
                self.resource_name != CLUSTER_NAME or self.pattern_type != PatternType.LITERAL):
            raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        if not self.resource_name:
            raise InvalidAcl("Invalid empty resource name")
        kind, sep, name = self.principal.partition(":")
        if not sep or not kind or not name:
            raise InvalidAcl(f"Invalid principal {self.principal!r}: expected 'Type:name'")

    def to_list(self) -> list[object]:
        return [self.resource_type.name, self.resource_name, self.pattern_type.name,
                self.principal, self.host, self.operation.name, self.permission.name]

    @classmethod
    def from_list(cls, row: list[object]) -> AclBinding:
        rt, rn, pt, pr, ho, op, pe = (str(v) for v in row)
        return cls(ResourceType[rt], rn, PatternType[pt], pr, ho, AclOperation[op],
                   PermissionType[pe])


@dataclass(frozen=True, slots=True)
class AclFilter:
    """None strings and ANY enums match everything; MATCH patterns match what would apply."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: PermissionType = PermissionType.ANY

    def validate(self) -> None:
        """Kafka refuses UNKNOWN in a filter (an unknown value a newer client may send)."""
        for value in (self.resource_type, self.pattern_type, self.operation, self.permission):
            if value.value == 0:
                raise InvalidAcl(f"Invalid filter value {type(value).__name__}.UNKNOWN")

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and acl.resource_type != self.resource_type:
            return False
        if not self._pattern_matches(acl):
            return False
        if self.principal is not None and acl.principal != self.principal:
            return False
        if self.host is not None and acl.host != self.host:
            return False
        if self.operation != AclOperation.ANY and acl.operation != self.operation:
            return False
        return self.permission == PermissionType.ANY or acl.permission == self.permission

    def _pattern_matches(self, acl: AclBinding) -> bool:
        name, kind = self.resource_name, self.pattern_type
        if kind == PatternType.MATCH:
            if name is None:
                return True
            if acl.pattern_type == PatternType.LITERAL:
                return acl.resource_name in (name, WILDCARD)
            return acl.pattern_type == PatternType.PREFIXED and name.startswith(acl.resource_name)
        if kind != PatternType.ANY and acl.pattern_type != kind:
            return False
        return name is None or acl.resource_name == name


class Authorizer:
    """The ACL bindings and the decisions made with them. Not thread-safe: one event loop."""

    def __init__(self, *, super_users: Iterable[str] = (), allow_if_no_acl: bool = False,
                 acls: Iterable[AclBinding] = ()) -> None:
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._acls: dict[AclBinding, None] = {}  # insertion-ordered set
        # resource type -> literal name -> bindings; resource type -> prefixed bindings
        self._literal: dict[ResourceType, dict[str, list[AclBinding]]] = {}
        self._prefixed: dict[ResourceType, list[AclBinding]] = {}
        for acl in acls:
            self._add(acl)

    # -- decisions ------------------------------------------------------------------------

    def authorize(self, principal: str, host: str, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        if principal in self.super_users:
            return True
        found_any = False
        allowed = False
        for acl in self._applicable(resource_type, name):
            found_any = True
            verdict = _verdict(acl, principal, host, operation)
            if verdict is PermissionType.DENY:
                return False
            if verdict is PermissionType.ALLOW:
                allowed = True
        return allowed or (not found_any and self.allow_if_no_acl)

    def authorize_any(self, principal: str, host: str, operation: AclOperation,
                      resource_type: ResourceType) -> bool:
        """Whether some resource of the type allows `operation` (Kafka's authorizeByResourceType,
        used for IDEMPOTENT_WRITE through WRITE on any topic): an ALLOW that no DENY on a
        wider or equal pattern cancels."""
        if principal in self.super_users:
            return True
        principals = (principal, WILDCARD_PRINCIPAL)
        relevant = [a for a in self._acls
                    if a.resource_type == resource_type and a.principal in principals
                    and a.host in (host, WILDCARD) and a.operation in (operation, AclOperation.ALL)]
        denies = [a for a in relevant if a.permission == PermissionType.DENY]
        if any(a.resource_name == WILDCARD and a.pattern_type == PatternType.LITERAL for a in denies):
            return False
        for acl in relevant:
            if acl.permission != PermissionType.ALLOW:
                continue
            if not any(_covers(d, acl) for d in denies):
                return True
        # With no ACL on the type at all, the no-ACL default decides.
        return self.allow_if_no_acl and not any(a.resource_type == resource_type
                                                for a in self._acls)

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType,
                              name: str) -> int:
        """The bit set of allowed operations, as Metadata and DescribeGroups report them."""
        bits = 0
        for op in SUPPORTED_OPERATIONS.get(resource_type, ()):
            if self.authorize(principal, host, op, resource_type, name):
                bits |= 1 << int(op)
        return bits

    def _applicable(self, resource_type: ResourceType, name: str) -> Iterable[AclBinding]:
        literal = self._literal.get(resource_type)
        if literal:
            yield from literal.get(name, ())
            if name != WILDCARD:
                yield from literal.get(WILDCARD, ())
        for acl in self._prefixed.get(resource_type, ()):
            if name.startswith(acl.resource_name):
                yield acl

    # -- the bindings ---------------------------------------------------------------------

    def create(self, acl: AclBinding) -> bool:
        """Add a validated binding; False when it existed already (Kafka answers success)."""
        acl.validate()
        if acl in self._acls:
            return False
        self._add(acl)
        return True

    def describe(self, flt: AclFilter) -> list[AclBinding]:
        return [a for a in self._acls if flt.matches(a)]

    def delete(self, flt: AclFilter) -> list[AclBinding]:
        gone = self.describe(flt)
        for acl in gone:
            self._remove(acl)
        return gone

    def save(self) -> None:
        """Persist the bindings after a change; the broker's subclass writes its file."""

    def __iter__(self) -> Iterator[AclBinding]:
        return iter(list(self._acls))

    def __len__(self) -> int:
        return len(self._acls)

    def _add(self, acl: AclBinding) -> None:
        self._acls[acl] = None
        if acl.pattern_type == PatternType.PREFIXED:
            self._prefixed.setdefault(acl.resource_type, []).append(acl)
        else:
            self._literal.setdefault(acl.resource_type, {}).setdefault(
                acl.resource_name, []).append(acl)

    def _remove(self, acl: AclBinding) -> None:
        del self._acls[acl]
        if acl.pattern_type == PatternType.PREFIXED:
            self._prefixed[acl.resource_type].remove(acl)
        else:
            by_name = self._literal[acl.resource_type]
            by_name[acl.resource_name].remove(acl)
            if not by_name[acl.resource_name]:
                del by_name[acl.resource_name]

    # -- persistence ----------------------------------------------------------------------

    def to_json(self) -> bytes:
        return json.dumps({"version": 1, "acls": [a.to_list() for a in self._acls]},
                          indent=0).encode()

    @staticmethod
    def bindings_from_json(data: bytes) -> list[AclBinding]:
        doc = json.loads(data)
        if not isinstance(doc, dict) or doc.get("version") != 1:
            raise ValueError("unknown ACL file version")
        return [AclBinding.from_list(row) for row in doc["acls"]]


def _verdict(acl: AclBinding, principal: str, host: str,
             operation: AclOperation) -> PermissionType | None:
    """ALLOW or DENY when `acl` matches the caller and the operation, else None."""
    if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
        return None
    if acl.host != WILDCARD and acl.host != host:
        return None
    if acl.operation != AclOperation.ALL:
        if acl.permission == PermissionType.ALLOW:
            if operation == AclOperation.DESCRIBE:
                if acl.operation not in _IMPLIES_DESCRIBE:
                    return None
            elif operation == AclOperation.DESCRIBE_CONFIGS:
                if acl.operation not in _IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif operation != acl.operation:
                return None
        elif operation != acl.operation:
            return None
    return acl.permission


def _covers(deny: AclBinding, allow: AclBinding) -> bool:
    """Whether a DENY binding's pattern includes every resource the ALLOW binding's does."""
    if deny.pattern_type == PatternType.LITERAL:
        return deny.resource_name == WILDCARD or (
            allow.pattern_type == PatternType.LITERAL and allow.resource_name == deny.resource_name)
    return allow.resource_name.startswith(deny.resource_name)
