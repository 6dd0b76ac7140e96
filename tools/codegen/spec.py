"""Typed model of Kafka's JSON message specs (JSON with `//` line comments).

Only names, types, versions and defaults are kept; the specs' `about` prose is dropped on load.
The specs themselves are pinned in the repo, one folder per Kafka snapshot, under
`tools/codegen/specs/` (see its README); `source.json` in a snapshot folder says where it
came from. The generator reads the union of the pinned snapshots (`tools/codegen/union.py`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPECS_ROOT = Path(__file__).resolve().parent / "specs"
# The snapshots the committed code in odradek/wire/_generated/ is generated from, newest
# first: each message takes every version the newest snapshot has from there, and only the
# versions it lacks from the older ones (tools/codegen/union.py).
PINNED_SPEC_DIRS = (SPECS_ROOT / "kafka-4.4.0", SPECS_ROOT / "kafka-trunk-1eb7644349c")

PRIMITIVES = {
    "bool",
    "int8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "float64",
    "string",
    "bytes",
    "records",
    "uuid",
}


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; `hi=None` means open-ended, `empty` means "none"."""

    lo: int = 0
    hi: int | None = None
    empty: bool = False

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return cls(empty=True)
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            lo, hi = text.split("-")
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, v: int) -> bool:
        return not self.empty and v >= self.lo and (self.hi is None or v <= self.hi)

    def shifted(self, by: int) -> Versions:
        if self.empty:
            return self
        return Versions(self.lo + by, None if self.hi is None else self.hi + by)


@dataclass
class FieldSpec:
    name: str
    type: str  # e.g. "int32", "[]string", "[]TopicData", "Cursor"
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: str | None
    flexible_override: Versions | None  # only RequestHeader.ClientId uses this ("none")
    ignorable: bool
    zero_copy: bool
    struct: StructSpec | None = None  # resolved for struct and []struct types

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES


@dataclass
class StructSpec:
    name: str
    fields: list[FieldSpec]


@dataclass
class MessageSpec:
    name: str
    type: str  # request, response, header, data
    api_key: int | None
    valid: Versions
    flexible: Versions
    fields: list[FieldSpec]
    listeners: list[str]
    latest_unstable: bool
    structs: dict[str, StructSpec] = field(default_factory=dict)  # every struct, by name
    # Internal records (coordinator-key/-value specs): the record type, which Kafka writes
    # as the key's int16 version prefix; None for everything else.
    record_type: int | None = None

    @property
    def version_list(self) -> list[int]:
        assert self.valid.hi is not None, self.name
        return list(range(self.valid.lo, self.valid.hi + 1))


@dataclass(frozen=True)
class SpecSource:
    """Where a spec snapshot came from: its `source.json`, and the folder it sits in."""

    repository: str  # e.g. apache/kafka
    ref: str  # the commit the files were taken at, or the release (its jars) they came from
    version: str  # Kafka's version there, e.g. 4.0.0-SNAPSHOT
    path: str  # the snapshot folder, relative to the repo root when inside it

    @classmethod
    def load(cls, spec_dir: Path) -> SpecSource:
        meta = spec_dir / "source.json"
        if not meta.is_file():
            raise FileNotFoundError(f"{meta} is missing: it names the snapshot for the stamp")
        raw = json.loads(meta.read_text())
        assert isinstance(raw, dict), meta
        ref_key = "commit" if "commit" in raw else "release"
        for key in ("repository", ref_key, "version"):
            if not isinstance(raw.get(key), str) or not raw[key]:
                raise ValueError(f"{meta}: {key!r} must be a non-empty string")
        where = spec_dir.resolve()
        path = where.relative_to(ROOT) if where.is_relative_to(ROOT) else where
        return cls(raw["repository"], raw[ref_key], raw["version"], path.as_posix())


def load_json_with_comments(path: Path) -> dict[str, object]:
    text = re.sub(r"^\s*//.*$", "", path.read_text(), flags=re.M)
    data = json.loads(text)
    assert isinstance(data, dict)
    return data


