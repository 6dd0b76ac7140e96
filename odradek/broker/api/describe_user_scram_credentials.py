"""DescribeUserScramCredentials (key 50), version 0.

- Every user with a SCRAM credential (users null or empty), or the named ones: each mechanism
  (1 SCRAM-SHA-256, 2 SCRAM-SHA-512) with its iteration count; never salts or keys.
- A named user without a credential: RESOURCE_NOT_FOUND; a user named twice:
  DUPLICATE_RESOURCE, with Kafka's messages.
- Authorization (when an authorizer is on): CLUSTER DESCRIBE, else the top-level
  CLUSTER_AUTHORIZATION_FAILED "Cluster authorization failed." and the same error on one
  result per named user (Kafka's error response; its user field left empty).
"""

from __future__ import annotations

from collections import Counter

from odradek.broker.api._auth import Op, cluster_allowed
from odradek.broker.context import RequestContext
from odradek.broker.security.store import ScramStore
from odradek.wire import ErrorCode
from odradek.wire._generated.describe_user_scram_credentials import (
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)

MECHANISM_IDS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}

Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
Info = DescribeUserScramCredentialsResponse.CredentialInfo


async def handle(ctx: RequestContext, request: DescribeUserScramCredentialsRequest
                 ) -> DescribeUserScramCredentialsResponse:
    if not cluster_allowed(ctx, Op.DESCRIBE):
        msg = "Cluster authorization failed."
        return DescribeUserScramCredentialsResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=msg,
            results=[Result(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                            error_message=msg) for _ in request.users or ()])
    store = ctx.scram or ScramStore(None)
    names = (sorted(store.credentials) if not request.users  # null or empty: every user
             else [u.name for u in request.users])
    counts = Counter(names)
    results: list[Result] = []
    for name in dict.fromkeys(names):
        mechs = store.credentials.get(name)
        if counts[name] > 1:
            results.append(Result(user=name, error_code=ErrorCode.DUPLICATE_RESOURCE,
                                  error_message="Cannot describe SCRAM credentials for the same "
                                                "user twice in a single request",
                                  credential_infos=[]))
        elif not mechs:
            results.append(Result(user=name, error_code=ErrorCode.RESOURCE_NOT_FOUND,
                                  error_message="Attempt to describe a user credential that "
                                                "does not exist", credential_infos=[]))
        else:
            results.append(Result(user=name, error_code=ErrorCode.NONE, error_message=None,
                                  credential_infos=[
                                      Info(mechanism=MECHANISM_IDS[m], iterations=c.iterations)
                                      for m, c in sorted(mechs.items())]))
    return DescribeUserScramCredentialsResponse(error_code=ErrorCode.NONE, error_message=None,
                                                results=results)
