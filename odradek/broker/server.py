"""The only socket code: listeners, the accept loop, one task per connection.

A connection's task is a plain asyncio task the server tracks (`Server._spawn`), not an anyio
task-group task: the group's per-task machinery was a third of an idle connection's memory
(issue #12). Shutdown cancels and awaits every one of them before the logs close, as the task
group did; the code inside is anyio throughout.

Sockets are raw and non-blocking; a connection's task parks on `_Readable` until its socket
has bytes (anyio's `wait_writable` for sends). `_Readable` keeps the socket registered with
the event loop between requests: anyio's `wait_readable` adds the descriptor to epoll and
removes it again on every wait (two `epoll_ctl` calls per request, ~6% of the CPU at 5,000
requests/s in issue #12). Reads go into one receive buffer shared by every connection
(`recv_into`, then handed to the connection's frame decoder before anything else runs), so
an idle connection holds no buffer: what a connection holds is the request it is reading,
filled as its bytes arrive, and freed once answered. Responses leave by vectored `sendmsg`
for their buffers and `os.sendfile` for their file regions (`wire/regions.py`): a Fetch on a
plain socket (`ClientInfo.zero_copy`) answers with regions of segment files, sent from the page
cache with no copy in user space (issue #12); a transport that is not a plain socket (TLS, when
it comes) must leave `zero_copy` off, and Fetch then reads the bytes (`os.pread`) instead.
Requests on one connection are answered strictly in order, one at a time, as Kafka does.

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

import asyncio
import enum
import errno
import os
import resource
import signal
import socket
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

import anyio
import anyio.abc
import anyio.lowlevel
import structlog

from odradek.broker import heap
from odradek.broker.broker import Broker
from odradek.broker.cluster import MetadataError
from odradek.broker.connection import CloseConnection, Connection, IncomingRequest, response_frame
from odradek.broker.context import ClientInfo
from odradek.broker.dispatch import dispatch
from odradek.broker.security.authenticator import SaslSession, SecurityConfigError
from odradek.broker.security.setup import Security, build_security
from odradek.broker.security.tls import map_principal, tls_accept
from odradek.broker.storage import faults
from odradek.broker.storage.dir_lock import DirLock, LogDirLockedError, lock_log_dirs
from odradek.config import BrokerConfig, ConfigError, Listener
from odradek.wire import ErrorCode, ProtocolError
from odradek.wire.framing import frame_size_prefix
from odradek.wire.regions import FileRegion, Part

if TYPE_CHECKING:
    from odradek.broker.admin_http import AdminHttp
    from odradek.broker.replication.listeners import NodeListeners

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


async def send_all(sock: socket.socket, parts: Sequence[Part]) -> None:
    """Send a response: runs of buffers with vectored `sendmsg`, file regions with
    `os.sendfile` (page cache to socket, no copy in user space). Partial sends resume where
    they stopped; a full socket parks on `wait_writable`. Every region is closed after,
    sent or not (it owns a dup of its segment's descriptor)."""
    try:
        views: list[memoryview] = []
        for part in parts:
            if isinstance(part, FileRegion):
                if views:
                    await _send_buffers(sock, views, more=True)
                    views = []
                await _send_region(sock, part)
            elif len(part):
                views.append(memoryview(part))
        if views:
            await _send_buffers(sock, views)
    finally:
        for part in parts:
            if isinstance(part, FileRegion):
                part.close()


async def _send_buffers(sock: socket.socket, views: list[memoryview], more: bool = False) -> None:
    # MSG_MORE before a region: the headers leave in one segment with the records that follow
    # (TCP_NODELAY would otherwise push them out alone).
    flags = socket.MSG_MORE if more else 0
    i = 0
    while i < len(views):
        try:
            sent = sock.sendmsg(views[i:i + _IOV_MAX], (), flags)
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


async def _send_region(sock: socket.socket, region: FileRegion) -> None:
    out = sock.fileno()
    offset, left = region.offset, region.length
    while left:
        try:
            sent = os.sendfile(out, region.fd, offset, left)
        except (BlockingIOError, InterruptedError):
            await anyio.wait_writable(sock)
            continue
        if sent == 0:  # the file ends before the region: the frame cannot be completed
            raise CloseConnection(f"segment file ended {left} bytes short of a fetch response")
        offset += sent
        left -= sent


_ACCEPT_BACKOFF_S = 0.05  # after accept() failed for lack of descriptors
_TLS_HANDSHAKE_S = 30.0  # a TLS handshake not done by then closes the connection


class _Readable:
    """Waits for a socket to be readable, leaving it registered with the loop between waits.

    epoll is level-triggered: while the task is busy answering a request and bytes of the
    next one are waiting, the callback fires on every loop iteration. It then unregisters
    the socket (the next wait registers it again), on its second call without a waiter: the
    first is expected, in the iteration between waking the task and the task reading.
    `wait` may return with nothing to read yet (that callback, run after the task's next
    wait began): the caller reads, and waits again on EAGAIN."""

    __slots__ = ("_armed", "_fd", "_idle_calls", "_loop", "_waiter")

    def __init__(self, sock: socket.socket) -> None:
        self._loop = asyncio.get_running_loop()
        self._fd = sock.fileno()
        self._armed = False
        self._idle_calls = 0  # callbacks since the last wait with nobody waiting
        self._waiter: asyncio.Future[None] | None = None

    def _ready(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)
            return
        self._idle_calls += 1
        if self._idle_calls >= 2:
            self.close()

    async def wait(self) -> None:
        if not self._armed:
            self._loop.add_reader(self._fd, self._ready)
            self._armed = True
        self._idle_calls = 0
        self._waiter = waiter = self._loop.create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def close(self) -> None:
        """Unregister (before the socket is closed)."""
        if self._armed:
            self._loop.remove_reader(self._fd)
            self._armed = False


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

    __slots__ = ("address", "busy", "last", "task")

    def __init__(self, address: str, task: asyncio.Task[None]) -> None:
        self.address = address
        self.task = task
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
        self._tasks: set[asyncio.Task[None]] = set()  # one per connection: see `_spawn`
        self.node: int | None = None  # the simulated broker it serves (`--brokers N`)

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
                          tg: anyio.abc.TaskGroup | None = None) -> None:
        """Accept connections on `lsock`, each served by its own task (`_spawn`); `tg` is
        not used (connection tasks are the server's, see `close_connections`)."""
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
            self._spawn(sock, ip, f"{ip}:{addr[1]}", listener.name)

    def _spawn(self, sock: socket.socket, ip: str, address: str, listener: str) -> None:
        """Serve the connection in a plain asyncio task, not a task-group task: anyio's adds
        an Event, a second cancel scope, a wrapper coroutine and a done callback, ~2.8 KB per
        connection, a third of what an idle connection costs (issue #12: 10,000 idle
        connections). Everything inside still uses anyio (cancel scopes and waits work in any
        asyncio task); `close_connections` gives shutdown the task group's semantics:
        every connection task cancelled and awaited before the logs close."""
        task = asyncio.get_running_loop().create_task(
            self.serve_connection(sock, ip, address, listener))
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("connection task failed", exc_info=exc)

    async def close_connections(self) -> None:
        """Cancel every connection task and wait until each has closed its socket."""
        with anyio.CancelScope(shield=True):
            while self._tasks:
                tasks = list(self._tasks)
                for task in tasks:
                    task.cancel()
                await asyncio.wait(tasks)

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
                    activity.task.cancel()

    async def serve_connection(self, sock: socket.socket, ip: str, address: str,
                               listener: str) -> None:
        task = asyncio.current_task()
        assert task is not None
        activity = _Activity(address, task)
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
        # os.sendfile only on a plain socket: a TLS stream must encrypt what it sends
        client = ClientInfo(address=address, listener=listener, principal=principal,
                            zero_copy=isinstance(sock, socket.socket), broker=self.node)
        sasl_setup = self.sasl.get(listener)
        session = None if sasl_setup is None else SaslSession(sasl_setup, address)
        if session is not None:
            client.extra["sasl"] = session
        memory = self.memory
        charged = 0  # what this connection holds of `memory`
        buf = self._recv_buf
        waited = True  # this task let the others run since it last dispatched a request
        readable = _Readable(sock)
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
                        await readable.wait()
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
                while True:
                    if session is not None and session.raw_tokens:  # after a v0 handshake
                        if not await _sasl_v0_token(conn, session, sock):
                            break
                        continue
                    if (request := conn.next_request()) is None:
                        break
                    if not waited:
                        # A backlog (pipelined requests, a socket never empty): yield once per
                        # request, or this task would run until the client pauses while every
                        # other connection, and fetches woken by its appends, wait.
                        await anyio.lowlevel.checkpoint()
                    waited = False
                    if session is not None and (why := session.admit(request.api_key)):
                        if session.state == "handshake":  # between handshake and authenticate
                            answer = _illegal_sasl_state(request)
                            if answer is not None:
                                await send_all(sock, answer)
                        raise CloseConnection(why)  # as Kafka's SASL authenticator closes
                    activity.busy = True
                    out = await dispatch(self.broker.context(client, request), request)
                    del request  # the frame is freed here, before the response is sent
                    held = conn.reserved_bytes
                    memory.charge(held - charged)
                    charged = held
                    if out is not None:
                        await send_all(sock, out)
                        del out  # not kept until the next request: ~500 bytes per idle one
                    if client.throttled_until:  # a client quota's throttle: muted (KIP-219)
                        await _sleep_until(client.throttled_until)
                        client.throttled_until = 0.0
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
            readable.close()
            if charged:
                memory.charge(-charged)
            self.broker.connection_closed(client)


