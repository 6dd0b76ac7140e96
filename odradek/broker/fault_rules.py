"""Fault injection rules (issue #16): which requests to fail, delay, drop or cut off. Sans-IO.

A rule names an api (by key) and optionally a topic, a partition and a client id; it applies to
the next `count` matching requests (None: every one) and, with `probability` below 1, to that
fraction of them, drawn from its own seeded generator so a test run is repeatable. Actions:
- `error`: answer with `error_code` where the api carries errors (see `fault_inject.py`),
  without running the handler (a failed Produce writes nothing);
- `delay`: wait `delay_ms`, then handle the request normally;
- `drop`: handle nothing and send nothing (the client's request timeout fires);
- `close`: close the connection without answering.

This module only matches and counts: the dispatcher (`dispatch.py`) asks `match` only when
`active` is true, so a broker without rules pays one attribute check per request.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from odradek.wire import API_SPECS, ErrorCode

# (topic, partition) pairs a request names; computed only for a rule with a topic filter.
Targets = Callable[[], Iterable[tuple[str, int]]]


class FaultSpecError(ValueError):
    """A rule that cannot be built; the message is one line for the user."""


class Action(enum.Enum):
    ERROR = "error"
    DELAY = "delay"
    DROP = "drop"
    CLOSE = "close"


def _api_names() -> dict[str, int]:
    names: dict[str, int] = {}
    for key, spec in API_SPECS.items():
        names[spec.name.lower()] = key
        names[_snake(spec.name)] = key
    return names


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower()
                   for i, c in enumerate(name))


def parse_api(value: object) -> int:
    """An api key from a number, Kafka's name (`Produce`, `FindCoordinator`) or its snake
    form (`find_coordinator`)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value in API_SPECS:
            return value
        raise FaultSpecError(f"unknown api key {value}")
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return parse_api(int(text))
        key = _api_names().get(text.lower().replace("-", "_")) or _api_names().get(text.lower())
        if key is not None:
            return key
    raise FaultSpecError(f"unknown api {value!r} (use Kafka's name, e.g. Produce, or the key)")


_BY_CODE = {int(member): member for member in ErrorCode}


def error_name(code: int) -> str:
    member = _BY_CODE.get(code)
    return member.name if member is not None else str(code)


