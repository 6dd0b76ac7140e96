from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from admin_testutil import call, produce

from odradek.broker.broker import Broker
from odradek.config import BrokerConfig
from odradek.wire import ApiKey, ErrorCode
from odradek.wire._generated.describe_log_dirs import DescribeLogDirsRequest

Req = DescribeLogDirsRequest
KEY = ApiKey.DESCRIBE_LOG_DIRS


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = Broker(BrokerConfig({"log.dirs": f"{tmp_path}/d1,{tmp_path}/d2"}))
    b.cluster.create_topic("t", 3, {})
    b.cluster.create_topic("u", 1, {})
    yield b
    b.close()


def describe(broker: Broker, version: int, topics: dict[str, list[int]] | None):  # type: ignore[no-untyped-def]
    req = Req()
    req.topics = None if topics is None else [
        Req.DescribableLogDirTopic(topic=t, partitions=ps) for t, ps in topics.items()]
    return call(broker, KEY, version, req)


def placed(response) -> dict[tuple[str, int], tuple[str, int]]:  # type: ignore[no-untyped-def]
    """(topic, partition) -> (log dir, size) over every result."""
    out = {}
    for r in response.results:
        assert r.error_code == ErrorCode.NONE
        for t in r.topics:
            for p in t.partitions:
                assert (p.offset_lag, p.is_future_key) == (0, False)
                out[(t.name, p.partition_index)] = (r.log_dir, p.partition_size)
    return out


@pytest.mark.parametrize("version", range(6))
def test_all_partitions_in_their_dirs(broker: Broker, tmp_path: Path, version: int) -> None:
    produce(broker, "t", 1, [1, 2, 3])
    r = describe(broker, version, None)
    assert sorted(x.log_dir for x in r.results) == [str(tmp_path / "d1"), str(tmp_path / "d2")]
    where = placed(r)
    assert set(where) == {("t", 0), ("t", 1), ("t", 2), ("u", 0)}
    for (topic, p), (log_dir, size) in where.items():
        plog = broker.partitions.log(topic, p)
        assert plog is not None
        assert plog.directory.parent == Path(log_dir)
        assert size == plog.size_in_bytes
    assert where[("t", 1)][1] > 0 and where[("t", 0)][1] == 0
    # new partitions spread over the dirs
    assert len({d for d, _ in where.values()}) == 2
    if version >= 4:
        for x in r.results:
            assert x.total_bytes > 0 and 0 <= x.usable_bytes <= x.total_bytes
    if version >= 3:
        assert r.error_code == ErrorCode.NONE
    if version >= 5:
        assert [x.is_cordoned for x in r.results] == [False, False]


def test_only_requested_partitions(broker: Broker) -> None:
    r = describe(broker, 4, {"t": [2, 7], "missing": [0]})
    assert set(placed(r)) == {("t", 2)}
    assert len(r.results) == 2  # every dir answers, even with nothing to list
    empty = describe(broker, 4, {})
    assert placed(empty) == {}