async def _sasl_v0_token(conn: Connection, session: SaslSession, sock: socket.socket) -> bool:
    """Serve one bare SASL token frame (after a v0 SaslHandshake); False if none is complete."""
    frame = conn.next_raw_frame()
    if frame is None:
        return False
    out = session.raw_token(bytes(frame))
    if out is None:
        raise CloseConnection("SASL authentication failed")  # v0: closed without an answer
    await send_all(sock, [frame_size_prefix(len(out)) + out])
    return True


def _illegal_sasl_state(request: IncomingRequest) -> list[Part] | None:
    """Kafka's answer to a request other than SaslAuthenticate after a SaslHandshake: the
    api's error response with ILLEGAL_SASL_STATE, if the request parses (then the connection
    closes); None when it does not (closed without an answer, as Kafka)."""
    from odradek.broker import fault_inject
    from odradek.wire.headers import response_header_version
    from odradek.wire.registry import api_classes

    key, version = request.api_key, request.api_version
    try:
        request_cls, _ = api_classes(key)
        body, _end = request_cls.decode(request.frame, version, request.body_pos)
        if not fault_inject.can_error(key):
            return None
        payload = fault_inject.error_response(key, version, body,
                                              ErrorCode.ILLEGAL_SASL_STATE).encode(version)
    except Exception:  # unknown api or version, a body that does not parse: just close
        return None
    frame: list[Part] = []
    frame.extend(response_frame(request.correlation_id, response_header_version(key, version),
                                payload))
    return frame


