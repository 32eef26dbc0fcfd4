"""``TurnMemory``: the open_turn / close_turn lifecycle of one conversation."""

from __future__ import annotations

import logging
import weakref
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from uuid import uuid4

import anyio

from ..backend import MemoryBackend
from ..concurrency import all_at_once, together
from ..errors import (
    InvalidArgumentTypeError,
    NotFoundError,
)
from ..models import Entity, EntityRef, Message, MessageRole
from ..validation import check_entity_refs, check_int, check_optional_str, check_str
from .identifiers import MAX_IDENTIFIERS, extract_identifiers
from .reasoning import TraceRecorder, TurnReasoning, check_reasoning
from .results import (
    EntityLike,
    Half,
    OpenedTurn,
    TurnConflictError,
    TurnIncompleteError,
    TurnNotOpenError,
)

logger = logging.getLogger("memory_core.turns")  # one public logger name for the protocol

DEFAULT_RETRIEVAL_LIMIT = 8
DEFAULT_REPLAY_LOOKBACK = 50
TURN_LOG_SIZE = 1024
LOOKUPS_AT_ONCE = 4
"""How many of a question's identifiers the retrieval looks up at once (where the store
does not open turns in one call: NAMS)."""

# What each backend object was already warned about (see TurnMemory._warn_degraded): an
# application may make a TurnMemory per turn, and capability gaps are said once per
# backend object, as the backend's own capability warnings are.
_degraded_warned: weakref.WeakKeyDictionary[MemoryBackend, set[tuple[str, ...]]] = (
    weakref.WeakKeyDictionary()
)

# ---------------------------------------------------------------- the protocol


@dataclass
class _Turn:
    user: Message
    assistant: Message | None = None
    assistant_failed: bool = False
    # No reasoning write was tried for this turn and its user message was first stored
    # by this object: no trace of it can exist yet, so none is looked for.
    fresh: bool = False
    # The turn's trace (if any) is linked to its reply.
    settled: bool = False


@dataclass
class _Tail:
    messages: list[Message] = field(default_factory=list)

    @property
    def newest(self) -> Message | None:
        return self.messages[-1] if self.messages else None


