"""AlterUserScramCredentials (key 51), version 0.

- Upsertions carry the salted password the client computed (as `kafka-configs --alter
  --add-config 'SCRAM-SHA-512=[password=...]' --entity-type users` sends it); the broker
  keeps only StoredKey and ServerKey. Deletions remove one mechanism of a user. The store is
  written to disk once per request (atomically) before the answer.
- Per user, as Kafka: an unknown mechanism UNSUPPORTED_SASL_MECHANISM, iterations outside
  4096-16384 or an empty name UNACCEPTABLE_CREDENTIAL, deleting what does not exist
  RESOURCE_NOT_FOUND, a user altered twice for one mechanism DUPLICATE_RESOURCE; a user with
  any error has none of its changes applied.
- Authorization (when an authorizer is on): CLUSTER ALTER, else CLUSTER_AUTHORIZATION_FAILED
  on one result per user named (sorted, once each), as Kafka's controller answers; its
  message names the whole request ("Request ... is not authorized."), this one does not.
"""

from __future__ import annotations

from collections import Counter

from odradek.broker.api._auth import Op, cluster_allowed
from odradek.broker.context import RequestContext
from odradek.broker.security.scram import MAX_ITERATIONS, MIN_ITERATIONS, credential_from_salted
from odradek.wire import ErrorCode
from odradek.wire._generated.alter_user_scram_credentials import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
)

MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult


async def handle(ctx: RequestContext, request: AlterUserScramCredentialsRequest
                 ) -> AlterUserScramCredentialsResponse:
    if not cluster_allowed(ctx, Op.ALTER):
        users = {d.name for d in request.deletions} | {u.name for u in request.upsertions}
        return AlterUserScramCredentialsResponse(results=[
            Result(user=u, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                   error_message="Request is not authorized.") for u in sorted(users)])
    store = ctx.scram
    errors: dict[str, tuple[int, str]] = {}
    pairs = Counter([(d.name, d.mechanism) for d in request.deletions]
                    + [(u.name, u.mechanism) for u in request.upsertions])
    for (name, mech), n in pairs.items():
        if not name:
            errors.setdefault(name, (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"))
        elif mech not in MECHANISMS:
            errors.setdefault(name, (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"))
        elif n > 1:
            errors.setdefault(name, (ErrorCode.DUPLICATE_RESOURCE,
                                     "A user credential cannot be altered twice in the same "
                                     "request"))
    for d in request.deletions:
        if d.name not in errors and d.mechanism in MECHANISMS and (
                store is None or store.lookup(d.name, MECHANISMS[d.mechanism]) is None):
            errors[d.name] = (ErrorCode.RESOURCE_NOT_FOUND,
                              "Attempt to delete a user credential that does not exist")
    for u in request.upsertions:
        if u.name in errors:
            continue
        if u.iterations < MIN_ITERATIONS:
            errors[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif u.iterations > MAX_ITERATIONS:
            errors[u.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    names = list(dict.fromkeys([d.name for d in request.deletions]
                               + [u.name for u in request.upsertions]))
    if store is not None:
        changed = False
        for d in request.deletions:
            if d.name not in errors:
                changed |= store.delete(d.name, MECHANISMS[d.mechanism])
        for u in request.upsertions:
            if u.name not in errors:
                mech_name = MECHANISMS[u.mechanism]
                store.upsert(u.name, mech_name, credential_from_salted(
                    mech_name, bytes(u.salted_password), bytes(u.salt), u.iterations))
                changed = True
        if changed:
            store.save()
    return AlterUserScramCredentialsResponse(results=[
        Result(user=name, error_code=errors.get(name, (ErrorCode.NONE, ""))[0],
               error_message=errors[name][1] if name in errors else None)
        for name in names])
