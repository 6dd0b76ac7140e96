"""Admin operations on any Kafka-compatible cluster: topics, metadata, with one-line errors.

`Admin(bootstrap)` connects to the first reachable bootstrap address and keeps that
connection for cluster-wide requests (Metadata, CreateTopics, DeleteTopics: a KRaft broker
forwards these to the controller itself); `connection_to(node_id)` opens (and keeps) one to
another broker named in Metadata, for requests a leader or coordinator must answer.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from odradek.client.connection import (
    BrokerConnection,
    BrokerUnreachable,
    ClientError,
    KafkaError,
    error_name,
    parse_bootstrap,
)
from odradek.wire import ErrorCode
from odradek.wire._generated.create_topics import CreateTopicsRequest, CreateTopicsResponse
from odradek.wire._generated.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse
from odradek.wire._generated.metadata import MetadataRequest, MetadataResponse

__all__ = ["Admin", "BrokerInfo", "ClusterInfo", "ConfigEntry", "PartitionInfo", "TopicInfo"]


@dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error: int


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    internal: bool
    error: int
    partitions: tuple[PartitionInfo, ...] = field(default=())


class Admin:
    def __init__(self, bootstrap: str, *, timeout: float = 10.0,
                 client_id: str = "odradek-cli") -> None:
        try:
            addresses = parse_bootstrap(bootstrap)
        except ValueError as exc:
            raise ClientError(f"--bootstrap-server: {exc}") from None
        self.timeout = timeout
        self.client_id = client_id
        errors: list[str] = []
        conn: BrokerConnection | None = None
        for host, port in addresses:
            try:
                conn = BrokerConnection(host, port, timeout=timeout, client_id=client_id)
                break
            except BrokerUnreachable as exc:
                errors.append(str(exc))
        if conn is None:
            raise BrokerUnreachable("; ".join(errors))
        self.conn = conn
        self._nodes: dict[int, BrokerConnection] = {}
        self._brokers: dict[int, BrokerInfo] = {}

    def reconnect(self) -> None:
        """Close every connection and open the bootstrap one again: after an interrupted
        request, whose answer would otherwise arrive in place of the next one's."""
        self.close()
        self.conn = BrokerConnection(self.conn.host, self.conn.port, timeout=self.timeout,
                                     client_id=self.client_id)

    def close(self) -> None:
        for conn in self._nodes.values():
            if conn is not self.conn:
                conn.close()
        self._nodes.clear()
        self.conn.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- metadata ------------------------------------------------------------------------------

    def metadata(self, topics: Iterable[str] | None = None) -> MetadataResponse:
        """Metadata for `topics` (None: every topic); never auto-creates a topic."""
        wanted = None if topics is None else [
            MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
        request = MetadataRequest(allow_auto_topic_creation=False)
        version = self.conn.version_for(MetadataRequest)
        # Null asks for every topic (v1+; the constructor turns None into []); v0 has no
        # null: there an empty list means every topic.
        request.topics = wanted if wanted is not None or version == 0 else None
        response, _ = self.conn.call(request, MetadataResponse, version=version)
        self._brokers = {b.node_id: BrokerInfo(b.node_id, b.host, b.port, b.rack)
                         for b in response.brokers}
        return response

    def topics(self, names: Iterable[str] | None = None) -> list[TopicInfo]:
        response = self.metadata(names)
        out = []
        for t in response.topics:
            parts = tuple(sorted(
                (PartitionInfo(p.partition_index, p.leader_id, p.leader_epoch,
                               tuple(p.replica_nodes), tuple(p.isr_nodes), p.error_code)
                 for p in t.partitions), key=lambda p: p.partition))
            out.append(TopicInfo(t.name or "", t.topic_id, t.is_internal, t.error_code, parts))
        return sorted(out, key=lambda t: t.name)

    def brokers(self) -> dict[int, BrokerInfo]:
        if not self._brokers:
            self.metadata([])
        return dict(self._brokers)

    def connection_to(self, node_id: int) -> BrokerConnection:
        """A connection to broker `node_id` (the bootstrap one when it is that broker)."""
        conn = self._nodes.get(node_id)
        if conn is not None:
            return conn
        info = self.brokers().get(node_id)
        if info is None:
            raise ClientError(f"broker {node_id} is not in the cluster's metadata")
        if (info.host, info.port) == (self.conn.host, self.conn.port):
            conn = self.conn
        else:
            conn = BrokerConnection(info.host, info.port, timeout=self.timeout,
                                    client_id=self.client_id)
        self._nodes[node_id] = conn
        return conn

    # -- topics --------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, *,
                     replication_factor: int | None = None,
                     configs: Mapping[str, str] | None = None,
                     wait: bool = True, validate_only: bool = False) -> None:
        """Create `name`; with `wait`, return once Metadata shows a leader for every partition.
        `replication_factor` None: the broker's default (v4+), else 1."""
        version = self.conn.version_for(CreateTopicsRequest)
        rf = replication_factor if replication_factor is not None else (-1 if version >= 4 else 1)
        topic = CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=rf,
            configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                     for k, v in (configs or {}).items()])
        request = CreateTopicsRequest(topics=[topic], timeout_ms=int(self.timeout * 1000),
                                      validate_only=validate_only)
        response, _ = self.conn.call(request, CreateTopicsResponse, version=version)
        for result in response.topics:
            if result.error_code != ErrorCode.NONE:
                raise KafkaError(result.error_code, f"create topic {result.name}",
                                 result.error_message)
        if wait and not validate_only:
            self.wait_for_topic(name, partitions)

    def wait_for_topic(self, name: str, partitions: int | None = None,
                       timeout: float | None = None) -> TopicInfo:
        """Poll Metadata until `name` exists with a leader for each partition (a broker may
        learn of a new topic a moment after the controller created it)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            found = self.topics([name])
            info = found[0] if found else None
            if (info is not None and info.error == ErrorCode.NONE and info.partitions
                    and (partitions is None or len(info.partitions) == partitions)
                    and all(p.leader >= 0 for p in info.partitions)):
                return info
            if time.monotonic() > deadline:
                state = "missing" if info is None else (
                    f"{error_name(info.error)}, {len(info.partitions)} partitions")
                raise ClientError(f"topic {name} not ready in time ({state})")
            time.sleep(0.01)

    def delete_topics(self, names: Iterable[str], *, missing_ok: bool = False) -> None:
        """Delete `names`; the first refusal raises (a missing topic too, unless `missing_ok`)."""
        for error in self.delete_topics_each(names).values():
            if error is None or (missing_ok and error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                continue
            raise error

    def delete_topics_each(self, names: Iterable[str]) -> dict[str, KafkaError | None]:
        """Delete `names` in one request: what happened to each (None: deleted)."""
        names = list(names)
        if not names:
            return {}
        version = self.conn.version_for(DeleteTopicsRequest)
        request = DeleteTopicsRequest(
            topics=[DeleteTopicsRequest.DeleteTopicState(name=n) for n in names],
            topic_names=names, timeout_ms=int(self.timeout * 1000))
        response, _ = self.conn.call(request, DeleteTopicsResponse, version=version)
        out: dict[str, KafkaError | None] = dict.fromkeys(names)
        for result in response.responses:
            if result.error_code != ErrorCode.NONE:
                out[result.name or ""] = KafkaError(result.error_code,
                                                    f"delete topic {result.name}",
                                                    result.error_message)
        return out

    # -- configs and the cluster ---------------------------------------------------------------

    def describe_configs(self, resource_type: int, name: str) -> list[ConfigEntry]:
        """Every config of a resource (2 topic, 4 broker), with where its value comes from."""
        from odradek.wire._generated.describe_configs import (
            DescribeConfigsRequest,
            DescribeConfigsResponse,
        )

        request = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
            resource_type=resource_type, resource_name=name, configuration_keys=None)])
        response, version = self.conn.call(request, DescribeConfigsResponse)
        (result,) = response.results
        if result.error_code != ErrorCode.NONE:
            raise KafkaError(result.error_code, f"describe the configs of {name}",
                             result.error_message)
        out = []
        for c in result.configs:
            # v0 has no config_source yet: derive it from is_default.
            source = (5 if c.is_default else 1) if version == 0 else c.config_source
            out.append(ConfigEntry(c.name, c.value, CONFIG_SOURCES.get(source, str(source)),
                                   c.read_only, c.is_sensitive))
        return sorted(out, key=lambda e: e.name)

    def describe_cluster(self) -> ClusterInfo:
        """Cluster id, controller and brokers (DescribeCluster, or Metadata on old brokers),
        and the bootstrap broker's finalized features."""
        from odradek.wire import ApiKey
        from odradek.wire._generated.api_versions import ApiVersionsRequest, ApiVersionsResponse

        if ApiKey.DESCRIBE_CLUSTER in self.conn.versions:
            from odradek.wire._generated.describe_cluster import (
                DescribeClusterRequest,
                DescribeClusterResponse,
            )

            dc, _ = self.conn.call(DescribeClusterRequest(), DescribeClusterResponse)
            if dc.error_code != ErrorCode.NONE:
                raise KafkaError(dc.error_code, "describe the cluster", dc.error_message)
            cluster_id: str | None = dc.cluster_id
            controller = dc.controller_id
            brokers = [BrokerInfo(b.broker_id, b.host, b.port, b.rack) for b in dc.brokers]
        else:
            md = self.metadata([])
            cluster_id, controller = md.cluster_id, md.controller_id
            brokers = [BrokerInfo(b.node_id, b.host, b.port, b.rack) for b in md.brokers]
        av, _ = self.conn.call(ApiVersionsRequest(client_software_name="odradek",
                                                  client_software_version="0"),
                               ApiVersionsResponse, max_version=3)
        features = {f.name: f.max_version_level for f in av.finalized_features}
        return ClusterInfo(cluster_id, controller, sorted(brokers, key=lambda b: b.node_id),
                           features, dict(self.conn.versions))


