"""A simulated cluster's brokers (`odradek serve --brokers N`, docs/cluster.md), through the
admin HTTP endpoint (`admin.http.port`): the partition states, and stopping or starting a
broker from a test. Standard library only."""

from __future__ import annotations

from typing import Any

from odradek.client.faults import FaultAdmin, FaultAdminError

__all__ = ["ClusterAdmin", "FaultAdminError"]


class ClusterAdmin:
    """`describe`, `leader`, `stop`, `start`, `kill`, `isolate`, `heal`, `slow` the brokers
    of the cluster at `url`."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self._http = FaultAdmin(url, timeout)

    def describe(self) -> dict[str, Any]:
        """{"controller_id", "brokers": [{node_id, live, endpoints}], "partitions": [...]}"""
        state: dict[str, Any] = self._http._call("GET", "/cluster")
        return state

    def partition(self, topic: str, partition: int = 0) -> dict[str, Any]:
        """{"leader", "leader_epoch", "replicas", "isr", "high_watermark", ...}"""
        for p in self.describe()["partitions"]:
            if p["topic"] == topic and p["partition"] == partition:
                return dict(p)
        raise FaultAdminError(f"no partition {topic}-{partition}")

    def leader(self, topic: str, partition: int = 0) -> int:
        return int(self.partition(topic, partition)["leader"])

    def stop(self, node: int) -> dict[str, Any]:
        """A controlled shutdown of broker `node`: its listener closes, its leaderships move."""
        state: dict[str, Any] = self._http._call("POST", f"/cluster/brokers/{node}/stop")
        return state

    def start(self, node: int) -> dict[str, Any]:
        """Broker `node` listens again; its replicas truncate, catch up and rejoin the ISR."""
        state: dict[str, Any] = self._http._call("POST", f"/cluster/brokers/{node}/start")
        return state

    def kill(self, node: int) -> dict[str, Any]:
        """Broker `node` dies without a controlled shutdown: its listener and connections
        drop; the controller fences it after broker.session.timeout.ms."""
        return self._post(node, "kill")

    def isolate(self, node: int) -> dict[str, Any]:
        """Cut broker `node` off from the other brokers and the controller (a network
        partition); clients still reach its listener."""
        return self._post(node, "isolate")

    def heal(self, node: int) -> dict[str, Any]:
        """End broker `node`'s isolation and slowness; it rejoins as a follower."""
        return self._post(node, "heal")

    def slow(self, node: int, delay_ms: int) -> dict[str, Any]:
        """Delay replication to and from broker `node` by `delay_ms` per fetch (0: none)."""
        return self._post(node, f"slow?delay_ms={int(delay_ms)}")

    def _post(self, node: int, action: str) -> dict[str, Any]:
        state: dict[str, Any] = self._http._call("POST", f"/cluster/brokers/{node}/{action}")
        return state
