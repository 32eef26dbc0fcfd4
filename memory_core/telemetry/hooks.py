"""The hooks backends call on each store round trip; no OpenTelemetry import here.

A public operation of an instrumented :class:`~memory_core.MemoryBackend` sets the
operation in :data:`ACTIVE` for the time it runs; a hook finds it there, so a backend
needs no reference to the telemetry. With no operation active (telemetry off, or the
``otel`` extra absent) a hook returns a shared do-nothing object.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from types import TracebackType


class Call(Protocol):
    """One HTTP request in progress: headers to send with it, and its status when known."""

    headers: Mapping[str, str]

    def status(self, code: int) -> None: ...

    def __enter__(self) -> Call: ...

    def __exit__(
        self,
        _exc_type: type[BaseException] | None,
        exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> None: ...


class Active(Protocol):
    """The public operation running now (see :mod:`memory_core.telemetry.runtime`)."""

    def round_trip(
        self,
        system: str,
        namespace: str | None,
        server: tuple[str, int] | None,
        query: str | None,
    ) -> AbstractContextManager[None]: ...

    def http_call(self, method: str, url: str, operation: str, attempt: int) -> Call: ...


ACTIVE: ContextVar[Active | None] = ContextVar("memory_core_telemetry", default=None)
_NOTHING: AbstractContextManager[None] = nullcontext()


class _NoCall:
    headers: Mapping[str, str] = {}

    def status(self, code: int) -> None:
        """Nothing to record."""

    def __enter__(self) -> _NoCall:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None


_NO_CALL = _NoCall()


def round_trip(
    system: str,
    *,
    namespace: str | None = None,
    server: tuple[str, int] | None = None,
    query: str | None = None,
) -> AbstractContextManager[None]:
    """A database client span (and a ``db.client.operation.duration`` measurement)
    around one store round trip, named after the public operation it serves.

    ``system`` is the ``db.system.name`` (``sqlite``, ``neo4j``, ``postgresql``);
    ``query`` is recorded as ``db.query.text`` only where content capture is on.
    """
    active = ACTIVE.get()
    if active is None:
        return _NOTHING
    return active.round_trip(system, namespace, server, query)


def http_call(method: str, url: str, *, operation: str, attempt: int = 0) -> Call:
    """An HTTP client span around one request of a NAMS client (one per attempt), with
    the W3C ``traceparent`` header to send in :attr:`Call.headers`."""
    active = ACTIVE.get()
    if active is None:
        return _NO_CALL
    return active.http_call(method, url, operation, attempt)