async def _sleep_until(deadline: float) -> None:
    left = deadline - time.monotonic()
    if left > 0:
        await anyio.sleep(left)


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
    except ConfigError:  # settings only checkable once the broker is built: one line
        raise
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
        admin_sock = _bind_admin(config)
    except BaseException:
        for sock, _ in bound:
            sock.close()
        raise
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
                await _run(broker, bound, admin_sock, security)
            finally:
                broker.close()
                log.info("stopped")
        finally:
            for lock in locks:
                lock.release()
    finally:
        for sock, _ in bound:
            sock.close()
        if admin_sock is not None:
            admin_sock.close()


async def _run(broker: Broker, bound: list[tuple[socket.socket, Listener]],
               admin_sock: socket.socket | None, security: Security | None = None) -> None:
    server = Server(broker, security)
    if security is not None:
        broker.scram = security.scram
    broker.set_bound_ports({lst.name: lst.port for _, lst in bound})
    servers = [server]
    nodes: NodeListeners | None = None
    if broker.sim is not None:  # `--brokers N`: a listener per broker (docs/cluster.md)
        from odradek.broker.replication.listeners import NodeListeners

        def node_server(node: int) -> Server:
            s = server if node == broker.sim.ids[0] else Server(broker, security)  # type: ignore[union-attr]
            if s is not server:
                servers.append(s)
            s.node = node
            return s

        nodes = NodeListeners(broker.sim, bound, _bind_all, node_server)
        nodes.bind_all()
    try:
        await _serve_all(server, broker, bound, admin_sock, nodes)
    finally:
        for each in servers:
            await each.close_connections()


async def _serve_all(server: Server, broker: Broker, bound: list[tuple[socket.socket, Listener]],
                     admin_sock: socket.socket | None, nodes: NodeListeners | None) -> None:
    async with anyio.create_task_group() as tg:
        await tg.start(_watch_signals, tg.cancel_scope)
        await broker.start(tg)
        max_idle_ms = broker.config.get_int("connections.max.idle.ms")
        if max_idle_ms >= 0:  # negative: never, as in Kafka
            tg.start_soon(server.reap_idle, max_idle_ms)
        admin = await _start_admin_http(broker, admin_sock, tg, lambda: server.connections)
        if nodes is not None:
            await nodes.run(tg)
        for sock, lst in bound if nodes is None else ():
            tg.start_soon(server.accept_loop, sock, lst, tg)
            log.info("listening", listener=lst.name, host=lst.host, port=lst.port,
                     cluster_id=broker.cluster.cluster_id, node_id=broker.node_id)
        if admin is not None:
            admin.ready = True
        # After the listeners: the first ApiVersions/Metadata do not wait for their imports.
        tg.start_soon(broker.start_coordinators, name="coordinators-start")


def _bind_admin(config: BrokerConfig) -> socket.socket | None:
    """The admin HTTP endpoint's socket (`admin_http.py`), bound before anything starts, like
    the listeners; None when `admin.http.port` is -1."""
    port = config.get_int("admin.http.port")
    if port < 0:
        return None
    host = config.get_str("admin.http.host")
    try:
        sock = socket.create_server((host, port), backlog=64)
    except OSError as exc:
        raise StartupError(StartupFailure.LISTENER,
                           f"cannot listen on http://{host}:{port} for the admin endpoint: "
                           f"{exc.strerror or exc}; set another `admin.http.port`") from None
    sock.setblocking(False)
    return sock


async def _start_admin_http(broker: Broker, sock: socket.socket | None, tg: anyio.abc.TaskGroup,
                            connections: Callable[[], int]) -> AdminHttp | None:
    if sock is None:
        return None
    from odradek.broker.admin_http import AdminHttp, serve_admin

    metrics = broker.metrics
    scrape = None
    if metrics is not None:
        sources = broker.metric_sources(connections)

        def scrape() -> tuple[int, str, bytes]:
            return 200, "text/plain; version=0.0.4", metrics.render(sources)

    app = AdminHttp(broker.faults, scrape)
    app.cluster = broker.sim
    await tg.start(serve_admin, app, sock)
    return app
