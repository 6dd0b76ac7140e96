"""Settings Odradek accepts but does not apply (issue #10, finding 7): marked in the tables,
listed in docs/configuration.md, and logged once, the first time they are set."""

from __future__ import annotations

import re
from pathlib import Path

from structlog.testing import capture_logs

from odradek.broker.broker import Broker
from odradek.config import BROKER_CONFIGS, TOPIC_CONFIGS, BrokerConfig, Effect

DOCS = Path(__file__).parents[2] / "docs" / "configuration.md"


def _warnings(logs: list[dict[str, object]]) -> list[tuple[object, object]]:
    return [(e["scope"], e["key"]) for e in logs
            if e["event"] == "config accepted but not applied"]


def test_not_applied_settings_are_logged_once_when_set(tmp_path: Path) -> None:
    config = BrokerConfig({"log.dirs": str(tmp_path / "data"),
                           "socket.send.buffer.bytes": "1000",  # not applied
                           "num.io.threads": "4",  # no meaning for one process: silent
                           "message.max.bytes": "2000000"})  # applied: silent
    with capture_logs() as logs:
        broker = Broker(config)
        broker.cluster.create_topic("a", 2, {"preallocate": "true", "retention.ms": "5"})
        broker.cluster.create_topic("b", 1, {"preallocate": "true"})
        broker.cluster.set_configs("b", {"preallocate": "false", "remote.storage.enable": "false"})
        broker.cluster.set_configs("b", {"remote.storage.enable": "false",
                                         "leader.replication.throttled.replicas": "*"})
    assert _warnings(logs) == [("broker", "socket.send.buffer.bytes"),
                               ("topic", "preallocate"), ("topic", "remote.storage.enable")]
    broker.close()


def test_the_docs_list_every_setting_not_applied() -> None:
    text = DOCS.read_text(encoding="utf-8")
    listed = set(re.findall(r"`([a-z0-9.]+)`", text))
    for table in (BROKER_CONFIGS, TOPIC_CONFIGS):
        for name, definition in table.items():
            if definition.effect is not Effect.APPLIED:
                assert name in listed, f"{name} ({definition.effect.value}) missing from {DOCS}"
