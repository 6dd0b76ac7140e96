from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.broker.api.metadata import CLUSTER_OPS_ALL
from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.describe_cluster import DescribeClusterRequest

KEY = ApiKey.DESCRIBE_CLUSTER


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = open_broker(tmp_path, listeners="PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
                    **{"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"})
    b.set_bound_ports({"PLAINTEXT": 19092, "OTHER": 19093})
    yield b
    b.close()


@pytest.mark.parametrize("version", [0, 1, 2])
def test_this_node_is_the_cluster(broker: Broker, version: int) -> None:
    r = call(broker, KEY, version, DescribeClusterRequest())
    assert (r.error_code, r.error_message) == (ErrorCode.NONE, None)
    assert r.cluster_id == broker.cluster.cluster_id and len(r.cluster_id) == 22
    assert r.controller_id == broker.node_id
    [b] = r.brokers
    assert (b.broker_id, b.host, b.port, b.rack) == (broker.node_id, "127.0.0.1", 19092, None)
    assert r.cluster_authorized_operations == -(2**31)
    if version >= 1:
        assert r.endpoint_type == 1
    if version >= 2:
        assert b.is_fenced is False
        fenced_too = DescribeClusterRequest(include_fenced_brokers=True)
        assert [x.broker_id for x in call(broker, KEY, 2, fenced_too).brokers] == [b.broker_id]


def test_endpoint_of_the_clients_listener(broker: Broker) -> None:
    r = call(broker, KEY, 1, DescribeClusterRequest(), listener="OTHER")
    assert r.brokers[0].port == 19093


def test_authorized_operations_when_asked(broker: Broker) -> None:
    r = call(broker, KEY, 1, DescribeClusterRequest(include_cluster_authorized_operations=True))
    assert r.cluster_authorized_operations == CLUSTER_OPS_ALL


@pytest.mark.parametrize(("endpoint_type", "code"), [
    (2, ErrorCode.MISMATCHED_ENDPOINT_TYPE), (0, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE),
    (9, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE)])
def test_other_endpoint_types(broker: Broker, endpoint_type: int, code: ErrorCode) -> None:
    r = call(broker, KEY, 1, DescribeClusterRequest(endpoint_type=endpoint_type))
    assert r.error_code == code
    assert r.error_message
    assert r.brokers == []
