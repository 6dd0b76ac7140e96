"""Raw-protocol probe of the newest versions of seven apis: the same requests to Odradek and
to Apache Kafka 4.4.

`python -m compat_tests.probe_versions [--target odradek|kafka|both] [--cases a,b] [--markdown FILE]`
`python -m compat_tests.probe_versions --java [--target ...]`: the Java 4.4 client instead
(java44/AdminVersionsProbe.java: admin listOffsets, classic and consumer-protocol consumers
committing and reading offsets, describe/delete groups, listTransactions by pattern), with
the versions of these apis it sent, seen by a recording proxy in front of the broker.

ListOffsets v11 (KIP-1023), OffsetCommit/OffsetFetch v10 (topic ids), DescribeGroups v6
(KIP-1043), DeleteGroups v3 (error messages), ApiVersions v5 (KIP-1242 cluster/node checks),
ListTransactions v2 (KIP-1152 pattern). Same machinery as `probe_kip848` (one connection per
case, answers normalised so the comparison is about behaviour).
"""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from compat_tests import probing
from compat_tests.probe_kip848 import Conn, join, new_id
from compat_tests.probing import RETRIABLE, Case, err
from odradek.wire._generated.api_keys import ApiKey
from odradek.wire._generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from odradek.wire._generated.create_topics import CreateTopicsRequest, CreateTopicsResponse
from odradek.wire._generated.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from odradek.wire._generated.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from odradek.wire._generated.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from odradek.wire._generated.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from odradek.wire._generated.join_group import JoinGroupRequest, JoinGroupResponse
from odradek.wire._generated.list_offsets import ListOffsetsRequest, ListOffsetsResponse
from odradek.wire._generated.list_transactions import (
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from odradek.wire._generated.metadata import MetadataRequest, MetadataResponse
from odradek.wire._generated.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from odradek.wire._generated.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from odradek.wire._generated.produce import ProduceRequest, ProduceResponse
from odradek.wire.records import build_batch

TOPIC = "probe-t"  # the kip848 helpers subscribe to this one
ZERO = uuid.UUID(int=0)
STATE: dict[str, Any] = {}  # per target: topic id, cluster id


def topic_id() -> uuid.UUID:
    return STATE["topic_id"]  # type: ignore[no-any-return]


def ids(u: uuid.UUID) -> str:
    if u == ZERO:
        return "zero"
    return "topic" if u == STATE.get("topic_id") else "other"


# ------------------------------------------------------------ ListOffsets

def list_offsets(c: Conn, version: int, ts: int) -> dict[str, Any]:
    req = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsRequest.ListOffsetsTopic(
        name=TOPIC, partitions=[ListOffsetsRequest.ListOffsetsPartition(partition_index=0, timestamp=ts)])])
    r = c.call(ApiKey.LIST_OFFSETS, version, req, ListOffsetsResponse)
    p = r.topics[0].partitions[0]
    return {"error": err(p.error_code), "offset": p.offset, "ts": p.timestamp, "epoch": p.leader_epoch}


# ------------------------------------------------------------ OffsetCommit / OffsetFetch

def commit(c: Conn, version: int, group: str, tid: uuid.UUID, partitions: tuple[int, ...] = (0,),
           generation: int = -1, member: str = "", name: str = TOPIC) -> Any:
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation, member_id=member,
                              topics=[OffsetCommitRequest.OffsetCommitRequestTopic(
                                  name=name, topic_id=tid, partitions=[
                                      OffsetCommitRequest.OffsetCommitRequestPartition(
                                          partition_index=p, committed_offset=5, committed_metadata="m")
                                      for p in partitions])])
    return c.retrying(lambda: c.call(ApiKey.OFFSET_COMMIT, version, req, OffsetCommitResponse),
                      lambda r: r.topics[0].partitions[0].error_code if r.topics else 0)


def commit_summary(r: Any, version: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for t in r.topics:
        key = ids(t.topic_id) if version >= 10 else t.name
        # sorted: Kafka lists a topic's refused partitions first, Odradek keeps the request's order
        out[key] = {p.partition_index: err(p.error_code) for p in sorted(t.partitions, key=lambda p: p.partition_index)}
    return out


def fetch(c: Conn, version: int, group: str, topics: list[tuple[uuid.UUID, list[int]]] | None,
          member: str | None = None, epoch: int = -1, name: str = TOPIC) -> Any:
    g = OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id=group, member_id=member, member_epoch=epoch,
        topics=None if topics is None else [OffsetFetchRequest.OffsetFetchRequestTopics(
            name=name, topic_id=tid, partition_indexes=parts) for tid, parts in topics])
    if topics is None:
        g.topics = None  # the generated constructor turns None into []
    req = OffsetFetchRequest(groups=[g], require_stable=True)
    return c.retrying(lambda: c.call(ApiKey.OFFSET_FETCH, version, req, OffsetFetchResponse),
                      lambda r: r.groups[0].error_code)


