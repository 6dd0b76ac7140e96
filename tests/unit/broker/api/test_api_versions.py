"""ApiVersions advertises exactly the handler registry's ranges, pinned here.

The ranges come from `registry.HANDLERS`, each capped at the api's highest stable version in
the generated `API_SPECS`; regenerating the codec from newer specs (more versions, other
versions marked unstable) must not change them: a handler's range moves only when its
registry entry does, and then this table with it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from admin_testutil import call, open_broker

from odradek.broker.api.api_versions import unsupported_version_response
from odradek.broker.broker import Broker
from odradek.broker.registry import HANDLERS, advertised
from odradek.config import ConfigError
from odradek.wire import API_SPECS, ApiKey, ErrorCode
from odradek.wire._generated.api_versions import ApiVersionsRequest, ApiVersionsResponse

ADVERTISED = [
    (0, 3, 13), (1, 4, 18), (2, 0, 11), (3, 0, 13), (8, 0, 10), (9, 0, 10), (10, 0, 6),
    (11, 0, 9), (12, 0, 4), (13, 0, 5), (14, 0, 5), (15, 0, 6), (16, 0, 5), (17, 0, 1), (18, 0, 5),
    (19, 0, 7), (20, 0, 6), (21, 0, 2), (22, 0, 5), (23, 0, 4), (24, 0, 5), (25, 0, 4),
    (26, 0, 5), (28, 0, 6), (29, 0, 3), (30, 0, 3), (31, 0, 3), (32, 0, 4), (33, 0, 2),
    (35, 0, 5), (36, 0, 2), (37, 0, 3), (42, 0, 3), (43, 0, 2), (44, 0, 1), (47, 0, 0), (48, 0, 1), (49, 0, 1), (50, 0, 0), (51, 0, 0), (55, 0, 2), (57, 0, 2), (60, 0, 2), (61, 0, 0),
    (65, 0, 0), (66, 0, 2), (68, 0, 1), (69, 0, 1), (74, 0, 1), (75, 0, 0),
    (76, 1, 1), (77, 1, 1), (78, 1, 2), (79, 1, 2), (88, 0, 1), (89, 0, 1), (90, 0, 1),
    (91, 0, 0), (92, 0, 0),
]


def test_the_advertised_ranges_are_the_pinned_ones() -> None:
    assert list(advertised()) == ADVERTISED


def test_no_unstable_version_is_advertised() -> None:
    for key, _low, high in advertised():
        assert high <= API_SPECS[key].max_stable_version, key
    # InitProducerId v6 is unstable in Kafka 4.4's specs: the handler's 0-5 stays 0-5.
    assert API_SPECS[ApiKey.INIT_PRODUCER_ID].latest_version_unstable
    assert HANDLERS[ApiKey.INIT_PRODUCER_ID].max_version == 5


def test_api_versions_answers_with_the_pinned_ranges_at_every_version(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    request = ApiVersionsRequest(client_software_name="test", client_software_version="1.0")
    for version in range(HANDLERS[ApiKey.API_VERSIONS].max_version + 1):
        response = call(broker, ApiKey.API_VERSIONS, version, request)
        assert response.error_code == ErrorCode.NONE
        got = [(a.api_key, a.min_version, a.max_version) for a in response.api_keys]
        assert got == ADVERTISED, version


def test_the_unsupported_version_answer_lists_the_same_ranges() -> None:
    response = unsupported_version_response()
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(a.api_key, a.min_version, a.max_version) for a in response.api_keys] == ADVERTISED


# -- feature levels (KIP-584), as a Kafka 4.4.0 broker reports them --------------------------


def _features(response: ApiVersionsResponse) -> tuple[list[tuple[str, int, int]],
                                                      dict[str, tuple[int, int]]]:
    supported = sorted((f.name, f.min_version, f.max_version) for f in response.supported_features)
    finalized = {f.name: (f.min_version_level, f.max_version_level)
                 for f in response.finalized_features}
    return supported, finalized


def test_v4_reports_the_supported_ranges_and_finalizes_transaction_version_2(
        tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    request = ApiVersionsRequest(client_software_name="test", client_software_version="1.0")
    response = call(broker, ApiKey.API_VERSIONS, 4, request)
    supported, finalized = _features(response)
    assert supported == [("group.version", 0, 1), ("kraft.version", 0, 1),
                         ("metadata.version", 7, 33), ("share.version", 0, 2),
                         ("streams.version", 0, 1), ("transaction.version", 0, 2)]
    # group.version 1: KIP-848 consumer groups, finalized as Kafka 4.x finalizes it;
    # share.version 2 and streams.version 1, as a Kafka 4.4 cluster formatted with defaults.
    assert finalized == {"group.version": (1, 1), "metadata.version": (33, 33),
                         "share.version": (2, 2), "streams.version": (1, 1),
                         "transaction.version": (2, 2)}
    assert response.finalized_features_epoch > 0
    assert response.zk_migration_ready is False


def test_v3_leaves_out_supported_ranges_starting_at_0(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    request = ApiVersionsRequest(client_software_name="test", client_software_version="1.0")
    supported, finalized = _features(call(broker, ApiKey.API_VERSIONS, 3, request))
    assert supported == [("metadata.version", 7, 33)]  # KAFKA-17011, as Kafka 4.4 answers v3
    assert finalized["transaction.version"] == (2, 2)


def test_transaction_version_1_is_selected_by_the_broker_setting(tmp_path: Path) -> None:
    broker = open_broker(tmp_path, **{"transaction.version": "1"})
    request = ApiVersionsRequest(client_software_name="test", client_software_version="1.0")
    _, finalized = _features(call(broker, ApiKey.API_VERSIONS, 4, request))
    assert finalized == {"group.version": (1, 1), "metadata.version": (33, 33),
                         "share.version": (2, 2), "streams.version": (1, 1),
                         "transaction.version": (1, 1)}
    broker0 = open_broker(tmp_path / "zero", **{"transaction.version": "0"})
    _, finalized0 = _features(call(broker0, ApiKey.API_VERSIONS, 4, request))
    assert "transaction.version" not in finalized0  # level 0 is never listed


def test_a_transaction_version_beyond_2_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"transaction\.version"):
        open_broker(tmp_path, **{"transaction.version": "3"})


def test_features_before_v3_and_in_the_unsupported_version_answer_are_absent(
        tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    request = ApiVersionsRequest(client_software_name="test", client_software_version="1.0")
    response = call(broker, ApiKey.API_VERSIONS, 2, request)
    assert response.finalized_features == [] or response.finalized_features is None
    unsupported = unsupported_version_response()
    assert unsupported.finalized_features_epoch == -1 and not unsupported.finalized_features


# -- v5: the cluster and node the client means to reach (KIP-1242), as Kafka 4.4 answers -----


def _v5(broker: Broker, cluster_id: str | None, node_id: int) -> ApiVersionsResponse:
    request = ApiVersionsRequest(client_software_name="test", client_software_version="1.0",
                                 cluster_id=cluster_id, node_id=node_id)
    return call(broker, ApiKey.API_VERSIONS, 5, request)


def test_v5_answers_normally_for_no_target_or_this_one(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    for cluster_id, node_id in [(None, -1), (broker.cluster.cluster_id, 1)]:
        response = _v5(broker, cluster_id, node_id)
        assert response.error_code == ErrorCode.NONE
        assert [(a.api_key, a.min_version, a.max_version) for a in response.api_keys] == ADVERTISED
        assert response.finalized_features


def test_v5_another_cluster_or_node_is_rebootstrap_required(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    for cluster_id, node_id in [("AAAAAAAAAAAAAAAAAAAAAA", 1), (broker.cluster.cluster_id, 7),
                                ("", 1)]:
        response = _v5(broker, cluster_id, node_id)
        assert response.error_code == ErrorCode.REBOOTSTRAP_REQUIRED, (cluster_id, node_id)
        assert response.api_keys == [] and not response.supported_features


def test_v5_cluster_id_without_node_id_or_the_reverse_is_invalid(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    for cluster_id, node_id in [(broker.cluster.cluster_id, -1), (None, 1),
                                ("AAAAAAAAAAAAAAAAAAAAAA", -1)]:
        response = _v5(broker, cluster_id, node_id)
        assert response.error_code == ErrorCode.INVALID_REQUEST, (cluster_id, node_id)
        assert response.api_keys == []


def test_a_bad_software_name_is_invalid_with_no_api_list_before_the_v5_check(
        tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    for version in (3, 4, 5):
        request = ApiVersionsRequest(client_software_name="-bad", client_software_version="1",
                                     cluster_id="AAAAAAAAAAAAAAAAAAAAAA", node_id=1)
        response = call(broker, ApiKey.API_VERSIONS, version, request)
        assert response.error_code == ErrorCode.INVALID_REQUEST
        assert response.api_keys == []


def test_streams_apis_are_advertised_only_while_streams_version_is_finalized() -> None:
    from odradek.broker.features import Features
    from odradek.broker.registry import advertised
    on = {k for k, _, _ in advertised(Features.finalize(1).levels)}
    off = {k for k, _, _ in advertised(Features.finalize(1, streams_version=0).levels)}
    streams = {ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE}
    assert streams <= on and not streams & off and on - off == streams
