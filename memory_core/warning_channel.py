"""How the library tells a caller that it dropped an argument or clamped a limit: one
:class:`~memory_core.CapabilityWarning`, attributed to the caller's own line.

Every capability warning goes through :func:`warn_capability`. Code that must collect
the warnings of a call itself (the blocking facade runs calls on another thread) routes
them through :func:`collect` instead of touching :mod:`warnings`: inside ``with collect()``
(a context variable, so per task and per thread, inherited by the tasks started in it)
:func:`warn_capability` appends to the collected list and issues nothing.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .errors import CapabilityWarning

Collected = list[tuple[str, type[Warning]]]
"""Warnings held back by :func:`collect`: ``(message, category)`` in the order issued."""

_sink: ContextVar[Collected | None] = ContextVar("memory_core_warning_sink", default=None)

# The conformance suite lives in the package but calls the API as an application does:
# its frames are callers, not library.
_CALLER_PACKAGES = ("memory_core.conformance",)


def _ours(module: str) -> bool:
    return module.partition(".")[0] == "memory_core" and not module.startswith(_CALLER_PACKAGES)


def _is_library_frame(frame: object) -> bool:
    """A frame of memory-core, or of a method of an object whose class derives from one of
    memory-core's (a third-party store or backend subclass)."""
    if _ours(str(getattr(frame, "f_globals", {}).get("__name__", ""))):
        return True
    owner = getattr(frame, "f_locals", {}).get("self")
    return owner is not None and any(_ours(c.__module__) for c in type(owner).__mro__)


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning point at the first frame outside memory-core
    and any backend (a third-party one too: frames of a ``Store`` method): the
    line of the caller's ``await backend.method(...)``, however deep in the library the
    warning is raised (coroutine frames chain like plain calls)."""
    frame = sys._getframe(2)  # the caller of warn_capability
    level = 2
    while frame is not None:
        if not _is_library_frame(frame):
            return level
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return 2


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


def warn_capability(message: str) -> None:
    """Issue a :class:`CapabilityWarning` attributed to the caller's line (see above), or
    append it to the list of the enclosing :func:`collect`."""
    found = _sink.get()
    if found is not None:
        found.append((message, CapabilityWarning))
        return
    warnings.warn(message, CapabilityWarning, stacklevel=_caller_stacklevel())
