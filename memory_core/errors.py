"""The error hierarchy every backend raises.

Every error of ours derives from :class:`MemoryCoreError`. Driver and HTTP exceptions are
translated at the backend boundary and never reach the caller raw. Some classes also derive
from a builtin (``ValueError``, ``TypeError``, ``LookupError``) so callers written against
the reference library's documented exception types keep working.
"""

from __future__ import annotations

from typing import Any


class MemoryCoreError(Exception):
    """Base class of every error raised by memory-core.

    ``written`` is set on an error from ``add_messages_batch`` / ``bulk_add_messages`` on
    a backend that cannot write a whole call atomically (NAMS: chunks of 100): how many
    messages of the call were acknowledged as stored before the failure (a chunk whose
    request failed in transit may have been stored too). It is ``None`` on every other
    error, including a failed batch on an atomic backend (nothing of it was stored).
    """

    written: int | None = None


class NotSupportedError(MemoryCoreError):
    """The backend cannot do what was asked (its capability flag is False).

    Attributes name the backend, the method, what is not supported and what to do instead.
    """

    def __init__(self, backend: str, method: str, message: str, workaround: str) -> None:
        self.backend = backend
        self.method = method
        self.message = message
        self.workaround = workaround
        super().__init__(f"{backend}.{method}: {message} Workaround: {workaround}")


class InvalidRequestError(MemoryCoreError, ValueError):
    """An argument is invalid. ``argument`` names it; nothing was written."""

    def __init__(self, message: str, *, argument: str | None = None, details: Any = None) -> None:
        self.argument = argument
        self.details = details
        self.message = message
        prefix = f"{argument}: " if argument else ""
        super().__init__(prefix + message)


class InvalidArgumentTypeError(InvalidRequestError, TypeError):
    """An argument has the wrong type, or a required one is missing."""


class MissingIdentifierError(InvalidArgumentTypeError):
    """Neither ``session_id`` nor ``conversation_id`` was given where one is required.

    It is a ``TypeError`` (CRUD calls, as the reference documents) and a ``ValueError``
    (search and context calls).
    """


class NotFoundError(MemoryCoreError, LookupError):
    """The conversation, message or entity does not exist (or is not visible to the caller)."""


class AuthenticationError(MemoryCoreError):
    """The credentials were missing or rejected."""


class RateLimitedError(MemoryCoreError):
    """The service kept rate limiting. ``retry_after`` is from the last response (seconds)."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class TransportError(MemoryCoreError):
    """The store could not be reached, or the connection failed mid-request."""


class ConfigurationError(MemoryCoreError):
    """The backend URL or options are wrong, or an optional dependency is missing."""


__all__ = [
    "AuthenticationError",
    "ConfigurationError",
    "InvalidArgumentTypeError",
    "InvalidRequestError",
    "MemoryCoreError",
    "MissingIdentifierError",
    "NotFoundError",
    "NotSupportedError",
    "RateLimitedError",
    "TransportError",
]
