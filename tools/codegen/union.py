"""The union of several spec snapshots, newest first: what the generator emits from.

Kafka 4.0 dropped the oldest versions of many apis from its spec files (KIP-896): Produce
v0-2, Fetch v0-3, ... are gone from the 4.x files, while clients Odradek serves still send
some of them. So each message is built from the snapshots together:

- every version the newest snapshot has comes from there (its layout wins);
- the versions only an older snapshot has (all below the newest one's lowest) come from that
  one, with their fields: a field the newer file still has is widened to those versions, a
  field the newer file dropped is kept for the old versions only, in its old place;
- a message the newest snapshot lacks, or whose api it removed (`"validVersions": "none"`),
  is taken whole from the older one.

Messages are matched by (request/response, api key), so a renamed api takes the newer name;
headers, data and internal records by name. Error codes: the newest table, plus codes only an
older one has.

After each merge, `check_union` compares the field layout of every version with the
snapshot it must come from and raises `UnionError` on any difference, so the emitted
encoders and decoders are those each snapshot alone would give for its versions.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tools.codegen.spec import (
    FieldSpec,
    MessageSpec,
    SpecSource,
    StructSpec,
    Versions,
    load_message,
)


class UnionError(Exception):
    """Two snapshots cannot be combined for a message (or the combination came out wrong)."""


@dataclass(frozen=True)
class ErrorRow:
    code: int
    name: str
    retriable: str  # yes, no, or ? where the snapshot could not tell


@dataclass
class Snapshot:
    """Everything the generator reads from one snapshot folder, or from a union of them."""

    sources: list[SpecSource]  # newest first
    messages: list[MessageSpec]  # message/: requests, responses, headers, data; by name
    internal: list[MessageSpec]  # internal/: records of the internal topics; by name
    errors: list[ErrorRow]  # by code
    # Facts about the union worth a look (fields the newer layout dropped or renamed, ...).
    notes: list[str] = field(default_factory=list)


def load_snapshot(spec_dir: Path) -> Snapshot:
    messages = [load_message(p) for p in sorted((spec_dir / "message").glob("*.json"))]
    internal = [load_message(p) for p in sorted((spec_dir / "internal").glob("*.json"))]
    with (spec_dir / "errors.tsv").open() as fh:
        errors = [
            ErrorRow(int(r["code"]), r["name"], r["retriable"])
            for r in csv.DictReader(fh, delimiter="\t")
        ]
    return Snapshot(
        [SpecSource.load(spec_dir)],
        sorted(messages, key=lambda m: m.name),
        sorted(internal, key=lambda m: m.name),
        sorted(errors, key=lambda e: e.code),
    )


def load_union(spec_dirs: Sequence[Path]) -> Snapshot:
    """The union of the snapshots in `spec_dirs`, newest first (one folder: that snapshot)."""
    if not spec_dirs:
        raise ValueError("no spec snapshot given")
    snaps = [load_snapshot(d) for d in spec_dirs]
    acc = snaps[-1]
    for newer in reversed(snaps[:-1]):
        acc = union(newer, acc)
    return acc


def identity(m: MessageSpec) -> tuple[str, Any]:
    """What matches a message across snapshots: (kind, api key) for requests and responses
    (an api renamed keeps its key), the name for the rest."""
    if m.type in ("request", "response"):
        return (m.type, m.api_key)
    return ("name", m.name)


def _merge_lists(
    new: list[MessageSpec], old: list[MessageSpec], notes: list[str]
) -> list[MessageSpec]:
    old_by = {identity(m): m for m in old}
    new_by = {identity(m): m for m in new}
    out = []
    for ident in sorted(set(old_by) | set(new_by), key=repr):
        merged = merge(new_by.get(ident), old_by.get(ident), notes)
        if merged is not None:
            out.append(merged)
    return sorted(out, key=lambda m: m.name)


def union(new: Snapshot, old: Snapshot) -> Snapshot:
    notes = [*new.notes, *old.notes]
    errors = {e.code: e for e in old.errors}
    for e in new.errors:
        was = errors.get(e.code)
        if was is not None and was.name != e.name:
            notes.append(f"error {e.code}: {was.name} is called {e.name} in the newer table")
        errors[e.code] = e
    return Snapshot(
        new.sources + old.sources,
        _merge_lists(new.messages, old.messages, notes),
        _merge_lists(new.internal, old.internal, notes),
        [errors[c] for c in sorted(errors)],
        notes,
    )


def _present(spec: MessageSpec | None) -> bool:
    return spec is not None and not spec.valid.empty


def merge(
    new: MessageSpec | None, old: MessageSpec | None, notes: list[str] | None = None
) -> MessageSpec | None:
    """One message of the union: `new`'s versions from `new`, the older ones from `old`."""
    notes = [] if notes is None else notes
    if not _present(new):
        if _present(old) and new is not None:
            notes.append(f"{new.name}: removed from the newer specs; all versions from the older")
        return old if _present(old) else None
    assert new is not None
    if not _present(old):
        return new
    assert old is not None
    new_versions = set(new.version_list)
    only_old = sorted(set(old.version_list) - new_versions)
    if not only_old:
        return new
    if only_old[-1] + 1 != new.valid.lo:
        raise UnionError(
            f"{new.name}: versions {only_old} of the older specs do not sit right below "
            f"the newer {new.version_list}"
        )
    if old.name != new.name:
        notes.append(f"{old.name} is called {new.name} in the newer specs")
    m = _Merger(set(only_old), new_versions, new.name, notes)
    fields = m.fields(new.fields, old.fields, new.name)
    flexible = m.pick(new.flexible, old.flexible, m.old_vs, m.new_vs, new.name)
    merged = MessageSpec(
        name=new.name,
        type=new.type,
        api_key=new.api_key,
        valid=Versions(only_old[0], new.valid.hi),
        flexible=flexible,
        fields=fields,
        listeners=list(new.listeners),
        latest_unstable=new.latest_unstable,
        structs=_structs(fields, new, old, m.structs),
        record_type=new.record_type,
    )
    check_union(merged, new, old)
    return merged


