"""`odradek console`: a web console for any Kafka-compatible cluster, run as its own process
(as Redpanda Console and kafka-ui are), so it costs the broker nothing (docs/console.md).

A stdlib HTTP server (`odradek.console.server`) serves a plain HTML/CSS/JS page from package
data (no build step, nothing fetched at run time) and JSON endpoints (`odradek.console.api`)
on the project's own client (`odradek.client`). The page polls them every two seconds.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["run"]

EXIT_FAILED = 1
EXIT_UNREACHABLE = 3


def run(args: argparse.Namespace) -> int:
    """Serve until ^C; bad input is one line on stderr and a non-zero exit."""
    from odradek.client import BrokerUnreachable, ClientError
    from odradek.console.api import Console
    from odradek.console.server import make_server

    try:
        console = Console(args.bootstrap_server, timeout=args.timeout)
        console.cluster()  # fails here, not on the first page load, when the broker is wrong
    except BrokerUnreachable as exc:
        print(f"odradek console: cannot reach the broker: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except ClientError as exc:
        print(f"odradek console: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # ApiError from the first call: the broker answered badly
        print(f"odradek console: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        server = make_server(console, args.bind, args.port)
    except OSError as exc:
        console.close()
        print(f"odradek console: cannot listen on {args.bind}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return EXIT_FAILED
    port = server.server_address[1]
    print(f"odradek console: http://{args.bind}:{port}/ (broker {args.bootstrap_server})",
          flush=True)
    console.start_sampler()
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        console.close()
    return 0
