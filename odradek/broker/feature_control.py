"""The finalized feature levels of a running broker, changed by UpdateFeatures and kept in
`features.json` in the first log dir (Kafka keeps them as FeatureLevelRecords in its
metadata log, so they too survive a restart).

`features.json`: `{"epoch": <int>, "levels": {"<feature>": <level>, ...}}`, written
atomically (fsynced, renamed) before UpdateFeatures answers. A feature missing from
`levels` is at 0. At start the levels are, in order of precedence: an explicitly set
`transaction.version` setting or `emulate.kafka.version` (a choice for this run), the stored
ones, Kafka 4.4's defaults. The epoch grows with every change and every start (clients
re-read the levels only when it grows; `features.py`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import structlog

from odradek.broker.features import SUPPORTED, Features, FeatureUpdate, plan_update
from odradek.broker.storage.files import atomic_write

FEATURES_FILE = "features.json"
log = structlog.get_logger("odradek.features")


def load_stored(log_dir: Path) -> tuple[dict[str, int], int] | None:
    """The stored (levels, epoch), or None if UpdateFeatures never ran here. A file that does
    not parse is logged and ignored: the defaults apply, as on a fresh data dir."""
    path = log_dir / FEATURES_FILE
    try:
        raw: Any = json.loads(path.read_bytes())
        levels = {str(k): int(v) for k, v in raw["levels"].items()}
        return levels, int(raw["epoch"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        log.error("feature levels not readable; using the defaults", path=str(path),
                  error=str(e))
        return None


class FeatureControl:
    """Holds the current `Features`; `update` applies an UpdateFeatures request."""

    def __init__(self, features: Features, log_dir: Path, now_ms: Callable[[], int],
                 on_change: Callable[[Features], None]) -> None:
        self.features = features
        self._path = log_dir / FEATURES_FILE
        self._now_ms = now_ms
        self._on_change = on_change

    def update(self, updates: list[FeatureUpdate], controller_id: int, validate_only: bool
               ) -> str | None:
        """None when every update applies (or would, with `validate_only`), else Kafka's
        message for the first refused one; all or nothing."""
        levels, error = plan_update(self.features, updates, controller_id)
        if error is not None or validate_only:
            return error
        epoch = max(self.features.epoch + 1, self._now_ms())
        table = {name: levels.get(name, 0) for name in SUPPORTED}  # 0s too: removed ones
        atomic_write(self._path, json.dumps({"epoch": epoch, "levels": table},
                                            sort_keys=True).encode())
        changed = {u.name: u.level for u in updates}
        self.features = Features(MappingProxyType({n: v for n, v in levels.items() if v > 0}),
                                 epoch)
        log.info("feature levels updated", changed=changed, epoch=epoch)
        self._on_change(self.features)
        return None


def stored_selection(stored: Mapping[str, int]) -> dict[str, int]:
    """`Features.finalize` keyword overrides for the stored levels of supported features."""
    return {name.replace(".", "_"): level for name, level in stored.items() if name in SUPPORTED}
