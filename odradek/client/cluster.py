"""A simulated cluster's brokers (`odradek serve --brokers N`, docs/cluster.md), through the
admin HTTP endpoint (`admin.http.port`): the partition states, and stopping or starting a
broker from a test. Standard library only."""

from __future__ import annotations

from typing import Any

from odradek.client.faults import FaultAdmin, FaultAdminError

__all__ = ["ClusterAdmin", "FaultAdminError"]


class ClusterAdmin:
    """`describe`, `leader`, `stop`, `start` the brokers of the cluster at `url`."""

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
