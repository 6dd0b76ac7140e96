"""The fault rules of a running Odradek broker, through its admin HTTP endpoint
(`admin.http.port`; see docs/testing.md). Standard library only."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

__all__ = ["FaultAdmin", "FaultAdminError"]


class FaultAdminError(RuntimeError):
    """The endpoint refused (a bad rule: one line) or cannot be reached."""


class FaultAdmin:
    """`add`, `list`, `remove`, `clear` the rules of the broker at `url`
    (`http://127.0.0.1:PORT`)."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _call(self, method: str, path: str, body: object = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                message = json.loads(e.read()).get("error", str(e))
            except (ValueError, AttributeError):
                message = str(e)
            raise FaultAdminError(message) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise FaultAdminError(f"cannot reach the admin endpoint {self.url}: {reason}") from None

    def add(self, api: str | int, action: str | None = None, **spec: Any) -> dict[str, Any]:
        """Add one rule, e.g. `add("Produce", error="NOT_LEADER_OR_FOLLOWER", count=2)`,
        `add("Fetch", "delay", delay_ms=5000)`; returns it as the broker describes it."""
        rule: dict[str, Any] = {"api": api, **{k: v for k, v in spec.items() if v is not None}}
        if action is not None:
            rule["action"] = action
        added: list[dict[str, Any]] = self._call("POST", "/faults", rule)
        return added[0]

    def list(self) -> list[dict[str, Any]]:
        rules: list[dict[str, Any]] = self._call("GET", "/faults")
        return rules

    def get(self, rule_id: int) -> dict[str, Any]:
        for rule in self.list():
            if rule["id"] == rule_id:
                return rule
        raise FaultAdminError(f"no fault rule {rule_id}")

    def remove(self, rule_id: int) -> None:
        self._call("DELETE", f"/faults/{rule_id}")

    def clear(self) -> int:
        removed: int = self._call("DELETE", "/faults")["removed"]
        return removed
