"""Client quotas in the broker (issue #13 point 4): the configs, on disk, and the rates
counted against them.

The configs (`odradek.coordinator.quota.configs`) live in `quotas.json` in the first log dir,
replaced atomically (file and directory fsync) after every AlterClientQuotas that changed
something, before the answer, and read at start, as `acls.json` is.

Enforcement is `throttle.py`.
"""

from __future__ import annotations

from pathlib import Path

import structlog

from odradek.broker.storage.files import atomic_write
from odradek.config import BrokerConfig
from odradek.coordinator.quota.configs import QuotaConfigs
from odradek.coordinator.quota.manager import QuotaManager

log = structlog.get_logger("odradek.quotas")

QUOTA_FILE = "quotas.json"


class ClientQuotas:
    """The configs, their file, and the rates counted against them."""

    def __init__(self, configs: QuotaConfigs, path: Path | None, num_samples: int = 11,
                 window_seconds: int = 1) -> None:
        self.configs = configs
        self.path = path
        self.manager = QuotaManager(configs, num_samples, window_seconds)

    @property
    def active(self) -> bool:
        return self.configs.any_enforced

    def save(self) -> None:
        if self.path is not None:
            atomic_write(self.path, self.configs.to_json())


def build_quotas(config: BrokerConfig) -> ClientQuotas:
    path = config.log_dirs[0] / QUOTA_FILE
    configs = QuotaConfigs.from_json(path.read_bytes()) if path.exists() else QuotaConfigs()
    quotas = ClientQuotas(configs, path, config.get_int("quota.window.num"),
                          config.get_int("quota.window.size.seconds"))
    if path.exists():
        log.info("client quotas loaded", entities=len(configs.describe([], False)))
    return quotas
