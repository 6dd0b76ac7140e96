"""The console's JSON endpoints, as plain functions of a `Console` (no HTTP here: the server
in `odradek.console.server` routes to them, the tests call them through HTTP too).

One `Admin` (one connection per broker) serves every request under a lock: the client answers
one request at a time per connection, and the console is for a person or two, not a fleet.
A background sampler records each group's total lag every `sample_seconds` into a bounded
in-memory history, drawn by the group page as a sparkline.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from odradek.client import Admin, BrokerUnreachable, ClientError, KafkaError, TopicInfo
from odradek.client.data import ConsumedRecord, OutRecord, produce
from odradek.client.groups import (
    describe_group,
    describe_transaction,
    group_lag,
    list_groups,
    list_transactions,
)
from odradek.client.inspect import (
    describe_producers,
    log_dir_sizes,
    offsets_for,
    partition_offsets,
    read_page,
)
from odradek.wire import ErrorCode

__all__ = ["ApiError", "Console"]

MAX_PAGE = 500  # partitions or records in one answer
HISTORY = 300  # lag samples kept per group (10 minutes at one per 2 s)
JSON = dict[str, Any]


class ApiError(Exception):
    """An answer other than 200: the status and one line, sent as {"error": ...}."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _int(params: dict[str, str], name: str, default: int | None, *, low: int = 0,
         high: int | None = None) -> int:
    text = params.get(name)
    if text is None or text == "":
        if default is None:
            raise ApiError(400, f"parameter {name} is required")
        return default
    try:
        value = int(text)
    except ValueError:
        raise ApiError(400, f"parameter {name}: {text!r} is not a whole number") from None
    if value < low or (high is not None and value > high):
        bound = f"{low}-{high}" if high is not None else f"at least {low}"
        raise ApiError(400, f"parameter {name}: {value} is out of range ({bound})")
    return value


def _bytes_view(data: bytes | None) -> JSON | None:
    """Key, value or header bytes for the page: text when it is UTF-8, and base64 always (the
    page renders text, JSON or hex from it)."""
    if data is None:
        return None
    try:
        text: str | None = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return {"text": text, "b64": base64.b64encode(data).decode("ascii"), "size": len(data)}


def _record(rec: ConsumedRecord) -> JSON:
    return {"partition": rec.partition, "offset": rec.offset, "timestamp": rec.timestamp,
            "timestamp_type": "LogAppendTime" if rec.timestamp_type else "CreateTime",
            "key": _bytes_view(rec.key), "value": _bytes_view(rec.value),
            "headers": [{"key": k, "value": _bytes_view(v)} for k, v in rec.headers]}