def check_union(merged: MessageSpec, new: MessageSpec, old: MessageSpec) -> None:
    for v in merged.version_list:
        src = new if v in new.valid else old
        if layout(merged, v) != layout(src, v):
            raise UnionError(f"{merged.name} v{v}: the union's layout differs from its source's")


@dataclass
class _Merger:
    old_vs: set[int]  # versions taken from the older snapshot
    new_vs: set[int]  # versions taken from the newer one
    message: str
    notes: list[str]
    structs: dict[str, StructSpec] = field(default_factory=dict)  # merged, by newer name

    def pick(
        self, new: Versions, old: Versions, care_old: set[int], care_new: set[int], what: str
    ) -> Versions:
        """A range that agrees with `old` on `care_old` and with `new` on `care_new`."""

        def agrees(cand: Versions) -> bool:
            return all((v in cand) == (v in old) for v in care_old) and all(
                (v in cand) == (v in new) for v in care_new
            )

        for cand in (new, old):
            if agrees(cand):
                return cand
        wanted = sorted({v for v in care_old if v in old} | {v for v in care_new if v in new})
        if not wanted:
            return Versions(empty=True)
        if wanted[-1] - wanted[0] + 1 != len(wanted):
            raise UnionError(f"{what}: versions {wanted} are not one range")
        top = max(care_old | care_new)
        hi = None if wanted[-1] == top and new.hi is None else wanted[-1]
        return Versions(wanted[0], hi)

    def fields(
        self, new_fields: list[FieldSpec], old_fields: list[FieldSpec], path: str
    ) -> list[FieldSpec]:
        old_by = {f.name: f for f in old_fields}
        new_names = {f.name for f in new_fields}
        common_new = [f.name for f in new_fields if f.name in old_by]
        common_old = [f.name for f in old_fields if f.name in new_names]
        if common_new != common_old:
            raise UnionError(f"{path}: fields in another order: {common_old} -> {common_new}")
        out: list[FieldSpec] = []
        j = 0
        for nf in new_fields:
            of = old_by.get(nf.name)
            if of is None:
                out += self.new_only(nf, path)
                continue
            while old_fields[j].name != nf.name:  # old-only fields before this one
                out += self.old_only(old_fields[j], path)
                j += 1
            j += 1
            out.append(self.both(nf, of, path))
        for of in old_fields[j:]:
            out += self.old_only(of, path)
        return out

    def new_only(self, nf: FieldSpec, path: str) -> list[FieldSpec]:
        if not any(v in nf.versions for v in self.old_vs):
            return [nf]
        # The newer file says "0+" (say) but the older one has no such field there: renamed?
        self.notes.append(
            f"{path}.{nf.name}: in the newer specs from v{nf.versions.lo}, absent from the "
            f"older ones' v{min(self.old_vs)}-{max(self.old_vs)}"
        )
        what = f"{path}.{nf.name}"
        versions = self.pick(
            nf.versions, Versions(empty=True), self.old_vs, self.new_vs, what
        )
        return [replace(nf, versions=versions)]

    def old_only(self, of: FieldSpec, path: str) -> list[FieldSpec]:
        what = f"{path}.{of.name}"
        kept = sorted(v for v in self.old_vs if v in of.versions)
        dropped = sorted(v for v in self.new_vs if v in of.versions)
        if dropped:
            self.notes.append(
                f"{what}: the older specs have it in v{dropped[0]}-{dropped[-1]} too, "
                "the newer ones do not (their layout wins there)"
            )
        if not kept:
            return []
        versions = self.pick(
            Versions(empty=True), of.versions, self.old_vs, self.new_vs, what
        )
        return [replace(of, versions=versions)]

    def both(self, nf: FieldSpec, of: FieldSpec, path: str) -> FieldSpec:
        what = f"{path}.{nf.name}"
        if (
            nf.is_array != of.is_array
            or nf.is_struct != of.is_struct
            or (not nf.is_struct and nf.type != of.type)
        ):
            raise UnionError(f"{what}: type {of.type} in the older specs, {nf.type} in the newer")
        o, n = self.old_vs, self.new_vs
        versions = self.pick(nf.versions, of.versions, o, n, what)
        in_old = {v for v in o if v in of.versions}
        in_new = {v for v in n if v in nf.versions}
        nullable = self.pick(nf.nullable, of.nullable, in_old, in_new, what + " (nullable)")
        tagged = self.pick(nf.tagged, of.tagged, in_old, in_new, what + " (tagged)")
        tagged_old = any(v in of.tagged for v in in_old)
        tagged_new = any(v in nf.tagged for v in in_new)
        if tagged_old and tagged_new and nf.tag != of.tag:
            raise UnionError(f"{what}: tag {of.tag} in the older specs, {nf.tag} in the newer")
        tag = nf.tag if tagged_new or not tagged_old else of.tag
        if (nf.flexible_override is None) != (of.flexible_override is None):
            raise UnionError(f"{what}: flexibleVersions given in one snapshot only")
        flex_override = nf.flexible_override
        if nf.flexible_override is not None and of.flexible_override is not None:
            flex_override = self.pick(
                nf.flexible_override, of.flexible_override, in_old, in_new, what + " (flexible)"
            )
        if nf.default != of.default and in_old:
            raise UnionError(
                f"{what}: default {of.default!r} in the older specs, {nf.default!r} in the newer"
            )
        struct = nf.struct
        if nf.struct is not None and of.struct is not None and in_old:
            struct = self.struct(nf.struct, of.struct, what)
        return replace(
            nf,
            versions=versions,
            nullable=nullable,
            tagged=tagged,
            tag=tag,
            flexible_override=flex_override,
            struct=struct,
        )

    def struct(self, ns: StructSpec, os: StructSpec, path: str) -> StructSpec:
        done = self.structs.get(ns.name)
        if done is not None:
            return done
        if os.name != ns.name:
            self.notes.append(
                f"{self.message}: struct {os.name} is called {ns.name} in the newer specs"
            )
        st = StructSpec(ns.name, [])
        self.structs[ns.name] = st  # before the fields: a struct may (indirectly) hold itself
        st.fields = self.fields(ns.fields, os.fields, f"{path}[{ns.name}]")
        return st


