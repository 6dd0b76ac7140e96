"""Protocol fuzzer: mutated Kafka frames of every served api and version against a real broker.

Run: ``python -m tools.fuzz --frames N --seconds S --seed K [--port P] [--workers W]``.

It starts ``python -m odradek serve`` on 127.0.0.1 port 0 with a temp data dir (or, with
``--port``, targets a broker already listening on 127.0.0.1), then opens many connections.
Each sends frames for the api keys and versions in ``odradek.broker.registry`` (the served
ranges): valid requests built from the generated message classes with random field values
(drawn from the spec model, biased to a small pool of topics, groups and transactional ids so
requests meet existing state), realistic record batches in Produce (every codec; some
corrupt, some with lying headers), and then mutations of those bytes: bit flips, byte
overwrites, truncation, extension, length fields set to -1/0/huge, random bytes, splices,
wrong api versions, unknown api keys, bad frame-size prefixes, frames dribbled byte by byte.

The oracle runs the broker's own frame splitter and header/body decoders over exactly the
bytes sent, so each frame's expected outcome follows from the bytes, not from the mutation:

- a well-formed request at a served version must be answered (acks=0 Produce: no answer, or
  a close when it failed); a frame that cannot be decoded, an unknown api or an unserved
  version (except ApiVersions, answered in v0 form) must close the connection;
- every answer has the request's correlation id, decodes at the request's version with no
  byte left over, and a Fetch answer's record batches are whole (CRC, record count);
- a valid Produce carrying a batch Kafka refuses (bad CRC, lying count or lastOffsetDelta,
  magic, codec, control bit, two batches, ...) must not be acknowledged with NONE;
- no request stays unanswered past its deadline while a fresh ApiVersions/Metadata probe
  still answers (a hang), and the probe itself answers (else: unresponsive);
- the broker process never dies, its RSS stays under ``--rss-limit-mib``, its stderr carries
  no ``Traceback``, and it exits 0 on SIGTERM at the end.

Every finding is printed and saved (JSON: the seed, the connection's frames in hex, the log
lines) in ``--out``; identical findings are counted once. The exit status is 1 when there is
any finding. ``--replay FILE...`` sends saved reproducers to a fresh broker and checks them
the same way. Only 127.0.0.1 is ever a target; runs are bounded by frames and seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Final

import crc32c

from odradek.broker.registry import HANDLERS, supported_range
from odradek.wire import API_SPECS, ApiKey, ProtocolError
from odradek.wire._generated.header import RequestHeader, ResponseHeader
from odradek.wire.compression import CompressionType
from odradek.wire.exceptions import RecordBatchError
from odradek.wire.framing import FrameDecoder
from odradek.wire.headers import request_header_version, response_header_version
from odradek.wire.records import Record, build_batch, iter_batches
from odradek.wire.registry import api_classes
from tools.codegen.spec import (
    PINNED_SPEC_DIRS,
    FieldSpec,
    MessageSpec,
    StructSpec,
    snake,
)
from tools.codegen.union import load_union

HOST: Final = "127.0.0.1"
LISTENING: Final = re.compile(r'listening.*\bport=(\d+)|"event": "listening".*"port": (\d+)')
MAX_FRAME: Final = 104_857_600  # the broker's socket.request.max.bytes default
# Broker settings for the run: no initial rebalance delay and short session timeouts, so
# joins answer fast and fuzzed members expire within seconds.
BROKER_OVERRIDES: Final = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
}
WAIT_CAP_MS: Final = 2000  # legit server-side waits (Fetch max_wait, join timeouts) are capped
TOPICS: Final = [f"fuzz-{i}" for i in range(6)]
GROUPS: Final = [f"group-{i}" for i in range(4)]
TXN_IDS: Final = [f"txn-{i}" for i in range(3)]
CONFIG_NAMES: Final = ["retention.ms", "retention.bytes", "max.message.bytes",
                       "message.timestamp.type", "min.insync.replicas", "compression.type",
                       "flush.messages", "num.partitions", "log.retention.hours"]
INTS: Final = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-(2**63), 2**63 - 1),
}
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_U32: Final = struct.Struct(">I")

# Batch defects Kafka's produce path refuses (ProduceRequest.validateRecords, LogValidator,
# DefaultRecordBatch): a NONE answer to a batch carrying one of them is a finding.
REFUSED_DEFECTS: Final = frozenset({
    "crc", "count+", "count-", "last-offset-delta", "magic", "codec", "control",
    "garbage-compressed", "batch-length", "truncated", "empty-batch", "record-length",
    "two-batches", "no-batch", "zstd-before-v7", "record-fields",
})


# --------------------------------------------------------------------------- the spec model


@cache
def _union_messages() -> dict[str, MessageSpec]:
    """The messages the generated code was made from (the union of the pinned snapshots)."""
    return {m.name: m for m in load_union(PINNED_SPEC_DIRS).messages}


@cache
def request_spec(api_key: int) -> MessageSpec:
    return _union_messages()[API_SPECS[api_key].request_class]


@cache
def top_struct(api_key: int) -> StructSpec:
    spec = request_spec(api_key)
    return StructSpec(spec.name, spec.fields)


_FIELDS: dict[int, list[tuple[str, FieldSpec]]] = {}  # by id(): specs are cached for good


def fields_of(spec: StructSpec) -> list[tuple[str, FieldSpec]]:
    """(attribute name, field) of a struct spec, computed once per spec."""
    out = _FIELDS.get(id(spec))
    if out is None:
        out = _FIELDS[id(spec)] = [(snake(f.name), f) for f in spec.fields]
    return out


def served_versions() -> list[tuple[int, int]]:
    """(api key, version) for every served api and version."""
    out: list[tuple[int, int]] = []
    for key in sorted(HANDLERS):
        rng = supported_range(key)
        if rng is not None:
            out.extend((key, v) for v in range(rng[0], rng[1] + 1))
    return out


def api_name(key: int | None) -> str:
    if key is None:
        return "?"
    spec = API_SPECS.get(key)
    return spec.name if spec else f"key{key}"


# --------------------------------------------------------------------------- value generator


class SharedState:
    """What the fuzzer learned from answers: topic ids of the pool topics."""

    def __init__(self) -> None:
        self.topic_ids: dict[str, uuid.UUID] = {}


@dataclass
class Built:
    payload: bytes  # request header + body
    parts_offsets: list[int]  # byte offsets (in payload) where encoder parts start
    api_key: int
    version: int
    defects: list[tuple[str, int, str]]  # (topic, partition index, defect) of Produce batches


class Generator:
    """Random, mostly realistic values for every field of a request, by type and name."""

    def __init__(self, rng: random.Random, state: SharedState) -> None:
        self.rng = rng
        self.state = state
        self.defects: list[tuple[str, int, str]] = []
        self._defect_by_blob: list[tuple[bytes, str]] = []
        self.api_key = -1

    # -- primitives ------------------------------------------------------------------------

    def interesting_int(self, type_name: str) -> int:
        lo, hi = INTS[type_name]
        r = self.rng.random()
        if r < 0.3:
            return self.rng.choice([0, 1, -1 if lo < 0 else 2, lo, hi])
        if r < 0.7:
            return self.rng.randint(max(lo, -5), min(hi, 100))
        return self.rng.randint(lo, hi)

    def int_value(self, name: str, type_name: str) -> int:
        rng = self.rng
        lo, hi = INTS[type_name]
        if rng.random() < 0.05:
            return self.interesting_int(type_name)

        def pick(*choices: int) -> int:
            return max(lo, min(hi, rng.choice(choices)))

        if name in ("MaxWaitMs", "RebalanceTimeoutMs"):
            return rng.randint(0, 50) if rng.random() < 0.9 else rng.randint(0, WAIT_CAP_MS)
        if name == "SessionTimeoutMs":
            return rng.randint(500, 3000)
        if name.endswith("TimeoutMs"):
            return pick(0, 1000, 30000, 60000)
        if name == "Acks":
            return pick(-1, -1, 1, 1, 0, 2)
        if name in ("PartitionIndex", "Partition", "PartitionId", "Index", "Partitions"):
            return pick(0, 0, 1, 2, 3, -1)
        if name == "NumPartitions":
            return pick(-1, 1, 2, 3)
        if name == "ReplicationFactor":
            return pick(-1, 1, 1, 3)
        if name == "Count":
            return pick(1, 2, 4, 6)
        if name in ("ProducerId",):
            return pick(-1, 1000, 1001, 1002)
        if name in ("ProducerEpoch", "CurrentLeaderEpoch", "LeaderEpoch", "LastFetchedEpoch"):
            return pick(-1, 0, 1)
        if name in ("FetchOffset", "Offset", "CommittedOffset", "LogStartOffset",
                    "Timestamp", "LastStableOffset", "HighWatermark"):
            return pick(0, 0, 1, 5, 10, -1, -2, 1000)
        if name in ("MaxBytes", "PartitionMaxBytes", "MinBytes"):
            return pick(1, 1024, 1 << 20, 50 << 20)
        if name in ("GenerationId", "GenerationIdOrMemberEpoch", "MemberEpoch"):
            return pick(-1, 0, 1, 2)
        if name in ("SessionId", "SessionEpoch", "Epoch"):
            return pick(0, -1, 1)
        if name in ("ReplicaId", "BrokerId", "NodeId"):
            return pick(-1, 1, 0)
        if name == "IsolationLevel":
            return pick(0, 1)
        if name in ("KeyType", "CoordinatorType"):
            return pick(0, 1)
        return self.interesting_int(type_name)

    def text(self) -> str:
        rng = self.rng
        r = rng.random()
        if r < 0.25:
            return ""
        if r < 0.8:
            return "".join(rng.choice("abcdefghij-._0123456789") for _ in range(rng.randint(1, 12)))
        n = rng.randint(1, 200 if r < 0.97 else 1500)
        return "".join(chr(rng.choice([rng.randint(32, 126), rng.randint(0xA0, 0x2FFF)]))
                       for _ in range(n))

    def string_value(self, name: str, owner: str) -> str:
        rng = self.rng
        if rng.random() < 0.08:
            return self.text()
        if name in ("Topic", "TopicName", "TopicNames") or (
            name == "Name" and "Topic" in owner and "Config" not in owner
        ):
            # DeleteTopics only reaches the last two pool topics: the rest keep their data.
            return rng.choice(TOPICS[4:] if self.api_key == ApiKey.DELETE_TOPICS else TOPICS)
        if name in ("GroupId", "Group", "GroupsNames", "Groups", "GroupIds"):
            return rng.choice(GROUPS)
        if name in ("TransactionalId", "TransactionalIds"):
            return rng.choice(TXN_IDS)
        if name in ("MemberId", "Leader"):
            return rng.choice(["", "", "member-1"])
        if name in ("GroupInstanceId",):
            return rng.choice(["inst-1", "inst-2"])
        if name in ("ProtocolType",):
            return rng.choice(["consumer", "consumer", "connect", ""])
        if name in ("ProtocolName",):
            return rng.choice(["range", "roundrobin", "cooperative-sticky"])
        if name in ("ClientSoftwareName",):
            return rng.choice(["odradek-fuzz", "librdkafka", "bad name!"])
        if name in ("ClientSoftwareVersion",):
            return rng.choice(["1.0", "2.16.1", "-x-"])
        if name in ("ResourceName",):
            return rng.choice([*TOPICS[:2], *GROUPS[:1], "kafka-cluster", "*"])
        if "Config" in owner or name in ("ConfigNames", "ConfigurationKeys", "Key"):
            if name in ("Name", "ConfigNames", "ConfigurationKeys", "Key"):
                return rng.choice(CONFIG_NAMES)
            if name == "Value":
                return rng.choice(["1", "-1", "86400000", "LogAppendTime", "lz4", "x"])
        return self.text()

    def bytes_value(self) -> bytes:
        n = self.rng.choice([0, 0, 1, 4, 16, 64, 300])
        return self.rng.randbytes(n)

    def uuid_value(self, name: str) -> uuid.UUID:
        rng = self.rng
        ids = list(self.state.topic_ids.values())
        r = rng.random()
        if name == "TopicId" and ids and r < 0.75:
            return rng.choice(ids)
        if r < 0.9:
            return uuid.UUID(int=0)
        return uuid.UUID(int=rng.getrandbits(128))

    # -- record batches --------------------------------------------------------------------

    def records_value(self, version: int) -> bytes | None:
        """Produce records: mostly one realistic batch; sometimes a defective one."""
        rng = self.rng
        if rng.random() < 0.02:
            return None
        defect: str | None
        if rng.random() < 0.03:
            data, defect = bytearray(), "no-batch"
        else:
            first, defect = self.batch(version)
            data = bytearray(first)
            if rng.random() < 0.05:
                data += self.batch(version, allow_defect=False)[0]
                defect = defect or "two-batches"
        blob = bytes(data)  # a fresh object each time: its id() names it in the message
        if defect:
            self._defect_by_blob.append((blob, defect))
        return blob

    def batch(self, version: int, allow_defect: bool = True) -> tuple[bytes, str | None]:
        rng = self.rng
        codec = rng.choice(list(CompressionType))
        n = rng.choice([1, 1, 2, 5, 10, 30])
        records: list[Record | tuple[bytes | None, bytes | None]] = []
        for i in range(n):
            key = None if rng.random() < 0.2 else rng.randbytes(rng.randint(0, 16))
            value = None if rng.random() < 0.05 else rng.randbytes(
                rng.choice([0, 8, 40, 100, 1000 if rng.random() < 0.1 else 20]))
            headers: list[tuple[str, bytes | None]] = [
                (f"h{j}", rng.randbytes(4)) for j in range(rng.choice([0, 0, 1, 2]))]
            records.append(Record(i, rng.choice([0, 0, 1, i]), key, value, headers))
        idempotent = rng.random() < 0.3
        txn = idempotent and rng.random() < 0.3
        batch = bytearray(build_batch(
            records, compression=codec,
            base_timestamp=int(time.time() * 1000) - rng.choice([0, 0, 1000, 10**9]),
            producer_id=rng.choice([1000, 1001, 1002]) if idempotent else -1,
            producer_epoch=rng.choice([0, 0, 1]) if idempotent else -1,
            base_sequence=rng.choice([0, 0, n, 5]) if idempotent else -1,
            is_transactional=txn,
        ))
        defect: str | None = None
        if codec == CompressionType.ZSTD and version < 7:
            defect = "zstd-before-v7"
        if allow_defect and rng.random() < 0.35:
            defect = self.damage(batch, codec, n)
        return bytes(batch), defect

    def damage(self, batch: bytearray, codec: int, n: int) -> str:
        """Damage one batch in place; returns the defect's name."""
        rng = self.rng
        kind = rng.choice(["crc", "count+", "count-", "last-offset-delta", "magic", "codec",
                           "control", "garbage-compressed", "batch-length", "truncated",
                           "empty-batch", "record-length", "record-fields"])
        if kind == "crc":
            i = rng.randrange(21, len(batch))
            batch[i] ^= 1 << rng.randrange(8)
            return kind
        if kind in ("count+", "count-"):
            delta = rng.choice([1, 2, 1000]) if kind == "count+" else -rng.randint(1, n)
            _I32.pack_into(batch, 57, max(_I32.unpack_from(batch, 57)[0] + delta, -1))
        elif kind == "last-offset-delta":
            lod = _I32.unpack_from(batch, 23)[0]
            _I32.pack_into(batch, 23, rng.choice([lod + 1, lod + 100, max(lod - 1, -1), -1]))
        elif kind == "magic":
            batch[16] = rng.choice([0, 1, 3, 0xFF])
            return kind
        elif kind == "codec":
            attrs = _I16.unpack_from(batch, 21)[0]
            _I16.pack_into(batch, 21, (attrs & ~0x07) | rng.choice([5, 6, 7]))
        elif kind == "control":
            _I16.pack_into(batch, 21, _I16.unpack_from(batch, 21)[0] | 0x20)
        elif kind == "garbage-compressed":
            body = rng.randbytes(max(len(batch) - 61, 8))
            del batch[61:]
            batch += body
            attrs = _I16.unpack_from(batch, 21)[0]
            _I16.pack_into(batch, 21, (attrs & ~0x07) | rng.choice([1, 2, 3, 4]))
            _I32.pack_into(batch, 8, len(batch) - 12)
        elif kind == "batch-length":
            length = _I32.unpack_from(batch, 8)[0]
            _I32.pack_into(batch, 8, rng.choice([length + 1, length - 1, 48, length + 1000]))
            return kind
        elif kind == "truncated":
            del batch[rng.randrange(61, len(batch)):]
            return kind
        elif kind == "empty-batch":
            del batch[61:]
            _I32.pack_into(batch, 57, 0)
            _I32.pack_into(batch, 23, 0)
            _I32.pack_into(batch, 8, len(batch) - 12)
        elif kind == "record-length":
            if codec != CompressionType.NONE:
                return self.damage(batch, codec, n)
            # Never the byte already there: a 63-byte record is encoded 0x7E, and "damaging"
            # it to 0x7E left a valid batch that the broker rightly acknowledged.
            batch[61] = rng.choice([b for b in (0x00, 0x01, 0x7E, (batch[61] + 2) & 0x7F)
                                    if b != batch[61]])
        elif kind == "record-fields":
            # Bytes inside the first record that its fields do not cover: the length chain
            # still adds up, only a walk of every field sees it (DefaultRecord.readFrom).
            length = batch[61] >> 1
            if codec != CompressionType.NONE or batch[61] & 0x81 or length > 56:
                return self.damage(batch, codec, n)
            pad = rng.randint(1, 63 - length)
            batch[61] = (length + pad) << 1
            batch[62 + length : 62 + length] = rng.randbytes(pad)
            _I32.pack_into(batch, 8, len(batch) - 12)
        _U32.pack_into(batch, 17, crc32c.crc32c(bytes(batch[21:])))
        return kind

    # -- structs ---------------------------------------------------------------------------

    def field_value(self, msg_cls: type, owner: StructSpec, f: FieldSpec, version: int,
                    flexible: bool, depth: int) -> Any:
        rng = self.rng
        if version in f.nullable and rng.random() < 0.08:
            return None
        if f.is_array:
            if f.name in ("Topics", "TopicData", "Partitions", "PartitionData"):
                count = rng.choice([1, 1, 1, 2, 0, 3])
            else:
                count = rng.choice([0, 1, 1, 2, 3])
            if depth > 4:
                count = min(count, 1)
            return [self.element(msg_cls, owner, f, version, flexible, depth)
                    for _ in range(count)]
        return self.element(msg_cls, owner, f, version, flexible, depth)

    def element(self, msg_cls: type, owner: StructSpec, f: FieldSpec, version: int,
                flexible: bool, depth: int) -> Any:
        t = f.element_type
        if f.is_struct:
            assert f.struct is not None
            return self.struct(msg_cls, f.struct, version, flexible, depth + 1)
        if t in INTS:
            return self.int_value(f.name, t)
        if t == "bool":
            return self.rng.random() < 0.5
        if t == "float64":
            return self.rng.choice([0.0, 1.5, -1.0, 1e300])
        if t == "string":
            return self.string_value(f.name, owner.name)
        if t == "bytes":
            return self.bytes_value()
        if t == "records":
            return self.records_value(version)
        if t == "uuid":
            return self.uuid_value(f.name)
        raise AssertionError(f"no generator for {t}")

    def struct(self, msg_cls: type, spec: StructSpec, version: int, flexible: bool,
               depth: int) -> Any:
        cls = msg_cls if spec.name == msg_cls.__name__ else getattr(msg_cls, spec.name)
        kwargs = {}
        for name, f in fields_of(spec):
            if version in f.versions:
                kwargs[name] = self.field_value(msg_cls, spec, f, version, flexible, depth)
        obj = cls(**kwargs)
        if flexible and self.rng.random() < 0.03:
            obj.unknown_tagged_fields = [(self.rng.choice([90, 1000, 2**31 - 1]),
                                          self.rng.randbytes(self.rng.choice([0, 3, 200])))]
        return obj

    def request(self, api_key: int, version: int, correlation_id: int) -> Built:
        self.defects = []
        self._defect_by_blob = []
        self.api_key = api_key
        spec = request_spec(api_key)
        req_cls, _ = api_classes(api_key)
        body = self.struct(req_cls, top_struct(api_key), version, version in spec.flexible, 0)
        if api_key == ApiKey.PRODUCE:  # which partition got which defective batch, by identity
            defects = {id(blob): d for blob, d in self._defect_by_blob}
            self.defects = [(t.name, p.index, defects[id(p.records)])
                            for t in body.topic_data for p in t.partition_data
                            if id(p.records) in defects]
        hv = request_header_version(api_key, version)
        client_id = self.rng.choice(["fuzz", "fuzz", "", None, "c" * 300]) if hv >= 1 else ""
        header = RequestHeader(request_api_key=api_key, request_api_version=version,
                               correlation_id=correlation_id, client_id=client_id)
        parts = [bytes(p) for p in header.encode(hv)] + [bytes(p) for p in body.encode(version)]
        offsets, pos = [], 0
        for p in parts:
            offsets.append(pos)
            pos += len(p)
        return Built(b"".join(parts), offsets, api_key, version, list(self.defects))


