"""Portable session names on NAMS: the caller names a session, the adapter finds its
conversation through the hosted REST contract only.

* The name is stored in the conversation's ``metadata`` under :data:`SESSION_KEY` when the
  adapter creates the conversation (``POST /conversations``, with ``userId`` when a user
  is given).
* A lookup pages ``GET /conversations`` (200 per page, ``userId`` filter when a user is
  given) and keeps the conversations whose ``metadata[SESSION_KEY]`` is the name — or
  whose id is the name (code written for server-issued ids keeps working). A name that
  parses as a UUID is first tried as an id with one ``GET /conversations/{id}``; a name
  that is the canonical string of the portable id of a listed conversation (of the user,
  when one is given) names that conversation, before any conversation carrying the name
  (``get_conversation(str(conversation.id))`` reads what ``conversation.id`` does).
  Cost: ``⌈conversations / 200⌉`` list requests cold, none warm.
* A bounded in-process cache (LRU) and an optional SQLite index file (opt-in by path)
  remember ``(user, name) → conversation id``.
* ``Conversation.id`` of a named conversation is ``uuid5(user, name)`` (:func:`portable_id`),
  not the server id: stable before and after the first write, in every process, as on
  the embedded and Bolt backends. Such an id given as ``conversation_id`` is found by the
  same listing; a server id is accepted too.
* Convergence: two creators racing on one new name both create a conversation, then list
  again; every conversation carrying the name is a candidate and the oldest (by
  ``createdAt``, then id) wins. A loser deletes its own conversation if it is still
  empty, and everyone uses the winner. Readers apply the same rule, so they agree.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar
from uuid import NAMESPACE_URL, UUID, uuid5

import anyio
from pydantic import BaseModel, ValidationError

from memory_core import nams_wire as wire
from memory_core.errors import ConfigurationError, NotFoundError, TransportError
from memory_core.requests import canonical_uuid

from .transport import decode

SESSION_KEY = "memory_core_session"
"""The conversation-metadata key that holds the caller's session name."""
DEFAULT_CACHE_SIZE = 10_000

M = TypeVar("M", bound=BaseModel)
Call = Callable[..., Awaitable[Any]]
Key = tuple[str, str]
_OLDEST = datetime.max.replace(tzinfo=UTC)


def parse(model: type[M], payload: Any, route: str) -> M:
    """A decoded response body as ``model``; a body of another shape is a
    ``TransportError``."""
    try:
        return model.model_validate(payload if payload is not None else {})
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        raise TransportError(
            f"nams: unexpected response from {route} (fields: {', '.join(fields) or '?'})"
        ) from None


def parse_json(model: type[M], body: bytes, method: str, route: str) -> M:
    """A raw response body as ``model``, validated straight from the bytes.

    A body that fails is read again the way :func:`parse` reads it (``json.loads``, then
    validation), so the outcome is exactly that of :func:`parse`: the same model for a
    body only ``json.loads`` takes (UTF-16, a BOM), and otherwise the same
    ``TransportError`` (non-JSON body, or the fields of an unexpected shape).
    """
    if body:
        try:
            return model.model_validate_json(body)
        except ValidationError:
            pass
    return parse(model, decode(body, method, route), route)


def parse_page(body: bytes, method: str, route: str) -> dict[str, Any]:
    """A raw :class:`~wire.ConversationPage` body as a dict keyed by field name, its
    conversations dicts keyed by :class:`~wire.ConversationOut` field name (see
    :data:`wire.CONVERSATION_PAGE_FIELDS`; an absent optional field is absent). A body
    that fails is read by the model as :func:`parse_json` reads it, with the same
    outcome."""
    if body:
        try:
            page: dict[str, Any] = wire.CONVERSATION_PAGE_FIELDS.validate_json(body)
            return page
        except ValidationError:
            pass
    return parse_json(wire.ConversationPage, body, method, route).model_dump()


