"""The admin subcommands of `odradek`: topic, produce, consume, group, txn, cluster
(docs/cli.md), `fault` for Odradek brokers (docs/cli.md), and console, the web console
(docs/console.md).

This module only declares their arguments (argparse, nothing else imported), so `odradek
serve` pays nothing for them; a subcommand's code (`odradek.commands.handlers`, the client
on the project's own wire layer) is imported when that subcommand runs.

Exit codes, for every admin subcommand:
    0  done
    1  the broker refused or the operation failed (one line on stderr says why)
    2  bad arguments (argparse's usage line, or one line naming the argument)
    3  the broker cannot be reached (connect, timeout, closed connection)
  130  interrupted (^C), except `consume`, for which ^C is the normal way to stop: 0
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_UNREACHABLE", "EXIT_USAGE", "add_admin_parsers"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def _lazy(name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        handlers = importlib.import_module("odradek.commands.handlers")
        result: int = handlers.run(getattr(handlers, name), args)
        return result

    return run


def _completion(args: argparse.Namespace) -> int:
    cli = importlib.import_module("odradek.cli")
    completion = importlib.import_module("odradek.commands.completion")
    print(completion.bash_script(cli.build_parser()), end="")
    return EXIT_OK


def _console(args: argparse.Namespace) -> int:
    console = importlib.import_module("odradek.console")
    result: int = console.run(args)
    return result


def _port(value: str) -> int:
    n = _nonnegative(value)
    if n > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port (0-65535)")
    return n


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--bootstrap-server", "-b", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT",
                        help=f"any Kafka-compatible broker (default {DEFAULT_BOOTSTRAP}); "
                             "several as a comma-separated list")
    common.add_argument("--json", action="store_true", help="print JSON for scripts")
    common.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                        help="for connecting and each request (default 10)")
    return common


def _config(value: str) -> tuple[str, str]:
    key, sep, val = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{value!r} is not KEY=VALUE")
    return key, val


def _nonnegative(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{value!r} is negative")
    return n


def _positive(value: str) -> int:
    n = _nonnegative(value)
    if n == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def add_admin_parsers(commands: Any) -> None:
    """Add topic, produce, consume, group, txn and cluster to `odradek`'s subparsers."""
    common = _common()

    topic = commands.add_parser("topic", help="list, create, describe, delete topics",
                                description="Topics of a Kafka-compatible cluster.")
    tsub = topic.add_subparsers(dest="topic_command", metavar="ACTION", required=True)
    p = tsub.add_parser("list", parents=[common], help="list topics")
    p.add_argument("--internal", "-i", action="store_true",
                   help="include internal topics (__consumer_offsets, ...)")
    p.set_defaults(func=_lazy("topic_list"))
    p = tsub.add_parser("create", parents=[common], help="create a topic")
    p.add_argument("name")
    p.add_argument("--partitions", "-p", type=_positive, default=None,
                   help="default: the broker's num.partitions")
    p.add_argument("--replication-factor", "-r", type=_positive, default=None,
                   help="default: the broker's default.replication.factor")
    p.add_argument("--config", "-c", type=_config, action="append", default=[],
                   metavar="KEY=VALUE", help="a topic config (repeatable)")
    p.add_argument("--if-not-exists", action="store_true",
                   help="succeed when the topic already exists")
    p.set_defaults(func=_lazy("topic_create"))
    p = tsub.add_parser("describe", parents=[common],
                        help="partitions, leaders, offsets and configs of a topic")
    p.add_argument("name")
    p.add_argument("--all-configs", action="store_true",
                   help="list every config, not only those set on the topic or broker")
    p.set_defaults(func=_lazy("topic_describe"))
    p = tsub.add_parser("alter-config", parents=[common],
                        help="set or remove (back to the default) topic configs")
    p.add_argument("name")
    p.add_argument("--set", "-s", type=_config, action="append", default=[],
                   metavar="KEY=VALUE", help="set a config (repeatable)")
    p.add_argument("--delete", "-d", action="append", default=[], metavar="KEY",
                   help="remove a config override (repeatable)")
    p.add_argument("--validate-only", action="store_true",
                   help="ask the broker to check the change without making it")
    p.set_defaults(func=_lazy("topic_alter_config"))
    p = tsub.add_parser("delete", parents=[common], help="delete topics")
    p.add_argument("names", nargs="+", metavar="name")
    p.add_argument("--if-exists", action="store_true", help="succeed for a missing topic")
    p.set_defaults(func=_lazy("topic_delete"))

    p = commands.add_parser(
        "produce", parents=[common], help="send stdin's lines as records",
        description="Send each line of stdin as one record (the line without its newline).")
    p.add_argument("topic")
    p.add_argument("--key", "-k", default=None, help="the key of every record")
    p.add_argument("--key-separator", default=None, metavar="SEP",
                   help="split each line at the first SEP into key and value")
    p.add_argument("--header", "-H", type=_config, action="append", default=[],
                   metavar="KEY=VALUE", help="a header on every record (repeatable)")
    p.add_argument("--partition", "-p", type=_nonnegative, default=None,
                   help="default: by the key's murmur2 hash (as Java clients), else round-robin")
    p.add_argument("--acks", choices=["all", "1"], default="all")
    p.add_argument("--compression", "-z", choices=["none", "gzip", "snappy", "lz4", "zstd"],
                   default="none", help="compress each batch (Kafka's default levels)")
    p.add_argument("--no-create", action="store_true",
                   help="fail rather than let the broker auto-create the topic")
    p.set_defaults(func=_lazy("produce"))

    p = commands.add_parser(
        "consume", parents=[common], help="print records",
        description="Print a topic's records, from the end by default, until ^C, "
                    "--max-messages or --exit-at-end.")
    p.add_argument("topic")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true",
                       help="start at each partition's first offset")
    start.add_argument("--offset", "-o", type=_nonnegative, default=None,
                       help="start at this offset (in each partition read)")
    start.add_argument("--timestamp", type=_nonnegative, default=None, metavar="MS",
                       help="start at the first record at or after this time (ms since epoch)")
    p.add_argument("--partition", "-p", type=_nonnegative, action="append", default=None,
                   help="read only this partition (repeatable; default: all)")
    p.add_argument("--group", "-g", default=None,
                   help="start from this group's committed offsets and commit what was read "
                        "(a standalone consumer: it does not join the group)")
    p.add_argument("--isolation", choices=["read_uncommitted", "read_committed"],
                   default="read_uncommitted")
    p.add_argument("--max-messages", "-n", type=_positive, default=None,
                   help="stop after this many records")
    p.add_argument("--exit-at-end", "-e", action="store_true",
                   help="stop once every partition is read to its end")
    p.add_argument("--wait", type=float, default=None, metavar="SECONDS",
                   help="give up after this long; with --max-messages, fewer is exit code 1")
    p.add_argument("--format", choices=["text", "json"], default="text",
                   help="text: the value, one per line; json: one object per line")
    p.add_argument("--print-key", action="store_true", help="text format: key<TAB>value")
    p.set_defaults(func=_lazy("consume"))

    group = commands.add_parser("group", help="list and describe consumer groups",
                                description="Consumer groups (classic and KIP-848).")
    gsub = group.add_subparsers(dest="group_command", metavar="ACTION", required=True)
    p = gsub.add_parser("list", parents=[common], help="list groups")
    p.set_defaults(func=_lazy("group_list"))
    p = gsub.add_parser("describe", parents=[common],
                        help="members, assignments, committed offsets and lag")
    p.add_argument("group_id")
    p.set_defaults(func=_lazy("group_describe"))
    p = gsub.add_parser("delete", parents=[common], help="delete groups (they must be empty)")
    p.add_argument("group_ids", nargs="+", metavar="group_id")
    p.set_defaults(func=_lazy("group_delete"))
    p = gsub.add_parser(
        "reset-offsets", parents=[common],
        help="move a group's committed offsets (prints the plan; --execute commits it)",
        description="Move an inactive group's committed offsets on a topic. Without "
                    "--execute only the plan is printed.")
    p.add_argument("group_id")
    p.add_argument("--topic", "-t", required=True)
    p.add_argument("--partition", "-p", type=_nonnegative, action="append", default=None,
                   help="only this partition (repeatable; default: all)")
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=_nonnegative, default=None, metavar="N")
    to.add_argument("--shift-by", type=int, default=None, metavar="N",
                    help="move by N (negative: back) from the committed offset")
    to.add_argument("--to-timestamp", type=_nonnegative, default=None, metavar="MS",
                    help="the first offset at or after this time (ms since epoch)")
    p.add_argument("--execute", action="store_true", help="commit the new offsets")
    p.set_defaults(func=_lazy("group_reset_offsets"))

    txn = commands.add_parser("txn", help="list and describe transactions",
                              description="Transactional producers known to the coordinators.")
    xsub = txn.add_subparsers(dest="txn_command", metavar="ACTION", required=True)
    p = xsub.add_parser("list", parents=[common], help="transactional ids and their state")
    p.set_defaults(func=_lazy("txn_list"))
    p = xsub.add_parser("describe", parents=[common],
                        help="a transaction's state, producer, timeout and partitions")
    p.add_argument("transactional_id")
    p.set_defaults(func=_lazy("txn_describe"))

    p = commands.add_parser(
        "completion", help="print a shell completion script",
        description="Print a completion script: `source <(odradek completion bash)`; for "
                    "zsh, after `autoload -U +X bashcompinit && bashcompinit`.")
    p.add_argument("shell", choices=["bash"])
    p.set_defaults(func=_completion)

    _add_fault_parsers(commands)

    cluster = commands.add_parser("cluster", help="the cluster's id, brokers and features")
    csub = cluster.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)
    p = csub.add_parser("info", parents=[common],
                        help="cluster id, controller, brokers, features, api versions")
    p.set_defaults(func=_lazy("cluster_info"))
    _add_cluster_broker_parsers(csub)

    p = commands.add_parser(
        "console", help="run the web console for a cluster (docs/console.md)",
        description="Serve a web console (topics, messages, groups and lag, transactions, "
                    "configs) for any Kafka-compatible cluster, as its own process.")
    p.add_argument("--bootstrap-server", "-b", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT",
                   help=f"any Kafka-compatible broker (default {DEFAULT_BOOTSTRAP})")
    p.add_argument("--port", type=_port, default=9021, help="HTTP port (default 9021; 0: any)")
    p.add_argument("--bind", default="127.0.0.1", metavar="ADDRESS",
                   help="address to listen on (default 127.0.0.1, loopback only)")
    p.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                   help="for connecting and each request to the broker (default 10)")
    p.set_defaults(func=_console)