def fetch_summary(r: Any, version: int) -> dict[str, Any]:
    g = r.groups[0]
    out: dict[str, Any] = {"error": err(g.error_code)}
    for t in g.topics:
        key = ids(t.topic_id) if version >= 10 else (t.name if t.name == TOPIC else "other-name")
        if version >= 10 and t.name:
            key += f"(name={t.name!r})"
        out[key] = {p.partition_index: (err(p.error_code), p.committed_offset, p.metadata) for p in t.partitions}
    return out


def case_commit_v10(c: Conn) -> dict[str, Any]:
    g = f"pv-c10-{uuid.uuid4().hex[:6]}"
    r = commit(c, 10, g, topic_id(), (0, 1, 7))
    f = fetch(c, 10, g, [(topic_id(), [0, 1, 7])])
    fall = fetch(c, 10, g, None)
    f9 = fetch(c, 9, g, [(ZERO, [0])])
    return {"commit": commit_summary(r, 10), "fetch": fetch_summary(f, 10), "fetch-all": fetch_summary(fall, 10),
            "fetch v9": fetch_summary(f9, 9)}


def case_commit_v10_unknown_id(c: Conn) -> dict[str, Any]:
    g = f"pv-c10u-{uuid.uuid4().hex[:6]}"
    r = c.call(ApiKey.OFFSET_COMMIT, 10, OffsetCommitRequest(group_id=g, topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(topic_id=uuid.uuid4(), partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)]),
        OffsetCommitRequest.OffsetCommitRequestTopic(topic_id=ZERO, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)]),
        OffsetCommitRequest.OffsetCommitRequestTopic(topic_id=topic_id(), partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]),
        OffsetCommitResponse)
    f = fetch(c, 10, g, None)
    dg = c.call(ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=[g]), DescribeGroupsResponse)
    return {"commit": [(ids(t.topic_id), [err(p.error_code) for p in t.partitions]) for t in r.topics],
            "fetch-all": fetch_summary(f, 10), "group": dg.groups[0].group_state}


def case_commit_v10_only_unknown(c: Conn) -> dict[str, Any]:
    """Only unknown ids: is the group created anyway?"""
    g = f"pv-c10o-{uuid.uuid4().hex[:6]}"
    r = commit(c, 10, g, uuid.uuid4())
    dg = c.call(ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=[g]), DescribeGroupsResponse)
    return {"commit": [(ids(t.topic_id), [err(p.error_code) for p in t.partitions]) for t in r.topics],
            "group": dg.groups[0].group_state}


def case_fetch_v10_unknown_id(c: Conn) -> dict[str, Any]:
    g = f"pv-f10u-{uuid.uuid4().hex[:6]}"
    commit(c, 10, g, topic_id())
    f = fetch(c, 10, g, [(uuid.uuid4(), [0, 1]), (ZERO, [0]), (topic_id(), [0])])
    none = fetch(c, 10, f"pv-none-{uuid.uuid4().hex[:6]}", [(uuid.uuid4(), [0]), (topic_id(), [0])])
    return {"fetch": fetch_summary(f, 10), "no such group": fetch_summary(none, 10)}


def case_fetch_v10_deleted_topic(c: Conn) -> dict[str, Any]:
    """A committed topic deleted afterwards, fetched with topics null at v10 and v9."""
    from odradek.wire._generated.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse

    name = f"pv-del-{uuid.uuid4().hex[:6]}"
    cr = c.call(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(timeout_ms=30000, topics=[
        CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)]), CreateTopicsResponse)
    tid = cr.topics[0].topic_id
    time.sleep(1)
    g = f"pv-f10d-{uuid.uuid4().hex[:6]}"
    r = commit(c, 10, g, tid, name=name)
    commit(c, 10, g, topic_id())
    dr = c.call(ApiKey.DELETE_TOPICS, 6, DeleteTopicsRequest(timeout_ms=30000, topics=[
        DeleteTopicsRequest.DeleteTopicState(name=name)]), DeleteTopicsResponse)
    assert dr.responses[0].error_code == 0, err(dr.responses[0].error_code)
    time.sleep(2)
    fall = fetch(c, 10, g, None)
    f9 = fetch(c, 9, g, None)
    return {"commit": commit_summary(r, 10), "fetch-all v10": fetch_summary(fall, 10),
            "fetch-all v9": sorted(t.name == name for t in f9.groups[0].topics)}


