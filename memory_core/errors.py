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

    Two attributes say what a caller may do next, so code never has to read the message:

    ``retryable``
        the same call may succeed if made again (after a pause): a dropped connection, a
        store that was busy or restarting, a rate limit. Class default, set per instance
        where the backend knows better.
    ``maybe_applied``
        for a write: the store may or may not have applied it (the connection was lost
        after the request was sent). Retry it only with an ``idempotency_key``, or check
        first. False means nothing was written.
    ``written``
        set on an error from ``add_messages_batch`` / ``bulk_add_messages`` on a backend
        that cannot write a whole call atomically (NAMS: chunks of 100): how many messages
        of the call were acknowledged as stored before the failure (a chunk whose request
        failed in transit may have been stored too: see ``maybe_applied``). ``None`` on
        every other error, including a failed batch on an atomic backend (nothing of it
        was stored).
    """

    retryable: bool = False
    maybe_applied: bool = False
    written: int | None = None

    def __init__(
        self, *args: object, retryable: bool | None = None, maybe_applied: bool | None = None
    ) -> None:
        super().__init__(*args)
        if retryable is not None:
            self.retryable = retryable
        if maybe_applied is not None:
            self.maybe_applied = maybe_applied


class NotSupportedError(MemoryCoreError):
    """The backend cannot do what was asked (its capability flag is False).

    Attributes name the backend, the method, what is not supported and what to do instead.
    """

    def __init__(self, backend: str, method: str, message: str, workaround: str) -> None:
        self.backend = backend
        self.method = method
        self.message = message
        self.workaround = workaround
        super().__init__(f"{backend}.{method}: {_sentence(message)} Workaround: {workaround}")


def _sentence(text: str) -> str:
    """``text`` ending as a sentence does, so the next one does not run into it."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?", ":")) else text + "."


class InvalidRequestError(MemoryCoreError, ValueError):
    """An argument is invalid. ``argument`` names it; nothing was written."""

    def __init__(self, message: str, *, argument: str | None = None, details: Any = None) -> None:
        self.argument = argument
        self.details = details
        self.message = message
        prefix = f"{argument}: " if argument else ""
        super().__init__(prefix + message)


class ConflictError(InvalidRequestError):
    """The write would collide with a record that exists (renaming an entity onto the
    name and type of another). ``argument`` names the argument; nothing was written."""


class InvalidArgumentTypeError(InvalidRequestError, TypeError):
    """An argument has the wrong type, or a required one is missing."""


class MissingIdentifierError(InvalidArgumentTypeError):
    """Neither ``session_id`` nor ``conversation_id`` was given where one is required.

    It is a ``TypeError`` (CRUD calls, as the reference documents) and a ``ValueError``
    (search and context calls).
    """


class NotFoundError(MemoryCoreError, LookupError):
    """The conversation, message or entity does not exist (or is not visible to the caller).

    Every built-in backend raises it through :meth:`missing`, in one wording
    (``conversation_id: no conversation 3f2c… on the embedded backend``), with what the
    message says in fields: ``backend`` (the backend's name), ``kind`` (``"conversation"``,
    ``"entity"`` …), ``identifier`` (what was looked for, as text) and ``argument`` (the
    argument that named it). A field is ``None`` where the raiser did not say (a
    third-party store raising ``NotFoundError("...")``).
    """

    backend: str | None = None
    kind: str | None = None
    identifier: str | None = None
    argument: str | None = None

    @classmethod
    def missing(
        cls,
        backend: str,
        kind: str,
        identifier: object,
        *,
        argument: str | None = None,
        hint: str | None = None,
    ) -> NotFoundError:
        """The error for ``kind`` ``identifier`` missing on ``backend``, the one way it
        is worded. ``hint``: what to do about it, appended after a semicolon."""
        text = f"no {kind} {identifier} on the {backend} backend"
        if argument:
            text = f"{argument}: {text}"
        if hint:
            text = f"{text}; {hint}"
        error = cls(text)
        error.backend, error.kind, error.argument = backend, kind, argument
        error.identifier = str(identifier)
        return error


class AuthenticationError(MemoryCoreError):
    """The credentials were missing or rejected."""


class RateLimitedError(MemoryCoreError):
    """The service kept rate limiting. ``retry_after`` is from the last response (seconds)."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class TransportError(MemoryCoreError):
    """The store could not be reached, or the connection failed mid-request.

    Retryable unless the instance says otherwise (a closed backend, a read-only file).
    """

    retryable = True


class StoreError(MemoryCoreError):
    """The store refused or failed the operation for a reason that is neither the network
    nor an argument the contract could check (for example a schema or server error)."""


class ConfigurationError(MemoryCoreError):
    """The backend URL or options are wrong, or an optional dependency is missing."""


class CapabilityWarning(UserWarning):
    """An argument was dropped or clamped because the backend cannot honour it."""


class ForeignDataWarning(UserWarning):
    """A record another program wrote into a shared store (Bolt, PostgreSQL) holds a value
    memory-core's models cannot hold: the record was returned with that value replaced, or
    left out of the result. The message names the record, the value and which it was
    (docs: "Records another program wrote")."""


class SessionRequiredError(NotSupportedError, ValueError):
    """Search or context without a session on a backend that cannot search globally.

    A ``NotSupportedError`` (the capability is missing) and a ``ValueError`` (the type the
    reference raises when no conversation id is given to search or context).
    """


__all__ = [
    "AuthenticationError",
    "CapabilityWarning",
    "ConfigurationError",
    "ConflictError",
    "ForeignDataWarning",
    "InvalidArgumentTypeError",
    "InvalidRequestError",
    "MemoryCoreError",
    "MissingIdentifierError",
    "NotFoundError",
    "NotSupportedError",
    "RateLimitedError",
    "SessionRequiredError",
    "StoreError",
    "TransportError",
]
