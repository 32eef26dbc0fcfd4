"""The reasoning of a turn: what the agent did to produce its reply, recorded once.

A turn's reasoning is a value (:class:`TurnReasoning`) given when the turn is closed. It
is recorded as one reasoning trace of the conversation's session, before the reply:
the trace is started (linked to the user message), its steps and tool calls are added,
it is completed; then the reply is stored and linked to the trace. The store issues the
ids, so a trace is recognised by its metadata ``turn_key`` and, on a replay, continued
where an interrupted run stopped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..backend import MemoryBackend
from ..errors import InvalidArgumentTypeError, InvalidRequestError
from ..limits import Limits
from ..models import Message, ReasoningStep, ReasoningTrace, ToolCall, ToolCallStatus
from ..reasoning import MAX_TRACE_LINKS
from ..validation import (
    check_bool,
    check_identifier,
    check_int,
    check_json_value,
    check_metadata,
    check_str,
)

INTERRUPTED = "interrupted: the turn was run again and recorded in a newer trace"
"""The outcome of a turn's trace that a later run of the turn replaced."""

# ---------------------------------------------------------------- the values


@dataclass(frozen=True)
class TurnToolCall:
    """A tool call the agent made during a step: the tool's name, its ``arguments`` (a
    dict), its ``result`` (any JSON value), how it ended (``status``, a
    :class:`~memory_core.models.ToolCallStatus` or its value), how long it took
    (``duration_ms``) and the ``error`` it raised."""

    tool_name: str
    arguments: Mapping[str, Any] | None = None
    result: Any = None
    status: ToolCallStatus | str = ToolCallStatus.SUCCESS
    duration_ms: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class TurnStep:
    """A step of the agent's reasoning: what it ``thought``, the ``action`` it took and
    the ``observation`` it made (at least one), with the tool calls it made, in order."""

    thought: str | None = None
    action: str | None = None
    observation: str | None = None
    tool_calls: Sequence[TurnToolCall] = ()


@dataclass(frozen=True)
class TurnReasoning:
    """How the agent produced a reply: the ``task`` it set out to do, its ``steps`` in
    order, the ``outcome`` and whether it was a ``success``. Give it to
    :meth:`TurnMemory.close_turn` (``reasoning=``) or return it in
    :class:`Reply` (``reasoning=``)."""

    task: str
    steps: Sequence[TurnStep] = ()
    outcome: str | None = None
    success: bool | None = None


# ---------------------------------------------------------------- checks


def check_reasoning(value: Any, limits: Limits) -> TurnReasoning | None:
    """``value`` checked as a whole against ``limits`` (so a bad step is refused before
    anything is written), with plain JSON values and statuses as :class:`ToolCallStatus`."""
    if value is None:
        return None
    if not isinstance(value, TurnReasoning):
        raise InvalidArgumentTypeError(
            f"must be a TurnReasoning, got {type(value).__name__}", argument="reasoning"
        )
    steps = _items(value.steps, "reasoning.steps")
    return TurnReasoning(
        task=_text(value.task, "reasoning.task", limits),
        steps=tuple(_step(s, f"reasoning.steps[{i}]", limits) for i, s in enumerate(steps)),
        outcome=_optional_text(value.outcome, "reasoning.outcome", limits),
        success=None if value.success is None else check_bool(value.success, "reasoning.success"),
    )


def _step(value: Any, where: str, limits: Limits) -> TurnStep:
    if not isinstance(value, TurnStep):
        raise InvalidArgumentTypeError(
            f"must be a TurnStep, got {type(value).__name__}", argument=where
        )
    thought, action, observation = (
        _optional_text(getattr(value, name), f"{where}.{name}", limits)
        for name in ("thought", "action", "observation")
    )
    if thought is None and action is None and observation is None:
        raise InvalidRequestError(
            "a step needs a thought, an action or an observation", argument=where
        )
    calls = _items(value.tool_calls, f"{where}.tool_calls")
    return TurnStep(
        thought=thought,
        action=action,
        observation=observation,
        tool_calls=tuple(_call(c, f"{where}.tool_calls[{i}]", limits) for i, c in enumerate(calls)),
    )


def _call(value: Any, where: str, limits: Limits) -> TurnToolCall:
    if not isinstance(value, TurnToolCall):
        raise InvalidArgumentTypeError(
            f"must be a TurnToolCall, got {type(value).__name__}", argument=where
        )
    took = value.duration_ms
    return TurnToolCall(
        tool_name=check_identifier(value.tool_name, f"{where}.tool_name", limits),
        arguments=check_metadata(value.arguments, f"{where}.arguments", limits),
        result=check_json_value(value.result, f"{where}.result", limits),
        status=_status(value.status, f"{where}.status"),
        duration_ms=None if took is None else check_int(took, f"{where}.duration_ms", minimum=0),
        error=_optional_text(value.error, f"{where}.error", limits),
    )


def _items(value: Any, argument: str) -> Sequence[Any]:
    if not isinstance(value, list | tuple):
        raise InvalidArgumentTypeError(
            f"must be a list, got {type(value).__name__}", argument=argument
        )
    return value


def _text(value: Any, argument: str, limits: Limits) -> str:
    return check_str(value, argument, allow_empty=False, max_chars=limits.max_content_chars)


def _optional_text(value: Any, argument: str, limits: Limits) -> str | None:
    return None if value is None else _text(value, argument, limits)


def _status(value: Any, argument: str) -> ToolCallStatus:
    if not isinstance(value, str):  # a ToolCallStatus is a str
        raise InvalidArgumentTypeError(
            f"must be a ToolCallStatus or str, got {type(value).__name__}", argument=argument
        )
    try:
        return ToolCallStatus(value)
    except ValueError:
        known = ", ".join(repr(s.value) for s in ToolCallStatus)
        raise InvalidRequestError(
            f"{value[:40]!r} is not one of {known}", argument=argument
        ) from None