def case_fetch_all(c: Conn) -> dict[str, Any]:
    """topics null at v8, v9, v10, with and without require_stable."""
    g = f"pv-fall-{uuid.uuid4().hex[:6]}"
    commit(c, 9, g, ZERO, (0, 1))
    out: dict[str, Any] = {}
    for v in (8, 9, 10):
        for stable in (False, True):
            grp = OffsetFetchRequest.OffsetFetchRequestGroup(group_id=g)
            grp.topics = None  # the generated constructor turns None into []
            r = c.call(ApiKey.OFFSET_FETCH, v, OffsetFetchRequest(groups=[grp], require_stable=stable),
                       OffsetFetchResponse)
            out[f"v{v} stable={stable}"] = fetch_summary(r, v)
    return out


def case_recreated_topic(c: Conn) -> dict[str, Any]:
    """Commit at v10 for a topic, delete it, recreate it under the same name (a new id)."""
    from odradek.wire._generated.delete_topics import DeleteTopicsRequest, DeleteTopicsResponse

    name = f"pv-rec-{uuid.uuid4().hex[:6]}"
    create = CreateTopicsRequest(timeout_ms=30000, topics=[
        CreateTopicsRequest.CreatableTopic(name=name, num_partitions=1, replication_factor=1)])
    old = c.call(ApiKey.CREATE_TOPICS, 7, create, CreateTopicsResponse).topics[0].topic_id
    time.sleep(1)
    g = f"pv-rec-{uuid.uuid4().hex[:6]}"
    commit(c, 10, g, old, name=name)
    dr = c.call(ApiKey.DELETE_TOPICS, 6, DeleteTopicsRequest(timeout_ms=30000, topics=[
        DeleteTopicsRequest.DeleteTopicState(name=name)]), DeleteTopicsResponse)
    assert dr.responses[0].error_code == 0, err(dr.responses[0].error_code)
    time.sleep(5)
    out: dict[str, Any] = {}
    STATE["old"] = old

    def summ(r: Any, v: int) -> Any:
        gr = r.groups[0]
        return [("old" if t.topic_id == old else ids(t.topic_id) if v >= 10 else t.name == name,
                 [(p.partition_index, err(p.error_code), p.committed_offset) for p in t.partitions])
                for t in gr.topics]
    out["after delete: all v10"] = summ(fetch(c, 10, g, None), 10)
    out["after delete: all v9"] = summ(fetch(c, 9, g, None), 9)
    out["after delete: old id v10"] = summ(fetch(c, 10, g, [(old, [0])]), 10)
    out["after delete: name v9"] = summ(fetch(c, 9, g, [(ZERO, [0])], name=name), 9)
    cr = c.call(ApiKey.CREATE_TOPICS, 7, create, CreateTopicsResponse).topics[0]
    assert cr.error_code == 0, err(cr.error_code)
    new = cr.topic_id
    time.sleep(2)
    out["recreated: all v10"] = [("new" if k == ids(new) and new != old else k, v)
                                 for k, v in summ(fetch(c, 10, g, None), 10)]
    out["recreated: new id v10"] = [("new" if t.topic_id == new else "?", [(p.partition_index, err(p.error_code),
                                     p.committed_offset) for p in t.partitions])
                                    for t in fetch(c, 10, g, [(new, [0])]).groups[0].topics]
    out["recreated: name v9"] = summ(fetch(c, 9, g, [(ZERO, [0])], name=name), 9)
    return out