# --------------------------------------------------------------------------- mutations


def mutate(rng: random.Random, built: Built, other: Callable[[], bytes]) -> tuple[bytes, str]:
    """A mutated copy of the request payload and the mutation's name ("none": unchanged)."""
    payload = bytearray(built.payload)
    r = rng.random()
    if r < 0.40:
        return bytes(payload), "none"
    kind = rng.choices(
        ["bitflip", "byte-set", "truncate", "extend", "length-field", "version", "api-key",
         "random-bytes", "splice", "header-client-id"],
        weights=[18, 10, 12, 6, 16, 10, 5, 3, 4, 3])[0]
    if kind == "bitflip":
        for _ in range(rng.choice([1, 1, 2, 4, 8])):
            i = rng.randrange(len(payload))
            payload[i] ^= 1 << rng.randrange(8)
    elif kind == "byte-set":
        for _ in range(rng.choice([1, 2, 3])):
            payload[rng.randrange(len(payload))] = rng.choice([0x00, 0xFF, 0x7F, 0x80, 0x01])
    elif kind == "truncate":
        del payload[rng.randrange(len(payload)):]
    elif kind == "extend":
        payload += rng.choice([b"\x00", rng.randbytes(rng.randint(1, 64)), b"\xff" * 8])
    elif kind == "length-field":
        candidates = [o for o in built.parts_offsets if o >= 1] or [len(payload)]
        end = rng.choice(candidates)
        width = rng.choice([1, 2, 4])
        value = {1: rng.choice([b"\x00", b"\x01", b"\xff", b"\x80", b"\x7f"]),
                 2: rng.choice([b"\xff\xff", b"\x00\x00", b"\x7f\xff", b"\x80\x00"]),
                 4: rng.choice([b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x7f\xff\xff\xff",
                                b"\x00\x10\x00\x00", b"\x80\x00\x00\x00"])}[width]
        start = max(0, end - width)
        payload[start:end] = value[: end - start]
    elif kind == "version":
        rng_ = supported_range(built.api_key) or (0, 0)
        v = rng.choice([rng_[1] + 1, rng_[0] - 1, -1, rng.randint(-32768, 32767),
                        rng.randint(rng_[0], rng_[1]), 0x7FFF])
        payload[2:4] = _I16.pack(v)
    elif kind == "api-key":
        unserved = [k for k in API_SPECS if k not in HANDLERS]
        k = rng.choice([rng.randint(-32768, 32767), rng.choice(unserved), -1, 1000,
                        rng.choice(sorted(HANDLERS))])
        payload[0:2] = _I16.pack(k)
    elif kind == "random-bytes":
        payload = bytearray(rng.randbytes(rng.choice([0, 1, 7, 8, 12, 40, 200])))
    elif kind == "splice":
        cut = rng.randrange(len(payload) + 1)
        tail = other()
        payload = payload[:cut] + tail[rng.randrange(len(tail) + 1):]
    elif kind == "header-client-id" and len(payload) >= 10:
        payload[8:10] = rng.choice([b"\xff\xff", b"\x7f\xff", b"\x00\x10", b"\x80\x00"])
    return bytes(payload), kind


