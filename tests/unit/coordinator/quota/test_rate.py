"""Kafka's windowed Rate and throttle time (issue #13 point 4), with figures worked by hand
from Kafka's Rate / SampledStat / QuotaUtils arithmetic."""

from __future__ import annotations

import pytest

from odradek.coordinator.quota.rate import Rate, throttle_ms


def test_a_young_rate_is_measured_over_samples_minus_one_windows() -> None:
    r = Rate(11, 1000)
    r.record(5000, 0)
    # 0 ms elapsed, padded to 10 whole windows: 5000 bytes / 10 s
    assert r.window_size_ms(0) == 10_000
    assert r.measure(0) == pytest.approx(500.0)
    r.record(5000, 2500)
    assert r.window_size_ms(2500) == 10_500  # 2 whole windows seen: 2500 + 8 * 1000
    assert r.measure(2500) == pytest.approx(10_000 / 10.5)


def test_an_old_rate_is_measured_over_the_time_its_samples_span() -> None:
    r = Rate(11, 1000)
    for t in range(0, 15_000, 100):
        r.record(100, t)  # 1000 units/s, steadily
    now = 14_950
    # 12 slots (11 + the overlapping one) of 1 s began at 3000..14000; the one of 3000 had
    # no event for 11 windows (its last at 3900) and is reset: the span starts at 4000
    assert r.window_size_ms(now) == now - 4000
    assert r.measure(now) == pytest.approx(1000.0, rel=0.01)


def test_samples_idle_for_the_whole_window_are_reset() -> None:
    r = Rate(11, 1000)
    r.record(1_000_000, 0)
    assert r.measure(10_999) > 0
    assert r.measure(11_000) == 0.0  # 11 windows without an event


def test_throttle_time_brings_the_rate_back_to_the_bound() -> None:
    r = Rate(11, 1000)
    # 20,000 at once against a bound of 1,000/s over a 10 s span: rate 2,000,
    # throttle (2000 - 1000) / 1000 * 10000 = 10 s
    assert r.record_and_throttle_ms(20_000, 1000.0, 0) == 10_000
    # the value stays recorded (Kafka records, then checks)
    assert r.measure(0) == pytest.approx(2000.0)
    # within the bound: no throttle
    assert Rate(11, 1000).record_and_throttle_ms(10_000, 1000.0, 0) == 0


def test_throttle_rounds_half_up_and_is_bounded_when_asked() -> None:
    assert throttle_ms(1000.25, 1000.0, 2000) == 1  # 0.5 ms rounds up
    assert throttle_ms(1000.2, 1000.0, 2000) == 0
    assert throttle_ms(3000.0, 1000.0, 10_000) == 20_000
    assert throttle_ms(3000.0, 1000.0, 10_000, 1000) == 1000


def test_a_negative_record_takes_a_value_back() -> None:
    r = Rate(11, 1000)
    r.record(300, 0)
    r.record(5000, 10)
    r.record(-5000, 10)
    assert r.measure(10) == pytest.approx(300 / 10.01)  # 10 ms + 10 padded windows


def test_window_slots_are_reused_round_robin() -> None:
    r = Rate(2, 1000)  # 3 slots
    for t in (0, 1000, 2000, 3000):
        r.record(1, t)
    # the slot of t=0 was reused at t=3000; the one of t=1000 is 2 windows old, so reset:
    # what is left began at 2000, one whole window (samples - 1: no padding)
    assert r.window_size_ms(3000) == 1000
    assert r.measure(3000) == pytest.approx(2.0)
