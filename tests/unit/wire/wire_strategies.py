"""Hypothesis strategies for generated wire messages, driven by the codegen's spec model.

For a (message, version) every field present in that version gets a random value of its type
and range; fields absent in the version are left at the class default (as decode leaves them),
so `decoded == original` also proves absent fields stay default. Shared by the round-trip,
robustness and kio cross-check tests.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from functools import cache
from types import ModuleType
from typing import Any

from hypothesis import strategies as st

import odradek.wire._generated as generated
from odradek.wire.primitives import Struct
from tools.codegen.spec import (
    PINNED_SPEC_DIRS,
    FieldSpec,
    MessageSpec,
    StructSpec,
    snake,
)
from tools.codegen.union import load_union

# The specs the committed code is generated from, pinned in the repo (so these tests never skip).
SPEC_DIRS = PINNED_SPEC_DIRS

INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

# (owner struct, field, version) -> strategy for that field's value, or None for the default.
Override = Callable[[StructSpec, FieldSpec, int], "st.SearchStrategy[Any] | None"]

# Mostly short values; sometimes long enough for multi-byte varint lengths (>= 128 bytes).
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=12) | st.text(
    alphabet=st.characters(codec="utf-8"), min_size=100, max_size=200
)
BYTES = st.binary(max_size=16) | st.binary(min_size=127, max_size=300)


@cache
def all_specs() -> dict[str, MessageSpec]:
    """The union of the pinned snapshots, as the generator reads it: messages and records."""
    union = load_union(SPEC_DIRS)
    return {m.name: m for m in union.messages + union.internal}


@cache
def all_classes() -> dict[str, type[Struct]]:
    """Every generated top-level message class (with MIN_VERSION), by spec name."""
    return classes_in(generated)


def classes_in(package: ModuleType) -> dict[str, type[Struct]]:
    """Every top-level message class (with MIN_VERSION) of a package of generated modules."""
    out: dict[str, type[Struct]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        mod = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, obj in vars(mod).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, Struct)
                and hasattr(obj, "MIN_VERSION")
                and obj.__module__ == mod.__name__
            ):
                out[name] = obj
    return out


def encode(msg: Any, version: int) -> bytes:
    return b"".join(bytes(p) for p in msg.encode(version))


def is_flexible(spec: MessageSpec, version: int) -> bool:
    return version in spec.flexible


def primitive(type_name: str) -> st.SearchStrategy[Any]:
    if type_name in INT_RANGES:
        lo, hi = INT_RANGES[type_name]
        return st.integers(lo, hi)
    if type_name == "bool":
        return st.booleans()
    if type_name == "float64":
        return st.floats(allow_nan=False)
    if type_name == "string":
        return TEXT
    if type_name in ("bytes", "records"):
        return BYTES
    if type_name == "uuid":
        return st.uuids()
    raise AssertionError(f"no strategy for {type_name}")


def _known_tags(struct_fields: list[FieldSpec]) -> set[int]:
    return {f.tag for f in struct_fields if f.tag is not None}


def unknown_tags(
    struct_fields: list[FieldSpec],
) -> st.SearchStrategy[list[tuple[int, bytes]] | None]:
    """Sorted unknown tagged fields with tag numbers no version of the struct knows."""
    base = max(_known_tags(struct_fields), default=-1) + 1
    tag = st.integers(base, base + 40) | st.integers(base + 100, 2**31 - 1)
    return st.lists(
        st.tuples(tag, st.binary(max_size=8) | st.binary(min_size=128, max_size=200)),
        max_size=3,
        unique_by=lambda t: t[0],
    ).map(lambda items: sorted(items) or None)


def field_strategy(
    owner_cls: type[Struct],
    owner_spec: StructSpec,
    f: FieldSpec,
    version: int,
    flexible: bool,
    with_unknown: bool,
    override: Override | None,
) -> st.SearchStrategy[Any]:
    if override is not None:
        s = override(owner_spec, f, version)
        if s is not None:
            return s
    if f.is_struct:
        assert f.struct is not None
        el: st.SearchStrategy[Any] = struct_strategy(
            owner_cls, f.struct, version, flexible, with_unknown, override
        )
    else:
        el = primitive(f.element_type)
    if f.is_array:
        el = st.lists(el, max_size=3)
    if version in f.nullable:
        el = st.none() | el
    return el


def struct_strategy(
    msg_cls: type[Struct],
    spec: StructSpec,
    version: int,
    flexible: bool,
    with_unknown: bool = False,
    override: Override | None = None,
) -> st.SearchStrategy[Any]:
    """Instances of `spec` (the message itself or a nested struct) for `version`."""
    cls: type[Struct] = msg_cls if spec.name == msg_cls.__name__ else getattr(msg_cls, spec.name)
    fields = {
        snake(f.name): field_strategy(msg_cls, spec, f, version, flexible, with_unknown, override)
        for f in spec.fields
        if version in f.versions
    }
    extra = unknown_tags(spec.fields) if flexible and with_unknown else st.none()

    def build(args: tuple[dict[str, Any], list[tuple[int, bytes]] | None]) -> Any:
        kwargs, unknown = args
        obj = cls(**kwargs)
        obj.unknown_tagged_fields = unknown  # type: ignore[attr-defined]
        return obj

    return st.tuples(st.fixed_dictionaries(fields), extra).map(build)


def message_strategy(
    spec: MessageSpec,
    version: int,
    *,
    with_unknown: bool = False,
    override: Override | None = None,
) -> st.SearchStrategy[Any]:
    cls = all_classes()[spec.name]
    top = StructSpec(spec.name, spec.fields)
    return struct_strategy(cls, top, version, is_flexible(spec, version), with_unknown, override)


def message_cases() -> list[tuple[str, int]]:
    """(message name, version) for every generated message class and valid version."""
    classes = all_classes()
    return [
        (name, v)
        for name in sorted(classes)
        for v in range(classes[name].MIN_VERSION, classes[name].MAX_VERSION + 1)  # type: ignore[attr-defined]
    ]
