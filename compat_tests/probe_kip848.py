"""Raw-protocol probe of KIP-848 edge cases: the same requests to Odradek and to Apache Kafka.

`python -m compat_tests.probe_kip848 [--target odradek|kafka|both] [--markdown FILE]
[--override KEY=VALUE ...]`

Starts each broker (compat_tests.brokers, the matrix's settings), sends every case's requests
on one connection with the project's wire layer (request header v1/v2 chosen from the api's
flexible versions, like a real client), and prints one line per case and target: the answer's
error code, its error message and the other fields that matter for the case. With both targets
it also says, per case, whether the two answers are the same; --markdown writes that table.
Member ids, epochs and similar values that differ by nature between runs are normalised
(shown as their shape: "<uuid22>", "epoch+1", ...) so the comparison is about behaviour.
"""

from __future__ import annotations

import struct
import sys
import time
import uuid
from typing import Any

from compat_tests import probing
from compat_tests.probing import Case, err
from odradek.wire._generated.add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
)
from odradek.wire._generated.api_keys import ApiKey
from odradek.wire._generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from odradek.wire._generated.create_topics import CreateTopicsRequest, CreateTopicsResponse
from odradek.wire._generated.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from odradek.wire._generated.error_codes import ErrorCode
from odradek.wire._generated.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from odradek.wire._generated.heartbeat import HeartbeatRequest, HeartbeatResponse
from odradek.wire._generated.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from odradek.wire._generated.join_group import JoinGroupRequest, JoinGroupResponse
from odradek.wire._generated.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from odradek.wire._generated.sync_group import SyncGroupRequest, SyncGroupResponse
from odradek.wire._generated.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)

TOPIC = "probe-t"
TOPIC2 = "probe-u"


class Conn(probing.Conn):
    """A probe connection with the consumer-group heartbeat this probe sends most."""

    client_id = "probe-kip848"

    def heartbeat(self, version: int = 1, **fields: Any) -> Any:
        fields.setdefault("rebalance_timeout_ms", 30000)
        req = ConsumerGroupHeartbeatRequest(**fields)
        return self.retrying(
            lambda: self.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, req, ConsumerGroupHeartbeatResponse),
            lambda r: r.error_code)


