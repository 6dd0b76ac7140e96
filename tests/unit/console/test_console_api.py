"""The web console's JSON endpoints (odradek.console), over HTTP, against a real broker from
`odradek.testing.running_broker()`: offsets, sizes, pages of records, produce, groups and
lag, transactions and producers, configs; 4xx JSON for bad parameters."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from odradek.client.data import OutRecord, produce
from odradek.client.groups import commit_offsets
from odradek.console.api import Console
from odradek.console.server import make_server
from odradek.testing import TestBroker, unique_name


@pytest.fixture(scope="module")
def broker(odradek_broker: TestBroker) -> TestBroker:
    """The plugin's session broker (running_broker()); `--odradek-bootstrap HOST:PORT` runs
    these tests against another Kafka-compatible broker, e.g. Apache Kafka."""
    return odradek_broker


class Api:
    def __init__(self, console: Console, base: str) -> None:
        self.console = console
        self.base = base

    def call(self, path: str, body: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(self.base + path, data=data,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            assert e.headers["Content-Type"] == "application/json"
            return e.code, json.loads(e.read())

    def get(self, path: str) -> Any:
        status, doc = self.call(path)
        assert status == 200, doc
        return doc


@pytest.fixture(scope="module")
def api(broker: TestBroker) -> Iterator[Api]:
    console = Console(broker.bootstrap, sample_seconds=0.2)
    server = make_server(console, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Api(console, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
        console.close()


def _topic(broker: TestBroker, partitions: int, per_partition: int) -> str:
    name = unique_name("console")
    broker.create_topic(name, partitions=partitions)
    records = [OutRecord(value=f"v{p}-{i}".encode(), key=f"k{i}".encode(), partition=p,
                         headers=(("h", b"\x00\xff"),))
               for p in range(partitions) for i in range(per_partition)]
    produce(broker.admin(), name, records, auto_create=False)
    return name


def test_topic_page_has_offsets_and_sizes_of_those_partitions_only(broker: TestBroker,
                                                                   api: Api) -> None:
    name = _topic(broker, 7, 3)
    doc = api.get(f"/api/topics/{name}?start=2&limit=3")
    assert doc["partition_count"] == 7
    assert [p["partition"] for p in doc["partitions"]] == [2, 3, 4]
    for p in doc["partitions"]:
        assert (p["log_start"], p["high_watermark"], p["last_stable"], p["messages"]) == (0, 3, 3, 3)
        assert p["size"] > 0
    listed = api.get("/api/topics")["topics"]
    assert {"name": name, "partitions": 7} == {k: v for t in listed if t["name"] == name
                                               for k, v in t.items() if k in ("name", "partitions")}


def test_messages_page_by_offset_and_timestamp_and_paging(broker: TestBroker, api: Api) -> None:
    name = _topic(broker, 2, 10)
    doc = api.get(f"/api/topics/{name}/messages?partition=1&offset=4&limit=3")
    assert [r["offset"] for r in doc["records"]] == [4, 5, 6]
    assert doc["next_offset"] == 7 and doc["prev_offset"] == 1
    first = doc["records"][0]
    assert first["value"]["text"] == "v1-4" and first["key"]["text"] == "k4"
    assert first["headers"] == [{"key": "h", "value": {"text": None, "b64": "AP8=", "size": 2}}]
    ts = first["timestamp"]
    by_time = api.get(f"/api/topics/{name}/messages?partition=1&timestamp={ts}&limit=2")
    assert by_time["records"][0]["timestamp"] >= ts
    assert by_time["records"][0]["offset"] <= 4
    future = api.get(f"/api/topics/{name}/messages?partition=1&timestamp={ts + 10**9}")
    assert future["records"] == [] and future["offset"] == 10
    tail = api.get(f"/api/topics/{name}/messages?partition=1&offset=8&limit=50")
    assert [r["offset"] for r in tail["records"]] == [8, 9]


def test_produce_then_read_it_back(broker: TestBroker, api: Api) -> None:
    name = _topic(broker, 3, 0)
    status, doc = api.call(f"/api/topics/{name}/produce",
                           {"key": "a", "value": '{"x": 1}', "headers": [["h1", "v1"]],
                            "partition": 2})
    assert status == 200 and (doc["partition"], doc["offset"]) == (2, 0)
    page = api.get(f"/api/topics/{name}/messages?partition=2")
    (rec,) = page["records"]
    assert rec["value"]["text"] == '{"x": 1}' and rec["headers"][0]["key"] == "h1"


@pytest.mark.parametrize(("path", "status"), [
    ("/api/topics/NAME?limit=abc", 400),
    ("/api/topics/NAME?limit=0", 400),
    ("/api/topics/NAME?start=-1", 400),
    ("/api/topics/NAME/messages?partition=99", 404),
    ("/api/topics/NAME/messages?timestamp=soon", 400),
    ("/api/topics/no-such-topic", 404),
    ("/api/groups/no-such-group", 404),
    ("/api/brokers/x/configs", 400),
    ("/api/brokers/77/configs", 404),
    ("/api/nothing", 404),
    ("/static/../api.py", 404),
])
def test_bad_parameters_get_a_json_error(broker: TestBroker, api: Api, path: str,
                                         status: int) -> None:
    name = _topic(broker, 1, 1)
    got, doc = api.call(path.replace("NAME", name))
    assert got == status and isinstance(doc["error"], str) and "Traceback" not in doc["error"]


@pytest.mark.parametrize("body", [b"not json", b"[1]", b'{"value": 5}', b'{"partition": 9}',
                                  b'{"headers": [["k"]]}'])
def test_bad_produce_bodies_get_400(broker: TestBroker, api: Api, body: bytes) -> None:
    name = _topic(broker, 1, 0)
    status, doc = api.call(f"/api/topics/{name}/produce", raw=body)
    assert status == 400, doc


def test_group_offsets_lag_and_history(broker: TestBroker, api: Api) -> None:
    name = _topic(broker, 2, 10)
    group = unique_name("g")
    commit_offsets(broker.admin(), group, {(name, 0): 4, (name, 1): 9})
    doc = api.get(f"/api/groups/{group}")
    lags = {o["partition"]: o["lag"] for o in doc["offsets"]}
    assert lags == {0: 6, 1: 1} and doc["lag"] == 7
    api.console.sample_lag()
    produce(broker.admin(), name, [OutRecord(value=b"x", partition=0)], auto_create=False)
    api.console.sample_lag()
    history = api.get(f"/api/groups/{group}")["history"]
    assert [v for _, v in history[-2:]] == [7, 8]
    listed = {g["group_id"]: g for g in api.get("/api/groups")["groups"]}
    assert listed[group]["lag"] == 8


def test_transactions_and_producers(broker: TestBroker, api: Api) -> None:
    ck = pytest.importorskip("confluent_kafka")
    name = _topic(broker, 1, 0)
    tid = unique_name("tx")
    p = ck.Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(name, b"open", partition=0)
    p.flush(30)
    deadline = time.monotonic() + 10
    while True:  # the coordinator learns of the partition as the producer adds it
        found = {t["transactional_id"]: t for t in api.get("/api/transactions")["transactions"]}
        if found.get(tid, {}).get("state") == "Ongoing" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert found[tid]["state"] == "Ongoing"
    assert found[tid]["partitions"] == {name: [0]}
    producers = api.get(f"/api/topics/{name}/producers")["producers"]
    assert [(x["partition"], x["txn_start_offset"]) for x in producers] == [(0, 0)]
    row = api.get(f"/api/topics/{name}")["partitions"][0]
    assert (row["high_watermark"], row["last_stable"]) == (1, 0)  # the open transaction
    p.abort_transaction(30)


def test_configs(broker: TestBroker, api: Api) -> None:
    name = _topic(broker, 1, 0)
    configs = {c["name"]: c for c in api.get(f"/api/topics/{name}/configs")["configs"]}
    assert "retention.ms" in configs
    node = api.get("/api/cluster")["brokers"][0]["node_id"]
    broker_configs = {c["name"] for c in api.get(f"/api/brokers/{node}/configs")["configs"]}
    assert "log.dirs" in broker_configs or "log.dir" in broker_configs


def test_cli_bad_input_is_one_line_and_an_exit_code(broker: TestBroker,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    from odradek.cli import main

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    assert main(["console", "-b", f"127.0.0.1:{dead}", "--timeout", "2"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("odradek console: cannot reach the broker") and err.count("\n") == 1
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["console", "-b", broker.bootstrap, "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"odradek console: cannot listen on 127.0.0.1:{port}")
    assert err.count("\n") == 1 and "Traceback" not in err
    with pytest.raises(SystemExit) as exit_:
        main(["console", "--port", "70000"])
    assert exit_.value.code == 2
