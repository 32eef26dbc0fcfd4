"""How the library tells a caller that it dropped an argument or clamped a limit: one
:class:`~memory_core.CapabilityWarning`, attributed to the application's own line.

Every capability warning goes through :func:`warn_capability`. Code that must collect
the warnings of a call itself (the blocking facade runs calls on another thread) routes
them through :func:`collect` instead of touching :mod:`warnings`: inside ``with collect()``
(a context variable, so per task and per thread, inherited by the tasks started in it and
by the worker threads anyio starts) :func:`warn_capability` appends to the collected list
and issues nothing; :func:`reissue` then issues them where the call was made.

Which line a warning points at: the innermost frame of the calling thread that is none of

* memory-core itself (its conformance suite excepted: it calls the API as an application
  does), or a method of a class derived from one of memory-core's (a third-party store, an
  application's subclass of an integration);
* a framework an imported integration serves (:func:`add_framework`: LangChain, the OpenAI
  Agents SDK, Pydantic AI, LlamaIndex, Strands, MCP), whose code calls the integration;
* the machinery that carries a call between tasks and threads (:data:`MACHINERY`: asyncio,
  anyio, trio, threading, concurrent.futures, contextlib, functools).

That is the application's line, e.g. its ``agent.run_sync(...)`` or ``chain.invoke(...)``.
The search stops where a task or a thread starts (:data:`BOUNDARIES`): the frames below
belong to whoever runs the event loop or the thread. When a framework ran the call in a
task or thread of its own (Strands runs an agent's hooks on a thread of its own; LangChain
runs async history listeners as tasks), the application's line is on no stack the warning
can see: it then points at the framework's innermost line, failing that (a worker thread
the application started itself) at the library line that warned.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .errors import CapabilityWarning, ForeignDataWarning

Collected = list[tuple[str, type[Warning]]]
"""Warnings held back by :func:`collect`: ``(message, category)`` in the order issued."""

_sink: ContextVar[Collected | None] = ContextVar("memory_core_warning_sink", default=None)

# The conformance suite lives in the package but calls the API as an application does:
# its frames are callers, not library.
_CALLER_PACKAGES = ("memory_core.conformance",)

MACHINERY = frozenset(
    {"anyio", "asyncio", "concurrent", "contextlib", "functools", "sniffio", "threading", "trio"}
)
"""Top-level modules that only carry a call between tasks and threads: never the line a
warning points at."""

BOUNDARIES = frozenset({"asyncio.events", "threading", "trio._core._run"})
"""Modules whose frames start a task step or a thread: the search for the application's
line stops there."""

_frameworks: set[str] = set()


def add_framework(*packages: str) -> None:
    """Declare the top-level packages of a framework an integration serves (called by the
    integration module when it is imported): a warning raised while the framework calls the
    integration points past the framework's frames, at the application's line."""
    _frameworks.update(packages)


def _ours(module: str) -> bool:
    return module.partition(".")[0] == "memory_core" and not module.startswith(_CALLER_PACKAGES)


def _is_library_frame(frame: Any) -> bool:
    """A frame of memory-core, or of a method of an object whose class derives from one of
    memory-core's (a third-party store or backend subclass)."""
    if _ours(str(frame.f_globals.get("__name__", ""))):
        return True
    owner = frame.f_locals.get("self")
    return owner is not None and any(_ours(c.__module__) for c in type(owner).__mro__)


def _top(frame: Any) -> str:
    return str(frame.f_globals.get("__name__", "")).partition(".")[0]


def _is_boundary(frame: Any) -> bool:
    """Where a task or a thread starts: the frames below belong to whoever runs the event
    loop or the thread, not to the code that made the call."""
    return str(frame.f_globals.get("__name__", "")) in BOUNDARIES


def _application_stacklevel() -> int:
    """The ``stacklevel`` for a ``warnings.warn`` made by the function that calls this one:
    the application's line (see the module docstring), however deep in the library and the
    framework the warning is raised (coroutine frames chain like plain calls)."""
    frame: Any = sys._getframe(2)  # the caller of the function that warns
    level = 2
    framework: int | None = None  # the innermost frame of a framework
    while frame is not None and not _is_boundary(frame):
        if not _is_library_frame(frame):
            top = _top(frame)
            if top in _frameworks:
                framework = level if framework is None else framework
            elif top not in MACHINERY:
                return level
        frame = frame.f_back
        level += 1
    return 2 if framework is None else framework


@contextmanager
def collect() -> Iterator[Collected]:
    """Hold back the capability warnings issued in this context and yield the list they
    go to (fresh for each ``with``); the code that opened it re-issues them as it sees fit.
    Nests: the innermost ``with`` collects."""
    found: Collected = []
    token = _sink.set(found)
    try:
        yield found
    finally:
        _sink.reset(token)


def reissue(found: Collected) -> None:
    """Issue warnings collected elsewhere (another thread, the facade's portal) here, each
    pointing at the application's line; inside an enclosing :func:`collect`, hand them to
    it instead."""
    if not found:
        return
    sink = _sink.get()
    if sink is not None:
        sink.extend(found)
        return
    level = _application_stacklevel()
    for message, category in found:
        warnings.warn(message, category, stacklevel=level)


@contextmanager
def reissued() -> Iterator[None]:
    """Collect the capability warnings of the enclosed code (including a worker thread it
    awaits, which inherits the context) and :func:`reissue` them when it ends."""
    found: Collected = []
    try:
        with collect() as found:
            yield
    finally:
        reissue(found)


async def run_collecting(
    found: Collected,
    method: Callable[..., Awaitable[Any]],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Await ``method(*args, **kwargs)`` with its capability warnings going to ``found``:
    for a call made on another thread's event loop (context variables do not cross
    threads, so the collecting context is set here, inside the task; tasks the call starts
    inherit it)."""
    with collect() as collected:
        try:
            return await method(*args, **kwargs)
        finally:
            found.extend(collected)


def warn_capability(message: str) -> None:
    """Issue a :class:`CapabilityWarning` attributed to the application's line (see
    above), or append it to the list of the enclosing :func:`collect`."""
    _issue(message, CapabilityWarning)


def warn_foreign(message: str) -> None:
    """Issue a :class:`ForeignDataWarning` the same way (see :mod:`memory_core.foreign`)."""
    _issue(message, ForeignDataWarning)


def _issue(message: str, category: type[Warning]) -> None:
    found = _sink.get()
    if found is not None:
        found.append((message, category))
        return
    warnings.warn(message, category, stacklevel=_application_stacklevel())
