"""compat_tests/jepsen_checker.py on hand-made histories: a clean one is valid, and each
anomaly planted in it is flagged (and only that one)."""

from __future__ import annotations

from typing import Any

import pytest

from compat_tests.jepsen_checker import ANOMALIES, check


def send(value: str, partition: int, txn: str | None = None) -> dict[str, Any]:
    producer, seq = value.split(":")
    return {"type": "send", "value": value, "producer": producer, "seq": int(seq),
            "partition": partition, "txn": txn}


def ack(value: str, partition: int, offset: int) -> dict[str, Any]:
    return {"type": "ack", "value": value, "partition": partition, "offset": offset}


def poll(consumer: str, partition: int, offset: int, value: str,
         isolation: str = "read_committed") -> dict[str, Any]:
    return {"type": "poll", "consumer": consumer, "isolation": isolation,
            "partition": partition, "offset": offset, "value": value}


def final(partition: int, offset: int, value: str) -> dict[str, Any]:
    return {"type": "final", "partition": partition, "offset": offset, "value": value}


def clean() -> list[dict[str, Any]]:
    """i1 writes 3 values to partition 0 (offsets 0-2); t1 commits a transaction of 2 values
    on partition 1 (offsets 0, 1, marker at 2) and aborts one (offset 3, marker at 4); the
    group reads everything committed, a read_uncommitted consumer also sees t1:2."""
    h: list[dict[str, Any]] = []
    for i in range(3):
        h += [send(f"i1:{i}", 0), ack(f"i1:{i}", 0, i)]
    h += [send("t1:0", 1, "t1-a"), send("t1:1", 1, "t1-a"), ack("t1:0", 1, 0),
          ack("t1:1", 1, 1), {"type": "txn", "txn": "t1-a", "outcome": "commit"},
          send("t1:2", 1, "t1-b"), ack("t1:2", 1, 3),
          {"type": "txn", "txn": "t1-b", "outcome": "abort"}]
    h += [{"type": "assign", "consumer": "g0"}]
    h += [poll("g0", 0, i, f"i1:{i}") for i in range(3)]
    h += [poll("g0", 1, 0, "t1:0"), poll("g0", 1, 1, "t1:1")]
    h += [poll("u0", 1, i, v, "read_uncommitted")
          for i, v in [(0, "t1:0"), (1, "t1:1"), (3, "t1:2")]]
    h += [final(0, i, f"i1:{i}") for i in range(3)]
    h += [final(1, 0, "t1:0"), final(1, 1, "t1:1")]
    return h


def flagged(history: list[dict[str, Any]]) -> dict[str, int]:
    report = check(history)
    return {k: n for k, n in report.counts.items() if n}


def test_a_clean_history_is_valid() -> None:
    report = check(clean())
    assert report.ok, report.lines()
    assert report.stats["committed"] == 1 and report.stats["aborted"] == 1
    assert report.lines()[-1] == "VALID"


def test_lost_acknowledged_write() -> None:
    h = [e for e in clean() if not (e["type"] in ("final", "poll") and e["value"] == "i1:1")]
    assert flagged(h) == {"lost-write": 1}


def test_lost_committed_transaction_write() -> None:
    h = [e for e in clean() if not (e["type"] in ("final", "poll") and e["value"] == "t1:1")]
    assert flagged(h) == {"lost-write": 1}


def test_unacknowledged_write_may_be_missing() -> None:
    h = [*clean(), send("i1:3", 0), {"type": "send_error", "value": "i1:3", "error": "x"}]
    assert flagged(h) == {}


def test_duplicate() -> None:
    h = [*clean(), final(0, 3, "i1:2"), poll("g0", 0, 3, "i1:2")]
    assert flagged(h) == {"duplicate": 1}


def test_inconsistent_offset_between_readers() -> None:
    h = [*clean(), poll("u0", 0, 1, "i1:9", "read_uncommitted")]
    assert flagged(h)["inconsistent-offset"] == 1