class TurnMemory:
    """Store the turns of one conversation following the agent turn protocol.

    ``conversation_id`` is the session name on backends where the caller names sessions
    (embedded, Bolt); on NAMS it must be the id the server issued (see
    :meth:`start_conversation`). ``platform`` is recorded in each message's metadata.

    Replays. The turn id identifies a turn: ``open_turn``/``close_turn`` with a turn id
    that is already stored write nothing and return the stored messages. They are
    recognised from this object's turn log (the last 1,024 turns), else from storage:

    * where the store tells replays (embedded, Bolt, PostgreSQL:
      :attr:`~memory_core.interface.Store.tells_replays`): by the user half's keyed
      write, at any age; the reply of a replayed turn is found by ``turn_key`` among the
      newest ``replay_lookback`` (50) messages (an older one is not returned, and
      ``close_turn`` stores nothing new: its key holds).
    * with message metadata elsewhere: by ``turn_key`` among the newest
      ``replay_lookback`` (50) messages. Older replays still write nothing (idempotency
      keys) but may not be reported as ``replayed``.
    * without it (NAMS): a newest message that is a user message with the same content
      and not claimed by another turn of this object is this turn's user half (an
      unanswered user message is not stored twice); after a failed assistant write, a
      newest assistant message with the same content right after this turn's user
      message is its reply. A turn whose reply is already stored cannot be recognised by
      another process: replaying it there stores a new pair.

    Order. Calls on one ``TurnMemory`` are serialised in call order, so messages are
    stored in the order ``open_turn``/``close_turn`` were called, each reply after its
    user message. Turns opened before the previous one is closed interleave (user 1,
    user 2, reply 1, reply 2); :func:`with_memory` runs whole turns one at a time.
    Use one ``TurnMemory`` per conversation per process.
    """

    def __init__(
        self,
        backend: MemoryBackend,
        conversation_id: str,
        platform: str,
        *,
        retrieval_limit: int = DEFAULT_RETRIEVAL_LIMIT,
        max_identifiers: int = MAX_IDENTIFIERS,
        replay_lookback: int = DEFAULT_REPLAY_LOOKBACK,
        user_identifier: str | None = None,
    ) -> None:
        self.backend = backend
        self.conversation_id = check_str(conversation_id, "conversation_id", allow_empty=False)
        self.platform = check_str(platform, "platform", allow_empty=False)
        self.retrieval_limit = check_int(retrieval_limit, "retrieval_limit", minimum=1)
        self.max_identifiers = check_int(max_identifiers, "max_identifiers", minimum=1)
        self.replay_lookback = check_int(replay_lookback, "replay_lookback", minimum=1)
        self.user_identifier = check_optional_str(user_identifier, "user_identifier")
        # The user owns the conversation and is given when it is created; later calls carry
        # it only where the backend requires it (multi-tenant). NAMS, for one, cannot take a
        # user on any call but create/list, so passing it there would drop an argument.
        self._call_user = self.user_identifier if backend.multi_tenant else None
        caps = backend.capabilities
        missing = [
            ("metadata", caps.message_metadata),
            ("mentions", caps.explicit_mentions),
            ("idempotency_keys", caps.idempotency_keys),
        ]
        self._message_gaps = tuple(name for name, ok in missing if not ok)
        self.not_recorded: tuple[str, ...] = self._message_gaps + (
            () if caps.traces else ("reasoning",)
        )
        """What this backend cannot store for a turn: any of ``"metadata"``,
        ``"mentions"``, ``"idempotency_keys"``, ``"reasoning"`` (no ``traces``)."""
        self._exact = caps.message_metadata
        # The user half's keyed write says whether the turn was stored before: no read
        # of the conversation comes first (see _open_by_writing).
        self._writes_tell = (
            caps.message_metadata
            and caps.idempotency_keys
            and caps.explicit_mentions
            and backend.store.tells_replays
        )
        # ... and the store finds the entities the question names in the same call.
        self._opens_in_one = self._writes_tell and caps.entities and backend.store.opens_turns
        self._traces = (
            TraceRecorder(
                backend,
                self.conversation_id,
                self.platform,
                self.user_identifier,
                self.replay_lookback,
            )
            if caps.traces
            else None
        )
        self._turns: OrderedDict[str, _Turn] = OrderedDict()
        self._lock = anyio.Lock()
        self._conversation_ready = False

    @classmethod
    async def start_conversation(
        cls,
        backend: MemoryBackend,
        platform: str,
        *,
        conversation_id: str | None = None,
        user_identifier: str | None = None,
        **options: Any,
    ) -> TurnMemory:
        """Create a conversation and return a ``TurnMemory`` for it.

        Where the caller names sessions, ``conversation_id`` (default: a new random name)
        is used. On NAMS the server issues the id; the returned object's
        ``conversation_id`` holds it, keep it to continue the conversation later.
        """
        name = check_optional_str(conversation_id, "conversation_id")
        name = name or f"conversation-{uuid4().hex}"
        created = await backend.create_conversation(
            session_id=name, user_identifier=user_identifier
        )
        chosen = name if backend.capabilities.client_chosen_ids else str(created.id)
        memory = cls(backend, chosen, platform, user_identifier=user_identifier, **options)
        memory._conversation_ready = True
        return memory

    # ------------------------------------------------------------ public lifecycle

    async def open_turn(self, turn_id: str, user_message: str) -> OpenedTurn:
        """Retrieve what memory knows for ``user_message`` and store it (exact content).

        A replay of a stored turn writes nothing and returns the stored user message
        (and ``assistant_message`` when the turn was closed); on a store with
        ``durable_acks`` it sends the halves' keyed writes again, which store nothing
        new. Reusing a turn id with a different message raises
        :class:`TurnConflictError`.
        """
        turn = check_turn_id(turn_id)
        text = check_str(user_message, "user_message")
        async with self._lock:
            state = self._turns.get(turn)
            if state is not None:
                self._check_same(turn, state.user, text)
            if state is None and self._opens_in_one:
                retrieved, state, replayed = await self._open_in_one(turn, text)
            elif state is None and not self._writes_tell:
                retrieved, state, replayed = await self._open_after_reading(turn, text)
            else:
                retrieved = await self.retrieve(text)
                replayed = True
                if state is None:
                    state, replayed = await self._open_by_writing(turn, text, retrieved)
            self._remember(turn, state)
            if state.assistant is not None:
                await self._settle(turn, state, None)
        return OpenedTurn(
            turn_id=turn,
            conversation_id=self.conversation_id,
            user_message=state.user,
            retrieved=retrieved,
            replayed=replayed,
            assistant_message=state.assistant,
            not_recorded=self.not_recorded,
        )

    async def close_turn(
        self,
        turn_id: str,
        assistant_message: str,
        refers_to: Iterable[EntityLike] | None = None,
        *,
        reasoning: TurnReasoning | None = None,
    ) -> Message:
        """Store the assistant reply (exact content) for an opened turn and return it.

        ``refers_to`` lists the entities the reply cites or produces (ids, ``EntityRef``
        or ``Entity``). ``reasoning`` (a :class:`TurnReasoning`) is recorded first, as one
        reasoning trace of the conversation linked to both messages and the entities they
        mention; on a backend without ``traces`` it is not recorded (see
        :attr:`not_recorded`). A replay returns the stored reply and writes nothing (the
        first stored reply wins, with the reasoning recorded with it). Raises
        :class:`TurnNotOpenError` when the turn was not opened and
        :class:`TurnIncompleteError` when a write fails.
        """
        turn = check_turn_id(turn_id)
        text = check_str(assistant_message, "assistant_message")
        refs = _entity_refs(refers_to)
        plan = check_reasoning(reasoning, self.backend.limits)
        async with self._lock:
            state = self._turns.get(turn) or await self._closable_in_storage(turn)
            self._remember(turn, state)
            recorded, linking = None, state.assistant is not None
            try:
                if state.assistant is None:
                    recorded = await self._record(turn, state, plan)
                    state.assistant = await self._store_reply(turn, state, text, refs)
                    linking = True
                await self._settle(turn, state, recorded)
            except Exception as exc:
                raise TurnIncompleteError(
                    self.conversation_id,
                    turn,
                    state.user,
                    text,
                    refs,
                    exc,
                    reasoning,
                    linking=linking,
                ) from exc
            return state.assistant

    async def retrieve(self, user_message: str) -> list[Entity]:
        """Entities named in ``user_message`` (bounded; never raises for backend errors)."""
        text = check_str(user_message, "user_message")
        identifiers = extract_identifiers(text, self.max_identifiers)
        if not identifiers or not self.backend.capabilities.entities:
            return []
        try:
            exact, close = await self._named_by(identifiers)
        except Exception as exc:  # retrieval is best effort by design
            logger.warning(
                "turn retrieval failed for %d identifiers (%s); continuing with none",
                len(identifiers),
                type(exc).__name__,
            )
            return []
        found = {**exact, **{key: e for key, e in close.items() if key not in exact}}
        return list(found.values())[: self.retrieval_limit]

    async def _named_by(
        self, identifiers: list[str]
    ) -> tuple[dict[str, Entity], dict[str, Entity]]:
        """The entities ``identifiers`` name exactly, and those ``find_entities`` finds
        close to them, by id, in the identifiers' order, until ``retrieval_limit`` are named
        exactly. The lookups go out :data:`LOOKUPS_AT_ONCE` at a time: on a networked store
        each such group waits one round trip, and the next is only sent when needed."""
        exact: dict[str, Entity] = {}
        close: dict[str, Entity] = {}
        for start in range(0, len(identifiers), LOOKUPS_AT_ONCE):
            group = identifiers[start : start + LOOKUPS_AT_ONCE]
            found = await all_at_once(
                [
                    self.backend.find_entities(
                        identifier, self.retrieval_limit, user_identifier=self._call_user
                    )
                    for identifier in group
                ]
            )
            for identifier, entities in zip(group, found, strict=True):
                for entity in entities:
                    named = identifier in (entity.id, entity.name) or _same_name(entity, identifier)
                    (exact if named else close).setdefault(entity.id, entity)
                if len(exact) >= self.retrieval_limit:
                    return exact, close
        return exact, close

    # ------------------------------------------------------------ storage

    async def _open_after_reading(self, turn: str, text: str) -> tuple[list[Entity], _Turn, bool]:
        """Where the write cannot tell a replay: read the conversation's newest messages
        for the turn, and write the user half only when they do not hold it. The
        retrieval and the read are independent: they are sent at once (one wait)."""
        retrieved, tail = await together(self.retrieve(text), self._read_tail(self._tail_size()))
        stored = self._stored_turn(turn, tail, text)
        if stored is not None:
            self._check_same(turn, stored.user, text)
            return retrieved, await self._confirmed(turn, stored), True
        refs = [EntityRef(id=entity.id) for entity in retrieved]
        user = await self._write("user", turn, text, refs)
        self._check_same(turn, user, text)
        # Timestamps never decrease, so a "new" message older than the newest one we
        # just read was already stored (an idempotent replay beyond the lookback).
        newest = tail.newest
        replayed = newest is not None and user.created_at < newest.created_at
        return retrieved, _Turn(user, fresh=not replayed), replayed

    async def _open_by_writing(
        self, turn: str, text: str, retrieved: list[Entity]
    ) -> tuple[_Turn, bool]:
        """Write the user half first; only a replay reads the conversation (for the
        turn's reply). A replay's user half is the stored one, acknowledged by this
        write; its reply, found by reading, is confirmed as :meth:`_confirmed` says."""
        refs = [EntityRef(id=entity.id) for entity in retrieved]
        options = await self._write_options("user", turn, refs)
        _, user, replayed = await self.backend._add_keyed(
            self.conversation_id,
            MessageRole.USER,
            text,
            options["metadata"],
            options["idempotency_key"],
            refs,
            self._call_user,
        )
        return await self._opened(turn, text, user, bool(replayed))

    async def _open_in_one(self, turn: str, text: str) -> tuple[list[Entity], _Turn, bool]:
        """Retrieval and the user half's write in one call of the store (see
        :meth:`_open_by_writing`). Unlike :meth:`retrieve`, a failed lookup fails the
        call: it is the write's own statement."""
        options = await self._write_options("user", turn, [])
        identifiers = extract_identifiers(text, self.max_identifiers)
        found, user, replayed = await self.backend._add_keyed(
            self.conversation_id,
            MessageRole.USER,
            text,
            options["metadata"],
            options["idempotency_key"],
            [],
            self._call_user,
            (identifiers, self.retrieval_limit),
        )
        state, replayed = await self._opened(turn, text, user, bool(replayed))
        return found, state, replayed

    async def _opened(
        self, turn: str, text: str, user: Message, replayed: bool
    ) -> tuple[_Turn, bool]:
        self._check_same(turn, user, text)
        if not replayed:
            return _Turn(user, fresh=True), False
        stored = self._stored_turn(turn, await self._read_tail(self._tail_size()), None)
        found = _Turn(user, None if stored is None else stored.assistant)
        return await self._confirmed(turn, found, ("assistant",)), True

    async def _closable_in_storage(self, turn: str) -> _Turn:
        if not self._exact:
            raise TurnNotOpenError(
                turn,
                f"turn {turn!r} was not opened by this TurnMemory, and the "
                f"{self.backend.name} backend stores no turn ids to find it by; call "
                "open_turn(turn_id, user_message) first (a replay is safe)",
            )
        stored = self._stored_turn(turn, await self._read_tail(self._tail_size()), None)
        if stored is None:
            raise TurnNotOpenError(
                turn,
                f"turn {turn!r} was not opened: it is neither in this TurnMemory nor among "
                f"the newest {self._tail_size()} messages of the conversation; call "
                "open_turn(turn_id, user_message) first",
            )
        return await self._confirmed(turn, stored)

    async def _confirmed(
        self, turn: str, stored: _Turn, halves: tuple[Half, ...] = ("user", "assistant")
    ) -> _Turn:
        """``stored``, found by reading the conversation, with each half this protocol
        wrote under its idempotency key written again under it (which stores nothing
        new). A half found by a read may be one whose write was reported in doubt, on a
        server that may still lose it; only a write is checked for that (PostgreSQL's
        ``require_standby``), so on such a store (``durable_acks``) a replay is acknowledged
        only through one. Elsewhere ``stored`` as found: a replay writes nothing."""
        if not self.backend.store.durable_acks:
            return stored
        for half in halves:
            found: Message | None = getattr(stored, half)
            if found is not None and found.idempotency_key == self._idempotency_key(turn, half):
                setattr(stored, half, await self._write(half, turn, found.content, []))
        return stored

    def _stored_turn(self, turn: str, tail: _Tail, text: str | None) -> _Turn | None:
        if self._exact:
            user = next((m for m in tail.messages if self._is_half(m, turn, "user")), None)
            if user is None:
                return None
            reply = next((m for m in tail.messages if self._is_half(m, turn, "assistant")), None)
            return _Turn(user, reply)
        newest = tail.newest
        claimed = {state.user.id for state in self._turns.values()}
        if (
            newest is not None
            and newest.role == MessageRole.USER
            and newest.content == text
            and newest.id not in claimed
        ):
            return _Turn(newest)
        return None

    async def _record(self, turn: str, state: _Turn, plan: TurnReasoning | None) -> str | None:
        """Record the turn's reasoning (before its reply) and return the trace's id."""
        if plan is None:
            return None
        if self._traces is None:
            self._warn_degraded(("reasoning",))
            return None
        # From the first try on, a write may have reached the store: later tries look.
        look, state.fresh = not state.fresh, False
        return await self._traces.record(self._turn_key(turn, "user"), turn, state.user, plan, look)

    async def _settle(self, turn: str, state: _Turn, recorded: str | None) -> None:
        """Link the turn's trace to its stored reply: the trace just ``recorded``, else
        the completed trace storage holds for the turn (none when the turn is fresh)."""
        if state.settled or state.assistant is None:
            return
        if self._traces is not None and (recorded is not None or not state.fresh):
            found = recorded or await self._traces.find(self._turn_key(turn, "user"))
            if isinstance(found, str) or (found is not None and found.completed_at is not None):
                await self._traces.link(found, state.user, state.assistant)
        state.settled = True

    async def _store_reply(
        self, turn: str, state: _Turn, text: str, refs: list[EntityRef]
    ) -> Message:
        try:
            if state.assistant_failed and not self.backend.capabilities.idempotency_keys:
                # The failed write may have reached the store: adopt it rather than
                # store the reply twice.
                stored = await self._stored_reply(turn, state, text)
                if stored is not None:
                    return stored
            return await self._write("assistant", turn, text, refs)
        except Exception:
            state.assistant_failed = True
            raise

    async def _stored_reply(self, turn: str, state: _Turn, text: str) -> Message | None:
        """The reply of ``turn`` if storage holds it: by ``turn_key`` where messages carry
        metadata, else an identical assistant message right after the user half at the
        newest end of the conversation."""
        if self._exact:
            stored = self._stored_turn(turn, await self._read_tail(self._tail_size()), None)
            return None if stored is None else stored.assistant
        messages = (await self._read_tail(2)).messages
        if (
            len(messages) == 2
            and messages[0].id == state.user.id
            and messages[1].role == MessageRole.ASSISTANT
            and messages[1].content == text
        ):
            return messages[1]
        return None

    async def _write(self, half: Half, turn: str, text: str, refs: list[EntityRef]) -> Message:
        options = await self._write_options(half, turn, refs)
        return await self.backend.add_message(
            session_id=self.conversation_id,
            role=half,
            content=text,
            user_identifier=self._call_user,
            **options,
        )

    async def _write_options(self, half: Half, turn: str, refs: list[EntityRef]) -> dict[str, Any]:
        """The keywords of a half's ``add_message``, once the conversation exists."""
        caps = self.backend.capabilities
        options: dict[str, Any] = {}
        if caps.message_metadata:
            options["metadata"] = {
                "turn_key": self._turn_key(turn, half),
                "sender_kind": half,
                "platform": self.platform,
                "turn_id": turn,
            }
        if caps.idempotency_keys:
            options["idempotency_key"] = self._idempotency_key(turn, half)
        if caps.explicit_mentions:
            options["extraction_mode"] = "explicit" if refs else "skip"
            if refs:
                options["explicit_mentions"] = refs
        await self._ensure_conversation()
        self._warn_degraded(self._message_gaps)
        return options

    async def _read_tail(self, size: int) -> _Tail:
        try:
            conversation = await self.backend.get_conversation(
                session_id=self.conversation_id,
                limit=size,
                user_identifier=self._call_user,
            )
        except NotFoundError as exc:
            raise NotFoundError.missing(
                self.backend.name,
                "conversation",
                self.conversation_id,
                argument="conversation_id",
                hint="create it first (TurnMemory.start_conversation) and use the id it returns",
            ) from exc
        return _Tail(list(conversation.messages))

    async def _ensure_conversation(self) -> None:
        if self._conversation_ready:
            return
        caps = self.backend.capabilities
        # Only the conversation's owner needs the call: the first write makes the rest.
        owner = self.user_identifier is not None or not caps.auto_create_conversation
        if caps.client_chosen_ids and owner:
            await self.backend.create_conversation(
                session_id=self.conversation_id, user_identifier=self.user_identifier
            )  # the one call that always carries the user
        self._conversation_ready = True

    # ------------------------------------------------------------ helpers

    def _tail_size(self) -> int:
        if not self._exact:
            return 2
        cap = self.backend.capabilities.max_messages_per_read
        return self.replay_lookback if cap is None else min(self.replay_lookback, cap)

    def _turn_key(self, turn: str, half: Half) -> str:
        key = f"{self.conversation_id}:{turn}"
        return key if half == "user" else f"{key}:assistant"

    def _idempotency_key(self, turn: str, half: Half) -> str:
        return f"conversation-{self.conversation_id}-{turn}-{half}"

    def _is_half(self, message: Message, turn: str, half: Half) -> bool:
        if message.role != MessageRole(half):
            return False
        return message.metadata.get("turn_key") == self._turn_key(
            turn, half
        ) or message.idempotency_key == self._idempotency_key(turn, half)

    def _check_same(self, turn: str, stored: Message, text: str) -> None:
        if stored.content != text:
            raise TurnConflictError(
                f"turn {turn!r} is already stored with a different user message; use a new "
                "turn id for a new turn",
                argument="turn_id",
            )

    def _remember(self, turn: str, state: _Turn) -> None:
        self._turns[turn] = state
        self._turns.move_to_end(turn)
        while len(self._turns) > TURN_LOG_SIZE:
            self._turns.popitem(last=False)

    def _warn_degraded(self, gaps: tuple[str, ...]) -> None:
        """Log what turns lose on this backend: once per backend object and set of gaps,
        however many ``TurnMemory`` objects use it. The message gaps are said at the first
        write, ``reasoning`` at the first turn that has some."""
        if not gaps:
            return
        said = _degraded_warned.setdefault(self.backend, set())
        if gaps not in said:
            said.add(gaps)
            logger.warning(
                "the %s backend cannot record %s for agent turns; turns are stored without them",
                self.backend.name,
                ", ".join(gaps),
            )

    def __repr__(self) -> str:
        return (
            f"<TurnMemory {self.backend.name} conversation={self.conversation_id!r} "
            f"platform={self.platform!r}>"
        )


