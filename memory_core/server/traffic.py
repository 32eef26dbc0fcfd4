"""One log line per request, and an in-memory record of recent requests for tests.

The log line names the method, path, status, duration and workspace — never the API key,
a header value or any message content — with control characters escaped (a client's
``%0D%0A`` cannot forge a line). Tests read :class:`Traffic` (``app.state.traffic``
or ``GET /_admin/traffic``) to count requests and TCP connections (the client address of
a request identifies its connection). The record is kept only when the test admin routes
are on (or a test hands its own in): it holds up to 10,000 paths, which a client chooses.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from ..telemetry.logs import current_ids
from .connections import TIMED_OUT
from .faults import ASGIApp, Message, Receive, Scope, Send
from .logsafe import escape

log = logging.getLogger("memory_core.server")
access_log = logging.getLogger("memory_core.server.access")
AccessLogFormat = Literal["text", "json"]


@dataclass(frozen=True)
class RequestRecord:
    """One handled request. ``status`` is ``None`` when the connection was dropped."""

    method: str
    path: str
    status: int | None
    client: tuple[str, int] | None
    workspace: str | None
    duration_ms: float


class Traffic:
    """The last ``size`` requests, thread-safe."""

    def __init__(self, size: int = 10_000) -> None:
        self._lock = threading.Lock()
        self._records: deque[RequestRecord] = deque(maxlen=size)
        self._total = 0

    def add(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)
            self._total += 1

    @property
    def total(self) -> int:
        """How many requests were ever recorded (a mark for :meth:`since`)."""
        with self._lock:
            return self._total

    def since(self, total: int) -> list[RequestRecord]:
        """The requests recorded after :attr:`total` was ``total`` (at most the last
        ``size``: positions in the record itself shift once it is full)."""
        with self._lock:
            newer = self._total - total
            return list(self._records)[-newer:] if newer > 0 else []

    def records(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def as_json(self) -> list[dict[str, Any]]:
        return [asdict(r) for r in self.records()]


class RequestLogMiddleware:
    """Times each request, logs it and records it in ``traffic`` unless that is None
    (outermost but for the server span).

    ``json_lines``: log each request as one JSON object (``time``, ``method``, ``path``,
    ``status``, ``duration_ms``, ``workspace``, and ``trace_id``/``span_id`` while a span
    is active) to the logger ``memory_core.server.access``; JSON escapes every control
    and non-ASCII character, so a line cannot be forged. Format that logger with
    ``%(message)s`` alone to get JSON lines.
    """

    def __init__(self, app: ASGIApp, traffic: Traffic | None, json_lines: bool = False) -> None:
        self.app = app
        self.traffic = traffic
        self.json_lines = json_lines

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        state = scope.setdefault("state", {})
        done: list[bool] = []

        # Recorded when the response starts, so a client that has its answer can count
        # on the record being there already. A request whose body came too late was
        # answered 408 by the protocol (see .connections): the app's answer was dropped.
        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start" and not done:
                done.append(True)
                status = 408 if state.get(TIMED_OUT) else int(message["status"])
                self._record(scope, status, state.get("workspace"), started)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if not done:
                status = 408 if state.get(TIMED_OUT) else None if state.get("dropped") else 500
                self._record(scope, status, state.get("workspace"), started)

    def _record(self, scope: Scope, status: int | None, workspace: Any, started: float) -> None:
        duration = (time.perf_counter() - started) * 1000
        client = scope.get("client")
        record = RequestRecord(
            method=scope["method"],
            path=scope["path"],
            status=status,
            client=(str(client[0]), int(client[1])) if client else None,
            workspace=workspace if isinstance(workspace, str) else None,
            duration_ms=round(duration, 3),
        )
        if self.traffic is not None:
            self.traffic.add(record)
        if self.json_lines:
            access_log.info(_json_line(record, duration))
            return
        log.info(
            "%s %s %s %.1fms workspace=%s",
            escape(record.method),
            escape(record.path),
            "dropped" if status is None else status,
            duration,
            escape(record.workspace or "-"),
        )


def _json_line(record: RequestRecord, duration: float) -> str:
    """One access line as JSON (``ensure_ascii``: every control character escaped)."""
    line: dict[str, Any] = {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "method": record.method,
        "path": record.path,
        "status": record.status,
        "duration_ms": round(duration, 3),
        "workspace": record.workspace,
    }
    ids = current_ids()
    if ids is not None:
        line["trace_id"], line["span_id"] = ids[0], ids[1]
    return json.dumps(line, ensure_ascii=True, separators=(",", ":"))
