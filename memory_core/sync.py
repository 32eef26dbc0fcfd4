"""A blocking facade over any backend, for code that is not async.

::

    from memory_core.sync import open_backend

    with open_backend("memory://") as memory:
        memory.add_message("session-1", "user", "Hello")
        print(memory.get_conversation("session-1").messages)

:func:`open_backend` takes the same arguments as :func:`memory_core.open_backend` and
returns a :class:`SyncMemoryBackend`. Its methods are generated from
:class:`~memory_core.backend.MemoryBackend` (same names, signatures, docstrings, errors and
warnings), so they cannot drift from the async API. Every call runs on ONE event loop in
one portal thread (anyio's blocking portal) that lives as long as the facade; calls from
several threads at once are safe and run concurrently on that loop.

A call from a thread that runs an event loop raises :class:`SyncCallInEventLoopError`
(blocking there would freeze the loop): await the async API instead, or call the facade
from a worker thread (``anyio.to_thread.run_sync``, ``loop.run_in_executor``).

Warnings raised by the backend during a call (e.g. :class:`~memory_core.CapabilityWarning`)
are re-issued in the calling thread and point at the caller's line. To collect them per
call, this module wraps :func:`warnings.warn` once, process-wide; the wrapper only diverts
warnings raised inside a facade call and passes every other warning through unchanged.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import sys
import threading
import warnings
from collections.abc import Callable, Coroutine
from contextlib import ExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import anyio.from_thread

from .backend import MemoryBackend
from .capabilities import Capabilities
from .errors import MemoryCoreError, TransportError
from .open import open_backend as _open_async
from .settings import Settings

__all__ = ["SyncCallInEventLoopError", "SyncMemoryBackend", "open_backend", "sync_method_names"]


class SyncCallInEventLoopError(MemoryCoreError, RuntimeError):
    """A blocking method was called from a thread that runs an event loop."""


# ---------------------------------------------------------------- warnings per call

_Captured = list[tuple[Warning | str, type[Warning]]]
_capture: contextvars.ContextVar[_Captured | None] = contextvars.ContextVar(
    "memory_core_sync_warnings", default=None
)
_hook_lock = threading.Lock()
_hooked = False


def _install_warning_hook() -> None:
    """Divert warnings raised inside facade calls to the call's list (once per process)."""
    global _hooked
    with _hook_lock:
        if _hooked:
            return
        original = warnings.warn

        @functools.wraps(original)
        def warn(
            message: Any,
            category: type[Warning] | None = None,
            stacklevel: int = 1,
            source: Any = None,
            **kwargs: Any,
        ) -> None:
            sink = _capture.get()
            if sink is None:
                # one more frame (this wrapper) between the warning and its caller
                original(message, category, stacklevel + 1, source, **kwargs)
                return
            kind = type(message) if isinstance(message, Warning) else (category or UserWarning)
            sink.append((message, kind))

        warnings.warn = warn
        _hooked = True


async def _run_capturing(
    sink: _Captured, func: Callable[..., Coroutine[Any, Any, Any]], args: Any, kwargs: Any
) -> Any:
    token = _capture.set(sink)
    try:
        return await func(*args, **kwargs)
    finally:
        _capture.reset(token)


def _in_event_loop_thread() -> bool:
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        pass
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
            return True
        except RuntimeError:
            pass
    return False


# ---------------------------------------------------------------- the facade

_LIFECYCLE = frozenset({"connect", "close"})


def sync_method_names() -> list[str]:
    """The public async methods of :class:`MemoryBackend` the facade mirrors."""
    return sorted(
        name
        for name, member in inspect.getmembers(MemoryBackend, inspect.iscoroutinefunction)
        if not name.startswith("_")
    )


