"""HTTP server spans: the server continues the client's trace (W3C ``traceparent``).

The span of each request is the parent of the backend's memory and database spans, and
carries the workspace (``memory_core.workspace``), never the API key or any header value.
The spans themselves are made in :mod:`memory_core.telemetry.runtime`.
"""

from __future__ import annotations

from memory_core.telemetry import Telemetry
from memory_core.telemetry.runtime import ServerRequest, known_methods

from .faults import ASGIApp, Message, Receive, Scope, Send


class TracingMiddleware:
    """Outermost middleware: one server span per HTTP request."""

    def __init__(self, app: ASGIApp, telemetry: Telemetry) -> None:
        self.app = app
        self.instruments = telemetry.instruments
        self.known_methods = known_methods()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.instruments.live():
            await self.app(scope, receive, send)
            return
        request = ServerRequest(self.instruments, scope, self.known_methods)
        status: list[int] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start" and not status:
                status.append(int(message["status"]))
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            request.finish(scope, status[0] if status else None)
