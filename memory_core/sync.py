"""A blocking facade over any backend, for code that is not async.

::

    from memory_core.sync import open_backend

    with open_backend("memory://") as memory:
        memory.add_message("session-1", "user", "Hello")
        print(memory.get_conversation("session-1").messages)

:func:`open_backend` takes the same arguments as :func:`memory_core.open_backend` and
returns a :class:`SyncMemoryBackend`. It has every public method of
:class:`~memory_core.backend.MemoryBackend`, written out with the same parameters, defaults
and annotations (so type checkers and editors see the real types), the same docstrings,
errors and warnings; a test keeps the signatures equal to the async ones. Every call runs
on ONE event loop in one portal thread (anyio's blocking portal) that lives as long as the
facade; calls from several threads at once are safe and run concurrently on that loop.

A call from a thread that runs an event loop (asyncio or trio) raises
:class:`SyncCallInEventLoopError` (blocking there would freeze the loop): await the async
API instead, or call the facade from a worker thread (``anyio.to_thread.run_sync``,
``loop.run_in_executor``). Opening one there raises it too, before any portal thread is
started. A facade that is never closed is closed when it is garbage collected or, at the
latest, when the interpreter exits (its portal thread would otherwise keep the process from
exiting); a ``with`` block whose ``connect`` fails closes it at once.

Capability warnings raised by the backend during a call
(:class:`~memory_core.CapabilityWarning`) are collected on the portal thread through
:func:`memory_core.warning_channel.collect` (a context variable set for that call only),
then re-issued in the calling thread, pointing at the caller's line. :mod:`warnings` is
never patched.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable, Sequence
from contextlib import ExitStack, suppress
from datetime import datetime, timedelta
from os import PathLike
from types import TracebackType
from typing import Any, Literal, Self, TypeVar
from uuid import UUID

import anyio.from_thread

from . import requests as rq
from . import warning_channel
from .backend import ExtractionMode, MemoryBackend
from .capabilities import Capabilities
from .erasure import ErasureReport
from .errors import MemoryCoreError, TransportError
from .models import (
    Conversation,
    ConversationPage,
    ConversationSummary,
    Entity,
    ExtractionStatus,
    Fact,
    Message,
    MessageRole,
    Preference,
    ReasoningStep,
    ReasoningTrace,
    Relationship,
    SessionInfo,
    ToolCall,
    ToolCallStatus,
    ToolStats,
    TracePage,
)
from .open import open_backend as _open_async
from .retention import ExpiryReport
from .settings import Settings
from .stats import StoreStats

__all__ = ["SyncCallInEventLoopError", "SyncMemoryBackend", "open_backend", "sync_method_names"]

_T = TypeVar("_T")


class SyncCallInEventLoopError(MemoryCoreError, RuntimeError):
    """A blocking method was called from a thread that runs an event loop."""


def _shut_down(
    stack: ExitStack,
    portal: anyio.from_thread.BlockingPortal,
    backend: MemoryBackend,
    portal_thread: int,
) -> None:
    """Close ``backend`` (its errors are dropped: nobody is left to receive them) and stop
    the portal thread: for a facade that was not closed by :meth:`SyncMemoryBackend.close`.
    Never on the portal thread itself, which cannot wait for its own end."""
    if threading.get_ident() == portal_thread:
        return
    with suppress(Exception):  # best effort; the portal is stopped below regardless
        portal.call(backend.close)
    stack.close()


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
        if _in_event_loop_thread():
            # Checked before the portal thread starts: nothing is left running.
            raise SyncCallInEventLoopError(
                "memory_core.sync: open_backend() blocks and was called from a thread that "
                "runs an event loop; use memory_core.open_backend (async) there, or open the "
                "blocking backend from a worker thread (anyio.to_thread.run_sync / "
                "loop.run_in_executor)"
            )
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
        # A facade nobody closes is closed when collected, or at interpreter exit: later,
        # while the interpreter finalizes, its portal thread no longer runs and stopping it
        # would wait forever.
        self._finalizer = weakref.finalize(
            self, _shut_down, self._stack, portal, self._backend, self._portal_thread
        )

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

    # ------------------------------------------------------------ call machinery

    def _call(
        self,
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        allow_loop_thread: bool = False,
    ) -> Any:
        """Call the backend's coroutine method ``name`` and block until it returns (how
        integrations reach it by name: ``MemoryBridge.call_in_hook``).

        ``allow_loop_thread``: for frameworks that run their sync hooks on their own loop's
        thread (blocking it is their design); never on the portal's own thread."""
        return self._run(getattr(self._backend, name), name, args, kwargs, allow_loop_thread)

    def _blocking(
        self,
        method: Callable[..., Awaitable[_T]],
        arguments: dict[str, Any],
        *,
        spread: str | None = None,
    ) -> _T:
        """The body of every blocking method. ``method``: the backend's coroutine method
        of the same name (it types the result); ``arguments``: the blocking method's
        ``locals()``, i.e. all its parameters (none can be left out by mistake), passed by
        keyword; ``spread``: the name of its ``**kwargs`` parameter, if any."""
        del arguments["self"]
        if spread is not None:
            arguments.update(arguments.pop(spread))
        result: _T = self._run(method, method.__name__, (), arguments, False)
        return result

    def _run(
        self,
        method: Callable[..., Awaitable[Any]],
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        allow_loop_thread: bool,
    ) -> Any:
        """The call machinery: refuse event-loop threads and a closed facade, await
        ``method`` on the portal while collecting its capability warnings, then re-issue
        them here, in the calling thread."""
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
        found: warning_channel.Collected = []
        try:
            return self._portal.call(warning_channel.run_collecting, found, method, args, kwargs)
        except RuntimeError:
            if self._closed:  # closed by another thread while this call was starting
                raise TransportError(
                    f"{self._backend.name} backend is closed; open a new one"
                ) from None
            raise
        finally:
            warning_channel.reissue(found)  # at the application's line, in this thread

    # ------------------------------------------------------------ lifecycle

    def connect(self) -> None:
        """Blocking :meth:`MemoryBackend.connect`."""
        self._blocking(self._backend.connect, locals())

    def close(self) -> None:
        """Close the backend and stop the portal thread; the thread is stopped even when
        the backend's close raises, and that error still reaches the caller. Calling it
        again is a no-op."""
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
                self._finalizer.detach()
                self._stack.close()

    def __enter__(self) -> Self:
        try:
            self.connect()
        except BaseException:
            # No __exit__ follows a failed __enter__: close here (even on an event loop's
            # thread, where connect was refused), so that nothing is left running.
            with self._close_lock:
                self._closed = True
                self._finalizer()
            raise
        return self

    def __exit__(
        self,
        _exc_type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------ writes
    # Each method mirrors the async one (tests/sync/test_sync_signatures.py checks it);
    # at runtime its docstring is the async method's (see the end of this class).

    def add_message(
        self,
        session_id: str | UUID | None = None,
        role: MessageRole | str | None = None,
        content: str | None = None,
        *,
        conversation_id: Any = None,
        extract_entities: bool = True,
        extract_relations: bool = True,
        generate_embedding: bool = True,
        metadata: dict[str, Any] | None = None,
        extraction_mode: ExtractionMode = "auto",
        explicit_mentions: list[Any] | None = None,
        user_identifier: str | None = None,
        idempotency_key: str | None = None,
    ) -> Message:
        """Blocking :meth:`MemoryBackend.add_message`."""
        return self._blocking(self._backend.add_message, locals())

    def add_messages_batch(
        self,
        session_id: str | UUID | None = None,
        messages: list[dict[str, Any]] | None = None,
        *,
        conversation_id: Any = None,
        batch_size: int = 100,
        generate_embeddings: bool = True,
        extract_entities: bool = False,
        extract_relations: bool = True,
        on_progress: rq.ProgressCallback | None = None,
        on_batch_complete: rq.BatchCallback | None = None,
        user_identifier: str | None = None,
    ) -> list[Message]:
        """Blocking :meth:`MemoryBackend.add_messages_batch`."""
        return self._blocking(self._backend.add_messages_batch, locals())

    def bulk_add_messages(
        self,
        session_id: str | UUID | None = None,
        messages: list[dict[str, Any]] | None = None,
        *,
        conversation_id: Any = None,
        **kwargs: Any,
    ) -> list[Message]:
        """Blocking :meth:`MemoryBackend.bulk_add_messages`."""
        return self._blocking(self._backend.bulk_add_messages, locals(), spread="kwargs")

    def create_conversation(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        user_identifier: str | None = None,
    ) -> Conversation:
        """Blocking :meth:`MemoryBackend.create_conversation`."""
        return self._blocking(self._backend.create_conversation, locals())

    # ------------------------------------------------------------ reads

    def get_conversation(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        limit: int | None = None,
        since: datetime | None = None,
        user_identifier: str | None = None,
    ) -> Conversation:
        """Blocking :meth:`MemoryBackend.get_conversation`. Without ``limit``, at most
        ``capabilities.default_messages_per_read`` messages (1,000; 200 on NAMS), the
        newest, with no warning when a longer conversation is cut."""
        return self._blocking(self._backend.get_conversation, locals())

    def list_conversations(
        self, *, limit: int = 100, user_identifier: str | None = None
    ) -> list[Conversation]:
        """Blocking :meth:`MemoryBackend.list_conversations`."""
        return self._blocking(self._backend.list_conversations, locals())

    def list_conversations_page(
        self, *, limit: int = 100, cursor: str | None = None, user_identifier: str | None = None
    ) -> ConversationPage:
        """Blocking :meth:`MemoryBackend.list_conversations_page`."""
        return self._blocking(self._backend.list_conversations_page, locals())

    def list_sessions(
        self,
        *,
        prefix: str | None = None,
        limit: int = 100,
        offset: int = 0,
        order_by: str = "updated_at",
        order_dir: str = "desc",
        user_identifier: str | None = None,
    ) -> list[SessionInfo]:
        """Blocking :meth:`MemoryBackend.list_sessions`."""
        return self._blocking(self._backend.list_sessions, locals())

    def search_messages(
        self,
        query: str,
        *,
        session_id: str | UUID | None = None,
        conversation_id: Any = None,
        limit: int = 10,
        threshold: float | None = None,
        metadata_filters: dict[str, Any] | None = None,
        user_identifier: str | None = None,
        per_session: int | None = None,
        recency_half_life: timedelta | None = None,
    ) -> list[Message]:
        """Blocking :meth:`MemoryBackend.search_messages`."""
        return self._blocking(self._backend.search_messages, locals())

    def get_context(
        self,
        query: str | None = None,
        *,
        session_id: str | UUID | None = None,
        conversation_id: Any = None,
        max_messages: int = 10,
        max_hits: int = 5,
        long_term_chars: int = 2_000,
        across_sessions: bool = False,
        max_tokens: int | None = None,
        user_identifier: str | None = None,
        per_session: int | None = None,
        neighbours: int = 0,
        recency_half_life: timedelta | None = None,
    ) -> str:
        """Blocking :meth:`MemoryBackend.get_context`."""
        return self._blocking(self._backend.get_context, locals())

    def get_conversation_summary(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        user_identifier: str | None = None,
        summarizer: rq.Summarizer | None = None,
    ) -> ConversationSummary:
        """Blocking :meth:`MemoryBackend.get_conversation_summary`."""
        return self._blocking(self._backend.get_conversation_summary, locals())

    def get_observations(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        user_identifier: str | None = None,
    ) -> list[dict[str, Any]]:
        """Blocking :meth:`MemoryBackend.get_observations`."""
        return self._blocking(self._backend.get_observations, locals())

    def get_reflections(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        user_identifier: str | None = None,
    ) -> list[dict[str, Any]]:
        """Blocking :meth:`MemoryBackend.get_reflections`."""
        return self._blocking(self._backend.get_reflections, locals())

    def get_extraction_status(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        user_identifier: str | None = None,
    ) -> ExtractionStatus:
        """Blocking :meth:`MemoryBackend.get_extraction_status`."""
        return self._blocking(self._backend.get_extraction_status, locals())

    def wait_for_extraction(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        timeout: float = 60.0,
        poll_interval: float = 0.5,
        user_identifier: str | None = None,
    ) -> bool:
        """Blocking :meth:`MemoryBackend.wait_for_extraction`."""
        return self._blocking(self._backend.wait_for_extraction, locals())

    # ------------------------------------------------------------ deletes

    def delete_message(
        self, message_id: Any, *, cascade: bool = True, user_identifier: str | None = None
    ) -> bool:
        """Blocking :meth:`MemoryBackend.delete_message`."""
        return self._blocking(self._backend.delete_message, locals())

    def clear_session(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        user_identifier: str | None = None,
    ) -> bool:
        """Blocking :meth:`MemoryBackend.clear_session`."""
        return self._blocking(self._backend.clear_session, locals())

    def forget_user(
        self, user_identifier: str, *, batch_size: int = 500, dry_run: bool = False
    ) -> ErasureReport:
        """Blocking :meth:`MemoryBackend.forget_user`."""
        return self._blocking(self._backend.forget_user, locals())

    def stats(self, *, user_identifier: str | None = None) -> StoreStats:
        """Blocking :meth:`MemoryBackend.stats`."""
        return self._blocking(self._backend.stats, locals())

    def expire_conversations(
        self,
        older_than: timedelta | datetime,
        *,
        user_identifier: str | None = None,
        batch_size: int = 100,
        archive: str | PathLike[str] | None = None,
        dry_run: bool = False,
        by: str = "updated_at",
    ) -> ExpiryReport:
        """Blocking :meth:`MemoryBackend.expire_conversations`."""
        return self._blocking(self._backend.expire_conversations, locals())

    # ------------------------------------------------------------ entities

    def add_entity(
        self,
        name: str,
        type: str,
        *,
        description: str | None = None,
        user_identifier: str | None = None,
    ) -> Entity:
        """Blocking :meth:`MemoryBackend.add_entity`."""
        return self._blocking(self._backend.add_entity, locals())

    def find_entities(
        self,
        identifier: str,
        limit: int = 8,
        *,
        type: str | None = None,
        user_identifier: str | None = None,
    ) -> list[Entity]:
        """Blocking :meth:`MemoryBackend.find_entities`."""
        return self._blocking(self._backend.find_entities, locals())

    def delete_entity(self, entity_id: str, *, user_identifier: str | None = None) -> bool:
        """Blocking :meth:`MemoryBackend.delete_entity`."""
        return self._blocking(self._backend.delete_entity, locals())

    # ------------------------------------------------------------ long-term memory

    def add_preference(
        self,
        category: str,
        preference: str,
        *,
        context: str | None = None,
        confidence: float = 1.0,
        linked_entities: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        user_identifier: str | None = None,
        generate_embedding: bool = True,
    ) -> Preference:
        """Blocking :meth:`MemoryBackend.add_preference`."""
        return self._blocking(self._backend.add_preference, locals())

    def search_preferences(
        self,
        query: str,
        *,
        category: str | None = None,
        limit: int = 10,
        include_superseded: bool = False,
        user_identifier: str | None = None,
    ) -> list[Preference]:
        """Blocking :meth:`MemoryBackend.search_preferences`."""
        return self._blocking(self._backend.search_preferences, locals())

    def list_preferences(
        self,
        category: str | None = None,
        *,
        limit: int = 100,
        include_superseded: bool = False,
        user_identifier: str | None = None,
    ) -> list[Preference]:
        """Blocking :meth:`MemoryBackend.list_preferences`."""
        return self._blocking(self._backend.list_preferences, locals())

    def supersede_preference(
        self, old_id: str, new_id: str, *, user_identifier: str | None = None
    ) -> Preference:
        """Blocking :meth:`MemoryBackend.supersede_preference`."""
        return self._blocking(self._backend.supersede_preference, locals())

    def delete_preference(self, preference_id: str, *, user_identifier: str | None = None) -> bool:
        """Blocking :meth:`MemoryBackend.delete_preference`."""
        return self._blocking(self._backend.delete_preference, locals())

    def add_fact(
        self,
        subject: str,
        predicate: str,
        object: str,
        *,
        confidence: float = 1.0,
        valid_from: datetime | str | None = None,
        valid_until: datetime | str | None = None,
        source_message_id: str | UUID | None = None,
        metadata: dict[str, Any] | None = None,
        user_identifier: str | None = None,
        generate_embedding: bool = True,
    ) -> Fact:
        """Blocking :meth:`MemoryBackend.add_fact`."""
        return self._blocking(self._backend.add_fact, locals())

    def search_facts(
        self,
        query: str,
        *,
        as_of: datetime | str | None = None,
        limit: int = 10,
        user_identifier: str | None = None,
    ) -> list[Fact]:
        """Blocking :meth:`MemoryBackend.search_facts`."""
        return self._blocking(self._backend.search_facts, locals())

    def facts_about(
        self,
        subject: str,
        *,
        predicate: str | None = None,
        as_of: datetime | str | None = None,
        limit: int = 100,
        user_identifier: str | None = None,
    ) -> list[Fact]:
        """Blocking :meth:`MemoryBackend.facts_about`."""
        return self._blocking(self._backend.facts_about, locals())

    def delete_fact(self, fact_id: str, *, user_identifier: str | None = None) -> bool:
        """Blocking :meth:`MemoryBackend.delete_fact`."""
        return self._blocking(self._backend.delete_fact, locals())

    def search_entities(
        self,
        query: str,
        *,
        type: str | None = None,
        limit: int = 10,
        user_identifier: str | None = None,
    ) -> list[Entity]:
        """Blocking :meth:`MemoryBackend.search_entities`."""
        return self._blocking(self._backend.search_entities, locals())

    def get_entity(self, entity_id: str, *, user_identifier: str | None = None) -> Entity | None:
        """Blocking :meth:`MemoryBackend.get_entity`."""
        return self._blocking(self._backend.get_entity, locals())

    def get_entity_by_name(
        self, name: str, *, type: str | None = None, user_identifier: str | None = None
    ) -> Entity | None:
        """Blocking :meth:`MemoryBackend.get_entity_by_name`."""
        return self._blocking(self._backend.get_entity_by_name, locals())

    def update_entity(
        self,
        entity_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        aliases: Sequence[str] | None = None,
        attributes: dict[str, Any] | None = None,
        user_identifier: str | None = None,
    ) -> Entity:
        """Blocking :meth:`MemoryBackend.update_entity`."""
        return self._blocking(self._backend.update_entity, locals())

    def merge_entities(
        self, source_id: str, target_id: str, *, user_identifier: str | None = None
    ) -> Entity:
        """Blocking :meth:`MemoryBackend.merge_entities`."""
        return self._blocking(self._backend.merge_entities, locals())

    def add_relationship(
        self,
        source_id: str,
        target_id: str,
        type: str,
        *,
        properties: dict[str, Any] | None = None,
        confidence: float = 1.0,
        valid_from: datetime | str | None = None,
        valid_until: datetime | str | None = None,
        user_identifier: str | None = None,
    ) -> Relationship:
        """Blocking :meth:`MemoryBackend.add_relationship`."""
        return self._blocking(self._backend.add_relationship, locals())

    def list_relationships(
        self,
        entity_id: str,
        *,
        direction: Literal["out", "in", "both"] = "both",
        type: str | None = None,
        limit: int = 100,
        user_identifier: str | None = None,
    ) -> list[Relationship]:
        """Blocking :meth:`MemoryBackend.list_relationships`."""
        return self._blocking(self._backend.list_relationships, locals())

    def related_entities(
        self,
        entity_id: str,
        *,
        depth: int = 1,
        types: Sequence[str] | str | None = None,
        limit: int = 100,
        user_identifier: str | None = None,
    ) -> list[Entity]:
        """Blocking :meth:`MemoryBackend.related_entities`."""
        return self._blocking(self._backend.related_entities, locals())

    def delete_relationship(
        self, relationship_id: str, *, user_identifier: str | None = None
    ) -> bool:
        """Blocking :meth:`MemoryBackend.delete_relationship`."""
        return self._blocking(self._backend.delete_relationship, locals())

    # ------------------------------------------------------------ reasoning memory

    def start_trace(
        self,
        session_id: str,
        task: str,
        *,
        metadata: dict[str, Any] | None = None,
        triggered_by_message_id: str | UUID | None = None,
        user_identifier: str | None = None,
    ) -> ReasoningTrace:
        """Blocking :meth:`MemoryBackend.start_trace`."""
        return self._blocking(self._backend.start_trace, locals())

    def add_step(
        self,
        trace_id: str,
        *,
        thought: str | None = None,
        action: str | None = None,
        observation: str | None = None,
        metadata: dict[str, Any] | None = None,
        user_identifier: str | None = None,
    ) -> ReasoningStep:
        """Blocking :meth:`MemoryBackend.add_step`."""
        return self._blocking(self._backend.add_step, locals())

    def record_tool_call(
        self,
        step_id: str,
        tool_name: str,
        arguments: dict[str, Any] | None = None,
        *,
        result: Any = None,
        status: ToolCallStatus | str = ToolCallStatus.SUCCESS,
        duration_ms: int | None = None,
        error: str | None = None,
        user_identifier: str | None = None,
    ) -> ToolCall:
        """Blocking :meth:`MemoryBackend.record_tool_call`."""
        return self._blocking(self._backend.record_tool_call, locals())

    def complete_trace(
        self,
        trace_id: str,
        *,
        outcome: str | None = None,
        success: bool | None = None,
        user_identifier: str | None = None,
    ) -> ReasoningTrace:
        """Blocking :meth:`MemoryBackend.complete_trace`."""
        return self._blocking(self._backend.complete_trace, locals())

    def link_trace(
        self,
        trace_id: str,
        *,
        message_ids: Sequence[str | UUID] = (),
        entity_ids: Sequence[str] = (),
        user_identifier: str | None = None,
    ) -> ReasoningTrace:
        """Blocking :meth:`MemoryBackend.link_trace`."""
        return self._blocking(self._backend.link_trace, locals())

    def get_trace(
        self, trace_id: str, *, user_identifier: str | None = None
    ) -> ReasoningTrace | None:
        """Blocking :meth:`MemoryBackend.get_trace`."""
        return self._blocking(self._backend.get_trace, locals())

    def list_traces(
        self,
        session_id: str | None = None,
        *,
        limit: int = 100,
        success: bool | None = None,
        user_identifier: str | None = None,
    ) -> list[ReasoningTrace]:
        """Blocking :meth:`MemoryBackend.list_traces`."""
        return self._blocking(self._backend.list_traces, locals())

    def list_traces_page(
        self,
        session_id: str | None = None,
        *,
        limit: int = 100,
        success: bool | None = None,
        cursor: str | None = None,
        user_identifier: str | None = None,
    ) -> TracePage:
        """Blocking :meth:`MemoryBackend.list_traces_page`."""
        return self._blocking(self._backend.list_traces_page, locals())

    def tool_stats(
        self, tool_name: str | None = None, *, user_identifier: str | None = None
    ) -> list[ToolStats]:
        """Blocking :meth:`MemoryBackend.tool_stats`."""
        return self._blocking(self._backend.tool_stats, locals())

    def similar_traces(
        self,
        task: str,
        *,
        limit: int = 5,
        success_only: bool = True,
        threshold: float | None = None,
        user_identifier: str | None = None,
    ) -> list[ReasoningTrace]:
        """Blocking :meth:`MemoryBackend.similar_traces`."""
        return self._blocking(self._backend.similar_traces, locals())

    def search_steps(
        self, query: str, *, limit: int = 10, user_identifier: str | None = None
    ) -> list[ReasoningStep]:
        """Blocking :meth:`MemoryBackend.search_steps`."""
        return self._blocking(self._backend.search_steps, locals())


# help() shows the async method's full docstring; editors show the pointer written above.
# close keeps its own (it also stops the portal thread).
# (A method missing here fails tests/sync/test_sync_signatures.py, not this import.)
for _name in sync_method_names():
    _method = vars(SyncMemoryBackend).get(_name)
    if _method is not None and _name != "close":
        _method.__doc__ = getattr(MemoryBackend, _name).__doc__
del _name, _method


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