class SyncMemoryBackend:
    """Blocking twin of a :class:`MemoryBackend`; build it with :func:`open_backend`.

    Every public async method of the backend is here as a blocking method with the same
    signature. Use it as a context manager, or call :meth:`close` when done.
    """

    def __init__(self, factory: Callable[[], MemoryBackend], *, portal_backend: str) -> None:
        _install_warning_hook()
        self._stack = ExitStack()
        self._closed = False
        self._close_lock = threading.Lock()
        portal = self._stack.enter_context(
            anyio.from_thread.start_blocking_portal(portal_backend, name="memory-core-portal")
        )
        self._portal = portal
        try:
            # Built on the loop thread so everything the backend creates belongs to it.
            self._backend: MemoryBackend = portal.call(factory)
            self._portal_thread: int = portal.call(threading.get_ident)
        except BaseException:
            self._stack.close()
            raise

    @property
    def backend(self) -> MemoryBackend:
        """The async backend (it lives on the portal's event loop: do not await it on
        another loop)."""
        return self._backend

    @property
    def capabilities(self) -> Capabilities:
        """The backend's capability flags and limits."""
        return self._backend.capabilities

    @property
    def name(self) -> str:
        """The backend's name (``embedded``, ``bolt``, ``nams`` …)."""
        return self._backend.name

    @property
    def strict(self) -> bool:
        """True when dropped arguments raise instead of warning."""
        return self._backend.strict

    @property
    def multi_tenant(self) -> bool:
        """True when every call must carry ``user_identifier``."""
        return self._backend.multi_tenant

    def describe(self) -> str:
        """Where this backend stores data, with no secret in it."""
        return self._backend.describe()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<SyncMemoryBackend {self._backend.describe()} {state}>"

    def _call(
        self,
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        allow_loop_thread: bool = False,
    ) -> Any:
        # allow_loop_thread: for frameworks that run their sync hooks on their own loop's
        # thread (blocking it is their design); never on the portal's own thread.
        if threading.get_ident() == self._portal_thread or (
            not allow_loop_thread and _in_event_loop_thread()
        ):
            raise SyncCallInEventLoopError(
                f"memory_core.sync: {name}() blocks and was called from a thread that runs "
                "an event loop; await the async backend's method instead, or call it from a "
                "worker thread (anyio.to_thread.run_sync / loop.run_in_executor)"
            )
        if self._closed:
            raise TransportError(f"{self._backend.name} backend is closed; open a new one")
        sink: _Captured = []
        method = getattr(self._backend, name)
        try:
            return self._portal.call(_run_capturing, sink, method, args, kwargs)
        except RuntimeError:
            if self._closed:  # closed by another thread while this call was starting
                raise TransportError(
                    f"{self._backend.name} backend is closed; open a new one"
                ) from None
            raise
        finally:
            for message, category in sink:
                # _call <- generated method <- the caller's line
                warnings.warn(message, category, stacklevel=3)

    def close(self) -> None:
        """Close the backend and stop the portal thread. Calling it again is a no-op."""
        with self._close_lock:
            if self._closed:
                return
            if _in_event_loop_thread():
                raise SyncCallInEventLoopError(
                    "memory_core.sync: close() blocks; call it from a worker thread"
                )
            try:
                self._portal.call(self._backend.close)
            finally:
                self._closed = True
                self._stack.close()

    def __enter__(self) -> Self:
        self.connect()
        return self

    def __exit__(
        self,
        _exc_type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self.close()

    if TYPE_CHECKING:
        # The blocking methods are generated below; type checkers see them as Any.
        def __getattr__(self, name: str) -> Any: ...


def _blocking(name: str, template: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: SyncMemoryBackend, /, *args: Any, **kwargs: Any) -> Any:
        return self._call(name, args, kwargs)

    method.__name__ = name
    method.__qualname__ = f"SyncMemoryBackend.{name}"
    method.__doc__ = template.__doc__
    method.__signature__ = inspect.signature(template)  # type: ignore[attr-defined]
    method.__annotations__ = dict(getattr(template, "__annotations__", {}))
    return method


for _name in sync_method_names():
    if _name not in _LIFECYCLE or _name == "connect":
        setattr(SyncMemoryBackend, _name, _blocking(_name, getattr(MemoryBackend, _name)))
del _name


def open_backend(
    url: str | Settings | None = None,
    *,
    backend: str | None = None,
    portal_backend: str = "asyncio",
    **options: Any,
) -> SyncMemoryBackend:
    """Open a backend for blocking use: the arguments of :func:`memory_core.open_backend`,
    plus ``portal_backend`` (the async library the portal thread runs, ``asyncio`` or
    ``trio``). Configuration errors are raised here; the portal thread is stopped again."""

    def build() -> MemoryBackend:
        return _open_async(url, backend=backend, **options)

    return SyncMemoryBackend(build, portal_backend=portal_backend)