def check_turn_id(turn_id: Any) -> str:
    return check_str(turn_id, "turn_id", allow_empty=False)


def _entity_refs(items: Iterable[EntityLike] | None) -> list[EntityRef]:
    if items is None:
        return []
    if isinstance(items, str | Entity | EntityRef) or not isinstance(items, Iterable):
        raise InvalidArgumentTypeError(
            f"must be a list, got {type(items).__name__}", argument="refers_to"
        )
    refs: list[EntityRef] = []
    for item in items:
        if isinstance(item, Entity):
            refs.append(EntityRef(id=item.id))
        elif isinstance(item, EntityRef):
            refs.append(item)
        elif isinstance(item, str) and item.strip():
            refs.append(EntityRef(id=item))
        else:
            raise InvalidArgumentTypeError(
                "items must be entity ids, EntityRef or Entity, got "
                f"{type(item).__name__ if not isinstance(item, str) else 'an empty str'}",
                argument="refers_to",
            )
    unique = {(r.id, r.name, r.type): r for r in check_entity_refs(refs, "refers_to")}
    return list(unique.values())


def _same_name(entity: Entity, identifier: str) -> bool:
    """Whether ``identifier`` names ``entity`` (its name or an alias, ignoring case)."""
    wanted = identifier.casefold()
    return any(name.casefold() == wanted for name in (entity.name, *entity.aliases))
