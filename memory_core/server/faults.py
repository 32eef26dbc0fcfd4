"""Fault injection for tests: forced 429s, 503 bursts, 413s and 401s, added latency,
dropped connections.

Knobs live in a :class:`Faults` object (thread-safe: a test may run the server in another
thread and turn knobs from its own). They are set at start-up (``memory-core serve
--fail-429 …``), on the object (``app.state.faults``) when the server runs in-process, or
through ``/_admin/faults`` when the server was started with ``--test-admin``.

Only ``/v1`` requests are affected. Per request, in this order: while ``pass_first`` counts
down the request goes through untouched; else a pending drop, else a pending 429, else a
pending 503, else a pending 413, else a pending 401; each consumes one count. Latency is
added to every answered request, after it was handled and before the response is sent (so
a client that times out has still reached the server: the case retries must not
duplicate). A forced 413 and 401 carry the bodies the server's own size limit and key
check send.

A dropped connection closes the socket without any response. That needs the server to
hand the app an abort callable under ``scope["extensions"][ABORT_EXTENSION]`` (the
uvicorn protocol of :mod:`.runner` does); elsewhere the request fails with a 500.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

import anyio
from pydantic import BaseModel, Field

from .. import nams_wire as wire
from .auth import unauthorized
from .errors import ApiError

ABORT_EXTENSION = "memory_core.abort_connection"
FIRED_KEPT = 1000
DropMode = Literal["before", "after"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class FaultSettings(BaseModel):
    """The knobs; ``None`` leaves a knob unchanged when updating."""

    rate_limit: int | None = Field(None, ge=0, description="answer the next N with 429")
    retry_after: float | None = Field(None, ge=0, description="Retry-After of forced 429s")
    omit_retry_after: bool | None = Field(
        None, description="forced 429s carry no Retry-After header"
    )
    unavailable: int | None = Field(None, ge=0, description="answer the next N with 503")
    unavailable_retry_after: float | None = Field(
        None, ge=0, description="Retry-After of forced 503s (default: none)"
    )
    latency: float | None = Field(None, ge=0, description="seconds added to every response")
    drop: int | None = Field(None, ge=0, description="drop the next N connections")
    drop_mode: DropMode | None = Field(
        None, description="'before' handling the request, or 'after' (it is processed)"
    )
    payload_too_large: int | None = Field(None, ge=0, description="answer the next N with 413")
    payload_limit: int | None = Field(
        None, ge=1, description="the body limit in bytes forced 413s name (default: the server's)"
    )
    unauthorized: int | None = Field(
        None, ge=0, description="answer the next N with 401, as to a rejected API key"
    )
    pass_first: int | None = Field(
        None, ge=0, description="let the next N requests through before any fault fires"
    )


@dataclass(frozen=True)
class FaultState:
    rate_limit: int = 0
    retry_after: float = 1.0
    unavailable: int = 0
    unavailable_retry_after: float | None = None
    latency: float = 0.0
    drop: int = 0
    drop_mode: DropMode = "before"
    omit_retry_after: bool = False
    payload_too_large: int = 0
    payload_limit: int | None = None
    unauthorized: int = 0
    pass_first: int = 0


@dataclass(frozen=True)
class Decision:
    """What to do with one request."""

    action: Literal["pass", "drop", "429", "503", "413", "401"]
    latency: float = 0.0
    retry_after: float | None = None
    drop_mode: DropMode = "before"
    payload_limit: int | None = None


class Faults:
    """Thread-safe fault knobs."""

    def __init__(self, **settings: Any) -> None:
        self._lock = threading.Lock()
        self._state = FaultState()
        self._fired: deque[float] = deque(maxlen=FIRED_KEPT)
        if settings:
            self.set(**settings)

    def set(self, **settings: Any) -> FaultState:
        """Update knobs by name (see :class:`FaultSettings`); returns the new state."""
        parsed = FaultSettings(**settings)
        changes = {k: v for k, v in parsed.model_dump().items() if v is not None}
        with self._lock:
            self._state = replace(self._state, **changes)
            return self._state

    def reset(self) -> None:
        """Every knob back to off."""
        with self._lock:
            self._state = FaultState()
            self._fired.clear()

    def snapshot(self) -> dict[str, Any]:
        """Every knob, plus ``fired_at``: when each fault fired since the last reset
        (``time.monotonic()`` of this process, oldest first; the last ``FIRED_KEPT``)."""
        with self._lock:
            return {**asdict(self._state), "fired_at": list(self._fired)}

    def take(self) -> Decision:
        """Decide for one request, consuming one count of the knob that fires."""
        with self._lock:
            decision = self._decide()
            if decision.action != "pass":
                self._fired.append(time.monotonic())
            return decision

    def _decide(self) -> Decision:
        """The decision for one request (the caller holds the lock)."""
        s = self._state
        if s.pass_first > 0:
            self._state = replace(s, pass_first=s.pass_first - 1)
            return Decision("pass", s.latency)
        if s.drop > 0:
            self._state = replace(s, drop=s.drop - 1)
            return Decision("drop", drop_mode=s.drop_mode)
        if s.rate_limit > 0:
            self._state = replace(s, rate_limit=s.rate_limit - 1)
            return Decision("429", s.latency, None if s.omit_retry_after else s.retry_after)
        if s.unavailable > 0:
            self._state = replace(s, unavailable=s.unavailable - 1)
            return Decision("503", s.latency, s.unavailable_retry_after)
        if s.payload_too_large > 0:
            self._state = replace(s, payload_too_large=s.payload_too_large - 1)
            return Decision("413", s.latency, payload_limit=s.payload_limit)
        if s.unauthorized > 0:
            self._state = replace(s, unauthorized=s.unauthorized - 1)
            return Decision("401", s.latency)
        return Decision("pass", s.latency)


def _retry_after_header(seconds: float) -> bytes:
    text = str(int(seconds)) if float(seconds).is_integer() else f"{seconds:g}"
    return text.encode()


async def _send_error(send: Send, error: ApiError, retry: float | None) -> None:
    body = json.dumps(error.body()).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    headers += [(k.lower().encode(), v.encode()) for k, v in error.headers.items()]
    if retry is not None:
        headers.append((b"retry-after", _retry_after_header(retry)))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class ConnectionDropped(Exception):
    """Raised where the server offers no way to abort a connection."""


class FaultMiddleware:
    """ASGI middleware applying :class:`Faults` to ``/v1`` requests. ``body_limit`` is
    the limit a forced 413 names unless the knobs say another."""

    def __init__(self, app: ASGIApp, faults: Faults, body_limit: int | None = None) -> None:
        self.app = app
        self.faults = faults
        self.body_limit = body_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(wire.API_PREFIX):
            await self.app(scope, receive, send)
            return
        decision = self.faults.take()
        if decision.action == "drop":
            await self._drop(scope, receive, decision.drop_mode)
            return
        send = self._delayed(send, decision.latency)
        error = self._error(decision)
        if error is None:
            await self.app(scope, receive, send)
        else:
            await _send_error(send, error, decision.retry_after)

    def _error(self, decision: Decision) -> ApiError | None:
        """The forced answer of ``decision`` (``None``: handle the request)."""
        if decision.action == "429":
            return ApiError(429, wire.ErrorCode.RATE_LIMITED, "rate limited")
        if decision.action == "503":
            return ApiError(503, wire.ErrorCode.UNAVAILABLE, "unavailable")
        if decision.action == "413":
            limit = decision.payload_limit or self.body_limit or 0
            return ApiError(413, wire.ErrorCode.PAYLOAD_TOO_LARGE, wire.too_large(limit))
        if decision.action == "401":
            return unauthorized("invalid API key")
        return None

    @staticmethod
    def _delayed(send: Send, latency: float) -> Send:
        if latency <= 0:
            return send

        async def delayed(message: Message) -> None:
            if message["type"] == "http.response.start":
                await anyio.sleep(latency)
            await send(message)

        return delayed

    async def _drop(self, scope: Scope, receive: Receive, mode: DropMode) -> None:
        if mode == "after":

            async def discard(message: Message) -> None:
                return None

            await self.app(scope, receive, discard)
        abort = scope.get("extensions", {}).get(ABORT_EXTENSION)
        scope.setdefault("state", {})["dropped"] = True
        if abort is None:
            raise ConnectionDropped("connection dropped by fault injection")
        abort()
        # Let the server notice the closed transport before this request returns, so it
        # does not try to answer on it.
        for _ in range(3):
            await anyio.sleep(0)
