"""`share.auto.offset.reset`: where a share-partition with no persisted state starts.

Kafka 4.4's group config (GroupConfig / ShareGroupAutoOffsetResetStrategy; the 4.4 group
configs page): `latest` (the default: the log end), `earliest` (the log start), or
`by_duration:<ISO-8601 duration>` (`PnDTnHnMn.nS`, as java.time.Duration parses it; negative
durations are refused): the first offset whose timestamp is at or after now minus the
duration, or the log end when no record is that recent. Names are case-insensitive.

`initial_start_offset` is a pure function: the broker passes the log's start and end offsets
and a timestamp lookup (ListOffsets by timestamp), so the choice is testable without a log.

Not implemented yet: the read_committed variant (share.isolation.level: the last stable
offset instead of the log end) is the caller's choice of `log_end_offset`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

EARLIEST = "earliest"
LATEST = "latest"
BY_DURATION = "by_duration"

# java.time.Duration.parse's grammar, without the signs Kafka refuses.
_DURATION = re.compile(
    r"P(?:(?P<d>\d+)D)?(?:T(?=\d)(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?"
    r"(?:(?P<s>\d+)(?:[.,](?P<f>\d{0,9}))?S)?)?", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class OffsetReset:
    strategy: str  # EARLIEST | LATEST | BY_DURATION
    duration_ms: int = 0


class InvalidOffsetReset(ValueError):
    """Not a valid share.auto.offset.reset value (Kafka: a ConfigException)."""


def parse_duration_ms(text: str) -> int:
    m = _DURATION.fullmatch(text)
    if m is None or text.upper() in ("P", "PT") or text.upper().endswith("T"):
        raise InvalidOffsetReset(f"Invalid duration {text!r}: expected PnDTnHnMn.nS")
    days, hours, minutes, secs = (int(m.group(g) or 0) for g in "dhms")
    fraction = (m.group("f") or "").ljust(9, "0")
    nanos = int(fraction) if fraction else 0
    return ((days * 24 + hours) * 60 + minutes) * 60_000 + secs * 1000 + nanos // 1_000_000


def parse_offset_reset(value: str) -> OffsetReset:
    text = value.strip()
    lower = text.lower()
    if lower in (EARLIEST, LATEST):
        return OffsetReset(lower)
    prefix = BY_DURATION + ":"
    if lower.startswith(prefix):
        duration = text[len(prefix):]
        if duration.startswith("-"):
            raise InvalidOffsetReset("Negative duration is not supported for by_duration.")
        return OffsetReset(BY_DURATION, parse_duration_ms(duration))
    raise InvalidOffsetReset(
        f"Invalid value {value!r} for configuration share.auto.offset.reset: "
        "the value must be latest, earliest or by_duration:PnDTnHnMn.nS")


def initial_start_offset(reset: OffsetReset, log_start_offset: int, log_end_offset: int,
                         offset_for_timestamp: Callable[[int], int | None],
                         now_ms: int) -> int:
    """The SPSO of a share-partition initialised under `reset`."""
    if reset.strategy == EARLIEST:
        return log_start_offset
    if reset.strategy == LATEST:
        return log_end_offset
    found = offset_for_timestamp(now_ms - reset.duration_ms)
    if found is None:
        return log_end_offset
    return max(log_start_offset, min(found, log_end_offset))