def _fault(args: argparse.Namespace) -> int:
    module = importlib.import_module("odradek.commands.faults")
    result: int = module.run(args)
    return result


def _cluster_broker(args: argparse.Namespace) -> int:
    module = importlib.import_module("odradek.commands.faults")
    result: int = module.run_cluster(args)
    return result


def _add_cluster_broker_parsers(csub: Any) -> None:
    """`cluster kill|start|stop|isolate|heal|slow N`: a simulated cluster's brokers
    (`odradek serve --brokers N`, docs/cluster.md), over its admin HTTP port."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("node", type=_nonnegative, help="the broker's node id")
    common.add_argument("--admin-url", "-a", required=True, metavar="URL",
                        help="the broker's admin endpoint, http://127.0.0.1:PORT "
                             "(its admin.http.port setting)")
    common.add_argument("--json", action="store_true", help="print JSON for scripts")
    common.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS")
    for action, text in (
            ("kill", "kill a broker: no controlled shutdown, fenced after the session timeout"),
            ("start", "start a stopped or killed broker"),
            ("stop", "stop a broker (a controlled shutdown)"),
            ("isolate", "cut a broker off from the others and the controller"),
            ("heal", "end a broker's isolation and slowness")):
        p = csub.add_parser(action, parents=[common], help=text + " (Odradek --brokers N)")
        p.set_defaults(func=_cluster_broker)
    p = csub.add_parser("slow", parents=[common],
                        help="delay replication to and from a broker (Odradek --brokers N)")
    p.add_argument("--delay-ms", type=_nonnegative, required=True, metavar="MS",
                   help="per fetch round trip; 0 ends the delay")
    p.set_defaults(func=_cluster_broker)


def _probability(value: str) -> float:
    try:
        p = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not 0.0 < p <= 1.0:
        raise argparse.ArgumentTypeError(f"{value!r} is not in (0, 1]")
    return p


def _add_fault_parsers(commands: Any) -> None:
    """`fault add|list|clear`: an Odradek broker's fault rules, over its admin HTTP port."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--admin-url", "-a", required=True, metavar="URL",
                        help="the broker's admin endpoint, http://127.0.0.1:PORT "
                             "(its admin.http.port setting)")
    common.add_argument("--json", action="store_true", help="print JSON for scripts")
    common.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS")
    fault = commands.add_parser(
        "fault", help="inject errors, delays, drops, closes (Odradek brokers only)",
        description="Fault injection on a running Odradek broker (docs/cli.md).")
    fsub = fault.add_subparsers(dest="fault_command", metavar="ACTION", required=True)
    p = fsub.add_parser("add", parents=[common], help="add a fault rule")
    p.add_argument("api", help="Kafka's api name (Produce, Fetch, FindCoordinator, ...) or key")
    p.add_argument("--action", choices=["error", "delay", "drop", "close"], default=None,
                   help="default: error when --error is given")
    p.add_argument("--error", "-e", default=None, metavar="NAME",
                   help="Kafka's error name or code, e.g. NOT_LEADER_OR_FOLLOWER")
    p.add_argument("--delay-ms", type=_nonnegative, default=None, metavar="MS")
    p.add_argument("--count", "-n", type=_positive, default=None,
                   help="fault the next N matching requests (default: all)")
    p.add_argument("--probability", type=_probability, default=None, metavar="P",
                   help="fault this fraction of matching requests (0-1]")
    p.add_argument("--seed", type=int, default=None, help="for --probability's draws")
    p.add_argument("--topic", "-t", default=None)
    p.add_argument("--partition", "-p", type=_nonnegative, default=None)
    p.add_argument("--client-id", default=None)
    p.set_defaults(func=_fault)
    p = fsub.add_parser("list", parents=[common], help="the rules and what they injected")
    p.set_defaults(func=_fault)
    p = fsub.add_parser("clear", parents=[common], help="remove every rule (or one: --id)")
    p.add_argument("--id", dest="rule_id", type=_positive, default=None)
    p.set_defaults(func=_fault)
