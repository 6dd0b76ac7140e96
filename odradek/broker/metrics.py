"""Prometheus metrics (issue #16), opt-in: `admin.http.metrics=true` serves `GET /metrics` on the
admin HTTP endpoint (`admin.http.port`); needs the `metrics` extra (`prometheus-client`).

Names are those Kafka's JMX metrics get from the Prometheus JMX exporter with its default
(untyped, lower-cased) naming, where Kafka has the metric:
- `kafka_server_brokertopicmetrics_messagesinpersec{topic}`, `..._bytesinpersec{topic}`,
  `..._bytesoutpersec{topic}`: the meters' Count (records and record bytes appended by
  Produce, record bytes sent by Fetch), plus the broker-wide series without a topic label;
- `kafka_network_requestmetrics_requestspersec{request,version}`: requests handled;
  `kafka_network_requestmetrics_totaltimems_count/_sum{request}`: handling time in ms (from
  the decoded request to the response built; Kafka's also counts queueing and sending);
- `kafka_server_replicamanager_underreplicatedpartitions`: 0 (one broker, every replica in
  sync); `kafka_server_replicamanager_partitioncount`;
- `kafka_server_socket_server_metrics_connection_count`: open client connections;
- `kafka_coordinator_group_groupmetadatamanager_numgroups{state}` and
  `kafka_coordinator_transaction_numtransactions{state}` (Odradek's names for the counts);
- `kafka_consumergroup_lag{consumergroup,topic,partition}`: high watermark minus committed
  offset, as kafka-exporter names it;
- `odradek_faults_injected`: requests faulted by fault rules (`fault_rules.py`).

The hot path only increments integers: one list slot per (api key, version), a two-int list
per topic; nothing is formatted until a scrape. With metrics off the dispatcher does nothing
but check `ctx.metrics is None`.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from odradek.wire import API_SPECS, ApiKey

_VERSIONS = 32  # slots per api key: versions stay below it
_COUNT_AT = 57  # RecordBatch v2: recordsCount's offset in the batch header
_BATCH_HEADER = 61
_I32 = struct.Struct(">i")


def record_count(records: Any) -> int:
    """Records in a RecordBatch v2 byte string, from each batch header (no record is read)."""
    view = memoryview(records)
    total = pos = 0
    end = len(view)
    while pos + _BATCH_HEADER <= end:
        total += _I32.unpack_from(view, pos + _COUNT_AT)[0]
        pos += 12 + _I32.unpack_from(view, pos + 8)[0]
    return total


@dataclass(frozen=True, slots=True)
class Sources:
    """What a scrape reads besides the counters (the broker hands these in)."""

    groups: Callable[[], Mapping[str, Any]]  # group id -> Group (state, offsets)
    transactions: Callable[[], Mapping[str, Any]]  # transactional id -> TxnMetadata
    high_watermark: Callable[[str, int], int | None]
    partition_count: Callable[[], int]
    connections: Callable[[], int]
    faults_injected: Callable[[], int] = lambda: 0


class Metrics:
    """The broker's counters; `render` formats them for Prometheus."""

    def __init__(self, topic_name: Callable[[Any], str | None] = lambda topic_id: None) -> None:
        self._topic_name = topic_name  # by topic id (Fetch v13+, Produce v13+)
        self.requests = [0] * (_VERSIONS * 128)
        self.time_ns = [0] * 128
        self.topics: dict[str, list[int]] = {}  # topic -> [messages in, bytes in, bytes out]

    def _topic(self, name: str | None, topic_id: Any) -> list[int]:
        if not name:
            name = self._topic_name(topic_id) or str(topic_id)
        slot = self.topics.get(name)
        if slot is None:
            slot = self.topics[name] = [0, 0, 0]
        return slot

    def record(self, api_key: int, version: int, body: Any, response: Any,
               elapsed_ns: int) -> None:
        self.requests[api_key * _VERSIONS + version] += 1
        self.time_ns[api_key] += elapsed_ns
        if api_key == ApiKey.PRODUCE:
            self._produced(body, response)
        elif api_key == ApiKey.FETCH and response is not None:
            for t in response.responses:
                out = sum(len(p.records) for p in t.partitions if p.records is not None)
                if out:
                    self._topic(t.topic, t.topic_id)[2] += out

    def _produced(self, body: Any, response: Any) -> None:
        failed: set[tuple[str, int]] = set()
        if response is not None:  # acks=0: no response, count what was sent
            failed = {(t.name, p.index) for t in response.responses
                      for p in t.partition_responses if p.error_code}
        for t in body.topic_data:
            slot = None
            for p in t.partition_data:
                if p.records is None or (t.name, p.index) in failed:
                    continue
                slot = slot or self._topic(t.name, t.topic_id)
                slot[0] += record_count(p.records)
                slot[1] += len(p.records)

    # -- scraping -----------------------------------------------------------------------------

    def render(self, sources: Sources) -> bytes:
        # Imported here, by name: an optional dependency (the `metrics` extra).
        prometheus = importlib.import_module("prometheus_client")
        unknown_family = importlib.import_module("prometheus_client.core").UnknownMetricFamily

        families: list[Any] = []

        def family(name: str, doc: str, labels: list[str]) -> Any:
            fam = unknown_family(name, doc, labels=labels)
            families.append(fam)
            return fam

        names = ("messagesinpersec", "bytesinpersec", "bytesoutpersec")
        docs = ("records appended", "record bytes appended", "record bytes sent by Fetch")
        for i, (name, doc) in enumerate(zip(names, docs, strict=True)):
            fam = family(f"kafka_server_brokertopicmetrics_{name}", doc, ["topic"])
            for topic, slot in sorted(self.topics.items()):
                fam.add_metric([topic], slot[i])
            whole = family(f"kafka_server_brokertopicmetrics_{name}_all", f"{doc}, all topics",
                           [])
            whole.add_metric([], sum(slot[i] for slot in self.topics.values()))
        req = family("kafka_network_requestmetrics_requestspersec", "requests handled",
                     ["request", "version"])
        count = family("kafka_network_requestmetrics_totaltimems_count", "requests timed",
                       ["request"])
        total = family("kafka_network_requestmetrics_totaltimems_sum",
                       "handling time, ms", ["request"])
        for key, spec in sorted(API_SPECS.items()):
            n = 0
            for version in range(_VERSIONS):
                c = self.requests[key * _VERSIONS + version]
                if c:
                    req.add_metric([spec.name, str(version)], c)
                    n += c
            if n:
                count.add_metric([spec.name], n)
                total.add_metric([spec.name], self.time_ns[key] / 1e6)
        family("kafka_server_replicamanager_underreplicatedpartitions",
               "partitions with a replica out of sync", []).add_metric([], 0)
        family("kafka_server_replicamanager_partitioncount", "partitions on this broker",
               []).add_metric([], sources.partition_count())
        family("kafka_server_socket_server_metrics_connection_count", "open client connections",
               []).add_metric([], sources.connections())
        family("odradek_faults_injected", "requests faulted by fault rules (Odradek's own)",
               []).add_metric([], sources.faults_injected())
        self._coordinators(sources, family)
        registry = prometheus.CollectorRegistry(auto_describe=False)

        class _Collector:
            def collect(self) -> Any:
                return iter(families)

        registry.register(_Collector())
        text: bytes = prometheus.generate_latest(registry)
        return text

    @staticmethod
    def _coordinators(sources: Sources, family: Callable[[str, str, list[str]], Any]) -> None:
        groups = sources.groups()
        by_state: dict[str, int] = {}
        for group in groups.values():
            state = getattr(group.state, "name", str(group.state))
            by_state[state] = by_state.get(state, 0) + 1
        fam = family("kafka_coordinator_group_groupmetadatamanager_numgroups", "groups by state",
                     ["state"])
        for state, n in sorted(by_state.items()):
            fam.add_metric([state], n)
        txns: dict[str, int] = {}
        for txn in sources.transactions().values():
            state = getattr(txn.state, "name", str(txn.state))
            txns[state] = txns.get(state, 0) + 1
        fam = family("kafka_coordinator_transaction_numtransactions",
                     "transactional ids by state", ["state"])
        for state, n in sorted(txns.items()):
            fam.add_metric([state], n)
        lag = family("kafka_consumergroup_lag", "high watermark minus committed offset",
                     ["consumergroup", "topic", "partition"])
        for group_id, group in sorted(groups.items()):
            for (topic, partition), committed in sorted(group.offsets.items()):
                hw = sources.high_watermark(topic, partition)
                if hw is not None:
                    lag.add_metric([group_id, topic, str(partition)],
                                   max(hw - committed.value.offset, 0))
