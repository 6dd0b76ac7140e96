"""Each simulated broker's listeners (`--brokers N`, docs/cluster.md): its own sockets, accept
loops and connections, which know which broker they reached (`ClientInfo.broker`).

The first broker uses the sockets `serve` bound (the configured listeners, so
`simulated.broker.ports[0]` must be the first listener's port); broker i binds
`simulated.broker.ports[i]` for the first listener when given, else each listener's port
plus i (port 0: a free port each). Stopping a broker cancels its accept loops and drops its
connections, then closes its sockets; starting it binds the same ports again.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Sequence

import anyio
import anyio.abc
import structlog

from odradek.broker.replication.simulated import SimulatedCluster
from odradek.config import ConfigError, Listener

log = structlog.get_logger("odradek.server")

Bound = list[tuple[socket.socket, Listener]]


class NodeListeners:
    def __init__(self, sim: SimulatedCluster, first: Bound,
                 bind: Callable[[Sequence[Listener]], Bound],
                 serve_factory: Callable[[int], object]) -> None:
        self._sim = sim
        self._bind = bind
        self._new_server = serve_factory  # a `Server` for a node, its connections tagged
        self._bound: dict[int, Bound] = {sim.ids[0]: first}
        self._scopes: dict[int, anyio.CancelScope] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        config = sim.config
        try:
            given = [int(p) for p in config.get_list("simulated.broker.ports") if p]
        except ValueError:
            raise ConfigError("not a list of port numbers", "simulated.broker.ports") from None
        if given and len(given) != len(sim.ids):
            raise ConfigError(f"names {len(given)} ports for {len(sim.ids)} brokers",
                              "simulated.broker.ports")
        first_port = config.listeners[0].port if config.listeners else 0
        if given and given[0] != first_port:  # the first broker serves `listeners` itself
            raise ConfigError(f"the first port is the first broker's and must be the first "
                              f"listener's port ({first_port}), not {given[0]}",
                              "simulated.broker.ports")
        self._wanted: dict[int, list[Listener]] = {}
        for i, node in enumerate(sim.ids):
            wanted = []
            for j, (_, lst) in enumerate(first):
                configured = config.listeners[j].port
                port = given[i] if given and j == 0 else (
                    0 if configured == 0 else configured + i)
                wanted.append(Listener(lst.name, lst.host, lst.port if i == 0 else port))
            self._wanted[node] = wanted

    def bind_all(self) -> None:
        """Bind every other broker's listeners (before anything is served)."""
        for node in self._sim.ids[1:]:
            self._bound[node] = self._bind(self._wanted[node])
        for node, bound in self._bound.items():
            ports = {lst.name: lst.port for _, lst in bound}
            self._wanted[node] = [lst for _, lst in bound]  # port 0 is now a real port
            self._sim.nodes[node].advertised = [
                Listener(a.name, a.host, ports.get(a.name, a.port))
                for a in self._sim.config.advertised_for(ports)]

    async def run(self, tg: anyio.abc.TaskGroup) -> None:
        self._tg = tg
        self._sim.on_stop = self._stop
        self._sim.on_start = self._start
        for node in self._sim.ids:
            await tg.start(self._serve_node, node)
        tg.start_soon(self._sim.failures.run)  # session and replica lag timers
        tg.start_soon(self._sim.balancer.run)  # auto.leader.rebalance.enable

    async def _serve_node(self, node: int, *,
                          task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
                          ) -> None:
        server = self._new_server(node)
        bound = self._bound[node]
        try:
            with anyio.CancelScope() as scope:
                self._scopes[node] = scope
                async with anyio.create_task_group() as ntg:
                    for sock, lst in bound:
                        ntg.start_soon(server.accept_loop, sock, lst, ntg)  # type: ignore[attr-defined]
                        log.info("listening", listener=lst.name, host=lst.host, port=lst.port,
                                 cluster_id=self._sim.cluster.cluster_id, node_id=node)
                    task_status.started()
        finally:
            for sock, _ in bound:
                sock.close()

    def _stop(self, node: int) -> None:
        scope = self._scopes.pop(node, None)
        if scope is not None:
            scope.cancel()

    def _start(self, node: int) -> None:
        self._bound[node] = self._bind(self._wanted[node])  # the same ports again
        if self._tg is not None:
            self._tg.start_soon(self._serve_node, node)
