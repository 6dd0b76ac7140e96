"""The admin HTTP endpoint (issue #16), opt-in: `admin.http.port` (-1: off, 0: a free port),
bound to `admin.http.host` (127.0.0.1 unless configured).

- `GET /health`: 200 while the process serves; `GET /ready`: 200 once the listeners accept
  connections, 503 before.
- `GET /metrics`: Prometheus metrics when `admin.http.metrics` is on (`metrics.py`).
- `GET /faults`: the fault rules as JSON; `POST /faults` with one rule (or a list) as JSON
  adds it (201, the rules back; 400 with one line for a bad rule); `DELETE /faults` clears
  them all, `DELETE /faults/<id>` one.
- With `--brokers N` (docs/cluster.md): `GET /cluster` the brokers and partition states;
  `POST /cluster/brokers/<id>/stop` (a controlled shutdown) and `.../start`; the hard
  failures `.../kill`, `.../isolate`, `.../heal` and `.../slow?delay_ms=N`.

HTTP/1.1 with one request per connection (`Connection: close`), bodies by Content-Length
only: the clients are our CLI, the test helpers and curl. It runs on the broker's event loop,
so fault rules change between two requests, never during one.
"""

from __future__ import annotations

import contextlib
import json
import socket
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import structlog

from odradek.broker.fault_rules import FaultRules, FaultSpecError

if TYPE_CHECKING:
    from odradek.broker.replication.simulated import SimulatedCluster

log = structlog.get_logger("odradek.admin_http")

_MAX_BODY = 1 << 20
_READ_TIMEOUT_S = 10.0
_BROKER_ACTIONS = ("stop", "start", "kill", "isolate", "heal", "slow")
_REASONS = {200: "OK", 201: "Created", 400: "Bad Request", 404: "Not Found",
            405: "Method Not Allowed", 413: "Payload Too Large", 500: "Internal Server Error", 503: "Service Unavailable"}

Response = tuple[int, str, bytes]  # status, content type, body


def _json(status: int, value: object) -> Response:
    return status, "application/json", (json.dumps(value) + "\n").encode()


class AdminHttp:
    """The routes; `ready` is set by the server once its listeners are bound."""

    def __init__(self, faults: FaultRules, metrics: Callable[[], Response] | None = None) -> None:
        self.faults = faults
        self.metrics = metrics
        self.ready = False
        # `--brokers N`: GET /cluster, POST /cluster/brokers/<id>/stop|start (docs/cluster.md)
        self.cluster: SimulatedCluster | None = None

    def route(self, method: str, path: str, body: bytes) -> Response:
        path, _, query = path.partition("?")
        path = path.rstrip("/") or "/"
        if path == "/health":
            return 200, "text/plain", b"ok\n"
        if path == "/ready":
            return (200, "text/plain", b"ready\n") if self.ready else (
                503, "text/plain", b"starting\n")
        if path == "/metrics" and self.metrics is not None and method == "GET":
            return self.metrics()
        if path == "/faults":
            if method == "GET":
                return _json(200, self.faults.describe())
            if method == "POST":
                return self._add(body)
            if method == "DELETE":
                return _json(200, {"removed": self.faults.clear()})
            return _json(405, {"error": f"{method} not allowed on /faults"})
        if path.startswith("/faults/") and method == "DELETE":
            tail = path[len("/faults/"):]
            if tail.isdigit() and self.faults.remove(int(tail)):
                return _json(200, {"removed": 1})
            return _json(404, {"error": f"no fault rule {tail}"})
        if path.startswith("/cluster") and self.cluster is not None:
            return self._cluster(method, path, query)
        return _json(404, {"error": f"no such endpoint: {path}"})

    def _cluster(self, method: str, path: str, query: str = "") -> Response:
        sim = self.cluster
        assert sim is not None
        if path == "/cluster" and method == "GET":
            return _json(200, sim.describe())
        parts = path.split("/")  # "", "cluster", "brokers", id, action
        if (len(parts) == 5 and parts[2] == "brokers" and parts[3].isdigit()
                and parts[4] in _BROKER_ACTIONS and method == "POST"):
            node = int(parts[3])
            try:
                if parts[4] == "slow":
                    values = urllib.parse.parse_qs(query).get("delay_ms", [])
                    if len(values) != 1 or not values[0].isdigit():
                        return _json(400, {"error": "slow needs ?delay_ms=N (N >= 0)"})
                    sim.slow(node, int(values[0]))
                else:
                    getattr(sim, parts[4])(node)
            except KeyError:
                return _json(404, {"error": f"no broker {node}"})
            except Exception as e:  # the last live broker, a port taken meanwhile
                return _json(409, {"error": str(e)})
            return _json(200, sim.describe())
        return _json(404, {"error": f"no such endpoint: {path}"})

    def _add(self, body: bytes) -> Response:
        try:
            spec = json.loads(body or b"null")
        except ValueError as e:
            return _json(400, {"error": f"the body is not JSON: {e}"})
        specs = spec if isinstance(spec, list) else [spec]
        added: list[dict[str, Any]] = []
        for one in specs:
            if not isinstance(one, dict):
                return _json(400, {"error": "a rule is a JSON object"})
            try:
                rule = self.faults.add(one)
            except FaultSpecError as e:
                return _json(400, {"error": str(e)})
            log.info("fault rule added", **rule.describe())
            added.append(rule.describe())
        return _json(201, added)

    async def serve_client(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            try:
                with anyio.fail_after(_READ_TIMEOUT_S):
                    response = await self._read_and_route(stream)
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError,
                    ConnectionError):
                return
            except Exception:  # a bug here must not stop the broker
                log.exception("admin http request failed")
                response = _json(500, {"error": "internal error; see the broker's log"})
            status, ctype, payload = response
            head = (f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\n"
                    f"Content-Type: {ctype}\r\nContent-Length: {len(payload)}\r\n"
                    "Connection: close\r\n\r\n").encode()
            with contextlib.suppress(anyio.BrokenResourceError, ConnectionError):
                await stream.send(head + payload)

    async def _read_and_route(self, stream: anyio.abc.SocketStream) -> Response:
        data = b""
        while b"\r\n\r\n" not in data:
            data += await stream.receive()
            if len(data) > _MAX_BODY:
                return _json(413, {"error": "request too large"})
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split()
        if len(parts) < 2:
            return _json(400, {"error": "malformed request line"})
        method, path = parts[0].upper(), parts[1]
        length = 0
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    return _json(400, {"error": "bad Content-Length"})
        if length > _MAX_BODY:
            return _json(413, {"error": "request too large"})
        while len(body) < length:
            body += await stream.receive()
        return self.route(method, path, body[:length])


async def serve_admin(app: AdminHttp, sock: socket.socket, *,
                      task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    """Serve on the bound socket `sock` until cancelled."""
    listener = await anyio.abc.SocketListener.from_socket(sock)
    host, port = sock.getsockname()[:2]
    async with listener:
        log.info("admin http endpoint", url=f"http://{host}:{port}")
        task_status.started()
        await listener.serve(app.serve_client)
