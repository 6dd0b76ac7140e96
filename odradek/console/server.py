"""The console's HTTP server: the stdlib's ThreadingHTTPServer, the static page from package
data, and the JSON routes of `odradek.console.api`.

Every failure is a JSON answer ({"error": "..."}, 4xx for bad requests, 5xx for a broker
that failed or went away): the handler never lets an exception reach http.server, whose
default is a traceback on stderr and an HTML error page.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import structlog

from odradek.console.api import JSON, ApiError, Console

__all__ = ["ConsoleServer", "make_server"]

log = structlog.get_logger("odradek.console")

_STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
_MAX_BODY = 1 << 20

Handler = Callable[[Console, list[str], dict[str, str], bytes], JSON]

# (method, path pattern, handler); the names matched are percent-decoded for the handler.
ROUTES: list[tuple[str, re.Pattern[str], Handler]] = [
    ("GET", re.compile(r"/api/cluster"), lambda c, a, q, b: c.cluster()),
    ("GET", re.compile(r"/api/topics"), lambda c, a, q, b: c.topics(q)),
    ("GET", re.compile(r"/api/topics/([^/]+)"), lambda c, a, q, b: c.topic(a[0], q)),
    ("GET", re.compile(r"/api/topics/([^/]+)/configs"),
     lambda c, a, q, b: c.topic_configs(a[0])),
    ("GET", re.compile(r"/api/topics/([^/]+)/messages"),
     lambda c, a, q, b: c.messages(a[0], q)),
    ("GET", re.compile(r"/api/topics/([^/]+)/producers"),
     lambda c, a, q, b: c.producers(a[0], q)),
    ("POST", re.compile(r"/api/topics/([^/]+)/produce"), lambda c, a, q, b: c.produce(a[0], b)),
    ("GET", re.compile(r"/api/groups"), lambda c, a, q, b: c.groups()),
    ("GET", re.compile(r"/api/groups/([^/]+)"), lambda c, a, q, b: c.group(a[0])),
    ("GET", re.compile(r"/api/transactions"), lambda c, a, q, b: c.transactions()),
    ("GET", re.compile(r"/api/brokers/([^/]+)/configs"),
     lambda c, a, q, b: c.broker_configs(a[0])),
]


class ConsoleServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], console: Console) -> None:
        self.console = console
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: ConsoleServer
    server_version = "odradek-console"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # http.server writes every request to stderr; errors are logged below instead

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        url = urlsplit(self.path)
        path = url.path
        try:
            if method == "GET" and not path.startswith("/api/"):
                self._static(path)
                return
            query = dict(parse_qsl(url.query))
            body = b""
            if method == "POST":
                length = int(self.headers.get("Content-Length") or 0)
                if length > _MAX_BODY:
                    raise ApiError(413, f"the body is larger than {_MAX_BODY} bytes")
                body = self.rfile.read(length)
            for verb, pattern, handler in ROUTES:
                m = pattern.fullmatch(path)
                if m is not None and verb == method:
                    names = [unquote(g) for g in m.groups()]
                    self._json(200, handler(self.server.console, names, query, body))
                    return
            allowed = any(p.fullmatch(path) for _, p, _ in ROUTES)
            raise ApiError(405 if allowed else 404,
                           f"{method} {path}: " + ("not allowed" if allowed else "no such endpoint"))
        except ApiError as exc:
            self._json(exc.status, {"error": str(exc)})
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went away
        except Exception as exc:  # a bug: say so in JSON and in the log, not as a traceback page
            log.error("console request failed", path=path, error=repr(exc))
            self._json(500, {"error": f"internal error: {exc!r}"})

    def _json(self, status: int, doc: JSON) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def _static(self, path: str) -> None:
        name = "index.html" if path in ("/", "/index.html") else path.removeprefix("/static/")
        suffix = name[name.rfind("."):] if "." in name else ""
        if (path != "/" and not path.startswith("/static/")) or "/" in name \
                or suffix not in _STATIC_TYPES:
            raise ApiError(404, f"no page {path}")
        try:
            data = resources.files("odradek.console").joinpath("static", name).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            raise ApiError(404, f"no page {path}") from None
        self.send_response(200)
        self.send_header("Content-Type", _STATIC_TYPES[suffix])
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def make_server(console: Console, bind: str, port: int) -> ConsoleServer:
    if ":" in bind:  # an IPv6 address such as ::1
        server_cls = type("ConsoleServer6", (ConsoleServer,), {"address_family": socket.AF_INET6})
        server: ConsoleServer = server_cls((bind, port), console)
        return server
    return ConsoleServer((bind, port), console)
