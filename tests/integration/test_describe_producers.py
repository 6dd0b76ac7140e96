"""DescribeProducers' answers for illegal and unknown topic names, the same on Odradek and
on Apache Kafka 4.4 (`ODRADEK_IT_SERVER_CMD="python -m compat_tests.kafka_it_server"`)."""

from __future__ import annotations

from pathlib import Path

from it_support import StartBroker

from compat_tests.probing import Conn
from odradek.wire._generated.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
)

CHARS = "contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"


def test_illegal_names_get_invalid_topic_with_kafkas_messages(start_broker: StartBroker,
                                                              tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "data")
    conn = Conn(int(broker.bootstrap.rsplit(":", 1)[1]))
    long_name = "x" * 250
    expected = {
        "bad name!": (17, f"Topic name is invalid: 'bad name!' {CHARS}"),
        "..": (17, "Topic name is invalid: '..' is not allowed"),
        "": (17, "Topic name is invalid: the empty string is not allowed"),
        long_name: (17, f"Topic name is invalid: the length of '{long_name}' is longer than "
                        "the max allowed length 249"),
        "ok-but-missing": (3, "This server does not host this topic-partition."),
    }
    try:
        for name, answer in expected.items():
            r = conn.call(61, 0, DescribeProducersRequest(topics=[
                DescribeProducersRequest.TopicRequest(name=name, partition_indexes=[0, 1])]),
                DescribeProducersResponse)
            assert [(p.partition_index, p.error_code, p.error_message)
                    for t in r.topics for p in t.partitions] == [(0, *answer), (1, *answer)]
    finally:
        conn.close()
