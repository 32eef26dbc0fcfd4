"""The one exception the server's handlers raise to answer with the error envelope."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.requests import ClientDisconnect

from .. import nams_wire as wire
from .logsafe import escape

log = logging.getLogger("memory_core.server")
_Message = MutableMapping[str, Any]
_Send = Callable[[_Message], Awaitable[None]]


class ApiError(Exception):
    """An HTTP error answered as ``{"error": {"code", "message"[, "details"]}}``."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        details: Any = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = str(code)
        self.message = message
        self.details = details
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        """The JSON error envelope."""
        return wire.error_body(self.code, self.message, self.details)


def not_found(what: str = "conversation") -> ApiError:
    """404 for something unknown or not visible to the caller's workspace."""
    return ApiError(404, wire.ErrorCode.NOT_FOUND, f"{what} not found")


def invalid_limit(value: Any, maximum: int = wire.MAX_PAGE) -> ApiError:
    """400 ``invalid_limit``: a limit outside ``1..maximum``."""
    return ApiError(
        400,
        wire.ErrorCode.INVALID_LIMIT,
        f"limit must be an integer between 1 and {maximum}, got {value!r}",
    )


def check_limit(value: Any, default: int, maximum: int = wire.MAX_PAGE) -> int:
    """A limit from a query string or body: ``None`` → ``default``; else 1..maximum."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise invalid_limit(value, maximum)
    return value


class CatchAllMiddleware:
    """Answers an unexpected exception (a bug, a failing summarizer) with a 500 envelope
    instead of letting it reach the server, which would close the keep-alive connection.
    The traceback is logged."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: _Message, receive: Any, send: _Send) -> None:
        started: list[bool] = []

        async def watch(message: _Message) -> None:
            if message["type"] == "http.response.start":
                started.append(True)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except ClientDisconnect:
            # The client went away (or its body came too late) while the app read the
            # request: there is no one to answer and nothing to log as a bug.
            scope.setdefault("state", {})["dropped"] = True
        except Exception:
            if scope["type"] != "http" or started:
                raise
            log.exception(
                "unhandled error in %s %s", escape(scope["method"]), escape(scope["path"])
            )
            body = json.dumps(wire.error_body(wire.ErrorCode.INTERNAL, "internal error"))
            await send(
                {
                    "type": "http.response.start",
                    "status": 500,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": body.encode()})