CONFIG_SOURCES = {0: "unknown", 1: "topic", 2: "dynamic-broker", 3: "dynamic-default-broker",
                  4: "static-broker", 5: "default", 6: "dynamic-broker-logger",
                  7: "client-metrics", 8: "group"}


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: str
    read_only: bool
    sensitive: bool


@dataclass(frozen=True)
class ClusterInfo:
    cluster_id: str | None
    controller: int
    brokers: list[BrokerInfo]
    features: dict[str, int]
    api_versions: dict[int, tuple[int, int]]


def alter_configs(admin: Admin, resource_type: int, name: str, *,
                  set_: dict[str, str] | None = None, delete: list[str] | None = None,
                  validate_only: bool = False) -> None:
    """IncrementalAlterConfigs: SET each of `set_`, DELETE (back to the default) `delete`."""
    from odradek.wire._generated.incremental_alter_configs import (
        IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsResponse,
    )

    req = IncrementalAlterConfigsRequest
    ops = [req.AlterableConfig(name=k, config_operation=0, value=v)
           for k, v in (set_ or {}).items()]
    ops += [req.AlterableConfig(name=k, config_operation=1, value=None) for k in delete or []]
    request = req(validate_only=validate_only, resources=[req.AlterConfigsResource(
        resource_type=resource_type, resource_name=name, configs=ops)])
    response, _ = admin.conn.call(request, IncrementalAlterConfigsResponse)
    for r in response.responses:
        if r.error_code != ErrorCode.NONE:
            raise KafkaError(r.error_code, f"alter the configs of {name}", r.error_message)