class Console:
    def __init__(self, bootstrap: str, *, timeout: float = 10.0,
                 sample_seconds: float = 2.0) -> None:
        self.bootstrap = bootstrap
        self.timeout = timeout
        self.admin = Admin(bootstrap, timeout=timeout, client_id="odradek-console")
        self._lock = threading.Lock()
        self._history_lock = threading.Lock()  # the sampler appends while pages read
        self.history: dict[str, deque[tuple[int, int]]] = {}
        self._sample_seconds = sample_seconds
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None

    # -- plumbing ------------------------------------------------------------------------------

    @contextmanager
    def _client(self) -> Iterator[Admin]:
        """The shared Admin, to one caller at a time; a broken connection is reopened once on
        the next use, and client failures become JSON answers."""
        with self._lock:
            try:
                yield self.admin
            except ApiError:
                raise
            except KafkaError as exc:
                status = 404 if exc.code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                             ErrorCode.GROUP_ID_NOT_FOUND,
                                             ErrorCode.TRANSACTIONAL_ID_NOT_FOUND) else 502
                raise ApiError(status, str(exc)) from None
            except BrokerUnreachable as exc:
                self._reopen()
                raise ApiError(503, f"broker unreachable: {exc}") from None
            except ClientError as exc:
                raise ApiError(502, str(exc)) from None

    def _reopen(self) -> None:
        with suppress(ClientError):  # still down: the next request tries again
            self.admin.reconnect()

    def start_sampler(self) -> None:
        self._sampler = threading.Thread(target=self._sample_loop, name="lag-sampler",
                                         daemon=True)
        self._sampler.start()

    def close(self) -> None:
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join(timeout=self.timeout)
        with self._lock:
            self.admin.close()

    def _sample_loop(self) -> None:
        while not self._stop.is_set():
            with suppress(ApiError):  # the broker is away: keep the history, try later
                self.sample_lag()
            self._stop.wait(self._sample_seconds)

    def sample_lag(self) -> None:
        """Add one (time ms, total lag) point to each group's history. The client is taken
        per group, not for the whole sample, so page requests interleave with it."""
        with self._client() as admin:
            listed = list_groups(admin)
        for g in listed:
            with self._client() as admin:
                try:
                    offsets = group_lag(admin, describe_group(admin, g.group_id))
                except KafkaError:
                    continue
            total = sum(o.lag for o in offsets if o.lag is not None)
            with self._history_lock:
                points = self.history.setdefault(g.group_id, deque(maxlen=HISTORY))
                points.append((int(time.time() * 1000), total))

    def _history(self, group_id: str) -> list[tuple[int, int]]:
        with self._history_lock:
            return list(self.history.get(group_id, ()))

    def _topic(self, admin: Admin, name: str) -> TopicInfo:
        found = [t for t in admin.topics([name]) if t.name == name]
        if not found or found[0].error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise ApiError(404, f"no topic {name}")
        if found[0].error != ErrorCode.NONE:
            raise KafkaError(found[0].error, f"topic {name}")
        return found[0]

    # -- endpoints -----------------------------------------------------------------------------

    def cluster(self) -> JSON:
        with self._client() as admin:
            info = admin.describe_cluster()
        return {"bootstrap": self.bootstrap, "cluster_id": info.cluster_id,
                "controller": info.controller,
                "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port,
                             "rack": b.rack} for b in info.brokers],
                "features": info.features}

    def topics(self, params: dict[str, str]) -> JSON:
        internal = params.get("internal") in ("1", "true")
        with self._client() as admin:
            listed = [t for t in admin.topics() if internal or not t.internal]
        return {"topics": [{"name": t.name, "partitions": len(t.partitions),
                            "internal": t.internal, "topic_id": str(t.topic_id)}
                           for t in listed]}

    def topic(self, name: str, params: dict[str, str]) -> JSON:
        """One page of the partitions table: offsets and sizes of those partitions only."""
        start = _int(params, "start", 0)
        limit = _int(params, "limit", 100, low=1, high=MAX_PAGE)
        with self._client() as admin:
            info = self._topic(admin, name)
            page = info.partitions[start:start + limit]
            numbers = [p.partition for p in page]
            offsets = partition_offsets(admin, info, numbers)
            sizes = log_dir_sizes_page(admin, name, numbers)
        rows = []
        for p in page:
            o = offsets[p.partition]
            rows.append({"partition": p.partition, "leader": p.leader,
                         "replicas": list(p.replicas), "isr": list(p.isr),
                         "log_start": o.log_start, "high_watermark": o.high_watermark,
                         "last_stable": o.last_stable,
                         "messages": o.high_watermark - o.log_start,
                         "size": sizes.get(p.partition)})
        return {"name": name, "topic_id": str(info.topic_id), "internal": info.internal,
                "partition_count": len(info.partitions), "start": start, "limit": limit,
                "partitions": rows}

    def topic_configs(self, name: str) -> JSON:
        with self._client() as admin:
            self._topic(admin, name)
            entries = admin.describe_configs(2, name)
        return {"name": name, "configs": [e.__dict__ for e in entries]}

    def broker_configs(self, node_id: str) -> JSON:
        if not node_id.isdigit():
            raise ApiError(400, f"broker id {node_id!r} is not a whole number")
        with self._client() as admin:
            if int(node_id) not in admin.brokers():
                raise ApiError(404, f"no broker {node_id}")
            entries = admin.describe_configs(4, node_id)
        return {"node_id": int(node_id), "configs": [e.__dict__ for e in entries]}

    def messages(self, name: str, params: dict[str, str]) -> JSON:
        """A page of one partition: from `offset`, or from the first record at or after
        `timestamp` (ms), `limit` records; `isolation` committed reads as read_committed."""
        partition = _int(params, "partition", 0)
        limit = _int(params, "limit", 50, low=1, high=MAX_PAGE)
        isolation = 1 if params.get("isolation") == "committed" else 0
        with self._client() as admin:
            info = self._topic(admin, name)
            if partition >= len(info.partitions):
                raise ApiError(404, f"topic {name} has no partition {partition} "
                                    f"(partitions 0-{len(info.partitions) - 1})")
            o = partition_offsets(admin, info, [partition])[partition]
            end = o.last_stable if isolation else o.high_watermark
            if params.get("timestamp"):
                ts = _int(params, "timestamp", None)
                found = offsets_for(admin, info, [partition], ts)[partition]
                offset = end if found < 0 else found
            else:
                offset = _int(params, "offset", o.log_start)
            offset = max(offset, o.log_start)
            records = read_page(admin, info, partition, offset, limit,
                                isolation_level=isolation, end=end) if offset < end else []
        next_offset = records[-1].offset + 1 if records else offset
        return {"name": name, "partition": partition, "offset": offset, "limit": limit,
                "log_start": o.log_start, "high_watermark": o.high_watermark,
                "last_stable": o.last_stable, "next_offset": next_offset,
                "prev_offset": max(o.log_start, offset - limit) if offset > o.log_start else None,
                "records": [_record(r) for r in records]}

    def produce(self, name: str, body: bytes) -> JSON:
        try:
            doc = json.loads(body or b"{}")
        except ValueError:
            raise ApiError(400, "the body is not JSON") from None
        if not isinstance(doc, dict):
            raise ApiError(400, "the body must be a JSON object")
        key, value = doc.get("key"), doc.get("value")
        headers = doc.get("headers") or []
        partition = doc.get("partition")
        for field, item in (("key", key), ("value", value)):
            if item is not None and not isinstance(item, str):
                raise ApiError(400, f"{field} must be a string or null")
        if partition is not None and (not isinstance(partition, int) or partition < 0):
            raise ApiError(400, "partition must be a whole number or null")
        if not isinstance(headers, list) or not all(
                isinstance(h, list) and len(h) == 2 and isinstance(h[0], str)
                and (h[1] is None or isinstance(h[1], str)) for h in headers):
            raise ApiError(400, "headers must be a list of [key, value] pairs of strings")
        record = OutRecord(value=None if value is None else value.encode(),
                           key=None if key is None else key.encode(),
                           headers=tuple((h[0], None if h[1] is None else h[1].encode())
                                         for h in headers),
                           partition=partition)
        with self._client() as admin:
            info = self._topic(admin, name)
            if partition is not None and partition >= len(info.partitions):
                raise ApiError(400, f"topic {name} has no partition {partition}")
            ((part, offset),) = produce(admin, name, [record], auto_create=False,
                                        timeout=self.timeout)
        return {"name": name, "partition": part, "offset": offset}

    def groups(self) -> JSON:
        with self._client() as admin:
            listed = list_groups(admin)
        out = []
        for g in listed:
            points = self._history(g.group_id)
            out.append({"group_id": g.group_id, "state": g.state, "type": g.group_type,
                        "protocol_type": g.protocol_type,
                        "lag": points[-1][1] if points else None})
        return {"groups": out}

    def group(self, group_id: str) -> JSON:
        with self._client() as admin:
            d = describe_group(admin, group_id)
            if d.state.lower() == "dead":
                raise ApiError(404, f"no group {group_id}")
            offsets = group_lag(admin, d)
        return {"group_id": d.group_id, "state": d.state, "type": d.group_type,
                "protocol_type": d.protocol_type, "protocol": d.protocol,
                "coordinator": d.coordinator,
                "members": [{"member_id": m.member_id, "instance_id": m.instance_id,
                             "client_id": m.client_id, "client_host": m.client_host,
                             "assignment": m.assignment} for m in d.members],
                "offsets": [o.__dict__ for o in offsets],
                "lag": sum(o.lag for o in offsets if o.lag is not None),
                "history": [list(p) for p in self._history(group_id)]}

    def transactions(self) -> JSON:
        with self._client() as admin:
            listed = list_transactions(admin)
            out = []
            for t in listed:
                with suppress(KafkaError):  # expired since the list: show what it said
                    t = describe_transaction(admin, t.transactional_id)
                out.append(t.__dict__)
        return {"transactions": out}

    def producers(self, name: str, params: dict[str, str]) -> JSON:
        start = _int(params, "start", 0)
        limit = _int(params, "limit", 100, low=1, high=MAX_PAGE)
        with self._client() as admin:
            info = self._topic(admin, name)
            numbers = [p.partition for p in info.partitions[start:start + limit]]
            found = describe_producers(admin, info, numbers)
        return {"name": name, "start": start, "limit": limit,
                "producers": [p.__dict__ for p in found]}


def log_dir_sizes_page(admin: Admin, topic: str, partitions: list[int]) -> dict[int, int]:
    """Sizes of these partitions of one topic: DescribeLogDirs asks for those only."""
    return {p: size for (t, p), size in log_dir_sizes(admin, {topic: partitions}).items()
            if t == topic}

