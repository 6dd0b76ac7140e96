"""ListConfigResources: which resources each type lists, and the refusals; the expected
answers are Apache Kafka 4.4's (recorded with raw requests on a 4.4.0 broker;
tests/integration/test_features.py runs kafka-configs.sh on both brokers)."""

from __future__ import annotations

from pathlib import Path

from admin_testutil import call, open_broker

from odradek.broker.broker import Broker
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.list_config_resources import ListConfigResourcesRequest


def listed(broker: Broker, version: int, types: list[int] | None = None,
           principal: str = "User:ANONYMOUS") -> tuple[int, list[tuple[str, int]]]:
    req = ListConfigResourcesRequest()
    if version >= 1:
        req.resource_types = types or []
    r = call(broker, ApiKey.LIST_CONFIG_RESOURCES, version, req, principal=principal)
    return r.error_code, [(x.resource_name, x.resource_type) for x in r.config_resources]


def test_lists_topics_brokers_and_configured_groups(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    try:
        broker.cluster.create_topic("tA", 1, {})
        assert broker.group_configs is not None
        broker.group_configs.replace("g1", {"consumer.session.timeout.ms": "50000"})
        assert listed(broker, 1) == (ErrorCode.NONE, [("tA", 2), ("1", 4), ("1", 8), ("g1", 32)])
        assert listed(broker, 1, [32, 2, 2]) == (ErrorCode.NONE, [("tA", 2), ("g1", 32)])
        assert listed(broker, 1, [16]) == (ErrorCode.NONE, [])
        assert listed(broker, 0) == (ErrorCode.NONE, [])  # v0: client-metrics only
        for bad in ([1], [99], [0], [2, 99]):
            assert listed(broker, 1, bad) == (ErrorCode.UNSUPPORTED_VERSION, [])
        broker.group_configs.replace("g1", {})
        assert listed(broker, 1, [32]) == (ErrorCode.NONE, [])
    finally:
        broker.close()


def test_needs_cluster_describe_configs(tmp_path: Path) -> None:
    broker = open_broker(tmp_path, **{"authorizer.class.name":
                                      "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    try:
        assert listed(broker, 1, principal="User:mallory") == (
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
    finally:
        broker.close()
