"""A small synchronous Kafka client on Odradek's own wire layer, for tools: the admin CLI and
the test fixtures (`odradek.testing`). It talks to any Kafka-compatible broker and imports
nothing of the broker or the coordinators."""

from odradek.client.admin import Admin, BrokerInfo, PartitionInfo, TopicInfo
from odradek.client.connection import (
    BrokerConnection,
    BrokerUnreachable,
    ClientError,
    KafkaError,
    UnsupportedVersion,
    parse_bootstrap,
)

__all__ = [
    "Admin",
    "BrokerConnection",
    "BrokerInfo",
    "BrokerUnreachable",
    "ClientError",
    "KafkaError",
    "PartitionInfo",
    "TopicInfo",
    "UnsupportedVersion",
    "parse_bootstrap",
]
