"""`odradek fault add|list|clear`: the fault rules of a running Odradek broker, through its
admin HTTP endpoint (`admin.http.port`; docs/cli.md); `odradek cluster
kill|start|stop|isolate|heal|slow N`: a simulated cluster's brokers, the same way. A bad rule (unknown api, unknown
error, ...) is one line and exit code 2; an endpoint that cannot be reached, exit code 3."""

from __future__ import annotations

import argparse
import json
import sys

from odradek.client.faults import FaultAdmin, FaultAdminError
from odradek.commands import EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE

_COLUMNS = ("id", "api", "action", "error", "delay_ms", "topic", "partition", "client_id",
            "count", "probability", "injected")


def run(args: argparse.Namespace) -> int:
    faults = FaultAdmin(args.admin_url, timeout=args.timeout)
    try:
        if args.fault_command == "add":
            spec = {"error": args.error, "delay_ms": args.delay_ms, "count": args.count,
                    "probability": args.probability, "seed": args.seed, "topic": args.topic,
                    "partition": args.partition, "client_id": args.client_id}
            rule = faults.add(args.api, args.action, **spec)
            print(json.dumps(rule) if args.json else f"added fault rule {rule['id']}")
        elif args.fault_command == "list":
            rules = faults.list()
            if args.json:
                print(json.dumps(rules, indent=2))
            else:
                from odradek.commands.handlers import table

                print(table(_COLUMNS, [[r.get(c) for c in _COLUMNS] for r in rules]))
        elif args.rule_id is not None:
            faults.remove(args.rule_id)
            print(f"removed fault rule {args.rule_id}")
        else:
            print(f"removed {faults.clear()} fault rule(s)")
    except FaultAdminError as exc:
        print(f"odradek fault: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE if str(exc).startswith("cannot reach") else EXIT_USAGE
    return EXIT_OK


def run_cluster(args: argparse.Namespace) -> int:
    from odradek.client.cluster import ClusterAdmin

    control = ClusterAdmin(args.admin_url, timeout=args.timeout)
    action = args.cluster_command
    try:
        if action == "slow":
            state = control.slow(args.node, args.delay_ms)
        else:
            state = getattr(control, action)(args.node)
    except FaultAdminError as exc:
        print(f"odradek cluster: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE if str(exc).startswith("cannot reach") else EXIT_USAGE
    if args.json:
        print(json.dumps(state, indent=2))
    else:
        for b in state.get("brokers", []):
            flags = [k for k in ("killed", "isolated") if b.get(k)]
            if b.get("delay_ms"):
                flags.append(f"slow {b['delay_ms']} ms")
            live = "live" if b.get("live") else "fenced"
            print(f"broker {b['node_id']}: {live}{''.join(', ' + f for f in flags)}")
    return EXIT_OK
