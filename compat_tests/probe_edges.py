"""Raw-protocol probe of issue #11's bad-input cases outside groups: fetch sessions (KIP-227)
and transactional produce under transactions v2 (KIP-890), the same requests to Odradek and to
Apache Kafka 4.4.

`python -m compat_tests.probe_edges [--target odradek|kafka|both] [--cases a,b] [--markdown FILE]
[--transaction-version N]`

Fetch v12 (names) with an unknown session id, a wrong epoch, session id 0 with an epoch, a
closed session reused, a new session over an old id, and an incremental fetch that forgets a
partition and sees only the partition that changed. Produce v11-v13 with transactional
batches: without a transactional id, outside a transaction (v11: nothing added; v12: the
implicit add of TV2), with a fenced or unknown producer id or epoch. Session ids are shown by
shape ("new", "same", 0) so the comparison is about behaviour. Same machinery as
`probe_kip848` (one connection per case).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from compat_tests import probing
from compat_tests.probe_kip848 import Conn
from compat_tests.probing import RETRIABLE, Case, err
from odradek.wire._generated.api_keys import ApiKey
from odradek.wire._generated.create_topics import CreateTopicsRequest, CreateTopicsResponse
from odradek.wire._generated.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)
from odradek.wire._generated.end_txn import EndTxnRequest, EndTxnResponse
from odradek.wire._generated.fetch import FetchRequest, FetchResponse
from odradek.wire._generated.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from odradek.wire._generated.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from odradek.wire._generated.metadata import MetadataRequest, MetadataResponse
from odradek.wire._generated.produce import ProduceRequest, ProduceResponse
from odradek.wire.records import build_batch

TOPIC = "probe-e"
STATE: dict[str, Any] = {}


# ------------------------------------------------------------ Fetch sessions

def fetch(c: Conn, session_id: int, epoch: int, partitions: list[int] | None = None,
          forget: list[int] | None = None, offset: int = 0) -> Any:
    """Fetch v12 of `partitions` of the probe topic from `offset`."""
    topics = [] if partitions is None else [FetchRequest.FetchTopic(topic=TOPIC, partitions=[
        FetchRequest.FetchPartition(partition=p, fetch_offset=offset, partition_max_bytes=1 << 20)
        for p in partitions])]
    forgotten = [] if not forget else [FetchRequest.ForgottenTopic(topic=TOPIC, partitions=forget)]
    req = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 24,
                       isolation_level=0, session_id=session_id, session_epoch=epoch,
                       topics=topics, forgotten_topics_data=forgotten)
    return c.call(ApiKey.FETCH, 12, req, FetchResponse)


def summary(r: Any, known: dict[str, int]) -> dict[str, Any]:
    """Error, the session id by shape, and the partitions answered (with their error)."""
    sid = r.session_id
    if sid == 0:
        shape: Any = 0
    elif sid in known.values():
        shape = next(k for k, v in known.items() if v == sid)
    else:
        shape = f"new#{len(known)}"
        known[shape] = sid
    parts = sorted((p.partition_index, err(p.error_code)) for t in r.responses for p in t.partitions)
    return {"error": err(r.error_code), "session": shape, "partitions": parts}


def case_unknown_session(c: Conn) -> dict[str, Any]:
    return {"id 123456789 epoch 1": summary(fetch(c, 123456789, 1, [0]), {}),
            "id 123456789 epoch 0": summary(fetch(c, 123456789, 0, [0]), {}),
            "id 123456789 epoch -1": summary(fetch(c, 123456789, -1, [0]), {})}


def case_session0_with_epoch(c: Conn) -> dict[str, Any]:
    return {"id 0 epoch 1": summary(fetch(c, 0, 1, [0]), {}),
            "id 0 epoch 7": summary(fetch(c, 0, 7, [0]), {}),
            "id 0 epoch -1": summary(fetch(c, 0, -1, [0]), {})}


def case_wrong_epoch(c: Conn) -> dict[str, Any]:
    known: dict[str, int] = {}
    out: dict[str, Any] = {"full (0, 0)": summary(full := fetch(c, 0, 0, [0, 1, 2]), known)}
    sid = full.session_id
    if not sid:
        return out
    out["epoch 1"] = summary(fetch(c, sid, 1), known)
    out["epoch 5 (expected 2)"] = summary(fetch(c, sid, 5), known)
    out["epoch 2 after the error"] = summary(fetch(c, sid, 2), known)
    out["epoch 1 again (replayed)"] = summary(fetch(c, sid, 1), known)
    return out


def case_close_and_reuse(c: Conn) -> dict[str, Any]:
    known: dict[str, int] = {}
    out: dict[str, Any] = {"full (0, 0)": summary(full := fetch(c, 0, 0, [0, 1]), known)}
    sid = full.session_id
    if not sid:
        return out
    out["close (id, -1) with partitions"] = summary(fetch(c, sid, -1, [0]), known)
    out["the closed id, epoch 1"] = summary(fetch(c, sid, 1), known)
    out["new session over it (id, 0)"] = summary(renew := fetch(c, sid, 0, [0]), known)
    out["the renewed one, epoch 1"] = summary(fetch(c, renew.session_id or sid, 1), known)
    return out


def case_incremental(c: Conn) -> dict[str, Any]:
    known: dict[str, int] = {}
    out: dict[str, Any] = {"full (0, 0) of 0,1,2": summary(full := fetch(c, 0, 0, [0, 1, 2]), known)}
    sid = full.session_id
    if not sid:
        return out
    # the client moves its positions past the record each partition holds
    out["epoch 1, positions moved to 1"] = summary(fetch(c, sid, 1, [0, 1, 2], offset=1), known)
    out["epoch 2, nothing changed"] = summary(fetch(c, sid, 2), known)
    out["epoch 3, forget 1"] = summary(fetch(c, sid, 3, forget=[1]), known)
    produce(c, 11, 2, build_batch([(b"k", b"after")]))
    out["epoch 4, after a record on 2"] = summary(fetch(c, sid, 4), known)
    produce(c, 11, 1, build_batch([(b"k", b"forgotten")]))
    out["epoch 5, after a record on forgotten 1"] = summary(fetch(c, sid, 5), known)
    out["epoch 6, add 1 back at 1"] = summary(fetch(c, sid, 6, [1], offset=1), known)
    return out


# ------------------------------------------------------------ transactional produce

def produce(c: Conn, version: int, partition: int, batch: bytes, txn_id: str | None = None) -> dict[str, Any]:
    req = ProduceRequest(transactional_id=txn_id, acks=-1, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, topic_id=STATE["topic_id"], partition_data=[
            ProduceRequest.PartitionProduceData(index=partition, records=batch)])])
    r = c.call(ApiKey.PRODUCE, version, req, ProduceResponse)
    p = r.responses[0].partition_responses[0]
    return {"error": err(p.error_code), "message": p.error_message}


def init_txn(c: Conn, txn_id: str) -> tuple[int, int]:
    find = FindCoordinatorRequest(key_type=1, coordinator_keys=[txn_id])
    c.retrying(lambda: c.call(ApiKey.FIND_COORDINATOR, 4, find, FindCoordinatorResponse),
               lambda r: r.coordinators[0].error_code, 60)
    # v5 (no TV2 fields): the client's idea of the transaction version does not come into it
    ip = InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60000)
    r = c.retrying(lambda: c.call(ApiKey.INIT_PRODUCER_ID, 5, ip, InitProducerIdResponse),
                   lambda r: r.error_code, 60)
    assert r.error_code == 0, err(r.error_code)
    return r.producer_id, r.producer_epoch


def txn_batch(pid: int, epoch: int, seq: int = 0) -> bytes:
    return build_batch([(b"k", b"txn")], producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                       is_transactional=True)


def txn_state(c: Conn, txn_id: str) -> dict[str, Any]:
    r = c.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, DescribeTransactionsRequest(transactional_ids=[txn_id]),
               DescribeTransactionsResponse)
    s = r.transaction_states[0]
    return {"error": err(s.error_code), "state": s.transaction_state,
            "partitions": sorted((t.topic, p) for t in s.topics for p in t.partitions)}


def tid(name: str) -> str:
    return f"probe-edges-{name}-{STATE['run']}"


def case_txn_no_txn_id(c: Conn) -> dict[str, Any]:
    pid, epoch = init_txn(c, tid("noid"))
    return {f"v{v}": produce(c, v, 0, txn_batch(pid, epoch)) for v in (11, 12)}


def case_txn_v11_not_added(c: Conn) -> dict[str, Any]:
    t = tid("v11")
    pid, epoch = init_txn(c, t)
    return {"produce v11, nothing added": produce(c, 11, 0, txn_batch(pid, epoch), t),
            "then": txn_state(c, t)}


def case_txn_v12_implicit_add(c: Conn) -> dict[str, Any]:
    t = tid("v12")
    pid, epoch = init_txn(c, t)
    out: dict[str, Any] = {"produce v12, nothing added": produce(c, 12, 0, txn_batch(pid, epoch), t),
                           "then": txn_state(c, t)}
    end = c.call(ApiKey.END_TXN, 5, EndTxnRequest(transactional_id=t, producer_id=pid,
                                                  producer_epoch=epoch, committed=True), EndTxnResponse)
    out["EndTxn v5 commit"] = {"error": err(end.error_code), "epoch": (
        "+1" if end.producer_epoch == epoch + 1 else end.producer_epoch - epoch)}
    # Kafka writes the markers after answering EndTxn: until they land, the partition still has
    # the transaction open at the old epoch and appends into it without asking the coordinator
    time.sleep(1)
    out["produce v12 at the old epoch, 1 s later"] = produce(c, 12, 0, txn_batch(pid, epoch, 1), t)
    return out


def case_txn_bad_producer(c: Conn) -> dict[str, Any]:
    t = tid("bad")
    pid, epoch = init_txn(c, t)
    return {"v12 epoch+5": produce(c, 12, 0, txn_batch(pid, epoch + 5), t),
            "v12 unknown producer id": produce(c, 12, 0, txn_batch(pid + 1000, 0), t),
            "v12 unknown transactional id": produce(c, 12, 0, txn_batch(pid, epoch), tid("nosuch")),
            "v12 non-transactional batch with a txn id": produce(
                c, 12, 0, build_batch([(b"k", b"v")], producer_id=pid, producer_epoch=epoch,
                                      base_sequence=0), t)}


# ------------------------------------------------------------ setup

def prepare(port: int) -> None:
    c = Conn(port)
    try:
        req = CreateTopicsRequest(timeout_ms=30000, topics=[
            CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=3, replication_factor=1)])
        r = c.call(ApiKey.CREATE_TOPICS, 7, req, CreateTopicsResponse)
        STATE["topic_id"] = r.topics[0].topic_id
        md = c.call(ApiKey.METADATA, 12, MetadataRequest(topics=[]), MetadataResponse)
        STATE["cluster_id"] = md.cluster_id
        STATE["run"] = int(time.time())
        time.sleep(1)
        for p in range(3):
            ok = produce(c, 11, p, build_batch([(b"k", f"v{p}".encode())]))
            assert ok["error"] == "NONE" or ok["error"] in {err(x) for x in RETRIABLE}, ok
    finally:
        c.close()


CASES = [
    Case("fetch-unknown-session", "Fetch v12 with session id 123456789 and epochs 1, 0, -1", case_unknown_session),
    Case("fetch-session0-epoch", "Fetch v12 with session id 0 and epochs 1, 7, -1", case_session0_with_epoch),
    Case("fetch-wrong-epoch", "full session, epoch 1, then 5 (expected 2), then 2, then 1 replayed", case_wrong_epoch),
    Case("fetch-close-reuse", "close a session (epoch -1), use its id again, open a new one over it",
         case_close_and_reuse),
    Case("fetch-incremental", "incremental fetches: nothing changed, forget a partition, a record on a kept "
         "and on the forgotten partition, add it back", case_incremental),
    Case("txn-no-txn-id", "Produce v11/v12 transactional batch with transactional_id null", case_txn_no_txn_id),
    Case("txn-v11-not-added", "Produce v11 transactional batch, no AddPartitionsToTxn", case_txn_v11_not_added),
    Case("txn-v12-implicit", "Produce v12 transactional batch, no AddPartitionsToTxn; EndTxn v5; old epoch after",
         case_txn_v12_implicit_add),
    Case("txn-bad-producer", "Produce v12 transactional: epoch+5, unknown producer id, unknown transactional id, "
         "a non-transactional batch", case_txn_bad_producer),
]


def main(argv: list[str] | None = None) -> int:
    ap = probing.probe_arguments("probe_edges", __doc__)
    ap.add_argument("--transaction-version", type=int, default=None,
                    help="finalize transaction.version at this level on both (default: the broker's, 2)")
    args = ap.parse_args(argv)
    tv = args.transaction_version
    features = None if tv is None else {"transaction.version": tv}
    return probing.compare_main(args, CASES, lambda target, cases: probing.run_cases(
        target, cases, prepare, probe="probe-edges", conn=Conn, features=features), fail_on_difference=True)


if __name__ == "__main__":
    sys.exit(main())
