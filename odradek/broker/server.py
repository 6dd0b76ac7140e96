"""The only socket code: listeners, the accept loop, one task per connection.

Sockets are raw and non-blocking; anyio's `wait_readable`/`wait_writable` park a task
until the kernel is ready. Reads go into one receive buffer shared by every connection
(`recv_into`, then handed to the connection's frame decoder before anything else runs), so
an idle connection holds no buffer: what a connection holds is the request it is reading,
filled as its bytes arrive, and freed once answered. Responses leave in one vectored
`sendmsg`, so record bytes read from segments reach the kernel without being joined into a
new buffer. Requests on one connection are answered strictly in order, one at a time, as
Kafka does.

Fairness: a connection's task yields to the event loop before each request it did not have
to wait for (the socket already held it: pipelined requests, a busy producer). Without that a
task whose socket is never empty reads and answers request after request without a single
suspension, and every other connection, including long-polling fetches its own appends woke,
waits until that client pauses (issue #12: Fetch round trips of hundreds of ms, beyond
`max_wait_ms`, while records kept arriving). A task that waited for its socket has already
yielded and pays nothing.

Limits, with Kafka's names and meanings:
- `queued.max.request.bytes` (-1: unbounded): the requests being read and waiting, across
  connections, counted at the size their header announces (as Kafka's memory pool reserves
  them). Once the total reaches the bound, connections that are not in the middle of a
  request stop reading from their sockets until memory is released, as Kafka mutes
  channels; a connection already reading a request finishes it, so the pool cannot
  deadlock (it may overshoot by the requests in progress, as Kafka's non-strict pool does).
- `max.connections` and `max.connections.per.ip`: a connection past either is closed right
  after `accept()`. (`max.connections.per.ip.overrides` is not implemented.)
- `connections.max.idle.ms` (negative: never): a connection that has read and sent nothing
  for that long is closed, checked ten times per period (at most every 10 s); one whose
  request is being answered (a long poll, a join) is never idle.
- When `accept()` fails for lack of descriptors (EMFILE/ENFILE), the server gives up the
  one spare descriptor it keeps, accepts the waiting connection and closes it (that client
  sees a close, not a hang), takes the spare back and backs off briefly; existing
  connections are served throughout and new ones are accepted again as soon as descriptors
  are free.
- At start the soft RLIMIT_NOFILE is raised to the hard limit, as the JVM does for Kafka
  (HotSpot's MaxFDLimit, on by default), before the logs are opened: segments may hold half
  of it (`storage/handles.py`), the rest is for sockets. One `file descriptors` line says
  what the limit is and what segments may hold.
"""

from __future__ import annotations

import enum
import errno
import os
import resource
import signal
import socket
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import cast

import anyio
import anyio.abc
import anyio.lowlevel
import structlog

from odradek.broker import heap
from odradek.broker.broker import Broker
from odradek.broker.cluster import MetadataError
from odradek.broker.connection import CloseConnection, Connection
from odradek.broker.context import ClientInfo
from odradek.broker.dispatch import dispatch
from odradek.broker.security.authenticator import SaslSession, SecurityConfigError
from odradek.broker.security.setup import Security, build_security
from odradek.broker.security.tls import map_principal, tls_accept
from odradek.broker.storage import faults
from odradek.broker.storage.dir_lock import DirLock, LogDirLockedError, lock_log_dirs
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


_ACCEPT_BACKOFF_S = 0.05  # after accept() failed for lack of descriptors
_TLS_HANDSHAKE_S = 30.0  # a TLS handshake not done by then closes the connection


