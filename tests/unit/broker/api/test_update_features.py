"""UpdateFeatures (kafka-features.sh upgrade/downgrade). The expected codes and messages are
Apache Kafka 4.4's, recorded from a single-node 4.4.0 broker with raw requests and with
FeatureCommand (tests/integration/test_features.py runs the tool on both brokers)."""

from __future__ import annotations

import uuid
from pathlib import Path

from admin_testutil import call, dispatched, open_broker

from odradek.broker.broker import Broker
from odradek.broker.context import ClientInfo
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.api_versions import ApiVersionsRequest
from odradek.wire._generated.consumer_group_describe import ConsumerGroupDescribeRequest
from odradek.wire._generated.share_group_heartbeat import ShareGroupHeartbeatRequest
from odradek.wire._generated.update_features import UpdateFeaturesRequest

Req = UpdateFeaturesRequest
UPGRADE, SAFE, UNSAFE = 1, 2, 3
CLIENT = ClientInfo("127.0.0.1:50000", "PLAINTEXT")
FAILED = "The update failed for all features since the following feature had an error: "


def update(broker: Broker, *items: tuple[str, int, int], version: int = 2,
           validate_only: bool = False) -> tuple[int, str | None, list[tuple[str, int, str | None]]]:
    keys = []
    for name, level, kind in items:
        key = Req.FeatureUpdateKey(feature=name, max_version_level=level)
        if version == 0:
            key.allow_downgrade = kind != UPGRADE
        else:
            key.upgrade_type = kind
        keys.append(key)
    req = Req(timeout_ms=30000, feature_updates=keys)
    if version >= 1:
        req.validate_only = validate_only
    r = call(broker, ApiKey.UPDATE_FEATURES, version, req)
    return r.error_code, r.error_message, [(x.feature, x.error_code, x.error_message)
                                           for x in r.results or ()]


def finalized(broker: Broker) -> tuple[int, dict[str, int]]:
    r = call(broker, ApiKey.API_VERSIONS, 4,
             ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    return r.finalized_features_epoch, {f.name: f.max_version_level for f in r.finalized_features}


def test_downgrade_and_upgrade_transaction_version(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    try:
        epoch, levels = finalized(broker)
        assert levels["transaction.version"] == 2
        assert update(broker, ("transaction.version", 1, SAFE)) == (0, None, [])
        epoch2, levels = finalized(broker)
        assert levels["transaction.version"] == 1 and epoch2 > epoch
        assert broker.transactions.shard.config.transaction_version == 1
        # v0-1 list each feature on success, with Kafka's "NONE" message
        assert update(broker, ("transaction.version", 2, UPGRADE), version=1) == (
            0, None, [("transaction.version", 0, "NONE")])
        assert finalized(broker)[1]["transaction.version"] == 2
        assert update(broker, ("transaction.version", 0, UNSAFE)) == (0, None, [])
        assert "transaction.version" not in finalized(broker)[1]
    finally:
        broker.close()


def test_refusals_change_nothing(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    try:
        before = finalized(broker)
        cases = [
            (("transaction.version", 1, UPGRADE), "Invalid update version 1 for feature "
             "transaction.version. Can't downgrade the version of this feature without "
             "setting the upgrade type to either safe or unsafe downgrade."),
            (("transaction.version", 1, 9), "Invalid update version 1 for feature "
             "transaction.version. The controller does not support the given upgrade type."),
            (("transaction.version", -1, SAFE), "Invalid update version -1 for feature "
             "transaction.version. A feature version cannot be less than 0."),
            (("transaction.version", 3, UPGRADE), "Invalid update version 3 for feature "
             "transaction.version. Local controller 1 only supports versions 0-2"),
            (("foo.version", 1, UPGRADE), "Invalid update version 1 for feature foo.version. "
             "Local controller 1 does not support this feature."),
            (("metadata.version", 21, SAFE), "Unsupported metadata.version downgrade from 33 "
             "to 21. Refusing to perform the requested downgrade because it might delete "
             "metadata information."),
            (("metadata.version", 20, UNSAFE), "Unsupported metadata.version downgrade from "
             "33 to 20. Unsafe metadata downgrade is not supported in this version."),
            (("metadata.version", 6, SAFE), "Invalid update version 6 for feature "
             "metadata.version. Local controller 1 only supports versions 7-33"),
        ]
        for item, message in cases:
            assert update(broker, item) == (ErrorCode.INVALID_UPDATE_VERSION, FAILED + message, [])
        # all or nothing: a good update next to a refused one is not applied
        code, _, _ = update(broker, ("share.version", 1, SAFE), ("transaction.version", 9, UPGRADE))
        assert code == ErrorCode.INVALID_UPDATE_VERSION
        # v0 has no upgrade type: allow_downgrade is not read, every update is an upgrade
        code, message, _ = update(broker, ("transaction.version", 0, SAFE), version=0)
        assert code == ErrorCode.INVALID_UPDATE_VERSION and "Can't downgrade" in (message or "")
        assert update(broker, ("transaction.version", 1, SAFE), validate_only=True) == (0, None, [])
        assert finalized(broker) == before
        assert update(broker, ("metadata.version", 33, UPGRADE)) == (0, None, [])
    finally:
        broker.close()


def test_levels_survive_a_restart_and_an_explicit_setting_wins(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    try:
        assert update(broker, ("transaction.version", 1, SAFE), ("share.version", 0, SAFE)) == (
            0, None, [])
        epoch = finalized(broker)[0]
    finally:
        broker.close()
    broker = open_broker(tmp_path)
    try:
        epoch2, levels = finalized(broker)
        assert levels.get("transaction.version") == 1 and "share.version" not in levels
        assert epoch2 > epoch
        assert broker.transactions.shard.config.transaction_version == 1
    finally:
        broker.close()
    broker = open_broker(tmp_path, **{"transaction.version": "2"})
    try:
        assert finalized(broker)[1]["transaction.version"] == 2
    finally:
        broker.close()


def test_apis_of_a_feature_at_0_stay_advertised_and_answer_unsupported_version(
        tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    try:
        assert update(broker, ("share.version", 0, SAFE), ("group.version", 0, SAFE)) == (
            0, None, [])
        r = call(broker, ApiKey.API_VERSIONS, 4,
                 ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        keys = {k.api_key for k in r.api_keys}
        assert {ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_HEARTBEAT} <= keys
        hb = dispatched(broker, CLIENT, ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
            group_id="g", member_id=uuid.uuid4().hex[:22], member_epoch=0,
            subscribed_topic_names=["t"]))
        assert (hb.error_code, hb.error_message) == (ErrorCode.UNSUPPORTED_VERSION, None)
        d = dispatched(broker, CLIENT, ApiKey.CONSUMER_GROUP_DESCRIBE, 1,
                 ConsumerGroupDescribeRequest(group_ids=["a", "b"]))
        assert [(g.group_id, g.error_code) for g in d.groups] == [
            ("a", ErrorCode.UNSUPPORTED_VERSION), ("b", ErrorCode.UNSUPPORTED_VERSION)]
        assert update(broker, ("share.version", 2, UPGRADE)) == (0, None, [])
        hb = dispatched(broker, CLIENT, ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
            group_id="g", member_id=uuid.uuid4().hex[:22], member_epoch=0,
            subscribed_topic_names=["t"]))
        assert hb.error_code == ErrorCode.NONE
    finally:
        broker.close()
