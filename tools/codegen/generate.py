"""Drive the emitter: one module per API, headers, internal records, ApiKey and ErrorCode."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tools.codegen.emit import emit_module, stamp
from tools.codegen.spec import MessageSpec, snake
from tools.codegen.union import ErrorRow, load_union


def api_module_name(msg_name: str) -> str:
    return snake(re.sub(r"(Request|Response)$", "", msg_name))


def generate(spec_dirs: Sequence[Path], out: Path) -> None:
    """Write every module into `out` from the union of the snapshots in `spec_dirs`, newest
    first (each folder has a `source.json`); see tools/codegen/union.py."""
    specs = load_union(spec_dirs)
    stamp_line = stamp(specs.sources)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.py"):
        old.unlink()
    messages = specs.messages
    by_api: dict[int, dict[str, MessageSpec]] = {}
    headers: list[MessageSpec] = []
    data: list[MessageSpec] = []
    for m in messages:
        if m.type == "header":
            headers.append(m)
        elif m.type == "data":
            data.append(m)
        else:
            assert m.api_key is not None
            by_api.setdefault(m.api_key, {})[m.type] = m
    files: dict[str, str] = {}
    api_rows = []
    for key in sorted(by_api):
        pair = by_api[key]
        req, resp = pair["request"], pair["response"]
        module = api_module_name(req.name)
        files[f"{module}.py"] = emit_module([req, resp], stamp_line)
        api_rows.append((key, req, resp, module))
    files["header.py"] = emit_module(sorted(headers, key=lambda m: m.name), stamp_line)
    files["data.py"] = emit_module(sorted(data, key=lambda m: m.name), stamp_line)
    # Internal records by coordinator: the share and streams records (unused so far) in their
    # own modules, so that start-up, which loads the group and transaction records, does not
    # pay for them (internal.py alone grew 2.5x with Kafka 4.4's).
    by_family: dict[str, list[MessageSpec]] = {"internal": [], "internal_share": [],
                                                "internal_streams": []}
    for m in specs.internal:
        family = ("internal_share" if m.name.startswith("Share")
                  else "internal_streams" if m.name.startswith("Streams") else "internal")
        by_family[family].append(m)
    for family, members in by_family.items():
        if members or family == "internal":  # an older snapshot may have no share records
            files[f"{family}.py"] = emit_module(members, stamp_line)
    files["api_keys.py"] = emit_api_keys(api_rows, stamp_line)
    files["error_codes.py"] = emit_error_codes(specs.errors, stamp_line)
    files["__init__.py"] = (
        stamp_line + '"""Generated Kafka protocol messages; import modules lazily, per API."""\n'
    )
    for name, text in files.items():
        (out / name).write_text(text)
    # Normalise layout so regeneration is byte-stable and diffs stay readable.
    # The ruff beside this Python (the checkout's .venv) when PATH does not lead to one.
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
    cmd = [ruff or "ruff", "format", "--quiet", "--line-length", "100", str(out)]
    subprocess.run(cmd, check=True)


def emit_api_keys(rows: list[tuple[int, MessageSpec, MessageSpec, str]], stamp_line: str) -> str:
    lines = [
        stamp_line,
        "from __future__ import annotations\n",
        "from dataclasses import dataclass",
        "from enum import IntEnum\n\n",
        "class ApiKey(IntEnum):",
    ]
    for key, req, _resp, _module in rows:
        base = re.sub(r"Request$", "", req.name)
        lines.append(f"    {snake(base).upper()} = {key}")
    lines += [
        "\n",
        "@dataclass(frozen=True, slots=True)",
        "class ApiSpec:",
        "    key: int",
        "    name: str",
        "    module: str",
        "    request_class: str",
        "    response_class: str",
        "    min_version: int",
        "    max_version: int",
        "    max_stable_version: int  # max_version, or the one below it when that is unstable",
        "    latest_version_unstable: bool  # the specs mark max_version unstable",
        "    flexible_min_version: int | None",
        "    listeners: tuple[str, ...]",
        "\n",
        "API_SPECS: dict[int, ApiSpec] = {",
    ]
    for key, req, resp, module in rows:
        flex = None if req.flexible.empty else req.flexible.lo
        hi = req.valid.hi
        assert hi is not None
        stable = hi - 1 if req.latest_unstable else hi
        base = re.sub(r"Request$", "", req.name)
        lines.append(
            f"    {key}: ApiSpec({key}, {base!r}, {module!r}, {req.name!r}, {resp.name!r}, "
            f"{req.valid.lo}, {hi}, {stable}, {req.latest_unstable}, {flex}, "
            f"{tuple(req.listeners)!r}),"
        )
    lines.append("}\n")
    return "\n".join(lines)


def emit_error_codes(rows: list[ErrorRow], stamp_line: str) -> str:
    lines = [
        stamp_line,
        "from __future__ import annotations\n",
        "from enum import IntEnum\n\n",
        "class ErrorCode(IntEnum):",
        "    retriable: bool\n",
        "    def __new__(cls, code: int, retriable: bool) -> ErrorCode:",
        "        obj = int.__new__(cls, code)",
        "        obj._value_ = code",
        "        obj.retriable = retriable",
        "        return obj\n",
    ]
    for row in rows:
        lines.append(f"    {row.name} = ({row.code}, {row.retriable == 'yes'})")
    return "\n".join(lines) + "\n"
