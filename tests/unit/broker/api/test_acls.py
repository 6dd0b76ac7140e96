"""Without an authorizer the ACL apis answer SECURITY_DISABLED, as Kafka does, at every version."""

from __future__ import annotations

from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.create_acls import CreateAclsRequest
from odradek.wire._generated.delete_acls import DeleteAclsRequest
from odradek.wire._generated.describe_acls import DescribeAclsRequest


@pytest.mark.parametrize("version", range(4))
def test_acl_apis_report_security_disabled(tmp_path: Path, version: int) -> None:
    broker = open_broker(tmp_path)
    described = call(broker, ApiKey.DESCRIBE_ACLS, version,
                     DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=3,
                                         operation=1, permission_type=1))
    assert described.error_code == ErrorCode.SECURITY_DISABLED
    assert described.resources == []
    created = call(broker, ApiKey.CREATE_ACLS, version, CreateAclsRequest(creations=[
        CreateAclsRequest.AclCreation(resource_type=2, resource_name="t", resource_pattern_type=3,
                                      principal="User:a", host="*", operation=3, permission_type=3)
        for _ in range(2)]))
    assert [r.error_code for r in created.results] == [ErrorCode.SECURITY_DISABLED] * 2
    deleted = call(broker, ApiKey.DELETE_ACLS, version, DeleteAclsRequest(filters=[
        DeleteAclsRequest.DeleteAclsFilter(resource_type_filter=1, pattern_type_filter=1,
                                           operation=1, permission_type=1)]))
    assert [r.error_code for r in deleted.filter_results] == [ErrorCode.SECURITY_DISABLED]
    assert deleted.filter_results[0].matching_acls == []
