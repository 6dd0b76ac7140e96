"""share.auto.offset.reset: parsing Kafka's values and choosing the initial SPSO."""

from __future__ import annotations

import pytest

from odradek.coordinator.share.offset_reset import (
    BY_DURATION,
    EARLIEST,
    LATEST,
    InvalidOffsetReset,
    OffsetReset,
    initial_start_offset,
    parse_duration_ms,
    parse_offset_reset,
)


@pytest.mark.parametrize("value, expected", [
    ("latest", OffsetReset(LATEST)),
    ("EARLIEST", OffsetReset(EARLIEST)),
    ("by_duration:PT1H", OffsetReset(BY_DURATION, 3_600_000)),
    ("by_duration:P1DT2H3M4.5S", OffsetReset(BY_DURATION, 93_784_500)),
    ("by_duration:PT0.001S", OffsetReset(BY_DURATION, 1)),
    ("by_duration:P2D", OffsetReset(BY_DURATION, 172_800_000)),
])
def test_parse(value: str, expected: OffsetReset) -> None:
    assert parse_offset_reset(value) == expected


@pytest.mark.parametrize("value", ["none", "", "by_duration:", "by_duration:-PT1H",
                                   "by_duration:P", "by_duration:PT", "by_duration:1H",
                                   "by_duration:P1DT", "by_duration:PT1X"])
def test_invalid(value: str) -> None:
    with pytest.raises(InvalidOffsetReset):
        parse_offset_reset(value)


def test_duration_fraction_truncates_to_ms() -> None:
    assert parse_duration_ms("PT1.2345S") == 1234


def test_initial_start_offset() -> None:
    lookups: list[int] = []

    def by_time(ts: int) -> int | None:
        lookups.append(ts)
        return 42 if ts <= 5_000 else None

    assert initial_start_offset(OffsetReset(EARLIEST), 3, 100, by_time, 10_000) == 3
    assert initial_start_offset(OffsetReset(LATEST), 3, 100, by_time, 10_000) == 100
    assert lookups == []
    assert initial_start_offset(OffsetReset(BY_DURATION, 6_000), 3, 100, by_time, 10_000) == 42
    assert lookups == [4_000]
    # No record that recent: the log end.
    assert initial_start_offset(OffsetReset(BY_DURATION, 1_000), 3, 100, by_time, 10_000) == 100
