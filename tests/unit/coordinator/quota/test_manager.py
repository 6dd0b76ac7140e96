"""The quota manager (issue #13 point 4): rates per matched entity, unrecording, the fetch
cap and the request-percentage bound."""

from __future__ import annotations

from odradek.coordinator.quota.configs import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    Op,
    QuotaConfigs,
)
from odradek.coordinator.quota.manager import QuotaManager


def _manager(pairs: list[tuple[str, str | None]], key: str, value: float) -> QuotaManager:
    q = QuotaConfigs()
    q.alter([(pairs, [Op(key, value)])], validate_only=False)
    return QuotaManager(q, 11, 1)


def test_clients_of_a_user_share_the_users_rate() -> None:
    m = _manager([("user", "alice")], PRODUCER_BYTE_RATE, 1000)
    assert m.record(PRODUCER_BYTE_RATE, "alice", "a", 6000, 0) == 0
    # 12,000 over the padded 10 s: 1,200/s, 20% above: 2 s
    assert m.record(PRODUCER_BYTE_RATE, "alice", "b", 6000, 0) == 2000
    assert m.record(PRODUCER_BYTE_RATE, "bob", "a", 10**9, 0) == 0  # no quota applies


def test_client_ids_under_a_default_have_rates_of_their_own() -> None:
    m = _manager([("client-id", None)], PRODUCER_BYTE_RATE, 1000)
    assert m.record(PRODUCER_BYTE_RATE, "u", "a", 10_000, 0) == 0
    assert m.record(PRODUCER_BYTE_RATE, "u", "b", 10_000, 0) == 0
    assert m.record(PRODUCER_BYTE_RATE, "u", "a", 10_000, 0) == 10_000


def test_unrecord_and_the_fetch_cap() -> None:
    m = _manager([("client-id", "c")], CONSUMER_BYTE_RATE, 1000)
    assert m.max_value_in_window(CONSUMER_BYTE_RATE, "u", "c") == 10_000
    assert m.max_value_in_window(CONSUMER_BYTE_RATE, "u", "other") is None
    assert m.record(CONSUMER_BYTE_RATE, "u", "c", 20_000, 0) == 10_000
    m.unrecord(CONSUMER_BYTE_RATE, "u", "c", 20_000, 0)
    assert m.record(CONSUMER_BYTE_RATE, "u", "c", 5_000, 0) == 0


def test_request_percentage_throttle_is_bounded_by_one_window() -> None:
    m = _manager([("user", None)], REQUEST_PERCENTAGE, 10)
    assert m.record(REQUEST_PERCENTAGE, "u", "c", 1000.0, 0) == 1000  # not 90 s


def test_a_changed_quota_takes_effect_at_once() -> None:
    m = _manager([("user", "alice")], PRODUCER_BYTE_RATE, 1000)
    assert m.record(PRODUCER_BYTE_RATE, "alice", "a", 20_000, 0) == 10_000
    m.configs.alter([([("user", "alice")], [Op(PRODUCER_BYTE_RATE, 10_000)])], False)
    assert m.record(PRODUCER_BYTE_RATE, "alice", "a", 0, 1) == 0
    m.configs.alter([([("user", "alice")], [Op(PRODUCER_BYTE_RATE, None)])], False)
    assert not m.active
