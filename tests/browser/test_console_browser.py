"""The web console in a real browser: Debian's chromium driven by Playwright, against a broker
with real data (topics, a consumer group with a live member and lag, a committed and an open
transaction). Each page is checked for what it shows; produce is clicked and the record must
appear; the group page must update its lag without a reload.

Skipped, with the reason, when /usr/bin/chromium is absent; `./test browser` installs it
(apt-get) and Playwright (the console-test extra). Never `playwright install`: no network.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from odradek.client.data import OutRecord, produce
from odradek.client.groups import commit_offsets
from odradek.console.api import Console
from odradek.console.server import make_server
from odradek.testing import TestBroker, running_broker

CHROMIUM = os.environ.get("ODRADEK_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"no chromium at {CHROMIUM} (apt-get install chromium; "
                                       "./test browser does it)")

TOPIC = "orders"
PER_PARTITION = 20
COMMITTED = {0: 5, 1: 12, 2: 20}  # the group's committed offsets: lag 15 + 8 + 0


@dataclass
class Setup:
    broker: TestBroker
    base: str
    consumer: Any
    producers: list[Any]


def _seed(broker: TestBroker) -> tuple[Any, list[Any]]:
    ck = pytest.importorskip("confluent_kafka")
    admin = broker.admin()
    broker.create_topic(TOPIC, partitions=3)
    broker.create_topic("wide", partitions=250)
    commit_offsets(admin, "wide-group", {("wide", q): 0 for q in range(250)})
    produce(admin, TOPIC, [OutRecord(value=f'{{"n": {i}, "p": {p}}}'.encode(),
                                     key=f"key-{i}".encode(), partition=p,
                                     headers=(("source", b"seed"),))
                           for p in range(3) for i in range(PER_PARTITION)], auto_create=False)
    committed = ck.Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-done"})
    committed.init_transactions(30)
    committed.begin_transaction()
    committed.produce("txns", b"done", partition=0)
    committed.commit_transaction(30)
    open_ = ck.Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-open"})
    open_.init_transactions(30)
    open_.begin_transaction()
    open_.produce("txns", b"pending", partition=0)
    open_.flush(30)
    consumer = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "billing",
                            "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 30
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    consumer.commit(offsets=[ck.TopicPartition(TOPIC, p, o) for p, o in COMMITTED.items()],
                    asynchronous=False)
    return consumer, [committed, open_]


@pytest.fixture(scope="module")
def setup() -> Iterator[Setup]:
    with running_broker({"auto.create.topics.enable": "true"}) as broker:
        consumer, producers = _seed(broker)
        console = Console(broker.bootstrap, sample_seconds=0.5)
        console.start_sampler()
        server = make_server(console, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield Setup(broker, f"http://127.0.0.1:{server.server_address[1]}", consumer,
                        producers)
        finally:
            server.shutdown()
            server.server_close()
            console.close()
            consumer.close()
            producers[1].abort_transaction(30)
            producers.clear()  # librdkafka handles gone before the broker: no reconnect noise
            gc.collect()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("chromium is here but Playwright is not: pip install -e '.[console-test]'")
    # launch() gives chromium a fresh temporary profile (--user-data-dir) of its own.
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any, setup: Setup) -> Iterator[Any]:
    context = browser.new_context()
    p = context.new_page()
    p.set_default_timeout(15_000)
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    yield p
    context.close()
    assert errors == [], errors


def _text(page: Any, selector: str) -> str:
    return str(page.locator(selector).first.inner_text()).strip()


def test_topics_and_partitions_with_offsets(page: Any, setup: Setup) -> None:
    page.goto(setup.base + "/")
    page.locator("#topics a", has_text=TOPIC).first.click()
    page.wait_for_selector("#partitions tr[data-partition='2']")
    for p in range(3):
        row = f"#partitions tr[data-partition='{p}']"
        assert _text(page, f"{row} .hw") == str(PER_PARTITION)
        assert _text(page, f"{row} .log-start") == "0"
        assert _text(page, f"{row} .size").endswith("B")
    page.goto(setup.base + "/#/topic/txns")  # a hash change: wait for the new view, not the old
    page.wait_for_selector("h2:text-is('Topic txns')")
    page.wait_for_selector("#partitions tr[data-partition='0']")
    # the open transaction holds the LSO back at its first record
    hw = int(_text(page, "#partitions tr[data-partition='0'] .hw"))
    lso = int(_text(page, "#partitions tr[data-partition='0'] .lso"))
    assert lso < hw
    assert page.locator("#producers tr").count() >= 3  # header + both producers


def test_partitions_table_pages(page: Any, setup: Setup) -> None:
    page.goto(setup.base + "/#/topic/wide")
    page.wait_for_selector("#partitions tr[data-partition='99']")
    assert page.locator("#partitions tr[data-partition]").count() == 100
    page.click("#next")
    page.wait_for_selector("#partitions tr[data-partition='150']")
    assert page.locator("#partitions tr[data-partition='99']").count() == 0
    page.goto(setup.base + "/#/group/wide-group")  # a group's offsets are paged too
    page.wait_for_selector("#offsets tr[data-partition='99']")
    assert page.locator("#offsets tr[data-partition]").count() == 100
    page.click("#next")
    page.wait_for_selector("#offsets tr[data-partition='199']")
    assert page.locator("#offsets tr[data-partition='99']").count() == 0


def test_message_browser_search_formats_and_paging(page: Any, setup: Setup) -> None:
    page.goto(setup.base + f"/#/messages/{TOPIC}?partition=1&offset=5&limit=5")
    page.wait_for_selector("#messages tr.record")
    offsets = page.locator("#messages tr.record").evaluate_all(
        "rows => rows.map(r => Number(r.dataset.offset))")
    assert offsets == [5, 6, 7, 8, 9]
    assert _text(page, "#messages tr[data-offset='5'] .value") == '{"n": 5, "p": 1}'
    assert "source: seed" in _text(page, "#messages tr[data-offset='5'] .headers")
    page.select_option("#search select[name=format]", "hex")
    page.click("#search button")
    page.wait_for_selector("#messages tr[data-offset='5'] .value pre.hex")
    assert _text(page, "#messages tr[data-offset='5'] .key") == "6b 65 79 2d 35"  # key-5
    page.click("#next")
    page.wait_for_selector("#messages tr[data-offset='10']")
    page.select_option("#search select[name=format]", "json")
    page.fill("#search input[name=offset]", "")
    page.fill("#search input[name=timestamp]", "0")
    page.click("#search button")
    page.wait_for_selector("#messages tr[data-offset='0'] .value pre.json")


def test_produce_shows_the_record(page: Any, setup: Setup) -> None:
    page.goto(setup.base + f"/#/messages/{TOPIC}?partition=0")
    page.wait_for_selector("#produce")
    page.fill("#produce input[name=partition]", "2")
    page.fill("#produce input[name=key]", "from-the-browser")
    page.fill("#produce textarea[name=value]", "hello console")
    page.fill("#produce textarea[name=headers]", "trace=abc")
    page.click("#produce-button")
    row = page.locator("#messages tr.record", has_text="hello console")
    row.wait_for()
    assert "from-the-browser" in row.inner_text() and "trace" in row.inner_text()
    assert "partition 2" in _text(page, "h2")


def test_group_lag_and_live_update(page: Any, setup: Setup) -> None:
    page.goto(setup.base + "/#/groups")
    page.locator("#groups a", has_text="billing").click()
    page.wait_for_selector("#total-lag")
    # the browser test before may have produced to the topic: lag = end - committed
    ends = {p: int(o) for p, o in _ends(setup).items()}
    expected = sum(ends[p] - c for p, c in COMMITTED.items())
    assert int(_text(page, "#total-lag")) == expected
    assert int(_text(page, "#offsets tr[data-partition='0'] .lag")) == ends[0] - COMMITTED[0]
    assert _text(page, "#group-state") == "Stable"
    assert page.locator("#members tr").count() == 2  # header + the live consumer
    produce(setup.broker.admin(), TOPIC, [OutRecord(value=b"more", partition=0)] * 3,
            auto_create=False)
    page.wait_for_function(f"Number(document.getElementById('total-lag').textContent) === {expected + 3}")
    page.wait_for_selector("#lag-chart polyline")


def _ends(setup: Setup) -> dict[int, int]:
    from odradek.client.data import LATEST, list_offsets

    return list_offsets(setup.broker.admin(), TOPIC, [0, 1, 2], LATEST)


def test_transactions_page(page: Any, setup: Setup) -> None:
    page.goto(setup.base + "/#/transactions")
    page.wait_for_selector("#transactions tr[data-id='tx-open']")
    assert _text(page, "#transactions tr[data-id='tx-open'] .state") == "Ongoing"
    assert _text(page, "#transactions tr[data-id='tx-done'] .state") == "CompleteCommit"


def test_brokers_and_configs(page: Any, setup: Setup) -> None:
    page.goto(setup.base + "/#/brokers")
    page.locator("#brokers a", has_text="configs").first.click()
    page.wait_for_selector("table.configs")
    assert page.locator("table.configs td", has_text="log.retention.hours").count() >= 1
    page.goto(setup.base + f"/#/topicconfigs/{TOPIC}")
    page.wait_for_selector(f"h2:has-text('Configs of topic {TOPIC}')")
    page.wait_for_selector("table.configs td:text-is('retention.ms')")


def test_an_error_is_shown_not_thrown(page: Any, setup: Setup) -> None:
    page.goto(setup.base + "/#/topic/no-such-topic")
    assert "no topic no-such-topic" in _text(page, "#error")