def parse_messages(body: bytes, method: str, route: str) -> list[dict[str, Any]]:
    """The messages of a raw :class:`~wire.MessageList` body, as dicts keyed by
    :class:`~wire.MessageOut` field name (see :data:`wire.MESSAGE_LIST_FIELDS`; an absent
    optional field is absent). A body that fails, or a bare JSON list of messages, is
    read by the model the way :func:`parse_json` falls back, with the same outcome."""
    if body:
        try:
            found: list[dict[str, Any]] = wire.MESSAGE_LIST_FIELDS.validate_json(body).get(
                "messages", []
            )
            return found
        except ValidationError:
            pass
    payload = wire.bare_messages(decode(body, method, route))
    return [m.model_dump() for m in parse(wire.MessageList, payload, route).messages]


def _key(name: str, user: str | None) -> Key:
    return (user or "", name)


@lru_cache(maxsize=4096)
def portable_id(name: str, user: str | None) -> UUID:
    """The ``Conversation.id`` of session ``name`` of ``user`` in portable mode (kept for
    the names seen last: a listing derives one per conversation, a SHA-1 each)."""
    return uuid5(NAMESPACE_URL, f"nams-session:{user or ''}\0{name}")


def header_id(header: wire.ConversationOut) -> UUID | None:
    """The portable id of a conversation that carries a name, else ``None``."""
    name = session_name(header)
    return None if name is None else portable_id(name, header.user_id)


def _is(header: wire.ConversationOut, conversation_id: UUID | None) -> bool:
    """True when ``conversation_id`` is the portable id of ``header``."""
    return conversation_id is not None and header_id(header) == conversation_id


def portable_id_of(header: wire.ConversationOut) -> UUID:
    """The portable id of a conversation that carries a name."""
    found = header_id(header)
    assert found is not None
    return found


def _server_uuid(value: str) -> UUID:
    try:
        return UUID(value)
    except ValueError:
        return uuid5(NAMESPACE_URL, f"nams:{value}")


def session_name(header: wire.ConversationOut) -> str | None:
    """The portable name a conversation carries, if the adapter created it."""
    return name_in(header.metadata)


def name_in(metadata: Mapping[str, Any]) -> str | None:
    """The portable name in a conversation's ``metadata``, if the adapter put one there."""
    value = metadata.get(SESSION_KEY)
    return value if isinstance(value, str) else None


def visible_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Conversation metadata as the caller gave it (without :data:`SESSION_KEY`)."""
    return {k: v for k, v in metadata.items() if k != SESSION_KEY}


def _age(header: wire.ConversationOut) -> tuple[datetime, str]:
    created = header.created_at or _OLDEST
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return (created, header.id)


@dataclass(frozen=True)
class Entry:
    """A remembered conversation: its server id and the id callers see (and, when the
    caller named it by that id, the session name it carries)."""

    server_id: str
    conversation_id: UUID
    name: str | None = None


class NameCache:
    """``(user, name)`` (or a portable id) → :class:`Entry`; least recently used dropped
    beyond ``size``."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Any, Entry] = OrderedDict()

    def get(self, key: Any) -> Entry | None:
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
        return found

    def put(self, key: Any, entry: Entry) -> None:
        self._items[key] = entry
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def pop(self, key: Any) -> None:
        self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)


