"""The `odradek` command: `odradek serve` runs the broker; the admin subcommands (topic,
produce, consume, group, txn, cluster: `odradek.commands`, docs/cli.md) talk to any
Kafka-compatible broker; `odradek --version`."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from odradek import __version__
from odradek.config import ConfigError, load_config
from odradek.log import LEVELS, configure_logging

__all__ = ["build_parser", "main"]

EXIT_OK = 0
EXIT_CONFIG = 2  # also argparse's code for bad usage
EXIT_INTERRUPTED = 130


def build_parser(*, admin: bool = True) -> argparse.ArgumentParser:
    """The whole command line; `admin=False` leaves out the admin subcommands (`main` does
    so for `odradek serve`, whose start-up they would cost a few ms of argparse set-up)."""
    parser = argparse.ArgumentParser(
        prog="odradek", description="A Kafka-wire-compatible broker, and tools for any Kafka.")
    parser.add_argument("--version", action="version", version=f"odradek {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = commands.add_parser(
        "serve",
        help="run the broker",
        description=(
            "Run the broker. Settings use Kafka's names; precedence: defaults < --config "
            "file < ODRADEK_* environment variables (e.g. ODRADEK_LOG_DIRS) < --override."
        ),
    )
    serve.add_argument(
        "--config", type=Path, metavar="FILE", help="a Kafka-style server.properties file"
    )
    serve.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set one property (repeatable), e.g. --override log.dirs=/var/lib/odradek",
    )
    serve.add_argument("--log-json", action="store_true", help="log JSON objects, one per line")
    serve.add_argument("--log-level", default="info", choices=LEVELS, help="default: info")
    serve.add_argument("--emulate-kafka", default=None, metavar="RELEASE",
                       help="advertise and serve the api versions and features of that Apache "
                            "Kafka release: 2.8, 3.0-3.9 or 4.0-4.4 (setting emulate.kafka.version)")
    serve.add_argument("--brokers", type=int, default=None, metavar="N",
                       help="simulate a cluster of N brokers in this process, each with its own "
                            "listener and replica logs (setting simulated.brokers; docs/cluster.md)")
    serve.set_defaults(func=_serve)

    if admin:
        from odradek.commands import add_admin_parsers  # argparse only: the code loads on use

        add_admin_parsers(commands)
    return parser


def _config_error(exc: ConfigError) -> int:
    print(f"odradek: configuration error: {exc}", file=sys.stderr)
    return EXIT_CONFIG


def _serve(args: argparse.Namespace) -> int:
    try:
        overrides = list(args.override)
        if args.emulate_kafka is not None:
            overrides.append(f"emulate.kafka.version={args.emulate_kafka}")
        if args.brokers is not None:
            overrides.append(f"simulated.brokers={args.brokers}")
        config = load_config(args.config, overrides, os.environ)
    except ConfigError as exc:
        return _config_error(exc)
    configure_logging(json=args.log_json, level=args.log_level)

    import anyio
    import structlog

    log = structlog.get_logger("odradek.cli")
    from odradek.broker.acls import AUTHORIZER_SETTINGS

    for key in sorted(config.unknown):
        # the authorizer's own settings (broker/acls.py) and those the security code reads
        if key not in AUTHORIZER_SETTINGS and not _read_by_security(key):
            log.warning("unknown config ignored", key=key)
    from odradek.wire.records import record_walker  # "python": the C extension was not built

    if args.config is not None:
        log.info("starting", version=__version__, config_file=str(args.config),
                 record_walker=record_walker())
    else:
        log.info("starting", version=__version__, record_walker=record_walker())

    from odradek.broker.server import StartupError, serve  # lazily: --version stays fast

    backend_options: dict[str, Any] = {}
    if importlib.util.find_spec("uvloop") is not None:
        backend_options["use_uvloop"] = True
    try:
        anyio.run(serve, config, backend="asyncio", backend_options=backend_options)
    except ConfigError as exc:  # settings only checkable at run time
        return _config_error(exc)
    except StartupError as exc:  # one line, and an exit code per kind of failure
        print(f"odradek: cannot start: {exc}", file=sys.stderr)
        return int(exc.failure)
    except KeyboardInterrupt:  # the server handles SIGINT itself; this is a second ^C
        return EXIT_INTERRUPTED
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(admin=argv[:1] != ["serve"])
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_CONFIG
    result: int = args.func(args)
    return result


def _read_by_security(key: str) -> bool:
    """Listener-prefixed settings the SASL listeners read (odradek/broker/security)."""
    return key.startswith("listener.name.") and (".ssl." in key or key.endswith(
        (".sasl.enabled.mechanisms", ".sasl.jaas.config", ".connections.max.reauth.ms")))


if __name__ == "__main__":
    sys.exit(main())