def classic_join(c: Conn, group: str) -> tuple[str, int]:
    req = JoinGroupRequest(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                           member_id="", protocol_type="consumer", protocols=[
                               JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff")])
    r = c.retrying(lambda: c.call(ApiKey.JOIN_GROUP, 9, req, JoinGroupResponse), lambda r: r.error_code)
    if r.error_code == 79:  # MEMBER_ID_REQUIRED
        req.member_id = r.member_id
        r = c.call(ApiKey.JOIN_GROUP, 9, req, JoinGroupResponse)
    return r.member_id, r.generation_id


def case_classic_v10(c: Conn) -> dict[str, Any]:
    g = f"pv-cl-{uuid.uuid4().hex[:6]}"
    member, gen = classic_join(c, g)
    ok = commit(c, 10, g, topic_id(), generation=gen, member=member)
    bad = commit(c, 10, g, topic_id(), generation=gen + 1, member=member)
    unk = commit(c, 10, g, topic_id(), generation=gen, member="nobody")
    f = fetch(c, 10, g, [(topic_id(), [0])], member="nobody", epoch=99)
    return {"commit": commit_summary(ok, 10), "bad generation": commit_summary(bad, 10),
            "unknown member": commit_summary(unk, 10), "fetch (any member/epoch)": fetch_summary(f, 10)}


def case_consumer_v10(c: Conn) -> dict[str, Any]:
    g = f"pv-cg-{uuid.uuid4().hex[:6]}"
    hb = join(c, g)
    assert hb.error_code == 0, err(hb.error_code)
    m, e = hb.member_id, hb.member_epoch
    ok = commit(c, 10, g, topic_id(), generation=e, member=m)
    stale = commit(c, 10, g, topic_id(), generation=e + 1, member=m)
    unk = commit(c, 10, g, topic_id(), generation=e, member=new_id())
    f_ok = fetch(c, 10, g, [(topic_id(), [0])], member=m, epoch=e)
    f_stale = fetch(c, 10, g, [(topic_id(), [0])], member=m, epoch=e + 1)
    f_unk = fetch(c, 10, g, [(topic_id(), [0])], member=new_id(), epoch=e)
    f_admin = fetch(c, 10, g, None)
    return {"commit": commit_summary(ok, 10), "commit epoch+1": commit_summary(stale, 10),
            "commit unknown member": commit_summary(unk, 10),
            "fetch": fetch_summary(f_ok, 10), "fetch epoch+1": fetch_summary(f_stale, 10),
            "fetch unknown member": fetch_summary(f_unk, 10), "fetch admin": fetch_summary(f_admin, 10)}


def case_consumer_v10_errors_and_unknown_ids(c: Conn) -> dict[str, Any]:
    """A member error together with an unknown topic id, in OffsetCommit and OffsetFetch v10."""
    g = f"pv-cge-{uuid.uuid4().hex[:6]}"
    hb = join(c, g)
    assert hb.error_code == 0, err(hb.error_code)
    m, e = hb.member_id, hb.member_epoch
    req = OffsetCommitRequest(group_id=g, generation_id_or_member_epoch=e + 1, member_id=m, topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(topic_id=tid, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])
        for tid in (uuid.uuid4(), topic_id())])
    r = c.call(ApiKey.OFFSET_COMMIT, 10, req, OffsetCommitResponse)
    f = fetch(c, 10, g, [(uuid.uuid4(), [0]), (topic_id(), [0])], member=m, epoch=e + 1)
    return {"commit epoch+1": sorted((ids(t.topic_id), [err(p.error_code) for p in t.partitions]) for t in r.topics),
            "fetch epoch+1": fetch_summary(f, 10)}


def case_list_txns_v2_with_states(c: Conn) -> dict[str, Any]:
    r = c.call(ApiKey.LIST_TRANSACTIONS, 2, ListTransactionsRequest(
        transactional_id_pattern="txn-.*", state_filters=["Empty", "Nope"]), ListTransactionsResponse)
    bad = c.call(ApiKey.LIST_TRANSACTIONS, 2, ListTransactionsRequest(
        transactional_id_pattern="[", state_filters=["Nope"]), ListTransactionsResponse)
    return {"pattern+states": (err(r.error_code), r.unknown_state_filters,
                               sorted(t.transactional_id for t in r.transaction_states if t.transactional_id in TXN_IDS)),
            "bad pattern+unknown state": (err(bad.error_code), bad.unknown_state_filters, len(bad.transaction_states))}


# ------------------------------------------------------------ DescribeGroups / DeleteGroups

def describe(c: Conn, version: int, groups: list[str]) -> dict[str, dict[str, Any]]:
    """Keyed by group id: Kafka answers in its shards' order, not the request's."""
    r = c.call(ApiKey.DESCRIBE_GROUPS, version, DescribeGroupsRequest(groups=groups), DescribeGroupsResponse)
    return {d.group_id: {"error": err(d.error_code), "message": d.error_message, "state": d.group_state,
                         "type": d.protocol_type, "members": len(d.members),
                         "answers": sum(x.group_id == d.group_id for x in r.groups)}
            for d in r.groups}


