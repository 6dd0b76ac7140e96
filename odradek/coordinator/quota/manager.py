"""Kafka's ClientQuotaManager (one per enforced key), sans-IO: which rate a request counts
in, recording it, and the throttle time.

A request of user u and client id c is counted in the rate its matching entity names
(`QuotaConfigs.resolve`); a request no entity applies to is not counted (Kafka counts it in
a rate with no bound, which never throttles). Rates are per key and tags, made on first use
and dropped after an hour without a request (Kafka's inactive-sensor expiry). The
request-percentage throttle is bounded by one window (ClientRequestQuotaManager); the byte
rates' are not.
"""

from __future__ import annotations

from odradek.coordinator.quota.configs import (
    REQUEST_PERCENTAGE,
    QuotaConfigs,
    Tags,
)
from odradek.coordinator.quota.rate import Rate

INACTIVE_EXPIRY_MS = 3600 * 1000
NANOS_TO_PERCENTAGE = 100.0 / 1e9  # a request's thread time as a share of one second, in %


class QuotaManager:
    def __init__(self, configs: QuotaConfigs, num_samples: int = 11,
                 window_seconds: int = 1) -> None:
        self.configs = configs
        self.num_samples = num_samples
        self.window_ms = window_seconds * 1000
        self._rates: dict[tuple[str, Tags], Rate] = {}
        self._resolved: dict[tuple[str, str, str], tuple[Tags, float] | None] = {}
        self._resolved_version = -1
        self._next_purge_ms = 0

    @property
    def active(self) -> bool:
        """Some enforced quota is set: requests must be counted."""
        return self.configs.any_enforced

    def enabled(self, key: str) -> bool:
        return self.configs.enabled(key)

    def _resolve(self, key: str, user: str, client_id: str) -> tuple[Tags, float] | None:
        if self._resolved_version != self.configs.version:
            self._resolved.clear()
            self._resolved_version = self.configs.version
        k = (key, user, client_id)
        try:
            return self._resolved[k]
        except KeyError:
            if len(self._resolved) > 100_000:  # many short-lived client ids
                self._resolved.clear()
            found = self._resolved[k] = self.configs.resolve(key, user, client_id)
            return found

    def _rate(self, key: str, tags: Tags) -> Rate:
        rate = self._rates.get((key, tags))
        if rate is None:
            rate = self._rates[(key, tags)] = Rate(self.num_samples, self.window_ms)
        return rate

    def record(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record `value` for the request; its throttle time in ms (0: within quota)."""
        found = self._resolve(key, user, client_id)
        if found is None:
            return 0
        tags, bound = found
        self._maybe_purge(now_ms)
        bounded = self.window_ms if key == REQUEST_PERCENTAGE else None
        return self._rate(key, tags).record_and_throttle_ms(value, bound, now_ms, bounded)

    def unrecord(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded value (a throttled fetch answers without its records)."""
        found = self._resolve(key, user, client_id)
        if found is not None:
            self._rate(key, found[0]).record(-value, now_ms)

    def max_value_in_window(self, key: str, user: str, client_id: str) -> float | None:
        """The most that can be recorded at once without being throttled for sure (Kafka
        caps a fetch's max_bytes by it); None when no quota applies."""
        found = self._resolve(key, user, client_id)
        if found is None:
            return None
        return found[1] * (self.num_samples - 1) * (self.window_ms / 1000)

    def _maybe_purge(self, now_ms: int) -> None:
        if now_ms < self._next_purge_ms:
            return
        self._next_purge_ms = now_ms + 60_000
        for k, rate in list(self._rates.items()):
            if now_ms - rate.idle_since_ms >= INACTIVE_EXPIRY_MS:
                del self._rates[k]