class RequestMemory:
    """`queued.max.request.bytes` across connections: bytes reserved by requests being read
    or waiting; `limit` < 0 means unbounded."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._released = anyio.Event()

    @property
    def exhausted(self) -> bool:
        return 0 <= self.limit <= self.used

    def charge(self, delta: int) -> None:
        was = self.exhausted
        self.used += delta
        if self.exhausted != was:
            log.info("request memory full; reading paused" if not was
                     else "request memory released; reading resumed",
                     used=self.used, limit=self.limit)
        if delta < 0:
            self._released.set()
            self._released = anyio.Event()

    async def wait_released(self) -> None:
        await self._released.wait()


def _open_spare() -> int | None:
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


class _Activity:
    """What the idle reaper knows of one connection."""

    __slots__ = ("address", "busy", "last", "scope")

    def __init__(self, address: str, scope: anyio.CancelScope) -> None:
        self.address = address
        self.scope = scope
        self.last = time.monotonic()  # of the last bytes read or sent
        self.busy = False  # a request is being answered: never idle


class Server:
    def __init__(self, broker: Broker, security: Security | None = None) -> None:
        self.broker = broker
        security = security or Security()
        self.sasl = security.sasl  # by listener name: SASL listeners (security/authenticator.py)
        self.tls = security.tls  # by listener name: SSL and SASL_SSL listeners (security/tls.py)
        self.connections = 0
        self._activity: dict[int, _Activity] = {}  # by id(), for `reap_idle`
        self.per_ip: defaultdict[str, int] = defaultdict(int)
        self.memory = RequestMemory(broker.config.get_int("queued.max.request.bytes"))
        self._recv_buf = memoryview(bytearray(_RECV_SIZE))  # shared: see the module docstring
        self._spare = _open_spare()  # given up to accept-and-close when out of descriptors

    def _shed_one(self, lsock: socket.socket) -> None:
        """Out of descriptors: accept the waiting connection with the spare one and close it."""
        if self._spare is None:
            self._spare = _open_spare()
            return
        os.close(self._spare)
        self._spare = None
        try:
            sock, addr = lsock.accept()
        except OSError:
            pass
        else:
            sock.close()
            log.warning("connection refused", reason="out of file descriptors",
                        client=f"{addr[0]}:{addr[1]}")
        self._spare = _open_spare()

    async def accept_loop(self, lsock: socket.socket, listener: Listener,
                          tg: anyio.abc.TaskGroup) -> None:
        config = self.broker.config
        while True:
            try:
                sock, addr = lsock.accept()
            except (BlockingIOError, InterruptedError):
                await anyio.wait_readable(lsock)
                continue
            except OSError as e:  # keep serving existing connections
                log.error("accept failed", error=str(e))
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self._shed_one(lsock)
                await anyio.sleep(_ACCEPT_BACKOFF_S)
                continue
            ip = addr[0]
            if self.connections >= config.get_int("max.connections"):
                log.warning("connection refused", reason="max.connections reached", client=str(addr))
                sock.close()
                continue
            if self.per_ip[ip] >= config.get_int("max.connections.per.ip"):
                log.warning("connection refused", reason="max.connections.per.ip reached",
                            client=str(addr))
                sock.close()
                continue
            self.connections += 1
            self.per_ip[ip] += 1
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            tg.start_soon(self.serve_connection, sock, ip, f"{ip}:{addr[1]}", listener.name)

    async def reap_idle(self, max_idle_ms: int) -> None:
        """`connections.max.idle.ms`, as Kafka's selector applies it: a connection with no
        bytes read or sent for that long, and no request being answered, is closed."""
        max_idle_s = max_idle_ms / 1000
        every = min(max(max_idle_s / 10, 0.01), 10.0)
        while True:
            await anyio.sleep(every)
            now = time.monotonic()
            for activity in list(self._activity.values()):
                if not activity.busy and now - activity.last >= max_idle_s:
                    log.info("closing idle connection", client=activity.address,
                             idle_ms=int((now - activity.last) * 1000))
                    activity.scope.cancel()

    async def serve_connection(self, sock: socket.socket, ip: str, address: str,
                               listener: str) -> None:
        with anyio.CancelScope() as scope:
            activity = _Activity(address, scope)
            self._activity[id(activity)] = activity
            stream = None
            try:
                principal = "User:ANONYMOUS"
                tls = self.tls.get(listener)
                if tls is not None:  # TLS stands in for the socket; the plain path is untouched
                    try:
                        stream = await tls_accept(sock, tls, _TLS_HANDSHAKE_S)
                        dn = stream.peer_dn()
                        if dn is not None:
                            principal = "User:" + map_principal(dn, tls.rules)
                            log.info("authenticated", client=address, principal=principal,
                                     listener=listener, dn=dn)
                    except (ConnectionError, ValueError) as e:
                        log.warning("closing connection", reason=str(e), client=address)
                        return
                    activity.last = time.monotonic()
                await self._serve(sock if stream is None else cast(socket.socket, stream),
                                  address, listener, activity, principal)
            finally:
                if stream is not None:
                    stream.close()
                del self._activity[id(activity)]
                self.connections -= 1
                self.per_ip[ip] -= 1
                if not self.per_ip[ip]:
                    del self.per_ip[ip]
                sock.close()

    async def _serve(self, sock: socket.socket, address: str, listener: str,
                     activity: _Activity, principal: str = "User:ANONYMOUS") -> None:
        conn = Connection(self.broker.config.get_int("socket.request.max.bytes"))
        client = ClientInfo(address=address, listener=listener, principal=principal)
        sasl_setup = self.sasl.get(listener)
        session = None if sasl_setup is None else SaslSession(sasl_setup, address)
        if session is not None:
            client.extra["sasl"] = session
        memory = self.memory
        charged = 0  # what this connection holds of `memory`
        buf = self._recv_buf
        waited = True  # this task let the others run since it last dispatched a request
        try:
            while True:
                while True:
                    while memory.exhausted and not conn.in_request:
                        await memory.wait_released()  # muted, as Kafka mutes the channel
                        waited = True
                    try:
                        n = sock.recv_into(buf)
                        break
                    except (BlockingIOError, InterruptedError):
                        await anyio.wait_readable(sock)
                        waited = True
                if n == 0:
                    return
                activity.last = time.monotonic()
                # No await between the read and this: the shared buffer is not reused yet.
                conn.receive_data(buf[:n])
                held = conn.reserved_bytes
                if held != charged:
                    memory.charge(held - charged)
                    charged = held
                while (request := conn.next_request()) is not None:
                    if not waited:
                        # A backlog (pipelined requests, a socket never empty): yield once per
                        # request, or this task would run until the client pauses while every
                        # other connection, and fetches woken by its appends, wait.
                        await anyio.lowlevel.checkpoint()
                    waited = False
                    if session is not None and (why := session.admit(request.api_key)):
                        raise CloseConnection(why)  # as Kafka's SASL authenticator closes
                    activity.busy = True
                    out = await dispatch(self.broker.context(client, request), request)
                    del request  # the frame is freed here, before the response is sent
                    held = conn.reserved_bytes
                    memory.charge(held - charged)
                    charged = held
                    if out is not None:
                        await send_all(sock, out)
                    if session is not None and session.closing:
                        raise CloseConnection("SASL authentication failed")
                    activity.busy = False
                    activity.last = time.monotonic()
        except (ProtocolError, CloseConnection) as e:
            log.warning("closing connection", reason=str(e), client=address)
        except (ConnectionError, TimeoutError):
            pass
        except Exception:
            log.exception("request failed; closing connection", client=address)
        finally:
            if charged:
                memory.charge(-charged)


async def _watch_signals(scope: anyio.CancelScope, *,
                         task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()  # handlers are installed: "listening" may now be announced
        async for signum in signals:
            log.info("shutting down", signal=signal.Signals(signum).name)
            scope.cancel()
            return


class StartupFailure(enum.IntEnum):
    """Why the broker could not start; the value is the process's exit code."""

    LISTENER = 3  # a listener could not be bound (port in use, address not local, ...)
    DATA_DIR = 4  # a log dir cannot be created, is not a directory, or is not writable
    LOCKED = 5  # a log dir is held by another broker
    METADATA = 6  # the broker's metadata files cannot be read
    STORAGE = 7  # anything else that fails while opening the logs
    SECURITY = 8  # a SASL listener's settings are unusable