def case_describe_v6(c: Conn) -> dict[str, Any]:
    cg = f"pv-dcg-{uuid.uuid4().hex[:6]}"
    assert join(c, cg).error_code == 0
    simple = f"pv-dsim-{uuid.uuid4().hex[:6]}"
    commit(c, 9, simple, ZERO)
    cl = f"pv-dcl-{uuid.uuid4().hex[:6]}"
    classic_join(c, cl)
    unknown = f"pv-dunk-{uuid.uuid4().hex[:6]}"
    out: dict[str, Any] = {}
    for v in (5, 6):
        names = {unknown: "<unknown>", cg: "<cg>", simple: "<simple>", cl: "<cl>"}
        found = describe(c, v, [unknown, cg, simple, cl, "", unknown])
        answers = {names.get(k, "<empty>"): _norm(a, names) for k, a in found.items()}
        out[f"v{v}"] = dict(sorted(answers.items()))  # Kafka answers in its shards' order
    return out


def _norm(obj: Any, names: dict[str, str]) -> Any:
    if isinstance(obj, dict):
        return {k: _norm(v, names) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_norm(v, names) for v in obj]
    if isinstance(obj, str):
        for n, r in names.items():
            obj = obj.replace(n, r)
    return obj


def delete(c: Conn, version: int, groups: list[str]) -> list[tuple[str, str, str | None]]:
    r = c.call(ApiKey.DELETE_GROUPS, version, DeleteGroupsRequest(groups_names=groups), DeleteGroupsResponse)
    return sorted((x.group_id, err(x.error_code), x.error_message) for x in r.results)


def case_delete_v3(c: Conn) -> dict[str, Any]:
    names: dict[str, str] = {}
    out: dict[str, Any] = {}
    for v in (2, 3):
        cg = f"pv-xcg-{uuid.uuid4().hex[:6]}"
        assert join(c, cg).error_code == 0
        cl = f"pv-xcl-{uuid.uuid4().hex[:6]}"
        classic_join(c, cl)
        simple = f"pv-xsim-{uuid.uuid4().hex[:6]}"
        commit(c, 9, simple, ZERO)
        unknown = f"pv-xunk-{uuid.uuid4().hex[:6]}"
        names.update({cg: "<cg>", cl: "<cl>", simple: "<simple>", unknown: "<unknown>"})
        out[f"v{v}"] = delete(c, v, [cg, cl, simple, unknown, unknown, ""])
    return {k: sorted(_norm(v, names)) for k, v in out.items()}  # Kafka answers in its shards' order


# ------------------------------------------------------------ ApiVersions

def api_versions(c: Conn, version: int, cluster: str | None, node: int) -> dict[str, Any]:
    req = ApiVersionsRequest(client_software_name="probe", client_software_version="1", cluster_id=cluster, node_id=node)
    r = c.call(ApiKey.API_VERSIONS, version, req, ApiVersionsResponse)
    keys = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    # how many apis and features each serves differs by nature: whether there are any is compared
    return {"error": err(r.error_code), "keys": bool(keys), "ApiVersions": keys.get(18),
            "features": bool(r.supported_features) if version >= 3 else None}


def case_api_versions_v5(c: Conn) -> dict[str, Any]:
    cid = STATE["cluster_id"]
    cases = {"none": (None, -1), "match": (cid, 1), "other cluster": ("AAAAAAAAAAAAAAAAAAAAAA", 1),
             "other node": (cid, 7), "cluster only": (cid, -1), "node only": (None, 1),
             "other cluster, no node": ("AAAAAAAAAAAAAAAAAAAAAA", -1), "empty cluster": ("", 1),
             "node -2 only": (None, -2), "cluster, node -2": (cid, -2)}
    out = {}
    for name, (cl, node) in cases.items():
        conn = Conn(c.sock.getpeername()[1])
        try:
            out[name] = api_versions(conn, 5, cl, node)
            try:  # does the broker keep the connection open after an error?
                out[name]["then metadata"] = len(conn.call(ApiKey.METADATA, 12, MetadataRequest(topics=[]),
                                                           MetadataResponse).brokers)
            except Exception as exc:
                out[name]["then metadata"] = type(exc).__name__
        finally:
            conn.close()
    out["v4 with nothing"] = api_versions(c, 4, None, -1)
    bad = ApiVersionsRequest(client_software_name="-bad", client_software_version="1",
                             cluster_id="AAAAAAAAAAAAAAAAAAAAAA", node_id=1)
    for v in (4, 5):
        r = c.call(ApiKey.API_VERSIONS, v, bad, ApiVersionsResponse)
        out[f"v{v} bad software name + other cluster"] = {"error": err(r.error_code), "keys": bool(r.api_keys)}
    return out