def _parse_field(
    raw: dict[str, object], structs: dict[str, StructSpec], pending: list[FieldSpec]
) -> FieldSpec:
    # Tagged-only fields may omit "versions"; Kafka then takes the tagged range.
    versions = Versions.parse(str(raw.get("versions", raw.get("taggedVersions"))))
    f = FieldSpec(
        name=str(raw["name"]),
        type=str(raw["type"]),
        versions=versions,
        nullable=Versions.parse(raw.get("nullableVersions")),  # type: ignore[arg-type]
        tagged=Versions.parse(raw.get("taggedVersions")),  # type: ignore[arg-type]
        tag=int(raw["tag"]) if "tag" in raw else None,  # type: ignore[call-overload]
        default=str(raw["default"]) if "default" in raw else None,
        flexible_override=Versions.parse(raw["flexibleVersions"])  # type: ignore[arg-type]
        if "flexibleVersions" in raw
        else None,
        ignorable=bool(raw.get("ignorable", False)),
        zero_copy=bool(raw.get("zeroCopy", False)),
    )
    sub = raw.get("fields")
    if sub is not None:
        assert isinstance(sub, list)
        st = StructSpec(f.element_type, [_parse_field(s, structs, pending) for s in sub])
        assert st.name not in structs, f"duplicate struct {st.name}"
        structs[st.name] = st
        f.struct = st
    elif f.is_struct:
        pending.append(f)  # a common struct, resolved after all are read
    return f


def _shift_fields(fields: list[FieldSpec], by: int, seen: set[int]) -> None:
    for f in fields:
        f.versions = f.versions.shifted(by)
        f.nullable = f.nullable.shifted(by)
        f.tagged = f.tagged.shifted(by)
        if f.flexible_override is not None:
            f.flexible_override = f.flexible_override.shifted(by)
        if f.struct is not None and id(f.struct) not in seen:
            seen.add(id(f.struct))
            _shift_fields(f.struct.fields, by, seen)


def load_message(path: Path) -> MessageSpec:
    """One spec file. Kafka 4's coordinator-key specs (internal records) number their only
    version 0 and carry the record type as `apiKey`; older snapshots numbered that version
    by the record type itself, which is also the int16 prefix written before the key. Keys
    are renumbered to the older convention here, so that in every snapshot a key's version
    is the prefix it is written with (GroupMetadataKey is version 2 in both)."""
    raw = load_json_with_comments(path)
    structs: dict[str, StructSpec] = {}
    pending: list[FieldSpec] = []
    fields = [_parse_field(f, structs, pending) for f in raw.get("fields", [])]  # type: ignore[attr-defined]
    for cs in raw.get("commonStructs", []):  # type: ignore[attr-defined]
        st = StructSpec(str(cs["name"]), [_parse_field(f, structs, pending) for f in cs["fields"]])
        structs[st.name] = st
    for f in pending:
        f.struct = structs[f.element_type]
    kind = str(raw["type"])
    key = raw.get("apiKey")
    api_key = int(key) if key is not None else None  # type: ignore[call-overload]
    record_type = None
    valid = Versions.parse(str(raw["validVersions"]))
    # Removed apis (Kafka 4 keeps their files with "validVersions": "none") have no
    # flexibleVersions.
    flexible = Versions.parse(raw.get("flexibleVersions"))  # type: ignore[arg-type]
    if kind.startswith("coordinator-"):
        record_type, api_key = api_key, None
        assert record_type is not None, path
        if kind == "coordinator-key":
            assert (valid.lo, valid.hi) == (0, 0) and flexible.empty, path
            valid = valid.shifted(record_type)
            _shift_fields(fields, record_type, set())
    return MessageSpec(
        name=str(raw["name"]),
        type=kind,
        api_key=api_key,
        valid=valid,
        flexible=flexible,
        fields=fields,
        listeners=list(raw.get("listeners", [])),  # type: ignore[call-overload]
        latest_unstable=bool(raw.get("latestVersionUnstable", False)),
        structs=structs,
        record_type=record_type,
    )


def snake(name: str) -> str:
    """CamelCase spec names to snake_case attribute names (IsrNodes -> isr_nodes)."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    s = s.lower()
    import keyword

    return s + "_" if keyword.iskeyword(s) else s
