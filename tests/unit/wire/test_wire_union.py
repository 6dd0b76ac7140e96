"""The codec generated from the union of the pinned snapshots against each snapshot alone.

The generated code is made from Kafka 4.4.0's specs plus the versions only the 2024 trunk
snapshot has (Produce v0-2, Fetch v0-3, ...; see tools/codegen/union.py). Here:

- every version of every message and record takes its field layout from the snapshot it must
  come from: 4.4.0 where 4.4.0 has the version, the older snapshot otherwise;
- the versions both snapshots have differ only where `SHARED_VERSION_CHANGES` says (4.4.0's
  layout wins there), so a new snapshot cannot change a layout unnoticed;
- the older snapshot's own code, generated afresh from that folder alone into a temporary
  package (what `odradek/wire/_generated/` held before the union), and the committed code agree
  byte for byte on every (message, version) the older snapshot has, both ways: what one
  encodes the other decodes to the same values and re-encodes to the same bytes;
- every attribute of the older code's classes is still there, except `RENAMED`.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from functools import cache
from types import ModuleType
from typing import Any

import pytest
import wire_strategies as ws
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odradek.wire.primitives import Struct
from tools.codegen.generate import generate
from tools.codegen.spec import PINNED_SPEC_DIRS, FieldSpec, MessageSpec, StructSpec, snake
from tools.codegen.union import Layout, identity, layout, load_snapshot, load_union

NEW_DIR, OLD_DIR = PINNED_SPEC_DIRS
OLD_PACKAGE = "odradek_wire_of_the_older_snapshot"

# (message in the older snapshot, version) -> how 4.4.0 changed that same version:
#   renamed: the same bytes, some field (or the message) named differently;
#   tagged:  tagged fields added (bytes unchanged while they hold their defaults);
#   layout:  other bytes.
SHARED_VERSION_CHANGES: dict[tuple[str, int], str] = {
    # api 74 is ListConfigResources in 4.4, its v0 the same bytes.
    ("ListClientMetricsResourcesResponse", 0): "renamed",
    # KIP-932's v0 was unstable in 2024; 4.4 put LeaderEpoch (int32) into v0's partitions.
    ("ReadShareGroupStateSummaryResponse", 0): "layout",
    # GenerationId -> GenerationIdOrMemberEpoch.
    ("TxnOffsetCommitRequest", 3): "renamed",
    ("TxnOffsetCommitRequest", 4): "renamed",
    # Candidate{Epoch,Id,DirectoryId} -> Replica{Epoch,Id,DirectoryId}.
    ("VoteRequest", 0): "renamed",
    ("VoteRequest", 1): "renamed",
    # Internal records: tagged fields added to existing versions.
    ("ConsumerGroupCurrentMemberAssignmentValue", 0): "tagged",  # AssignmentEpochs
    ("ConsumerGroupMetadataValue", 0): "tagged",  # MetadataHash
    ("ConsumerGroupTargetAssignmentMetadataValue", 0): "tagged",  # AssignmentTimestamp
    ("OffsetCommitValue", 4): "tagged",  # topicId
    ("TransactionLogValue", 1): "tagged",  # NextProducerEpoch
}
# Attributes of the older code's classes the union's classes do not have (4.4 names win).
RENAMED: dict[str, str] = {
    "ListClientMetricsResourcesRequest": "ListConfigResourcesRequest",
    "ListClientMetricsResourcesResponse": "ListConfigResourcesResponse",
    "TxnOffsetCommitRequest.generation_id": "generation_id_or_member_epoch",
    "VoteRequest.PartitionData.candidate_epoch": "replica_epoch",
    "VoteRequest.PartitionData.candidate_id": "replica_id",
    "VoteRequest.PartitionData.candidate_directory_id": "replica_directory_id",
}

EXAMPLES = int(os.environ.get("ODRADEK_FUZZ_EXAMPLES", "0"))
FAST = settings(
    max_examples=EXAMPLES or 6,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@cache
def old_specs() -> dict[str, MessageSpec]:
    snap = load_snapshot(OLD_DIR)
    return {m.name: m for m in snap.messages + snap.internal if not m.valid.empty}


@cache
def new_specs() -> dict[Any, MessageSpec]:
    snap = load_snapshot(NEW_DIR)
    return {identity(m): m for m in snap.messages + snap.internal if not m.valid.empty}


@cache
def union_by_identity() -> dict[Any, MessageSpec]:
    return {identity(m): m for m in ws.all_specs().values()}


def union_of(old_name: str) -> MessageSpec:
    return union_by_identity()[identity(old_specs()[old_name])]


# -- layouts: which snapshot each version comes from, and what changed in shared versions ------


def _unnamed(fields: Layout) -> Layout:
    return tuple((*f[1:7], _unnamed(f[7])) for f in fields)


def _without_new_tags(new: Layout, old: Layout) -> Layout:
    old_by = {f[0]: f for f in old}
    old_tags = {f[5] for f in old if f[5] is not None}
    out = []
    for f in new:
        if f[5] is not None and f[5] not in old_tags:
            continue
        sub = _without_new_tags(f[7], old_by[f[0]][7]) if f[0] in old_by else f[7]
        out.append((*f[:7], sub))
    return tuple(out)


def classify(old: Layout, new: Layout) -> str | None:
    if old == new:
        return None
    (old_flex, old_fields), (new_flex, new_fields) = old, new
    if old_flex != new_flex:
        return "layout"
    if _unnamed(old_fields) == _unnamed(new_fields):
        return "renamed"
    if _without_new_tags(new_fields, old_fields) == old_fields:
        return "tagged"
    return "layout"


def test_every_version_comes_from_the_snapshot_that_has_it_newest() -> None:
    olds = {identity(m): m for m in old_specs().values()}
    checked = 0
    for ident, merged in union_by_identity().items():
        new, old = new_specs().get(ident), olds.get(ident)
        for v in merged.version_list:
            src = new if new is not None and v in new.valid else old
            assert src is not None and v in src.valid, (merged.name, v)
            assert layout(merged, v) == layout(src, v), (merged.name, v)
            checked += 1
    assert checked > 800
    # The versions 4.4 dropped are there, from the older snapshot.
    for name, lo in [("ProduceRequest", 0), ("FetchRequest", 0), ("OffsetCommitRequest", 0),
                     ("ListOffsetsRequest", 0), ("CreateTopicsRequest", 0), ("RequestHeader", 0)]:
        assert ws.all_specs()[name].valid.lo == lo, name
        assert new_specs()[identity(ws.all_specs()[name])].valid.lo > lo, name


def test_versions_both_snapshots_have_differ_only_as_listed() -> None:
    changes = {}
    for name, old in old_specs().items():
        new = new_specs().get(identity(old))
        if new is None:
            continue
        for v in old.version_list:
            if v in new.valid and (kind := classify(layout(old, v), layout(new, v))):
                changes[(name, v)] = kind
    assert changes == SHARED_VERSION_CHANGES


def test_the_union_notes_only_the_apis_4_4_removed() -> None:
    """Widening 4.4's messages to the older versions dropped or renamed no field."""
    removed = ["ControlledShutdown", "LeaderAndIsr", "StopReplica", "UpdateMetadata"]
    expected = [f"{api}{kind}: removed from the newer specs; all versions from the older"
                for api in removed for kind in ("Request", "Response")]
    assert sorted(load_union(PINNED_SPEC_DIRS).notes) == sorted(expected)


