"""docs/apis.md mirrors the handler registry and the handlers' docstrings."""

from __future__ import annotations

from tools.apidocs import OUT, render


def test_api_docs_are_up_to_date() -> None:
    assert OUT.read_text() == render(), "docs/apis.md is stale: run python -m tools.apidocs"


def test_every_registered_handler_is_documented() -> None:
    from odradek.broker.registry import HANDLERS
    from odradek.wire import API_SPECS

    text = render()
    for key in HANDLERS:
        assert f"## {API_SPECS[key].name} ({key})" in text
