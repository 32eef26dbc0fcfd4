"""What the turn protocol returns, and its errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from ..errors import (
    InvalidRequestError,
    MemoryCoreError,
    NotFoundError,
)
from ..models import Entity, EntityRef, Message
from .reasoning import TurnReasoning

Half: TypeAlias = Literal["user", "assistant"]
EntityLike: TypeAlias = str | EntityRef | Entity

# ---------------------------------------------------------------- results and errors


@dataclass(frozen=True)
class OpenedTurn:
    """What :meth:`TurnMemory.open_turn` returns.

    ``retrieved`` are the entities found for the user message (at most
    ``retrieval_limit``). ``user_message`` is the stored user message. ``replayed`` is
    True when that message was already stored (nothing was written). ``assistant_message``
    is the stored reply when the turn was already closed, else ``None``. ``not_recorded``
    names what this backend cannot store for a turn (see :attr:`TurnMemory.not_recorded`).
    """

    turn_id: str
    conversation_id: str
    user_message: Message
    retrieved: list[Entity]
    replayed: bool
    assistant_message: Message | None = None
    not_recorded: tuple[str, ...] = ()

    @property
    def retrieved_entity_ids(self) -> list[str]:
        """Ids of the retrieved entities, in retrieval order."""
        return [entity.id for entity in self.retrieved]


@dataclass(frozen=True)
class Reply:
    """An agent reply with the entities it cites or produces.

    ``refers_to`` takes entity ids, :class:`EntityRef` or :class:`Entity` objects. Left as
    ``None``, :func:`with_memory` links the retrieved entities the text names
    (:func:`cited_entities`); an empty list links nothing. ``reasoning`` (a
    :class:`TurnReasoning`: the task, the steps with their tool calls, the outcome) is
    recorded as the turn's reasoning trace (see :meth:`TurnMemory.close_turn`).
    """

    text: str
    refers_to: list[EntityLike] | None = None
    reasoning: TurnReasoning | None = None


@dataclass(frozen=True)
class TurnResult:
    """What a :func:`with_memory` call returns.

    ``replayed`` is True when the whole turn was already stored: the stored pair is
    returned and the agent was not run.
    """

    turn_id: str
    conversation_id: str
    user_message: Message
    assistant_message: Message
    retrieved: list[Entity]
    replayed: bool = False
    not_recorded: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The stored reply text."""
        return self.assistant_message.content


class TurnIncompleteError(MemoryCoreError):
    """The user half of a turn is stored but the assistant reply, its reasoning or the
    link between them could not be.

    Complete the turn by calling ``close_turn(turn_id, assistant_message,
    refers_to=refers_to, reasoning=reasoning)`` again (the attributes hold what to pass);
    it is replay-safe. ``linking`` is True when only linking the stored reply to the
    turn's reasoning trace failed. The cause is chained (``__cause__``).
    """

    def __init__(
        self,
        conversation_id: str,
        turn_id: str,
        user_message: Message,
        assistant_message: str,
        refers_to: list[EntityRef],
        cause: BaseException,
        reasoning: TurnReasoning | None = None,
        *,
        linking: bool = False,
    ) -> None:
        self.conversation_id = conversation_id
        self.turn_id = turn_id
        self.user_message = user_message
        self.assistant_message = assistant_message
        self.refers_to = refers_to
        self.reasoning = reasoning
        self.linking = linking
        failed = (
            "the reply is stored but linking its reasoning trace to it failed"
            if linking
            else "the user message is stored but storing the assistant reply failed"
            if reasoning is None
            else "the user message is stored but storing the reasoning and reply failed"
        )
        super().__init__(
            f"turn {turn_id!r} of conversation {conversation_id!r} is incomplete: {failed} "
            f"({type(cause).__name__}). Call close_turn({turn_id!r}, ...) again with the "
            "same turn id to complete the pair; it is replay-safe."
        )


class TurnNotOpenError(NotFoundError):
    """``close_turn`` for a turn that was never opened (here or, where the backend can
    tell, in storage)."""

    def __init__(self, turn_id: str, message: str) -> None:
        self.turn_id = turn_id
        super().__init__(message)


class TurnConflictError(InvalidRequestError):
    """A turn id was reused with a different user message; nothing was written."""
