"""Every implemented setting is proven (issue #18): a test fails when it is ignored.

`PROOFS` names, for each setting whose decision is IMPLEMENTED (odradek/config/decisions.py,
plus Odradek's own internal `transaction.version`; read from the tables that drive
DescribeConfigs and docs/configuration.md), the tests that show its effect: a test that only reads the value back or checks what
DescribeConfigs says does not count. A broker setting that is a topic config's default
(`log.retention.ms` for `retention.ms`, ...) is proven by the test that the broker hands it
to every topic's log plus the topic config's own proofs (`_via_topic`).

This test fails when an implemented setting has no entry (so a newly implemented setting
cannot land unproven), when an entry names a setting that is not implemented, and when an
entry names a test that does not exist. Node ids are `path::function` or
`path::Class::function`, without parameters (every parameter set runs).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from odradek.config import BROKER_CONFIGS, TOPIC_CONFIGS
from odradek.config.synonyms import TOPIC_CONFIG_OF
from odradek.config.types import Effect

ROOT = Path(__file__).resolve().parents[3]

API = "tests/unit/broker/api"
REPLICATION = "tests/unit/broker/replication/test_simulated.py"
FAILURES = "tests/unit/broker/replication/test_failures.py"
BALANCE = "tests/unit/broker/replication/test_leader_balance.py"
STORAGE = "tests/unit/broker/storage"
GROUP = "tests/unit/coordinator/group"
TXN = "tests/unit/coordinator/txn"
EFFECTS = f"{API}/test_setting_effects.py"
TOPIC_DEFAULT = f"{EFFECTS}::test_a_broker_topic_default_is_what_every_log_applies"
WIRED = f"{EFFECTS}::test_the_broker_hands_the_setting_to_its_component"
PERIODIC = f"{EFFECTS}::test_periodic_tasks_run_at_their_interval"
INTERNAL_TOPICS = f"{EFFECTS}::test_internal_topics_are_created_with_their_settings"
PRODUCE_CONFIGS = f"{API}/test_produce_topic_configs.py"
CLEANER = f"{STORAGE}/test_cleaner.py"
LOG = f"{STORAGE}/test_storage_log.py"
KEYSTORES = "tests/unit/broker/security/test_keystores.py"
RESOURCES = "tests/integration/test_resources.py"
GROUP_CONFIG_BOUNDS = f"{API}/test_group_configs.py::test_the_broker_settings_bound_group_configs"
FAULTS = "tests/integration/test_fault_injection.py"
SHARE = f"{API}/test_share_handlers.py"
SHARE_SETTINGS = "test_the_configured_heartbeat_interval_session_timeout_and_max_size"
SNAPSHOT_CADENCE = "test_first_write_is_a_snapshot_then_updates_then_a_snapshot_again"
SASL_UNIT = "tests/unit/broker/security/test_authenticator.py"
SASL_IT = "tests/integration/test_sasl.py"
TLS_UNIT = "tests/unit/broker/security/test_tls.py"
TLS_IT = "tests/integration/test_tls.py"

TOPIC: dict[str, tuple[str, ...]] = {
    "cleanup.policy": (
        f"{LOG}::test_retention_only_when_cleanup_policy_deletes",
        f"{CLEANER}::test_log_cleaner_picks_dirty_logs_and_checkpoints",
        f"{CLEANER}::test_compact_delete_applies_both",
        f"{API}/test_produce.py::test_size_is_checked_before_keys_on_a_compacted_topic",
    ),
    "compression.gzip.level": (f"{PRODUCE_CONFIGS}::test_the_topic_compression_level_is_used",),
    "compression.lz4.level": (f"{PRODUCE_CONFIGS}::test_the_topic_compression_level_is_used",),
    "compression.zstd.level": (f"{PRODUCE_CONFIGS}::test_the_topic_compression_level_is_used",),
    "compression.type": (
        f"{PRODUCE_CONFIGS}::test_batches_are_recompressed_to_the_topic_codec",
        f"{PRODUCE_CONFIGS}::test_producer_keeps_the_batch_byte_for_byte",
    ),
    "delete.retention.ms": (f"{CLEANER}::test_tombstones_go_after_delete_retention",),
    "file.delete.delay.ms": (
        f"{CLEANER}::test_reads_and_appends_while_cleaning",
        f"{LOG}::test_file_delete_delay_applies_to_segments_deleted_by_retention",
    ),
    "flush.messages": (f"{LOG}::test_flush_messages_and_recovery_point",),
    "flush.ms": (f"{LOG}::test_flush_ms",),
    "index.interval.bytes": (f"{LOG}::test_indexes_are_sparse_and_match_kafka_checks",),
    "internal.segment.bytes": (f"{LOG}::test_segment_byte_limit_counts_the_incoming_batch",),
    "max.compaction.lag.ms": (f"{CLEANER}::test_max_compaction_lag_forces_a_clean",),
    "min.insync.replicas": (
        f"{REPLICATION}::test_produce_on_a_follower_is_not_leader_and_min_isr_is_enforced",
        f"{REPLICATION}::test_one_broker_answers_acks_all_not_enough_replicas_above_min_insync_one",
    ),
    "max.message.bytes": (
        f"{LOG}::test_invalid_appends_write_nothing",
        f"{API}/test_produce.py::test_size_is_checked_before_keys_on_a_compacted_topic",
    ),
    "message.timestamp.after.max.ms": (
        f"{PRODUCE_CONFIGS}::test_timestamps_after_the_bound_are_invalid",
        f"{PRODUCE_CONFIGS}::test_the_default_after_bound_is_one_hour",
        f"{PRODUCE_CONFIGS}::test_each_records_timestamp_is_bounded_not_the_headers",
    ),
    "message.timestamp.before.max.ms": (
        f"{PRODUCE_CONFIGS}::test_timestamps_before_the_bound_are_invalid",
        f"{PRODUCE_CONFIGS}::test_each_records_timestamp_is_bounded_not_the_headers",
    ),
    "message.timestamp.type": (
        f"{LOG}::test_log_append_time",
        f"{PRODUCE_CONFIGS}::test_log_append_time_topics_are_exempt",
        f"{PRODUCE_CONFIGS}::test_a_producer_may_not_mark_its_batch_log_append_time",
    ),
    "min.cleanable.dirty.ratio": (
        f"{CLEANER}::test_max_compaction_lag_forces_a_clean",
        f"{CLEANER}::test_log_cleaner_picks_dirty_logs_and_checkpoints",
    ),
    "min.compaction.lag.ms": (f"{CLEANER}::test_compaction_lags",),
    "retention.bytes": (f"{LOG}::test_retention_by_size",),
    "retention.ms": (f"{LOG}::test_retention_by_time",),
    "segment.bytes": (f"{LOG}::test_segment_bytes_rolls_the_log",),
    "segment.index.bytes": (f"{LOG}::test_many_batches_in_one_request_never_overflow_the_index",),
    "segment.jitter.ms": (
        f"{LOG}::test_segment_jitter_rolls_at_segment_ms_minus_the_segment_s_jitter",
    ),
    "segment.ms": (f"{LOG}::test_time_based_roll",),
}


def _via_topic(broker_setting: str, *more: str) -> tuple[str, ...]:
    """A topic config's broker default: handed to every log, then the topic's own proofs."""
    return (TOPIC_DEFAULT, *TOPIC[TOPIC_CONFIG_OF[broker_setting]], *more)


BROKER: dict[str, tuple[str, ...]] = {
    "auto.leader.rebalance.enable": (
        f"{BALANCE}::test_a_restarted_preferred_replica_leads_again_after_a_balancing_pass",
        f"{BALANCE}::test_off_the_balancer_never_runs",
    ),
    "leader.imbalance.check.interval.seconds": (
        f"{BALANCE}::test_the_balancer_runs_every_check_interval",),
    "broker.session.timeout.ms": (
        f"{FAILURES}::test_a_killed_leader_keeps_its_leadership_until_its_session_times_out",),
    "replica.lag.time.max.ms": (
        f"{FAILURES}::test_a_killed_follower_leaves_the_isr_after_the_lag_max_when_behind",
        f"{FAILURES}::test_a_slow_follower_lags_out_of_the_isr_and_rejoins_once_healed",
    ),
    "simulated.brokers": (
        f"{REPLICATION}::test_every_broker_keeps_its_replicas_in_its_own_log_dir",
        "tests/integration/test_cluster.py::test_acks_all_idempotent_producer_and_consumer_follow_a_stopped_leader",
    ),
    "simulated.broker.ports": (f"{REPLICATION}::test_each_broker_binds_its_own_listener_port",),
    "min.insync.replicas": (
        f"{REPLICATION}::test_the_broker_wide_min_insync_replicas_applies_to_topics_without_one",
    ),
    # -- listeners and identity
    "advertised.listeners": (
        f"{API}/test_metadata.py::test_this_node_is_the_broker_and_controller_on_the_clients_listener",
        f"{API}/test_metadata.py::test_the_advertised_port_is_the_bound_one_when_configured_as_0",
    ),
    "listeners": (
        f"{API}/test_metadata.py::test_this_node_is_the_broker_and_controller_on_the_clients_listener",
        "tests/integration/test_startup.py::test_a_port_in_use_is_one_line_and_creates_nothing",
    ),
    "listener.security.protocol.map": (
        "tests/unit/config/test_config.py::test_custom_listener_names_via_protocol_map",
        f"{API}/test_metadata.py::test_this_node_is_the_broker_and_controller_on_the_clients_listener",
    ),
    "controller.listener.names": (
        "tests/unit/config/test_config.py::test_controller_listeners_are_not_client_listeners",
    ),
    "node.id": (f"{EFFECTS}::test_the_node_id_is_the_leader_metadata_reports",),
    "broker.id": (f"{EFFECTS}::test_the_node_id_is_the_leader_metadata_reports",),
    "log.dir": (f"{EFFECTS}::test_log_dir_and_log_dirs_are_where_partitions_live",),
    "log.dirs": (
        f"{EFFECTS}::test_log_dir_and_log_dirs_are_where_partitions_live",
        f"{STORAGE}/test_storage_manager.py::test_new_partitions_go_to_the_emptiest_log_dir",
    ),
    # -- topics and requests
    "authorizer.class.name": (
        f"{API}/test_authorization.py::test_produce_needs_topic_write_and_txn_id_write",
        f"{API}/test_authorization.py::test_acl_apis_need_cluster_alter_describe_and_persist",
    ),
    "quota.window.num": (
        f"{API}/test_client_quotas.py::"
        "test_quota_window_settings_set_the_span_the_rate_is_measured_over",),
    "quota.window.size.seconds": (
        f"{API}/test_client_quotas.py::"
        "test_quota_window_settings_set_the_span_the_rate_is_measured_over",),
    "auto.create.topics.enable": (f"{API}/test_metadata.py::test_unknown_topics_and_auto_creation",),
    "default.replication.factor": (
        f"{EFFECTS}::test_default_replication_factor_is_used_for_rf_minus_1",),
    "num.partitions": (
        f"{EFFECTS}::test_num_partitions_is_used_for_partitions_minus_1",
        f"{API}/test_create_topics.py::test_defaults_from_broker_settings",
    ),
    "delete.topic.enable": (f"{API}/test_delete_topics.py::test_deletion_disabled",),
    "fetch.max.bytes": (f"{API}/test_fetch_faults.py::test_fetch_max_bytes_bounds_the_response",),
    "max.incremental.fetch.session.cache.slots": (
        f"{API}/test_fetch_sessions_handler.py::test_no_slots_no_sessions",
        f"{API}/test_fetch_sessions_handler.py::test_the_slot_limit_and_follower_privilege",
    ),
    "max.request.partition.size.limit": (
        f"{API}/test_describe_topic_partitions.py::test_limits_are_clamped",),
    # -- connections and the network
    "connections.max.idle.ms": (
        f"{RESOURCES}::test_connections_max_idle_ms_closes_idle_connections_only",
        f"{RESOURCES}::test_negative_connections_max_idle_ms_never_closes",
    ),
    "max.connections": (f"{RESOURCES}::test_max_connections",),
    "max.connections.per.ip": (f"{RESOURCES}::test_max_connections_per_ip",),
    "queued.max.request.bytes": (
        f"{RESOURCES}::test_queued_max_request_bytes_mutes_reading_until_memory_is_released",),
    "socket.request.max.bytes": (
        "tests/integration/test_bad_input.py::test_frame_larger_than_configured_limit",),
    # -- topic defaults (ServerTopicConfigSynonyms)
    **{name: _via_topic(name) for name in (
        "compression.type", "compression.gzip.level", "compression.lz4.level",
        "compression.zstd.level", "log.cleanup.policy", "log.cleaner.delete.retention.ms",
        "log.cleaner.max.compaction.lag.ms", "log.cleaner.min.cleanable.ratio",
        "log.cleaner.min.compaction.lag.ms", "log.segment.delete.delay.ms",
        "log.flush.interval.messages", "log.flush.interval.ms", "log.index.interval.bytes",
        "log.index.size.max.bytes", "message.max.bytes", "log.message.timestamp.type",
        "log.retention.bytes", "log.retention.ms", "log.retention.minutes",
        "log.retention.hours", "log.segment.bytes", "log.roll.jitter.ms",
        "log.roll.jitter.hours", "log.roll.ms", "log.roll.hours")},
    "log.message.timestamp.after.max.ms": _via_topic(
        "log.message.timestamp.after.max.ms",
        f"{PRODUCE_CONFIGS}::test_the_default_after_bound_is_one_hour"),
    "log.message.timestamp.before.max.ms": _via_topic(
        "log.message.timestamp.before.max.ms",
        f"{PRODUCE_CONFIGS}::test_the_broker_setting_bounds_every_topic"),
    # flush.ms's second synonym, and the flusher's period
    "log.flush.scheduler.interval.ms": _via_topic("log.flush.scheduler.interval.ms", PERIODIC),
    # -- the log cleaner
    "log.cleaner.enable": (f"{EFFECTS}::test_log_cleaner_enable_starts_the_cleaner_or_not",),
    "log.cleaner.backoff.ms": (PERIODIC,),
    "log.cleaner.dedupe.buffer.size": (
        WIRED, f"{CLEANER}::test_map_budget_spreads_the_work_over_passes"),
    "log.cleaner.io.buffer.load.factor": (
        WIRED, f"{CLEANER}::test_map_budget_spreads_the_work_over_passes"),
    "log.cleaner.io.buffer.size": (
        WIRED, f"{CLEANER}::test_the_io_buffer_size_bounds_each_read"),
    "log.cleaner.io.max.bytes.per.second": (
        WIRED, f"{EFFECTS}::test_log_cleaner_io_max_bytes_per_second_throttles_the_cleaner"),
    "log.retention.check.interval.ms": (PERIODIC,),
    # -- the group coordinator
    "group.initial.rebalance.delay.ms": (
        WIRED,
        f"{GROUP}/test_group_coordinator.py::"
        "test_initial_delay_extends_while_new_members_arrive_capped_by_rebalance_timeout",
    ),
    "group.min.session.timeout.ms": (
        WIRED, f"{GROUP}/test_group_coordinator.py::test_session_timeout_bounds"),
    "group.max.session.timeout.ms": (
        WIRED, f"{GROUP}/test_group_coordinator.py::test_session_timeout_bounds"),
    "group.max.size": (WIRED, f"{GROUP}/test_group_coordinator.py::test_group_max_size"),
    "offsets.retention.minutes": (
        WIRED,
        f"{GROUP}/test_group_coordinator.py::test_offsets_of_an_empty_group_expire_then_the_group_goes",
    ),
    "offsets.retention.check.interval.ms": (
        WIRED,
        f"{GROUP}/test_group_coordinator.py::test_offsets_of_an_empty_group_expire_then_the_group_goes",
    ),
    "offset.metadata.max.bytes": (
        WIRED, f"{GROUP}/test_group_coordinator.py::test_metadata_too_large_is_per_partition"),
    "offsets.topic.num.partitions": (
        WIRED, INTERNAL_TOPICS,
        f"{API}/test_group_handlers.py::test_offsets_and_groups_survive_a_reopen"),
    "offsets.topic.segment.bytes": (
        WIRED, INTERNAL_TOPICS,
        "tests/integration/test_compaction.py::test_consumer_offsets_shrink_after_many_commits"),
    "group.share.session.timeout.ms": (WIRED, f"{SHARE}::{SHARE_SETTINGS}"),
    "group.share.heartbeat.interval.ms": (WIRED, f"{SHARE}::{SHARE_SETTINGS}"),
    "group.share.max.size": (WIRED, f"{SHARE}::{SHARE_SETTINGS}"),
    "group.share.record.lock.duration.ms": (
        WIRED, f"{SHARE}::test_the_configured_lock_duration_expires_acquired_records"),
    "group.share.delivery.count.limit": (
        WIRED, f"{SHARE}::test_the_configured_delivery_limit_archives"),
    "group.share.partition.max.record.locks": (
        WIRED, f"{SHARE}::test_the_configured_partition_record_locks_bound_acquisition"),
    "group.share.max.share.sessions": (WIRED, f"{SHARE}::test_the_configured_share_session_limit"),
    "share.coordinator.snapshot.update.records.per.snapshot": (
        WIRED, "tests/unit/coordinator/share/test_share_state.py::" + SNAPSHOT_CADENCE),
    "share.coordinator.state.topic.num.partitions": (
        WIRED, INTERNAL_TOPICS,
        f"{SHARE}::test_delivery_limit_archives_and_state_survives_a_reopen"),
    "share.coordinator.state.topic.segment.bytes": (WIRED, INTERNAL_TOPICS),
    "group.consumer.session.timeout.ms": (
        WIRED,
        f"{GROUP}/test_consumer_group.py::test_the_configured_session_timeout_expires_a_silent_member",
    ),
    "group.consumer.heartbeat.interval.ms": (
        WIRED,
        f"{GROUP}/test_consumer_group.py::"
        "test_the_configured_heartbeat_interval_is_what_members_are_told",
    ),
    "group.consumer.assignment.interval.ms": (
        WIRED,
        f"{GROUP}/test_consumer_assignment_interval.py::"
        "test_the_target_is_computed_again_only_after_the_interval",
    ),
    "group.streams.session.timeout.ms": (
        WIRED, "tests/unit/coordinator/streams/test_streams_coordinator.py::test_leave_and_session_timeout"),
    "group.streams.heartbeat.interval.ms": (
        WIRED, "tests/unit/coordinator/streams/test_streams_coordinator.py::test_the_configured_heartbeat_interval_is_what_members_are_told"),
    "group.streams.num.standby.replicas": (
        WIRED, "tests/unit/coordinator/streams/test_streams_coordinator.py::test_the_configured_standby_replicas_are_assigned"),
    "group.streams.max.size": (WIRED, "tests/unit/coordinator/streams/test_streams_coordinator.py::test_group_max_size"),
    "group.consumer.max.size": (
        WIRED, f"{GROUP}/test_consumer_group.py::test_group_max_size_and_leave"),
    "group.consumer.assignors": (
        WIRED, f"{GROUP}/test_consumer_group.py::test_only_the_configured_assignors_are_served"),
    "group.consumer.regex.refresh.interval.ms": (
        WIRED,
        f"{GROUP}/test_consumer_group_regex.py::"
        "test_without_new_topics_the_regex_is_resolved_again_only_after_the_interval",
    ),
    "group.consumer.migration.policy": (
        WIRED,
        f"{GROUP}/test_group_migration.py::test_policy_disabled_refuses_classic_joins_to_consumer_groups",
        f"{GROUP}/test_group_migration.py::test_policy_upgrade_only_keeps_the_consumer_group",
    ),
    # -- transactions and producers
    "transaction.max.timeout.ms": (
        WIRED, f"{EFFECTS}::test_transaction_max_timeout_ms_bounds_init_producer_id"),
    "transactional.id.expiration.ms": (
        WIRED,
        f"{TXN}/test_txn_coordinator.py::test_idle_transactional_ids_expire_with_a_tombstone",
        f"{API}/test_txn_handlers.py::"
        "test_the_timer_aborts_timed_out_transactions_and_expires_ids_and_producers",
    ),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": (
        WIRED,
        f"{API}/test_txn_handlers.py::"
        "test_the_timer_aborts_timed_out_transactions_and_expires_ids_and_producers",
    ),
    "transaction.remove.expired.transaction.cleanup.interval.ms": (
        WIRED,
        f"{API}/test_txn_handlers.py::"
        "test_the_timer_aborts_timed_out_transactions_and_expires_ids_and_producers",
    ),
    "transaction.state.log.num.partitions": (WIRED, INTERNAL_TOPICS),
    "transaction.state.log.segment.bytes": (WIRED, INTERNAL_TOPICS),
    "producer.id.expiration.ms": (
        f"{API}/test_txn_handlers.py::"
        "test_the_timer_aborts_timed_out_transactions_and_expires_ids_and_producers",
    ),
    "producer.id.expiration.check.interval.ms": (PERIODIC,),
    # Odradek's own (internal, never described): the finalized transaction.version level
    "sasl.enabled.mechanisms": (
        f"{SASL_UNIT}::test_listener_settings_override_the_global_ones",
        f"{SASL_IT}::test_unsupported_mechanism_and_wrong_password",
    ),
    "sasl.jaas.config": (
        f"{SASL_UNIT}::test_listener_settings_override_the_global_ones",
        f"{SASL_IT}::test_confluent_produce_consume_group",
    ),
    "connections.max.reauth.ms": (
        f"{SASL_UNIT}::test_reauthentication_deadline_and_rules",
        f"{SASL_IT}::test_connections_max_reauth_ms",
    ),
    "ssl.client.auth": (f"{TLS_IT}::test_mtls_principal_from_the_client_certificate",
                        f"{TLS_UNIT}::test_listener_tls_settings"),
    "ssl.enabled.protocols": (f"{TLS_IT}::test_tls_versions", f"{TLS_UNIT}::test_listener_tls_settings"),
    "ssl.key.password": (f"{TLS_UNIT}::test_listener_tls_settings",),
    "ssl.keystore.certificate.chain": (f"{TLS_UNIT}::test_listener_tls_settings",),
    "ssl.keystore.key": (f"{TLS_UNIT}::test_listener_tls_settings",),
    "ssl.keystore.location": (f"{TLS_IT}::test_sasl_ssl_clients", f"{TLS_UNIT}::test_unusable_tls_settings"),
    "ssl.keystore.password": (f"{KEYSTORES}::test_unusable_keystores_name_the_setting",
                              f"{TLS_IT}::test_keystores_with_mtls"),
    "ssl.keystore.type": (f"{TLS_UNIT}::test_unusable_tls_settings",
                          f"{KEYSTORES}::test_keystore_serves_tls_and_truststore_checks_clients"),
    "ssl.principal.mapping.rules": (f"{TLS_UNIT}::test_mapping_rules",
                                    f"{TLS_IT}::test_mtls_principal_from_the_client_certificate"),
    "ssl.truststore.certificates": (f"{TLS_UNIT}::test_listener_tls_settings",),
    "ssl.truststore.password": (f"{TLS_IT}::test_unusable_keystores_stop_start_up",
                                f"{KEYSTORES}::test_keystore_serves_tls_and_truststore_checks_clients"),
    "ssl.truststore.location": (f"{TLS_IT}::test_mtls_principal_from_the_client_certificate",
                                f"{TLS_UNIT}::test_unusable_tls_settings"),
    "ssl.truststore.type": (f"{TLS_UNIT}::test_unusable_tls_settings",),
    "scram.bootstrap.credentials": (
        f"{SASL_UNIT}::test_store_persists_and_bootstrap_never_overrides",
        f"{SASL_IT}::test_scram_credentials_survive_a_restart",
    ),
    "transaction.version": (
        f"{API}/test_api_versions.py::test_transaction_version_1_is_selected_by_the_broker_setting",
    ),
    # Odradek's own: the admin HTTP endpoint (fault rules, health; issue #16)
    "admin.http.port": (
        f"{FAULTS}::test_the_admin_endpoint_is_opt_in_and_binds_where_told",
        f"{FAULTS}::test_health_and_ready",
    ),
    "admin.http.host": (f"{FAULTS}::test_the_admin_endpoint_is_opt_in_and_binds_where_told",),
    "admin.http.metrics": (
        "tests/integration/test_metrics.py::test_counts_after_produce_and_consume",
        "tests/integration/test_metrics.py::test_metrics_are_opt_in",
    ),
    # The group.*.min/max.* settings bound the group configs (GROUP resources).
    **{name: (GROUP_CONFIG_BOUNDS,) for name in (
        "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms",
        "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms",
        "group.consumer.min.assignment.interval.ms", "group.consumer.max.assignment.interval.ms",
        "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms",
        "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms",
        "group.share.min.assignment.interval.ms", "group.share.max.assignment.interval.ms",
        "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms",
        "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit",
        "group.share.min.partition.max.record.locks",
        "group.share.max.partition.max.record.locks",
        "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms",
        "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms",
        "group.streams.min.assignment.interval.ms", "group.streams.max.assignment.interval.ms",
        "group.streams.max.standby.replicas", "group.streams.max.warmup.replicas",
        "group.streams.min.task.offset.interval.ms")},
    # Odradek's own: Kafka release emulation (issue #16)
    "emulate.kafka.version": (
        f"{API}/test_emulation.py::test_api_versions_of_an_emulated_2_8_broker",
        f"{API}/test_emulation.py::test_a_version_above_the_emulated_max_is_answered_as_kafka_does",
        "tests/integration/test_kafka_emulation.py::test_kafka_python_detects_2_8",
    ),
}

PROOFS: dict[tuple[str, str], tuple[str, ...]] = {
    **{("broker", name): tests for name, tests in BROKER.items()},
    **{("topic", name): tests for name, tests in TOPIC.items()},
}


def _implemented() -> set[tuple[str, str]]:
    return ({("broker", n) for n, d in BROKER_CONFIGS.items() if d.effect is Effect.IMPLEMENTED}
            | {("topic", n) for n, d in TOPIC_CONFIGS.items() if d.effect is Effect.IMPLEMENTED})


@cache
def _tests_in(path: str) -> frozenset[str]:
    """`function` and `Class::function` of every test in the file at `path`."""
    tree = ast.parse((ROOT / path).read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.update(f"{node.name}::{n.name}" for n in node.body
                         if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return frozenset(n for n in names if n.rsplit("::", 1)[-1].startswith("test"))


def test_every_implemented_setting_is_proven() -> None:
    implemented = _implemented()
    unproven = sorted(implemented - PROOFS.keys())
    assert not unproven, (
        f"implemented settings with no test proving their effect: {unproven}; add the test "
        "and name it in PROOFS, or change the setting's decision")
    not_implemented = sorted(PROOFS.keys() - implemented)
    assert not not_implemented, f"PROOFS names settings that are not implemented: {not_implemented}"
    assert all(PROOFS.values()), "an entry names no test"


def test_every_proof_names_a_test_that_exists() -> None:
    missing = []
    for (scope, name), node_ids in sorted(PROOFS.items()):
        for node_id in node_ids:
            path, _, function = node_id.partition("::")
            if not (ROOT / path).is_file() or function not in _tests_in(path):
                missing.append(f"{scope} {name}: {node_id}")
    assert not missing, "PROOFS names tests that do not exist:\n" + "\n".join(missing)


def test_the_check_catches_a_missing_test() -> None:
    assert "test_every_proof_names_a_test_that_exists" in _tests_in(
        "tests/unit/config/test_effects_proven.py")
    assert "no_such_test" not in _tests_in("tests/unit/config/test_effects_proven.py")