def frame_bytes(rng: random.Random, payload: bytes) -> tuple[bytes, str, bool]:
    """The size prefix (sometimes a lying one) plus payload; (wire, size mutation, eof after)."""
    r = rng.random()
    if r < 0.97:
        return _I32.pack(len(payload)) + payload, "", False
    kind = rng.choice(["size-negative", "size-zero", "size-huge", "size-short", "size-long"])
    if kind == "size-negative":
        return _I32.pack(rng.choice([-1, -(2**31), -100])) + payload, kind, False
    if kind == "size-zero":
        return _I32.pack(0) + payload, kind, False
    if kind == "size-huge":
        return _I32.pack(rng.choice([MAX_FRAME + 1, 2**31 - 1])) + payload, kind, False
    if kind == "size-short":
        return _I32.pack(rng.randrange(len(payload) + 1)) + payload, kind, True
    # Longer than what follows: the broker waits for bytes that never come until EOF.
    return _I32.pack(len(payload) + rng.choice([1, 100, 10_000])) + payload, kind, True


# --------------------------------------------------------------------------- the oracle


@dataclass
class Expect:
    """What the broker must do with one frame, derived from the bytes alone."""

    outcome: str  # "answer", "close", "either" (answer or close), "silent" (acks=0 produce)
    api_key: int | None = None
    version: int | None = None
    correlation_id: int | None = None
    response_version: int | None = None  # body version of the answer (v0 for KIP-511)
    wait_s: float = 0.0  # legit server-side wait before the answer
    why: str = ""
    body: Any = None

    @property
    def label(self) -> str:
        return f"{api_name(self.api_key)} v{self.version}" if self.api_key is not None else "?"


