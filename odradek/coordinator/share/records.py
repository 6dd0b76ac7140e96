"""The share-group records of `__consumer_offsets` (Kafka 4.4's formats, generated structs).

    10  ShareGroupMemberMetadata          group, member -> rack, client id and host,
                                          subscribed topic names
    11  ShareGroupMetadata                group -> group epoch, subscribed-topics hash
    12  ShareGroupTargetAssignmentMetadata  group -> assignment epoch, its time (tag 0)
    13  ShareGroupTargetAssignmentMember    group, member -> target partitions
    14  ShareGroupCurrentMemberAssignment   group, member -> epochs, state, partitions
    15  ShareGroupStatePartitionMetadata  group -> share-partitions whose state is being
                                          initialised, is initialised, is being deleted

The framing is the modern groups' (`group/modern.py`). Writing follows Kafka's order per
change (subscription, group epoch, target members then the assignment epoch, current
assignment); removing a member tombstones its current assignment, target and subscription;
removing a group tombstones its assignment epoch, state-partition metadata and group epoch.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from typing import Any

from odradek.coordinator.common import KeyValue
from odradek.coordinator.group.consumer.assignors import Assignment
from odradek.coordinator.group.modern import (
    check_value_version,
    encode_key,
    encode_value,
    sorted_parts,
)
from odradek.wire._generated.internal_share import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
)

MEMBER_METADATA = ShareGroupMemberMetadataKey.RECORD_TYPE  # 10
GROUP_METADATA = ShareGroupMetadataKey.RECORD_TYPE  # 11
TARGET_METADATA = ShareGroupTargetAssignmentMetadataKey.RECORD_TYPE  # 12
TARGET_MEMBER = ShareGroupTargetAssignmentMemberKey.RECORD_TYPE  # 13
CURRENT_ASSIGNMENT = ShareGroupCurrentMemberAssignmentKey.RECORD_TYPE  # 14
STATE_PARTITION_METADATA = ShareGroupStatePartitionMetadataKey.RECORD_TYPE  # 15

KEY_TYPES = frozenset({MEMBER_METADATA, GROUP_METADATA, TARGET_METADATA, TARGET_MEMBER,
                       CURRENT_ASSIGNMENT, STATE_PARTITION_METADATA})
_PER_MEMBER = {MEMBER_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT}
_KEY_CLASSES: dict[int, Any] = {
    MEMBER_METADATA: ShareGroupMemberMetadataKey,
    GROUP_METADATA: ShareGroupMetadataKey,
    TARGET_METADATA: ShareGroupTargetAssignmentMetadataKey,
    TARGET_MEMBER: ShareGroupTargetAssignmentMemberKey,
    CURRENT_ASSIGNMENT: ShareGroupCurrentMemberAssignmentKey,
    STATE_PARTITION_METADATA: ShareGroupStatePartitionMetadataKey,
}
_I16 = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class ShareKey:
    record_type: int
    group: str
    member_id: str = ""


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CurrentAssignment:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: Assignment


@dataclass(frozen=True, slots=True)
class StatePartitionMetadata:
    """Topic id -> (name, partitions) initialising / initialised; topic id -> name deleting."""

    initializing: dict[uuid.UUID, tuple[str, frozenset[int]]] = field(default_factory=dict)
    initialized: dict[uuid.UUID, tuple[str, frozenset[int]]] = field(default_factory=dict)
    deleting: dict[uuid.UUID, str] = field(default_factory=dict)


def key(record_type: int, group: str, member_id: str | None = None) -> bytes:
    cls = _KEY_CLASSES[record_type]
    k = cls(group_id=group) if member_id is None else cls(group_id=group, member_id=member_id)
    return encode_key(record_type, k)


def record_type_of(data: bytes | memoryview) -> int:
    return int(_I16.unpack_from(data, 0)[0])


def parse_key(data: bytes | memoryview) -> ShareKey:
    record_type = record_type_of(data)
    k, _ = _KEY_CLASSES[record_type].decode(data, record_type, 2)
    member = k.member_id if record_type in _PER_MEMBER else ""
    return ShareKey(record_type, str(k.group_id), str(member))


# -- group epoch --------------------------------------------------------------------------------


def group_epoch_record(group: str, epoch: int, metadata_hash: int) -> KeyValue:
    return key(GROUP_METADATA, group), encode_value(
        ShareGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash))


def parse_group_epoch(data: bytes | memoryview) -> tuple[int, int]:
    check_value_version(data, "ShareGroupMetadataValue")
    v, _ = ShareGroupMetadataValue.decode(data, 0, 2)
    return v.epoch, v.metadata_hash


# -- member subscription ------------------------------------------------------------------------


def member_record(group: str, member_id: str, sub: MemberSubscription) -> KeyValue:
    value = ShareGroupMemberMetadataValue(
        rack_id=sub.rack_id, client_id=sub.client_id, client_host=sub.client_host,
        subscribed_topic_names=list(sub.subscribed_topic_names))
    return key(MEMBER_METADATA, group, member_id), encode_value(value)


def parse_member(data: bytes | memoryview) -> MemberSubscription:
    check_value_version(data, "ShareGroupMemberMetadataValue")
    v, _ = ShareGroupMemberMetadataValue.decode(data, 0, 2)
    return MemberSubscription(v.rack_id, v.client_id, v.client_host,
                              tuple(v.subscribed_topic_names))


# -- target assignment --------------------------------------------------------------------------


def target_record(group: str, member_id: str, target: Assignment) -> KeyValue:
    tp = ShareGroupTargetAssignmentMemberValue.TopicPartition
    value = ShareGroupTargetAssignmentMemberValue(topic_partitions=[
        tp(topic_id=t, partitions=ps) for t, ps in sorted_parts(target)])
    return key(TARGET_MEMBER, group, member_id), encode_value(value)


def parse_target(data: bytes | memoryview) -> Assignment:
    check_value_version(data, "ShareGroupTargetAssignmentMemberValue")
    v, _ = ShareGroupTargetAssignmentMemberValue.decode(data, 0, 2)
    return {tp.topic_id: frozenset(tp.partitions) for tp in v.topic_partitions if tp.partitions}


def assignment_epoch_record(group: str, epoch: int, timestamp: int) -> KeyValue:
    value = ShareGroupTargetAssignmentMetadataValue(assignment_epoch=epoch,
                                                    assignment_timestamp=timestamp)
    return key(TARGET_METADATA, group), encode_value(value)


def parse_assignment_epoch(data: bytes | memoryview) -> tuple[int, int]:
    check_value_version(data, "ShareGroupTargetAssignmentMetadataValue")
    v, _ = ShareGroupTargetAssignmentMetadataValue.decode(data, 0, 2)
    return v.assignment_epoch, v.assignment_timestamp


# -- current assignment -------------------------------------------------------------------------


def current_record(group: str, member_id: str, current: CurrentAssignment) -> KeyValue:
    tp = ShareGroupCurrentMemberAssignmentValue.TopicPartitions
    value = ShareGroupCurrentMemberAssignmentValue(
        member_epoch=current.member_epoch, previous_member_epoch=current.previous_member_epoch,
        state=current.state,
        assigned_partitions=[tp(topic_id=t, partitions=ps)
                             for t, ps in sorted_parts(current.assigned)])
    return key(CURRENT_ASSIGNMENT, group, member_id), encode_value(value)


def parse_current(data: bytes | memoryview) -> CurrentAssignment:
    check_value_version(data, "ShareGroupCurrentMemberAssignmentValue")
    v, _ = ShareGroupCurrentMemberAssignmentValue.decode(data, 0, 2)
    return CurrentAssignment(v.member_epoch, v.previous_member_epoch, v.state,
                             {tp.topic_id: frozenset(tp.partitions)
                              for tp in v.assigned_partitions if tp.partitions})


# -- share-partition state metadata -------------------------------------------------------------


def state_partition_metadata_record(group: str, md: StatePartitionMetadata) -> KeyValue:
    cls = ShareGroupStatePartitionMetadataValue

    def parts(d: dict[uuid.UUID, tuple[str, frozenset[int]]]) -> list[Any]:
        return [cls.TopicPartitionsInfo(topic_id=t, topic_name=d[t][0],
                                        partitions=sorted(d[t][1])) for t in sorted(d)]

    value = cls(initializing_topics=parts(md.initializing),
                initialized_topics=parts(md.initialized),
                deleting_topics=[cls.TopicInfo(topic_id=t, topic_name=md.deleting[t])
                                 for t in sorted(md.deleting)])
    return key(STATE_PARTITION_METADATA, group), encode_value(value)


def parse_state_partition_metadata(data: bytes | memoryview) -> StatePartitionMetadata:
    check_value_version(data, "ShareGroupStatePartitionMetadataValue")
    v, _ = ShareGroupStatePartitionMetadataValue.decode(data, 0, 2)
    return StatePartitionMetadata(
        {t.topic_id: (t.topic_name, frozenset(t.partitions)) for t in v.initializing_topics},
        {t.topic_id: (t.topic_name, frozenset(t.partitions)) for t in v.initialized_topics},
        {t.topic_id: t.topic_name for t in v.deleting_topics})


def tombstone(record_type: int, group: str, member_id: str | None = None) -> KeyValue:
    return key(record_type, group, member_id), None
