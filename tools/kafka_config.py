"""`python -m tools.kafka_config [--check] [--source TSV]`: Kafka's config definitions as a module.

Reads `../shared/kafka-config/configdef-4.4.0.tsv` (Kafka's ConfigDef facts, read from its jars:
scope, name, type, internal, default, validator) and writes `odradek/config/_kafka.py`: one
tuple per setting with the default already parsed to a Python value and the validator parsed to
a small spec, so importing the table costs no parsing on the broker's start path. `--check`
fails when the committed module differs from what the source gives (tests run it when
`../shared` is present, as they do for the wire generator).

Validator specs: `("range", lo, hi)` (either may be None), `("range_or", lo, hi, extra)` (Kafka's
`[1,...,9] or -1`), `("choice", (options...), case_insensitive)`, `("each", (options...))` for a
LIST whose items must each be one of them, `("non_empty_string",)`, `("non_empty_list",)`,
`("non_null_string",)`, `("throttled_replicas",)`; None when Kafka has no validator.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO.parent.parent / "shared" / "kafka-config" / "configdef-4.4.0.tsv"
FALLBACK_SOURCE = Path("/work/shared/kafka-config/configdef-4.4.0.tsv")
OUT = REPO / "odradek" / "config" / "_kafka.py"

NO_DEFAULT = "<NO_DEFAULT>"
_NUMBER = r"-?[0-9.]+(?:E[0-9]+)?"
_RANGE = re.compile(rf"\[({_NUMBER})?,\.\.\.(?:,({_NUMBER}))?\]( or (-?[0-9]+))?")
_CHOICE = re.compile(r"(\(case insensitive\) )?\[([^\]]*)\]")


def default_source() -> Path:
    return SOURCE if SOURCE.exists() else FALLBACK_SOURCE


def _number(text: str | None, type_: str) -> int | float | None:
    if text is None:
        return None
    # Kafka renders a range's bounds as given ([0,...,1] for a DOUBLE): keep ints as ints, so
    # the messages read "Value must be no more than 1" as Kafka's do.
    return float(text) if type_ == "DOUBLE" and not text.lstrip("-").isdigit() else int(text)


def parse_default(type_: str, text: str) -> Any:
    """Kafka's rendering of a default as the parsed value Odradek's tables hold."""
    if text == "<null>":
        return None
    if text == NO_DEFAULT:
        return NO_DEFAULT
    if type_ == "BOOLEAN":
        return text == "true"
    if type_ in ("INT", "LONG", "SHORT"):
        return int(text)
    if type_ == "DOUBLE":
        return float(text)
    if type_ == "LIST":
        return tuple(p.strip() for p in text.split(",")) if text else ()
    return text


def parse_validator(type_: str, text: str) -> tuple[Any, ...] | None:
    if not text:
        return None
    if text == "non-empty string":
        return ("non_empty_string",)
    if text == "non-empty list":
        return ("non_empty_list",)
    if text == "non-null string":
        return ("non_null_string",)
    if text.startswith("[partitionId]:[brokerId]"):
        return ("throttled_replicas",)
    m = _RANGE.fullmatch(text)
    if m:
        lo, hi = _number(m.group(1), type_), _number(m.group(2), type_)
        if m.group(3):
            return ("range_or", lo, hi, int(m.group(4)))
        return ("range", lo, hi)
    m = _CHOICE.fullmatch(text)
    if m:
        options = tuple(o.strip() for o in m.group(2).split(","))
        if type_ == "LIST":
            return ("each", options)
        return ("choice", options, bool(m.group(1)))
    raise ValueError(f"validator rendering not understood: {text!r}")


def render(source: Path) -> str:
    rows: dict[str, list[str]] = {"broker": [], "topic": []}
    lines = source.read_text(encoding="utf-8").splitlines()
    assert lines[0].split("\t") == ["scope", "name", "type", "internal", "default", "validator"]
    for line in lines[1:]:
        scope, name, type_, internal, default, validator = (line.split("\t") + [""] * 6)[:6]
        row = (name, type_, internal == "true", parse_default(type_, default),
               parse_validator(type_, validator))
        rows[scope].append(f"    {row!r},\n")
    version = re.search(r"configdef-(.+)\.tsv", source.name)
    head = (
        '"""Apache Kafka {v}\'s config definitions (DO NOT EDIT: `python -m tools.kafka_config`\n'
        "writes this from configdef-{v}.tsv, read from Kafka's jars).\n\n"
        "Each row: (name, type, internal, default, validator spec); the default is parsed (None:\n"
        "null, {nd!r}: Kafka requires a value), the spec is described in tools/kafka_config.py.\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        "from typing import Any\n\n"
        "KAFKA_VERSION = {v!r}\n"
        "NO_DEFAULT = {nd!r}\n\n"
    ).format(v=version.group(1) if version else "?", nd=NO_DEFAULT)
    body = ""
    for scope in ("broker", "topic"):
        body += f"{scope.upper()}: tuple[tuple[Any, ...], ...] = (\n" + "".join(rows[scope]) + ")\n"
        if scope == "broker":
            body += "\n"
    return head + body


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if the committed module is stale")
    ap.add_argument("--source", type=Path, default=None)
    args = ap.parse_args(argv)
    source = args.source or default_source()
    text = render(source)
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is stale: run python -m tools.kafka_config", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
