"""Trace and span ids on the library's log records.

:func:`correlate` adds :class:`TraceContextFilter` to each logger of memory-core
(:data:`LOGGERS`): while a span is active, a record gets ``otelTraceID`` and ``otelSpanID``
(32 and 16 hex digits, the names OpenTelemetry's logging instrumentation uses, so a format
string such as ``%(otelTraceID)s`` works with either) and ``otelTraceSampled``. Without
the ``otel`` extra, or with no span active, a record is left as it is.
"""

from __future__ import annotations

import logging
import sys

LOGGERS = (
    "memory_core.server",
    "memory_core.server.access",
    "memory_core.audit",
    "memory_core.backends.nams",
    "memory_core.turns",
    "memory_core.integrations.mcp_server",
)
"""Every logger memory-core writes to."""


def current_ids() -> tuple[str, str, bool] | None:
    """``(trace_id, span_id, sampled)`` of the active span as hex, or None."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return None  # never imported: no span can be active
    found = trace.get_current_span().get_span_context()
    if not found.is_valid:
        return None
    return f"{found.trace_id:032x}", f"{found.span_id:016x}", bool(found.trace_flags.sampled)


class TraceContextFilter(logging.Filter):
    """Adds the active span's ids to a record; lets every record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        ids = current_ids()
        if ids is not None:
            record.otelTraceID, record.otelSpanID, record.otelTraceSampled = ids
        return True


_FILTER = TraceContextFilter()


def correlate() -> None:
    """Add the filter to every logger of :data:`LOGGERS` (again: no effect)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