def classify(payload: bytes) -> Expect:
    """Mirror of the broker's header decode, version check and body decode (as Kafka does)."""
    if len(payload) < 8:
        return Expect("close", why="shorter than a request header")
    key, version = struct.unpack_from(">hh", payload)
    if key not in API_SPECS:
        return Expect("close", key, version, why="unknown api key")
    try:
        header, pos = RequestHeader.decode(payload, request_header_version(key, version))
    except ProtocolError as e:
        return Expect("close", key, version, why=f"bad header: {e}")
    corr = header.correlation_id
    served = supported_range(key)
    if served is None or not served[0] <= version <= served[1]:
        if key == ApiKey.API_VERSIONS:
            return Expect("answer", key, version, corr, 0, why="unsupported ApiVersions version")
        return Expect("close", key, version, corr, why="unsupported api or version")
    req_cls, _ = api_classes(key)
    try:
        body, end = req_cls.decode(payload, version, pos)
    except ProtocolError as e:
        return Expect("close", key, version, corr, why=f"bad body: {e}")
    except Exception as e:  # a codec bug: the broker's own decode will show it
        return Expect("either", key, version, corr, version, why=f"decoder raised {e!r}")
    exp = Expect("answer" if end == len(payload) else "either", key, version, corr, version,
                 body=body, why="" if end == len(payload) else "trailing bytes")
    if key == ApiKey.PRODUCE and body.acks == 0:
        exp.outcome = "silent"
    elif key in (ApiKey.FETCH, ApiKey.SHARE_FETCH):  # both may park up to max_wait_ms
        exp.wait_s = max(body.max_wait_ms, 0) / 1000
    elif key == ApiKey.JOIN_GROUP:
        exp.wait_s = max(body.session_timeout_ms, body.rebalance_timeout_ms, 0) / 1000
    elif key == ApiKey.SYNC_GROUP:
        exp.wait_s = WAIT_CAP_MS * 2 / 1000  # a follower waits for its leader's sync
    return exp


def cap_waits(payload: bytes, exp: Expect) -> bytes:
    """Re-encode a decodable Fetch/ShareFetch/JoinGroup body whose legit wait exceeds the cap."""
    if exp.body is None or exp.wait_s * 1000 <= WAIT_CAP_MS or exp.api_key is None:
        return payload
    body, version = exp.body, exp.version
    assert version is not None
    if exp.api_key in (ApiKey.FETCH, ApiKey.SHARE_FETCH):
        body.max_wait_ms = WAIT_CAP_MS
    elif exp.api_key == ApiKey.JOIN_GROUP:
        body.session_timeout_ms = min(max(body.session_timeout_ms, 0), WAIT_CAP_MS)
        body.rebalance_timeout_ms = min(max(body.rebalance_timeout_ms, 0), WAIT_CAP_MS)
    else:
        return payload
    _, pos = RequestHeader.decode(payload, request_header_version(exp.api_key, version))
    _, end = type(body).decode(payload, version, pos)
    encoded = b"".join(bytes(p) for p in body.encode(version))
    return payload[:pos] + encoded + payload[end:]


def check_response(exp: Expect, payload: bytes) -> str | None:
    """None if `payload` is a well-formed answer to `exp`; else what is wrong."""
    if len(payload) < 4:
        return f"response of {len(payload)} bytes"
    corr = _I32.unpack_from(payload)[0]
    if corr != exp.correlation_id:
        return f"correlation id {corr}, expected {exp.correlation_id}"
    assert exp.api_key is not None and exp.version is not None
    hv = response_header_version(exp.api_key, exp.version)
    try:
        _, pos = ResponseHeader.decode(payload, hv)
        _, resp_cls = api_classes(exp.api_key)
        resp, end = resp_cls.decode(payload, exp.response_version, pos)
    except ProtocolError as e:
        return f"response does not decode at v{exp.response_version}: {e}"
    if end != len(payload):
        return f"response has {len(payload) - end} bytes after its body"
    if exp.api_key == ApiKey.FETCH:
        return check_fetched_batches(resp)
    return None


def check_fetched_batches(resp: Any) -> str | None:
    for t in resp.responses:
        for p in t.partitions:
            recs = p.records
            if not recs:
                continue
            try:
                for b in iter_batches(recs, allow_partial_tail=True):
                    if not b.crc_ok():
                        return f"fetched batch {b!r} fails its CRC"
                    n = sum(1 for _ in b.records())
                    if n != b.records_count:
                        return f"fetched batch {b!r} holds {n} records"
                    if not b.is_control and b.records_count != b.last_offset_delta + 1:
                        return f"fetched batch {b!r}: recordsCount != lastOffsetDelta + 1"
            except RecordBatchError as e:
                return f"fetched records of partition {p.partition_index} unreadable: {e}"
    return None


def accepted_defects(built: Built, resp_payload: bytes) -> list[tuple[str, str]]:
    """Defective batches (REFUSED_DEFECTS) a valid Produce got NONE for."""
    refused = [(t, p, d) for t, p, d in built.defects if d in REFUSED_DEFECTS]
    if not refused:
        return []
    hv = response_header_version(built.api_key, built.version)
    _, pos = ResponseHeader.decode(resp_payload, hv)
    _, resp_cls = api_classes(built.api_key)
    resp, _ = resp_cls.decode(resp_payload, built.version, pos)
    req_cls, _ = api_classes(built.api_key)
    req, _ = req_cls.decode(built.payload, built.version,
                            RequestHeader.decode(built.payload, request_header_version(
                                built.api_key, built.version))[1])
    sent = Counter((t.name, p.index) for t in req.topic_data for p in t.partition_data)
    out = []
    for t in resp.responses:
        for p in t.partition_responses:
            if p.error_code != 0 or sent[(t.name, p.index)] != 1:
                continue
            for topic, index, defect in refused:
                if (topic, index) == (t.name, p.index):
                    out.append((defect, f"{t.name}-{p.index}: batch with defect {defect!r} "
                                f"acknowledged with NONE at offset {p.base_offset}"))
    return out


# --------------------------------------------------------------------------- findings


@dataclass
class Finding:
    kind: str  # broker-died, traceback, malformed-response, closed-well-formed, hang, ...
    label: str  # api and version, or "?"
    detail: str
    frames: list[dict[str, Any]] = field(default_factory=list)  # the connection's frames
    log: list[str] = field(default_factory=list)
    count: int = 1
    key: str | None = None  # what makes two findings the same bug (default: label + detail)

    @property
    def signature(self) -> str:
        if self.key is not None:
            return f"{self.kind}|{self.key}"
        detail = re.sub(r"\d+", "N", self.detail)[:160]
        return f"{self.kind}|{self.label}|{detail}"


