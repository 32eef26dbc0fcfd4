"""``with_memory``: wrap any agent callable with the turn protocol."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeAlias
from uuid import uuid4

import anyio
import anyio.to_thread

from ..backend import MemoryBackend
from ..errors import (
    InvalidArgumentTypeError,
)
from ..models import Entity, Message
from ..validation import check_str
from .identifiers import cited_entities
from .memory import DEFAULT_RETRIEVAL_LIMIT, TurnMemory, check_turn_id
from .results import EntityLike, OpenedTurn, Reply, TurnResult

# ---------------------------------------------------------------- the wrapper


@dataclass(frozen=True)
class TurnContext:
    """Passed to the agent by :func:`with_memory`: what memory knows for this turn."""

    turn_id: str
    conversation_id: str
    retrieved: list[Entity]
    user_message: Message
    memory: TurnMemory

    @property
    def retrieved_entity_ids(self) -> list[str]:
        """Ids of the retrieved entities, in retrieval order."""
        return [entity.id for entity in self.retrieved]


AgentResult: TypeAlias = str | Reply
AgentFn: TypeAlias = Callable[[str, TurnContext], "AgentResult | Awaitable[AgentResult]"]


class MemoryAgent:
    """An agent callable wrapped by :func:`with_memory`.

    Call it with a user message (and a ``turn_id`` to make retries replay-safe); it
    returns a :class:`TurnResult`. Concurrent calls run whole turns one at a time, in
    call order. ``memory`` is the :class:`TurnMemory` it uses.
    """

    def __init__(self, agent_fn: AgentFn, memory: TurnMemory) -> None:
        if not callable(agent_fn):
            raise InvalidArgumentTypeError("must be callable", argument="agent_fn")
        self.agent_fn = agent_fn
        self.memory = memory
        self._turn_lock = anyio.Lock()

    async def __call__(self, user_message: str, *, turn_id: str | None = None) -> TurnResult:
        """Run one turn: retrieve, store the user message, run the agent, store the reply.

        Without ``turn_id`` a new random id is used, so retrying the call stores a new
        turn; pass your own turn id (e.g. the chat platform's message id) to make
        retries collapse onto the stored turn.
        """
        text = check_str(user_message, "user_message")
        turn = uuid4().hex if turn_id is None else check_turn_id(turn_id)
        async with self._turn_lock:
            opened = await self.memory.open_turn(turn, text)
            if opened.assistant_message is not None:
                return self._result(opened, opened.assistant_message, replayed=True)
            context = TurnContext(
                turn_id=turn,
                conversation_id=self.memory.conversation_id,
                retrieved=opened.retrieved,
                user_message=opened.user_message,
                memory=self.memory,
            )
            reply = _as_reply(await self._run(text, context))
            refs: Iterable[EntityLike] = (
                cited_entities(opened.retrieved, reply.text)
                if reply.refers_to is None
                else reply.refers_to
            )
            stored = await self.memory.close_turn(
                turn, reply.text, refers_to=refs, reasoning=reply.reasoning
            )
            return self._result(opened, stored, replayed=False)

    async def _run(self, text: str, context: TurnContext) -> Any:
        fn = self.agent_fn
        if _is_async(fn):
            result: Any = fn(text, context)
        else:
            result = await anyio.to_thread.run_sync(functools.partial(fn, text, context))
        if inspect.isawaitable(result):
            result = await result
        return result

    def _result(self, opened: OpenedTurn, assistant: Message, *, replayed: bool) -> TurnResult:
        return TurnResult(
            turn_id=opened.turn_id,
            conversation_id=opened.conversation_id,
            user_message=opened.user_message,
            assistant_message=assistant,
            retrieved=opened.retrieved,
            replayed=replayed,
            not_recorded=opened.not_recorded,
        )


def _is_async(fn: Any) -> bool:
    # Also async callable objects (an ``async def __call__``).
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


def _as_reply(result: Any) -> Reply:
    if isinstance(result, Reply):
        return result
    if isinstance(result, str):
        return Reply(result)
    raise InvalidArgumentTypeError(
        f"the agent must return a str or Reply, got {type(result).__name__}", argument="reply"
    )


def with_memory(
    agent_fn: AgentFn,
    *,
    backend: MemoryBackend,
    conversation_id: str,
    platform: str,
    retrieval_limit: int = DEFAULT_RETRIEVAL_LIMIT,
    **options: Any,
) -> MemoryAgent:
    """Wrap ``agent_fn(user_message, ctx) -> str | Reply`` (sync or async) with memory.

    Every call of the returned agent follows the turn protocol: bounded retrieval, the
    user message stored, the agent run with ``ctx.retrieved``, the reply stored. Sync
    callables run in a worker thread. ``options`` go to :class:`TurnMemory`
    (``max_identifiers``, ``replay_lookback``, ``user_identifier``).
    """
    memory = TurnMemory(
        backend, conversation_id, platform, retrieval_limit=retrieval_limit, **options
    )
    return MemoryAgent(agent_fn, memory)
