"""Where setting text comes from: Java properties files, `ODRADEK_*` environment variables and
`--override key=value` arguments, each turned into a `{name: text}` dict. Parses no values.

Java properties text (`parse_properties`) is parsed as `java.util.Properties.load` does:
- natural lines end in LF, CR or CRLF; a line whose first non-blank character is `#` or `!` is
  a comment; blank lines are skipped;
- a logical line continues onto the next natural line when it ends in an odd number of
  backslashes; leading blanks of the continuation are dropped;
- the key runs to the first unescaped `=`, `:` or blank; blanks, then at most one `=`/`:`, then
  blanks separate it from the value, which runs to the end of the logical line;
- escapes in keys and values: `\\t \\n \\r \\f`, `\\uXXXX` (exactly four hex digits), and `\\c`
  for any other character c. Text is read as UTF-8 (Java's `load(InputStream)` uses Latin-1;
  UTF-8 is a superset for ASCII files and what people write today).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from odradek.config.types import ConfigError

ENV_PREFIX = "ODRADEK_"

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str, lineno: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(f"line {lineno}: malformed \\uxxxx escape")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    """Join continued lines; yields (first line number, logical line) minus comments/blanks."""
    natural = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(natural):
        start = i
        line = natural[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        parts: list[str] = []
        while True:
            trailing = len(line) - len(line.rstrip("\\"))
            if trailing % 2 == 1:  # an unescaped backslash joins the next line
                parts.append(line[:-1])
                if i >= len(natural):
                    break
                line = natural[i].lstrip(" \t\f")
                i += 1
            else:
                parts.append(line)
                break
        yield start + 1, "".join(parts)


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java properties text (syntax in the module docstring); later keys win."""
    result: dict[str, str] = {}
    for lineno, line in _logical_lines(text):
        i = 0
        while i < len(line):
            ch = line[i]
            if ch == "\\":
                i += 2
                continue
            if ch in "=: \t\f":
                break
            i += 1
        key = line[:i]
        rest = line[i:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        result[_unescape(key, lineno)] = _unescape(rest, lineno)
    return result


def env_to_properties(environ: Mapping[str, str]) -> dict[str, str]:
    """`ODRADEK_LOG_DIRS=/x` -> `{"log.dirs": "/x"}` for every variable with the prefix."""
    return {
        key[len(ENV_PREFIX) :].lower().replace("_", "."): value
        for key, value in environ.items()
        if key.startswith(ENV_PREFIX) and len(key) > len(ENV_PREFIX)
    }


def parse_overrides(overrides: Sequence[str]) -> dict[str, str]:
    """`["k=v", ...]` as given to `--override`; the value is everything after the first '='."""
    result: dict[str, str] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"override {item!r} is not of the form key=value")
        result[key] = value
    return result
