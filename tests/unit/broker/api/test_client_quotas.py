"""DescribeClientQuotas / AlterClientQuotas on the broker, quotas.json across a reopen, and
enforcement through dispatch: throttle_time_ms in the response, the connection's mute time,
a throttled fetch answered without records, nothing counted while no quota is set."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from admin_testutil import call, dispatched, open_broker, produce

from odradek.broker.broker import Broker
from odradek.broker.context import ClientInfo
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.alter_client_quotas import AlterClientQuotasRequest as A
from odradek.wire._generated.describe_client_quotas import DescribeClientQuotasRequest as D
from odradek.wire._generated.fetch import FetchRequest, FetchResponse
from odradek.wire._generated.produce import ProduceRequest, ProduceResponse
from odradek.wire.records import Record, build_batch


def _alter(broker: Broker, version: int, entity: dict[str, str | None], key: str,
           value: float | None, validate_only: bool = False) -> Any:
    return call(broker, ApiKey.ALTER_CLIENT_QUOTAS, version, A(validate_only=validate_only,
        entries=[A.EntryData(
            entity=[A.EntityData(entity_type=t, entity_name=n) for t, n in entity.items()],
            ops=[A.OpData(key=key, value=value or 0.0, remove=value is None)])]))


def _describe(broker: Broker, version: int, *components: tuple[str, int, str | None],
              strict: bool = False) -> Any:
    return call(broker, ApiKey.DESCRIBE_CLIENT_QUOTAS, version, D(strict=strict, components=[
        D.ComponentData(entity_type=t, match_type=m, match=s) for t, m, s in components]))


@pytest.mark.parametrize("version", [0, 1])
def test_alter_describe_and_reopen(tmp_path: Path, version: int) -> None:
    broker = open_broker(tmp_path)
    done = _alter(broker, version, {"user": "alice", "client-id": None},
                  "producer_byte_rate", 1024)
    assert [(e.error_code, e.error_message) for e in done.entries] == [(ErrorCode.NONE, None)]
    assert sorted((x.entity_type, x.entity_name) for x in done.entries[0].entity) == [
        ("client-id", None), ("user", "alice")]
    assert _alter(broker, version, {"user": "bob"}, "producer_byte_rate", 5,
                  validate_only=True).entries[0].error_code == ErrorCode.NONE
    bad = _alter(broker, version, {"user": "bob"}, "bogus", 5)
    assert [(e.error_code, e.error_message) for e in bad.entries] == [
        (ErrorCode.INVALID_REQUEST, "Invalid configuration key bogus")]
    broker.close()

    broker = open_broker(tmp_path)  # read back from quotas.json
    described = _describe(broker, version, ("user", 0, "alice"))
    assert described.error_code == ErrorCode.NONE
    assert [([(x.entity_type, x.entity_name) for x in e.entity],
             [(v.key, v.value) for v in e.values]) for e in described.entries] == [
        ([("client-id", None), ("user", "alice")], [("producer_byte_rate", 1024.0)])]
    assert _describe(broker, version, ("user", 0, "bob")).entries == []
    failed = _describe(broker, version, ("group", 2, None))
    assert (failed.error_code, failed.error_message, failed.entries) == (
        ErrorCode.UNSUPPORTED_VERSION, "Unsupported entity type group", None)


def test_the_cluster_permissions_kafka_asks(tmp_path: Path) -> None:
    broker = open_broker(tmp_path, **{
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"})
    denied = _alter(broker, 1, {"user": "a"}, "producer_byte_rate", 5)
    assert denied.entries[0].error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert _describe(broker, 1).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert not broker.quotas.configs.enabled("producer_byte_rate")


def _dispatch(broker: Broker, client: ClientInfo, api_key: int, version: int, body: Any,
              response_cls: Any, client_id: str = "app") -> Any:
    out = dispatched(broker, client, api_key, version, body, client_id)
    assert out is None or isinstance(out, response_cls)
    return out


def _produce(topic: str, size: int, acks: int = -1) -> ProduceRequest:
    batch = build_batch([Record(0, 0, None, b"x" * size, [])], base_timestamp=0)
    return ProduceRequest(acks=acks, timeout_ms=1000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.PartitionProduceData(index=0, records=bytes(batch))])])


def test_produce_over_quota_is_throttled_and_muted(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    client = ClientInfo("127.0.0.1:1", "PLAINTEXT")
    first = _dispatch(broker, client, ApiKey.PRODUCE, 9, _produce("t", 500), ProduceResponse)
    assert first.throttle_time_ms == 0 and client.throttled_until == 0.0  # no quota yet
    _alter(broker, 1, {"client-id": "app"}, "producer_byte_rate", 1000)
    ok = _dispatch(broker, client, ApiKey.PRODUCE, 9, _produce("t", 5000), ProduceResponse)
    assert ok.throttle_time_ms == 0 and client.throttled_until == 0.0
    before = time.monotonic()
    over = _dispatch(broker, client, ApiKey.PRODUCE, 9, _produce("t", 20_000), ProduceResponse)
    assert over.responses[0].partition_responses[0].error_code == ErrorCode.NONE  # appended
    # ~25 kB over 10 s against 1,000/s: ~15 s
    assert 14_000 < over.throttle_time_ms < 16_500
    assert client.throttled_until == pytest.approx(before + over.throttle_time_ms / 1000, abs=1)
    # another client id is not throttled
    other = ClientInfo("127.0.0.1:2", "PLAINTEXT")
    free = _dispatch(broker, other, ApiKey.PRODUCE, 9, _produce("t", 20_000), ProduceResponse,
                     client_id="other")
    assert free.throttle_time_ms == 0 and other.throttled_until == 0.0
    # acks=0: no response, the connection still muted
    muted = ClientInfo("127.0.0.1:3", "PLAINTEXT")
    assert _dispatch(broker, muted, ApiKey.PRODUCE, 9, _produce("t", 1000, acks=0),
                     ProduceResponse) is None
    assert muted.throttled_until > time.monotonic()


def _fetch(max_bytes: int = 64 << 20) -> FetchRequest:
    return FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=0,
                        session_id=0, session_epoch=-1, topics=[FetchRequest.FetchTopic(
                            topic="t", partitions=[FetchRequest.FetchPartition(
                                partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])


def test_fetch_max_bytes_is_capped_by_one_quota_window(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    for _ in range(30):
        produce(broker, "t", 0, [1, 2, 3, 4, 5, 6, 7, 8])
    client = ClientInfo("127.0.0.1:1", "PLAINTEXT")
    whole = _dispatch(broker, client, ApiKey.FETCH, 12, _fetch(), FetchResponse)
    assert len(whole.responses[0].partitions[0].records) > 2000
    _alter(broker, 1, {"user": "ANONYMOUS"}, "consumer_byte_rate", 100)
    capped = _dispatch(broker, client, ApiKey.FETCH, 12, _fetch(), FetchResponse)
    # max_bytes is capped at 100 B/s * 10 windows: whole batches up to 1,000 bytes, so the
    # answer (with its headers a little over) is throttled for a moment, not for the
    # (3,000 / 10 - 100) / 100 * 10 s = 20 s the whole backlog would cost
    assert 0 < capped.throttle_time_ms < 2000


def test_fetch_over_quota_is_answered_without_records(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    broker.cluster.create_topic("t", 1, {})
    for _ in range(30):
        produce(broker, "t", 0, [1, 2, 3, 4, 5, 6, 7, 8])
    client = ClientInfo("127.0.0.1:1", "PLAINTEXT")
    size = len(_dispatch(broker, client, ApiKey.FETCH, 12, _fetch(), FetchResponse)
               .responses[0].partitions[0].records)
    # the rate is bytes over the 10 s padded span: under quota for three fetches, not four
    bound = int(size * 0.35)
    assert _alter(broker, 1, {"user": "ANONYMOUS"}, "consumer_byte_rate",
                  bound).entries[0].error_code == ErrorCode.NONE
    for _ in range(3):
        got = _dispatch(broker, client, ApiKey.FETCH, 12, _fetch(), FetchResponse)
        assert got.throttle_time_ms == 0 and got.responses[0].partitions[0].records
        assert client.throttled_until == 0.0
    over = _dispatch(broker, client, ApiKey.FETCH, 12, _fetch(), FetchResponse)
    assert over.throttle_time_ms > 0 and over.responses == []
    assert over.error_code == ErrorCode.NONE
    assert client.throttled_until > time.monotonic()
    # the throttled fetch's bytes were taken back: the rate is where three fetches left it
    rate = broker.quotas.manager._rates[("consumer_byte_rate", ("ANONYMOUS", ""))]
    assert rate.measure(broker.now_ms()) < bound


@pytest.mark.parametrize(("num", "seconds"), [(11, 1), (2, 5), (4, 2)])
def test_quota_window_settings_set_the_span_the_rate_is_measured_over(
        tmp_path: Path, num: int, seconds: int) -> None:
    broker = open_broker(tmp_path, **{"quota.window.num": str(num),
                                      "quota.window.size.seconds": str(seconds)})
    broker.cluster.create_topic("t", 1, {})
    _alter(broker, 1, {"client-id": "app"}, "producer_byte_rate", 100)
    client = ClientInfo("127.0.0.1:1", "PLAINTEXT")
    request = _produce("t", 20_000)
    size = len(b"".join(bytes(p) for p in request.encode(9)))
    got = _dispatch(broker, client, ApiKey.PRODUCE, 9, request, ProduceResponse)
    span_ms = (num - 1) * seconds * 1000  # a fresh rate is padded to num - 1 windows
    header = 2 + 2 + 4 + 2 + len("app") + 1  # the v2 request header, no size prefix
    rate = (size + header) / (span_ms / 1000)
    assert got.throttle_time_ms == pytest.approx((rate - 100) / 100 * span_ms, abs=2)


def test_request_percentage_throttles_any_api_for_at_most_one_window(tmp_path: Path) -> None:
    from odradek.wire._generated.metadata import MetadataRequest, MetadataResponse

    broker = open_broker(tmp_path)
    # 0.001% of a thread over the padded 10 s: 100 µs of handler time
    _alter(broker, 1, {"user": "ANONYMOUS", "client-id": "app"}, "request_percentage", 0.001)
    client = ClientInfo("127.0.0.1:1", "PLAINTEXT")
    throttles = []
    for _ in range(20):
        got = _dispatch(broker, client, ApiKey.METADATA, 12, MetadataRequest(topics=None),
                        MetadataResponse)
        throttles.append(got.throttle_time_ms)
    assert max(throttles) == 1000  # bounded by quota.window.size.seconds
    assert client.throttled_until > 0
    other = ClientInfo("127.0.0.1:2", "PLAINTEXT")
    got = _dispatch(broker, other, ApiKey.METADATA, 12, MetadataRequest(topics=None),
                    MetadataResponse, client_id="other")
    assert got.throttle_time_ms == 0 and other.throttled_until == 0.0
