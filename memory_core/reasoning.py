"""The public reasoning memory methods of :class:`~memory_core.MemoryBackend`: traces of
how an agent went about a task, their numbered steps, the tool calls of each step, tool
statistics, similar past traces and links to the messages and entities a trace touched.

Each method checks its arguments (a typed error naming the argument, before anything is
written), requires its capability flag (``traces``, ``tool_stats``, ``similar_traces``,
``trace_links``), resolves the caller's scope and calls one store hook with a request of
:mod:`memory_core.requests`.

Traces belong to a user, as preferences do: given ``user_identifier``, a write records it
and every read or write reaches only that user's traces (their steps and tool calls with
them), on every backend. Without one, a call reaches every trace of the store. On a
multi-tenant backend the user is required and no call crosses users.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from . import requests as rq
from .cursors import MAX_CURSOR_CHARS
from .errors import InvalidArgumentTypeError, InvalidRequestError
from .limits import Limits
from .models import ReasoningStep, ReasoningTrace, ToolCall, ToolCallStatus, ToolStats, TracePage
from .telemetry import instrument
from .validation import (
    check_bool,
    check_identifier,
    check_int,
    check_json_value,
    check_limit,
    check_metadata,
    check_str,
    check_threshold,
)

if TYPE_CHECKING:
    from .interface import Store
    from .policy import Policy
    from .telemetry import Telemetry

MAX_TRACE_LINKS = 100
"""Most message ids, and most entity ids, one :meth:`ReasoningMethods.link_trace` call
links."""
__all__ = ["MAX_TRACE_LINKS", "ReasoningMethods"]
_KEEP = "keep reasoning traces in your application"
_STATUSES = ", ".join(repr(s.value) for s in ToolCallStatus)


class ReasoningMethods:
    """Reasoning traces, steps, tool calls and tool statistics (mixed into
    :class:`~memory_core.MemoryBackend`)."""

    store: Store
    _policy: Policy
    _telemetry: Telemetry | None

    async def _ready(self) -> None:
        raise NotImplementedError  # MemoryBackend's

    def _reasoning_limits(self) -> Limits:
        return self.store.limits

    # ------------------------------------------------------------------ writes

    @instrument("start_trace")
    async def start_trace(
        self,
        session_id: str,
        task: str,
        *,
        metadata: dict[str, Any] | None = None,
        triggered_by_message_id: str | UUID | None = None,
        user_identifier: str | None = None,
    ) -> ReasoningTrace:
        """Start a trace of ``task`` (what the agent set out to do) in session
        ``session_id`` (a session name; no conversation needs to exist). The trace is
        open: add steps with :meth:`add_step`, then :meth:`complete_trace` it.
        ``triggered_by_message_id`` names the message that asked for the task."""
        self._policy.require("traces", "start_trace", _KEEP)
        limits = self._reasoning_limits()
        session = check_identifier(session_id, "session_id", limits, plain=True)
        text = _text(task, "task", limits)
        meta = check_metadata(metadata, "metadata", limits)
        trigger = _optional_id(triggered_by_message_id, "triggered_by_message_id", limits)
        scope = self._policy.scope("start_trace", user_identifier)
        await self._ready()
        vectors = await self._policy.embed([text], True)
        return await self.store.start_trace(
            rq.StartTrace(
                session_id=session,
                task=text,
                metadata=meta,
                triggered_by_message_id=trigger,
                embedding=vectors[0] if vectors else None,
                scope=scope,
            )
        )

    @instrument("add_step")
    async def add_step(
        self,
        trace_id: str,
        *,
        thought: str | None = None,
        action: str | None = None,
        observation: str | None = None,
        metadata: dict[str, Any] | None = None,
        user_identifier: str | None = None,
    ) -> ReasoningStep:
        """Append a step to trace ``trace_id``: what the agent ``thought``, the
        ``action`` it took and the ``observation`` it made (at least one of them). Steps
        are numbered 1, 2, 3… in the order they are added, with no gap or repeat even
        when several are added at once. An unknown trace raises ``NotFoundError``."""
        self._policy.require("traces", "add_step", _KEEP)
        limits = self._reasoning_limits()
        trace = _record_id(trace_id, "trace_id", limits)
        texts = [
            _optional_text(v, name, limits) for name, v in _step_texts(thought, action, observation)
        ]
        if all(t is None for t in texts):
            raise InvalidRequestError(
                "a step needs a thought, an action or an observation", argument="thought"
            )
        meta = check_metadata(metadata, "metadata", limits)
        scope = self._policy.scope("add_step", user_identifier)
        await self._ready()
        vectors = await self._policy.embed([" ".join(t for t in texts if t)], True)
        return await self.store.add_step(
            rq.AddStep(
                trace_id=trace,
                thought=texts[0],
                action=texts[1],
                observation=texts[2],
                metadata=meta,
                embedding=vectors[0] if vectors else None,
                scope=scope,
            )
        )

    @instrument("record_tool_call")
    async def record_tool_call(
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
        """Record a call of tool ``tool_name`` made during step ``step_id``: its
        ``arguments`` (a dict), its ``result`` (any JSON value), how it ended (``status``,
        one of :class:`~memory_core.models.ToolCallStatus`), how long it took
        (``duration_ms``) and the ``error`` it raised. An unknown step raises
        ``NotFoundError``."""
        self._policy.require("traces", "record_tool_call", _KEEP)
        limits = self._reasoning_limits()
        step = _record_id(step_id, "step_id", limits)
        name = check_identifier(tool_name, "tool_name", limits)
        args = check_metadata(arguments, "arguments", limits)
        value = check_json_value(result, "result", limits)
        ended = _status(status)
        took = None if duration_ms is None else check_int(duration_ms, "duration_ms", minimum=0)
        failure = _optional_text(error, "error", limits)
        scope = self._policy.scope("record_tool_call", user_identifier)
        await self._ready()
        return await self.store.record_tool_call(
            rq.RecordToolCall(
                step_id=step,
                tool_name=name,
                arguments=args,
                result=value,
                status=ended,
                duration_ms=took,
                error=failure,
                scope=scope,
            )
        )

    @instrument("complete_trace")
    async def complete_trace(
        self,
        trace_id: str,
        *,
        outcome: str | None = None,
        success: bool | None = None,
        user_identifier: str | None = None,
    ) -> ReasoningTrace:
        """Complete trace ``trace_id`` with its ``outcome`` and whether it was a
        ``success``, stamping ``completed_at``. A trace is completed once: calling again
        changes nothing and returns the trace as it was first completed."""
        self._policy.require("traces", "complete_trace", _KEEP)
        limits = self._reasoning_limits()
        trace = _record_id(trace_id, "trace_id", limits)
        result = _optional_text(outcome, "outcome", limits)
        worked = None if success is None else check_bool(success, "success")
        scope = self._policy.scope("complete_trace", user_identifier)
        await self._ready()
        return await self.store.complete_trace(
            rq.CompleteTrace(trace_id=trace, outcome=result, success=worked, scope=scope)
        )

    @instrument("link_trace")
    async def link_trace(
        self,
        trace_id: str,
        *,
        message_ids: Sequence[str | UUID] = (),
        entity_ids: Sequence[str] = (),
        user_identifier: str | None = None,
    ) -> ReasoningTrace:
        """Link trace ``trace_id`` to the messages and entities it touched and return it
        with its links. Every id must be known (else ``NotFoundError`` naming
        ``message_ids`` or ``entity_ids``, and nothing is linked); a link made twice is
        kept once."""
        self._policy.require("trace_links", "link_trace", _KEEP)
        limits = self._reasoning_limits()
        trace = _record_id(trace_id, "trace_id", limits)
        messages = _ids(message_ids, "message_ids", limits)
        entities = _ids(entity_ids, "entity_ids", limits)
        scope = self._policy.scope("link_trace", user_identifier)
        await self._ready()
        return await self.store.link_trace(
            rq.LinkTrace(trace_id=trace, message_ids=messages, entity_ids=entities, scope=scope)
        )

    # ------------------------------------------------------------------ reads

    @instrument("get_trace")
    async def get_trace(
        self, trace_id: str, *, user_identifier: str | None = None
    ) -> ReasoningTrace | None:
        """The trace with its steps (by number), each with its tool calls (oldest
        first), and its linked message and entity ids; ``None`` when there is none (of
        the caller's scope)."""
        self._policy.require("traces", "get_trace", _KEEP)
        trace = _record_id(trace_id, "trace_id", self._reasoning_limits())
        scope = self._policy.scope("get_trace", user_identifier)
        await self._ready()
        return await self.store.get_trace(rq.GetTrace(trace_id=trace, scope=scope))

    @instrument("list_traces")
    async def list_traces(
        self,
        session_id: str | None = None,
        *,
        limit: int = 100,
        success: bool | None = None,
        user_identifier: str | None = None,
    ) -> list[ReasoningTrace]:
        """The newest ``limit`` traces (of ``session_id`` when given), newest first,
        without their steps; ``success`` keeps only completed traces of that outcome.
        Page through more with :meth:`list_traces_page`."""
        page = await self._trace_page(
            "list_traces", session_id, limit, success, None, user_identifier
        )
        return page.traces

    @instrument("list_traces_page")
    async def list_traces_page(
        self,
        session_id: str | None = None,
        *,
        limit: int = 100,
        success: bool | None = None,
        cursor: str | None = None,
        user_identifier: str | None = None,
    ) -> TracePage:
        """One page of :meth:`list_traces`: pass ``cursor=None`` first, then each page's
        ``next_cursor`` until it is ``None``. Keyset paging: a trace started while you
        page never shifts or repeats what you have read. A cursor not made by this
        store raises ``InvalidRequestError`` naming ``cursor``."""
        return await self._trace_page(
            "list_traces_page", session_id, limit, success, cursor, user_identifier
        )

    async def _trace_page(
        self,
        method: str,
        session_id: Any,
        limit: Any,
        success: Any,
        cursor: Any,
        user_identifier: Any,
    ) -> TracePage:
        self._policy.require("traces", method, _KEEP)
        limits = self._reasoning_limits()
        session = (
            None
            if session_id is None
            else check_identifier(session_id, "session_id", limits, plain=True)
        )
        count = check_limit(limit)
        worked = None if success is None else check_bool(success, "success")
        after = (
            None
            if cursor is None
            else check_str(cursor, "cursor", allow_empty=False, max_chars=MAX_CURSOR_CHARS)
        )
        scope = self._policy.scope(method, user_identifier)
        await self._ready()
        return await self.store.list_traces(
            rq.ListTraces(
                session_id=session, success=worked, limit=count, cursor=after, scope=scope
            )
        )

    @instrument("tool_stats")
    async def tool_stats(
        self, tool_name: str | None = None, *, user_identifier: str | None = None
    ) -> list[ToolStats]:
        """What the recorded calls of each tool add up to (calls, successes, failures,
        success rate, mean duration, last use), by tool name; only ``tool_name``'s when
        given (an empty list when it was never called)."""
        self._policy.require("tool_stats", "tool_stats", _KEEP)
        limits = self._reasoning_limits()
        name = None if tool_name is None else check_identifier(tool_name, "tool_name", limits)
        scope = self._policy.scope("tool_stats", user_identifier)
        await self._ready()
        return await self.store.tool_stats(rq.ToolStatsQuery(tool_name=name, scope=scope))

    @instrument("similar_traces")
    async def similar_traces(
        self,
        task: str,
        *,
        limit: int = 5,
        success_only: bool = True,
        threshold: float | None = None,
        user_identifier: str | None = None,
    ) -> list[ReasoningTrace]:
        """Past traces whose task is like ``task`` (sharing words; with an embedder,
        also close in meaning), best first, each with ``score`` on the scale of
        :meth:`search_messages` and without steps. Only successful traces unless
        ``success_only=False``; none scoring below ``threshold`` when given."""
        self._policy.require("similar_traces", "similar_traces", _KEEP)
        limits = self._reasoning_limits()
        text = _query(task, "task", limits)
        count = self._policy.search_limit("similar_traces", limit)
        only = check_bool(success_only, "success_only")
        floor = check_threshold(threshold)
        scope = self._policy.scope("similar_traces", user_identifier)
        await self._ready()
        vectors = await self._policy.embed([text], True)
        return await self.store.similar_traces(
            rq.SimilarTraces(
                task=text,
                query_embedding=vectors[0] if vectors else None,
                limit=count,
                success_only=only,
                threshold=floor,
                scope=scope,
            )
        )

    @instrument("search_steps")
    async def search_steps(
        self, query: str, *, limit: int = 10, user_identifier: str | None = None
    ) -> list[ReasoningStep]:
        """Steps with a word of ``query`` in their thought, action or observation (with
        an embedder, also those close in meaning), best first, each with its tool calls
        and ``score``."""
        self._policy.require("similar_traces", "search_steps", _KEEP)
        text = _query(query, "query", self._reasoning_limits())
        count = self._policy.search_limit("search_steps", limit)
        scope = self._policy.scope("search_steps", user_identifier)
        await self._ready()
        vectors = await self._policy.embed([text], True)
        return await self.store.search_steps(
            rq.SearchSteps(
                query=text,
                query_embedding=vectors[0] if vectors else None,
                limit=count,
                scope=scope,
            )
        )


# ---------------------------------------------------------------------- checks


def _text(value: Any, argument: str, limits: Limits) -> str:
    return check_str(value, argument, allow_empty=False, max_chars=limits.max_content_chars)


def _optional_text(value: Any, argument: str, limits: Limits) -> str | None:
    return None if value is None else _text(value, argument, limits)


def _query(value: Any, argument: str, limits: Limits) -> str:
    return check_str(value, argument, allow_empty=False, max_chars=limits.max_query_chars)


def _step_texts(thought: Any, action: Any, observation: Any) -> list[tuple[str, Any]]:
    return [("thought", thought), ("action", action), ("observation", observation)]


def _record_id(value: Any, argument: str, limits: Limits) -> str:
    """An id a store issued: a non-empty identifier (a ``UUID`` is taken as its string)."""
    if isinstance(value, UUID):
        return str(value)
    return check_identifier(value, argument, limits, plain=True)


def _optional_id(value: Any, argument: str, limits: Limits) -> str | None:
    return None if value is None else _record_id(value, argument, limits)


def _ids(value: Any, argument: str, limits: Limits) -> tuple[str, ...]:
    """A list of record ids, each once, in order."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidArgumentTypeError(
            f"must be a list of ids, got {type(value).__name__}", argument=argument
        )
    if len(value) > MAX_TRACE_LINKS:
        raise InvalidRequestError(
            f"must hold at most {MAX_TRACE_LINKS} ids, got {len(value)}", argument=argument
        )
    return tuple(dict.fromkeys(_record_id(item, argument, limits) for item in value))


def _status(value: Any) -> str:
    """A :class:`ToolCallStatus` or its value, as the value."""
    if isinstance(value, ToolCallStatus):
        return value.value
    if not isinstance(value, str):
        raise InvalidArgumentTypeError(
            f"must be a ToolCallStatus or str, got {type(value).__name__}", argument="status"
        )
    try:
        return ToolCallStatus(value).value
    except ValueError:
        raise InvalidRequestError(
            f"{value[:40]!r} is not one of {_STATUSES}", argument="status"
        ) from None
