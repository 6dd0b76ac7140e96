"""Kafka's `sasl.jaas.config` syntax: `LoginModuleClass flag key=value ...;`.

Values are bare tokens or double-quoted strings (backslash escapes the next character).
One login module per setting, as Kafka requires for a listener's mechanism; its options
come back as a dict. Errors raise `JaasError` with a message naming no secret.
"""

from __future__ import annotations

from typing import NamedTuple

_FLAGS = ("required", "requisite", "sufficient", "optional")


class JaasError(ValueError):
    pass


class LoginModule(NamedTuple):
    name: str
    flag: str
    options: dict[str, str]


def _tokens(text: str) -> list[tuple[str, bool]]:
    """(token, quoted) pairs; `=` and `;` are tokens of their own."""
    out: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "=;":
            out.append((c, False))
            i += 1
        elif c == '"':
            i += 1
            chars: list[str] = []
            while True:
                if i >= n:
                    raise JaasError("unterminated quoted value in JAAS config")
                c = text[i]
                if c == "\\" and i + 1 < n:
                    chars.append(text[i + 1])
                    i += 2
                elif c == '"':
                    i += 1
                    break
                else:
                    chars.append(c)
                    i += 1
            out.append(("".join(chars), True))
        else:
            start = i
            while i < n and not text[i].isspace() and text[i] not in '=;"':
                i += 1
            out.append((text[start:i], False))
    return out


def parse_jaas(text: str) -> list[LoginModule]:
    """Every login module of a JAAS config value (Kafka accepts exactly one per listener
    mechanism; callers check that)."""
    toks = _tokens(text)
    modules: list[LoginModule] = []
    i = 0
    while i < len(toks):
        name, quoted = toks[i]
        if quoted or name in "=;":
            raise JaasError("JAAS config entry must start with a login module class name")
        if i + 1 >= len(toks) or toks[i + 1][0].lower() not in _FLAGS:
            raise JaasError(f"login module {name} lacks a control flag (required, ...)")
        flag = toks[i + 1][0].lower()
        i += 2
        options: dict[str, str] = {}
        while True:
            if i >= len(toks):
                raise JaasError("JAAS config entry must end with ';'")
            key, kq = toks[i]
            if key == ";" and not kq:
                i += 1
                break
            if (kq or i + 2 >= len(toks) or toks[i + 1] != ("=", False)
                    or (toks[i + 2][0] in "=;" and not toks[i + 2][1])):
                raise JaasError(f"malformed option in login module {name}; expected key=value")
            options[key] = toks[i + 2][0]
            i += 3
        modules.append(LoginModule(name, flag, options))
    if not modules:
        raise JaasError("JAAS config is empty")
    return modules


def single_module(text: str) -> LoginModule:
    modules = parse_jaas(text)
    if len(modules) != 1:
        raise JaasError(f"JAAS config must name exactly one login module, found {len(modules)}")
    return modules[0]
