"""Kafka release emulation (issue #16): the release tables extracted from Kafka's specs, and
ApiVersions, dispatch and the feature levels of an emulated broker."""

from __future__ import annotations

import zipfile
from pathlib import Path

import anyio
import pytest
from admin_testutil import call, open_broker

from odradek.broker.connection import CloseConnection, IncomingRequest
from odradek.broker.context import ClientInfo
from odradek.broker.dispatch import dispatch
from odradek.broker.emulation import api_ranges, finalized_levels, finalizes_features
from odradek.broker.kafka_releases import RELEASES, SOURCES
from odradek.broker.registry import advertised
from odradek.config import BrokerConfig, ConfigError
from odradek.config.broker import EMULATED_RELEASES
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.api_versions import ApiVersionsRequest

SPECS = Path(__file__).resolve().parents[4] / "tools/codegen/specs/kafka-4.4.0/message"
M2 = Path.home() / ".m2/repository/org/apache/kafka/kafka-clients"


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


def test_known_ranges_of_3_9() -> None:
    # kafka-clients 3.9.1's specs: the last release with the legacy versions and ZooKeeper.
    assert RELEASES["3.9"][ApiKey.PRODUCE] == (0, 11)
    assert RELEASES["3.9"][ApiKey.FETCH] == (0, 17)
    assert ApiKey.CONSUMER_GROUP_HEARTBEAT not in api_ranges("3.9")  # still a preview
    assert not finalizes_features("3.9")


def test_known_ranges_of_4_0() -> None:
    # KIP-896: 4.0 dropped Produce v0-2 and Fetch v0-3; KIP-848 generally available.
    assert RELEASES["4.0"][ApiKey.PRODUCE] == (3, 12)
    assert RELEASES["4.0"][ApiKey.FETCH] == (4, 17)
    assert ApiKey.CONSUMER_GROUP_HEARTBEAT in api_ranges("4.0")
    assert ApiKey.SHARE_FETCH not in RELEASES["4.0"]  # unstable in 4.0's specs
    assert ApiKey.STREAMS_GROUP_HEARTBEAT not in RELEASES["4.0"]


def test_known_ranges_of_4_1() -> None:
    assert RELEASES["4.1"][ApiKey.PRODUCE] == (3, 13)
    assert RELEASES["4.1"][ApiKey.FETCH] == (4, 18)
    assert RELEASES["4.1"][ApiKey.SHARE_FETCH] == (1, 1)
    assert ApiKey.STREAMS_GROUP_HEARTBEAT not in RELEASES["4.1"]
    # share groups are a preview in 4.1: share.version is not finalized, the apis not served
    levels = finalized_levels("4.1")
    assert levels["share.version"] == 0 and levels["metadata.version"] == 27
    assert ApiKey.SHARE_FETCH not in api_ranges("4.1", {"share.version": 0})


def test_known_ranges_of_4_2() -> None:
    assert RELEASES["4.2"][ApiKey.PRODUCE] == (3, 13)
    assert RELEASES["4.2"][ApiKey.SHARE_FETCH] == (1, 2)
    assert RELEASES["4.2"][ApiKey.STREAMS_GROUP_HEARTBEAT] == (0, 0)
    levels = finalized_levels("4.2")
    assert (levels["share.version"], levels["streams.version"]) == (1, 1)


def test_known_ranges_of_4_3() -> None:
    assert RELEASES["4.3"][ApiKey.PRODUCE] == (3, 13)
    assert RELEASES["4.3"][ApiKey.STREAMS_GROUP_HEARTBEAT] == (0, 0)
    assert RELEASES["4.4"][ApiKey.STREAMS_GROUP_HEARTBEAT] == (0, 1)
    assert finalized_levels("4.3")["metadata.version"] == 30
    assert finalized_levels("4.4") == {} == finalized_levels("")  # Odradek's defaults


@pytest.mark.parametrize(("release", "finalized", "share", "streams"), [
    ("4.0", {"metadata.version": 25, "transaction.version": 2, "group.version": 1}, False, False),
    ("4.1", {"metadata.version": 27, "transaction.version": 2, "group.version": 1}, False, False),
    ("4.2", {"metadata.version": 29, "transaction.version": 2, "group.version": 1,
             "share.version": 1, "streams.version": 1}, True, True),
])
def test_api_versions_of_an_emulated_4_x_broker(tmp_path: Path, release: str,
                                                finalized: dict[str, int], share: bool,
                                                streams: bool) -> None:
    broker = open_broker(tmp_path, **{"emulate.kafka.version": release})
    resp = call(broker, ApiKey.API_VERSIONS, 3, ApiVersionsRequest(
        client_software_name="t", client_software_version="1"))
    got = {a.api_key: (a.min_version, a.max_version) for a in resp.api_keys}
    assert got == dict(broker.api_ranges)
    assert {f.name: f.max_version_level for f in resp.finalized_features} == finalized
    assert (ApiKey.SHARE_FETCH in got) is share
    assert (ApiKey.STREAMS_GROUP_HEARTBEAT in got) is streams
    assert got[ApiKey.PRODUCE] == RELEASES[release][ApiKey.PRODUCE]


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


def test_the_tool_reads_a_jar_s_specs(tmp_path: Path) -> None:
    from tools.kafka_releases import from_jar, jar_release

    jar = tmp_path / "kafka-clients-9.9.1.jar"
    with zipfile.ZipFile(jar, "w") as out:
        out.writestr("common/message/ProduceRequest.json", '// a comment\n{"apiKey": 0, '
                     '"type": "request", "listeners": ["broker"], "validVersions": "3-14", '
                     '"latestVersionUnstable": true}')
        out.writestr("common/message/FetchResponse.json", '{"apiKey": 1, "type": "response"}')
        out.writestr("common/message/VoteRequest.json", '{"apiKey": 52, "type": "request", '
                     '"listeners": ["controller"], "validVersions": "0-2"}')
    assert from_jar(jar) == {0: (3, 13)}
    assert jar_release(jar) == "kafka-clients 9.9.1"


@pytest.mark.parametrize("release", ["3.9", "4.0", "4.1", "4.2", "4.3"])
def test_the_jar_tables_are_what_the_tool_extracts(release: str) -> None:
    from tools.kafka_releases import from_jar

    version = SOURCES[release].removeprefix("kafka-clients ")
    jar = M2 / version / f"kafka-clients-{version}.jar"
    if not jar.exists():
        pytest.skip(f"{jar} is not in the local Maven repository")
    assert from_jar(jar) == RELEASES[release]
