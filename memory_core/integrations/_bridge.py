"""One way for integrations to reach a backend from sync and async framework methods.

An integration accepts either a blocking :class:`~memory_core.sync.SyncMemoryBackend`
(works from sync methods on any thread, and from async methods through a worker thread)
or an async :class:`~memory_core.backend.MemoryBackend` (async methods await it on the
caller's loop; sync methods work only from a worker thread of that loop).
"""

from __future__ import annotations

import functools
from collections.abc import Generator
from typing import Any, TypeVar, cast
from uuid import uuid4

import anyio.from_thread
import anyio.to_thread

from .. import warning_channel
from ..backend import MemoryBackend
from ..capabilities import Capabilities
from ..errors import (
    ConfigurationError,
    InvalidArgumentTypeError,
    InvalidRequestError,
    NotFoundError,
    NotSupportedError,
)
from ..models import Message
from ..sync import SyncMemoryBackend
from ..warning_channel import warn_capability

Memory = MemoryBackend | SyncMemoryBackend
_T = TypeVar("_T")
Call = tuple[str, dict[str, Any]]
Plan = Generator[Call, Any, _T]
"""An operation as the backend calls it needs: each yield is one call (method and keyword
arguments), answered with its result; :meth:`MemoryBridge.drive` (blocking) and
:meth:`MemoryBridge.adrive` (awaited) make the calls, so one plan serves a framework's sync
and async methods."""


class MemoryBridge:
    """Calls backend methods by name, blocking or awaited, whichever form ``memory`` is."""

    def __init__(self, memory: Memory, *, argument: str = "memory") -> None:
        if not isinstance(memory, MemoryBackend | SyncMemoryBackend):
            raise InvalidArgumentTypeError(
                "must be a MemoryBackend or a memory_core.sync.SyncMemoryBackend, got "
                f"{type(memory).__name__}",
                argument=argument,
            )
        self.memory = memory
        self._warned: set[str] = set()

    @property
    def capabilities(self) -> Capabilities:
        """The backend's capability flags and limits."""
        return self.memory.capabilities

    @property
    def name(self) -> str:
        """The backend's name."""
        return self.memory.name

    @property
    def strict(self) -> bool:
        """True when the backend was opened with ``strict=True``."""
        return self.memory.strict

    def call(self, method: str, /, *args: Any, **kwargs: Any) -> Any:
        """Call ``method`` and block until it returns."""
        if isinstance(self.memory, SyncMemoryBackend):
            return getattr(self.memory, method)(*args, **kwargs)
        return self._call_async_backend(method, args, kwargs)

    def call_in_hook(self, method: str, /, *args: Any, **kwargs: Any) -> Any:
        """Like :meth:`call`, also from a framework's own event-loop thread (for frameworks
        whose sync hooks run there and may block it, as their own stores do)."""
        if isinstance(self.memory, SyncMemoryBackend):
            return self.memory._call(method, args, kwargs, allow_loop_thread=True)
        return self._call_async_backend(method, args, kwargs)

    def _call_async_backend(self, method: str, args: Any, kwargs: Any) -> Any:
        # The call runs on the loop's thread: its capability warnings are issued here, in
        # the calling thread, where the application's line is.
        found: warning_channel.Collected = []
        try:
            return anyio.from_thread.run(
                warning_channel.run_collecting, found, getattr(self.memory, method), args, kwargs
            )
        except RuntimeError as exc:
            if "worker thread" not in str(exc):
                raise
            raise ConfigurationError(
                f"a blocking call ({method}) on an async backend works only from a worker "
                "thread of its event loop; open the backend with memory_core.sync.open_backend "
                "for blocking use, or use the integration's async methods"
            ) from None
        finally:
            warning_channel.reissue(found)

    async def acall(self, method: str, /, *args: Any, **kwargs: Any) -> Any:
        """Call ``method`` and await it (a blocking backend runs in a worker thread, whose
        capability warnings are issued here, in the awaiting task)."""
        if isinstance(self.memory, SyncMemoryBackend):
            func = functools.partial(getattr(self.memory, method), *args, **kwargs)
            with warning_channel.reissued():
                return await anyio.to_thread.run_sync(func)
        return await getattr(self.memory, method)(*args, **kwargs)

    def drive(self, plan: Plan[_T]) -> _T:
        """Run ``plan``, each of its calls made with :meth:`call`; its return value."""
        try:
            method, kwargs = next(plan)
            while True:
                method, kwargs = plan.send(self.call(method, **kwargs))
        except StopIteration as done:
            return cast(_T, done.value)

    async def adrive(self, plan: Plan[_T]) -> _T:
        """Run ``plan``, each of its calls awaited with :meth:`acall`; its return value."""
        try:
            method, kwargs = next(plan)
            while True:
                method, kwargs = plan.send(await self.acall(method, **kwargs))
        except StopIteration as done:
            return cast(_T, done.value)

    def messages(self, *, hook: bool = False, **read: Any) -> list[Message]:
        """``get_conversation(**read).messages``; a session the store does not know (NAMS
        before its first write or after a clear) has no messages. ``hook``: called from
        a framework's sync hook (see :meth:`call_in_hook`)."""
        call = self.call_in_hook if hook else self.call
        try:
            return list(call("get_conversation", **read).messages)
        except NotFoundError:
            return []

    async def amessages(self, **read: Any) -> list[Message]:
        """The async form of :meth:`messages`."""
        try:
            return list((await self.acall("get_conversation", **read)).messages)
        except NotFoundError:
            return []

    def require(self, flag: str, method: str, workaround: str) -> None:
        """Raise ``NotSupportedError`` when the backend lacks ``flag``."""
        if not self.capabilities.supports(flag):
            raise NotSupportedError(
                self.name, method, f"needs the {flag!r} capability, which it lacks", workaround
            )

    def degrade(self, method: str, what: str, workaround: str) -> None:
        """A lossy fallback: raise when strict, else warn once per ``what``."""
        if self.strict:
            raise NotSupportedError(self.name, method, f"{what} cannot be kept", workaround)
        if what not in self._warned:
            self._warned.add(what)
            warn_capability(
                f"{self.name}.{method}: {what} cannot be kept by this backend; only role "
                f"and text are stored. {workaround}"
            )


