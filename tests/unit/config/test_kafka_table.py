"""The config table is Kafka 4.4's (issue #18): the generated `_kafka` module matches its source
(`../shared/kafka-config/configdef-4.4.0.tsv`, when present), every setting has a decision, and
a default Odradek broker and topic describe themselves as the Kafka 4.4.0 broker recorded in
`compat_tests/kafka-4.4.0-configs.json` did (`python -m compat_tests.probe_configs --target
kafka --dump`), apart from the values that differ by install or by design (listed here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from odradek.config import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    BrokerConfig,
    _kafka,
    decisions,
    describe_topic_config,
    validate_topic_configs,
)
from odradek.config.broker import ODRADEK_DEFAULTS
from odradek.config.types import ConfigEntry, Effect
from tools import kafka_config

REPO = Path(__file__).parents[3]
KAFKA = json.loads((REPO / "compat_tests" / "kafka-4.4.0-configs.json").read_text())["kafka"]

# What the matrix's Kafka launcher sets in its server.properties (compat_tests/brokers.py):
# those rows are STATIC_BROKER_CONFIG there and defaults here.
SET_BY_THE_LAUNCHER = {
    "advertised.listeners", "broker.id", "controller.listener.names", "controller.quorum.voters",
    "group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms",
    "group.initial.rebalance.delay.ms", "inter.broker.listener.name",
    "listener.security.protocol.map", "listeners", "log.dirs", "node.id", "num.partitions",
    "offsets.topic.num.partitions", "offsets.topic.replication.factor", "process.roles",
    "share.coordinator.state.topic.min.isr", "share.coordinator.state.topic.replication.factor",
    "transaction.state.log.min.isr", "transaction.state.log.num.partitions",
    "transaction.state.log.replication.factor",
}
# Kafka 4.x's storage format writes min.insync.replicas=1 as a cluster-wide dynamic default
# (source DYNAMIC_DEFAULT_BROKER_CONFIG); Odradek has no dynamic broker configs yet.
FORMAT_TOOL = {"min.insync.replicas"}


def test_generated_module_matches_its_source() -> None:
    source = kafka_config.default_source()
    if not source.exists():
        pytest.skip(f"{source} not present")
    assert (REPO / "odradek" / "config" / "_kafka.py").read_text() == kafka_config.render(source)


@pytest.mark.parametrize(("rows", "table"), [(_kafka.BROKER, decisions.BROKER),
                                             (_kafka.TOPIC, decisions.TOPIC)])
def test_every_setting_has_a_decision(rows: tuple[tuple[Any, ...], ...],
                                      table: dict[str, Any]) -> None:
    names = [row[0] for row in rows]
    assert sorted(set(names) - set(table)) == [], "settings without a decision"
    assert sorted(set(table) - set(names)) == [], "decisions for no Kafka 4.4 setting"
    for name, decision in table.items():
        if decision is not Effect.IMPLEMENTED:
            assert isinstance(decision, tuple) and decision[1], f"{name}: say why"
    assert list(table) == sorted(table), "keep the entries sorted (easy merges)"


def test_dynamic_broker_settings_are_kafka_settings() -> None:
    assert set(BROKER_CONFIGS) >= decisions.DYNAMIC_BROKER


def test_counts_match_kafka() -> None:
    public_broker = [d for d in BROKER_CONFIGS.values() if not d.internal]
    public_topic = [d for d in TOPIC_CONFIGS.values() if not d.internal]
    assert (len(public_broker), len(public_topic)) == (350, 37)
    assert len(KAFKA["broker"]["configs"]) == 350 and len(KAFKA["topic"]["configs"]) == 37


def _row(entry: ConfigEntry) -> dict[str, Any]:
    return {"value": entry.value, "source": int(entry.source), "read_only": entry.read_only,
            "sensitive": entry.sensitive, "type": int(entry.type),
            "synonyms": [[s.name, s.value, int(s.source)] for s in entry.synonyms]}


def test_a_default_broker_describes_itself_as_kafka_4_4() -> None:
    mine = {e.name: _row(e) for e in BrokerConfig().describe()}
    theirs = KAFKA["broker"]["configs"]
    assert set(mine) == set(theirs)
    for name, kafka in theirs.items():
        ours = mine[name]
        flags = ("read_only", "sensitive", "type")
        assert {k: ours[k] for k in flags} == {k: kafka[k] for k in flags}, name
        if name in SET_BY_THE_LAUNCHER | FORMAT_TOOL | set(ODRADEK_DEFAULTS):
            continue
        assert ours == kafka, name


def test_a_fresh_topic_describes_itself_as_on_kafka_4_4() -> None:
    mine = {e.name: _row(e) for e in describe_topic_config({}, BrokerConfig())}
    theirs = KAFKA["topic"]["configs"]
    assert set(mine) == set(theirs)
    for name, kafka in theirs.items():
        if name in FORMAT_TOOL:
            continue
        assert mine[name] == kafka, name


def test_the_docs_are_generated_from_the_table() -> None:
    from tools import config_docs

    text = config_docs.DOCS.read_text(encoding="utf-8")
    assert config_docs.render(text) == text, "run python -m tools.config_docs"
    for name in BROKER_CONFIGS:
        assert f"| `{name}` |" in text, name


@pytest.mark.parametrize("case", sorted(KAFKA["validators"]))
def test_topic_validators_answer_as_kafka_4_4(case: str) -> None:
    # Kafka's answers to a validate-only CreateTopics with each value (the probe's cases).
    name, _, value = case.partition("=")
    code, message = KAFKA["validators"][case]
    reason = validate_topic_configs({name: value})
    assert (("INVALID_CONFIG", reason) if reason else ("NONE", None)) == (code, message)


@pytest.mark.parametrize("case", sorted(KAFKA["broker_validators"]))
def test_broker_validators_answer_as_kafka_4_4(case: str) -> None:
    # Kafka's answers to a validate-only IncrementalAlterConfigs on the cluster default.
    from odradek.config.broker import CLUSTER_DEFAULT, BrokerConfigRequestError

    name, _, value = case.partition("=")
    code, message = KAFKA["broker_validators"][case]
    try:
        BrokerConfig().check_dynamic(CLUSTER_DEFAULT, {name: value})
    except BrokerConfigRequestError as exc:
        assert ("INVALID_REQUEST", exc.reason) == (code, message)
    else:
        pytest.fail(f"{case} accepted; Kafka: {code} {message}")