def parse_error(value: object) -> int:
    """An error code from its number or Kafka's name (`NOT_LEADER_OR_FOLLOWER`)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value in _BY_CODE:
            return value
        raise FaultSpecError(f"unknown error code {value}")
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return parse_error(int(text))
        member = ErrorCode.__members__.get(text.upper().replace("-", "_").replace(" ", "_"))
        if member is not None:
            return int(member)
    raise FaultSpecError(f"unknown error {value!r} (use Kafka's name, e.g. "
                         "NOT_LEADER_OR_FOLLOWER, or the code)")


@dataclass(slots=True)
class FaultRule:
    rule_id: int
    api_key: int
    action: Action
    error_code: int = 0
    delay_ms: int = 0
    count: int | None = None  # requests still to fault; None: no limit
    probability: float = 1.0
    seed: int | None = None
    topic: str | None = None
    partition: int | None = None
    client_id: str | None = None
    matched: int = 0  # requests that matched the filters
    injected: int = 0  # of those, faulted
    _rng: random.Random = field(default_factory=random.Random, repr=False)

    @property
    def exhausted(self) -> bool:
        return self.count is not None and self.injected >= self.count

    def _targets_match(self, targets: Targets) -> bool:
        for topic, partition in targets():
            if (self.topic is None or topic == self.topic) and (
                    self.partition is None or partition == self.partition):
                return True
        return False

    def applies(self, client_id: str | None, targets: Targets) -> bool:
        """Does this request get the fault? Counts it when it does."""
        if self.exhausted:
            return False
        if self.client_id is not None and client_id != self.client_id:
            return False
        if (self.topic is not None or self.partition is not None) and not self._targets_match(
                targets):
            return False
        self.matched += 1
        if self.probability < 1.0 and self._rng.random() >= self.probability:
            return False
        self.injected += 1
        return True

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.rule_id, "api": API_SPECS[self.api_key].name, "api_key": self.api_key,
            "action": self.action.value, "matched": self.matched, "injected": self.injected,
        }
        if self.action is Action.ERROR:
            out["error"] = error_name(self.error_code)
            out["error_code"] = self.error_code
        if self.action is Action.DELAY:
            out["delay_ms"] = self.delay_ms
        for name in ("count", "topic", "partition", "client_id", "seed"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.probability < 1.0:
            out["probability"] = self.probability
        out["exhausted"] = self.exhausted
        return out


_KNOWN = {"api", "action", "error", "delay_ms", "count", "probability", "seed", "topic",
          "partition", "client_id"}


def _int(spec: Mapping[str, object], name: str, low: int) -> int | None:
    value = spec.get(name)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise FaultSpecError(f"{name} must be an integer >= {low}, not {value!r}")
    return value


class FaultRules:
    """The rules of one broker run; `injected` counts every fault injected."""

    def __init__(self, can_error: Callable[[int], bool] = lambda key: True) -> None:
        self._rules: list[FaultRule] = []
        self._by_api: dict[int, list[FaultRule]] = {}
        self._next_id = 1
        self._can_error = can_error  # which apis have somewhere to put an error code
        self.injected = 0
        self.active = False  # the dispatcher's one check

    def add(self, spec: Mapping[str, object]) -> FaultRule:
        """A rule from its JSON form (`describe` gives it back); FaultSpecError if invalid."""
        unknown = set(spec) - _KNOWN
        if unknown:
            raise FaultSpecError(f"unknown rule field(s): {', '.join(sorted(unknown))}")
        if "api" not in spec:
            raise FaultSpecError("a rule needs an api (e.g. Produce)")
        api_key = parse_api(spec["api"])
        try:
            action = Action(str(spec.get("action", "error" if "error" in spec else "")).lower())
        except ValueError:
            raise FaultSpecError(f"unknown action {spec.get('action')!r} (error, delay, drop, "
                                 "close)") from None
        error_code = 0
        if action is Action.ERROR:
            if "error" not in spec:
                raise FaultSpecError("an error rule needs an error (e.g. NOT_LEADER_OR_FOLLOWER)")
            error_code = parse_error(spec["error"])
            if error_code == 0:
                raise FaultSpecError("NONE is not an error to inject")
            if not self._can_error(api_key):
                raise FaultSpecError(f"errors cannot be injected into {API_SPECS[api_key].name} "
                                     "yet; use delay, drop or close")
        delay_ms = _int(spec, "delay_ms", 0) or 0
        if action is Action.DELAY and "delay_ms" not in spec:
            raise FaultSpecError("a delay rule needs delay_ms")
        probability = spec.get("probability", 1.0)
        try:
            probability = float(probability)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise FaultSpecError(f"probability must be a number, not {probability!r}") from None
        if not 0.0 < probability <= 1.0:
            raise FaultSpecError(f"probability must be in (0, 1], not {probability}")
        seed = _int(spec, "seed", -(2**63))
        topic = spec.get("topic")
        if topic is not None and not isinstance(topic, str):
            raise FaultSpecError(f"topic must be a string, not {topic!r}")
        client_id = spec.get("client_id")
        if client_id is not None and not isinstance(client_id, str):
            raise FaultSpecError(f"client_id must be a string, not {client_id!r}")
        rule = FaultRule(self._next_id, api_key, action, error_code=error_code, delay_ms=delay_ms,
                         count=_int(spec, "count", 1), probability=probability, seed=seed,
                         topic=topic, partition=_int(spec, "partition", 0), client_id=client_id,
                         _rng=random.Random(seed))
        self._next_id += 1
        self._rules.append(rule)
        self._by_api.setdefault(api_key, []).append(rule)
        self.active = True
        return rule

    def match(self, api_key: int, client_id: str | None, targets: Targets) -> FaultRule | None:
        """The first rule (in the order added) that faults this request, counted; else None."""
        rules = self._by_api.get(api_key)
        if not rules:
            return None
        for rule in rules:
            if rule.applies(client_id, targets):
                self.injected += 1
                if rule.exhausted:
                    rules.remove(rule)
                    if not rules:
                        del self._by_api[api_key]
                    self.active = bool(self._by_api)
                return rule
        return None

    def remove(self, rule_id: int) -> bool:
        for rule in self._rules:
            if rule.rule_id == rule_id:
                self._rules.remove(rule)
                rules = self._by_api.get(rule.api_key, [])
                if rule in rules:
                    rules.remove(rule)
                    if not rules:
                        del self._by_api[rule.api_key]
                self.active = bool(self._by_api)
                return True
        return False

    def clear(self) -> int:
        n = len(self._rules)
        self._rules.clear()
        self._by_api.clear()
        self.active = False
        return n

    def describe(self) -> list[dict[str, Any]]:
        return [rule.describe() for rule in self._rules]
