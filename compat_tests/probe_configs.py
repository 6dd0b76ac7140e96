"""Configuration probe (issue #18): describe the broker and a fresh topic, and try each topic
validator, on Odradek and on Apache Kafka 4.4.0, and report every difference.

`python -m compat_tests.probe_configs [--target odradek|kafka|both] [--dump FILE] [--markdown FILE]`

Sends raw DescribeConfigs v4 (with synonyms) for BROKER `1` and for a topic just created with
no configs, the CreateTopics v7 configs echo of that topic, and for each topic config with a
validator a CreateTopics validate_only with a value just outside the range or choice (and one
of the wrong type): the error code and message. `--dump` writes everything as JSON; with both
targets the differences are printed (and written as a table with --markdown). Values that
depend on the install (ports, paths, ids, the settings the matrix sets on both) are kept out of
the comparison: see `PER_INSTALL`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from compat_tests import probing
from compat_tests.probing import err
from odradek.wire._generated.api_keys import ApiKey
from odradek.wire._generated.create_topics import CreateTopicsRequest, CreateTopicsResponse
from odradek.wire._generated.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
)
from odradek.wire._generated.incremental_alter_configs import (
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

TOPIC = "probe-configs"
BROKER, TOPIC_RESOURCE = 4, 2

# Values that differ between installs by nature (the listeners' ports, the data folders) or that
# the matrix's launchers set differently on purpose; their flags, types and sources still count.
PER_INSTALL = {
    "listeners", "advertised.listeners", "log.dirs", "log.dir", "controller.quorum.voters",
    "listener.security.protocol.map", "controller.listener.names", "process.roles",
    "inter.broker.listener.name", "offsets.topic.num.partitions",
    "transaction.state.log.num.partitions",
}


# Differences by design, listed in docs/configuration.md: the one-node defaults Odradek really
# uses (its DEFAULT_CONFIG synonym shows them where Kafka's shows 3, 2 or -1; node.id has a
# default here).
def documented() -> dict[str, str]:
    from odradek.config.broker import ODRADEK_DEFAULTS

    return {name: "one-node default" for name in ODRADEK_DEFAULTS}


class Conn(probing.Conn):
    """A probe connection with the DescribeConfigs and CreateTopics calls this probe makes."""

    client_id = "probe-configs"

    def describe(self, rtype: int, name: str) -> dict[str, Any]:
        req = DescribeConfigsRequest(
            resources=[DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=rtype, resource_name=name, configuration_keys=None)],
            include_synonyms=True, include_documentation=False)
        resp = self.call(ApiKey.DESCRIBE_CONFIGS, 4, req, DescribeConfigsResponse)
        result = resp.results[0]
        rows = {c.name: {"value": c.value, "source": c.config_source, "read_only": c.read_only,
                         "sensitive": c.is_sensitive, "type": c.config_type,
                         "synonyms": [[s.name, s.value, s.source] for s in c.synonyms]}
                for c in result.configs}
        return {"error": err(result.error_code), "configs": rows}

    def create(self, name: str, configs: dict[str, str], validate_only: bool) -> Any:
        topic = CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=1, replication_factor=1, assignments=[],
            configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v)
                     for k, v in configs.items()])
        req = CreateTopicsRequest(topics=[topic], timeout_ms=30000, validate_only=validate_only)
        return self.call(ApiKey.CREATE_TOPICS, 7, req, CreateTopicsResponse).topics[0]


# Values each topic config's validator must refuse (Kafka 4.4's ranges and choices), and one of
# the wrong type per config type; probed through a validate-only CreateTopics.
BAD_TOPIC_VALUES: dict[str, list[str]] = {
    "compression.gzip.level": ["0", "10"],
    "compression.lz4.level": ["0", "18"],
    "compression.zstd.level": ["-131073", "23"],
    "delete.retention.ms": ["-1"],
    "file.delete.delay.ms": ["-1"],
    "flush.messages": ["0"],
    "flush.ms": ["-1"],
    "follower.replication.throttled.replicas": ["x"],
    "leader.replication.throttled.replicas": ["0:x"],
    "local.retention.bytes": ["-3"],
    "local.retention.ms": ["-3"],
    "max.compaction.lag.ms": ["0"],
    "max.decompressed.message.bytes": ["0", "2147483640"],
    "message.timestamp.after.max.ms": ["-1"],
    "message.timestamp.before.max.ms": ["-1"],
    "min.cleanable.dirty.ratio": ["1.5", "-0.1", "abc"],
    "min.compaction.lag.ms": ["-1"],
    "min.insync.replicas": ["0"],
    "preallocate": ["yes"],
    "remote.copy.lag.bytes": ["-2"],
    "remote.copy.lag.ms": ["-2"],
    "retention.bytes": ["x", "9223372036854775808"],
    "retention.ms": ["-2"],
    "segment.bytes": ["14", "1048575"],
    "segment.index.bytes": ["3"],
    "segment.jitter.ms": ["-1"],
    "segment.ms": ["0"],
    "unclean.leader.election.enable": ["1"],
    "message.format.version": ["3.0-IV1"],  # removed in 4.0: unknown now
    "message.downconversion.enable": ["true"],
    "message.timestamp.difference.max.ms": ["1000"],
    # wrong types, edges of the types, case and blanks
    "max.message.bytes": ["-1", "1.5", "2147483648"],
    "index.interval.bytes": ["-1", " 100 "],
    "compression.type": ["brotli", "GZIP"],
    "message.timestamp.type": ["NoTime", "createtime"],
    "cleanup.policy": ["delete,bogus", "compact,compact", "", " compact , delete "],
    "no.such.config": ["1"],
}


# The stock KRaft settings the matrix's Kafka launcher writes into its server.properties
# (compat_tests/brokers.py), given to Odradek too so that both describe the same file.
KRAFT_FILE = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
    "advertised.listeners": "PLAINTEXT://127.0.0.1:0",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "num.partitions": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "3",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}


def bad_broker_values() -> dict[str, str]:
    """For each dynamic broker setting with a range or choice validator in Kafka 4.4's table, a
    value just outside it (probed with a validate-only IncrementalAlterConfigs on the
    cluster-wide default resource, so nothing changes on either broker)."""
    from odradek.config import _kafka, decisions

    out: dict[str, str] = {}
    for name, _type, internal, _default, spec in _kafka.BROKER:
        if internal or name not in decisions.DYNAMIC_BROKER or spec is None:
            continue
        if spec[0] == "range" and spec[1] is not None:
            out[name] = str(spec[1] - 1)
        elif spec[0] == "range" and spec[2] is not None:
            out[name] = str(spec[2] + 1)
        elif spec[0] in ("choice", "each"):
            out[name] = "bogus"
    out["num.partitions"] = "2"  # read-only: INVALID_REQUEST
    return out


def probe(target: str, workdir: Path) -> dict[str, Any]:
    from compat_tests.brokers import make_broker

    broker = make_broker(target, workdir, KRAFT_FILE if target == "odradek" else None)
    broker.start()
    try:
        c = Conn(broker.port)
        out: dict[str, Any] = {"broker": c.describe(BROKER, "1")}
        created = c.create(TOPIC, {}, validate_only=False)
        out["create_topics"] = {
            "error": err(created.error_code), "topic_id_set": created.topic_id.int != 0,
            "configs": {x.name: {"value": x.value, "source": x.config_source,
                                 "read_only": x.read_only, "sensitive": x.is_sensitive}
                        for x in (created.configs or [])}}
        out["topic"] = c.describe(TOPIC_RESOURCE, TOPIC)
        vo = c.create(TOPIC + "-vo", {}, validate_only=True)
        out["validate_only_topic_id_set"] = vo.topic_id.int != 0
        bad: dict[str, Any] = {}
        for name, values in BAD_TOPIC_VALUES.items():
            for value in values:
                r = c.create(TOPIC + "-bad", {name: value}, validate_only=True)
                bad[f"{name}={value}"] = [err(r.error_code), r.error_message]
        out["validators"] = bad
        broker_bad: dict[str, Any] = {}
        for name, value in bad_broker_values().items():
            req = IncrementalAlterConfigsRequest(resources=[
                IncrementalAlterConfigsRequest.AlterConfigsResource(
                    resource_type=BROKER, resource_name="",
                    configs=[IncrementalAlterConfigsRequest.AlterableConfig(
                        name=name, config_operation=0, value=value)])], validate_only=True)
            [r] = c.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, req,
                         IncrementalAlterConfigsResponse).responses
            broker_bad[f"{name}={value}"] = [err(r.error_code), r.error_message]
        out["broker_validators"] = broker_bad
        return out
    finally:
        broker.stop()


def _row(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "(absent)"
    return json.dumps(entry, sort_keys=True)


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(section, name, odradek, kafka) for each difference."""
    out: list[tuple[str, str, str, str]] = []
    for section in ("broker", "topic"):
        ra, rb = a[section]["configs"], b[section]["configs"]
        for name in sorted(set(ra) | set(rb)):
            ea, eb = ra.get(name), rb.get(name)
            if ea is not None and eb is not None and name in PER_INSTALL:
                ea = {k: v for k, v in ea.items() if k not in ("value", "synonyms")}
                eb = {k: v for k, v in eb.items() if k not in ("value", "synonyms")}
            if ea != eb:
                out.append((section, name, _row(ea), _row(eb)))
    ca, cb = a["create_topics"]["configs"], b["create_topics"]["configs"]
    for name in sorted(set(ca) | set(cb)):
        if ca.get(name) != cb.get(name):
            out.append(("create_topics", name, _row(ca.get(name)), _row(cb.get(name))))
    for key in ("validate_only_topic_id_set",):
        if a[key] != b[key]:
            out.append(("create_topics", key, str(a[key]), str(b[key])))
    for section in ("validators", "broker_validators"):
        sa, sb = a.get(section, {}), b.get(section, {})
        for case in sorted(set(sa) | set(sb)):
            va, vb = sa.get(case), sb.get(case)
            if va != vb:
                out.append((section, case, json.dumps(va), json.dumps(vb)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=("odradek", "kafka", "both"), default="both")
    parser.add_argument("--dump", type=Path, help="write every answer as JSON")
    parser.add_argument("--load", type=Path, help="start from answers dumped before (e.g. Kafka's); --target probes the rest")
    parser.add_argument("--markdown", type=Path, help="write the differences as a table")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    if args.load:
        results = json.loads(args.load.read_text())
    targets = ["odradek", "kafka"] if args.target == "both" else [args.target]
    with tempfile.TemporaryDirectory(prefix="probe-configs-") as tmp:
        for target in targets:
            results[target] = probe(target, Path(tmp))
    if args.dump:
        args.dump.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    for target, res in results.items():
        print(f"{target}: broker {len(res['broker']['configs'])} settings, topic "
              f"{len(res['topic']['configs'])}, created-topic echo {len(res['create_topics']['configs'])}")
    if "odradek" in results and "kafka" in results:
        diffs = differences(results["odradek"], results["kafka"])
        known = documented()
        unexpected = [d for d in diffs if d[1] not in known]
        for section, name, mine, theirs in diffs:
            why = f" (documented: {known[name]})" if name in known else ""
            print(f"{section} {name}{why}\n  odradek {mine}\n  kafka   {theirs}")
        print(f"{len(diffs)} differences, {len(unexpected)} not documented")
        if args.markdown:
            lines = ["| where | name | Odradek | Kafka 4.4.0 | documented |", "|---|---|---|---|---|"]
            lines += [f"| {s} | `{n}` | `{m}` | `{t}` | {known.get(n, 'no')} |"
                      for s, n, m, t in diffs]
            args.markdown.write_text("\n".join(lines) + "\n")
        return 1 if unexpected else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