class StartupError(Exception):
    """One line for the operator: what failed and what to do."""

    def __init__(self, failure: StartupFailure, message: str) -> None:
        super().__init__(message)
        self.failure = failure


def _bind_all(listeners: Sequence[Listener]) -> list[tuple[socket.socket, Listener]]:
    bound: list[tuple[socket.socket, Listener]] = []
    try:
        for listener in listeners:
            try:
                sock = _bind(listener)
            except OSError as exc:
                raise StartupError(
                    StartupFailure.LISTENER,
                    f"cannot listen on {listener.name}://{listener.host}:{listener.port}: "
                    f"{exc.strerror or exc}; stop what uses the port or set another in "
                    "`listeners`") from None
            bound.append((sock, Listener(listener.name, listener.host, sock.getsockname()[1])))
    except BaseException:
        for sock, _ in bound:
            sock.close()
        raise
    return bound


def _open_broker(config: BrokerConfig) -> Broker:
    try:
        return Broker(config)
    except MetadataError as exc:
        raise StartupError(StartupFailure.METADATA,
                           f"{exc}; restore the file from a backup, or move the log dir away "
                           "to start empty") from None
    except OSError as exc:
        raise _data_dir_error(exc, config) from None
    except Exception as exc:
        log.debug("opening the logs failed", exc_info=True)
        raise StartupError(StartupFailure.STORAGE,
                           f"cannot open the logs in {', '.join(map(str, config.log_dirs))}: "
                           f"{exc!r}; run with --log-level debug for details") from None


