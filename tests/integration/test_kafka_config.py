"""Issue #10: settings as Kafka users write them.

- A stock Kafka KRaft `server.properties` starts Odradek: the PLAINTEXT listener is served,
  the CONTROLLER listener (named in controller.listener.names) is not bound, and the KRaft
  settings a single process has no use for raise no "unknown config" warning.
- A topic's compression.type other than `producer` is applied: what a stock client produces
  uncompressed is stored (segment file read back) in the topic's codec and consumed intact.
  With each client: confluent-kafka, kafka-python, aiokafka and kcat each produce in a codec
  other than the topic's, and each of them reads the recompressed topic back whole, in order
  (the Java client does the same in the compat matrix's `topic-compression` row).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from it_support import (
    CLIENTS,
    DRIVERS,
    BrokerProcess,
    Rec,
    StartBroker,
    admin,
    confluent_consume_all,
    confluent_produce,
    create_topic,
    topic_name,
)

from odradek.wire.compression import CompressionType
from odradek.wire.records import iter_batches

KRAFT_SERVER_PROPERTIES = Path(__file__).parents[1] / "data" / "kafka-kraft-server.properties"


class ConfigFileBroker(BrokerProcess):
    """A broker started with `--config FILE` before the `--override`s."""

    def __init__(self, config_file: Path, data_dir: Path, overrides: dict[str, str]) -> None:
        super().__init__(data_dir, overrides)
        self.config_file = config_file

    def command(self) -> list[str]:
        argv = super().command()
        at = argv.index("serve") + 1
        return [*argv[:at], "--config", str(self.config_file), *argv[at:]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.fixture
def kraft_broker(tmp_path: Path) -> Iterator[tuple[ConfigFileBroker, int]]:
    controller_port = _free_port()
    broker = ConfigFileBroker(
        KRAFT_SERVER_PROPERTIES,
        tmp_path / "data",
        {
            "listeners": f"PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": (
                f"PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:{controller_port}"
            ),
        },
    )
    broker.start()
    try:
        yield broker, controller_port
    finally:
        if broker.running:
            assert broker.stop() == 0, broker.stderr_text()


def test_stock_kraft_server_properties(kraft_broker: tuple[ConfigFileBroker, int]) -> None:
    broker, controller_port = kraft_broker
    metadata = admin(broker.bootstrap).list_topics(timeout=10)
    assert [(b.host, b.port) for b in metadata.brokers.values()] == [("127.0.0.1", broker.port)]
    assert _port_is_free(controller_port), "the CONTROLLER listener was bound"
    log = broker.stderr_text()
    assert "unknown config" not in log, log
    assert "not supported" not in log, log  # every setting of the stock file is at home here
    assert "listener=CONTROLLER" not in log
    assert "listener=PLAINTEXT" in log


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd", "uncompressed"])
def test_topic_compression_type_is_applied(tmp_path: Path, start_broker: StartBroker,
                                           codec: str) -> None:
    broker = start_broker(tmp_path / "data")
    topic = topic_name("codec")
    create_topic(broker.bootstrap, topic, 1, {"compression.type": codec})
    sent = [Rec(b"k%d" % i, b"value %d " % i * 30, (("h", b"%d" % i),)) for i in range(50)]
    # the producer compresses differently from the topic: the broker must recompress
    producer_codec = "gzip" if codec == "uncompressed" else "none"
    confluent_produce(broker.bootstrap, topic, sent, compression=producer_codec)
    got = confluent_consume_all(broker.bootstrap, topic, 1)
    assert [r.content() for r in got] == [r.content() for r in sent]
    assert [r.offset for r in got] == list(range(50))
    segments = sorted((broker.data_dir / f"{topic}-0").glob("*.log"))
    batches = [b for seg in segments for b in iter_batches(seg.read_bytes())]
    assert batches
    wanted = CompressionType.NONE if codec == "uncompressed" else CompressionType[codec.upper()]
    assert {b.compression for b in batches} == {wanted}
    assert all(b.crc_ok() for b in batches)


PRODUCER_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd", "uncompressed"])
def test_topic_compression_type_with_each_client(tmp_path: Path, start_broker: StartBroker,
                                                 codec: str) -> None:
    broker = start_broker(tmp_path / "data")
    topic = topic_name("codec")
    create_topic(broker.bootstrap, topic, 1, {"compression.type": codec})
    topic_codec = "none" if codec == "uncompressed" else codec
    others = [c for c in PRODUCER_CODECS if c != topic_codec]
    sent: list[Rec] = []
    for i, client in enumerate(CLIENTS):  # each in a codec other than the topic's
        produce, _ = DRIVERS[client]
        recs = [Rec(b"%s-%d" % (client.encode(), n), b"%s value %d " % (client.encode(), n) * 20,
                    (("client", client.encode()),)) for n in range(25)]
        produce(broker.bootstrap, topic, recs, compression=others[i % len(others)])
        sent += recs
    segments = sorted((broker.data_dir / f"{topic}-0").glob("*.log"))
    batches = [b for seg in segments for b in iter_batches(seg.read_bytes())]
    wanted = CompressionType.NONE if codec == "uncompressed" else CompressionType[codec.upper()]
    assert {b.compression for b in batches} == {wanted}
    assert all(b.crc_ok() for b in batches)
    for client in CLIENTS:
        _, consume_all = DRIVERS[client]
        got = consume_all(broker.bootstrap, topic, 1)
        assert [r.content() for r in got] == [r.content() for r in sent], client
        assert [r.offset for r in got] == list(range(len(sent))), client