# ------------------------------------------------------------ ListTransactions

TXN_IDS = ["txn-a", "txn-b", "xtxn-c", "TXN-d", "txn.e", "a\nb"]


def list_txns(c: Conn, version: int, pattern: str | None) -> Any:
    r = c.call(ApiKey.LIST_TRANSACTIONS, version, ListTransactionsRequest(transactional_id_pattern=pattern),
               ListTransactionsResponse)
    if r.error_code:
        return err(r.error_code)
    return sorted(t.transactional_id for t in r.transaction_states if t.transactional_id in TXN_IDS)


def case_list_txns_v2(c: Conn) -> dict[str, Any]:
    patterns = [None, "", "txn-.*", "txn", "^txn", "txn-a|xtxn-c", ".*b$", "(?i)txn-d", "[", "a.b",
                "(?s)a.b", "txn-\\w", "\\btxn", "txn-[[:alpha:]]", "\\p{L}xn-a", "(?<n>txn)-a", "txn-a++",
                "x*", "(txn)\\1"]
    out = {repr(p): list_txns(c, 2, p) for p in patterns}
    out["v1 (pattern not sent)"] = list_txns(c, 1, "nomatch")
    return out


# ------------------------------------------------------------ setup

def prepare(port: int) -> None:
    c = Conn(port)
    try:
        req = CreateTopicsRequest(timeout_ms=30000, topics=[
            CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=2, replication_factor=1)])
        r = c.call(ApiKey.CREATE_TOPICS, 7, req, CreateTopicsResponse)
        STATE["topic_id"] = r.topics[0].topic_id
        md = c.call(ApiKey.METADATA, 12, MetadataRequest(topics=[]), MetadataResponse)
        STATE["cluster_id"] = md.cluster_id
        find = FindCoordinatorRequest(key_type=0, coordinator_keys=["probe"])
        c.retrying(lambda: c.call(ApiKey.FIND_COORDINATOR, 4, find, FindCoordinatorResponse),
                   lambda r: r.coordinators[0].error_code, 60)
        time.sleep(1)
        batch = build_batch([(b"k", b"v1"), (b"k", b"v2"), (b"k", b"v3")])
        c.call(ApiKey.PRODUCE, 9, ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
                ProduceRequest.PartitionProduceData(index=0, records=batch)])]), ProduceResponse)
        find = FindCoordinatorRequest(key_type=1, coordinator_keys=TXN_IDS)
        c.retrying(lambda: c.call(ApiKey.FIND_COORDINATOR, 4, find, FindCoordinatorResponse),
                   lambda r: max(x.error_code for x in r.coordinators), 60)
        for tid in TXN_IDS:
            ip = InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60000)
            res = c.retrying(lambda ip=ip: c.call(ApiKey.INIT_PRODUCER_ID, 5, ip, InitProducerIdResponse),
                             lambda r: r.error_code, 60)
            assert res.error_code == 0 or res.error_code in RETRIABLE, err(res.error_code)
    finally:
        c.close()