def _data_dir_error(exc: OSError, config: BrokerConfig) -> StartupError:
    where = exc.filename or ", ".join(str(d) for d in config.log_dirs)
    reason = ("it is not a directory" if isinstance(exc, FileExistsError | NotADirectoryError)
              else exc.strerror or str(exc))
    return StartupError(StartupFailure.DATA_DIR,
                        f"cannot use {where}: {reason}; check `log.dirs` names writable "
                        "directories")


def _lock(config: BrokerConfig) -> list[DirLock]:
    try:
        return lock_log_dirs(config.log_dirs)
    except LogDirLockedError as exc:
        raise StartupError(StartupFailure.LOCKED,
                           f"{exc}; stop that broker or give this one other `log.dirs`") from None
    except OSError as exc:
        raise _data_dir_error(exc, config) from None


def raise_descriptor_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit (to the kernel's `nr_open` when the hard
    limit is unlimited); (soft limit before, soft limit now). Unchanged when not permitted."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return soft, soft
    target = hard
    if hard == resource.RLIM_INFINITY:
        try:
            with open("/proc/sys/fs/nr_open") as f:
                target = int(f.read())
        except (OSError, ValueError):
            target = 1 << 20
    if target <= soft:
        return soft, soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (OSError, ValueError):
        return soft, soft
    return soft, target


async def serve(config: BrokerConfig) -> None:
    """Run the broker until SIGINT/SIGTERM, then close every log cleanly.

    Start-up order, so that a broker that cannot start leaves no trace: bind every listener,
    then lock every log dir (`.lock`), and only then create, read or recover anything there.
    Failures raise `StartupError` (one line, a distinct exit code), after removing what this
    start created in the dirs it locked (`DirLock.undo_start`)."""
    if faults.install_from_environment():  # a test hook, never set in production
        log.warning("TEST HOOK: injected I/O faults are on", control=os.environ[faults.ENV])
    bound = _bind_all(config.listeners)
    try:
        locks = _lock(config)
        try:
            before, limit = raise_descriptor_limit()
            try:
                try:
                    security = build_security(config)
                except SecurityConfigError as exc:
                    raise StartupError(StartupFailure.SECURITY,
                                       f"{exc}; check `{exc.key}`") from None
                broker = _open_broker(config)
            except StartupError:
                for lock in locks:  # a start that fails leaves no file behind
                    lock.undo_start()
                raise
            heap.settle()  # what start-up loaded lives as long as the process
            log.info("file descriptors", limit=limit,
                     **({"raised_from": before} if limit != before else {}),
                     segments_may_hold=broker.logs.handles.capacity)
            try:
                await _run(broker, bound, security)
            finally:
                broker.close()
                log.info("stopped")
        finally:
            for lock in locks:
                lock.release()
    finally:
        for sock, _ in bound:
            sock.close()


async def _run(broker: Broker, bound: list[tuple[socket.socket, Listener]],
               security: Security | None = None) -> None:
    server = Server(broker, security)
    if security is not None:
        broker.scram = security.scram
    broker.set_bound_ports({lst.name: lst.port for _, lst in bound})
    async with anyio.create_task_group() as tg:
        await tg.start(_watch_signals, tg.cancel_scope)
        await broker.start(tg)
        max_idle_ms = broker.config.get_int("connections.max.idle.ms")
        if max_idle_ms >= 0:  # negative: never, as in Kafka
            tg.start_soon(server.reap_idle, max_idle_ms)
        for sock, lst in bound:
            tg.start_soon(server.accept_loop, sock, lst, tg)
            log.info("listening", listener=lst.name, host=lst.host, port=lst.port,
                     cluster_id=broker.cluster.cluster_id, node_id=broker.node_id)
