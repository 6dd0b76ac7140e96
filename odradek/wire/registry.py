"""Lazy access to generated API modules: each is imported on first use, keeping start-up fast."""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from odradek.wire._generated.api_keys import API_SPECS, ApiSpec


@cache
def api_classes(api_key: int) -> tuple[Any, Any]:
    """(request class, response class) for an api key; KeyError if the protocol lacks it."""
    spec: ApiSpec = API_SPECS[api_key]
    module = importlib.import_module(f"odradek.wire._generated.{spec.module}")
    return getattr(module, spec.request_class), getattr(module, spec.response_class)