def test_the_union_keeps_every_older_version_and_field() -> None:
    """OffsetCommit v1's CommitTimestamp, gone from 4.4's file, is back in its old place."""
    spec = ws.all_specs()["OffsetCommitRequest"]
    part = spec.structs["OffsetCommitRequestPartition"]
    names = [f.name for f in part.fields if 1 in f.versions]
    assert names == ["PartitionIndex", "CommittedOffset", "CommitTimestamp", "CommittedMetadata"]
    assert "CommitTimestamp" not in [f.name for f in part.fields if 2 in f.versions]


# -- bytes: the older snapshot's own code against the committed code ---------------------------


@pytest.fixture(scope="module")
def old_wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, type[Struct]]]:
    """The classes of the code the older snapshot alone generates, by message name."""
    root = tmp_path_factory.mktemp("older-snapshot")
    generate([OLD_DIR], root / OLD_PACKAGE)
    sys.path.insert(0, str(root))
    try:
        package: ModuleType = importlib.import_module(OLD_PACKAGE)
        classes = ws.classes_in(package)
    finally:
        sys.path.remove(str(root))
    yield classes
    for mod in [m for m in sys.modules if m.split(".")[0] == OLD_PACKAGE]:
        del sys.modules[mod]


CASES = [
    (name, v)
    for name, spec in sorted(old_specs().items())
    for v in spec.version_list
    if SHARED_VERSION_CHANGES.get((name, v)) != "layout"
]
IDS = [f"{n}-v{v}" for n, v in CASES]


