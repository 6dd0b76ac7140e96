"""Topics, topic ids, partitions, topic configs and this broker's identity.

Single node: this broker (`node.id`) leads every partition with leader epoch 0, and is the
only replica and ISR member. Topic metadata (ids, partition counts, config overrides) lives
in `topics.json` in the first log dir, rewritten atomically on every change; the cluster id
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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from odradek.broker.storage.files import atomic_write, fsync_dir
from odradek.config import BrokerConfig, resolve_topic_config, validate_topic_configs
from odradek.wire import ErrorCode

LEADER_EPOCH = 0
MAX_TOPIC_NAME = 249
_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
TOMBSTONE_PREFIX = "topics.json.deleted-"

log = structlog.get_logger("odradek.cluster")


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
                 delete_logs: Callable[[str], None],
                 reconfigure_logs: Callable[[str, Mapping[str, str]], None]) -> None:
        self.config = config
        self.node_id = config.get_int("node.id")
        self._create_log = create_log
        self._delete_logs = delete_logs
        self._reconfigure_logs = reconfigure_logs
        self.log_dirs = config.log_dirs
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        self.cluster_id = self._load_cluster_id()
        self._meta_path = self.log_dirs[0] / "topics.json"
        self.topics: dict[str, Topic] = {}
        self.by_id: dict[uuid.UUID, Topic] = {}
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
            self.topics[topic.name] = topic
            self.by_id[topic.topic_id] = topic

    def _save(self) -> None:
        data = {"version": 1, "topics": {
            t.name: {"id": str(t.topic_id), "partitions": t.partitions, "configs": t.configs}
            for t in self.topics.values()}}
        atomic_write(self._meta_path, json.dumps(data, indent=1, sort_keys=True).encode())
        self._unsaved = False
        for topic_id in list(self._tombstones):  # their deletions are in topics.json now
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
            del self.topics[topic.name]
            del self.by_id[topic_id]
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

    def check_new_topic(self, name: str, partitions: int, configs: Mapping[str, str | None]) -> None:
        """Raise ClusterError with Kafka's code if CreateTopics must refuse this topic."""
        reason = topic_name_error(name)
        if reason:
            raise ClusterError(ErrorCode.INVALID_TOPIC_EXCEPTION, reason)
        if name in self.topics:
            raise ClusterError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        key = _collision_key(name)
        for other in self.topics:
            if _collision_key(other) == key:
                raise ClusterError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                                   f"Topic '{name}' collides with existing topic: {other}")
        if partitions <= 0:
            raise ClusterError(ErrorCode.INVALID_PARTITIONS,
                               "Number of partitions must be larger than 0.")
        reason = validate_topic_configs(configs, self.config)
        if reason:
            raise ClusterError(ErrorCode.INVALID_CONFIG, reason)

    def create_topic(self, name: str, partitions: int, configs: Mapping[str, str | None],
                     topic_id: uuid.UUID | None = None) -> Topic:
        self.check_new_topic(name, partitions, configs)
        clean = {k: v for k, v in configs.items() if v is not None}
        topic = Topic(name, topic_id or uuid.uuid4(), partitions, clean)
        for p in range(partitions):
            self._create_log(name, p, clean)
        self.topics[name] = topic
        self.by_id[topic.topic_id] = topic
        self._save()
        return topic

    def delete_topic(self, name: str) -> Topic:
        """Delete the topic and its logs, in an order that works on a full disk (see the
        module docstring). ClusterError KAFKA_STORAGE_ERROR, nothing changed, when even the
        tombstone cannot be written."""
        topic = self.topics.get(name)
        if topic is None:
            raise ClusterError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                               "This server does not host this topic-partition.")
        tombstone = self._tombstone_path(topic.topic_id)
        try:
            os.close(os.open(tombstone, os.O_WRONLY | os.O_CREAT, 0o644))
            fsync_dir(tombstone.parent)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tombstone.unlink(missing_ok=True)
            raise ClusterError(ErrorCode.KAFKA_STORAGE_ERROR,
                               f"Cannot record the deletion of topic '{name}': {exc}") from exc
        self._tombstones.add(topic.topic_id)
        del self.topics[name]
        del self.by_id[topic.topic_id]
        self._delete_logs(name)
        try:
            self._save()
        except OSError as exc:
            self._unsaved = True
            log.warning("topic deleted, but topics.json not rewritten; its tombstone keeps the "
                        "deletion, the rewrite is retried", topic=name, error=str(exc),
                        tombstone=str(tombstone))
        return topic

    def add_partitions(self, name: str, count: int, validate_only: bool = False) -> None:
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
        if validate_only:
            return
        for p in range(topic.partitions, count):
            self._create_log(name, p, topic.configs)
        topic.partitions = count
        self._save()

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
        topic.configs = dict(configs)
        self._save()
        self._reconfigure_logs(name, topic.configs)

    def effective_config(self, name: str) -> Any:
        topic = self.topics[name]
        return resolve_topic_config(topic.configs, self.config)
