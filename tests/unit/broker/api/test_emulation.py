"""Kafka release emulation (issue #16): the release tables extracted from Kafka's specs, and
ApiVersions, dispatch and the feature levels of an emulated broker."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from admin_testutil import call, open_broker

from odradek.broker.connection import CloseConnection, IncomingRequest
from odradek.broker.context import ClientInfo
from odradek.broker.dispatch import dispatch
from odradek.broker.emulation import api_ranges, finalizes_features
from odradek.broker.kafka_releases import RELEASES, SOURCES
from odradek.broker.registry import advertised
from odradek.config import BrokerConfig, ConfigError
from odradek.config.broker import EMULATED_RELEASES
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.api_versions import ApiVersionsRequest

SPECS = Path(__file__).resolve().parents[4] / "tools/codegen/specs/kafka-4.4.0/message"


def test_the_config_lists_the_releases_the_table_has() -> None:
    assert tuple(RELEASES) == EMULATED_RELEASES == tuple(SOURCES)


def test_known_ranges_of_old_releases() -> None:
    # Facts of those releases' specs (and of their brokers' ApiVersions answers).
    assert RELEASES["2.8"][ApiKey.PRODUCE] == (0, 9)
    assert RELEASES["2.8"][ApiKey.FETCH] == (0, 12)
    assert RELEASES["2.8"][ApiKey.METADATA] == (0, 11)
    assert ApiKey.DESCRIBE_CLUSTER in RELEASES["2.8"]  # KIP-700, 2.8
    assert ApiKey.CONSUMER_GROUP_HEARTBEAT not in RELEASES["3.6"]
    assert ApiKey.CONSUMER_GROUP_HEARTBEAT not in api_ranges("3.8")  # a preview in 3.7-3.8
    assert ApiKey.CONSUMER_GROUP_HEARTBEAT in api_ranges("4.4")
    assert RELEASES["3.8"][ApiKey.PRODUCE] == (0, 11)
    assert RELEASES["4.4"][ApiKey.PRODUCE][0] == 3  # KIP-896 removed v0-2 in 4.0


def test_4_4_from_the_specs_has_odradek_s_maxima_and_kafka_s_floors() -> None:
    ours, kafka = api_ranges(""), api_ranges("4.4")
    assert dict(ours) == {k: (lo, hi) for k, lo, hi in advertised()}
    assert set(kafka) == set(ours)
    assert all(kafka[k][1] == ours[k][1] and kafka[k][0] >= ours[k][0] for k in ours)
    # KIP-896: 4.0 dropped old versions Odradek still serves, e.g. ListOffsets v0.
    assert kafka[ApiKey.LIST_OFFSETS] == (1, 11) and ours[ApiKey.LIST_OFFSETS] == (0, 11)


def test_an_emulated_range_is_the_intersection() -> None:
    ranges = api_ranges("2.8")
    assert ranges[ApiKey.PRODUCE] == (3, 9)  # Odradek's floor, 2.8's max
    assert ranges[ApiKey.FETCH] == (4, 12)
    assert ranges[ApiKey.API_VERSIONS] == (0, 3)
    assert ApiKey.CONSUMER_GROUP_HEARTBEAT not in ranges
    assert ApiKey.DESCRIBE_TOPIC_PARTITIONS not in ranges  # 3.8's KIP-966
    assert not finalizes_features("3.8") and finalizes_features("4.4") and finalizes_features("")


def test_a_bad_release_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="Kafka releases that can be emulated"):
        BrokerConfig({"emulate.kafka.version": "2.9"})


def test_api_versions_of_an_emulated_2_8_broker(tmp_path: Path) -> None:
    broker = open_broker(tmp_path, **{"emulate.kafka.version": "2.8"})
    resp = call(broker, ApiKey.API_VERSIONS, 3, ApiVersionsRequest(
        client_software_name="t", client_software_version="1"))
    got = {a.api_key: (a.min_version, a.max_version) for a in resp.api_keys}
    assert got == dict(api_ranges("2.8"))
    assert resp.finalized_features == []  # no transaction.version 2, no group.version
    assert broker.features.transaction_version == 0


def _send_raw(broker: object, api_key: int, version: int, frame: bytes) -> object:
    incoming = IncomingRequest(api_key, version, 1, "t", bytearray(frame), 0)

    async def run() -> object:
        return await dispatch(broker.context(ClientInfo("127.0.0.1:1", "PLAINTEXT"),  # type: ignore[attr-defined]
                                             incoming), incoming)

    return anyio.run(run)


def test_a_version_above_the_emulated_max_is_answered_as_kafka_does(tmp_path: Path) -> None:
    broker = open_broker(tmp_path, **{"emulate.kafka.version": "2.8"})
    # Produce v10 is 3.0's: a 2.8 broker closes the connection.
    with pytest.raises(CloseConnection, match="unsupported version 10"):
        _send_raw(broker, ApiKey.PRODUCE, 10, b"")
    # ApiVersions v4: the v0-form UNSUPPORTED_VERSION answer with 2.8's list (KIP-511).
    out = _send_raw(broker, ApiKey.API_VERSIONS, 4, b"")
    data = b"".join(bytes(p) for p in out)  # type: ignore[attr-defined]
    assert int.from_bytes(data[8:10], "big", signed=True) == ErrorCode.UNSUPPORTED_VERSION
    # ConsumerGroupHeartbeat does not exist in 2.8.
    with pytest.raises(CloseConnection, match="unsupported api 68"):
        _send_raw(broker, ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, b"")


def test_the_4_4_table_is_what_the_tool_extracts_from_the_specs() -> None:
    from tools.kafka_releases import from_dir

    assert from_dir(SPECS) == RELEASES["4.4"]