class SessionHandle:
    """What every per-session integration holds: the bridge to the backend, the session
    it reads and writes, and the user it acts for."""

    _bridge: MemoryBridge
    session_id: str
    user_identifier: str | None

    def _bind(self, memory: Memory, session_id: str, user_identifier: str | None) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise InvalidRequestError("must be a non-empty string", argument="session_id")
        self._bridge = MemoryBridge(memory)
        self.session_id = session_id
        self.user_identifier = user_identifier


def start_session(memory: Memory, name: str | None = None, **options: Any) -> str:
    """Create a session and return the id to pass to integrations (blocking).

    Where the caller names sessions (``client_chosen_ids``) this is ``name``; where the
    store issues ids (NAMS in its reference mode) it is the new conversation's id.
    ``options`` go to ``create_conversation`` (e.g. ``user_identifier``).
    """
    bridge = MemoryBridge(memory)
    chosen = name or f"session-{uuid4().hex}"
    created = bridge.call("create_conversation", session_id=chosen, **options)
    return chosen if bridge.capabilities.client_chosen_ids else str(created.id)


async def astart_session(memory: Memory, name: str | None = None, **options: Any) -> str:
    """The async form of :func:`start_session`."""
    bridge = MemoryBridge(memory)
    chosen = name or f"session-{uuid4().hex}"
    created = await bridge.acall("create_conversation", session_id=chosen, **options)
    return chosen if bridge.capabilities.client_chosen_ids else str(created.id)


def read_all_limit(bridge: MemoryBridge) -> int | None:
    """The ``limit`` that reads a whole session: ``None`` (the backend default) where reads
    are capped, else a limit above any real conversation length."""
    if bridge.capabilities.max_messages_per_read is not None:
        return None
    return 2**31


def warn_if_truncated(bridge: MemoryBridge, method: str, count: int) -> None:
    """A full read that came back exactly at the backend's read cap may miss older
    messages: say so (strict: raise) rather than lose them silently."""
    cap = bridge.capabilities.max_messages_per_read
    if cap is None or count < cap or bridge.capabilities.full_history:
        return
    if bridge.strict:
        raise NotSupportedError(
            bridge.name,
            method,
            f"only the newest {cap} messages can be read; older ones are unreachable",
            "pass a limit, or use a backend with full_history",
        )
    if "truncated" not in bridge._warned:
        bridge._warned.add("truncated")
        warn_capability(
            f"{bridge.name}.{method}: only the newest {cap} messages can be read from this "
            "backend; older ones are unreachable"
        )
