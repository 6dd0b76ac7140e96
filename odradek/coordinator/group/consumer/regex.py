"""SubscribedTopicRegex: Kafka's RE2/J syntax, checked and matched with Google's RE2.

Kafka's group coordinator compiles a member's SubscribedTopicRegex with RE2/J (Google's Java
port of RE2: linear time, no backreferences, no lookaround, no possessive quantifiers) and
resolves it against every topic name with a *full* match: `^orders-.*` matches
`orders-eu`, `orders` alone does not match `orders-eu`. Internal topics are not left out
(Kafka filters only by the member's DESCRIBE rights).

RE2 (the `google-re2` package) is the C++ library RE2/J was ported from, with the same
syntax, so it decides validity and matching here. Where the two differ, this module follows
RE2/J:
- RE2 accepts `\\C` (any byte), duplicate capture-group names and non-ASCII group names;
  RE2/J refuses them, and so does `compile_regex`;
- error descriptions are RE2/J's words (RE2 says "missing )", RE2/J "missing closing )"), so
  INVALID_REGULAR_EXPRESSION carries Kafka's message. A pattern with several errors names the
  one RE2 finds, which may not be the one RE2/J would name first.
Known remaining differences (docs/architecture.md, regex subscriptions): RE2 bounds the compiled program's
memory (a huge pattern fails with "pattern too large - compile failed", RE2/J has no such
limit) and each library has its own Unicode tables for `\\p{...}`.

`re2` is imported on first use, so a broker whose groups never use a regex never loads it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

__all__ = ["InvalidRegex", "compile_regex", "invalid_regex_message", "resolve"]

# RE2's error code texts -> RE2/J's descriptions (com.google.re2j.Parser's ERR_* words).
_RE2J_WORDS = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "unexpected )": "regexp/syntax: internal error",  # RE2/J: a stack underflow
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
    "invalid character class": "invalid character class range",
    "invalid character class range": "invalid character class range",
    "invalid escape sequence": "invalid escape sequence",
}

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class InvalidRegex(ValueError):
    """A pattern RE2/J refuses; `description` is RE2/J's PatternSyntaxException description."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


def invalid_regex_message(regex: str, description: str) -> str:
    """Kafka's INVALID_REGULAR_EXPRESSION message for a member's regex."""
    return f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {description}."


@functools.cache
def _re2() -> Any:
    import re2  # google-re2: a compiled extension, loaded only when a group uses a regex

    return re2


@functools.cache
def _options() -> Any:
    options = _re2().Options()
    options.log_errors = False  # RE2 would print every refused pattern to stderr
    return options


def _re2_description(exc: BaseException) -> str:
    raw = exc.args[0] if exc.args else ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    code = text.split(": ", 1)[0]
    return _RE2J_WORDS.get(code, code)


def _re2j_only_errors(pattern: str) -> str | None:
    """What RE2/J refuses in a pattern RE2 accepted: `\\C`, bad or repeated group names."""
    names: set[str] = set()
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1] if i + 1 < n else ""
            if nxt == "C":
                return "invalid escape sequence"
            if nxt == "Q":  # literal text up to \E (or the end)
                end = pattern.find("\\E", i + 2)
                i = n if end < 0 else end + 2
                continue
            i += 2
        elif c == "[":
            i = _skip_class(pattern, i)
        elif c == "(" and pattern.startswith(("(?P<", "(?<"), i) and not pattern.startswith(
                ("(?<=", "(?<!"), i):
            begin = i + (4 if pattern[i + 2] == "P" else 3)
            end = pattern.find(">", begin)
            name = pattern[begin:end]
            if not name or any(ch not in _NAME_CHARS for ch in name):
                return "invalid named capture"
            if name in names:
                return "duplicate capture group name"
            names.add(name)
            i = end + 1
        else:
            i += 1
    return None


def _skip_class(pattern: str, start: int) -> int:
    """The index after the character class opening at `start` (RE2 checked it is closed)."""
    i = start + 1
    n = len(pattern)
    if i < n and pattern[i] == "^":
        i += 1
    first = True
    while i < n and (pattern[i] != "]" or first):
        first = False
        if pattern.startswith("[:", i):
            end = pattern.find(":]", i + 2)
            if end >= 0:
                i = end + 2
                continue
        i += 2 if pattern[i] == "\\" else 1
    return i + 1


@functools.lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> Any:
    """The compiled pattern (an `re2` regexp), or InvalidRegex with RE2/J's description."""
    re2 = _re2()
    try:
        compiled = re2.compile(pattern, _options())
    except re2.error as exc:
        raise InvalidRegex(_re2_description(exc)) from None
    except (UnicodeError, ValueError, TypeError):  # e.g. a lone surrogate
        raise InvalidRegex("invalid UTF-8") from None
    problem = _re2j_only_errors(pattern)
    if problem is not None:
        raise InvalidRegex(problem)
    return compiled


def resolve(patterns: Iterable[str], topic_names: Iterable[str]) -> dict[str, frozenset[str]]:
    """Each pattern's topics: the names it fully matches. A pattern that does not compile
    (cannot happen for validated ones) resolves to nothing, as Kafka logs and ignores it."""
    names = list(topic_names)
    out: dict[str, frozenset[str]] = {}
    for pattern in patterns:
        try:
            compiled = compile_regex(pattern)
        except InvalidRegex:
            out[pattern] = frozenset()
            continue
        out[pattern] = frozenset(t for t in names if compiled.fullmatch(t) is not None)
    return out
