"""The reasoning routes over any backing store with ``traces`` (each call in the
workspace's tenant, as in :mod:`.hosted`).

The hosted service has no trace: a step belongs to a conversation and a tool call to a
step. Here a conversation's steps live in one backing trace of the conversation's
session, started by its first step, with the task :data:`TRACE_TASK` and the metadata
``{"nams": {"conversationId": …}}`` (the mark):

* ``POST /reasoning/steps`` appends a step to that trace (``reasoning`` is the thought,
  ``actionTaken`` the action, ``result`` the observation; a blank text is none, and a
  step needs one) and answers it with its ``stepNumber``. ``404`` for a conversation
  the workspace does not have.
* ``POST /reasoning/tool-calls`` records a call on ``stepId`` (required here: a call
  belongs to a step). ``input`` holding a JSON object is stored as the call's arguments;
  any other ``input`` is kept as ``{"_raw": input}`` (the reference client reads a string
  that is not JSON back as that too) and answered as it came. ``output`` is stored as
  given. ``status`` is one of :data:`~memory_core.nams_wire.TOOL_CALL_STATUSES` (default
  ``success``), else ``400``. ``404`` for a step the workspace does not have.
* ``GET /reasoning/trace/{conversationId}`` answers the steps by number and the tool
  calls of each step, oldest first; none before the first step.

Which trace holds a conversation's steps is found by listing the session's traces (the
marked ones; the oldest by start time, then id, takes the writes) and then cached. One
process never starts two (a lock per conversation, from a fixed set); two server processes
over one store whose first steps for a conversation race may each start one, then both
write to the oldest. A read merges every marked trace, numbering the steps 1, 2, 3… in
that order, so nothing written is lost either way. A backing store without ``traces``
answers ``501``.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from typing import Any

from memory_core import (
    Conversation,
    MemoryBackend,
    NotFoundError,
    ReasoningStep,
    ReasoningTrace,
    ToolCall,
)

from .. import nams_wire as wire
from .errors import ApiError, not_found
from .limits import ServerLimits, check_content, check_json, check_name, check_object

MARK = "nams"
TRACE_TASK = "NAMS conversation reasoning"
"""The task of the backing trace that holds a conversation's steps."""
RAW_INPUT = "_raw"
"""The arguments key of a tool call ``input`` that is not a JSON object."""
_LOCKS = 64
_CACHE_SIZE = 4096
_LIST_PAGE = 100


def require_traces(backend: MemoryBackend) -> None:
    """``501 not_supported`` when the backing store keeps no traces."""
    if not backend.capabilities.traces:
        raise ApiError(
            501,
            wire.ErrorCode.NOT_SUPPORTED,
            "this server's backing store keeps no reasoning traces",
        )


def _is_marked(trace: ReasoningTrace, conversation_id: str) -> bool:
    mark = trace.metadata.get(MARK)
    return isinstance(mark, dict) and mark.get("conversationId") == conversation_id


async def marked_traces(
    backend: MemoryBackend, tenant: str, conversation: Conversation
) -> list[ReasoningTrace]:
    """Every trace of the conversation's session marked for it, oldest first."""
    found: list[ReasoningTrace] = []
    cursor: str | None = None
    while True:
        page = await backend.list_traces_page(
            conversation.session_id, limit=_LIST_PAGE, cursor=cursor, user_identifier=tenant
        )
        found += [t for t in page.traces if _is_marked(t, str(conversation.id))]
        cursor = page.next_cursor
        if cursor is None or not page.traces:
            return sorted(found, key=lambda t: (t.started_at, t.id))


class ConversationTraces:
    """Which backing trace takes each conversation's steps (a bounded cache), and the
    locks that keep this process from starting two for one conversation."""

    def __init__(self) -> None:
        self._ids: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._locks = [asyncio.Lock() for _ in range(_LOCKS)]

    async def writing_trace(
        self, backend: MemoryBackend, tenant: str, conversation: Conversation
    ) -> str:
        """The id of the trace that takes the conversation's next step (started when
        there is none)."""
        key = (tenant, str(conversation.id))
        known = self._ids.get(key)
        if known is not None:
            return known
        async with self._locks[hash(key) % _LOCKS]:
            known = self._ids.get(key)
            if known is None:
                known = await self._find_or_start(backend, tenant, conversation)
                self._ids[key] = known
                while len(self._ids) > _CACHE_SIZE:
                    self._ids.popitem(last=False)
        return known

    def forget(self, tenant: str, conversation: Conversation) -> None:
        """Drop the cached trace (it is gone from the store)."""
        self._ids.pop((tenant, str(conversation.id)), None)

    @staticmethod
    async def _find_or_start(
        backend: MemoryBackend, tenant: str, conversation: Conversation
    ) -> str:
        traces = await marked_traces(backend, tenant, conversation)
        if not traces:
            await backend.start_trace(
                conversation.session_id,
                TRACE_TASK,
                metadata={MARK: {"conversationId": str(conversation.id)}},
                user_identifier=tenant,
            )
            # Listed again: another server process may have started one too, and every
            # process writes to the oldest.
            traces = await marked_traces(backend, tenant, conversation)
        return traces[0].id


def _text(value: str | None) -> str | None:
    return value if value is not None and value.strip() else None


