"""The only socket code: listeners, the accept loop, one task per connection.

Sockets are raw and non-blocking; anyio's `wait_readable`/`wait_writable` park a task
until the kernel is ready. Reads go straight into a reusable buffer (`recv_into`), and
responses leave in one vectored `sendmsg`, so record bytes read from segments reach the
kernel without being joined into a new buffer. Requests on one connection are answered
strictly in order, one at a time, as Kafka does.
"""

from __future__ import annotations

import signal
import socket
from collections.abc import Sequence

import anyio
import anyio.abc
import structlog

from odradek.broker.broker import Broker
from odradek.broker.connection import CloseConnection, Connection
from odradek.broker.context import ClientInfo
from odradek.broker.dispatch import dispatch
from odradek.config import BrokerConfig, Listener
from odradek.wire import ProtocolError
from odradek.wire.primitives import Buffer

log = structlog.get_logger("odradek.server")

_RECV_SIZE = 256 * 1024
_IOV_MAX = 512  # stay well below the kernel's IOV_MAX (1024) per sendmsg call


def _bind(listener: Listener) -> socket.socket:
    host = listener.host
    if host in ("", "0.0.0.0", "::") and socket.has_dualstack_ipv6():
        sock = socket.create_server(("::", listener.port), family=socket.AF_INET6,
                                    dualstack_ipv6=True, reuse_port=False, backlog=512)
    else:
        family = socket.getaddrinfo(host or None, listener.port, type=socket.SOCK_STREAM,
                                    flags=socket.AI_PASSIVE)[0][0]
        sock = socket.create_server((host, listener.port), family=family, backlog=512)
    sock.setblocking(False)
    return sock


async def _recv_into(sock: socket.socket, view: memoryview) -> int:
    while True:
        try:
            return sock.recv_into(view)
        except (BlockingIOError, InterruptedError):
            await anyio.wait_readable(sock)


async def send_all(sock: socket.socket, parts: Sequence[Buffer]) -> None:
    views = [memoryview(p) for p in parts if len(p)]
    i = 0
    while i < len(views):
        try:
            sent = sock.sendmsg(views[i:i + _IOV_MAX])
        except (BlockingIOError, InterruptedError):
            await anyio.wait_writable(sock)
            continue
        while sent:
            head = views[i]
            if sent >= len(head):
                sent -= len(head)
                i += 1
            else:
                views[i] = head[sent:]
                sent = 0


class Server:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.connections = 0

    async def accept_loop(self, lsock: socket.socket, listener: Listener,
                          tg: anyio.abc.TaskGroup) -> None:
        while True:
            try:
                sock, addr = lsock.accept()
            except (BlockingIOError, InterruptedError):
                await anyio.wait_readable(lsock)
                continue
            except OSError as e:  # e.g. EMFILE: keep serving existing connections
                log.error("accept failed", error=str(e))
                await anyio.sleep(0.1)
                continue
            if self.connections >= self.broker.config.get_int("max.connections"):
                log.warning("connection refused", reason="max.connections reached", client=str(addr))
                sock.close()
                continue
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            tg.start_soon(self.serve_connection, sock, f"{addr[0]}:{addr[1]}", listener.name)

    async def serve_connection(self, sock: socket.socket, address: str, listener: str) -> None:
        self.connections += 1
        conn = Connection(self.broker.config.get_int("socket.request.max.bytes"))
        client = ClientInfo(address=address, listener=listener)
        buf = memoryview(bytearray(_RECV_SIZE))
        try:
            while True:
                n = await _recv_into(sock, buf)
                if n == 0:
                    return
                conn.receive_data(buf[:n])
                while (request := conn.next_request()) is not None:
                    out = await dispatch(self.broker.context(client, request), request)
                    if out is not None:
                        await send_all(sock, out)
        except (ProtocolError, CloseConnection) as e:
            log.warning("closing connection", reason=str(e), client=address)
        except (ConnectionError, TimeoutError):
            pass
        except Exception:
            log.exception("request failed; closing connection", client=address)
        finally:
            self.connections -= 1
            sock.close()


async def _watch_signals(scope: anyio.CancelScope, *,
                         task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()  # handlers are installed: "listening" may now be announced
        async for signum in signals:
            log.info("shutting down", signal=signal.Signals(signum).name)
            scope.cancel()
            return


async def serve(config: BrokerConfig) -> None:
    """Run the broker until SIGINT/SIGTERM, then close every log cleanly."""
    broker = Broker(config)
    server = Server(broker)
    bound: list[tuple[socket.socket, Listener]] = []
    try:
        for listener in config.listeners:
            sock = _bind(listener)
            port = sock.getsockname()[1]
            bound.append((sock, Listener(listener.name, listener.host, port)))
        broker.set_bound_ports({lst.name: lst.port for _, lst in bound})
        async with anyio.create_task_group() as tg:
            await tg.start(_watch_signals, tg.cancel_scope)
            await broker.start(tg)
            for sock, lst in bound:
                tg.start_soon(server.accept_loop, sock, lst, tg)
                log.info("listening", listener=lst.name, host=lst.host, port=lst.port,
                         cluster_id=broker.cluster.cluster_id, node_id=broker.node_id)
    finally:
        for sock, _ in bound:
            sock.close()
        broker.close()
        log.info("stopped")
