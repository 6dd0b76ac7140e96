"""A windowed rate and its throttle time, with the arithmetic of Kafka's metrics (`Rate` over
a `WindowedSum`, `Sensor.checkQuotas`, `QuotaUtils.throttleTime`).

The rate is the sum of `samples` windows of `window_ms` each (`quota.window.num`,
`quota.window.size.seconds`; Kafka keeps one slot more for the window that overlaps the
oldest) divided by the time they span. While fewer than `samples - 1` whole windows have
passed since the oldest sample began, the span is padded to `samples - 1` windows, so a
client's first burst is not measured over a few milliseconds. A sample with no event for
`samples * window_ms` is reset.

A recorded value that takes the rate above the bound is kept (Kafka records, then checks);
the throttle time is how long the client must stay silent for the rate to fall back to the
bound: (rate - bound) / bound * span, rounded half up.
"""

from __future__ import annotations

import math


class _Sample:
    __slots__ = ("events", "last_ms", "start_ms", "value")

    def __init__(self, now_ms: int) -> None:
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.value = 0.0
        self.events = 0
        self.start_ms = now_ms
        self.last_ms = now_ms


class Rate:
    """Kafka's `Rate` (seconds) over a `WindowedSum`; time is passed in (milliseconds)."""

    __slots__ = ("_current", "_samples", "num_samples", "window_ms")

    def __init__(self, num_samples: int = 11, window_ms: int = 1000) -> None:
        self.num_samples = num_samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:  # complete: move to the next slot
            self._current = (self._current + 1) % (self.num_samples + 1)
            if self._current >= len(self._samples):
                sample = _Sample(now_ms)
                self._samples.append(sample)
            else:
                sample = self._samples[self._current]
                sample.reset(now_ms)
        sample.value += value
        sample.events += 1
        sample.last_ms = now_ms

    def _purge(self, now_ms: int) -> None:
        expire = self.num_samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_ms >= expire:
                sample.reset(now_ms)

    def window_size_ms(self, now_ms: int) -> int:
        """The span the rate is measured over (at least 1 ms)."""
        self._purge(now_ms)
        oldest = min((s.start_ms for s in self._samples), default=now_ms)
        elapsed = now_ms - oldest
        full = elapsed // self.window_ms
        if full < self.num_samples - 1:
            elapsed += (self.num_samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """Units per second."""
        self._purge(now_ms)
        total = sum(s.value for s in self._samples)
        return total / (self.window_size_ms(now_ms) / 1000.0)

    def record_and_throttle_ms(self, value: float, bound: float, now_ms: int,
                               max_throttle_ms: int | None = None) -> int:
        """Record `value`; the throttle time when the rate is then above `bound`, else 0."""
        self.record(value, now_ms)
        rate = self.measure(now_ms)
        if rate <= bound:
            return 0
        return throttle_ms(rate, bound, self.window_size_ms(now_ms), max_throttle_ms)

    @property
    def idle_since_ms(self) -> int:
        return max((s.last_ms for s in self._samples), default=0)


def throttle_ms(rate: float, bound: float, window_size_ms: int,
                max_throttle_ms: int | None = None) -> int:
    """Kafka's QuotaUtils.throttleTime (Math.round: half up), bounded for request quotas."""
    ms = math.floor((rate - bound) / bound * window_size_ms + 0.5)
    return ms if max_throttle_ms is None else min(ms, max_throttle_ms)
