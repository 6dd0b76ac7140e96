"""Odradek for your tests: a real broker on a free loopback port with a throwaway data dir.

In pytest, the plugin (`odradek.testing.pytest_plugin`, registered through the `pytest11`
entry point) gives fixtures; see docs/testing.md. Anywhere else (unittest, scripts) the same
broker is a context manager::

    from odradek.testing import running_broker

    with running_broker() as broker:
        topic = broker.create_topic(partitions=3)   # a fresh, uniquely named topic
        produce_and_consume(broker.bootstrap, topic)

In unittest, `setUpClass` can use `cls.broker = cls.enterClassContext(running_broker())`.
`running_broker(bootstrap="host:port")` uses a broker that is already running instead.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from odradek.testing.process import BrokerProcess, BrokerStartError

if TYPE_CHECKING:
    from odradek.client import Admin
    from odradek.client.cluster import ClusterAdmin
    from odradek.client.faults import FaultAdmin

__all__ = [
    "TEST_DEFAULTS",
    "BrokerProcess",
    "BrokerStartError",
    "TestBroker",
    "running_broker",
    "unique_name",
]

# Settings a test broker gets unless overridden: a new consumer group starts its first
# rebalance at once instead of after Kafka's 3 s delay, and the internal topics have one
# partition each rather than 50 (created on first use: 50 partitions cost start-up time).
TEST_DEFAULTS: Mapping[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    # The admin HTTP endpoint on a free loopback port: `TestBroker.faults` talks to it.
    "admin.http.port": "0",
}

_NOT_NAME = re.compile(r"[^a-zA-Z0-9._-]+")


def unique_name(prefix: str = "t", *, hint: str = "") -> str:
    """`<prefix>-<hint>-<10 hex>`: a valid Kafka topic or group name, never used before.
    `hint` (e.g. a test's name) is reduced to Kafka's name characters and shortened."""
    tail = uuid.uuid4().hex[:10]
    hint = _NOT_NAME.sub("_", hint).strip("_.-")[:80]
    return f"{prefix}-{hint}-{tail}" if hint else f"{prefix}-{tail}"


class TestBroker:
    """A running broker: ours (`process` set) or one given by its bootstrap address."""

    __test__ = False  # not a test class, whatever pytest's name pattern says

    def __init__(self, bootstrap: str, process: BrokerProcess | None = None,
                 data_dir: Path | None = None, admin_url: str | None = None) -> None:
        self.bootstrap = bootstrap
        self.process = process
        self.data_dir = data_dir
        self._admin: Admin | None = None
        self._admin_url = admin_url

    @property
    def admin_url(self) -> str | None:
        """The broker's admin HTTP endpoint (`http://127.0.0.1:PORT`), if it has one."""
        if self._admin_url is None and self.process is not None:
            self._admin_url = self.process.admin_url
        return self._admin_url

    @property
    def faults(self) -> FaultAdmin:
        """The broker's fault rules: `broker.faults.add("Produce",
        error="NOT_LEADER_OR_FOLLOWER", count=2)`, `.list()`, `.clear()` (docs/testing.md)."""
        from odradek.client.faults import FaultAdmin

        url = self.admin_url
        if url is None:
            raise RuntimeError("this broker has no admin HTTP endpoint: start it with "
                               "admin.http.port set (running_broker sets 0)")
        return FaultAdmin(url)

    @property
    def cluster(self) -> ClusterAdmin:
        """The simulated cluster's brokers (`simulated.brokers` > 1, docs/cluster.md):
        `cluster.stop(2)`, `.start(2)`, `.leader(topic, partition)`, `.describe()`."""
        from odradek.client.cluster import ClusterAdmin

        url = self.admin_url
        if url is None:
            raise RuntimeError("this broker has no admin HTTP endpoint: start it with "
                               "admin.http.port set (running_broker sets 0)")
        return ClusterAdmin(url)

    def all_bootstrap(self) -> str:
        """Every simulated broker's `host:port`, so a client made while one broker is stopped
        still finds the cluster (only for a simulated cluster: one broker has no /cluster)."""
        brokers = self.cluster.describe().get("brokers", [])
        addresses = [e.split("://", 1)[1] for b in brokers for e in b["endpoints"][:1]]
        return ",".join(addresses) if len(addresses) > 1 else self.bootstrap

    def inject_fault(self, api: str | int, action: str | None = None,
                     **spec: object) -> dict[str, object]:
        """Shorthand for `faults.add(...)`."""
        return self.faults.add(api, action, **spec)

    @property
    def external(self) -> bool:
        return self.process is None

    def admin(self) -> Admin:
        """A shared admin client on the project's own wire layer (reconnects when broken)."""
        from odradek.client import Admin

        if self._admin is None:
            self._admin = Admin(self.bootstrap, timeout=30.0, client_id="odradek-testing")
        return self._admin

    def _with_admin(self, op: str, *args: object, **kwargs: object) -> object:
        from odradek.client import BrokerUnreachable

        try:
            return getattr(self.admin(), op)(*args, **kwargs)
        except BrokerUnreachable:  # e.g. the test restarted the broker: one retry
            self.close_admin()
            return getattr(self.admin(), op)(*args, **kwargs)

    def create_topic(self, name: str | None = None, partitions: int = 1,
                     configs: Mapping[str, str] | None = None) -> str:
        """Create a topic (default: a fresh unique name) and wait until it has leaders."""
        name = name or unique_name("t")
        self._with_admin("create_topic", name, partitions, configs=configs)
        return name

    def delete_topics(self, *names: str) -> None:
        self._with_admin("delete_topics", names, missing_ok=True)

    def close_admin(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    def log_text(self, since: int = 0) -> str:
        """What our broker logged (from line `since`); empty for an external broker."""
        return "" if self.process is None else self.process.stderr_text(since)


@contextmanager
def running_broker(overrides: Mapping[str, str] | None = None, *,
                   data_dir: Path | None = None, bootstrap: str | None = None,
                   start_timeout: float = 30.0,
                   admin_url: str | None = None) -> Iterator[TestBroker]:
    """Start `odradek serve` (TEST_DEFAULTS, then `overrides`) on a free port with
    `data_dir` (default: a temporary directory, removed afterwards), yield it, then stop it
    with SIGTERM; a broker that does not exit cleanly raises on exit. With `bootstrap`, use
    that already-running broker and start nothing (`admin_url`: its admin HTTP endpoint,
    for `faults`)."""
    if bootstrap is not None:
        broker = TestBroker(bootstrap, admin_url=admin_url)
        try:
            yield broker
        finally:
            broker.close_admin()
        return
    tmp = None
    if data_dir is None:
        tmp = tempfile.mkdtemp(prefix="odradek-test-")
        data_dir = Path(tmp)
    process = BrokerProcess(data_dir, {**TEST_DEFAULTS, **(overrides or {})})
    try:
        process.start(timeout=start_timeout)
        broker = TestBroker(process.bootstrap, process, data_dir)
        try:
            yield broker
        finally:
            broker.close_admin()
            if process.running:
                code = process.stop()
                if code not in process.clean_exit_codes:
                    raise RuntimeError(f"the test broker exited with {code} after SIGTERM:\n"
                                       f"{process.stderr_text()}")
    finally:
        if process.running:
            process.kill()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
