"""The agent turn protocol: store every turn of an agent as a user/assistant pair.

Built only on the :class:`~memory_core.backend.MemoryBackend` contract, so it runs on every
backend, and it calls no LLM: wrap any agent callable with :func:`with_memory`, or drive
the lifecycle yourself with :class:`TurnMemory` (``open_turn`` … ``close_turn``) for
streaming or multi-step tool loops.

On every turn:

1. **Bounded retrieval.** Concrete identifiers (quoted strings, ids such as UUIDs,
   ``ORD-1234``, ``#123``, e-mail addresses, capitalized phrases such as "Acme Corp") are
   taken from the user message (at most 16, deduplicated ignoring case, in order of
   appearance) and each is looked up with ``backend.find_entities``. The union is
   deduplicated by entity id and capped at ``retrieval_limit`` (8). Any failure is logged
   and the turn goes on with nothing retrieved.
2. **The user message** is stored with its exact content, metadata ``turn_key``
   ``"{conversation}:{turn}"``, ``sender_kind``, ``platform``, ``turn_id``, the idempotency
   key ``conversation-{conversation}-{turn}-user`` and mentions of the retrieved entities.
3. The agent runs with the retrieved entities in its context.
4. **The assistant reply** is stored the same way (``turn_key`` ``…:assistant``, key
   ``…-assistant``), mentioning the entities the reply cites or produces.

Replaying a turn (same conversation and turn id) writes nothing new and returns the stored
messages. When a reply was produced, both halves are stored or :class:`TurnIncompleteError`
says which half is missing and how to complete it. On a backend without message metadata,
explicit mentions or idempotency keys (NAMS) the pair is still stored; what could not be
recorded is reported in ``not_recorded`` and replays are recognised by the rules described
on :class:`TurnMemory`.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias
from uuid import uuid4

import anyio
import anyio.to_thread

from .backend import MemoryBackend
from .errors import (
    InvalidArgumentTypeError,
    InvalidRequestError,
    MemoryCoreError,
    NotFoundError,
)
from .models import Entity, EntityRef, Message, MessageRole
from .validation import check_entity_refs, check_int, check_optional_str, check_str

logger = logging.getLogger(__name__)

DEFAULT_RETRIEVAL_LIMIT = 8
MAX_IDENTIFIERS = 16
DEFAULT_REPLAY_LOOKBACK = 50
MAX_IDENTIFIER_LENGTH = 120
TURN_LOG_SIZE = 1024

Half = Literal["user", "assistant"]
EntityLike: TypeAlias = str | EntityRef | Entity

# ---------------------------------------------------------------- identifier extraction

# "…", \u201c…\u201d (curly), \u2018…\u2019 (curly), `…` and '…' (not an apostrophe).
_QUOTED = re.compile(
    r'"([^"\n]+)"|\u201c([^\u201d\n]+)\u201d|\u2018([^\u2019\n]+)\u2019|`([^`\n]+)`'
    r"|(?<!\w)'([^'\n]+)'(?!\w)"
)
_UUID = re.compile(
    r"(?<![0-9A-Fa-f-])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-"
    r"[0-9A-Fa-f]{12}(?![0-9A-Fa-f-])"
)
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_HASH_ID = re.compile(r"(?<![\w&#])#\d+(?!\w)")
# Codes such as ORD-1234, user_42, COVID-19 (separated) or SKU42, B2B (upper case).
_CODE = re.compile(
    r"(?<![\w@#.-])(?:[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+|[A-Z][A-Z0-9]*\d[A-Z0-9]*)"
    r"(?![\w-])"
)
_WORD = re.compile(r"[^\W\d_][\w'\u2019&.-]*")
_TRAILING = re.compile(r"(?:['\u2019]s)?[.'\u2019&-]*$")
_INITIALS = re.compile(r"(?:[A-Za-z]\.)+")
_TITLES = frozenset({"mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof"})

# Lower-case words that may join capitalized words into one name ("Bank of America").
_CONNECTORS = frozenset({"of", "de", "du", "da", "del", "der", "van", "von", "la", "le"})
# Capitalized words that start sentences rather than name things.
_STOPWORDS = frozenset(
    """
    a an the this that these those i i'm i'd i'll i've me my mine we our ours you your
    yours he him his she her hers it its they them their there here what which who whom
    whose when where why how is are was were be been do does did done can could would
    should will shall may might must have has had please hello hi hey thanks thank yes
    no ok okay sure also and but or so if then than tell show give find get let let's
    look check list today tomorrow yesterday now just maybe well oh dear good morning
    afternoon evening night any some all not don't can't won't every each after first
    next finally however actually honestly ask send write call email remind book compare
    describe explain summarize summarise update create add remove delete cancel open close
    what's who's where's how's that's it's there's
    before since while because about again still yet ah hmm great nice cool fine
    """.split()
)


@dataclass(frozen=True)
class _Found:
    start: int
    text: str


def extract_identifiers(text: str, max_identifiers: int = MAX_IDENTIFIERS) -> list[str]:
    """Concrete identifiers in ``text``, in order of appearance.

    Finds quoted strings, UUIDs, e-mail addresses, ``#123`` references, codes such as
    ``ORD-1234`` and capitalized phrases such as ``Acme Corp`` or ``Bank of America``
    (a leading sentence word such as "Hello" or "Tell" is dropped). Deduplicated ignoring
    case, at most ``max_identifiers``. A heuristic: it never raises on any text.
    """
    check_str(text, "text")
    bound = check_int(max_identifiers, "max_identifiers", minimum=1)
    found: list[_Found] = []
    masked: list[tuple[int, int]] = []
    for match in _QUOTED.finditer(text):
        group = next(i for i in range(1, 6) if match.group(i) is not None)
        found.append(_Found(match.start(group), match.group(group).strip()))
    for pattern in (_UUID, _EMAIL, _HASH_ID, _CODE):
        for match in pattern.finditer(text):
            if _overlaps(match.span(), masked):
                continue
            if pattern is _CODE and not any(c.isdigit() for c in match.group()):
                continue
            masked.append(match.span())
            found.append(_Found(match.start(), match.group()))
    found.extend(_capitalized_phrases(text, masked))
    found.sort(key=lambda f: f.start)
    return _bounded_unique(found, bound)


def _overlaps(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in spans)


def _capitalized_phrases(text: str, masked: list[tuple[int, int]]) -> list[_Found]:
    phrases: list[_Found] = []
    current: list[re.Match[str]] = []
    pending: list[re.Match[str]] = []  # connectors kept only if a capitalized word follows

    def flush() -> None:
        words = list(current)
        while words and (_is_stopword(words[0].group()) or words[0].group() in _CONNECTORS):
            words.pop(0)
        if words:
            phrase = _TRAILING.sub("", text[words[0].start() : words[-1].end()])
            phrases.append(_Found(words[0].start(), phrase))
        current.clear()
        pending.clear()

    for word in _WORD.finditer(text):
        if _overlaps(word.span(), masked):
            flush()
            continue
        last = (pending or current)[-1] if (pending or current) else None
        joined = (
            last is not None
            and text[last.end() : word.start()] in (" ", " & ")
            and not _ends_sentence(last.group())
        )
        if word.group()[0].isupper():
            if not joined:
                flush()
            current.extend(pending)
            pending.clear()
            current.append(word)
        elif joined and current and word.group() in _CONNECTORS:
            pending.append(word)
        else:
            flush()
    flush()
    return phrases


def _is_stopword(word: str) -> bool:
    return word.casefold().replace("\u2019", "'").rstrip(".") in _STOPWORDS


def _ends_sentence(word: str) -> bool:
    if not word.endswith("."):
        return False
    return word.rstrip(".").casefold() not in _TITLES and not _INITIALS.fullmatch(word)


def _bounded_unique(found: list[_Found], bound: int) -> list[str]:
    seen: set[str] = set()
    result: list[str] = []
    for item in found:
        text = item.text
        key = text.casefold()
        if len(text) < 2 or len(text) > MAX_IDENTIFIER_LENGTH or key in seen:
            continue
        if _is_stopword(text):
            continue
        seen.add(key)
        result.append(text)
        if len(result) == bound:
            break
    return result


def cited_entities(entities: Iterable[Entity], text: str) -> list[Entity]:
    """The entities whose name (or id) appears in ``text`` as a whole word, ignoring case."""
    folded = text.casefold()
    cited: list[Entity] = []
    for entity in entities:
        for needle in (entity.name, entity.id):
            pattern = r"(?<!\w)" + re.escape(needle.casefold()) + r"(?!\w)"
            if needle.strip() and re.search(pattern, folded):
                cited.append(entity)
                break
    return cited


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


@dataclass(frozen=True)
class Reply:
    """An agent reply with the entities it cites or produces.

    ``refers_to`` takes entity ids, :class:`EntityRef` or :class:`Entity` objects. Left as
    ``None``, :func:`with_memory` links the retrieved entities the text names
    (:func:`cited_entities`); an empty list links nothing.
    """

    text: str
    refers_to: list[EntityLike] | None = None


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
    """The user half of a turn is stored but the assistant reply could not be.

    Complete the turn by calling ``close_turn(turn_id, assistant_message,
    refers_to=refers_to)`` again (the attributes hold what to pass); it is replay-safe.
    The cause is chained (``__cause__``).
    """

    def __init__(
        self,
        conversation_id: str,
        turn_id: str,
        user_message: Message,
        assistant_message: str,
        refers_to: list[EntityRef],
        cause: BaseException,
    ) -> None:
        self.conversation_id = conversation_id
        self.turn_id = turn_id
        self.user_message = user_message
        self.assistant_message = assistant_message
        self.refers_to = refers_to
        super().__init__(
            f"turn {turn_id!r} of conversation {conversation_id!r} is incomplete: the user "
            f"message is stored but storing the assistant reply failed "
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


# ---------------------------------------------------------------- the protocol


@dataclass
class _Turn:
    user: Message
    assistant: Message | None = None
    assistant_failed: bool = False


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

    * with message metadata (embedded, Bolt): by ``turn_key`` among the newest
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
        caps = backend.capabilities
        missing = [
            ("metadata", caps.message_metadata),
            ("mentions", caps.explicit_mentions),
            ("idempotency_keys", caps.idempotency_keys),
        ]
        self.not_recorded: tuple[str, ...] = tuple(name for name, ok in missing if not ok)
        """What this backend cannot store for a turn: any of ``"metadata"``,
        ``"mentions"``, ``"idempotency_keys"``."""
        self._exact = caps.message_metadata
        self._turns: OrderedDict[str, _Turn] = OrderedDict()
        self._lock = anyio.Lock()
        self._conversation_ready = False
        self._warned = False

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
        (and ``assistant_message`` when the turn was closed). Reusing a turn id with a
        different message raises :class:`TurnConflictError`.
        """
        turn = _check_turn_id(turn_id)
        text = check_str(user_message, "user_message")
        async with self._lock:
            state = self._turns.get(turn)
            if state is not None:
                self._check_same(turn, state.user, text)
            retrieved = await self.retrieve(text)
            replayed = True
            if state is None:
                state, replayed = await self._open_in_storage(turn, text, retrieved)
            self._remember(turn, state)
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
    ) -> Message:
        """Store the assistant reply (exact content) for an opened turn and return it.

        ``refers_to`` lists the entities the reply cites or produces (ids, ``EntityRef``
        or ``Entity``). A replay returns the stored reply and writes nothing (the first
        stored reply wins). Raises :class:`TurnNotOpenError` when the turn was not opened
        and :class:`TurnIncompleteError` when the write fails.
        """
        turn = _check_turn_id(turn_id)
        text = check_str(assistant_message, "assistant_message")
        refs = _entity_refs(refers_to)
        async with self._lock:
            state = self._turns.get(turn) or await self._closable_in_storage(turn)
            self._remember(turn, state)
            if state.assistant is None:
                state.assistant = await self._store_reply(turn, state, text, refs)
            return state.assistant

    async def retrieve(self, user_message: str) -> list[Entity]:
        """Entities named in ``user_message`` (bounded; never raises for backend errors)."""
        text = check_str(user_message, "user_message")
        identifiers = extract_identifiers(text, self.max_identifiers)
        if not identifiers or not self.backend.capabilities.entities:
            return []
        found: dict[str, Entity] = {}
        try:
            for identifier in identifiers:
                for entity in await self.backend.find_entities(
                    identifier, self.retrieval_limit, user_identifier=self.user_identifier
                ):
                    found.setdefault(entity.id, entity)
                if len(found) >= self.retrieval_limit:
                    break
        except Exception as exc:  # retrieval is best effort by design
            logger.warning(
                "turn retrieval failed for %d identifiers (%s); continuing with none",
                len(identifiers),
                type(exc).__name__,
            )
            return []
        return list(found.values())[: self.retrieval_limit]

    # ------------------------------------------------------------ storage

    async def _open_in_storage(
        self, turn: str, text: str, retrieved: list[Entity]
    ) -> tuple[_Turn, bool]:
        tail = await self._read_tail(self._tail_size())
        stored = self._stored_turn(turn, tail, text)
        if stored is not None:
            self._check_same(turn, stored.user, text)
            return stored, True
        refs = [EntityRef(id=entity.id) for entity in retrieved]
        user = await self._write("user", turn, text, refs)
        self._check_same(turn, user, text)
        # Timestamps never decrease, so a "new" message older than the newest one we
        # just read was already stored (an idempotent replay beyond the lookback).
        newest = tail.newest
        replayed = newest is not None and user.created_at < newest.created_at
        return _Turn(user), replayed

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
        except Exception as exc:
            state.assistant_failed = True
            raise TurnIncompleteError(
                self.conversation_id, turn, state.user, text, refs, exc
            ) from exc

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
        self._warn_degraded()
        return await self.backend.add_message(
            session_id=self.conversation_id,
            role=half,
            content=text,
            user_identifier=self.user_identifier,
            **options,
        )

    async def _read_tail(self, size: int) -> _Tail:
        try:
            conversation = await self.backend.get_conversation(
                session_id=self.conversation_id,
                limit=size,
                user_identifier=self.user_identifier,
            )
        except NotFoundError as exc:
            raise NotFoundError(
                f"conversation {self.conversation_id!r} does not exist on the "
                f"{self.backend.name} backend; create it first (TurnMemory."
                "start_conversation) and use the id it returns"
            ) from exc
        return _Tail(list(conversation.messages))

    async def _ensure_conversation(self) -> None:
        if self._conversation_ready:
            return
        if self.backend.capabilities.client_chosen_ids:
            await self.backend.create_conversation(
                session_id=self.conversation_id, user_identifier=self.user_identifier
            )
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

    def _warn_degraded(self) -> None:
        if self.not_recorded and not self._warned:
            self._warned = True
            logger.warning(
                "the %s backend cannot record %s for agent turns; turns are stored without them",
                self.backend.name,
                ", ".join(self.not_recorded),
            )

    def __repr__(self) -> str:
        return (
            f"<TurnMemory {self.backend.name} conversation={self.conversation_id!r} "
            f"platform={self.platform!r}>"
        )


def _check_turn_id(turn_id: Any) -> str:
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


# ---------------------------------------------------------------- the wrapper

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
        turn = uuid4().hex if turn_id is None else _check_turn_id(turn_id)
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
            stored = await self.memory.close_turn(turn, reply.text, refers_to=refs)
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


__all__ = [
    "MemoryAgent",
    "OpenedTurn",
    "Reply",
    "TurnConflictError",
    "TurnContext",
    "TurnIncompleteError",
    "TurnMemory",
    "TurnNotOpenError",
    "TurnResult",
    "cited_entities",
    "extract_identifiers",
    "with_memory",
]