class NameIndex:
    """The persistent index: a small SQLite file shared by processes on one machine.

    Rows are scoped by service URL and workspace. An entry is a hint: a 404 on it drops
    it and the name is looked up again.
    """

    def __init__(self, path: str | os.PathLike[str], scope: str) -> None:
        self.path = Path(path).expanduser()
        self.scope = scope
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=10, check_same_thread=False)
            with self._db:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS session_names (scope TEXT NOT NULL, "
                    "user TEXT NOT NULL, name TEXT NOT NULL, server_id TEXT NOT NULL, "
                    "conversation_id TEXT NOT NULL, PRIMARY KEY (scope, user, name))"
                )
        except (OSError, sqlite3.Error) as exc:
            raise ConfigurationError(
                f"nams backend: session_index {str(self.path)!r} cannot be used ({exc})"
            ) from None

    def get(self, key: Key) -> Entry | None:
        with self._lock:
            row = self._db.execute(
                "SELECT server_id, conversation_id FROM session_names "
                "WHERE scope=? AND user=? AND name=?",
                (self.scope, *key),
            ).fetchone()
        return None if row is None else Entry(str(row[0]), UUID(str(row[1])))

    def put(self, key: Key, entry: Entry) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO session_names VALUES (?, ?, ?, ?, ?)",
                (self.scope, *key, entry.server_id, str(entry.conversation_id)),
            )

    def pop(self, key: Key) -> None:
        with self._lock, self._db:
            self._db.execute(
                "DELETE FROM session_names WHERE scope=? AND user=? AND name=?",
                (self.scope, *key),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()


@dataclass(frozen=True)
class Resolved:
    """Where a session lives: its server id, the id callers see, and its header when the
    lookup fetched one."""

    server_id: str
    conversation_id: UUID
    header: wire.ConversationOut | None
    name: str | None = None
    """The session name the conversation carries when the caller's name was its id
    (``str(Conversation.id)``), else ``None``."""


class SessionNames:
    """Maps caller's session names to server conversations (see the module doc)."""

    def __init__(
        self,
        call: Call,
        fetch: Call,
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
        index: NameIndex | None = None,
    ) -> None:
        """``call(method, route, operation, ...)`` returns a decoded JSON answer,
        ``fetch(model, method, route, operation, ...)`` one validated as ``model``."""
        self._call = call
        self._fetch = fetch
        self.cache = NameCache(cache_size)
        self.index = index
        # One cold lookup at a time per backend object: concurrent tasks naming the same
        # new session then create it once instead of racing each other.
        self._lock = anyio.Lock()

    def close(self) -> None:
        if self.index is not None:
            self.index.close()

    def _remembered(self, key: Key) -> Entry | None:
        found = self.cache.get(key)
        if found is None and self.index is not None:
            found = self.index.get(key)
            if found is not None:
                self.cache.put(key, found)
        return found

    def _remember(self, key: Key, header: wire.ConversationOut) -> Resolved:
        entry = Entry(header.id, header_id(header) or _server_uuid(header.id))
        self.cache.put(key, entry)
        self.cache.put(entry.conversation_id, entry)
        if self.index is not None:
            self.index.put(key, entry)
        return Resolved(entry.server_id, entry.conversation_id, header)

    def forget(self, name: str | None, user: str | None, conversation_id: UUID | None) -> None:
        """Drop a session from the cache and index (after a 404 or a delete)."""
        if conversation_id is not None:
            self.cache.pop(conversation_id)
        if name is not None:
            key = _key(name, user)
            entry = self.cache.get(key)
            if entry is not None:
                self.cache.pop(entry.conversation_id)
            self.cache.pop(key)
            if self.index is not None:
                self.index.pop(key)

    async def resolve(
        self,
        name: str,
        user: str | None,
        *,
        create: bool,
        metadata: dict[str, Any] | None = None,
    ) -> Resolved | None:
        """The conversation named ``name`` (for ``user``); ``None`` when there is none and
        ``create`` is False."""
        key = _key(name, user)
        known = self._remembered(key)
        if known is not None:
            return Resolved(known.server_id, known.conversation_id, None, known.name)
        async with self._lock:
            known = self._remembered(key)
            if known is not None:
                return Resolved(known.server_id, known.conversation_id, None, known.name)
            header = await self._by_id(name)
            if header is None:
                alias = canonical_uuid(name)
                found = await self._scan(
                    user,
                    lambda c: session_name(c) == name or c.id == name or _is(c, alias),
                )
                by_alias = [c for c in found if _is(c, alias)]
                if by_alias and not any(c.id == name for c in found):
                    # The name is the id callers see of a conversation of this user: that
                    # conversation (remembered in this process only, under its own name).
                    chosen = min(by_alias, key=_age)
                    entry = Entry(chosen.id, portable_id_of(chosen), session_name(chosen))
                    self.cache.put(key, entry)
                    return Resolved(entry.server_id, entry.conversation_id, chosen, entry.name)
                header = self._oldest(found, name)
            if header is None and create:
                header = await self._create(name, user, metadata or {})
            if header is None:
                return None
            return self._remember(key, header)

    async def resolve_id(self, conversation_id: UUID) -> Resolved | None:
        """The conversation a ``conversation_id`` names: a portable id (see
        :func:`portable_id`) or a server id; ``None`` when neither exists."""
        known = self.cache.get(conversation_id)
        if known is not None:
            return Resolved(known.server_id, known.conversation_id, None)
        async with self._lock:
            text = str(conversation_id)
            header = await self._by_id(text)
            if header is None:
                found = await self._scan(None, lambda c: header_id(c) == conversation_id)
                header = self._oldest(found, text)
            if header is None:
                return None
            name = session_name(header)
            if name is None or header_id(header) != conversation_id:
                entry = Entry(header.id, conversation_id)
                self.cache.put(conversation_id, entry)
                return Resolved(header.id, conversation_id, header)
            return self._remember(_key(name, header.user_id), header)

    async def _by_id(self, name: str) -> wire.ConversationOut | None:
        """The conversation whose server id is ``name`` (only tried for UUID names)."""
        try:
            UUID(name)
        except ValueError:
            return None
        route = wire.path(wire.CONVERSATION, conversation_id=name)
        try:
            header: wire.ConversationOut = await self._fetch(
                wire.ConversationOut, "GET", route, "resolve_session"
            )
        except NotFoundError:
            return None
        return header

    async def _scan(
        self, user: str | None, match: Callable[[wire.ConversationOut], bool]
    ) -> list[wire.ConversationOut]:
        """Every listed conversation (of ``user``, when given) that ``match`` accepts."""
        found: list[wire.ConversationOut] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": wire.MAX_PAGE}
            if cursor:
                params["cursor"] = cursor
            if user is not None:
                params["userId"] = user
            page: wire.ConversationPage = await self._fetch(
                wire.ConversationPage, "GET", wire.CONVERSATIONS, "resolve_session", params=params
            )
            found += [c for c in page.conversations if match(c)]
            cursor = page.next_cursor
            if not page.conversations or not cursor:
                return found

    @staticmethod
    def _oldest(candidates: list[wire.ConversationOut], name: str) -> wire.ConversationOut | None:
        by_id = [c for c in candidates if c.id == name]
        if by_id:  # the name is a server id: that conversation, as in server-id mode
            return by_id[0]
        return min(candidates, key=_age) if candidates else None

    async def _create(
        self, name: str, user: str | None, metadata: dict[str, Any]
    ) -> wire.ConversationOut:
        body = wire.ConversationCreate(
            user_id=user, metadata={**metadata, SESSION_KEY: name}
        ).to_wire(omit_none=True)
        mine: wire.ConversationOut = await self._fetch(
            wire.ConversationOut, "POST", wire.CONVERSATIONS, "create_conversation", json=body
        )
        rivals = await self._scan(user, lambda c: session_name(c) == name and c.id != mine.id)
        winner = self._oldest([mine, *rivals], name)
        assert winner is not None
        if winner.id != mine.id:
            await self._withdraw(mine.id)
        return winner

    async def _withdraw(self, conversation_id: str) -> None:
        """Delete a conversation that lost the race, if nothing was written to it."""
        route = wire.path(wire.MESSAGES, conversation_id=conversation_id)
        try:
            payload = await self._call("GET", route, "resolve_session", params={"limit": 1})
            if isinstance(payload, dict) and payload.get("messages"):
                return
            await self._call(
                "DELETE",
                wire.path(wire.CONVERSATION, conversation_id=conversation_id),
                "resolve_session",
            )
        except NotFoundError:
            pass
