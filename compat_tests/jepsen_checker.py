"""The Jepsen-style checker's analysis (issue #15): pure functions over a recorded history.

A history is a list of events (dicts, one JSON object a line in the history file), written by
`compat_tests/jepsen.py`:

- `{"type": "send", "value", "producer", "seq", "partition", "txn"}`: a producer handed a
  unique value (producer id, sequence) to its client; `txn` names its transaction, or None.
- `{"type": "ack", "value", "partition", "offset"}` / `{"type": "send_error", "value",
  "error"}`: the delivery report (an error leaves the write indeterminate).
- `{"type": "txn", "txn", "outcome"}`: "commit" / "abort" acknowledged by the broker, or
  "unknown" (commit failed in a way that does not say whether it took effect).
- `{"type": "assign", "consumer"}`: a consumer's partitions were (re)assigned; offsets it
  polls afterwards may start anywhere (a group hands out committed offsets).
- `{"type": "poll", "consumer", "isolation", "partition", "offset", "value"}`: a record read.
- `{"type": "final", "partition", "offset", "value"}`: the last read_committed read of every
  partition from offset 0 to its end, once the nemesis stopped and all brokers are back.

Anomalies (names after Jepsen's Kafka queue workload where one exists):

- `lost-write`: an acknowledged non-transactional write, or a write of a committed
  transaction, absent from the final read.
- `duplicate`: one value at more than one (partition, offset).
- `inconsistent-offset`: two reads of one (partition, offset) returned different values, or
  an ack named an offset the value was not read at.
- `nonmonotonic-order`: in a partition, one producer's values out of its send order (the
  idempotent producer keeps its order per partition).
- `aborted-read`: a read_committed read (or the final read) of a value from an aborted
  transaction; `uncommitted-read`: one from a transaction that never reached a commit.
- `partial-transaction`: a transaction whose outcome is unknown, part of it visible.
- `unread-by-group`: a value in the final read that the read_committed group never polled.
- `poll-skip` / `nonmonotonic-poll`: one consumer's consecutive reads of a partition (with
  no reassignment between) jumped over a committed record, or went backwards.

G0/G1c (write and read cycles between transactions) need key reads Kafka's API does not
give a queue workload without the full list-append machinery; they are not checked.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Event = Mapping[str, Any]
ANOMALIES = ("lost-write", "duplicate", "inconsistent-offset", "nonmonotonic-order",
             "aborted-read", "uncommitted-read", "partial-transaction", "unread-by-group",
             "poll-skip", "nonmonotonic-poll")


@dataclass
class Report:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ANOMALIES, 0))
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    stats: dict[str, int] = field(default_factory=dict)

    def flag(self, kind: str, example: str) -> None:
        self.counts[kind] += 1
        if len(self.examples[kind]) < 5:
            self.examples[kind].append(example)

    @property
    def ok(self) -> bool:
        return not any(self.counts.values())

    def lines(self) -> list[str]:
        out = [", ".join(f"{k} {v}" for k, v in self.stats.items())]
        for kind in ANOMALIES:
            n = self.counts[kind]
            out.append(f"  {kind:20} {n}" + (f"  e.g. {'; '.join(self.examples[kind])}"
                                             if n else ""))
        out.append("VALID" if self.ok else "INVALID")
        return out


def check(history: Iterable[Event]) -> Report:
    events = list(history)
    report = Report()
    sends: dict[str, Event] = {}
    acks: dict[str, Event] = {}
    outcomes: dict[str, str] = {}
    txn_values: dict[str, list[str]] = defaultdict(list)
    final: dict[tuple[int, int], str] = {}
    reads: dict[tuple[int, int], set[str]] = defaultdict(set)  # every read, any isolation
    positions: dict[str, set[tuple[int, int]]] = defaultdict(set)
    rc_values: set[str] = set()  # read by a read_committed consumer (poll or final)
    group_values: set[str] = set()
    for e in events:
        kind = e["type"]
        if kind == "send":
            sends[e["value"]] = e
            if e.get("txn") is not None:
                txn_values[e["txn"]].append(e["value"])
        elif kind == "ack":
            acks[e["value"]] = e
        elif kind == "txn":
            outcomes[e["txn"]] = e["outcome"]
        elif kind in ("poll", "final"):
            pos = (int(e["partition"]), int(e["offset"]))
            reads[pos].add(e["value"])
            positions[e["value"]].add(pos)
            if kind == "final":
                final[pos] = e["value"]
                rc_values.add(e["value"])
            elif e["isolation"] == "read_committed":
                rc_values.add(e["value"])
                group_values.add(e["value"])
    final_values = set(final.values())
    report.stats = {"sends": len(sends), "acks": len(acks),
                    "transactions": len(txn_values),
                    "committed": sum(o == "commit" for o in outcomes.values()),
                    "aborted": sum(o == "abort" for o in outcomes.values()),
                    "polls": sum(e["type"] == "poll" for e in events),
                    "final records": len(final)}

    for value, send in sends.items():
        txn = send.get("txn")
        must_exist = (outcomes.get(txn) == "commit" and value in acks) if txn is not None \
            else value in acks
        if must_exist and value not in final_values:
            ack = acks[value]
            report.flag("lost-write", f"{value} acked at {ack['partition']}/{ack['offset']}")
    for value, pos in positions.items():
        if len(pos) > 1:
            report.flag("duplicate", f"{value} at {sorted(pos)}")
    for pos, values in reads.items():
        if len(values) > 1:
            report.flag("inconsistent-offset", f"{pos[0]}/{pos[1]} read as {sorted(values)}")
    for value, ack in acks.items():
        at = (int(ack["partition"]), int(ack["offset"]))
        if positions.get(value) and at not in positions[value]:
            report.flag("inconsistent-offset",
                        f"{value} acked at {at[0]}/{at[1]}, read at {sorted(positions[value])}")

    # per partition, each producer's sequence numbers must rise with the offset
    last: dict[tuple[int, str], tuple[int, int, str]] = {}
    for (partition, offset), value in sorted(final.items()):
        send = sends.get(value)
        if send is None:
            continue
        key = (partition, str(send["producer"]))
        prev = last.get(key)
        if prev is not None and int(send["seq"]) < prev[0]:
            report.flag("nonmonotonic-order", f"partition {partition}: {prev[2]} at offset "
                        f"{prev[1]} before {value} at {offset}")
        last[key] = (int(send["seq"]), offset, value)

    for value in sorted(rc_values):
        txn = sends[value].get("txn") if value in sends else None
        if txn is None:
            continue
        outcome = outcomes.get(txn)
        if outcome == "abort":
            report.flag("aborted-read", f"{value} of aborted {txn}")
        elif outcome is None:
            report.flag("uncommitted-read", f"{value} of {txn}, never committed")
    for txn, values in txn_values.items():
        if outcomes.get(txn) == "unknown":
            seen = [v for v in values if v in final_values]
            if seen and len(seen) != len(values):
                report.flag("partial-transaction",
                            f"{txn}: {len(seen)} of {len(values)} values visible")
    for value in sorted(final_values - group_values):
        pos = next(iter(positions[value]))
        report.flag("unread-by-group", f"{value} at {pos[0]}/{pos[1]}")

    committed_offsets: dict[int, list[int]] = defaultdict(list)
    for partition, offset in sorted(final):
        committed_offsets[partition].append(offset)
    _check_polls(events, committed_offsets, report)
    return report


def _check_polls(events: list[Event], committed: Mapping[int, list[int]],
                 report: Report) -> None:
    import bisect

    prev: dict[tuple[str, int], int] = {}
    for e in events:
        if e["type"] == "assign":
            for key in [k for k in prev if k[0] == e["consumer"]]:
                del prev[key]
            continue
        if e["type"] != "poll":
            continue
        key = (str(e["consumer"]), int(e["partition"]))
        offset = int(e["offset"])
        before = prev.get(key)
        prev[key] = offset
        if before is None:
            continue
        if offset <= before:
            report.flag("nonmonotonic-poll", f"{key[0]} partition {key[1]}: offset {offset} "
                        f"after {before}")
            continue
        offsets = committed.get(key[1], [])
        i = bisect.bisect_right(offsets, before)
        if i < len(offsets) and offsets[i] < offset:
            report.flag("poll-skip", f"{key[0]} partition {key[1]}: {before} -> {offset}, "
                        f"skipping committed offset {offsets[i]}")
