"""The authorizer's decisions (StandardAuthorizer semantics), filters and persistence."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.coordinator.acl.authorizer import (
    AclBinding,
    AclFilter,
    AclOperation,
    Authorizer,
    InvalidAcl,
    PatternType,
    PermissionType,
    ResourceType,
)

T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
A, D = PermissionType.ALLOW, PermissionType.DENY
Op = AclOperation
ALICE, BOB = "User:alice", "User:bob"


def acl(name: str, op: AclOperation = Op.READ, perm: PermissionType = A, *,
        rt: ResourceType = T, pt: PatternType = LIT, principal: str = ALICE,
        host: str = "*") -> AclBinding:
    return AclBinding(rt, name, pt, principal, host, op, perm)


def test_literal_allow_and_the_default_without_acls() -> None:
    auth = Authorizer(acls=[acl("orders")])
    assert auth.authorize(ALICE, "1.2.3.4", Op.READ, T, "orders")
    assert not auth.authorize(BOB, "1.2.3.4", Op.READ, T, "orders")  # acls exist: denied
    assert not auth.authorize(ALICE, "1.2.3.4", Op.READ, T, "other")  # no acls, default deny
    open_auth = Authorizer(acls=[acl("orders")], allow_if_no_acl=True)
    assert open_auth.authorize(BOB, "h", Op.READ, T, "other")  # no ACL on it: allowed
    assert not open_auth.authorize(BOB, "h", Op.READ, T, "orders")  # has ACLs: not for bob


def test_deny_wins_wildcards_and_hosts() -> None:
    auth = Authorizer(acls=[acl("*", Op.ALL, principal="User:*"),
                            acl("secret", Op.WRITE, D), acl("hosted", host="10.0.0.1",
                                                            principal=BOB)])
    assert auth.authorize(ALICE, "h", Op.WRITE, T, "anything")
    assert not auth.authorize(ALICE, "h", Op.WRITE, T, "secret")
    assert auth.authorize(ALICE, "h", Op.READ, T, "secret")  # deny is for WRITE only
    assert auth.authorize(BOB, "h", Op.WRITE, T, "secret")  # the deny is alice's
    only_host = Authorizer(acls=[acl("hosted", host="10.0.0.1", principal=BOB)])
    assert only_host.authorize(BOB, "10.0.0.1", Op.READ, T, "hosted")
    assert not only_host.authorize(BOB, "10.0.0.2", Op.READ, T, "hosted")


def test_implied_operations_apply_to_allow_only() -> None:
    auth = Authorizer(acls=[acl("t", Op.WRITE), acl("c", Op.ALTER_CONFIGS)])
    assert auth.authorize(ALICE, "h", Op.DESCRIBE, T, "t")
    assert not auth.authorize(ALICE, "h", Op.READ, T, "t")
    assert auth.authorize(ALICE, "h", Op.DESCRIBE_CONFIGS, T, "c")
    assert not auth.authorize(ALICE, "h", Op.DESCRIBE, T, "c")
    # A DENY READ does not deny DESCRIBE (Kafka's rule), DENY ALL denies everything.
    deny = Authorizer(acls=[acl("t", Op.ALL, principal="User:*"), acl("t", Op.READ, D)])
    assert deny.authorize(ALICE, "h", Op.DESCRIBE, T, "t")
    assert not deny.authorize(ALICE, "h", Op.READ, T, "t")
    assert not Authorizer(acls=[acl("t", Op.ALL), acl("t", Op.ALL, D)]).authorize(
        ALICE, "h", Op.DESCRIBE, T, "t")


def test_super_users_and_types_are_separate() -> None:
    auth = Authorizer(super_users=["User:admin"], acls=[acl("x", Op.ALL, D, principal="User:*")])
    assert auth.authorize("User:admin", "h", Op.WRITE, T, "x")
    assert not auth.authorize(ALICE, "h", Op.READ, G, "x")  # a topic ACL says nothing on groups


def test_a_prefixed_acl_deleted_takes_its_access_with_it() -> None:
    auth = Authorizer(acls=[acl("team-", Op.READ, pt=PRE)])
    assert auth.authorize(ALICE, "h", Op.READ, T, "team-orders")
    assert not auth.authorize(ALICE, "h", Op.READ, T, "teamx")
    gone = auth.delete(AclFilter(T, "team-orders", PatternType.MATCH))
    assert gone == [acl("team-", Op.READ, pt=PRE)]
    assert not auth.authorize(ALICE, "h", Op.READ, T, "team-orders")
    assert len(auth) == 0


def test_filters() -> None:
    acls = [acl("a"), acl("ab", pt=PRE), acl("*"), acl("abc", Op.WRITE, D, principal=BOB),
            acl("g", rt=G)]
    auth = Authorizer(acls=acls)
    assert auth.describe(AclFilter()) == acls
    assert auth.describe(AclFilter(T, "abc", PatternType.MATCH)) == [acls[1], acls[2], acls[3]]
    assert auth.describe(AclFilter(T, "ab", PatternType.ANY)) == [acls[1]]
    assert auth.describe(AclFilter(T, "ab", LIT)) == []
    assert auth.describe(AclFilter(principal=BOB)) == [acls[3]]
    assert auth.describe(AclFilter(permission=D)) == [acls[3]]
    assert auth.describe(AclFilter(resource_type=G)) == [acls[4]]


@pytest.mark.parametrize("bad", [
    acl("t", rt=ResourceType.ANY), acl("t", rt=ResourceType.UNKNOWN),
    acl("t", pt=PatternType.MATCH), acl("t", pt=PatternType.ANY), acl("t", Op.ANY),
    acl("t", Op.UNKNOWN), acl("t", perm=PermissionType.ANY), acl(""),
    acl("other", rt=C), acl("t", principal="alice"),
])
def test_creation_is_validated(bad: AclBinding) -> None:
    with pytest.raises(InvalidAcl):
        Authorizer().create(bad)


def test_json_round_trip() -> None:
    auth = Authorizer(acls=[acl("a"), acl("p-", Op.ALL, D, pt=PRE, host="1.1.1.1")])
    again = Authorizer(acls=Authorizer.bindings_from_json(auth.to_json()))
    assert list(again) == list(auth)


# -- a property test against a direct model of the rules ---------------------------------

NAMES = ["a", "ab", "abc", "b", "*"]
PRINCIPALS = [ALICE, BOB, "User:*"]
OPS = [Op.ALL, Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS]
bindings = st.builds(
    AclBinding, st.sampled_from([T, G]), st.sampled_from(NAMES), st.sampled_from([LIT, PRE]),
    st.sampled_from(PRINCIPALS), st.sampled_from(["*", "h1"]), st.sampled_from(OPS),
    st.sampled_from([A, D]))


def model(acls: list[AclBinding], allow_default: bool, principal: str, host: str,
          op: AclOperation, rt: ResourceType, name: str) -> bool:
    def applies(a: AclBinding) -> bool:
        if a.resource_type != rt:
            return False
        if a.pattern_type == LIT:
            return a.resource_name in (name, "*")
        return name.startswith(a.resource_name)

    def op_matches(a: AclBinding) -> bool:
        if a.operation in (Op.ALL, op):
            return True
        if a.permission != A:
            return False
        if op == Op.DESCRIBE:
            return a.operation in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER)
        return op == Op.DESCRIBE_CONFIGS and a.operation == Op.ALTER_CONFIGS

    on_resource = [a for a in acls if applies(a)]
    matching = [a for a in on_resource if a.principal in (principal, "User:*")
                and a.host in ("*", host) and op_matches(a)]
    if any(a.permission == D for a in matching):
        return False
    if any(a.permission == A for a in matching):
        return True
    return allow_default and not on_resource


@settings(max_examples=300, deadline=None)
@given(st.lists(bindings, max_size=8), st.booleans(), st.sampled_from([ALICE, BOB]),
       st.sampled_from(["h1", "h2"]), st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE,
                                                       Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS]),
       st.sampled_from([T, G]), st.sampled_from(["a", "ab", "abc", "abd", "b", "c"]))
def test_decisions_match_the_model(acls: list[AclBinding], allow_default: bool, principal: str,
                                   host: str, op: AclOperation, rt: ResourceType,
                                   name: str) -> None:
    auth = Authorizer(allow_if_no_acl=allow_default)
    for a in acls:
        auth.create(a)
    unique = list(dict.fromkeys(acls))
    assert auth.authorize(principal, host, op, rt, name) == model(
        unique, allow_default, principal, host, op, rt, name)
    # deleting everything that applies restores the default
    auth.delete(AclFilter(rt, name, PatternType.MATCH))
    assert auth.authorize(principal, host, op, rt, name) == allow_default