CASES = [
    Case("list_offsets_v11", "ListOffsets -6 (EARLIEST_PENDING_UPLOAD) at v11 and v10, -5 at v11",
         lambda c: {"v11 -6": list_offsets(c, 11, -6), "v10 -6": list_offsets(c, 10, -6),
                    "v11 -5": list_offsets(c, 11, -5), "v11 -4": list_offsets(c, 11, -4),
                    "v11 -7": list_offsets(c, 11, -7)}),
    Case("commit_v10", "OffsetCommit v10 by id (partitions 0,1,7), OffsetFetch v10 by id/all, v9 by name",
         case_commit_v10),
    Case("commit_v10_unknown_id", "OffsetCommit v10 with a random id, the zero id and the real id",
         case_commit_v10_unknown_id),
    Case("commit_v10_only_unknown", "OffsetCommit v10 with only a random id: group created?",
         case_commit_v10_only_unknown),
    Case("fetch_v10_unknown_id", "OffsetFetch v10 with a random id, the zero id, the real id",
         case_fetch_v10_unknown_id),
    Case("fetch_v10_deleted_topic", "OffsetFetch v10 topics null after a committed topic was deleted",
         case_fetch_v10_deleted_topic),
    Case("recreated_topic", "offsets of a deleted topic and of one recreated under its name", case_recreated_topic),
    Case("fetch_all", "OffsetFetch topics null at v8-10, require_stable off/on", case_fetch_all),
    Case("classic_v10", "classic group: OffsetCommit/OffsetFetch v10 generation/member checks",
         case_classic_v10),
    Case("consumer_v10", "consumer group: OffsetCommit/OffsetFetch v10 member epoch checks", case_consumer_v10),
    Case("consumer_v10_errors", "consumer group: a stale epoch with an unknown topic id, commit and fetch v10",
         case_consumer_v10_errors_and_unknown_ids),
    Case("list_txns_v2_states", "ListTransactions v2 pattern with state filters; a bad pattern with an unknown state",
         case_list_txns_v2_with_states),
    Case("describe_v6", "DescribeGroups v5 vs v6: unknown, consumer, simple, classic, empty id",
         case_describe_v6),
    Case("delete_v3", "DeleteGroups v2 vs v3: consumer with member, classic with member, simple, unknown x2, ''",
         case_delete_v3),
    Case("api_versions_v5", "ApiVersions v5 cluster id / node id combinations", case_api_versions_v5),
    Case("list_txns_v2", "ListTransactions v2 transactional id patterns", case_list_txns_v2),
]


JAVA_PROBE = Path(__file__).resolve().parent / "java44" / "AdminVersionsProbe.java"
WATCHED = {ApiKey.LIST_OFFSETS, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_GROUPS,
           ApiKey.DELETE_GROUPS, ApiKey.API_VERSIONS, ApiKey.LIST_TRANSACTIONS}


def run_java(target: str) -> tuple[list[str], dict[str, list[int]]]:
    """The Java 4.4 probe's answer lines, and the versions of the watched apis it sent (seen by
    a recording proxy the broker advertises, so every connection goes through it)."""
    import subprocess

    from compat_tests.brokers import java_classpath, make_broker
    from tools.capture_golden import RecordingProxy

    proxy = RecordingProxy()
    work = Path(tempfile.mkdtemp(prefix=f"probe-versions-java-{target}-"))
    broker = make_broker(target, work, {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"})
    print(f"starting {target} ...", file=sys.stderr)
    broker.start()
    try:
        proxy.upstream_port = broker.port
        proc = subprocess.run(["java", "-cp", java_classpath("clients-4.4"), str(JAVA_PROBE),
                               f"127.0.0.1:{proxy.port}", f"pv{uuid.uuid4().hex[:6]}"],
                              capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        lines = [ln for ln in proc.stdout.splitlines() if " = " in ln]
        if proc.returncode != 0:
            lines.append(f"probe exited {proc.returncode}: {proc.stderr[-600:]}")
        seen: dict[str, list[int]] = {}
        for key, version in sorted(proxy.take()):
            if key in WATCHED:
                seen.setdefault(ApiKey(key).name, []).append(version)
        return lines, seen
    finally:
        proxy.stop()
        broker.stop()


def main_java(targets: list[str]) -> int:
    answers = {t: run_java(t) for t in targets}
    for t, (lines, seen) in answers.items():
        print(f"## {t}\nversions sent: {seen}")
        print("\n".join(lines))
    if len(targets) == 2:
        (a, sa), (b, sb) = answers.values()
        print("## same lines:", a == b, "| same versions:", sa == sb)
        for x, y in zip(a, b, strict=False):
            if x != y:
                print(f"differs: {x!r} | {y!r}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = probing.probe_arguments("probe_versions", __doc__)
    ap.add_argument("--java", action="store_true",
                    help="run the Java 4.4 client probe (java44/AdminVersionsProbe.java) instead")
    args = ap.parse_args(argv)
    if args.java:
        return main_java(["odradek", "kafka"] if args.target == "both" else [args.target])
    return probing.compare_main(args, CASES, lambda target, cases: probing.run_cases(
        target, cases, prepare, probe="probe-versions", conn=Conn))


if __name__ == "__main__":
    sys.exit(main())
