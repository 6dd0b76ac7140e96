"""The KIP-848 records of `__consumer_offsets` (Kafka's formats, generated structs).

Each key is `int16 version | struct`, the version being the record type; each value is
`int16 0 | struct` (flexible). A null value is a tombstone.

    3  ConsumerGroupMetadata            group -> group epoch, metadata hash (tag 0)
    4  ConsumerGroupPartitionMetadata   group -> subscribed topics' metadata (Kafka < 4.1;
                                        read and ignored, never written: 4.1+ keeps a hash)
    5  ConsumerGroupMemberMetadata      group, member -> subscription, client, timeouts;
                                        a classic member's session timeout and JoinGroup
                                        protocols (tag 0)
    6  ConsumerGroupTargetAssignmentMetadata  group -> assignment epoch
    7  ConsumerGroupTargetAssignmentMember    group, member -> target partitions
    8  ConsumerGroupCurrentMemberAssignment   group, member -> epochs, state, partitions
   16  ConsumerGroupRegularExpression   group, regex -> resolved topics, metadata version,
                                        resolution time

Writing a group follows Kafka's order per change (member subscription, group epoch, target
assignment members then its epoch, current assignments); removing a member tombstones its
current assignment, target and subscription, in that order (and the regex it alone used);
removing a group then tombstones its target-assignment epoch, partition metadata, resolved
regexes and group epoch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from odradek.coordinator.group.consumer.assignors import Assignment
from odradek.coordinator.group.consumer.model import (
    ClassicMemberMetadata,
    ConsumerGroupMember,
    MemberState,
    ResolvedRegex,
)
from odradek.coordinator.group.modern import (
    VALUE_VERSION,
    check_value_version,
    encode_key,
    encode_value,
    sorted_parts,
)
from odradek.wire._generated.internal import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)

GROUP_METADATA = ConsumerGroupMetadataKey.RECORD_TYPE  # 3
PARTITION_METADATA = ConsumerGroupPartitionMetadataKey.RECORD_TYPE  # 4
MEMBER_METADATA = ConsumerGroupMemberMetadataKey.RECORD_TYPE  # 5
TARGET_METADATA = ConsumerGroupTargetAssignmentMetadataKey.RECORD_TYPE  # 6
TARGET_MEMBER = ConsumerGroupTargetAssignmentMemberKey.RECORD_TYPE  # 7
CURRENT_ASSIGNMENT = ConsumerGroupCurrentMemberAssignmentKey.RECORD_TYPE  # 8
REGULAR_EXPRESSION = ConsumerGroupRegularExpressionKey.RECORD_TYPE  # 16

KEY_TYPES = {GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA, TARGET_METADATA,
             TARGET_MEMBER, CURRENT_ASSIGNMENT, REGULAR_EXPRESSION}

_KEY_CLASSES: dict[int, Any] = {
    GROUP_METADATA: ConsumerGroupMetadataKey,
    PARTITION_METADATA: ConsumerGroupPartitionMetadataKey,
    MEMBER_METADATA: ConsumerGroupMemberMetadataKey,
    TARGET_METADATA: ConsumerGroupTargetAssignmentMetadataKey,
    TARGET_MEMBER: ConsumerGroupTargetAssignmentMemberKey,
    CURRENT_ASSIGNMENT: ConsumerGroupCurrentMemberAssignmentKey,
    REGULAR_EXPRESSION: ConsumerGroupRegularExpressionKey,
}

KeyValue = tuple[bytes, bytes | None]


@dataclass(frozen=True, slots=True)
class ConsumerKey:
    """A parsed KIP-848 key: its record type, group and (for per-member records) member."""

    record_type: int
    group: str
    member_id: str = ""  # the regex, for ConsumerGroupRegularExpression


def _key(record_type: int, group: str, member_id: str | None = None) -> bytes:
    cls = _KEY_CLASSES[record_type]
    if record_type == REGULAR_EXPRESSION:
        key = cls(group_id=group, regular_expression=member_id or "")
    elif member_id is None:
        key = cls(group_id=group)
    else:
        key = cls(group_id=group, member_id=member_id)
    return encode_key(record_type, key)


def _value(value: Any) -> bytes:
    return encode_value(value)


def parse_key(data: bytes | memoryview, record_type: int) -> ConsumerKey:
    cls = _KEY_CLASSES[record_type]
    key, _ = cls.decode(data, record_type, 2)
    member = getattr(key, "regular_expression" if record_type == REGULAR_EXPRESSION
                     else "member_id", "")
    return ConsumerKey(record_type, str(key.group_id), str(member))


def _value_version(data: bytes | memoryview, what: str) -> None:
    check_value_version(data, what)


# -- group epoch ------------------------------------------------------------------------------


def group_epoch_record(group: str, epoch: int, metadata_hash: int) -> KeyValue:
    return (_key(GROUP_METADATA, group),
            _value(ConsumerGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash)))


def group_epoch_tombstone(group: str) -> KeyValue:
    return (_key(GROUP_METADATA, group), None)


def parse_group_epoch(data: bytes | memoryview) -> tuple[int, int]:
    _value_version(data, "ConsumerGroupMetadataValue")
    value, _ = ConsumerGroupMetadataValue.decode(data, VALUE_VERSION, 2)
    return value.epoch, value.metadata_hash


def partition_metadata_tombstone(group: str) -> KeyValue:
    return (_key(PARTITION_METADATA, group), None)


# -- member subscription ------------------------------------------------------------------------


def member_record(group: str, m: ConsumerGroupMember) -> KeyValue:
    value = ConsumerGroupMemberMetadataValue(
        instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
        client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
        subscribed_topic_regex=m.subscribed_topic_regex,
        rebalance_timeout_ms=m.rebalance_timeout_ms, server_assignor=m.server_assignor)
    if m.classic is None:
        value.classic_member_metadata = None
    else:
        cls = ConsumerGroupMemberMetadataValue
        value.classic_member_metadata = cls.ClassicMemberMetadata(
            session_timeout_ms=m.classic.session_timeout_ms,
            supported_protocols=[cls.ClassicProtocol(name=n, metadata=bytes(md))
                                 for n, md in m.classic.protocols])
    return _key(MEMBER_METADATA, group, m.member_id), _value(value)


def member_tombstone(group: str, member_id: str) -> KeyValue:
    return (_key(MEMBER_METADATA, group, member_id), None)


def parse_member(member_id: str, data: bytes | memoryview) -> ConsumerGroupMember:
    _value_version(data, "ConsumerGroupMemberMetadataValue")
    v, _ = ConsumerGroupMemberMetadataValue.decode(data, VALUE_VERSION, 2)
    return ConsumerGroupMember(
        member_id, instance_id=v.instance_id, rack_id=v.rack_id, client_id=v.client_id,
        client_host=v.client_host, subscribed_topic_names=tuple(v.subscribed_topic_names),
        subscribed_topic_regex=v.subscribed_topic_regex or None,
        rebalance_timeout_ms=v.rebalance_timeout_ms, server_assignor=v.server_assignor,
        classic=_classic(v.classic_member_metadata))


def _classic(md: Any) -> ClassicMemberMetadata | None:
    # The codec gives an absent tag as the default struct: a classic member always lists at
    # least one protocol, so one without is a consumer-protocol member.
    if md is None or not md.supported_protocols:
        return None
    return ClassicMemberMetadata(md.session_timeout_ms,
                                 tuple((p.name, bytes(p.metadata)) for p in md.supported_protocols))


# -- target assignment -------------------------------------------------------------------------


def _sorted_parts(a: Assignment) -> list[tuple[object, list[int]]]:
    return list(sorted_parts(a))


def target_record(group: str, member_id: str, target: Assignment) -> KeyValue:
    tp = ConsumerGroupTargetAssignmentMemberValue.TopicPartition
    value = ConsumerGroupTargetAssignmentMemberValue(topic_partitions=[
        tp(topic_id=t, partitions=ps) for t, ps in _sorted_parts(target)])  # type: ignore[arg-type]
    return _key(TARGET_MEMBER, group, member_id), _value(value)


def target_tombstone(group: str, member_id: str) -> KeyValue:
    return (_key(TARGET_MEMBER, group, member_id), None)


def parse_target(data: bytes | memoryview) -> Assignment:
    _value_version(data, "ConsumerGroupTargetAssignmentMemberValue")
    v, _ = ConsumerGroupTargetAssignmentMemberValue.decode(data, VALUE_VERSION, 2)
    return {tp.topic_id: frozenset(tp.partitions) for tp in v.topic_partitions if tp.partitions}


def assignment_epoch_record(group: str, epoch: int, timestamp: int) -> KeyValue:
    value = ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch,
                                                       assignment_timestamp=timestamp)
    return _key(TARGET_METADATA, group), _value(value)


def assignment_epoch_tombstone(group: str) -> KeyValue:
    return (_key(TARGET_METADATA, group), None)


def parse_assignment_epoch(data: bytes | memoryview) -> tuple[int, int]:
    """(assignment epoch, assignment timestamp: when the target was computed, ms; 0 in
    records older than the field or written by a conversion)."""
    _value_version(data, "ConsumerGroupTargetAssignmentMetadataValue")
    v, _ = ConsumerGroupTargetAssignmentMetadataValue.decode(data, VALUE_VERSION, 2)
    epoch: int = v.assignment_epoch
    timestamp: int = v.assignment_timestamp
    return epoch, timestamp


# -- current assignment ------------------------------------------------------------------------


def current_record(group: str, m: ConsumerGroupMember) -> KeyValue:
    tp = ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions
    value = ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch,
        state=int(m.state),
        assigned_partitions=[tp(topic_id=t, partitions=ps)  # type: ignore[arg-type]
                             for t, ps in _sorted_parts(m.assigned)],
        partitions_pending_revocation=[tp(topic_id=t, partitions=ps)  # type: ignore[arg-type]
                                       for t, ps in _sorted_parts(m.pending_revocation)])
    return _key(CURRENT_ASSIGNMENT, group, m.member_id), _value(value)


def current_tombstone(group: str, member_id: str) -> KeyValue:
    return (_key(CURRENT_ASSIGNMENT, group, member_id), None)


def parse_current(member_id: str, data: bytes | memoryview) -> ConsumerGroupMember:
    _value_version(data, "ConsumerGroupCurrentMemberAssignmentValue")
    v, _ = ConsumerGroupCurrentMemberAssignmentValue.decode(data, VALUE_VERSION, 2)
    return ConsumerGroupMember(
        member_id, member_epoch=v.member_epoch, previous_member_epoch=v.previous_member_epoch,
        state=MemberState.from_byte(v.state),
        assigned={tp.topic_id: frozenset(tp.partitions)
                  for tp in v.assigned_partitions if tp.partitions},
        pending_revocation={tp.topic_id: frozenset(tp.partitions)
                            for tp in v.partitions_pending_revocation if tp.partitions})


# -- resolved regular expressions -------------------------------------------------------------


def regex_record(group: str, regex: str, resolved: ResolvedRegex) -> KeyValue:
    value = ConsumerGroupRegularExpressionValue(
        topics=sorted(resolved.topics), version=resolved.version, timestamp=resolved.timestamp)
    return _key(REGULAR_EXPRESSION, group, regex), _value(value)


def regex_tombstone(group: str, regex: str) -> KeyValue:
    return (_key(REGULAR_EXPRESSION, group, regex), None)


def parse_regex(data: bytes | memoryview) -> ResolvedRegex:
    _value_version(data, "ConsumerGroupRegularExpressionValue")
    v, _ = ConsumerGroupRegularExpressionValue.decode(data, VALUE_VERSION, 2)
    return ResolvedRegex(frozenset(v.topics), v.version, v.timestamp)
