"""Every setting's decision acts as recorded (issue #18): settings with no effect here are
accepted silently; settings not supported yet are refused at any value but their default:
INVALID_CONFIG naming the setting at run time, and at start-up either one line and exit code 2
(a value that would change what clients see, what is stored or who may connect) or a warning."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from odradek.broker.broker import Broker
from odradek.broker.cluster import ClusterError
from odradek.cli import main
from odradek.config import BrokerConfig, ConfigError, validate_topic_config


def _warnings(logs: list[dict[str, object]]) -> list[tuple[object, object]]:
    return [(e["scope"], e["key"]) for e in logs
            if e["event"] == "config not supported yet, ignored"]


def test_unsupported_broker_settings_warn_once_and_no_effect_ones_stay_silent(
        tmp_path: Path) -> None:
    config = BrokerConfig({"log.dirs": str(tmp_path / "data"),
                           "socket.send.buffer.bytes": "1000",  # not supported yet: warns
                           "socket.receive.buffer.bytes": "102400",  # at its default: silent
                           "num.io.threads": "4",  # no effect here: silent
                           "message.max.bytes": "2000000"})  # implemented: silent
    with capture_logs() as logs:
        broker = Broker(config)
        broker.not_applied.broker(config)  # a second time: still one line
    assert _warnings(logs) == [("broker", "socket.send.buffer.bytes")]
    broker.close()


@pytest.mark.parametrize("setting", ["ssl.cipher.suites=TLS_AES_128_GCM_SHA256", "broker.rack=r1",
                                     "max.connection.creation.rate=10"])
def test_unsupported_settings_that_change_what_clients_see_stop_the_start(setting: str) -> None:
    name, _, value = setting.partition("=")
    with pytest.raises(ConfigError, match=rf"^{name}: not supported by Odradek yet"):
        BrokerConfig({name: value})
    BrokerConfig({"min.insync.replicas": "1", "ssl.keystore.type": "JKS"})  # defaults pass


def test_the_cli_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["serve", "--override", f"log.dirs={tmp_path}", "--override",
                 "ssl.cipher.suites=TLS_AES_128_GCM_SHA256"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "ssl.cipher.suites: not supported by Odradek yet" in err


@pytest.mark.parametrize(("name", "value"), [
    ("remote.storage.enable", "true"),
    ("max.decompressed.message.bytes", "1000"), ("errors.deadletterqueue.group.enable", "true"),
    ("local.retention.ms", "1000"),
])
def test_unsupported_topic_configs_are_refused_at_run_time(
        tmp_path: Path, name: str, value: str) -> None:
    reason = validate_topic_config(name, value)
    assert reason is not None
    assert reason.startswith(f"Invalid value {value} for configuration {name}: not supported")
    broker = Broker(BrokerConfig({"log.dirs": str(tmp_path / "data")}))
    with pytest.raises(ClusterError, match="not supported by Odradek yet"):
        broker.cluster.create_topic("t", 1, {name: value})
    broker.cluster.create_topic("u", 1, {"remote.storage.enable": "false",  # the defaults pass
                                         "preallocate": "true"})  # no effect here: accepted
    broker.close()


def test_a_stored_unsupported_topic_config_is_logged_when_loaded(tmp_path: Path) -> None:
    broker = Broker(BrokerConfig({"log.dirs": str(tmp_path / "data")}))
    with capture_logs() as logs:
        broker.not_applied.topic("t", {"local.retention.ms": "1000", "preallocate": "true",
                                       "remote.storage.enable": "false"})
    assert _warnings(logs) == [("topic", "local.retention.ms")]
    broker.close()