def _structs(
    fields: list[FieldSpec], new: MessageSpec, old: MessageSpec, merged: dict[str, StructSpec]
) -> dict[str, StructSpec]:
    """Every struct the merged fields reach, by name (the merged one where a struct is in both
    snapshots), in the newer file's order, then the older's."""
    reached: dict[str, StructSpec] = {}

    def walk(fs: Iterable[FieldSpec]) -> None:
        for f in fs:
            if f.struct is None or f.struct.name in reached:
                continue
            st = merged.get(f.struct.name, f.struct)
            reached[st.name] = st
            walk(st.fields)

    walk(fields)
    order = [*new.structs, *(n for n in old.structs if n not in new.structs)]
    order += [n for n in reached if n not in order]
    return {n: reached[n] for n in order if n in reached}


# -- layouts ------------------------------------------------------------------------------------

Layout = tuple[Any, ...]


def layout(msg: MessageSpec, version: int) -> Layout:
    """What the bytes of `msg` at `version` depend on, field by field, nested structs included:
    name, type, nullability, tag, default and the string/array encodings used."""
    flex = version in msg.flexible
    return (flex, _layout_fields(msg.fields, version, flex))


def _layout_fields(fields: list[FieldSpec], v: int, flex: bool) -> Layout:
    out = []
    for f in fields:
        if v not in f.versions:
            continue
        compact = flex if f.flexible_override is None else v in f.flexible_override
        tag = f.tag if flex and v in f.tagged else None
        sub = _layout_fields(f.struct.fields, v, flex) if f.struct is not None else ()
        kind = "struct" if f.is_struct else f.element_type
        out.append((f.name, f.is_array, kind, v in f.nullable, compact, tag, f.default, sub))
    return tuple(out)
