"""The `odradek` command line: version, configuration errors, log line format."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

import odradek
from odradek.cli import main

TIMEOUT = 60


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ODRADEK_")}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "odradek", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environ,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout == f"odradek {odradek.__version__}\n"
    assert odradek.__version__ == "0.1.0"


def test_console_script_is_declared() -> None:
    (script,) = entry_points(group="console_scripts", name="odradek")
    assert script.value == "odradek.cli:main"
    assert script.load() is main


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "serve" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "env", "fragment"),
    [
        (["--override", "listeners=BOGUS://127.0.0.1:0"], {}, "no security protocol for listener BOGUS"),
        (["--override", "num.partitions=zero"], {}, "num.partitions"),
        (["--override", "oops"], {}, "key=value"),
        (["--config", "/nonexistent/server.properties"], {}, "cannot read config file"),
        ([], {"ODRADEK_NUM_PARTITIONS": "0"}, "num.partitions"),
    ],
)
def test_config_error_exits_2_with_one_line(
    args: list[str], env: dict[str, str], fragment: str
) -> None:
    result = run("serve", *args, env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert fragment in lines[0]
    assert "Traceback" not in result.stderr


def test_bad_log_level_is_a_usage_error() -> None:
    result = run("serve", "--log-level", "loud")
    assert result.returncode == 2
    assert "--log-level" in result.stderr


LOG_SNIPPET = """
import logging, sys, structlog
from odradek.log import configure_logging
configure_logging(json=sys.argv[1] == "json", level="info")
log = structlog.get_logger("t")
log.info("listening", host="127.0.0.1", port=41231)
log.debug("hidden")
logging.getLogger("asyncio").warning("from %s", "stdlib")
try:
    1 / 0
except ZeroDivisionError:
    log.exception("failed", detail="two words")
"""


def _log_lines(mode: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", LOG_SNIPPET, mode],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )
    assert result.stdout == ""
    return result.stderr.splitlines()


def test_key_value_log_lines() -> None:
    lines = _log_lines("kv")
    assert len(lines) == 3  # one line per event, debug filtered, traceback kept on its line
    m = re.search(r"listening.*\bport=(\d+)", lines[0])
    assert m is not None and m.group(1) == "41231"
    assert "event=listening" in lines[0] and "host=127.0.0.1" in lines[0]
    assert re.match(r"timestamp=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z level=info ", lines[0])
    assert "level=warning" in lines[1] and 'event="from stdlib"' in lines[1]
    assert "ZeroDivisionError" in lines[2] and 'detail="two words"' in lines[2]


def test_json_log_lines() -> None:
    events = [json.loads(line) for line in _log_lines("json")]
    assert len(events) == 3
    assert events[0]["event"] == "listening" and events[0]["port"] == 41231
    assert events[0]["level"] == "info" and events[0]["timestamp"].endswith("Z")
    assert events[1]["event"] == "from stdlib" and events[1]["level"] == "warning"
    assert "ZeroDivisionError" in events[2]["exception"]


def test_logging_setup_does_not_import_dev_renderers() -> None:
    """structlog.dev pulls in `rich` (when installed) at import; serve must not pay for it."""
    code = ("import sys, odradek.log; odradek.log.configure_logging();"
            "print(sorted(m for m in ('rich', 'better_exceptions') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(os.path.dirname(odradek.__file__)))
    assert out.stdout.strip() == "[]"