def step_texts(limits: ServerLimits, body: wire.ReasoningStepIn) -> tuple[str | None, ...]:
    """The step's thought, action and observation (blank: none); ``400`` for none at
    all or one over the content limit."""
    named = {"reasoning": body.reasoning, "actionTaken": body.action_taken, "result": body.result}
    for name, text in named.items():
        if text is not None:
            check_content(limits, text, name)
    texts = tuple(_text(text) for text in named.values())
    if all(text is None for text in texts):
        raise ApiError(
            400,
            wire.ErrorCode.INVALID_REQUEST,
            "a step needs reasoning, actionTaken or result",
        )
    return texts


async def record_step(
    backend: MemoryBackend,
    traces: ConversationTraces,
    tenant: str,
    conversation: Conversation,
    texts: tuple[str | None, ...],
) -> wire.ReasoningStepOut:
    """Append a step of these texts (see :func:`step_texts`) to the conversation's
    trace; the step as stored."""
    trace_id = await traces.writing_trace(backend, tenant, conversation)
    try:
        step = await _append(backend, tenant, trace_id, texts)
    except NotFoundError:  # the trace was erased since it was cached: find or start again
        traces.forget(tenant, conversation)
        trace_id = await traces.writing_trace(backend, tenant, conversation)
        step = await _append(backend, tenant, trace_id, texts)
    return step_out(step, str(conversation.id), step.step_number)


async def _append(
    backend: MemoryBackend, tenant: str, trace_id: str, texts: tuple[str | None, ...]
) -> ReasoningStep:
    thought, action, observation = texts
    return await backend.add_step(
        trace_id, thought=thought, action=action, observation=observation, user_identifier=tenant
    )


def _arguments(given: str | dict[str, Any] | None) -> dict[str, Any]:
    """A tool call's ``input`` as arguments: a JSON object as itself, else kept raw."""
    if given is None:
        return {}
    if isinstance(given, dict):
        return given
    try:
        parsed = json.loads(given)
    except (ValueError, RecursionError):
        parsed = None
    return parsed if isinstance(parsed, dict) else {RAW_INPUT: given}


def _input(arguments: dict[str, Any]) -> str:
    """A tool call's arguments as the wire's ``input`` string."""
    raw = arguments.get(RAW_INPUT)
    if len(arguments) == 1 and isinstance(raw, str):
        return raw
    return json.dumps(arguments)


def check_tool_call(limits: ServerLimits, body: wire.ToolCallIn) -> dict[str, Any]:
    """The call's arguments; ``400`` for no ``stepId``, an unknown ``status`` or a field
    over the server's limits."""
    if not body.step_id:
        raise ApiError(
            400,
            wire.ErrorCode.INVALID_REQUEST,
            "stepId is required: this server records a tool call on a step",
        )
    if body.status is not None and body.status not in wire.TOOL_CALL_STATUSES:
        raise ApiError(
            400,
            wire.ErrorCode.INVALID_REQUEST,
            "status must be one of " + ", ".join(wire.TOOL_CALL_STATUSES),
        )
    check_name(limits, body.tool_name, "toolName")
    check_name(limits, body.step_id, "stepId")
    check_json(limits, body.output, "output")
    if body.error is not None:
        check_content(limits, body.error, "error")
    return check_object(limits, _arguments(body.input), "input")


async def record_tool_call(
    backend: MemoryBackend, tenant: str, body: wire.ToolCallIn, arguments: dict[str, Any]
) -> wire.ToolCallOut:
    """Record the body's tool call (its arguments checked by :func:`check_tool_call`)
    on its step; the call as stored."""
    try:
        call = await backend.record_tool_call(
            str(body.step_id),
            body.tool_name,
            arguments,
            result=body.output,
            status=body.status or wire.DEFAULT_TOOL_CALL_STATUS,
            duration_ms=body.duration_ms,
            error=body.error,
            user_identifier=tenant,
        )
    except NotFoundError:
        raise not_found("step") from None
    return tool_call_out(call)


async def read_trace(
    backend: MemoryBackend, tenant: str, conversation: Conversation
) -> wire.ReasoningTraceOut:
    """The conversation's steps (numbered in order over its marked traces) and their
    tool calls."""
    steps: list[wire.ReasoningStepOut] = []
    calls: list[wire.ToolCallOut] = []
    conversation_id = str(conversation.id)
    for header in await marked_traces(backend, tenant, conversation):
        trace = await backend.get_trace(header.id, user_identifier=tenant)
        for step in trace.steps if trace is not None else ():
            steps.append(step_out(step, conversation_id, len(steps) + 1))
            calls += [tool_call_out(call) for call in step.tool_calls]
    return wire.ReasoningTraceOut(conversation_id=conversation_id, steps=steps, tool_calls=calls)


def step_out(step: ReasoningStep, conversation_id: str, number: int) -> wire.ReasoningStepOut:
    """A step on the wire."""
    return wire.ReasoningStepOut(
        id=step.id,
        conversation_id=conversation_id,
        step_number=number,
        reasoning=step.thought,
        action_taken=step.action,
        result=step.observation,
        created_at=step.created_at,
    )


def tool_call_out(call: ToolCall) -> wire.ToolCallOut:
    """A tool call on the wire (``input`` a JSON-encoded string, as the hosted service
    sends it)."""
    return wire.ToolCallOut(
        id=call.id,
        step_id=call.step_id,
        tool_name=call.tool_name,
        input=_input(call.arguments),
        output=call.result,
        status=str(call.status),
        duration_ms=call.duration_ms,
        error=call.error,
        created_at=call.created_at,
    )
