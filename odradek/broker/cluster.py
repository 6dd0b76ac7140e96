"""Topics, topic ids, partitions, topic configs and this broker's identity.

Single node: this broker (`node.id`) leads every partition with leader epoch 0, and is the
only replica and ISR member. Topic metadata (ids, partition counts, config overrides) lives
in `topics.json` in the first log dir, rewritten atomically on every change (once per admin
request, however many topics it changes); the cluster id
lives in Kafka's `meta.properties` in every log dir.

Deleting a topic works on a full disk: the deletion is first recorded by an empty file next
to `topics.json`, `topics.json.deleted-<topic id as 32 hex digits>` (an empty file needs no
data block), then the topic leaves memory, its partition logs are deleted (freeing their
space), and only then is `topics.json` rewritten. Should that rewrite fail, the deletion
stands: the tombstone keeps it, the rewrite is retried (`save_if_pending`, and any later
metadata change), and a start that finds a tombstone whose topic id `topics.json` still lists
completes the deletion (`deleted_on_load`: the broker deletes those partition logs). A
tombstone names a topic id, not a name, so a topic re-created under the same name is never
touched. Tombstones go once a rewrite without their topic succeeded.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import structlog

from odradek.broker import heap
from odradek.broker.storage.errors import error_code_for
from odradek.broker.storage.files import atomic_write, fsync_dir
from odradek.config import (
    BrokerConfig,
    ConfigError,
    resolve_topic_config,
    validate_topic_configs,
)
from odradek.config.broker import CLUSTER_DEFAULT, PER_BROKER, BrokerConfigRequestError
from odradek.wire import ErrorCode

LEADER_EPOCH = 0
MAX_TOPIC_NAME = 249
log = structlog.get_logger(__name__)
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
# Batch admin changes yield to the event loop after this many partition logs created or
# deleted (a log costs 1-7 ms on a loaded machine: other clients wait well under 100 ms).
YIELD_EVERY = 10
TOMBSTONE_PREFIX = "topics.json.deleted-"
# The dynamic broker configs (AlterConfigs on BROKER resources), in the first log dir.
DYNAMIC_CONFIGS_FILE = "broker-configs.json"


class _Pace:
    """Counts the partition logs one admin request creates: it yields to the event loop
    every YIELD_EVERY and settles the heap (`heap.settle`) every `heap.SETTLE_EVERY`, so
    that neither its work nor the collector's holds other clients."""

    def __init__(self) -> None:
        self.done = 0

    async def step(self) -> None:
        self.done += 1
        if self.done % heap.SETTLE_EVERY == 0:
            heap.settle()
        if self.done % YIELD_EVERY == 0:
            await anyio.lowlevel.checkpoint()


class MetadataError(Exception):
    """The broker's own metadata files (`meta.properties`, `topics.json`) cannot be read."""