_STRATEGIES: dict[tuple[int, int, bool], Any] = {}


def _strategy(cls: type[Struct], spec: MessageSpec, v: int, with_unknown: bool) -> Any:
    key = (id(cls), v, with_unknown)  # classes and specs live as long as the module
    if key not in _STRATEGIES:
        top = StructSpec(spec.name, spec.fields)
        _STRATEGIES[key] = ws.struct_strategy(cls, top, v, v in spec.flexible, with_unknown)
    return _STRATEGIES[key]


def _values(obj: Any, fields: list[FieldSpec], v: int) -> list[Any]:
    """The values of the fields present in version `v`, in wire order, names aside."""
    out = []
    for f in fields:
        if v not in f.versions:
            continue
        x = getattr(obj, snake(f.name))
        if f.struct is not None and x is not None:
            st_fields = f.struct.fields
            x = [_values(e, st_fields, v) for e in x] if f.is_array else _values(x, st_fields, v)
        out.append(x)
    out.append(obj.unknown_tagged_fields)
    return out


def test_cases_cover_every_version_of_the_older_snapshot() -> None:
    assert len(CASES) == sum(len(s.version_list) for s in old_specs().values()) - 1
    assert len(CASES) > 700


@pytest.mark.parametrize(("name", "version"), CASES, ids=IDS)
@FAST
@given(data=st.data())
def test_the_older_code_and_the_union_read_each_others_bytes_and_write_them_back_the_same(
    old_wire: dict[str, type[Struct]], name: str, version: int, data: st.DataObject
) -> None:
    old_spec, union_spec = old_specs()[name], union_of(name)
    old_cls, union_cls = old_wire[name], ws.all_classes()[union_spec.name]
    tagged = SHARED_VERSION_CHANGES.get((name, version)) == "tagged"
    # Older code -> union. Unknown tags the older code passes through may be fields the union
    # knows where 4.4 added tagged fields: none are drawn there.
    msg = data.draw(_strategy(old_cls, old_spec, version, not tagged), label="older message")
    wire = ws.encode(msg, version)
    decoded, end = union_cls.decode(wire, version)  # type: ignore[attr-defined]
    assert end == len(wire)
    assert ws.encode(decoded, version) == wire
    if not tagged:
        assert _values(decoded, union_spec.fields, version) == _values(msg, old_spec.fields, version)
    # Union -> older code (the older code keeps the added tagged fields as unknown ones).
    msg = data.draw(_strategy(union_cls, union_spec, version, True), label="union message")
    wire = ws.encode(msg, version)
    decoded, end = old_cls.decode(wire, version)  # type: ignore[attr-defined]
    assert end == len(wire)
    assert ws.encode(decoded, version) == wire
    if not tagged:
        assert _values(decoded, old_spec.fields, version) == _values(msg, union_spec.fields, version)


def test_the_older_codes_classes_and_attributes_are_all_still_there(
    old_wire: dict[str, type[Struct]],
) -> None:
    missing = {}

    def walk(old: type, new: type | None, path: str) -> None:
        if new is None:
            missing[path] = "class"
            return
        for attr in old.__annotations__:
            if attr not in new.__annotations__:
                missing[path + "." + attr] = "attribute"
        for key, sub in vars(old).items():
            if isinstance(sub, type) and issubclass(sub, Struct):
                walk(sub, getattr(new, key, None), f"{path}.{key}")

    union = ws.all_classes()
    for name, old_cls in old_wire.items():
        walk(old_cls, union.get(name), name)
    assert sorted(missing) == sorted(RENAMED)
    for old_name, new_name in RENAMED.items():
        owner, _, _ = old_name.rpartition(".")
        if not owner:
            assert new_name in union
            continue
        holder: Any = union[owner.split(".")[0]]
        for part in owner.split(".")[1:]:
            holder = getattr(holder, part)
        assert new_name in holder.__annotations__, old_name