# ---------------------------------------------------------------- comparing


def continues(trace: ReasoningTrace, plan: TurnReasoning) -> bool:
    """Whether ``trace`` is ``plan`` recorded in order up to some write: its steps and
    their tool calls a prefix of the plan's, all of it once the trace is completed."""
    if trace.task != plan.task or len(trace.steps) > len(plan.steps):
        return False
    last = len(trace.steps) - 1
    for index, stored in enumerate(trace.steps):
        step = plan.steps[index]
        calls = stored.tool_calls
        whole = index < last or trace.completed_at is not None
        if stored.step_number != index + 1 or not _same_step(stored, step):
            return False
        if len(calls) > len(step.tool_calls) or (whole and len(calls) != len(step.tool_calls)):
            return False
        if not all(_same_call(c, p) for c, p in zip(calls, step.tool_calls, strict=False)):
            return False
    if trace.completed_at is None:
        return True
    complete = len(trace.steps) == len(plan.steps)
    return complete and (trace.outcome, trace.success) == (plan.outcome, plan.success)


def _same_step(stored: ReasoningStep, step: TurnStep) -> bool:
    return (stored.thought, stored.action, stored.observation) == (
        step.thought,
        step.action,
        step.observation,
    )


def _same_call(stored: ToolCall, call: TurnToolCall) -> bool:
    return (
        stored.tool_name == call.tool_name
        and stored.arguments == call.arguments
        and stored.result == call.result
        and stored.status == call.status
        and stored.duration_ms == call.duration_ms
        and stored.error == call.error
    )


def attempt(trace: ReasoningTrace) -> int:
    """Which run of its turn ``trace`` records (1 for the first)."""
    value = trace.metadata.get("turn_attempt")
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


# ---------------------------------------------------------------- recording


class TraceRecorder:
    """Records the reasoning of the turns of one conversation, each as one trace."""

    def __init__(
        self,
        backend: MemoryBackend,
        session_id: str,
        platform: str,
        user_identifier: str | None,
        lookback: int,
    ) -> None:
        self.backend = backend
        self.session_id = session_id
        self.platform = platform
        self.user = user_identifier
        self.lookback = lookback
        self.links = backend.capabilities.trace_links

    async def record(
        self, turn_key: str, turn_id: str, user: Message, plan: TurnReasoning, look: bool
    ) -> str:
        """Write what ``plan`` holds that storage lacks and return the trace's id.
        ``look=False``: no trace of the turn can exist yet (nothing to read)."""
        current = await self.find(turn_key) if look else None
        number = 1
        if current is not None and not continues(current, plan):
            if current.completed_at is None:
                await self.backend.complete_trace(
                    current.id, outcome=INTERRUPTED, success=False, user_identifier=self.user
                )
            number, current = attempt(current) + 1, None
        if current is None:
            current = await self.backend.start_trace(
                self.session_id,
                plan.task,
                metadata={
                    "turn_key": turn_key,
                    "turn_id": turn_id,
                    "platform": self.platform,
                    "turn_attempt": number,
                },
                triggered_by_message_id=user.id if self.links else None,
                user_identifier=self.user,
            )
        await self._fill(current, plan)
        if current.completed_at is None:
            await self.backend.complete_trace(
                current.id, outcome=plan.outcome, success=plan.success, user_identifier=self.user
            )
        return current.id

    async def _fill(self, trace: ReasoningTrace, plan: TurnReasoning) -> None:
        for index, step in enumerate(plan.steps):
            stored = trace.steps[index] if index < len(trace.steps) else None
            if stored is None:
                stored = await self.backend.add_step(
                    trace.id,
                    thought=step.thought,
                    action=step.action,
                    observation=step.observation,
                    user_identifier=self.user,
                )
            for call in step.tool_calls[len(stored.tool_calls) :]:
                await self.backend.record_tool_call(
                    stored.id,
                    call.tool_name,
                    dict(call.arguments or {}),
                    result=call.result,
                    status=call.status,
                    duration_ms=call.duration_ms,
                    error=call.error,
                    user_identifier=self.user,
                )

    async def find(self, turn_key: str) -> ReasoningTrace | None:
        """The newest run's trace of the turn, with its steps, among the newest
        ``lookback`` traces of the session."""
        page = await self.backend.list_traces_page(
            self.session_id, limit=self.lookback, user_identifier=self.user
        )
        mine = [t for t in page.traces if t.metadata.get("turn_key") == turn_key]
        if not mine:
            return None
        newest = max(mine, key=attempt)
        return await self.backend.get_trace(newest.id, user_identifier=self.user)

    async def link(self, trace: ReasoningTrace | str, user: Message, reply: Message) -> None:
        """Link the trace to the turn's messages and the entities they mention: all of
        them to a trace id just recorded, only those missing to a stored trace."""
        if not self.links:
            return
        messages = [str(user.id), str(reply.id)]
        entities = list(dict.fromkeys(r.id for r in (*user.mentions, *reply.mentions) if r.id))
        if isinstance(trace, ReasoningTrace):
            messages = [m for m in messages if m not in trace.message_ids]
            entities = [e for e in entities if e not in trace.entity_ids]
            if not messages and not entities:
                return
        trace_id = trace if isinstance(trace, str) else trace.id
        chunks = range(0, max(len(entities), 1), MAX_TRACE_LINKS)
        for number, start in enumerate(chunks):
            await self.backend.link_trace(
                trace_id,
                message_ids=messages if number == 0 else (),
                entity_ids=entities[start : start + MAX_TRACE_LINKS],
                user_identifier=self.user,
            )
