"""The Java 4.4 client's transaction scenarios under both transaction.version levels.

The matrix (test_matrix.py) runs every row against Odradek's default, transaction.version 2,
where kafka-clients 4.4 uses transactions v2 (KIP-890: Produce v12, EndTxn v5, TxnOffsetCommit
v5, an epoch bump per transaction). Here the same scenarios run on a broker started with
transaction.version=1, where the client must take the classic path; and for both levels the
`__transaction_state` records the run left are read back to prove which path it took: the
ClientTransactionVersion each transaction recorded and whether its epoch moved with each
commit or abort.

Kafka's own transactional applications run here too: TransactionalMessageCopier (txn-copier,
with random aborts) at both levels, Kafka Streams with exactly_once_v2 (streams-eos, about
30 s) at level 1 (the matrix runs java-4.4's at the default level 2; compat_tests/slow.sh runs
it at both levels on every Java client).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from odradek.coordinator.txn.log_format import decode_key, decode_value
from odradek.wire.records import iter_batches

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = ("transactions", "consume-transform-produce", "fencing", "txn-copier")
LEVEL_SCENARIOS = {2: SCENARIOS, 1: (*SCENARIOS, "streams-eos")}


def _run(tmp: Path, level: int) -> tuple[list[dict[str, str]], Path]:
    result, log = tmp / "rows.json", tmp / "runner.log"
    argv = [sys.executable, "-m", "compat_tests.run", "--target", "odradek", "--no-doc",
            "--clients", "java-4.4", "--scenarios", ",".join(LEVEL_SCENARIOS[level]), "--jobs", "1",
            "--transaction-version", str(level), "--json", str(result)]
    with log.open("w") as f:
        proc = subprocess.run(argv, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, timeout=900)
    text = log.read_text(errors="replace")
    if proc.returncode != 0 or not result.exists():
        pytest.fail(f"the matrix runner failed ({proc.returncode}):\n{text[-3000:]}")
    work = next(line.split("work dir ")[1].strip() for line in text.splitlines()
                if "work dir " in line)
    return json.loads(result.read_text())["rows"], Path(work)


def _states(work: Path) -> dict[str, list[tuple[str, int, int]]]:
    """(state, producer epoch, client transaction version) per transactional id, in order."""
    out: dict[str, list[tuple[str, int, int]]] = {}
    for seg in sorted(work.glob("compat-odradek-*/__transaction_state-*/*.log")):
        for batch in iter_batches(memoryview(seg.read_bytes())):
            if batch.is_control:
                continue
            for r in batch.records():
                tid = decode_key(r.key) if r.key is not None else None
                meta = decode_value(tid, r.value) if tid is not None else None
                if tid is not None and meta is not None:
                    out.setdefault(tid, []).append(
                        (meta.state.display, meta.producer_epoch, meta.client_tv))
    return out


@pytest.mark.timeout(900)
@pytest.mark.parametrize("level", [2, 1])
def test_java_44_transactions_under_each_transaction_version(tmp_path: Path, level: int) -> None:
    rows, work = _run(tmp_path, level)
    got = {r["scenario"]: (r["status"], r["reason"]) for r in rows}
    assert got == {s: ("PASS", got[s][1]) for s in LEVEL_SCENARIOS[level]}, got
    states = _states(work)
    _check_copier(states, level)
    if level == 1:
        # exactly_once_v2: one transactional id per process id (kept in the state dir, so the
        # same across the restarts); every transaction on the classic path
        streams = [s for tid, s in states.items() if "streams-eos" in tid]
        assert streams, states.keys()
        assert {tv for s in streams for _, _, tv in s} == {0}, streams
    cycles = [s for tid, s in states.items() if "consume-transform-produce" in tid]
    assert len(cycles) == 1, states.keys()
    records = cycles[0]
    ends = [(epoch, tv) for state, epoch, tv in records
            if state in ("CompleteCommit", "CompleteAbort")]
    assert len(ends) >= 2, records
    if level == 2:
        # every transaction came through the v2 apis (InitProducerId's Empty records the
        # version 0, as Kafka's new metadata does), and each end bumped the epoch
        assert {tv for state, _, tv in records if state != "Empty"} == {2}, records
        epochs = [e for e, _ in ends]
        assert epochs == sorted(set(epochs)), records  # strictly growing
    else:
        assert {tv for _, _, tv in records} == {0}, records
        assert len({e for e, _ in ends}) == 1, records  # the classic protocol keeps the epoch


def _check_copier(states: dict[str, list[tuple[str, int, int]]], level: int) -> None:
    """TransactionalMessageCopier's transactional ids (group mode, run twice; assign mode, one
    killed and aborted for its timeout, then one under a new id): many transactions, some
    aborted (--enable-random-aborts); under level 2 every one took the v2 path and bumped the
    epoch (the timeout abort too), under level 1 the epoch moved only with InitProducerId and the
    coordinator's timeout abort."""
    copiers = {tid: s for tid, s in states.items() if "txn-copier" in tid}
    assert len(copiers) == 3, states.keys()
    assert any(state == "CompleteAbort" for s in copiers.values() for state, _, _ in s), copiers
    all_ends = 0
    for tid, records in copiers.items():
        ends = [epoch for state, epoch, _ in records if state in ("CompleteCommit", "CompleteAbort")]
        assert ends, (tid, records)
        all_ends += len(ends)
        if level == 2:
            assert {tv for state, _, tv in records if state != "Empty"} == {2}, (tid, records)
            assert ends == sorted(set(ends)), (tid, records)  # strictly growing
        else:
            assert {tv for _, _, tv in records} == {0}, (tid, records)
            assert len(set(ends)) <= 2, (tid, records)  # one epoch per run (+1 for a timeout abort)
    assert all_ends >= 20, copiers
