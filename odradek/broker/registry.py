"""The handler registry: which apis the broker serves, at which versions, in which module.

`HANDLERS` is the one table the dispatcher, ApiVersions and the docs generator
(`tools/apidocs.py`) read: ApiVersions advertises exactly these ranges, each capped at the
api's highest stable version. A handler module is `odradek.broker.api.<module>` and defines
`async def handle(ctx, request)`; the dispatcher imports it on first use, so start-up does
not pay for apis nobody calls.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from odradek.wire import API_SPECS, ApiKey


@dataclass(frozen=True, slots=True)
class HandlerEntry:
    module: str  # odradek.broker.api.<module>
    min_version: int
    max_version: int
    # A feature (KIP-584) the api needs above 0: an emulated release leaves the api out of
    # ApiVersions while it is at 0; it answers UNSUPPORTED_VERSION then (feature_gate.py).
    feature: str | None = None


# Versions below each api's floor need the legacy message format (Produce v0-2, Fetch v0-3)
# or are not implemented yet; the handler modules' docstrings say what each version lacks.
HANDLERS: Mapping[int, HandlerEntry] = MappingProxyType({
    ApiKey.PRODUCE: HandlerEntry("produce", 3, 13),
    ApiKey.FETCH: HandlerEntry("fetch", 4, 18),
    ApiKey.LIST_OFFSETS: HandlerEntry("list_offsets", 0, 11),
    ApiKey.METADATA: HandlerEntry("metadata", 0, 13),
    ApiKey.API_VERSIONS: HandlerEntry("api_versions", 0, 5),
    ApiKey.SASL_HANDSHAKE: HandlerEntry("sasl_handshake", 0, 1),
    ApiKey.SASL_AUTHENTICATE: HandlerEntry("sasl_authenticate", 0, 2),
    ApiKey.CREATE_TOPICS: HandlerEntry("create_topics", 0, 7),
    ApiKey.DELETE_TOPICS: HandlerEntry("delete_topics", 0, 6),
    ApiKey.DELETE_RECORDS: HandlerEntry("delete_records", 0, 2),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: HandlerEntry("offset_for_leader_epoch", 0, 4),
    ApiKey.DESCRIBE_ACLS: HandlerEntry("describe_acls", 0, 3),
    ApiKey.CREATE_ACLS: HandlerEntry("create_acls", 0, 3),
    ApiKey.DELETE_ACLS: HandlerEntry("delete_acls", 0, 3),
    ApiKey.DESCRIBE_CONFIGS: HandlerEntry("describe_configs", 0, 4),
    ApiKey.ALTER_CONFIGS: HandlerEntry("alter_configs", 0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: HandlerEntry("describe_log_dirs", 0, 5),
    ApiKey.CREATE_PARTITIONS: HandlerEntry("create_partitions", 0, 3),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: HandlerEntry("incremental_alter_configs", 0, 1),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: HandlerEntry("describe_user_scram_credentials", 0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: HandlerEntry("alter_user_scram_credentials", 0, 0),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: HandlerEntry("describe_client_quotas", 0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: HandlerEntry("alter_client_quotas", 0, 1),
    ApiKey.DESCRIBE_CLUSTER: HandlerEntry("describe_cluster", 0, 2),
    ApiKey.DESCRIBE_QUORUM: HandlerEntry("describe_quorum", 0, 2),
    ApiKey.UPDATE_FEATURES: HandlerEntry("update_features", 0, 2),
    ApiKey.ELECT_LEADERS: HandlerEntry("elect_leaders", 0, 2),
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: HandlerEntry("describe_topic_partitions", 0, 0),
    ApiKey.LIST_CONFIG_RESOURCES: HandlerEntry("list_config_resources", 0, 1),
    ApiKey.FIND_COORDINATOR: HandlerEntry("find_coordinator", 0, 6),
    ApiKey.JOIN_GROUP: HandlerEntry("join_group", 0, 9),
    ApiKey.SYNC_GROUP: HandlerEntry("sync_group", 0, 5),
    ApiKey.HEARTBEAT: HandlerEntry("heartbeat", 0, 4),
    ApiKey.LEAVE_GROUP: HandlerEntry("leave_group", 0, 5),
    ApiKey.OFFSET_COMMIT: HandlerEntry("offset_commit", 0, 10),
    ApiKey.OFFSET_FETCH: HandlerEntry("offset_fetch", 0, 10),
    ApiKey.DESCRIBE_GROUPS: HandlerEntry("describe_groups", 0, 6),
    ApiKey.LIST_GROUPS: HandlerEntry("list_groups", 0, 5),
    ApiKey.DELETE_GROUPS: HandlerEntry("delete_groups", 0, 3),
    ApiKey.OFFSET_DELETE: HandlerEntry("offset_delete", 0, 0),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: HandlerEntry("consumer_group_heartbeat", 0, 1,
                                                  "group.version"),
    ApiKey.CONSUMER_GROUP_DESCRIBE: HandlerEntry("consumer_group_describe", 0, 1,
                                                 "group.version"),
    # KIP-932 share groups: Kafka 4.4 advertises v1+ (v0 was the early-access form).
    ApiKey.SHARE_GROUP_HEARTBEAT: HandlerEntry("share_group_heartbeat", 1, 1, "share.version"),
    ApiKey.SHARE_GROUP_DESCRIBE: HandlerEntry("share_group_describe", 1, 1, "share.version"),
    ApiKey.SHARE_FETCH: HandlerEntry("share_fetch", 1, 2, "share.version"),
    ApiKey.SHARE_ACKNOWLEDGE: HandlerEntry("share_acknowledge", 1, 2, "share.version"),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: HandlerEntry("describe_share_group_offsets", 0, 1,
                                                      "share.version"),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: HandlerEntry("alter_share_group_offsets", 0, 0,
                                                   "share.version"),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: HandlerEntry("delete_share_group_offsets", 0, 0,
                                                    "share.version"),
    ApiKey.INIT_PRODUCER_ID: HandlerEntry("init_producer_id", 0, 5),
    # Transactions: the classic protocol and transactions v2 (KIP-890: Produce v12+,
    # EndTxn v5, TxnOffsetCommit v5+).
    ApiKey.ADD_PARTITIONS_TO_TXN: HandlerEntry("add_partitions_to_txn", 0, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: HandlerEntry("add_offsets_to_txn", 0, 4),
    ApiKey.END_TXN: HandlerEntry("end_txn", 0, 5),
    ApiKey.TXN_OFFSET_COMMIT: HandlerEntry("txn_offset_commit", 0, 6),
    ApiKey.DESCRIBE_PRODUCERS: HandlerEntry("describe_producers", 0, 0),
    ApiKey.DESCRIBE_TRANSACTIONS: HandlerEntry("describe_transactions", 0, 0),
    ApiKey.LIST_TRANSACTIONS: HandlerEntry("list_transactions", 0, 2),
    # Streams groups (KIP-1071), advertised while `streams.version` is finalized.
    ApiKey.STREAMS_GROUP_HEARTBEAT: HandlerEntry("streams_group_heartbeat", 0, 1, "streams.version"),
    ApiKey.STREAMS_GROUP_DESCRIBE: HandlerEntry("streams_group_describe", 0, 1, "streams.version"),
})

# api key -> the feature it needs above 0 (dispatch answers UNSUPPORTED_VERSION while at 0)
FEATURE_GATED: Mapping[int, str] = MappingProxyType(
    {key: entry.feature for key, entry in HANDLERS.items() if entry.feature is not None})


def supported_range(api_key: int) -> tuple[int, int] | None:
    """The versions served and advertised for `api_key`, or None if it is not served."""
    entry = HANDLERS.get(api_key)
    if entry is None:
        return None
    return entry.min_version, min(entry.max_version, API_SPECS[api_key].max_stable_version)


def advertised(levels: Mapping[str, int] | None = None) -> Iterator[tuple[int, int, int]]:
    """(api key, min version, max version) of every served api, by key: the ApiVersions list.
    With the finalized feature `levels`, an api whose feature is at 0 is left out."""
    for key in sorted(HANDLERS):
        feature = HANDLERS[key].feature
        if levels is not None and feature is not None and levels.get(feature, 0) <= 0:
            continue
        rng = supported_range(key)
        if rng is not None and rng[0] <= rng[1]:
            yield key, rng[0], rng[1]
