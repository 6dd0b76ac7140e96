"""Cross-check the generated codec against kio, an independent codec generated from newer specs.

For every (message, version) that both know, the two field sets are matched struct by struct
(spec order, names CamelCase -> snake_case; kio drops `_ms` from fields it types as timedelta or
datetime). Pairs whose field sets differ (newer specs added or retyped fields) are skipped and
counted in `test_kio_coverage`. For each matched pair, random values (hypothesis, from our spec
model) go both ways: Odradek encodes -> kio decodes the same values, kio encodes -> Odradek
decodes the same values, and the two encodings are byte-identical.

kio's own types are normalised: i16/i32 wrappers are ints, timedelta <-> ms, datetime <-> ms
since the epoch (nullable ones use -1 for null), ErrorCode enum <-> int16, zero uuid <-> None,
tuples <-> lists.
"""

from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import pytest
import wire_strategies as ws
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    classify_field,
    get_schema_field_type,
    is_optional,
)
from kio.static.constants import EntityType

from odradek.wire import API_SPECS
from odradek.wire.primitives import ZERO_UUID
from tools.codegen.spec import FieldSpec, MessageSpec, StructSpec, snake

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MS = timedelta(milliseconds=1)
# kio types some int fields more richly; the wire type each stands for.
KIO_WIRE_TYPE = {
    "error_code": "int16",
    "timedelta_i32": "int32",
    "timedelta_i64": "int64",
    "datetime_i64": "int64",
}
KIO_ERROR_CODES = sorted(int(e) for e in KioErrorCode)


class Mismatch(Exception):
    """The two specs disagree on a struct's fields in this version."""


@dataclass
class FieldMap:
    ours: str
    kio: str
    spec: FieldSpec
    kio_type: str | None  # kio's kafka_type for primitives (and primitive arrays)
    kio_optional: bool
    sentinel: bool = False  # kio's None stands for our -1 / zero uuid (field not nullable)
    sub: StructMap | None = None


@dataclass
class StructMap:
    ours_cls: type
    kio_cls: type
    fields: list[FieldMap]


def match_struct(
    msg_cls: type,
    spec: StructSpec,
    kio_cls: type,
    version: int,
    flexible: bool,
    path: str,
    renames: list[str],
) -> StructMap:
    ours_cls = msg_cls if spec.name == msg_cls.__name__ else getattr(msg_cls, spec.name)
    present = [f for f in spec.fields if version in f.versions]
    kfields = [kf for kf in dataclasses.fields(kio_cls) if not kf.name.startswith("__")]
    ours_names = [snake(f.name) for f in present]
    kio_names = [kf.name for kf in kfields]
    if len(present) != len(kfields):
        raise Mismatch(f"{path}: fields {ours_names} vs kio {kio_names}")
    maps: list[FieldMap] = []
    for f, kf in zip(present, kfields, strict=True):
        name = snake(f.name)
        where = f"{path}.{name}"
        kind = classify_field(kf)
        kio_type = (
            None if isinstance(kind, EntityField | EntityTupleField) else get_schema_field_type(kf)
        )
        ms_renamed = name.endswith("_ms") and kf.name == name[:-3] and kio_type in KIO_WIRE_TYPE
        if kf.name not in (name, name + "_") and not ms_renamed:
            # A field renamed in the newer specs: same wire shape (checked below), new name.
            renames.append(f"{where} -> {kf.name}")
        ours_tag = f.tag if flexible and version in f.tagged else None
        kio_tag = kf.metadata.get("tag")
        if ours_tag != kio_tag:
            raise Mismatch(f"{where}: tag {ours_tag} vs kio {kio_tag}")
        if f.is_array != kind.is_array or f.is_struct != (kio_type is None):
            raise Mismatch(f"{where}: {f.type} vs kio {kf.type}")
        opt = is_optional(kf)
        nullable = version in f.nullable
        if kio_type is not None:
            if KIO_WIRE_TYPE.get(kio_type, kio_type) != f.element_type:
                raise Mismatch(f"{where}: {f.type} vs kio {kio_type}")
            # kio maps the -1 / zero-uuid sentinels of non-nullable fields to None.
            sentinel = opt and not nullable and kio_type in {"datetime_i64", "uuid"}
            # Tagged fields are optional by presence in kio, whatever the spec's nullability.
            if opt != nullable and not sentinel and not (ours_tag is not None and not nullable):
                raise Mismatch(f"{where}: nullable {nullable} vs kio {opt}")
            maps.append(FieldMap(name, kf.name, f, kio_type, opt, sentinel))
        else:
            if opt != nullable:
                raise Mismatch(f"{where}: nullable {nullable} vs kio {opt}")
            assert f.struct is not None
            kio_sub = kind.type_
            sub = match_struct(msg_cls, f.struct, kio_sub, version, flexible, where, renames)
            maps.append(FieldMap(name, kf.name, f, None, opt, sub=sub))
    return StructMap(ours_cls, kio_cls, maps)