def traceback_signature(line: str) -> str:
    """The exception's last line (type: message) of an escaped one-line traceback."""
    m = re.search(r'exception="?(.*?)"?(?: \w+=|$)', line)
    text = (m.group(1) if m else line).replace("\\n", "\n")
    lines = [s for s in text.splitlines() if s.strip()]
    where = [s.strip() for s in lines if s.strip().startswith("File ")]
    return (where[-1] if where else "") + " :: " + (lines[-1].strip() if lines else line[:200])


def traceback_key(signature: str) -> str:
    """One key per bug: numbers and names (groups, topics, ids) out of the exception text."""
    where, _, what = signature.partition(" :: ")
    what = re.sub(r"(group|topic|member|transactional id) .*? (has|is|cannot)", r"\1 X \2", what)
    return re.sub(r"\d+", "N", where) + " :: " + re.sub(r"\d+", "N", what.split(":")[0])


class Findings:
    def __init__(self, out_dir: Path, seed: int) -> None:
        self.out_dir = out_dir
        self.seed = seed
        self.unique: OrderedDict[str, Finding] = OrderedDict()
        self.total = 0  # every finding, repeats included

    def add(self, f: Finding) -> None:
        self.total += 1
        sig = f.signature
        if sig in self.unique:
            self.unique[sig].count += 1
            return
        self.unique[sig] = f
        self.out_dir.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha1(sig.encode()).hexdigest()[:10]
        label = re.sub(r"[^A-Za-z0-9]+", "-", f.label).strip("-") or "none"
        path = self.out_dir / f"finding-{f.kind}-{label}-{digest}.json"
        path.write_text(json.dumps({
            "kind": f.kind, "label": f.label, "detail": f.detail, "seed": self.seed,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "frames": f.frames, "log": f.log[-20:],
        }, indent=1) + "\n")
        print(f"FINDING {f.kind} [{f.label}] {f.detail[:300]} -> {path}", flush=True)

    def __len__(self) -> int:
        return len(self.unique)


# --------------------------------------------------------------------------- the broker


class Target:
    """The broker under test: a child process we started, or a port given with --port."""

    def __init__(self, port: int | None, overrides: dict[str, str]) -> None:
        self.fixed_port = port
        self.overrides = overrides
        self.port = port or 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.tmp = Path(tempfile.mkdtemp(prefix="odradek-fuzz-"))
        self.log_path = self.tmp / "broker.log"
        self.generation = 0
        self._log_pos = 0
        self.peak_rss = 0
        self.exit_codes: list[int] = []

    @property
    def managed(self) -> bool:
        return self.fixed_port is None

    def start(self, timeout: float = 60.0) -> None:
        """`python -m odradek serve` on 127.0.0.1 port 0 with a fresh data dir; stderr goes
        straight to the log file (no pipe to drain), ready once it logs `listening`."""
        self.generation += 1
        if not self.managed:
            return
        data = self.tmp / f"data-{self.generation}"
        if self.log_path.exists():  # keep earlier output: append it to a history file
            with (self.tmp / "broker-history.log").open("a") as hist:
                hist.write(self.log_path.read_text(errors="replace"))
        argv = [sys.executable, "-m", "odradek", "serve",
                "--override", f"listeners=PLAINTEXT://{HOST}:0",
                "--override", f"log.dirs={data}"]
        for k, v in self.overrides.items():
            argv += ["--override", f"{k}={v}"]
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=log,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self._log_pos = 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            m = LISTENING.search(self.log_path.read_text(errors="replace"))
            if m:
                self.port = int(m.group(1) or m.group(2))
                return
            time.sleep(0.02)  # polls the log for the `listening` line, with a deadline
        self.kill()
        raise RuntimeError(f"the broker did not start; see {self.log_path}")

    def alive(self) -> bool:
        return not self.managed or (self.proc is not None and self.proc.poll() is None)

    def exit_code(self) -> int | None:
        if not self.managed or self.proc is None:
            return None
        code: int | None = self.proc.poll()
        return code

    def rss_bytes(self) -> int:
        if not self.managed or self.proc is None:
            return 0
        try:
            text = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return 0
        m = re.search(r"VmRSS:\s+(\d+) kB", text)
        rss = int(m.group(1)) * 1024 if m else 0
        self.peak_rss = max(self.peak_rss, rss)
        return rss

    def new_log_lines(self) -> list[str]:
        if not self.managed or not self.log_path.exists():
            return []
        with self.log_path.open("rb") as f:
            f.seek(self._log_pos)
            data = f.read()
        cut = data.rfind(b"\n") + 1
        self._log_pos += cut
        return data[:cut].decode(errors="replace").splitlines()

    def kill(self) -> None:
        if self.managed and self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def stop(self) -> int | None:
        """SIGTERM and wait; the exit code (None when not ours)."""
        if not self.managed or self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
                return -9
        code: int | None = self.proc.returncode
        return code

    def cleanup(self, keep: bool) -> None:
        if not keep:
            shutil.rmtree(self.tmp, ignore_errors=True)


# --------------------------------------------------------------------------- connections


class Closed(Exception):
    pass


async def read_frame(reader: asyncio.StreamReader, timeout: float) -> bytes:
    """One response payload; raises Closed on EOF, TimeoutError past `timeout`."""
    async with asyncio.timeout(timeout):
        try:
            head = await reader.readexactly(4)
        except (asyncio.IncompleteReadError, ConnectionError) as e:
            raise Closed() from e
        size = _I32.unpack(head)[0]
        if size < 0 or size > 512 << 20:
            raise ValueError(f"response frame size {size}")
        try:
            return await reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError) as e:
            raise Closed() from e


def probe_payloads() -> list[tuple[bytes, Expect]]:
    """ApiVersions v3 and Metadata v1 (all topics): the liveness probe."""
    out = []
    for i, (key, version, body) in enumerate([
        (ApiKey.API_VERSIONS, 3, api_classes(ApiKey.API_VERSIONS)[0](
            client_software_name="fuzz-probe", client_software_version="1")),
        (ApiKey.METADATA, 1, api_classes(ApiKey.METADATA)[0]()),  # no topics: brokers only
    ]):
        hv = request_header_version(key, version)
        header = RequestHeader(request_api_key=key, request_api_version=version,
                               correlation_id=7000 + i, client_id="fuzz-probe")
        payload = b"".join(bytes(p) for p in [*header.encode(hv), *body.encode(version)])
        out.append((payload, classify(payload)))
    return out


async def probe(port: int, timeout: float) -> str | None:
    """None when a fresh connection gets well-formed ApiVersions and Metadata answers."""
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(HOST, port)
            try:
                for payload, exp in probe_payloads():
                    writer.write(_I32.pack(len(payload)) + payload)
                    await writer.drain()
                    problem = check_response(exp, await read_frame(reader, timeout))
                    if problem:
                        return f"probe answer malformed: {problem}"
            finally:
                writer.close()
        return None
    except (TimeoutError, Closed, OSError, ValueError) as e:
        return f"probe failed: {e!r}"


async def count_state(port: int) -> dict[str, int]:
    """Topics, partitions and groups the broker holds (Metadata v1, ListGroups v0)."""
    reader, writer = await asyncio.open_connection(HOST, port)
    out: dict[str, int] = {}
    all_topics = api_classes(ApiKey.METADATA)[0]()
    all_topics.topics = None  # null: every topic (the constructor turns None into [])
    try:
        for key, version, body in [
            (ApiKey.METADATA, 1, all_topics),
            (ApiKey.LIST_GROUPS, 0, api_classes(ApiKey.LIST_GROUPS)[0]()),
        ]:
            header = RequestHeader(request_api_key=key, request_api_version=version,
                                   correlation_id=1, client_id="fuzz-count")
            payload = b"".join(bytes(p) for p in [*header.encode(1), *body.encode(version)])
            writer.write(_I32.pack(len(payload)) + payload)
            await writer.drain()
            resp, _ = api_classes(key)[1].decode(await read_frame(reader, 30), version, 4)
            if key == ApiKey.METADATA:
                out["topics"] = len(resp.topics)
                out["partitions"] = sum(len(t.partitions) for t in resp.topics)
            else:
                out["groups"] = len(resp.groups)
    finally:
        writer.close()
    return out


