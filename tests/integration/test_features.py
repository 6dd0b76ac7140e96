"""kafka-features.sh (org.apache.kafka.tools.FeatureCommand, the 4.4 tools) against the broker:
describe, upgrade, downgrade, --dry-run and the refusals, with the same output on Odradek and
on Apache Kafka 4.4 (`ODRADEK_IT_SERVER_CMD="python -m compat_tests.kafka_it_server"`); the
levels survive a restart and a transactional producer works at each transaction.version."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import Producer
from it_support import StartBroker, create_topic, topic_name

CLASSPATH = Path(__file__).resolve().parents[2] / "compat_tests/java/target/cp-clients-4.4.txt"
pytestmark = pytest.mark.skipif(not CLASSPATH.exists() or shutil.which("java") is None,
                                reason="Kafka 4.4 tools not built (bash compat_tests/setup.sh)")


def features(bootstrap: str, *args: str) -> str:
    done = subprocess.run(
        ["java", "-cp", CLASSPATH.read_text().strip(), "org.apache.kafka.tools.FeatureCommand",
         "--bootstrap-server", bootstrap, *args],
        capture_output=True, text=True, timeout=120)
    out = "\n".join(line for line in (done.stdout + done.stderr).splitlines()
                    if "SLF4J" not in line and "deprecated" not in line)
    return out.strip()


def levels(bootstrap: str) -> dict[str, str]:
    """Feature -> FinalizedVersionLevel from `describe`, for the features both brokers serve."""
    out = {}
    for m in re.finditer(r"Feature: (\S+)\s.*?FinalizedVersionLevel: (\S+)",
                         features(bootstrap, "describe")):
        out[m.group(1)] = m.group(2)
    out.pop("eligible.leader.replicas.version", None)  # not supported by Odradek
    return out


def transactional_round(bootstrap: str, topic: str, tid: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"v")
    p.commit_transaction(30)


def test_kafka_features_tool(start_broker: StartBroker, tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data")
    boot = broker.bootstrap
    assert levels(boot) == {"group.version": "1", "kraft.version": "0",
                            "metadata.version": "4.4-IV2", "share.version": "2",
                            "streams.version": "1", "transaction.version": "2"}
    assert features(boot, "downgrade", "--feature", "transaction.version=1") == (
        "transaction.version was downgraded to 1.")
    assert features(boot, "upgrade", "--feature", "transaction.version=2", "--dry-run") == (
        "transaction.version can be upgraded to 2.")
    assert features(boot, "upgrade", "--feature", "transaction.version=3") == (
        "Could not upgrade transaction.version to 3. The update failed for all features since "
        "the following feature had an error: Invalid update version 3 for feature "
        "transaction.version. Local controller 1 only supports versions 0-2\n"
        "1 out of 1 operation(s) failed.")
    assert features(boot, "downgrade", "--feature", "metadata.version=21") == (
        "Could not downgrade metadata.version to 21. The update failed for all features since "
        "the following feature had an error: Unsupported metadata.version downgrade from 33 "
        "to 21. Refusing to perform the requested downgrade because it might delete metadata "
        "information.\n1 out of 1 operation(s) failed.")
    assert features(boot, "upgrade", "--feature", "foo.version=1").startswith(
        "Could not upgrade foo.version to 1. The update failed for all features since the "
        "following feature had an error: Invalid update version 1 for feature foo.version. "
        "Local controller 1 does not support this feature.")
    assert features(boot, "downgrade", "--feature", "streams.version=0") == (
        "streams.version was downgraded to 0.")
    assert levels(boot)["transaction.version"] == "1"
    assert levels(boot)["streams.version"] == "0"
    topic = topic_name("features")
    create_topic(boot, topic, 1)
    transactional_round(boot, topic, "tx-tv1")
    broker.restart()
    assert levels(broker.bootstrap)["transaction.version"] == "1"
    assert levels(broker.bootstrap)["streams.version"] == "0"
    out = features(broker.bootstrap, "upgrade", "--feature", "transaction.version=2",
                   "--feature", "streams.version=1")
    assert sorted(out.splitlines()) == [  # the tool prints them in hash order
        "streams.version was upgraded to 1.", "transaction.version was upgraded to 2."]
    transactional_round(broker.bootstrap, topic, "tx-tv2")


def quorum(bootstrap: str, *args: str) -> str:
    done = subprocess.run(
        ["java", "-cp", CLASSPATH.read_text().strip(),
         "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server", bootstrap,
         "describe", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_kafka_metadata_quorum_tool(start_broker: StartBroker, tmp_path: Path) -> None:
    """One combined controller+broker node: the leader and only voter, no observers."""
    broker = start_broker(tmp_path / "data")
    status = dict(line.split(":", 1) for line in quorum(broker.bootstrap, "--status").splitlines()
                  if ":" in line)
    assert status["LeaderId"].strip() == "1"
    assert int(status["LeaderEpoch"]) >= 1
    assert status["MaxFollowerLag"].strip() == "0"
    assert status["CurrentVoters"].strip().startswith('[{"id": 1, "endpoints": [')
    assert status["CurrentObservers"].strip() == "[]"
    rows = [line.split() for line in quorum(broker.bootstrap, "--replication").splitlines()]
    assert rows[0][:3] == ["NodeId", "DirectoryId", "LogEndOffset"]
    assert [(r[0], r[1], r[3], r[-1]) for r in rows[1:]] == [
        ("1", "AAAAAAAAAAAAAAAAAAAAAA", "0", "Leader")]


def configs(bootstrap: str, *args: str) -> str:
    done = subprocess.run(
        ["java", "-cp", CLASSPATH.read_text().strip(), "org.apache.kafka.tools.ConfigCommand",
         "--bootstrap-server", bootstrap, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_config_resources_are_listed_for_the_tools(start_broker: StartBroker,
                                                   tmp_path: Path) -> None:
    """kafka-configs.sh --describe without a name lists the groups that have configs
    (ListConfigResources), and kafka-client-metrics.sh --list answers (none here)."""
    broker = start_broker(tmp_path / "data")
    boot = broker.bootstrap
    configs(boot, "--alter", "--entity-type", "groups", "--entity-name", "g1",
            "--add-config", "consumer.session.timeout.ms=50000")
    out = configs(boot, "--describe", "--entity-type", "groups")
    assert out.splitlines()[0] == "Dynamic configs for group g1 are:"
    assert "consumer.session.timeout.ms=50000 sensitive=false" in out
    assert configs(boot, "--describe", "--entity-type", "client-metrics").strip() == ""
    done = subprocess.run(
        ["java", "-cp", CLASSPATH.read_text().strip(), "org.apache.kafka.tools.ClientMetricsCommand",
         "--bootstrap-server", boot, "--list"], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, ""), done.stderr


def test_cluster_acls_guard_the_three_apis(start_broker: StartBroker, tmp_path: Path) -> None:
    """ListConfigResources needs CLUSTER DESCRIBE_CONFIGS, DescribeQuorum CLUSTER DESCRIBE,
    UpdateFeatures CLUSTER ALTER: each answers CLUSTER_AUTHORIZATION_FAILED at the top. The
    cluster stays allowed for everything else (ANONYMOUS is also the oracle's inter-broker
    principal: once an ACL names the cluster, allow.everyone.if.no.acl.found stops covering
    it)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )
    from it_support import admin

    from compat_tests.probing import Conn
    from odradek.wire._generated.describe_quorum import (
        DescribeQuorumRequest,
        DescribeQuorumResponse,
    )
    from odradek.wire._generated.list_config_resources import (
        ListConfigResourcesRequest,
        ListConfigResourcesResponse,
    )
    from odradek.wire._generated.update_features import (
        UpdateFeaturesRequest,
        UpdateFeaturesResponse,
    )

    broker = start_broker(tmp_path / "data", {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true"})
    client = admin(broker.bootstrap)

    def cluster_acl(op: AclOperation, kind: AclPermissionType) -> AclBinding:
        return AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL,
                          "User:ANONYMOUS", "*", op, kind)

    acls = [cluster_acl(AclOperation.ALL, AclPermissionType.ALLOW)] + [
        cluster_acl(op, AclPermissionType.DENY)
        for op in (AclOperation.DESCRIBE_CONFIGS, AclOperation.DESCRIBE, AclOperation.ALTER)]
    for f in client.create_acls(acls, request_timeout=10).values():
        f.result(10)
    conn = Conn(int(broker.bootstrap.rsplit(":", 1)[1]))
    try:
        listed = conn.call(74, 1, ListConfigResourcesRequest(resource_types=[]),
                           ListConfigResourcesResponse)
        assert (listed.error_code, listed.config_resources) == (31, [])
        quorum_answer = conn.call(55, 2, DescribeQuorumRequest(topics=[
            DescribeQuorumRequest.TopicData(topic_name="__cluster_metadata", partitions=[
                DescribeQuorumRequest.PartitionData(partition_index=0)])]),
            DescribeQuorumResponse)
        assert (quorum_answer.error_code, quorum_answer.topics) == (31, [])
        updated = conn.call(57, 2, UpdateFeaturesRequest(timeout_ms=10000, feature_updates=[
            UpdateFeaturesRequest.FeatureUpdateKey(feature="transaction.version",
                                                   max_version_level=1, upgrade_type=2)]),
            UpdateFeaturesResponse)
        assert updated.error_code == 31
    finally:
        conn.close()