# -- value conversion --------------------------------------------------------------------------


def _to_kio_el(x: Any, fm: FieldMap) -> Any:
    if fm.sub is not None:
        return to_kio(x, fm.sub)
    t = fm.kio_type
    if t in ("timedelta_i32", "timedelta_i64"):
        return timedelta(milliseconds=x)
    if t == "datetime_i64":
        return None if x == -1 and fm.sentinel else EPOCH + x * MS
    if t == "error_code":
        return KioErrorCode(x)
    if t == "uuid":
        return None if x == ZERO_UUID and fm.sentinel else x
    if t in ("bytes", "records"):
        return bytes(x)
    return x


def to_kio(obj: Any, smap: StructMap) -> Any:
    kwargs: dict[str, Any] = {}
    for fm in smap.fields:
        v = getattr(obj, fm.ours)
        if v is None:
            kwargs[fm.kio] = None
        elif fm.spec.is_array:
            kwargs[fm.kio] = tuple(_to_kio_el(x, fm) for x in v)
        else:
            kwargs[fm.kio] = _to_kio_el(v, fm)
    return smap.kio_cls(**kwargs)


def _from_kio_el(x: Any, fm: FieldMap) -> Any:
    if fm.sub is not None:
        return from_kio(x, fm.sub)
    t = fm.kio_type
    if t in ("timedelta_i32", "timedelta_i64"):
        return x // MS
    if t == "datetime_i64":
        return (x - EPOCH) // MS
    if t == "error_code":
        return int(x)
    if t in ("bytes", "records"):
        return bytes(x)
    if t == "uuid" or t == "float64" or t == "bool" or t == "string":
        return x
    return int(x)


def from_kio(kobj: Any, smap: StructMap) -> Any:
    kwargs: dict[str, Any] = {}
    for fm in smap.fields:
        v = getattr(kobj, fm.kio)
        if v is None:
            if fm.sentinel:
                kwargs[fm.ours] = -1 if fm.kio_type == "datetime_i64" else ZERO_UUID
            else:
                kwargs[fm.ours] = None
        elif fm.spec.is_array:
            kwargs[fm.ours] = [_from_kio_el(x, fm) for x in v]
        else:
            kwargs[fm.ours] = _from_kio_el(v, fm)
    return smap.ours_cls(**kwargs)


def kio_override(pair: Pair) -> ws.Override:
    """Keep values within what kio's richer types can represent (and kio's error enum)."""
    by_field = pair.field_maps()

    def override(_owner: StructSpec, f: FieldSpec, version: int) -> st.SearchStrategy[Any] | None:
        fm = by_field.get(id(f))
        if fm is None or fm.kio_type is None:
            return None
        t = fm.kio_type
        el: st.SearchStrategy[Any]
        if t == "error_code":
            el = st.sampled_from(KIO_ERROR_CODES)
        elif t == "timedelta_i64":
            el = st.integers(-(2**40), 2**40)
        elif t == "datetime_i64":
            el = st.integers(0, 2**42)
            if fm.kio_optional:
                el = st.just(-1) | el
        elif t == "float64":
            el = st.floats(allow_nan=False, allow_infinity=False)
        else:
            return None
        if f.is_array:
            el = st.lists(el, max_size=3)
        if version in f.nullable:
            el = st.none() | el
        return el

    return override


# -- pairs -------------------------------------------------------------------------------------