@dataclass
class Sent:
    wire: bytes  # what was written, size prefix included
    expects: list[Expect]
    built: Built | None
    mutation: str
    eof: bool = False
    dribble: bool = False

    def record(self) -> dict[str, Any]:
        return {"hex": self.wire.hex(), "mutation": self.mutation, "eof": self.eof,
                "dribble": self.dribble,
                "defects": [list(d) for d in self.built.defects] if self.built else [],
                "expect": [f"{e.outcome} {e.label} {e.why}".strip() for e in self.expects]}


class Stats:
    def __init__(self) -> None:
        self.frames = 0
        self.responses = 0
        self.closes = 0
        self.silent = 0
        self.connections = 0
        self.per_api: Counter[str] = Counter()
        self.per_outcome: Counter[str] = Counter()
        self.per_mutation: Counter[str] = Counter()


class Fuzzer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.seed: int = args.seed
        self.target = Target(args.port, {**BROKER_OVERRIDES})
        self.findings = Findings(Path(args.out), self.seed)
        self.stats = Stats()
        self.state = SharedState()
        self.cases = served_versions()
        self.conn_counter = 0
        self.case_index = 0
        self.stop_at = 0.0
        self.done = False
        self.up = asyncio.Event()
        self.restarting = False
        # local port -> (broker generation, frames sent on it): maps log lines to inputs
        self.by_port: OrderedDict[int, tuple[int, list[Sent], deque[Expect]]] = OrderedDict()
        self.close_reasons: OrderedDict[int, str] = OrderedDict()
        self.tracebacks = 0
        self.state_counts: dict[str, int] = {}

    # -- broker lifecycle ------------------------------------------------------------------

    async def start_broker(self) -> None:
        self.up.clear()
        await asyncio.to_thread(self.target.start)
        await self.setup_pool()
        self.up.set()

    async def restart_broker(self, why: str) -> None:
        if self.restarting or not self.target.managed:
            return
        self.restarting = True
        try:
            self.up.clear()
            print(f"restarting the broker: {why}", flush=True)
            await asyncio.to_thread(self.target.kill)
            await self.start_broker()
        finally:
            self.restarting = False

    async def setup_pool(self) -> None:
        """Create the pool topics and learn their ids (Metadata v12)."""
        ct_cls = api_classes(ApiKey.CREATE_TOPICS)[0]
        body = ct_cls(topics=[ct_cls.CreatableTopic(name=t, num_partitions=4,
                                                    replication_factor=1) for t in TOPICS],
                      timeout_ms=30000)
        md_cls = api_classes(ApiKey.METADATA)[0]
        md = md_cls(topics=[md_cls.MetadataRequestTopic(name=t) for t in TOPICS],
                    allow_auto_topic_creation=False)
        reader, writer = await asyncio.open_connection(HOST, self.target.port)
        try:
            for i, (key, version, msg) in enumerate([(ApiKey.CREATE_TOPICS, 5, body),
                                                     (ApiKey.METADATA, 12, md)]):
                hv = request_header_version(key, version)
                header = RequestHeader(request_api_key=key, request_api_version=version,
                                       correlation_id=i, client_id="fuzz-setup")
                payload = b"".join(bytes(p) for p in [*header.encode(hv), *msg.encode(version)])
                writer.write(_I32.pack(len(payload)) + payload)
                await writer.drain()
                resp_payload = await read_frame(reader, 30)
                if key == ApiKey.METADATA:
                    _, pos = ResponseHeader.decode(resp_payload, 1)
                    resp, _ = api_classes(key)[1].decode(resp_payload, version, pos)
                    for t in resp.topics:
                        if t.name in TOPICS:
                            self.state.topic_ids[t.name] = t.topic_id
        finally:
            writer.close()

    # -- monitor ---------------------------------------------------------------------------

    async def monitor(self) -> None:
        last_print = last_pool = time.monotonic()
        last_frames = 0
        while not self.done:
            await asyncio.sleep(0.5)
            self.scan_log()
            if self.restarting:
                continue
            if time.monotonic() - last_pool > 5 and self.target.alive():
                # Fuzzed DeleteTopics remove pool topics: bring them back, learn new ids.
                last_pool = time.monotonic()
                with contextlib.suppress(OSError, TimeoutError, Closed, ProtocolError):
                    await self.setup_pool()
            if self.restarting:  # (the pool refresh above may have yielded to a restart)
                continue
            if not self.target.alive():
                code = self.target.exit_code()
                tail = self.target.log_path.read_text(errors="replace").splitlines()[-15:]
                frames = [s.record() for _, (g, sent, _) in list(self.by_port.items())[-8:]
                          if g == self.target.generation for s in sent[-3:]]
                self.findings.add(Finding("broker-died", "?", f"broker exited with {code}",
                                          frames, tail))
                await self.restart_broker("it died")
                continue
            rss = self.target.rss_bytes()
            if rss > self.args.rss_limit_mib << 20:
                self.findings.add(Finding(
                    "memory", "?", f"broker RSS {rss >> 20} MiB > {self.args.rss_limit_mib} MiB",
                    [s.record() for _, (_, sent, _) in list(self.by_port.items())[-8:]
                     for s in sent[-3:]]))
                await self.restart_broker("RSS over the limit")
            now = time.monotonic()
            if now - last_print >= self.args.report_every:
                rate = (self.stats.frames - last_frames) / (now - last_print)
                print(f"[{now - self.t0:7.0f}s] frames={self.stats.frames} ({rate:.0f}/s) "
                      f"responses={self.stats.responses} closes={self.stats.closes} "
                      f"connections={self.stats.connections} rss={rss >> 20}MiB "
                      f"peak={self.target.peak_rss >> 20}MiB findings={len(self.findings)}",
                      flush=True)
                last_print, last_frames = now, self.stats.frames

    def scan_log(self) -> None:
        for line in self.target.new_log_lines():
            m = re.search(r"client=(?:\"?)(?:[\d.]+|\[[^\]]*\]):(\d+)", line)
            port = int(m.group(1)) if m else None
            if "closing connection" in line and port is not None:
                self.close_reasons[port] = line
                while len(self.close_reasons) > 20000:
                    self.close_reasons.popitem(last=False)
            if "Traceback" in line:
                self.tracebacks += 1
                entry = self.by_port.get(port) if port is not None else None
                frames = [s.record() for s in entry[1]] if entry else []
                label = "?"
                if entry and entry[2]:  # the earliest unanswered request is the one that failed
                    label = entry[2][0].label
                sig = traceback_signature(line)
                self.findings.add(Finding("traceback", label, sig, frames, [line],
                                          key=traceback_key(sig)))

    # -- workers ---------------------------------------------------------------------------

    def stop_early(self) -> None:
        print("stopping early (signal)", flush=True)
        self.stop_at = 0.0

    def budget_left(self) -> bool:
        return (not self.done and self.stats.frames < self.args.frames
                and time.monotonic() < self.stop_at)

    async def worker(self) -> None:
        while self.budget_left():
            await self.up.wait()
            self.conn_counter += 1
            rng = random.Random(f"{self.seed}:{self.conn_counter}")
            generation = self.target.generation
            try:
                await self.connection(rng, generation)
            except OSError as e:
                if self.target.alive() and generation == self.target.generation \
                        and not self.restarting:
                    print(f"connection error: {e!r}", flush=True)

    def build_frame(self, rng: random.Random, corr: int, gen: Generator) -> Sent:
        # Round robin over the served api versions: each is reached every 209 frames.
        self.case_index += 1
        key, version = self.cases[self.case_index % len(self.cases)]
        built = gen.request(key, version, corr)
        payload, mutation = mutate(
            rng, built, lambda: gen.request(*rng.choice(self.cases), corr + 1).payload)
        exp = classify(payload)
        capped = cap_waits(payload, exp)
        if capped is not payload:
            payload = capped
        wire, size_mutation, eof = frame_bytes(rng, payload)
        if size_mutation:
            mutation = f"{mutation}+{size_mutation}" if mutation != "none" else size_mutation
        self.stats.per_mutation[mutation.split("+")[0] if "+" not in mutation else mutation] += 1
        return Sent(wire, [], built if mutation == "none" else None, mutation, eof,
                    dribble=rng.random() < 0.03)

    async def connection(self, rng: random.Random, generation: int) -> None:
        reader, writer = await asyncio.open_connection(HOST, self.target.port)
        self.stats.connections += 1
        sock = writer.get_extra_info("socket")
        local_port = sock.getsockname()[1]
        sent_list: list[Sent] = []
        pending: deque[Expect] = deque()
        self.by_port[local_port] = (generation, sent_list, pending)
        self.by_port.move_to_end(local_port)
        self.close_reasons.pop(local_port, None)  # a reused port: forget the old reason
        while len(self.by_port) > 5000:
            self.by_port.popitem(last=False)
        decoder = FrameDecoder(MAX_FRAME)
        gen = Generator(rng, self.state)
        corr = rng.randrange(1 << 20)
        n_frames = rng.choice([1, 2, 3, 5, 10, 20, 40])
        pipeline = rng.random() < 0.2
        closing = False  # an already-sent frame must make the broker close the connection
        try:
            for i in range(n_frames):
                if not self.budget_left() or closing:
                    break
                corr += 1
                sent = self.build_frame(rng, corr, gen)
                sent_list.append(sent)
                if len(sent_list) > 40:
                    del sent_list[0]
                await self.send(writer, sent)
                self.stats.frames += 1
                decoder.feed(sent.wire)
                while True:
                    try:
                        payload = decoder.next_frame()
                    except ProtocolError as e:
                        exp = Expect("close", why=str(e))
                        sent.expects.append(exp)
                        pending.append(exp)
                        closing = True
                        break
                    if payload is None:
                        break
                    exp = classify(bytes(payload))
                    sent.expects.append(exp)
                    pending.append(exp)
                    self.stats.per_api[exp.label] += 1
                    self.stats.per_outcome[exp.outcome] += 1
                    if exp.outcome == "close":
                        closing = True
                        break
                if sent.eof:
                    if decoder.bytes_needed and not closing:
                        exp = Expect("close", why="EOF inside a frame")
                        sent.expects.append(exp)
                        pending.append(exp)
                    closing = True
                    with contextlib.suppress(OSError):
                        writer.write_eof()
                if pipeline and not closing and i < n_frames - 1 and rng.random() < 0.7:
                    continue
                ok = await self.drain(reader, pending, sent_list, local_port, generation,
                                      final=closing)
                if not ok:
                    return
            if not closing and self.budget_left() and any(e.outcome == "silent" for e in pending):
                # Make a trailing acks=0 produce observable: one more request must answer.
                probe_payload, exp = probe_payloads()[0]
                corr += 1
                probe_payload = probe_payload[:4] + _I32.pack(corr) + probe_payload[8:]
                exp.correlation_id = corr
                sent = Sent(_I32.pack(len(probe_payload)) + probe_payload, [exp], None, "probe")
                sent_list.append(sent)
                await self.send(writer, sent)
                self.stats.frames += 1
                pending.append(exp)
            await self.drain(reader, pending, sent_list, local_port, generation, final=closing)
        finally:
            writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await writer.wait_closed()

    async def send(self, writer: asyncio.StreamWriter, sent: Sent) -> None:
        if writer.is_closing():
            return  # the broker closed on an earlier frame; drain() checks that
        try:
            if sent.dribble:
                step = max(1, len(sent.wire) // 6)
                for i in range(0, len(sent.wire), step):
                    writer.write(sent.wire[i:i + step])
                    await writer.drain()
                    await asyncio.sleep(0)
            else:
                writer.write(sent.wire)
                await writer.drain()
        except ConnectionError:
            pass  # the broker closed on an earlier frame; drain() checks that

    async def drain(self, reader: asyncio.StreamReader, pending: deque[Expect],
                    sent_list: list[Sent], local_port: int, generation: int,
                    final: bool) -> bool:
        """Read answers until every pending expectation is met; False once the connection
        is over (closed, or a finding ended it)."""
        while pending:
            head = pending[0]
            if all(e.outcome == "silent" for e in pending):
                return True  # acks=0 produces only: no answer to wait for
            if head.outcome == "close" and len(pending) == 1:
                return await self.expect_close(reader, head, sent_list, local_port, generation)
            wait = max((e.wait_s for e in pending), default=0) + self.args.deadline
            try:
                payload = await read_frame(reader, wait)
            except Closed:
                self.stats.closes += 1
                # A close is due if a sent frame may close the connection (an acks=0
                # produce that failed, trailing bytes, a frame Kafka closes for): then the
                # reset that closing with unread input causes may also drop earlier answers.
                must = [pending[0]] if all(e.outcome == "answer" for e in pending) else []
                if must and generation == self.target.generation and self.target.alive():
                    await asyncio.sleep(0.3)  # let the log line about the close arrive
                    self.scan_log()
                    reason = self.close_reasons.get(local_port, "no log line")
                    if "Traceback" not in reason:
                        m = re.search(r'reason="([^"]*)"', reason)
                        why = m.group(1) if m else reason[:200]
                        key_why = re.sub(r"[0-9]+", "N", why)
                        if re.search(r"record|compress|codec", why):
                            key_why = "a stored record batch cannot be read"
                        self.findings.add(Finding(
                            "closed-well-formed", must[0].label,
                            f"connection closed before answering a well-formed request "
                            f"(broker log: {why})",
                            [s.record() for s in sent_list],
                            key=f"{api_name(must[0].api_key)}|{key_why}"))
                return False
            except TimeoutError:
                await self.report_hang(pending, sent_list, generation)
                return False
            except ValueError as e:
                self.add_malformed(pending[0], str(e), sent_list)
                return False
            self.stats.responses += 1
            corr = _I32.unpack_from(payload)[0] if len(payload) >= 4 else None
            while pending and pending[0].outcome == "silent" and pending[0].correlation_id != corr:
                pending.popleft()
                self.stats.silent += 1
            if not pending:
                self.add_malformed(head, f"answer with correlation id {corr} to nothing",
                                   sent_list)
                return False
            exp = pending.popleft()
            if exp.outcome == "close" or exp.correlation_id is None:
                self.add_malformed(exp, "answered a frame Kafka closes the connection for "
                                   f"({exp.why})", sent_list)
                return False
            problem = check_response(exp, payload)
            if problem:
                self.add_malformed(exp, problem, sent_list)
                return False
            built = next((s.built for s in reversed(sent_list) if s.built is not None
                          and exp in s.expects), None)
            if built is not None and built.api_key == ApiKey.PRODUCE and built.defects:
                for defect, what in accepted_defects(built, payload):
                    self.findings.add(Finding("accepted-invalid-batch", exp.label, what,
                                              [s.record() for s in sent_list], key=defect))
        return True

    async def expect_close(self, reader: asyncio.StreamReader, exp: Expect,
                           sent_list: list[Sent], local_port: int, generation: int) -> bool:
        try:
            payload = await read_frame(reader, self.args.deadline)
        except Closed:
            self.stats.closes += 1
            return False
        except TimeoutError:
            await self.report_hang([exp], sent_list, generation, closing=True)
            return False
        except ValueError as e:
            self.add_malformed(exp, str(e), sent_list)
            return False
        self.stats.responses += 1
        self.add_malformed(exp, f"answered ({len(payload)} bytes) a frame Kafka closes the "
                           f"connection for ({exp.why})", sent_list)
        return False

    def add_malformed(self, exp: Expect, problem: str, sent_list: list[Sent]) -> None:
        kind = "answered-malformed" if exp.outcome == "close" else "malformed-response"
        key = None
        if problem.startswith("fetched"):
            kind = "fetched-invalid-batch"
            key = next(k for k in ("CRC", "lastOffsetDelta", "holds", "unreadable", "")
                       if k in problem)
        self.findings.add(Finding(kind, exp.label, problem, [s.record() for s in sent_list],
                                  key=key))

    async def report_hang(self, pending: Sequence[Expect], sent_list: list[Sent],
                          generation: int, closing: bool = False) -> None:
        if generation != self.target.generation or not self.target.alive():
            return
        problem = await probe(self.target.port, self.args.deadline)
        waiting = next((e for e in pending if e.outcome != "silent"), pending[0])
        what = ("connection left open after a frame Kafka closes it for" if closing
                else "request unanswered")
        frames = [s.record() for s in sent_list]
        if problem is None:
            self.findings.add(Finding("hang", waiting.label,
                                      f"{what} after {self.args.deadline:.0f}s "
                                      f"({waiting.why or waiting.outcome}); a fresh probe answers",
                                      frames))
        else:
            self.findings.add(Finding("unresponsive", waiting.label,
                                      f"{what}, and {problem}", frames))
            await self.restart_broker("unresponsive")

    # -- run -------------------------------------------------------------------------------

    async def run(self) -> int:
        self.t0 = time.monotonic()
        print(f"fuzz: seed={self.seed} frames<={self.args.frames} seconds<={self.args.seconds} "
              f"workers={self.args.workers} apis={len(HANDLERS)} "
              f"api-versions={len(self.cases)}", flush=True)
        await self.start_broker()
        print(f"broker on {HOST}:{self.target.port} (log {self.target.log_path})", flush=True)
        self.stop_at = time.monotonic() + self.args.seconds
        for signum in (signal.SIGINT, signal.SIGTERM):  # stop early, still with a summary
            asyncio.get_running_loop().add_signal_handler(signum, self.stop_early)
        mon = asyncio.create_task(self.monitor())
        await asyncio.gather(*(self.worker() for _ in range(self.args.workers)))
        self.done = True
        await mon
        return await self.finish()

    async def finish(self) -> int:
        elapsed = time.monotonic() - self.t0
        if self.target.alive():
            problem = await probe(self.target.port, self.args.deadline)
            if problem:
                self.findings.add(Finding("unresponsive", "?", f"final {problem}"))
            else:
                with contextlib.suppress(Exception):
                    self.state_counts = await count_state(self.target.port)
        self.target.rss_bytes()
        self.scan_log()
        code = await asyncio.to_thread(self.target.stop)
        self.scan_log()
        if code not in (None, 0):
            self.findings.add(Finding("unclean-exit", "?", f"broker exited with {code} on SIGTERM",
                                      log=self.target.log_path.read_text(
                                          errors="replace").splitlines()[-15:]))
        self.summary(elapsed)
        self.target.cleanup(keep=bool(self.findings) or self.args.keep)
        return 1 if self.findings else 0

    def summary(self, elapsed: float) -> None:
        s = self.stats
        served = {f"{api_name(k)} v{v}" for k, v in self.cases}
        covered = {k for k in s.per_api if k in served}
        lines = [
            "== fuzz summary",
            f"seed {self.seed}; {elapsed:.1f}s; {s.frames} frames "
            f"({s.frames / max(elapsed, 1e-9):.0f}/s) on {s.connections} connections",
            f"responses {s.responses}, closes {s.closes}, silent acks=0 produces {s.silent}",
            f"outcomes expected: {dict(s.per_outcome)}",
            f"mutations: {dict(s.per_mutation.most_common())}",
            f"served api versions reached with a decodable header: {len(covered)}/{len(served)}",
            f"broker peak RSS {self.target.peak_rss / 2**20:.0f} MiB "
            f"(limit {self.args.rss_limit_mib} MiB); broker starts {self.target.generation}; "
            f"state at the end: {self.state_counts}",
            "per api (frames whose header names it): " + ", ".join(
                f"{k}={n}" for k, n in sorted(s.per_api.items()) if k in served),
            f"findings: {len(self.findings)} unique",
        ]
        for f in self.findings.unique.values():
            lines.append(f"  - {f.kind} [{f.label}] x{f.count}: {f.detail[:400]}")
        print("\n".join(lines), flush=True)
        if self.args.json:
            Path(self.args.json).write_text(json.dumps({
                "seed": self.seed, "seconds": round(elapsed, 1), "frames": s.frames,
                "connections": s.connections, "responses": s.responses, "closes": s.closes,
                "silent": s.silent, "peak_rss_mib": round(self.target.peak_rss / 2**20, 1),
                "broker_starts": self.target.generation, "state_at_end": self.state_counts,
                "api_versions_covered": len(covered), "api_versions_served": len(served),
                "per_api": dict(s.per_api), "mutations": dict(s.per_mutation),
                "findings": [{"kind": f.kind, "label": f.label, "detail": f.detail,
                              "count": f.count} for f in self.findings.unique.values()],
            }, indent=1) + "\n")


# --------------------------------------------------------------------------- replay


async def replay(args: argparse.Namespace, files: list[Path]) -> int:
    """Send each reproducer's frames on one connection to a fresh broker; check as in a run."""
    fz = Fuzzer(args)
    fz.t0 = time.monotonic()
    await fz.start_broker()
    fz.stop_at = time.monotonic() + 3600
    args.frames = 10**12
    mon = asyncio.create_task(fz.monitor())
    for path in files:
        doc = json.loads(path.read_text())
        before = fz.findings.total
        reader, writer = await asyncio.open_connection(HOST, fz.target.port)
        local_port = writer.get_extra_info("socket").getsockname()[1]
        sent_list: list[Sent] = []
        pending: deque[Expect] = deque()
        fz.by_port[local_port] = (fz.target.generation, sent_list, pending)
        decoder = FrameDecoder(MAX_FRAME)
        closing = False
        try:
            for fr in doc["frames"]:
                wire = bytes.fromhex(fr["hex"])
                built = None
                if fr.get("defects"):  # a valid Produce carrying batches Kafka refuses
                    key, version = struct.unpack_from(">hh", wire, 4)
                    built = Built(wire[4:], [], key, version,
                                  [(t, int(p), d) for t, p, d in fr["defects"]])
                sent = Sent(wire, [], built, fr.get("mutation", "?"), fr.get("eof", False),
                            fr.get("dribble", False))
                sent_list.append(sent)
                await fz.send(writer, sent)
                fz.stats.frames += 1
                decoder.feed(sent.wire)
                while not closing:
                    try:
                        payload = decoder.next_frame()
                    except ProtocolError as e:
                        exp = Expect("close", why=str(e))
                    else:
                        if payload is None:
                            break
                        exp = classify(bytes(payload))
                    sent.expects.append(exp)
                    pending.append(exp)
                    closing = exp.outcome == "close"
                if sent.eof:
                    if decoder.bytes_needed and not closing:
                        pending.append(Expect("close", why="EOF inside a frame"))
                    closing = True
                    with contextlib.suppress(OSError):
                        writer.write_eof()
                if closing:
                    break
                if not await fz.drain(reader, pending, sent_list, local_port,
                                      fz.target.generation, final=False):
                    break
            else:
                await fz.drain(reader, pending, sent_list, local_port, fz.target.generation,
                               final=True)
            if closing:
                await fz.drain(reader, pending, sent_list, local_port, fz.target.generation,
                               final=True)
        finally:
            writer.close()
        await asyncio.sleep(0.6)  # one monitor pass: tracebacks reach the log
        fz.scan_log()
        print(f"replay {path.name}: {'FINDING' if fz.findings.total > before else 'ok'}",
              flush=True)
    fz.done = True
    await mon
    return await fz.finish()


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__.split("\n")[0])
    p.add_argument("--frames", type=int, default=10**12, help="stop after this many frames")
    p.add_argument("--seconds", type=float, default=60.0, help="stop after this long")
    p.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    p.add_argument("--port", type=int, default=None,
                   help="fuzz a broker already listening on 127.0.0.1:PORT (no process checks)")
    p.add_argument("--workers", type=int, default=24, help="concurrent connections")
    p.add_argument("--deadline", type=float, default=20.0,
                   help="seconds an answer (or close) may take beyond the request's own wait")
    p.add_argument("--rss-limit-mib", type=int, default=500)
    p.add_argument("--out", default="fuzz-findings", help="folder for reproducers")
    p.add_argument("--json", default=None, help="write the summary as JSON to this file")
    p.add_argument("--report-every", type=float, default=10.0, help="progress line period (s)")
    p.add_argument("--keep", action="store_true", help="keep the broker's data dir and log")
    p.add_argument("--replay", nargs="+", type=Path, default=None,
                   help="send these reproducer files instead of fuzzing")
    args = p.parse_args(argv)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 32)
    return args


def main(argv: Sequence[str] | None = None, *, hooks: Callable[[Fuzzer], None] | None = None) -> int:
    args = parse_args(argv)
    if args.replay:
        return asyncio.run(replay(args, args.replay))
    fuzzer = Fuzzer(args)
    if hooks is not None:
        hooks(fuzzer)
    return asyncio.run(fuzzer.run())


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
