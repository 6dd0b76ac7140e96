"""The admin CLI's pieces that need no broker: argument errors, the lazy imports that keep
`odradek serve` as fast as before, the partitioner, bootstrap parsing, tables. (Against a
real broker: tests/integration/test_cli_admin.py.)"""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from odradek.cli import main
from odradek.client import parse_bootstrap
from odradek.client.data import murmur2
from odradek.commands.handlers import table


def test_serve_does_not_load_the_admin_commands_or_the_client() -> None:
    # `odradek serve` (here stopped by a bad setting right after parsing) builds no admin
    # parser and imports none of their code: its start-up is what it was before them.
    code = ("import sys\n"
            "from odradek import cli\n"
            "rc = cli.main(['serve', '--override', 'no-equals-sign'])\n"
            "loaded = sorted(m for m in sys.modules if m.startswith(('odradek.client', "
            "'odradek.commands', 'odradek.testing')))\n"
            "print(rc, loaded)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ODRADEK_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=env, check=True)
    assert out.stdout == "2 []\n", out.stderr


def test_the_help_lists_serve_and_the_admin_commands(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    usage = capsys.readouterr().out
    for command in ("serve", "topic", "produce", "consume", "group", "txn", "cluster"):
        assert command in usage


@pytest.mark.parametrize("argv", [
    ["topic"],
    ["topic", "create"],
    ["topic", "create", "t", "--partitions", "0"],
    ["produce", "t", "--header", "no-equals"],
    ["consume", "t", "--offset", "-1"],
    ["consume", "t", "--from-beginning", "--offset", "3"],
    ["consume", "t", "--isolation", "serializable"],
    ["group"],
    ["group", "reset-offsets", "g", "--to-earliest"],
    ["group", "reset-offsets", "g", "-t", "t"],
    ["group", "reset-offsets", "g", "-t", "t", "--to-earliest", "--to-latest"],
    ["topic", "alter-config", "t", "--set", "novalue"],
    ["txn", "describe"],
    ["cluster", "nothing"],
])
def test_bad_arguments_are_usage_errors(argv: list[str],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err


def test_a_malformed_bootstrap_is_exit_2_before_any_connection(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topic", "list", "-b", "localhost"]) == 2
    assert capsys.readouterr().err == (
        "odradek topic: --bootstrap-server: bad address 'localhost': expected host:port\n")


def test_produce_refuses_key_and_key_separator_together(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from odradek.commands import handlers

    class FakeAdmin:
        def __init__(self, *a: object, **k: object) -> None:
            pass

        def __enter__(self) -> FakeAdmin:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    monkeypatch.setattr(handlers, "Admin", FakeAdmin)
    assert main(["produce", "t", "--key", "k", "--key-separator", ":"]) == 2
    assert capsys.readouterr().err == (
        "odradek produce: --key and --key-separator exclude each other\n")


# kafka-python 3.0 loads its protocol schemas with a deprecated importlib.resources call.
@pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning")
def test_murmur2_is_the_java_clients_partitioner() -> None:
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2

    rng = random.Random(16)
    samples = [b"", b"a", b"ab", b"abc", b"abcd", b"21", b"foobar"]
    samples += [rng.randbytes(rng.randrange(1, 64)) for _ in range(500)]
    for data in samples:
        assert murmur2(data) & 0x7FFFFFFF == kafka_python_murmur2(data) & 0x7FFFFFFF, data
    # Values from Kafka's own UtilsTest (signed int32).
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482


def test_parse_bootstrap() -> None:
    assert parse_bootstrap("127.0.0.1:9092") == [("127.0.0.1", 9092)]
    assert parse_bootstrap("a:1, b:2") == [("a", 1), ("b", 2)]
    assert parse_bootstrap("[::1]:9093") == [("::1", 9093)]
    assert parse_bootstrap("PLAINTEXT://127.0.0.1:9092") == [("127.0.0.1", 9092)]
    for bad in ["", "host", "host:", "host:port", ":9092", "h:70000", "[::1]9092"]:
        with pytest.raises(ValueError):
            parse_bootstrap(bad)


def test_table_aligns_columns_and_shows_none_as_a_dash() -> None:
    assert table(["NAME", "N"], [("orders", 3), ("x", None)]) == (
        "NAME    N\n"
        "orders  3\n"
        "x       -")


def _complete(script: str, line: str) -> list[str]:
    """What bash offers for `line` (the last word is the one being completed)."""
    words = line.split(" ")
    program = (f"{script}\nCOMP_WORDS=({' '.join(repr(w) for w in words)})\n"
               f"COMP_CWORD={len(words) - 1}\n_odradek\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    out = subprocess.run(["bash", "--norc", "--noprofile"], input=program, capture_output=True,
                         text=True, timeout=60, check=True)
    return sorted(out.stdout.split())


def test_bash_completion_offers_the_parsers_commands_options_and_choices(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    assert script.startswith("# bash completion for odradek")
    assert _complete(script, "odradek ") == sorted(
        ["serve", "topic", "produce", "consume", "group", "txn", "completion", "cluster",
         "fault", "console"])
    assert _complete(script, "odradek top") == ["topic"]
    assert _complete(script, "odradek fault ") == ["add", "clear", "list"]
    assert _complete(script, "odradek topic ") == sorted(
        ["list", "create", "describe", "alter-config", "delete"])
    assert "--from-beginning" in _complete(script, "odradek consume orders --f")
    assert _complete(script, "odradek consume orders --isolation ") == [
        "read_committed", "read_uncommitted"]
    assert _complete(script, "odradek group describe billing --j") == ["--json"]
    assert "--override" in _complete(script, "odradek serve --")