def subscription(topics: list[str]) -> bytes:
    """ConsumerProtocol subscription v0: version, topics, null user data."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


def assignment(topic: str, partitions: list[int]) -> bytes:
    """ConsumerProtocol assignment v0: version, [topic, partitions], null user data."""
    out = struct.pack(">hi", 0, 1) + struct.pack(">h", len(topic)) + topic.encode()
    out += struct.pack(">i", len(partitions)) + b"".join(struct.pack(">i", p) for p in partitions)
    return out + struct.pack(">i", -1)


def new_id() -> str:
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def gid(case: str) -> str:
    return f"probe-{case}-{uuid.uuid4().hex[:6]}"


def hb_summary(r: Any, epoch_base: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"error": err(r.error_code)}
    if r.error_message:
        out["message"] = r.error_message
    if r.error_code == 0:
        out["member_id"] = "<empty>" if not r.member_id else ("<22 chars>" if len(r.member_id) == 22 else f"<{len(r.member_id)} chars>")
        out["epoch"] = r.member_epoch if epoch_base is None else f"epoch{r.member_epoch - epoch_base:+d}"
        if r.assignment is not None:
            out["assigned"] = sum(len(tp.partitions) for tp in r.assignment.topic_partitions)
    return out


# ------------------------------------------------------------------ cases

def join(c: Conn, group: str, version: int = 1, **extra: Any) -> Any:
    fields: dict[str, Any] = {"group_id": group, "member_id": new_id() if version >= 1 else "",
                              "member_epoch": 0, "subscribed_topic_names": [TOPIC], "topic_partitions": []}
    fields.update(extra)
    return c.heartbeat(version, **fields)


def case_v1_empty_member(c: Conn) -> dict[str, Any]:
    return hb_summary(join(c, gid("v1empty"), 1, member_id=""))


def case_v0_empty_member(c: Conn) -> dict[str, Any]:
    return hb_summary(join(c, gid("v0empty"), 0, member_id=""))


def case_join_null_partitions(c: Conn) -> dict[str, Any]:
    return hb_summary(join(c, gid("nullparts"), topic_partitions=None))


def owned(r: Any) -> list[Any]:
    if r.assignment is None:
        return []
    return [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=tp.topic_id, partitions=list(tp.partitions))
            for tp in r.assignment.topic_partitions]


def case_stale_epoch(c: Conn) -> dict[str, Any]:
    """Join at epoch E, grow the subscription by a topic until the member is at E+1, then send
    E (its previous epoch) with owned partitions a subset and not a subset, and E+2."""
    g = gid("stale")
    first = join(c, g)
    assert first.error_code == 0, err(first.error_code)
    mine, base, member = owned(first), first.member_epoch, first.member_id
    epoch, subscribed = base, False
    end = time.monotonic() + 15
    while epoch < base + 1 and time.monotonic() < end:
        r = c.heartbeat(1, group_id=g, member_id=member, member_epoch=epoch, topic_partitions=mine,
                        subscribed_topic_names=None if subscribed else [TOPIC, TOPIC2])
        subscribed = True
        assert r.error_code == 0, (err(r.error_code), r.error_message)
        epoch = r.member_epoch
        if r.assignment is not None:
            mine = owned(r)
        time.sleep(0.2)
    assert epoch == base + 1, f"epoch {epoch} after joining at {base}"
    bogus = [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=mine[0].topic_id, partitions=[0, 1, 7])]
    out: dict[str, Any] = {}
    for label, e, parts in (("E (previous), owned a subset", base, mine[:1]),
                            ("E (previous), owned not a subset", base, bogus),
                            ("E+2 (greater)", base + 2, mine)):
        r = c.heartbeat(1, group_id=g, member_id=member, member_epoch=e, topic_partitions=parts)
        answer = hb_summary(r, base)
        if "message" in answer:  # the epochs in it are absolute: show them relative to E
            answer["message"] = answer["message"].replace(f"({base + 2})", "(E+2)").replace(
                f"({base + 1})", "(E+1)").replace(f"({base})", "(E)")
        out[label] = answer
    return out


def case_unknown_assignor(c: Conn) -> dict[str, Any]:
    return hb_summary(join(c, gid("assignor"), server_assignor="no-such-assignor"))


def case_regex_valid(c: Conn) -> dict[str, Any]:
    g = gid("regex")
    r = join(c, g, subscribed_topic_names=None, subscribed_topic_regex="probe-.*")
    out = {"join": hb_summary(r)}
    if r.error_code == 0:
        # The regex is resolved asynchronously on Kafka: heartbeat until partitions come.
        end = time.monotonic() + 15
        epoch = r.member_epoch
        while time.monotonic() < end:
            h = c.heartbeat(1, group_id=g, member_id=r.member_id, member_epoch=epoch)
            if h.error_code != 0:
                out["later"] = hb_summary(h)
                break
            epoch = h.member_epoch
            if h.assignment is not None and h.assignment.topic_partitions:
                out["later"] = {"assigned": sum(len(tp.partitions) for tp in h.assignment.topic_partitions)}
                break
            time.sleep(0.5)
        else:
            out["later"] = "no assignment within 15 s"
    return out


def case_regex_invalid(c: Conn) -> dict[str, Any]:
    return hb_summary(join(c, gid("badregex"), subscribed_topic_names=None, subscribed_topic_regex="probe-[.*"))


def case_no_subscription(c: Conn) -> dict[str, Any]:
    return hb_summary(join(c, gid("nosub"), subscribed_topic_names=None, subscribed_topic_regex=None))


def offset_commit(c: Conn, group: str, epoch: int, member: str, version: int = 9) -> Any:
    req = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=epoch, member_id=member, topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=TOPIC, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])])
    return c.retrying(lambda: c.call(ApiKey.OFFSET_COMMIT, version, req, OffsetCommitResponse),
                      lambda r: r.topics[0].partitions[0].error_code)


def case_offset_commit_no_group(c: Conn) -> dict[str, Any]:
    out = {}
    for label, epoch, member in (("member epoch 3, member x", 3, "x"), ("epoch -1, no member (admin)", -1, "")):
        r = offset_commit(c, gid("nogroup"), epoch, member)
        out[label] = err(r.topics[0].partitions[0].error_code)
    return out


def case_describe_groups(c: Conn) -> dict[str, Any]:
    g = gid("describe")
    first = join(c, g)
    assert first.error_code == 0, err(first.error_code)
    req = DescribeGroupsRequest(groups=[g], include_authorized_operations=False)
    r = c.call(ApiKey.DESCRIBE_GROUPS, 5, req, DescribeGroupsResponse)
    d = r.groups[0]
    out: dict[str, Any] = {"error": err(d.error_code), "state": d.group_state, "protocol_type": d.protocol_type,
                           "protocol_data": d.protocol_data, "members": len(d.members)}
    if d.error_message:
        out["message"] = d.error_message
    if d.members:
        m = d.members[0]
        out["member"] = {"same_id": m.member_id == first.member_id, "client_id": m.client_id,
                         "metadata_bytes": len(m.member_metadata), "assignment_bytes": len(m.member_assignment)}
    return out


def case_txn_offset_commit_stale(c: Conn) -> dict[str, Any]:
    g = gid("txn")
    first = join(c, g)
    assert first.error_code == 0, err(first.error_code)
    txn = f"probe-txn-{uuid.uuid4().hex[:6]}"
    find = FindCoordinatorRequest(key_type=1, coordinator_keys=[txn])
    c.retrying(lambda: c.call(ApiKey.FIND_COORDINATOR, 4, find, FindCoordinatorResponse),
               lambda r: r.coordinators[0].error_code)
    init = InitProducerIdRequest(transactional_id=txn, transaction_timeout_ms=60000)
    pid = c.retrying(lambda: c.call(ApiKey.INIT_PRODUCER_ID, 4, init, InitProducerIdResponse), lambda r: r.error_code)
    assert pid.error_code == 0, err(pid.error_code)
    add = AddOffsetsToTxnRequest(transactional_id=txn, producer_id=pid.producer_id, producer_epoch=pid.producer_epoch, group_id=g)
    a = c.call(ApiKey.ADD_OFFSETS_TO_TXN, 3, add, AddOffsetsToTxnResponse)
    out: dict[str, Any] = {"add_offsets": err(a.error_code)}
    for label, epoch in (("stale epoch", first.member_epoch - 1), ("current epoch", first.member_epoch)):
        req = TxnOffsetCommitRequest(
            transactional_id=txn, group_id=g, producer_id=pid.producer_id, producer_epoch=pid.producer_epoch,
            generation_id_or_member_epoch=epoch, member_id=first.member_id, topics=[
                TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=TOPIC, partitions=[
                    TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1)])])
        r = c.call(ApiKey.TXN_OFFSET_COMMIT, 4, req, TxnOffsetCommitResponse)
        out[label] = err(r.topics[0].partitions[0].error_code)
    return out


def classic_join(c: Conn, group: str, member: str = "") -> Any:
    req = JoinGroupRequest(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000, member_id=member,
                           protocol_type="consumer", protocols=[
                               JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription([TOPIC]))])
    return c.retrying(lambda: c.call(ApiKey.JOIN_GROUP, 9, req, JoinGroupResponse), lambda r: r.error_code)


def join_summary(r: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"error": err(r.error_code)}
    if r.error_code == 0:
        out.update(generation=r.generation_id, protocol=r.protocol_name, leader=r.leader == r.member_id,
                   skip_assignment=r.skip_assignment, members=len(r.members))
    elif r.member_id:
        out["member_id_given"] = True
    return out


def case_classic_join_consumer_group(c: Conn) -> dict[str, Any]:
    g = gid("mig1")
    first = join(c, g)
    assert first.error_code == 0, err(first.error_code)
    r1 = classic_join(c, g)
    out = {"join (no member id)": join_summary(r1)}
    if r1.error_code == ErrorCode.MEMBER_ID_REQUIRED:
        r2 = classic_join(c, g, r1.member_id)
        out["join (its member id)"] = join_summary(r2)
    return out


def case_heartbeat_classic_group(c: Conn) -> dict[str, Any]:
    g = gid("mig2")
    r1 = classic_join(c, g)
    r2 = classic_join(c, g, r1.member_id) if r1.error_code == ErrorCode.MEMBER_ID_REQUIRED else r1
    assert r2.error_code == 0, err(r2.error_code)
    sync = SyncGroupRequest(group_id=g, generation_id=r2.generation_id, member_id=r2.member_id, protocol_type="consumer",
                            protocol_name=r2.protocol_name, assignments=[
                                SyncGroupRequest.SyncGroupRequestAssignment(member_id=r2.member_id,
                                                                            assignment=assignment(TOPIC, [0, 1]))])
    s = c.call(ApiKey.SYNC_GROUP, 5, sync, SyncGroupResponse)
    assert s.error_code == 0, err(s.error_code)
    out = {"classic group": "Stable, 1 member"}
    out["heartbeat join"] = hb_summary(join(c, g))
    desc = c.call(ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=[g]), DescribeGroupsResponse).groups[0]
    out["then DescribeGroups"] = {"error": err(desc.error_code), "state": desc.group_state,
                                  "protocol_type": desc.protocol_type, "members": len(desc.members)}
    return out


def classic_heartbeat(c: Conn, group: str, member: str, generation: int) -> str:
    req = HeartbeatRequest(group_id=group, member_id=member, generation_id=generation)
    return err(c.call(ApiKey.HEARTBEAT, 4, req, HeartbeatResponse).error_code)


def classic_sync(c: Conn, group: str, r: Any, assignments: dict[str, bytes] | None = None) -> Any:
    req = SyncGroupRequest(group_id=group, generation_id=r.generation_id, member_id=r.member_id,
                           protocol_type="consumer", protocol_name=r.protocol_name, assignments=[
                               SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                               for m, a in (assignments or {}).items()])
    return c.call(ApiKey.SYNC_GROUP, 5, req, SyncGroupResponse)


def case_downgrade(c: Conn) -> dict[str, Any]:
    """Upgrade by a heartbeat join, the classic member rejoins inside the consumer group, then
    the consumer-protocol member leaves: the answers the classic member gets on the way."""
    g = gid("mig3")
    r1 = classic_join(c, g)
    r2 = classic_join(c, g, r1.member_id) if r1.error_code == ErrorCode.MEMBER_ID_REQUIRED else r1
    assert r2.error_code == 0, err(r2.error_code)
    s = classic_sync(c, g, r2, {r2.member_id: assignment(TOPIC, [0, 1])})
    assert s.error_code == 0, err(s.error_code)
    gen1 = r2.generation_id
    out: dict[str, Any] = {"classic group": f"Stable, generation {gen1}"}
    hb = join(c, g)
    out["heartbeat join (upgrade)"] = hb_summary(hb, gen1)
    out["classic Heartbeat (its generation)"] = classic_heartbeat(c, g, r2.member_id, gen1)
    rj = classic_join(c, g, r2.member_id)
    out["classic JoinGroup again"] = {"error": err(rj.error_code),
                                      "generation": f"gen+{rj.generation_id - gen1}",
                                      "leader": rj.leader == rj.member_id, "members": len(rj.members)}
    sy = classic_sync(c, g, rj)
    out["classic SyncGroup"] = {"error": err(sy.error_code), "assignment_bytes": len(sy.assignment)}
    out["classic Heartbeat (new generation)"] = classic_heartbeat(c, g, rj.member_id, rj.generation_id)
    epoch = hb.member_epoch
    for _ in range(5):  # the consumer member acknowledges what it was given
        later = c.heartbeat(1, group_id=g, member_id=hb.member_id, member_epoch=epoch,
                            topic_partitions=[])
        epoch = later.member_epoch if later.error_code == 0 else epoch
    leave = c.heartbeat(1, group_id=g, member_id=hb.member_id, member_epoch=-1)
    out["consumer member leaves"] = hb_summary(leave)
    out["classic Heartbeat after the downgrade"] = classic_heartbeat(c, g, rj.member_id,
                                                                      rj.generation_id)
    desc = c.call(ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=[g]),
                  DescribeGroupsResponse).groups[0]
    out["then DescribeGroups"] = {"error": err(desc.error_code), "state": desc.group_state,
                                  "protocol_type": desc.protocol_type, "members": len(desc.members)}
    again = classic_join(c, g, rj.member_id)
    out["classic JoinGroup after the downgrade"] = {
        "error": err(again.error_code), "generation": f"gen+{again.generation_id - gen1}",
        "leader": again.leader == again.member_id}
    return out


def case_downgrade_before_rejoin(c: Conn) -> dict[str, Any]:
    """The consumer-protocol member leaves before the classic member rejoined the upgraded
    group (its generation is behind the group epoch)."""
    g = gid("mig4")
    r1 = classic_join(c, g)
    r2 = classic_join(c, g, r1.member_id) if r1.error_code == ErrorCode.MEMBER_ID_REQUIRED else r1
    assert r2.error_code == 0, err(r2.error_code)
    s = classic_sync(c, g, r2, {r2.member_id: assignment(TOPIC, [0, 1])})
    assert s.error_code == 0, err(s.error_code)
    gen1 = r2.generation_id
    hb = join(c, g)
    out: dict[str, Any] = {"heartbeat join (upgrade)": hb_summary(hb, gen1)}
    leave = c.heartbeat(1, group_id=g, member_id=hb.member_id, member_epoch=-1)
    out["consumer member leaves"] = hb_summary(leave)
    out["classic Heartbeat (generation G)"] = classic_heartbeat(c, g, r2.member_id, gen1)
    out["classic Heartbeat (generation G+1)"] = classic_heartbeat(c, g, r2.member_id, gen1 + 1)
    desc = c.call(ApiKey.DESCRIBE_GROUPS, 5, DescribeGroupsRequest(groups=[g]),
                  DescribeGroupsResponse).groups[0]
    out["then DescribeGroups"] = {"error": err(desc.error_code), "state": desc.group_state,
                                  "protocol_type": desc.protocol_type, "members": len(desc.members)}
    return out


def case_rejoin_epoch0(c: Conn) -> dict[str, Any]:
    g = gid("rejoin")
    first = join(c, g)
    assert first.error_code == 0, err(first.error_code)
    base = first.member_epoch
    again = c.heartbeat(1, group_id=g, member_id=first.member_id, member_epoch=0, subscribed_topic_names=[TOPIC],
                        topic_partitions=[])
    out = {"first join": hb_summary(first), "same member id, epoch 0 again": hb_summary(again, base)}
    return out


def case_commit_assignment_epoch(c: Conn) -> dict[str, Any]:
    """KIP-1251 (Kafka 4.3+): join at epoch E owning probe-t, grow the subscription by probe-u
    until the member is at E+1 (probe-t kept, assigned at E; probe-u assigned at E+1), then
    OffsetCommit v9 with E for probe-t and for probe-u, and with E+1 for both."""
    g = gid("commitepoch")
    first = join(c, g)
    assert first.error_code == 0, err(first.error_code)
    mine, base, member = owned(first), first.member_epoch, first.member_id
    epoch, subscribed = base, False
    end = time.monotonic() + 15
    while (epoch < base + 1 or sum(len(tp.partitions) for tp in mine) < 3) and time.monotonic() < end:
        r = c.heartbeat(1, group_id=g, member_id=member, member_epoch=epoch, topic_partitions=mine,
                        subscribed_topic_names=None if subscribed else [TOPIC, TOPIC2])
        subscribed = True
        assert r.error_code == 0, (err(r.error_code), r.error_message)
        epoch = r.member_epoch
        if r.assignment is not None:
            mine = owned(r)
        time.sleep(0.2)
    assert epoch == base + 1, f"epoch {epoch} after joining at {base}"
    out: dict[str, Any] = {}
    for label, e, topic in (("E, probe-t (assigned at E)", base, TOPIC),
                            ("E, probe-u (assigned at E+1)", base, TOPIC2),
                            ("E+1, probe-t", base + 1, TOPIC), ("E+1, probe-u", base + 1, TOPIC2)):
        req = OffsetCommitRequest(group_id=g, generation_id_or_member_epoch=e, member_id=member, topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
                OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=0)])])
        resp = c.call(ApiKey.OFFSET_COMMIT, 9, req, OffsetCommitResponse)
        out[label] = err(resp.topics[0].partitions[0].error_code)
    return out


def _assigned(r: Any) -> int | None:
    """How many partitions a heartbeat answer assigns (None: no Assignment in the answer)."""
    return None if r.assignment is None else sum(len(tp.partitions) for tp in r.assignment.topic_partitions)


def case_subscription_change(c: Conn) -> dict[str, Any]:
    """Kafka 4.3+ computes a group's target assignment at most once per
    group.consumer.assignment.interval.ms (1000 ms): join at E owning probe-t, then at once
    add probe-u to the subscription, then swap probe-t for probe-u (the member must give up
    probe-t at once), acknowledge, and after 1.1 s heartbeat again."""
    g = gid("subchange")
    first = join(c, g)
    assert first.error_code == 0, err(first.error_code)
    base, member = first.member_epoch, first.member_id
    out: dict[str, Any] = {"join [t]": {"epoch": "E", "assigned": _assigned(first)}}

    def step(label: str, **fields: Any) -> Any:
        r = c.heartbeat(1, group_id=g, member_id=member, **fields)
        assert r.error_code == 0, (label, err(r.error_code), r.error_message)
        out[label] = {"epoch": f"E{r.member_epoch - base:+d}", "assigned": _assigned(r)}
        return r

    mine = owned(first)
    r = step("add u: [t, u]", member_epoch=base, subscribed_topic_names=[TOPIC, TOPIC2], topic_partitions=mine)
    r = step("swap: [u]", member_epoch=r.member_epoch, subscribed_topic_names=[TOPIC2], topic_partitions=mine)
    r = step("ack (owns nothing)", member_epoch=r.member_epoch, topic_partitions=[])
    time.sleep(1.1)
    r = step("1.1 s later", member_epoch=r.member_epoch, topic_partitions=[])
    return out


def case_rejoin_after_leave(c: Conn) -> dict[str, Any]:
    """Join at E, leave (epoch -1), rejoin with the same member id and epoch 0 at once, and
    heartbeat again 1.1 s later (the interval counts from the group's last target)."""
    g = gid("leaverejoin")
    first = join(c, g)
    assert first.error_code == 0, err(first.error_code)
    base, member = first.member_epoch, first.member_id
    out: dict[str, Any] = {"join": {"epoch": "E", "assigned": _assigned(first)}}
    left = c.heartbeat(1, group_id=g, member_id=member, member_epoch=-1, rebalance_timeout_ms=-1)
    out["leave"] = hb_summary(left)
    again = join(c, g, member_id=member)
    out["rejoin at once"] = {"error": err(again.error_code), "epoch": f"E{again.member_epoch - base:+d}",
                             "assigned": _assigned(again)}
    time.sleep(1.1)
    later = c.heartbeat(1, group_id=g, member_id=member, member_epoch=again.member_epoch, topic_partitions=[],
                        rebalance_timeout_ms=-1)
    out["1.1 s later"] = {"error": err(later.error_code), "epoch": f"E{later.member_epoch - base:+d}",
                          "assigned": _assigned(later)}
    return out


def case_second_member_within_interval(c: Conn) -> dict[str, Any]:
    """m1 joins (E, both partitions of probe-t); m2 joins at once; m1 heartbeats at once and
    again 1.1 s later (the target that splits probe-t waits for the interval)."""
    g = gid("second")
    first = join(c, g)
    assert first.error_code == 0, err(first.error_code)
    base = first.member_epoch
    out: dict[str, Any] = {"m1 join": {"epoch": "E", "assigned": _assigned(first)}}
    second = join(c, g)
    out["m2 join at once"] = {"error": err(second.error_code), "epoch": f"E{second.member_epoch - base:+d}",
                              "assigned": _assigned(second)}
    mine = owned(first)
    for label, pause in (("m1 at once", 0.0), ("m1 1.1 s later", 1.1)):
        time.sleep(pause)
        r = c.heartbeat(1, group_id=g, member_id=first.member_id, member_epoch=base, topic_partitions=mine,
                        rebalance_timeout_ms=-1)
        out[label] = {"error": err(r.error_code), "epoch": f"E{r.member_epoch - base:+d}", "assigned": _assigned(r)}
    return out


def case_rejoin_not_full(c: Conn) -> dict[str, Any]:
    """What librdkafka 2.12 sends when a leave left it in join-state steady with a
    subscription pending: epoch 0 with its old member id, topic names and an empty regex, but
    RebalanceTimeoutMs -1 and TopicPartitions null (a heartbeat that is not a full one)."""
    g = gid("rejoinnotfull")
    first = join(c, g)
    assert first.error_code == 0, err(first.error_code)
    c.heartbeat(1, group_id=g, member_id=first.member_id, member_epoch=-1, rebalance_timeout_ms=-1)
    r = c.heartbeat(1, group_id=g, member_id=first.member_id, member_epoch=0, rebalance_timeout_ms=-1,
                    subscribed_topic_names=[TOPIC], subscribed_topic_regex="", topic_partitions=None)
    return hb_summary(r)


CASES = [
    Case("hb-v1-empty-member", "ConsumerGroupHeartbeat v1 join with an empty member id", case_v1_empty_member),
    Case("hb-v0-empty-member", "ConsumerGroupHeartbeat v0 join with an empty member id", case_v0_empty_member),
    Case("hb-join-null-partitions", "join (epoch 0) with TopicPartitions null", case_join_null_partitions),
    Case("hb-stale-epoch", "at epoch E+1: heartbeat with E (its previous epoch; owned partitions a subset / not a subset) and with E+2", case_stale_epoch),
    Case("hb-unknown-assignor", "join with ServerAssignor 'no-such-assignor'", case_unknown_assignor),
    Case("hb-regex-valid", "join with SubscribedTopicRegex 'probe-.*' (and no topic names)", case_regex_valid),
    Case("hb-regex-invalid", "join with SubscribedTopicRegex 'probe-[.*'", case_regex_invalid),
    Case("hb-no-subscription", "join with SubscribedTopicNames and SubscribedTopicRegex both null", case_no_subscription),
    Case("offset-commit-v9-no-group", "OffsetCommit v9 to a group that does not exist", case_offset_commit_no_group),
    Case("describe-groups-v5-consumer", "DescribeGroups v5 on a consumer group with one member", case_describe_groups),
    Case("txn-offset-commit-stale", "TxnOffsetCommit v4 for a consumer group member at epoch E: with E-1 and with E",
         case_txn_offset_commit_stale),
    Case("classic-join-consumer-group", "classic JoinGroup v9 to a consumer group with one member",
         case_classic_join_consumer_group),
    Case("heartbeat-classic-group", "ConsumerGroupHeartbeat join to a Stable classic group with one member",
         case_heartbeat_classic_group),
    Case("rejoin-epoch-0", "dynamic member heartbeats again with its member id and epoch 0", case_rejoin_epoch0),
    Case("commit-assignment-epoch", "OffsetCommit v9 at epoch E+1 with the previous epoch E, for a partition "
         "assigned at E and one assigned at E+1 (KIP-1251)", case_commit_assignment_epoch),
    Case("subscription-change", "join at E owning probe-t; at once add probe-u, swap probe-t for probe-u, "
         "acknowledge; heartbeat 1.1 s later (group.consumer.assignment.interval.ms)", case_subscription_change),
    Case("rejoin-after-leave", "join at E, leave (-1), rejoin at once with the same member id and epoch 0; "
         "heartbeat 1.1 s later", case_rejoin_after_leave),
    Case("second-member-within-interval", "m1 joins; m2 joins at once; m1 heartbeats at once and 1.1 s "
         "later", case_second_member_within_interval),
    Case("rejoin-not-full", "after a leave: epoch 0 with the old member id and topic names, "
         "RebalanceTimeoutMs -1, TopicPartitions null (librdkafka 2.12 after its 0045 race)",
         case_rejoin_not_full),
    Case("downgrade", "classic member (gen G) upgraded by a heartbeat join, rejoins inside the consumer "
         "group; the consumer member leaves: what the classic member's calls get", case_downgrade),
    Case("downgrade-before-rejoin", "classic member (gen G) upgraded by a heartbeat join; the consumer "
         "member leaves before the classic one rejoined", case_downgrade_before_rejoin),
]


def prepare(port: int) -> None:
    c = Conn(port)
    try:
        req = CreateTopicsRequest(timeout_ms=30000, topics=[
            CreateTopicsRequest.CreatableTopic(name=TOPIC, num_partitions=2, replication_factor=1),
            CreateTopicsRequest.CreatableTopic(name=TOPIC2, num_partitions=1, replication_factor=1)])
        r = c.call(ApiKey.CREATE_TOPICS, 7, req, CreateTopicsResponse)
        for t in r.topics:
            assert t.error_code in (0, ErrorCode.TOPIC_ALREADY_EXISTS), err(t.error_code)
        find = FindCoordinatorRequest(key_type=0, coordinator_keys=["probe"])
        c.retrying(lambda: c.call(ApiKey.FIND_COORDINATOR, 4, find, FindCoordinatorResponse),
                   lambda r: r.coordinators[0].error_code, 60)
        time.sleep(1)  # let the new topic reach the group coordinator's metadata image
    finally:
        c.close()


def main(argv: list[str] | None = None) -> int:
    ap = probing.probe_arguments("probe_kip848", __doc__)
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker setting for both targets (e.g. group.consumer.migration.policy=disabled)")
    args = ap.parse_args(argv)
    overrides = dict(kv.split("=", 1) for kv in args.override)
    return probing.compare_main(args, CASES, lambda target, cases: probing.run_cases(
        target, cases, prepare, probe="probe-kip848", conn=Conn, overrides=overrides))


if __name__ == "__main__":
    sys.exit(main())
