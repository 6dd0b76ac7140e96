"""What the admin subcommands do (their arguments: `odradek.commands`). Each handler takes
the parsed arguments and returns an exit code; `run` turns failures into one line on stderr
and the documented exit code, never a traceback."""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from odradek.client import Admin, BrokerUnreachable, ClientError, KafkaError
from odradek.commands import EXIT_FAILED, EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE
from odradek.wire import ApiKey, ErrorCode

Handler = Callable[[argparse.Namespace, Admin], int]


class UsageError(Exception):
    """A bad combination of arguments, found after parsing: exit code 2."""


def run(handler: Handler, args: argparse.Namespace) -> int:
    try:
        with Admin(args.bootstrap_server, timeout=args.timeout) as admin:
            return handler(args, admin)
    except UsageError as exc:
        print(f"odradek {args.command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokerUnreachable as exc:
        print(f"odradek {args.command}: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except ClientError as exc:
        if str(exc).startswith("--bootstrap-server"):
            print(f"odradek {args.command}: {exc}", file=sys.stderr)
            return EXIT_USAGE
        print(f"odradek {args.command}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except BrokenPipeError:  # `odradek consume ... | head`: the reader is gone, not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130


# -- output --------------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    cells = [[("-" if c is None else str(c)) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
              for row in cells]
    return "\n".join(lines)


def emit_json(doc: object) -> None:
    print(json.dumps(doc, indent=2, sort_keys=False))


def _bytes_json(data: bytes | None) -> object:
    """UTF-8 text as a string; other bytes as {"base64": ...}; null as null."""
    if data is None:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode()}


# -- topics --------------------------------------------------------------------------------------


def topic_list(args: argparse.Namespace, admin: Admin) -> int:
    topics = [t for t in admin.topics() if args.internal or not t.internal]
    if args.json:
        emit_json([{"name": t.name, "id": str(t.topic_id), "partitions": len(t.partitions),
                    "replication_factor": _rf(t), "internal": t.internal} for t in topics])
    else:
        print(table(["NAME", "PARTITIONS", "REPLICAS", "ID"],
                    [(t.name, len(t.partitions), _rf(t), t.topic_id) for t in topics]))
    return EXIT_OK


def _rf(t: Any) -> int:
    return max((len(p.replicas) for p in t.partitions), default=0)


def topic_create(args: argparse.Namespace, admin: Admin) -> int:
    configs = dict(args.config)
    try:
        admin.create_topic(args.name, args.partitions if args.partitions is not None else -1,
                           replication_factor=args.replication_factor, configs=configs,
                           wait=False)
    except KafkaError as exc:
        if exc.code == ErrorCode.TOPIC_ALREADY_EXISTS and args.if_not_exists:
            return _created(args, admin, existed=True)
        raise
    admin.wait_for_topic(args.name)
    return _created(args, admin, existed=False)


def _created(args: argparse.Namespace, admin: Admin, *, existed: bool) -> int:
    (info,) = [t for t in admin.topics([args.name]) if t.name == args.name]
    if args.json:
        emit_json({"name": info.name, "id": str(info.topic_id),
                   "partitions": len(info.partitions), "created": not existed})
    else:
        what = "exists" if existed else "created"
        print(f"topic {info.name} {what}: {len(info.partitions)} partitions, id {info.topic_id}")
    return EXIT_OK


def topic_describe(args: argparse.Namespace, admin: Admin) -> int:
    from odradek.client.data import EARLIEST, LATEST, list_offsets

    found = [t for t in admin.topics([args.name]) if t.name == args.name]
    if not found or found[0].error != ErrorCode.NONE:
        code = found[0].error if found else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        raise KafkaError(code, f"topic {args.name}")
    info = found[0]
    parts = [p.partition for p in info.partitions]
    start = list_offsets(admin, info.name, parts, EARLIEST)
    end = list_offsets(admin, info.name, parts, LATEST)
    configs = admin.describe_configs(2, info.name)
    shown = [c for c in configs if args.all_configs or c.source != "default"]
    if args.json:
        emit_json({
            "name": info.name, "id": str(info.topic_id), "internal": info.internal,
            "partitions": [{"partition": p.partition, "leader": p.leader,
                            "leader_epoch": p.leader_epoch, "replicas": list(p.replicas),
                            "isr": list(p.isr), "start_offset": start[p.partition],
                            "end_offset": end[p.partition]} for p in info.partitions],
            "configs": {c.name: {"value": None if c.sensitive else c.value,
                                 "source": c.source} for c in shown}})
        return EXIT_OK
    print(f"topic {info.name}  id {info.topic_id}  partitions {len(parts)}"
          f"{'  internal' if info.internal else ''}")
    print()
    print(table(["PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "START", "END", "RECORDS"],
                [(p.partition, p.leader, p.leader_epoch, ",".join(map(str, p.replicas)),
                  ",".join(map(str, p.isr)), start[p.partition], end[p.partition],
                  end[p.partition] - start[p.partition]) for p in info.partitions]))
    if shown:
        print()
        print(table(["CONFIG", "VALUE", "SOURCE"],
                    [(c.name, "(sensitive)" if c.sensitive else c.value, c.source)
                     for c in shown]))
    return EXIT_OK


def topic_alter_config(args: argparse.Namespace, admin: Admin) -> int:
    from odradek.client.admin import alter_configs

    if not args.set and not args.delete:
        raise UsageError("nothing to change: give --set KEY=VALUE or --delete KEY")
    both = set(dict(args.set)) & set(args.delete)
    if both:
        raise UsageError(f"{sorted(both)[0]}: both --set and --delete")
    alter_configs(admin, 2, args.name, set_=dict(args.set), delete=args.delete,
                  validate_only=args.validate_only)
    verb = "would change" if args.validate_only else "changed"
    if args.json:
        emit_json({"name": args.name, "set": dict(args.set), "deleted": args.delete,
                   "validate_only": args.validate_only})
    else:
        changes = [f"{k}={v}" for k, v in args.set] + [f"-{k}" for k in args.delete]
        print(f"topic {args.name}: {verb} {' '.join(changes)}")
    return EXIT_OK


def topic_delete(args: argparse.Namespace, admin: Admin) -> int:
    names = list(dict.fromkeys(args.names))
    results = admin.delete_topics_each(names)
    deleted = [n for n, e in results.items() if e is None]
    missing = [n for n, e in results.items()
               if e is not None and e.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    failed = {n: e for n, e in results.items()
              if e is not None and not (args.if_exists and n in missing)}
    if args.json:
        emit_json({"deleted": deleted, "missing": missing,
                   "failed": {n: str(e) for n, e in failed.items()}})
    else:
        for name in deleted:
            print(f"topic {name} deleted")
        for name in missing:
            if args.if_exists:
                print(f"topic {name} does not exist")
    for error in failed.values():
        print(f"odradek topic: {error}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


# -- produce and consume -------------------------------------------------------------------------


def produce(args: argparse.Namespace, admin: Admin) -> int:
    from odradek.client.data import OutRecord
    from odradek.client.data import produce as send

    headers = tuple((k, v.encode()) for k, v in args.header)
    fixed_key = None if args.key is None else args.key.encode()
    sep = None if args.key_separator is None else args.key_separator.encode()
    if sep == b"":
        raise UsageError("--key-separator: must not be empty")
    if sep is not None and fixed_key is not None:
        raise UsageError("--key and --key-separator exclude each other")
    acks = -1 if args.acks == "all" else 1
    from odradek.wire.compression import CompressionType

    codec = int(CompressionType[args.compression.upper()])
    stdin = sys.stdin.buffer
    interactive = stdin.isatty()
    total = 0
    pending: list[OutRecord] = []
    pending_bytes = 0

    def flush() -> None:
        nonlocal total, pending_bytes
        if not pending:
            return
        placed = send(admin, args.topic, pending, acks=acks, auto_create=not args.no_create,
                      compression=codec, timeout=max(args.timeout, 30.0))
        if args.json:
            for part, offset in placed:
                print(json.dumps({"topic": args.topic, "partition": part, "offset": offset}))
            sys.stdout.flush()
        total += len(pending)
        pending.clear()
        pending_bytes = 0

    for raw in stdin:
        line = raw[:-1] if raw.endswith(b"\n") else raw
        if line.endswith(b"\r"):
            line = line[:-1]
        key = fixed_key
        if sep is not None:
            k, found, v = line.partition(sep)
            key, line = (k, v) if found else (None, line)
        pending.append(OutRecord(value=line, key=key, headers=headers, partition=args.partition))
        pending_bytes += len(line)
        if interactive or len(pending) >= 1000 or pending_bytes >= 512 * 1024:
            flush()
    flush()
    if not args.json:
        print(f"produced {total} record{'s' if total != 1 else ''} to {args.topic}",
              file=sys.stderr)
    return EXIT_OK


def _chosen_partitions(admin: Admin, topic: str, requested: list[int] | None) -> list[int]:
    """The partitions `--partition` names (all of the topic's when none), checked to exist."""
    found = [t for t in admin.topics([topic]) if t.name == topic]
    if not found or found[0].error != ErrorCode.NONE:
        code = found[0].error if found else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        raise KafkaError(code, f"topic {topic}")
    all_parts = [p.partition for p in found[0].partitions]
    parts = sorted(set(requested)) if requested else all_parts
    missing = [p for p in parts if p not in all_parts]
    if missing:
        raise UsageError(f"--partition {missing[0]}: topic {topic} has partitions "
                         f"0-{len(all_parts) - 1}")
    return parts


def consume(args: argparse.Namespace, admin: Admin) -> int:
    from odradek.client.data import EARLIEST, LATEST, Fetcher, list_offsets

    parts = _chosen_partitions(admin, args.topic, args.partition)
    isolation = 1 if args.isolation == "read_committed" else 0
    earliest = list_offsets(admin, args.topic, parts, EARLIEST)
    latest = list_offsets(admin, args.topic, parts, LATEST, isolation_level=isolation)
    committed: dict[int, int] = {}
    if args.group is not None:
        from odradek.client.groups import committed_offsets

        committed = {p: o for (t, p), o in committed_offsets(admin, args.group).items()
                     if t == args.topic and p in parts}
    if args.offset is not None:
        positions = {p: min(max(args.offset, earliest[p]), latest[p]) for p in parts}
    elif args.timestamp is not None:
        at = list_offsets(admin, args.topic, parts, args.timestamp)
        positions = {p: (at[p] if at[p] >= 0 else latest[p]) for p in parts}
    else:
        default = earliest if args.from_beginning else latest
        positions = {p: committed.get(p, default[p]) for p in parts}
    fetcher = Fetcher(admin, args.topic, positions, isolation_level=isolation)
    deadline = None if args.wait is None else time.monotonic() + args.wait
    count = 0
    out = sys.stdout.buffer
    json_lines = args.format == "json" or args.json
    stopped_by = "end"
    try:
        while True:
            if args.max_messages is not None and count >= args.max_messages:
                stopped_by = "max"
                break
            if args.exit_at_end and fetcher.high_watermarks and fetcher.at_end():
                break
            if deadline is not None and time.monotonic() >= deadline:
                stopped_by = "wait"
                break
            for rec in fetcher.poll():
                if json_lines:
                    doc = {"topic": rec.topic, "partition": rec.partition, "offset": rec.offset,
                           "timestamp": rec.timestamp, "key": _bytes_json(rec.key),
                           "value": _bytes_json(rec.value),
                           "headers": [[k, _bytes_json(v)] for k, v in rec.headers]}
                    out.write(json.dumps(doc).encode() + b"\n")
                else:
                    if args.print_key:
                        out.write((rec.key or b"") + b"\t")
                    out.write((rec.value or b"") + b"\n")
                count += 1
                if args.max_messages is not None and count >= args.max_messages:
                    fetcher.positions[rec.partition] = rec.offset + 1
                    break
            out.flush()
    except KeyboardInterrupt:  # ^C: the normal end of following a topic
        stopped_by = "interrupt"
        admin.reconnect()  # a fetch may have been cut off mid-request
    if args.group is not None:
        from odradek.client.groups import commit_offsets

        commit_offsets(admin, args.group,
                       {(args.topic, p): o for p, o in fetcher.positions.items()})
    if stopped_by == "wait" and args.max_messages is not None and count < args.max_messages:
        print(f"odradek consume: {count} of {args.max_messages} records within {args.wait} s",
              file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


# -- groups and the cluster ----------------------------------------------------------------------


def group_list(args: argparse.Namespace, admin: Admin) -> int:
    from odradek.client.groups import list_groups

    groups = list_groups(admin)
    if args.json:
        emit_json([{"group_id": g.group_id, "type": g.group_type, "state": g.state,
                    "protocol_type": g.protocol_type} for g in groups])
    else:
        print(table(["GROUP", "TYPE", "STATE", "PROTOCOL-TYPE"],
                    [(g.group_id, g.group_type, g.state or None, g.protocol_type or None)
                     for g in groups]))
    return EXIT_OK


def group_describe(args: argparse.Namespace, admin: Admin) -> int:
    from odradek.client.groups import describe_group, group_lag

    g = describe_group(admin, args.group_id)
    offsets = group_lag(admin, g)
    if args.json:
        emit_json({
            "group_id": g.group_id, "state": g.state, "type": g.group_type,
            "protocol_type": g.protocol_type, "protocol": g.protocol,
            "coordinator": g.coordinator,
            "members": [{"member_id": m.member_id, "instance_id": m.instance_id,
                         "client_id": m.client_id, "host": m.client_host,
                         "assignment": m.assignment} for m in g.members],
            "offsets": [{"topic": o.topic, "partition": o.partition,
                         "committed": o.committed, "end": o.end, "lag": o.lag,
                         "member_id": o.member} for o in offsets],
            "total_lag": sum(o.lag for o in offsets if o.lag is not None)})
        return EXIT_OK
    print(f"group {g.group_id}  type {g.group_type}  state {g.state}  "
          f"protocol {g.protocol or '-'}  coordinator {g.coordinator}  "
          f"members {len(g.members)}")
    if g.members:
        print()
        print(table(["MEMBER", "INSTANCE", "CLIENT-ID", "HOST", "ASSIGNMENT"],
                    [(m.member_id, m.instance_id, m.client_id, m.client_host,
                      " ".join(f"{t}:{','.join(map(str, ps))}"
                               for t, ps in sorted(m.assignment.items())) or None)
                     for m in g.members]))
    if offsets:
        print()
        print(table(["TOPIC", "PARTITION", "COMMITTED", "END", "LAG", "MEMBER"],
                    [(o.topic, o.partition, o.committed if o.committed >= 0 else None,
                      o.end if o.end >= 0 else None, o.lag, o.member) for o in offsets]))
        print(f"\ntotal lag {sum(o.lag for o in offsets if o.lag is not None)}")
    return EXIT_OK


def group_delete(args: argparse.Namespace, admin: Admin) -> int:
    from odradek.client.groups import delete_groups

    results = delete_groups(admin, list(dict.fromkeys(args.group_ids)))
    failed = {g: e for g, e in results.items() if e is not None}
    if args.json:
        emit_json({"deleted": [g for g, e in results.items() if e is None],
                   "failed": {g: str(e) for g, e in failed.items()}})
    else:
        for g, e in results.items():
            if e is None:
                print(f"group {g} deleted")
    for error in failed.values():
        print(f"odradek group: {error}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


def group_reset_offsets(args: argparse.Namespace, admin: Admin) -> int:
    from odradek.client.data import EARLIEST, LATEST, list_offsets
    from odradek.client.groups import commit_offsets, committed_offsets, describe_group

    parts = _chosen_partitions(admin, args.topic, args.partition)
    try:
        group = describe_group(admin, args.group_id)
        active = group.members
    except KafkaError as exc:
        if exc.code != ErrorCode.GROUP_ID_NOT_FOUND:
            raise
        active = []
    if active and args.execute:
        print(f"odradek group: group {args.group_id} has {len(active)} active member(s); "
              "offsets can be reset only while it is empty", file=sys.stderr)
        return EXIT_FAILED
    committed = {p: o for (t, p), o in committed_offsets(admin, args.group_id).items()
                 if t == args.topic}
    earliest = list_offsets(admin, args.topic, parts, EARLIEST)
    latest = list_offsets(admin, args.topic, parts, LATEST)
    plan: dict[int, int] = {}
    for p in parts:
        if args.to_earliest:
            target = earliest[p]
        elif args.to_latest:
            target = latest[p]
        elif args.to_offset is not None:
            target = args.to_offset
        elif args.shift_by is not None:
            target = committed.get(p, latest[p]) + args.shift_by
        else:
            target = -1
        plan[p] = target
    if args.to_timestamp is not None:
        at = list_offsets(admin, args.topic, parts, args.to_timestamp)
        plan = {p: (at[p] if at[p] >= 0 else latest[p]) for p in parts}
    plan = {p: min(max(o, earliest[p]), latest[p]) for p, o in plan.items()}
    if args.execute:
        commit_offsets(admin, args.group_id, {(args.topic, p): o for p, o in plan.items()})
    if args.json:
        emit_json({"group_id": args.group_id, "topic": args.topic, "executed": args.execute,
                   "offsets": [{"partition": p, "from": committed.get(p), "to": o}
                               for p, o in plan.items()]})
    else:
        print(table(["TOPIC", "PARTITION", "COMMITTED", "NEW"],
                    [(args.topic, p, committed.get(p), o) for p, o in plan.items()]))
        if not args.execute:
            print("\n(a plan only: --execute commits it)")
    return EXIT_OK


def txn_list(args: argparse.Namespace, admin: Admin) -> int:
    from odradek.client.groups import list_transactions

    txns = list_transactions(admin)
    if args.json:
        emit_json([{"transactional_id": t.transactional_id, "producer_id": t.producer_id,
                    "state": t.state} for t in txns])
    else:
        print(table(["TRANSACTIONAL-ID", "PRODUCER-ID", "STATE"],
                    [(t.transactional_id, t.producer_id, t.state) for t in txns]))
    return EXIT_OK


def txn_describe(args: argparse.Namespace, admin: Admin) -> int:
    from odradek.client.groups import describe_transaction

    t = describe_transaction(admin, args.transactional_id)
    started = t.start_time_ms if t.start_time_ms >= 0 else None
    if args.json:
        emit_json({"transactional_id": t.transactional_id, "producer_id": t.producer_id,
                   "producer_epoch": t.producer_epoch, "state": t.state,
                   "timeout_ms": t.timeout_ms, "start_time_ms": started,
                   "partitions": t.partitions})
        return EXIT_OK
    print(f"transaction {t.transactional_id}  state {t.state}  producer {t.producer_id} "
          f"epoch {t.producer_epoch}  timeout {t.timeout_ms} ms"
          + (f"  started {started}" if started is not None else ""))
    if t.partitions:
        print()
        print(table(["TOPIC", "PARTITIONS"],
                    [(topic, ",".join(map(str, ps))) for topic, ps in sorted(t.partitions.items())]))
    return EXIT_OK


def cluster_info(args: argparse.Namespace, admin: Admin) -> int:
    info = admin.describe_cluster()
    apis = {_api_name(k): {"min": lo, "max": hi} for k, (lo, hi) in
            sorted(info.api_versions.items())}
    if args.json:
        emit_json({"cluster_id": info.cluster_id, "controller": info.controller,
                   "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port,
                                "rack": b.rack} for b in info.brokers],
                   "features": info.features, "api_versions": apis})
        return EXIT_OK
    print(f"cluster {info.cluster_id}  controller {info.controller}  "
          f"brokers {len(info.brokers)}  apis {len(apis)} "
          f"(asked {admin.conn.address})")
    print()
    print(table(["NODE", "HOST", "PORT", "RACK"],
                [(b.node_id, b.host, b.port, b.rack) for b in info.brokers]))
    if info.features:
        print()
        print(table(["FEATURE", "LEVEL"], sorted(info.features.items())))
    return EXIT_OK


def _api_name(key: int) -> str:
    try:
        return ApiKey(key).name
    except ValueError:
        return str(key)
