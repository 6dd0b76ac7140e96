"""Every generated (message, version) encodes a default instance and decodes it back."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import odradek.wire._generated as generated
from odradek.wire.primitives import Struct


def _message_classes() -> list[type]:
    out = []
    for info in pkgutil.iter_modules(generated.__path__):
        mod = importlib.import_module(f"odradek.wire._generated.{info.name}")
        for obj in vars(mod).values():
            if inspect.isclass(obj) and issubclass(obj, Struct) and hasattr(obj, "MIN_VERSION"):
                out.append(obj)
    return out


CASES = [
    (cls, v) for cls in _message_classes() for v in range(cls.MIN_VERSION, cls.MAX_VERSION + 1)
]


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.__name__}-v{v}" for c, v in CASES])
def test_default_round_trip(cls: type, version: int) -> None:
    msg = cls()
    data = b"".join(bytes(p) for p in msg.encode(version))  # type: ignore[attr-defined]
    decoded, end = cls.decode(data, version)  # type: ignore[attr-defined]
    assert end == len(data)
    assert decoded == msg


def test_case_count_covers_all_versions() -> None:
    assert len(CASES) > 650
