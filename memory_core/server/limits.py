"""The server's size limits: request body, content, metadata, query, identifiers.

A body larger than ``max_body_bytes`` is answered ``413`` before it is read (from its
``Content-Length``), or as soon as the bytes received pass the limit (a chunked body):
never buffered whole. The other limits are checked on the parsed body before anything
is stored and answered ``400``; both with the error envelope. Every limit can be set
with a ``memory-core serve`` flag or an environment variable (:data:`ENV`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from fastapi import HTTPException

from memory_core import DEFAULT_LIMITS, ConfigurationError, InvalidRequestError, Limits
from memory_core.validation import check_identifier, check_json_value, check_metadata, check_str

from .. import nams_wire as wire
from .errors import ApiError
from .faults import ASGIApp, Message, Receive, Scope, Send

# What the server's own envelope adds around a caller's conversation metadata:
# {"nams": {"userId": <identifier>, "metadata": <caller's>}}.
ENVELOPE_DEPTH = 2
ENVELOPE_BYTES = 64


@dataclass(frozen=True)
class ServerLimits:
    """Limits of one server (defaults: the library's, plus a 16 MiB body)."""

    max_body_bytes: int = 16 * 1024 * 1024
    max_content_chars: int = DEFAULT_LIMITS.max_content_chars
    max_metadata_bytes: int = DEFAULT_LIMITS.max_metadata_bytes
    max_metadata_depth: int = DEFAULT_LIMITS.max_metadata_depth
    max_query_chars: int = DEFAULT_LIMITS.max_query_chars
    max_identifier_bytes: int = DEFAULT_LIMITS.max_identifier_bytes

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"server limit {f.name} must be an int >= 1")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **given: int | None) -> ServerLimits:
        """Limits from ``given`` values (``None``: not given), else :data:`ENV`, else
        the defaults."""
        return cls(**values_from_env(ENV, given, env, lambda name: int))

    def library(self) -> Limits:
        """The limits of the backing store: the server's, widened by its own envelope
        around conversation metadata."""
        return Limits(
            max_content_chars=self.max_content_chars,
            max_metadata_bytes=self.max_metadata_bytes + self.max_identifier_bytes + ENVELOPE_BYTES,
            max_metadata_depth=self.max_metadata_depth + ENVELOPE_DEPTH,
            max_query_chars=self.max_query_chars,
            max_identifier_bytes=self.max_identifier_bytes,
        )

    def caller(self) -> Limits:
        """The limits as the library states them, for checking request fields (the
        library's default for a limit the server has no field for: ``max_mentions``, as
        the wire carries no mentions)."""
        mine = {f.name for f in fields(self)}
        return Limits(**{f.name: getattr(self, f.name) for f in fields(Limits) if f.name in mine})


ENV: dict[str, str] = {
    "max_body_bytes": "NAMS_SERVER_MAX_BODY_BYTES",
    "max_content_chars": "NAMS_SERVER_MAX_CONTENT_CHARS",
    "max_metadata_bytes": "NAMS_SERVER_MAX_METADATA_BYTES",
    "max_metadata_depth": "NAMS_SERVER_MAX_METADATA_DEPTH",
    "max_query_chars": "NAMS_SERVER_MAX_QUERY_CHARS",
    "max_identifier_bytes": "NAMS_SERVER_MAX_IDENTIFIER_BYTES",
}


# ---------------------------------------------------------------------- field checks


def _bad(exc: InvalidRequestError) -> ApiError:
    return ApiError(400, wire.ErrorCode.INVALID_REQUEST, str(exc))


def check_content(limits: ServerLimits, content: str, argument: str = "content") -> None:
    """400 for content over ``max_content_chars``."""
    try:
        check_str(content, argument, max_chars=limits.max_content_chars)
    except InvalidRequestError as exc:
        raise _bad(exc) from None


def check_query(limits: ServerLimits, query: str) -> None:
    """400 for a query over ``max_query_chars``."""
    try:
        check_str(query, "query", max_chars=limits.max_query_chars)
    except InvalidRequestError as exc:
        raise _bad(exc) from None


def check_name(limits: ServerLimits, value: str | None, argument: str) -> None:
    """400 for an identifier (userId, entity name) over ``max_identifier_bytes``."""
    if value is None or not value.strip():
        return
    try:
        check_identifier(value, argument, limits.caller())
    except InvalidRequestError as exc:
        raise _bad(exc) from None


def check_conversation_metadata(limits: ServerLimits, metadata: Any) -> dict[str, Any]:
    """400 for metadata deeper or larger than allowed (checked before anything is stored)."""
    return check_object(limits, metadata, "metadata")


def check_object(limits: ServerLimits, value: Any, argument: str) -> dict[str, Any]:
    """400 for a JSON object (metadata, entity attributes) deeper or larger than allowed."""
    try:
        return check_metadata(value, argument, limits.caller())
    except InvalidRequestError as exc:
        raise _bad(exc) from None


def check_json(limits: ServerLimits, value: Any, argument: str) -> Any:
    """400 for a JSON value (a tool call's output) deeper or larger than metadata may be."""
    try:
        return check_json_value(value, argument, limits.caller())
    except InvalidRequestError as exc:
        raise _bad(exc) from None


# ---------------------------------------------------------------------- body size


class _BodyTooLarge(HTTPException):
    """Raised from ``receive`` once a streamed body passes the limit; FastAPI lets an
    ``HTTPException`` from body reading through, and the app's handler answers it."""


class BodyLimitMiddleware:
    """413 for a request body over ``limit`` bytes, without buffering it."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            await _answer_413(send, self.limit)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _BodyTooLarge(413, wire.too_large(self.limit))
            return message

        await self.app(scope, counted, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _answer_413(send: Send, limit: int) -> None:
    body = json.dumps(
        wire.error_body(wire.ErrorCode.PAYLOAD_TOO_LARGE, wire.too_large(limit))
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def values_from_env(
    variables: Mapping[str, str],
    given: Mapping[str, float | None],
    env: Mapping[str, str] | None,
    kind: Callable[[str], type[int] | type[float]],
) -> dict[str, Any]:
    """Each setting of ``variables`` (name → environment variable) from ``given`` (``None``:
    not given), else from the environment (``os.environ`` when ``env`` is None) read as
    ``kind(name)``; settings found in neither are left out (the dataclass default holds)."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for name, variable in variables.items():
        if given.get(name) is not None:
            values[name] = given[name]
        elif env.get(variable, "").strip():
            parse = kind(name)
            try:
                values[name] = parse(env[variable])
            except ValueError:
                what = "an integer" if parse is int else "a number"
                raise ConfigurationError(f"{variable} must be {what}") from None
    return values
