"""What a handler sees of the world: narrow typed parts of the broker, and the request's origin.

The broker (the composition root, `broker.py`) builds one `RequestContext` per request from
the parts it owns. Handlers reach nothing else: no broker object, no registries. Each field is
a type a test can build or fake.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from odradek.broker.cluster import Cluster
from odradek.broker.fault_rules import FaultRules
from odradek.broker.feature_control import FeatureControl
from odradek.broker.features import Features
from odradek.broker.fetch_sessions import FetchSessionCache
from odradek.broker.metrics import Metrics
from odradek.broker.partitions import Partitions
from odradek.broker.quotas import ClientQuotas
from odradek.broker.replication.simulated import SimulatedCluster
from odradek.broker.security.store import ScramStore
from odradek.config import BrokerConfig
from odradek.coordinator.acl.authorizer import Authorizer
from odradek.coordinator.common import Clock

if TYPE_CHECKING:  # the coordinators are imported after the listener is up (issue #12)
    from odradek.broker.coordinators.runtime import CoordinatorRuntime
    from odradek.broker.group_configs import GroupConfigs
    from odradek.coordinator.group.coordinator import GroupCoordinator
    from odradek.coordinator.share.coordinator import ShareCoordinator
    from odradek.coordinator.txn.coordinator import TransactionCoordinator

    GroupRuntime = CoordinatorRuntime[GroupCoordinator]
    TxnRuntime = CoordinatorRuntime[TransactionCoordinator]
    ShareRuntime = CoordinatorRuntime[ShareCoordinator]


class Coordinators(Protocol):
    """The coordinators and GROUP configs, built on first use (the broker builds them right
    after its listeners are up, so ApiVersions and Metadata never wait for their imports)."""

    @property
    def groups(self) -> GroupRuntime: ...

    @property
    def transactions(self) -> TxnRuntime: ...

    @property
    def share(self) -> ShareRuntime: ...

    @property
    def group_configs(self) -> GroupConfigs: ...


class Node(Protocol):
    """This broker's identity as clients see it."""

    @property
    def node_id(self) -> int: ...

    def advertised_endpoint(self, listener: str) -> tuple[str, int]:
        """(host, port) advertised on `listener` (the first listener's if unknown)."""
        ...


@dataclass(slots=True)
class ClientInfo:
    """Per-connection facts (from the socket and from ApiVersions v3+)."""

    address: str
    listener: str
    # Kafka's KafkaPrincipal string ("User:<name>"); set by authentication (issue #13).
    # PLAINTEXT listeners and unauthenticated SSL keep Kafka's anonymous principal.
    principal: str = "User:ANONYMOUS"
    software_name: str | None = None
    software_version: str | None = None
    extra: dict[str, object] = field(default_factory=dict)
    # The transport sends `FileRegion` body parts itself (sendfile on a plain socket), so
    # Fetch may answer with regions of segment files; False (TLS, tests): bytes are read.
    zero_copy: bool = False
    # Client quotas (broker/quotas.py): no further request is read before this
    # time.monotonic() (KIP-219 muting); 0.0 when not throttled.
    throttled_until: float = 0.0

    @property
    def connection_id(self) -> str:
        """This connection, for share sessions (one ClientInfo object per connection)."""
        return f"{self.address}#{id(self)}"
    # The simulated broker whose listener took the connection (`--brokers N`); None: one.
    broker: int | None = None


@dataclass(slots=True, kw_only=True)
class RequestContext:
    # the broker's parts
    config: BrokerConfig
    node: Node
    clock: Clock
    cluster: Cluster
    partitions: Partitions
    coordinators: Coordinators
    features: Features
    fetch_sessions: FetchSessionCache
    faults: FaultRules
    api_ranges: Mapping[int, tuple[int, int]]  # served versions (`emulation.py`)
    metrics: Metrics | None  # None unless `admin.http.metrics`
    # None when `authorizer.class.name` is empty: every check is skipped (api/_auth.py)
    authorizer: Authorizer | None = None
    # the request
    client: ClientInfo
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    # SCRAM credentials (DescribeUserScramCredentials / AlterUserScramCredentials)
    scram: ScramStore | None = None
    # client quota configs and rates (DescribeClientQuotas / AlterClientQuotas, dispatch)
    quotas: ClientQuotas | None = None
    # The simulated cluster (`--brokers N`, docs/cluster.md); None with one broker
    replicas: SimulatedCluster | None = None
    # UpdateFeatures (feature_control.py); None in contexts built without a broker
    feature_control: FeatureControl | None = None

    @property
    def groups(self) -> GroupRuntime:
        return self.coordinators.groups

    @property
    def transactions(self) -> TxnRuntime:
        return self.coordinators.transactions

    @property
    def share(self) -> ShareRuntime:
        return self.coordinators.share

    @property
    def group_configs(self) -> GroupConfigs:
        """GROUP config resources (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs)."""
        return self.coordinators.group_configs