@dataclass
class Pair:
    name: str  # our message name
    version: int
    kio_path: str
    spec: MessageSpec
    smap: StructMap | None = None
    skip: str | None = None
    renames: list[str] = dataclasses.field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.name}-v{self.version}"

    def field_maps(self) -> dict[int, FieldMap]:
        out: dict[int, FieldMap] = {}

        def walk(sm: StructMap) -> None:
            for fm in sm.fields:
                out[id(fm.spec)] = fm
                if fm.sub is not None:
                    walk(fm.sub)

        assert self.smap is not None
        walk(self.smap)
        return out


def _kio_class(path: str) -> type:
    import importlib

    module, _, attr = path.partition(":")
    cls: type = getattr(importlib.import_module(module), attr)
    return cls


@cache
def all_pairs() -> tuple[list[Pair], list[str]]:
    """(pairs both codecs know, (message, version)s only Odradek knows)."""
    specs = ws.all_specs()
    classes = ws.all_classes()
    both: list[Pair] = []
    ours_only: list[str] = []
    jobs: list[tuple[str, str, EntityType]] = []
    for key, api in API_SPECS.items():
        kname = api_key_map.get(key)
        jobs.append((api.request_class, kname or "", EntityType.request))
        jobs.append((api.response_class, kname or "", EntityType.response))
    jobs.append(("RequestHeader", "request_header", EntityType.header))
    jobs.append(("ResponseHeader", "response_header", EntityType.header))
    for name, kname, etype in jobs:
        cls = classes[name]
        for v in range(cls.MIN_VERSION, cls.MAX_VERSION + 1):  # type: ignore[attr-defined]
            path = schema_name_map.get(kname, {}).get(v, {}).get(etype)  # type: ignore[call-overload]
            if path is None:
                ours_only.append(f"{name}-v{v}")
                continue
            pair = Pair(name, v, path, specs[name])
            kio_cls = _kio_class(path)
            flexible = v in pair.spec.flexible
            if getattr(kio_cls, "__flexible__", flexible) != flexible:
                pair.skip = f"flexible {flexible} vs kio {not flexible}"
            else:
                try:
                    top = StructSpec(name, pair.spec.fields)
                    pair.smap = match_struct(cls, top, kio_cls, v, flexible, name, pair.renames)
                except Mismatch as e:
                    pair.skip = str(e)
            both.append(pair)
    return both, ours_only


PAIRS, OURS_ONLY = all_pairs()
CHECKED = [p for p in PAIRS if p.skip is None]
SKIPPED = [p for p in PAIRS if p.skip is not None]

SETTINGS = settings(
    max_examples=10,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _kio_encode(kobj: Any, kio_cls: type) -> bytes:
    buf = io.BytesIO()
    entity_writer(kio_cls)(buf, kobj)
    return buf.getvalue()


@pytest.mark.parametrize("pair", CHECKED, ids=[p.id for p in CHECKED])
@SETTINGS
@given(data=st.data())
def test_kio_agrees(pair: Pair, data: st.DataObject) -> None:
    assert pair.smap is not None
    cls: Any = ws.all_classes()[pair.name]
    kio_cls = pair.smap.kio_cls
    msg = data.draw(ws.message_strategy(pair.spec, pair.version, override=kio_override(pair)))
    ours = ws.encode(msg, pair.version)

    # Odradek encodes -> kio decodes the same values.
    kobj, size = entity_reader(kio_cls)(ours, 0)
    assert size == len(ours)
    assert from_kio(kobj, pair.smap) == msg

    # kio encodes the same values -> Odradek decodes them, from identical bytes.
    theirs = _kio_encode(to_kio(msg, pair.smap), kio_cls)
    decoded, end = cls.decode(theirs, pair.version)
    assert end == len(theirs)
    assert decoded == msg
    assert theirs == ours


def test_kio_coverage() -> None:
    """Most pairs both codecs know are cross-checked; skips are spec differences only."""
    print(
        f"\nkio cross-check: {len(CHECKED)} (message, version) pairs checked, "
        f"{len(SKIPPED)} skipped for differing field sets, "
        f"{len(OURS_ONLY)} known only to Odradek"
    )
    for p in SKIPPED:
        print(f"  skipped {p.id}: {p.skip}")
    for p in CHECKED:
        if p.renames:
            print(f"  checked {p.id} despite renamed fields: {', '.join(p.renames)}")
    print(f"  known only to Odradek: {', '.join(OURS_ONLY)}")
    assert len(CHECKED) >= 0.8 * len(PAIRS)
    assert len(CHECKED) > 500