class ClusterError(Exception):
    """A request the cluster refuses, with the Kafka error code to answer it."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def topic_name_error(name: str) -> str | None:
    """Why `name` is not a legal topic name (Kafka's Topic.validate), or None."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_TOPIC_NAME:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters"
    if not _LEGAL_NAME.fullmatch(name):
        return (f"Topic name \"{name}\" is illegal, it contains a character other than "
                "ASCII alphanumerics, '.', '_' and '-'")
    return None


def _collision_key(name: str) -> str:
    return name.replace(".", "_")


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


@dataclass(frozen=True)
class NewTopic:
    """A topic CreateTopics will create: checked, partition count and config overrides known."""

    name: str
    partitions: int
    configs: Mapping[str, str]


def new_cluster_id() -> str:
    """Kafka's format: a random uuid as unpadded url-safe base64 (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _read_properties(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


class Cluster:
    """Topic metadata and identity; partitions' logs are created through `on_partition_*`."""

    def __init__(self, config: BrokerConfig,
                 create_log: Callable[[str, int, Mapping[str, str]], Any],
                 delete_logs: Callable[[Sequence[str], bool], None],
                 reconfigure_logs: Callable[[str, Mapping[str, str]], None],
                 delete_partition_logs: Callable[[str, Iterable[int], bool], None],
                 topics_created: Callable[[Sequence[Topic]], None] | None = None,
                 defer_logs: Callable[[Topic], None] | None = None) -> None:
        self.config = config
        # Given each topic `create_topics` registered, to make its logs after the answer
        # (`pending_logs.py`); None: they are made before, as `create_topic` does.
        self._defer_logs = defer_logs
        # Told of every topic created (registered and saved); consumer groups' regexes.
        self._topics_created = topics_created
        self.node_id = config.get_int("node.id")
        self._create_log = create_log
        self._delete_logs = delete_logs
        self._delete_partition_logs = delete_partition_logs
        self._reconfigure_logs = reconfigure_logs
        self.log_dirs = config.log_dirs
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        fresh = not any((d / "meta.properties").exists() for d in self.log_dirs)
        self.cluster_id = self._load_cluster_id()
        self._meta_path = self.log_dirs[0] / "topics.json"
        self._dynamic_path = self.log_dirs[0] / DYNAMIC_CONFIGS_FILE
        self._load_dynamic_configs(fresh)
        self.topics: dict[str, Topic] = {}
        self.by_id: dict[uuid.UUID, Topic] = {}
        # Collision key (`.` read as `_`) -> the topic (existing or reserved) holding it.
        self._keys: dict[str, str] = {}
        # Names checked and being created by a request in progress (see `reserve`).
        self._reserved: set[str] = set()
        # Held by admin requests that yield to the event loop while they change topics.
        self.lock = anyio.Lock()
        # Deleted topics whose tombstone stays until `topics.json` is rewritten without them.
        self._tombstones: set[uuid.UUID] = set()
        self._unsaved = False
        # Names of the topics whose deletion a start completed (their logs are to be deleted).
        self.deleted_on_load: list[str] = []
        self._load_topics()
        self._apply_tombstones()

    # -- identity --------------------------------------------------------------------------------

    def _load_cluster_id(self) -> str:
        found: str | None = None
        for d in self.log_dirs:
            meta = d / "meta.properties"
            if not meta.exists():
                continue
            try:
                props = _read_properties(meta)
            except (OSError, ValueError) as exc:
                raise MetadataError(f"cannot read {meta}: {exc}") from exc
            this = props.get("cluster.id")
            if not this:
                raise MetadataError(f"{meta} names no cluster.id")
            if found is not None and this != found:
                raise MetadataError(f"{meta} belongs to cluster {this}, the other log dirs to "
                                    f"{found}")
            found = this
        cluster_id = found or new_cluster_id()
        for d in self.log_dirs:
            meta = d / "meta.properties"
            if not meta.exists():
                atomic_write(meta, f"#Written by odradek\nversion=1\ncluster.id={cluster_id}\n"
                                   f"node.id={self.node_id}\n".encode())
        return cluster_id

    # -- dynamic broker configs ----------------------------------------------------------------

    def _load_dynamic_configs(self, fresh: bool) -> None:
        """The dynamic broker configs a previous run stored. A new cluster starts with the one
        Kafka 4.x's `kafka-storage format` writes: min.insync.replicas=1 cluster-wide."""
        if not self._dynamic_path.exists():
            if fresh:
                self.config.set_dynamic(CLUSTER_DEFAULT, {"min.insync.replicas": "1"})
                self._save_dynamic_configs()
            return
        try:
            data = json.loads(self._dynamic_path.read_text())
            stored = {scope: {str(k): str(v) for k, v in data.get(scope, {}).items()}
                      for scope in (CLUSTER_DEFAULT, PER_BROKER)}
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise MetadataError(f"cannot read {self._dynamic_path}: {exc!r}") from exc
        for scope, configs in stored.items():
            kept = {}
            for name, value in configs.items():
                try:
                    self.config.check_dynamic(scope, {name: value})
                except ConfigError as exc:  # e.g. stored by another version: said, not used
                    log.warning("stored dynamic broker config ignored", scope=scope, key=name,
                                reason=exc.reason)
                    continue
                kept[name] = value
            self.config.set_dynamic(scope, kept)

    def _save_dynamic_configs(self) -> None:
        body = {scope: self.config.dynamic(scope) for scope in (CLUSTER_DEFAULT, PER_BROKER)}
        atomic_write(self._dynamic_path,
                     json.dumps({"version": 1, **body}, indent=1, sort_keys=True).encode())

    def set_broker_configs(self, scope: str, configs: Mapping[str, str],
                           validate_only: bool = False) -> None:
        """Replace `scope`'s dynamic broker configs (PER_BROKER or CLUSTER_DEFAULT): checked
        whole, stored, then in effect on every topic's logs at once."""
        try:
            self.config.check_dynamic(scope, configs)
        except BrokerConfigRequestError as exc:
            raise ClusterError(ErrorCode.INVALID_REQUEST, exc.reason) from None
        except ConfigError as exc:
            raise ClusterError(ErrorCode.INVALID_CONFIG, exc.reason) from None
        if validate_only:
            return
        before = self.config.dynamic(scope)
        self.config.set_dynamic(scope, configs)
        try:
            self._save_dynamic_configs()
        except OSError as exc:
            self.config.set_dynamic(scope, before)
            raise ClusterError(error_code_for(exc),
                               f"Cannot store the broker configs: {exc}") from None
        for topic in list(self.topics.values()):
            self._reconfigure_logs(topic.name, topic.configs)

    # -- persistence -------------------------------------------------------------------------------

    def _load_topics(self) -> None:
        if not self._meta_path.exists():
            return
        try:
            data = json.loads(self._meta_path.read_text())
            topics = [Topic(name, uuid.UUID(t["id"]), int(t["partitions"]), dict(t["configs"]))
                      for name, t in data["topics"].items()]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise MetadataError(f"cannot read {self._meta_path}: {exc!r}") from exc
        for topic in topics:
            self._register(topic)

    def _save(self, *, drop_tombstones: bool = True) -> None:
        """Rewrite topics.json; then (`drop_tombstones`) remove the tombstones of the
        deletions it now holds (`delete_topics` removes its own, yielding in between)."""
        data = {"version": 1, "topics": {
            t.name: {"id": str(t.topic_id), "partitions": t.partitions, "configs": t.configs}
            for t in self.topics.values()}}
        # Compact: the C encoder (indent= falls back to the Python one, 5x slower).
        atomic_write(self._meta_path,
                     json.dumps(data, separators=(",", ":"), sort_keys=True).encode())
        self._unsaved = False
        if drop_tombstones:
            for topic_id in list(self._tombstones):  # their deletions are in topics.json now
                self._drop_tombstone(topic_id)

    def _drop_tombstone(self, topic_id: uuid.UUID) -> None:
        self._tombstones.discard(topic_id)
        with contextlib.suppress(OSError):
            self._tombstone_path(topic_id).unlink(missing_ok=True)

    @property
    def unsaved(self) -> bool:
        """A deletion is recorded only by its tombstone: `topics.json` still lists the topic."""
        return self._unsaved

    def save_if_pending(self) -> bool:
        """Retry the `topics.json` rewrite a deletion could not make (see the module
        docstring); True when nothing is pending any more."""
        if not self._unsaved:
            return True
        try:
            self._save()
        except OSError as exc:
            log.debug("topics.json still not rewritten", error=str(exc))
            return False
        log.info("topics.json rewritten after a deletion", path=str(self._meta_path))
        return True

    def _tombstone_path(self, topic_id: uuid.UUID) -> Path:
        return self._meta_path.with_name(TOMBSTONE_PREFIX + topic_id.hex)

    def _apply_tombstones(self) -> None:
        """Complete the deletions a previous run recorded but could not save (see the module
        docstring); remove the tombstones of deletions that were saved."""
        found = False
        for path in self._meta_path.parent.glob(TOMBSTONE_PREFIX + "*"):
            try:
                topic_id = uuid.UUID(hex=path.name[len(TOMBSTONE_PREFIX):])
            except ValueError:
                continue
            topic = self.by_id.get(topic_id)
            if topic is None:
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)
                continue
            log.warning("completing the deletion of a topic", topic=topic.name,
                        topic_id=str(topic_id))
            self._unregister(topic)
            self._tombstones.add(topic_id)
            self.deleted_on_load.append(topic.name)
            found = True
        if found:
            self._unsaved = True
            self.save_if_pending()

    # -- queries -----------------------------------------------------------------------------------

    def get(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def __iter__(self) -> Iterator[Topic]:
        return iter(list(self.topics.values()))

    def has_partition(self, name: str, partition: int) -> bool:
        t = self.topics.get(name)
        return t is not None and 0 <= partition < t.partitions

    # -- changes -------------------------------------------------------------------------------------
    #
    # Large admin requests (thousands of topics or partitions) must run in time linear in their
    # size and must not starve other clients (issue #10): the batch methods below create or
    # delete every log of the request, yielding to the event loop every `YIELD_EVERY`
    # partitions, and write topics.json once. `lock` serialises them (Kafka's controller also
    # applies one request at a time), so one cannot see another's half-done state.
    #
    # Crash safety: CreateTopics (with `defer_logs`, as the broker builds it) makes the topics
    # visible once topics.json holds them and leaves their logs to be made after the answer:
    # a start that finds a listed partition without its log makes it, and nothing can be
    # produced to a partition before its log exists. Without `defer_logs` (and in
    # `create_topic`, `add_partitions*`) logs are created first and the topics become visible
    # only once all of them exist; a crash mid-request leaves empty partition directories
    # that no topic names (loaded, unused, reused if the topic is created again). Deletion removes
    # the topics from topics.json first, then their logs: a crash in between leaves
    # directories that no topic names, never a topic without logs.

    def check_new_topic(self, name: str, partitions: int, configs: Mapping[str, str | None]) -> None:
        """Raise ClusterError with Kafka's code if CreateTopics must refuse this topic (names
        being created by a request still in progress count as existing)."""
        reason = topic_name_error(name)
        if reason:
            raise ClusterError(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
        if name in self.topics or name in self._reserved:
            raise ClusterError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        other = self._keys.get(_collision_key(name))
        if other is not None:
            raise ClusterError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                               f"Topic '{name}' collides with existing topic: {other}")
        if partitions <= 0:
            raise ClusterError(ErrorCode.INVALID_PARTITIONS,
                               "Number of partitions must be larger than 0.")
        reason = validate_topic_configs(configs, self.config)
        if reason:
            raise ClusterError(ErrorCode.INVALID_CONFIG, reason)

    def reserve(self, name: str) -> None:
        """Hold `name` (already checked) for a create in progress: `check_new_topic` treats it
        as existing until `create_topics` registers it or `release` frees it."""
        self._reserved.add(name)
        self._keys[_collision_key(name)] = name

    def release(self, name: str) -> None:
        if name in self._reserved:
            self._reserved.discard(name)
            if name not in self.topics:
                self._keys.pop(_collision_key(name), None)

    def _register(self, topic: Topic) -> None:
        self._reserved.discard(topic.name)
        self.topics[topic.name] = topic
        self.by_id[topic.topic_id] = topic
        self._keys[_collision_key(topic.name)] = topic.name

    def create_topic(self, name: str, partitions: int, configs: Mapping[str, str | None],
                     topic_id: uuid.UUID | None = None) -> Topic:
        """Create one topic now (auto-creation, internal topics): a few partitions, no yield."""
        self.check_new_topic(name, partitions, configs)
        clean = {k: v for k, v in configs.items() if v is not None}
        topic = Topic(name, topic_id or uuid.uuid4(), partitions, clean)
        try:
            for p in range(partitions):
                self._create_log(name, p, clean)
            self._register(topic)
            self._save()
        except OSError as exc:  # e.g. a full disk: nothing of the topic stays
            if self.topics.get(name) is topic:
                self._unregister(topic)
            self._undo(self._delete_logs, [name], True)
            raise ClusterError(ErrorCode.KAFKA_STORAGE_ERROR,
                               f"Cannot create topic '{name}': {exc}") from exc
        if self._topics_created is not None:
            self._topics_created([topic])
        return topic

    async def create_topics(self, wanted: Sequence[NewTopic]) -> dict[str, Topic | OSError]:
        """Create topics already checked by `check_new_topic` and held by `reserve`; their
        logs first, then every topic at once and one topics.json write. A topic whose logs
        cannot be created (e.g. EMFILE) is answered with the OSError, its logs removed, and
        the others are still created. Every name is released or registered on return."""
        if self._defer_logs is not None:
            return self._create_topics_deferred(wanted)
        outcome: dict[str, Topic | OSError] = {}
        done: list[Topic] = []
        pace = _Pace()
        try:
            for want in wanted:
                topic = Topic(want.name, uuid.uuid4(), want.partitions, dict(want.configs))
                try:
                    for p in range(want.partitions):
                        self._create_log(topic.name, p, topic.configs)
                        await pace.step()
                except OSError as exc:
                    self._undo(self._delete_logs, [topic.name], True)
                    outcome[topic.name] = exc
                    continue
                done.append(topic)
            for topic in done:
                self._register(topic)
                outcome[topic.name] = topic
            if done:
                try:
                    self._save()
                except OSError as exc:  # e.g. a full disk: none of them is created
                    for topic in done:
                        self._unregister(topic)
                        outcome[topic.name] = exc
                    self._undo(self._delete_logs, [t.name for t in done], True)
                    done = []
            if done and self._topics_created is not None:
                self._topics_created(done)
        finally:
            for want in wanted:
                self.release(want.name)
        return outcome

    def _create_topics_deferred(self, wanted: Sequence[NewTopic]) -> dict[str, Topic | OSError]:
        """Kafka's order: the topics registered and topics.json written (fsynced) once, then
        their logs handed to `defer_logs`, made after the answer. No yield: no log is made."""
        outcome: dict[str, Topic | OSError] = {}
        done = [Topic(w.name, uuid.uuid4(), w.partitions, dict(w.configs)) for w in wanted]
        try:
            for topic in done:
                self._register(topic)
                outcome[topic.name] = topic
            if done:
                try:
                    self._save()
                except OSError as exc:  # e.g. a full disk: none of them is created
                    for topic in done:
                        self._unregister(topic)
                        outcome[topic.name] = exc
                    done = []
            assert self._defer_logs is not None
            for topic in done:
                self._defer_logs(topic)
            if done and self._topics_created is not None:
                self._topics_created(done)
        finally:
            for want in wanted:
                self.release(want.name)
        return outcome

    @staticmethod
    def _undo(remove: Callable[..., None], *args: Any) -> None:
        """Remove the logs of a failed creation; if that fails too (the same EMFILE), the
        empty directories stay, named by no topic, as after a crash."""
        try:
            remove(*args)
        except OSError as exc:
            log.warning("cannot remove the logs of a failed creation", error=str(exc))

    def delete_topic(self, name: str) -> Topic:
        """Delete one topic and its logs (see `delete_topics`); ClusterError if it does not
        exist or its deletion cannot be recorded."""
        topic = self.topics.get(name)
        if topic is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               "This server does not host this topic-partition.")
        failed = self._write_tombstone(topic)
        if failed is None:
            recorded, unsynced = self._record_deletions([topic])
            failed = unsynced.get(name)
        if failed is not None:
            raise failed
        self._delete_logs([name], True)
        self._save_after_deletion(recorded)
        return topic

    def _write_tombstone(self, topic: Topic) -> ClusterError | None:
        """Create the topic's tombstone (see the module docstring); the KAFKA_STORAGE_ERROR
        that stops its deletion when it cannot be created."""
        tombstone = self._tombstone_path(topic.topic_id)
        try:
            os.close(os.open(tombstone, os.O_WRONLY | os.O_CREAT, 0o644))
        except OSError as exc:
            return self._unrecorded(topic, tombstone, exc)
        return None

    def _record_deletions(self, topics: Sequence[Topic]
                          ) -> tuple[list[Topic], dict[str, ClusterError]]:
        """Make the tombstones of `topics` (written by `_write_tombstone`) durable with one
        fsync of their directory, then take the topics out of memory. Should the fsync fail,
        every one of them gets KAFKA_STORAGE_ERROR and is left as it was."""
        if not topics:
            return [], {}
        try:
            fsync_dir(self._meta_path.parent)
        except OSError as exc:
            return [], {t.name: self._unrecorded(t, self._tombstone_path(t.topic_id), exc)
                        for t in topics}
        for topic in topics:
            self._tombstones.add(topic.topic_id)
            self._unregister(topic)
        return list(topics), {}

    @staticmethod
    def _unrecorded(topic: Topic, tombstone: Path, exc: OSError) -> ClusterError:
        with contextlib.suppress(OSError):
            tombstone.unlink(missing_ok=True)
        log.error("cannot record a topic deletion", topic=topic.name, error=str(exc))
        return ClusterError(ErrorCode.KAFKA_STORAGE_ERROR,
                            f"Cannot record the deletion of topic '{topic.name}': {exc}")

    def _save_after_deletion(self, deleted: Sequence[Topic], *,
                             drop_tombstones: bool = True) -> bool:
        """Rewrite topics.json once the deleted topics' space is free; should that fail, the
        tombstones keep the deletions and the rewrite is retried (`save_if_pending`)."""
        try:
            self._save(drop_tombstones=drop_tombstones)
        except OSError as exc:
            self._unsaved = True
            log.warning("topics deleted, but topics.json not rewritten; their tombstones keep "
                        "the deletions, the rewrite is retried",
                        topics=[t.name for t in deleted], error=str(exc))
            return False
        return True

    def _unregister(self, topic: Topic) -> None:
        del self.topics[topic.name]
        del self.by_id[topic.topic_id]
        self._keys.pop(_collision_key(topic.name), None)

    async def delete_topics(self, names: Sequence[str]) -> dict[str, Topic | ClusterError]:
        """Delete existing topics in an order that works on a full disk (see the module
        docstring): their tombstones, then their logs, yielding to the event loop between
        chunks, then one topics.json write. Answers each existing name with its deleted
        topic or the ClusterError that kept it; unknown names are left out."""
        found = [t for t in (self.topics.get(n) for n in dict.fromkeys(names)) if t is not None]
        if not found:
            return {}
        outcome: dict[str, Topic | ClusterError] = {}
        written: list[Topic] = []
        for i, topic in enumerate(found, 1):  # one file each: yield as log creation does
            failed = self._write_tombstone(topic)
            if failed is None:
                written.append(topic)
            else:
                outcome[topic.name] = failed
            if i % YIELD_EVERY == 0:
                await anyio.lowlevel.checkpoint()
        gone, unsynced = self._record_deletions(written)
        outcome.update(unsynced)
        budget = YIELD_EVERY
        try:
            for topic in gone:
                first = 0
                while first < topic.partitions:
                    last = min(first + budget, topic.partitions)
                    self._delete_partition_logs(topic.name, range(first, last), False)
                    budget -= last - first
                    first = last
                    if budget <= 0:
                        budget = YIELD_EVERY
                        await anyio.lowlevel.checkpoint()
        finally:
            saved = False
            if gone:
                # Anything left, the log dirs' checkpoints once, the topics' committed
                # offsets; then topics.json, now that their space is free.
                self._delete_logs([t.name for t in gone], True)
                saved = self._save_after_deletion(gone, drop_tombstones=False)
        if saved:
            for i, topic in enumerate(gone, 1):
                self._drop_tombstone(topic.topic_id)
                if i % YIELD_EVERY == 0:
                    await anyio.lowlevel.checkpoint()
        outcome.update((t.name, t) for t in gone)
        return outcome

    def check_add_partitions(self, name: str, count: int) -> Topic:
        """The topic, if its partition count may be raised to `count`; ClusterError if not."""
        topic = self.topics.get(name)
        if topic is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               f"The topic '{name}' does not exist.")
        if count < topic.partitions:
            raise ClusterError(ErrorCode.INVALID_PARTITIONS,
                               f"Topic currently has {topic.partitions} partitions, which is "
                               f"higher than the requested {count}.")
        if count == topic.partitions:
            raise ClusterError(ErrorCode.INVALID_PARTITIONS,
                               f"Topic already has {topic.partitions} partitions.")
        return topic

    def add_partitions(self, name: str, count: int, validate_only: bool = False) -> None:
        topic = self.check_add_partitions(name, count)
        if validate_only:
            return
        before = topic.partitions
        try:
            for p in range(before, count):
                self._create_log(name, p, topic.configs)
            topic.partitions = count
            self._save()
        except OSError as exc:
            topic.partitions = before
            self._undo(self._delete_partition_logs, name, range(before, count), True)
            raise ClusterError(ErrorCode.KAFKA_STORAGE_ERROR,
                               f"Cannot add partitions to topic '{name}': {exc}") from exc

    async def add_partitions_many(self, wanted: Sequence[tuple[str, int]]
                                  ) -> dict[str, OSError | None]:
        """Raise partition counts already checked by `check_add_partitions`: the new logs
        first, then every count at once and one topics.json write (as `create_topics`).
        Returns per topic None, or the OSError that stopped its logs (those removed)."""
        outcome: dict[str, OSError | None] = {}
        grown: list[tuple[Topic, int]] = []
        pace = _Pace()
        for name, count in wanted:
            topic = self.topics[name]
            made = topic.partitions
            try:
                for p in range(topic.partitions, count):
                    self._create_log(name, p, topic.configs)
                    made = p + 1
                    await pace.step()
            except OSError as exc:
                self._undo(self._delete_partition_logs, name, range(topic.partitions, made + 1),
                           True)
                outcome[name] = exc
                continue
            grown.append((topic, count))
            outcome[name] = None
        before = {topic.name: topic.partitions for topic, _ in grown}
        for topic, count in grown:
            topic.partitions = count
        if grown:
            try:
                self._save()
            except OSError as exc:  # e.g. a full disk: no count changes
                for topic, count in grown:
                    topic.partitions = before[topic.name]
                    self._undo(self._delete_partition_logs, topic.name,
                               range(before[topic.name], count), True)
                    outcome[topic.name] = exc
        return outcome

    def set_configs(self, name: str, configs: Mapping[str, str], validate_only: bool = False) -> None:
        """Replace a topic's config overrides (AlterConfigs semantics); they take effect now."""
        topic = self.topics.get(name)
        if topic is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               f"The topic '{name}' does not exist.")
        reason = validate_topic_configs(configs, self.config)
        if reason:
            raise ClusterError(ErrorCode.INVALID_CONFIG, reason)
        if validate_only:
            return
        before, topic.configs = topic.configs, dict(configs)
        try:
            self._save()
        except OSError as exc:  # e.g. a full disk: the old configs stay
            topic.configs = before
            raise ClusterError(ErrorCode.KAFKA_STORAGE_ERROR,
                               f"Cannot store the configs of topic '{name}': {exc}") from exc
        self._reconfigure_logs(name, topic.configs)

    def effective_config(self, name: str) -> Any:
        topic = self.topics[name]
        return resolve_topic_config(topic.configs, self.config)