def test_ack_at_another_offset() -> None:
    h = [dict(e, offset=7) if e["type"] == "ack" and e["value"] == "i1:0" else e
         for e in clean()]
    assert flagged(h) == {"inconsistent-offset": 1}


def test_out_of_order_per_partition() -> None:
    # i1:1 and i1:2 swapped in the log (acks and reads agree with each other)
    swap = {"i1:1": 2, "i1:2": 1}
    h = [dict(e, offset=swap[e["value"]])
         if e["type"] in ("ack", "poll", "final") and e["value"] in swap else e
         for e in clean()]
    h = [e for e in h if e["type"] != "poll" or e["partition"] != 0]  # keep the polls in order
    h += [poll("g0", 0, i, v) for i, v in enumerate(["i1:0", "i1:2", "i1:1"])]
    assert flagged(h) == {"nonmonotonic-order": 1}


def test_aborted_read_by_read_committed() -> None:
    assert flagged([*clean(), poll("g0", 1, 3, "t1:2")]) == {"aborted-read": 1}


def test_aborted_value_in_the_final_read() -> None:
    assert flagged([*clean(), final(1, 3, "t1:2"), poll("g0", 1, 3, "t1:2")]) \
        == {"aborted-read": 1}


def test_aborted_read_by_read_uncommitted_is_fine() -> None:
    assert flagged(clean()) == {}


def test_uncommitted_read() -> None:
    h = [*clean(), send("t1:3", 1, "t1-c"), ack("t1:3", 1, 5), poll("g0", 1, 5, "t1:3")]
    assert flagged(h) == {"uncommitted-read": 1}


def test_partial_transaction_of_unknown_outcome() -> None:
    h = [*clean(), send("t1:3", 1, "t1-c"), send("t1:4", 1, "t1-c"), ack("t1:3", 1, 5),
         ack("t1:4", 1, 6), {"type": "txn", "txn": "t1-c", "outcome": "unknown"},
         final(1, 5, "t1:3"), poll("g0", 1, 5, "t1:3")]
    assert flagged(h) == {"partial-transaction": 1}
    whole = [*h, final(1, 6, "t1:4"), poll("g0", 1, 6, "t1:4")]
    assert flagged(whole) == {}


def test_committed_value_never_read_by_the_group() -> None:
    h = [e for e in clean() if not (e["type"] == "poll" and e["value"] == "t1:1"
                                    and e["consumer"] == "g0")]
    assert flagged(h) == {"unread-by-group": 1}


def test_poll_skip() -> None:
    h = [e for e in clean() if not (e["type"] == "poll" and e["value"] == "i1:1")]
    h.append(poll("g1", 0, 1, "i1:1"))  # another consumer read it: not unread, but g0 skipped
    assert flagged(h) == {"poll-skip": 1}


def test_skip_over_a_marker_and_an_aborted_record_is_no_poll_skip() -> None:
    h = [*clean(), send("t1:5", 1, "t1-d"), ack("t1:5", 1, 5),
         {"type": "txn", "txn": "t1-d", "outcome": "commit"}, poll("g0", 1, 5, "t1:5"),
         final(1, 5, "t1:5")]
    assert flagged(h) == {}


def test_nonmonotonic_poll_and_a_reassignment_resets() -> None:
    assert flagged([*clean(), poll("g0", 0, 1, "i1:1")]) == {"nonmonotonic-poll": 1}
    assert flagged([*clean(), {"type": "assign", "consumer": "g0"},
                    poll("g0", 0, 1, "i1:1")]) == {}


@pytest.mark.parametrize("kind", ANOMALIES)
def test_every_anomaly_has_a_test(kind: str) -> None:
    import inspect
    import sys

    source = inspect.getsource(sys.modules[__name__])
    assert f'"{kind}": 1' in source  # some test asserts it is flagged
