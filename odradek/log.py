"""Logging setup: structlog, one event per line on stderr.

Two renderings: logfmt-style `key=value` (the default, e.g. `timestamp=2024-05-01T10:00:00Z
level=info event=listening host=127.0.0.1 port=9092`) and JSON objects (`--log-json`).
Timestamps are ISO 8601 in UTC. Records from the standard `logging` module (asyncio, libraries)
go through the same renderer so the stream stays one format.

`import structlog` imports `structlog.dev`, which imports `rich` (and `better_exceptions`,
`colorama`) when they are installed, for its console renderer: some 80 ms of a broker start
whose target is 100 ms, for a renderer we never use. The first import of structlog therefore
happens here with those three hidden; they stay importable for anything else afterwards.
"""

from __future__ import annotations

import logging
import sys


def _import_structlog_plain() -> None:
    if "structlog" in sys.modules:
        return
    hidden = [m for m in ("rich", "better_exceptions", "colorama") if m not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # `import name` -> ImportError
    try:
        import structlog  # noqa: F401
    finally:
        for name in hidden:
            del sys.modules[name]


_import_structlog_plain()

import structlog  # noqa: E402
from structlog.typing import Processor  # noqa: E402

__all__ = ["LEVELS", "configure_logging"]

LEVELS = ("debug", "info", "warning", "error", "critical")

# Marks the stdlib handler we install so a second configure_logging replaces it.
_HANDLER_NAME = "odradek-stderr"


def configure_logging(json: bool = False, level: str = "info") -> None:
    """Route structlog and stdlib logging to stderr at `level`, as key=value or JSON lines."""
    if level.lower() not in LEVELS:
        raise ValueError(f"unknown log level {level!r}; expected one of {', '.join(LEVELS)}")
    level_no: int = getattr(logging, level.upper())
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Processor
    if json:
        renderer = structlog.processors.JSONRenderer()
    else:
        renderer = structlog.processors.LogfmtRenderer(
            key_order=["timestamp", "level", "event"], drop_missing=True, bool_as_flag=False
        )
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.StackInfoRenderer(),
            # Tracebacks become one escaped string value: still one line per event.
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level_no),
        logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )

    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level_no)
