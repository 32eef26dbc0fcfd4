"""Portable session names on NAMS: the caller names a session, the adapter finds its
conversation through the hosted REST contract only.

* The name is stored in the conversation's ``metadata`` under :data:`SESSION_KEY` when the
  adapter creates the conversation (``POST /conversations``, with ``userId`` when a user
  is given).
* Ownership: a name resolves only among the conversations of the caller's user — whose
  ``userId`` equals ``user_identifier``; without one, only conversations with no
  ``userId`` (:func:`owned`). This is checked here on every listed conversation, so a
  service whose ``userId`` filter is loose cannot hand over another user's conversation.
* A lookup pages ``GET /conversations`` (200 per page, ``userId`` filter when a user is
  given) and keeps the caller's conversations whose ``metadata[SESSION_KEY]`` is the
  name — or any conversation whose id is the name (code written for server-issued ids
  keeps working: a server id is a handle, which the service serves to every caller of
  the workspace). A name that parses as a UUID is first tried as an id with one
  ``GET /conversations/{id}``; a name that is the canonical string of the portable id of
  a listed conversation of the user names that conversation, before any conversation
  carrying the name (``get_conversation(str(conversation.id))`` reads what
  ``conversation.id`` does). Cost: ``⌈conversations / 200⌉`` list requests cold, none
  warm.
* Markers (opt-in by a session secret, :mod:`.marker`): with a secret, only
  conversations whose marker verifies are candidates, in every lookup above; one
  without (planted by a holder of the workspace key, or made before the secret was
  configured) is ignored, and is shown as a conversation with no name. Without a
  secret, whoever holds the workspace key can plant a name for any user.
* A bounded in-process cache (LRU: :data:`DEFAULT_CACHE_SIZE` names, and as many
  portable ids) and an optional SQLite index file (opt-in by path) remember
  ``(user, name) → conversation id``.
* ``Conversation.id`` of a named conversation is ``uuid5(user, name)`` (:func:`portable_id`),
  not the server id: stable before and after the first write, in every process, as on
  the embedded and Bolt backends. Such an id given as ``conversation_id`` is found by the
  same listing; a server id is accepted too.
* Convergence: two creators racing on one new name both create a conversation, then list
  again; every conversation of the user carrying the name is a candidate and the oldest
  (by ``createdAt``, then id) wins. A loser deletes its own conversation if it is still
  empty, and everyone uses the winner. Readers apply the same rule, so they agree.
"""

from __future__ import annotations

import contextlib
import logging
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

from memory_core.store import NotFoundError, TransportError, canonical_uuid
from memory_core.store import nams_wire as wire

from .marker import MARK_KEY, WINDOW, SessionSecret
from .transport import decode

SESSION_KEY = "memory_core_session"
"""The conversation-metadata key that holds the caller's session name."""
RESERVED_KEYS = frozenset({SESSION_KEY, MARK_KEY})
"""Metadata keys only the adapter writes: hidden from callers, refused from them."""
DEFAULT_CACHE_SIZE = 10_000
"""Names (and as many portable ids) the in-process cache remembers."""

M = TypeVar("M", bound=BaseModel)
Call = Callable[..., Awaitable[Any]]
Key = tuple[str, str]
_OLDEST = datetime.max.replace(tzinfo=UTC)
log = logging.getLogger("memory_core.backends.nams")


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


def parse_created_ids(body: bytes, method: str, route: str) -> dict[str, str]:
    """The ``id`` and ``conversation_id`` of a raw :class:`~wire.MessageCreated` answer
    (see :data:`wire.CREATED_IDS_FIELDS`); a body that fails is read by the model the way
    :func:`parse_json` falls back, with the same outcome."""
    if body:
        try:
            ids: dict[str, str] = wire.CREATED_IDS_FIELDS.validate_json(body)
            return ids
        except ValidationError:
            pass
    created = parse_json(wire.MessageCreated, body, method, route)
    return {"id": created.id, "conversation_id": created.conversation_id}


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


def owner(header: wire.ConversationOut) -> str | None:
    """The user a conversation belongs to: its ``userId`` (``None``: no user; an empty
    ``userId`` is none)."""
    return header.user_id or None


def owned(header: wire.ConversationOut, user: str | None) -> bool:
    """True when ``header`` belongs to ``user`` (no user: only conversations with no
    ``userId``). Checked here on every conversation a name lookup considers, whatever
    filter the service applied."""
    return owner(header) == (user or None)


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
    """Conversation metadata as the caller gave it (without :data:`RESERVED_KEYS`)."""
    return {k: v for k, v in metadata.items() if k not in RESERVED_KEYS}


def _age(header: wire.ConversationOut) -> tuple[datetime, str]:
    created = header.created_at or _OLDEST
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return (created, header.id)


@dataclass(frozen=True)
class Entry:
    """A remembered conversation: its server id, the id callers see and the session name
    it carries (``None``: none, or a row of the index file, which does not keep it)."""

    server_id: str
    conversation_id: UUID
    name: str | None = None


class Lru:
    """Key → :class:`Entry`; least recently used dropped beyond ``size``."""

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

    def held(self) -> list[Any]:
        """The keys held now, least recently used first."""
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)


class NameCache:
    """The in-process cache: ``size`` names (``(user, name)`` → :class:`Entry`) and,
    apart, ``size`` conversation ids (a portable or server id → :class:`Entry`), so an
    id remembered beside each name takes no name's place."""

    def __init__(self, size: int) -> None:
        self.names = Lru(size)
        self.ids = Lru(size)


INDEX_WAIT = 0.5
"""Seconds the index waits for another process's lock before it gives up: a lookup on
the service costs about as much, and the index is only an optimisation."""
INDEX_TABLE = "session_names_v2"
"""Version 2: rows written since a name resolves only among its user's conversations
(the rows of ``session_names``, written before, may name another user's conversation
and are never read)."""


class NameIndex:
    """The persistent index: a small SQLite file shared by processes on one machine.

    Rows are scoped by service URL and workspace. An entry is a hint: a 404 on it drops
    it and the name is looked up again. The file is trusted as the process's own files
    are (an entry is used without asking the service who owns it).

    The index is a cache of what the service holds, so it never fails a call. The first
    error from SQLite or the file system, when the file is opened or at any use later
    (not a database or corrupt, locked by another process beyond :data:`INDEX_WAIT`,
    read-only, disk full, a folder that cannot be made), logs one warning naming the
    file and the reason, and this object stops using the file: every name is then
    looked up on the service, as without an index (an entry it could no longer drop
    is never trusted again). A row this module did not write (its ids not text, or its
    conversation id not a UUID) is ignored, and replaced once the name is looked up.
    """

    def __init__(self, path: str | os.PathLike[str], scope: str) -> None:
        self.path = Path(path).expanduser()
        self.scope = scope
        self.failure: str | None = None
        """Why the file is no longer used (``None`` while it is)."""
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        with self._lock:
            try:
                self._db = self._open()
            except (OSError, ValueError, sqlite3.Error) as exc:  # ValueError: a NUL in it
                self._give_up(exc)

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=INDEX_WAIT, check_same_thread=False)
        try:
            with db:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(
                    f"CREATE TABLE IF NOT EXISTS {INDEX_TABLE} (scope TEXT NOT NULL, "
                    "user TEXT NOT NULL, name TEXT NOT NULL, server_id TEXT NOT NULL, "
                    "conversation_id TEXT NOT NULL, PRIMARY KEY (scope, user, name))"
                )
        except BaseException:
            db.close()
            raise
        return db

    def _give_up(self, exc: BaseException) -> None:
        """Stop using the file (called with the lock held), with one warning."""
        db, self._db = self._db, None
        _close(db)
        if self.failure is None:
            self.failure = str(exc) or type(exc).__name__
            log.warning(
                "nams backend: session_index %r is not used from now on (%s); session "
                "names are looked up on the service instead",
                str(self.path),
                self.failure,
            )

    def _run(self, sql: str, args: tuple[str, ...], *, write: bool) -> Any:
        """One statement (a write in a transaction of its own); its first row, or
        ``None`` — also when the file is not (or no longer) used."""
        with self._lock:
            db = self._db
            if db is None:
                return None
            try:
                if not write:
                    return db.execute(sql, args).fetchone()
                with db:
                    db.execute(sql, args)
                return None
            except (OSError, ValueError, sqlite3.Error) as exc:  # ValueError: not UTF-8
                self._give_up(exc)
                return None

    def get(self, key: Key) -> Entry | None:
        row = self._run(
            f"SELECT server_id, conversation_id FROM {INDEX_TABLE} "
            "WHERE scope=? AND user=? AND name=?",
            (self.scope, *key),
            write=False,
        )
        return None if row is None else _entry(row[0], row[1])

    def put(self, key: Key, entry: Entry) -> None:
        self._run(
            f"INSERT OR REPLACE INTO {INDEX_TABLE} VALUES (?, ?, ?, ?, ?)",
            (self.scope, *key, entry.server_id, str(entry.conversation_id)),
            write=True,
        )

    def pop(self, key: Key) -> None:
        self._run(
            f"DELETE FROM {INDEX_TABLE} WHERE scope=? AND user=? AND name=?",
            (self.scope, *key),
            write=True,
        )

    def pop_user(self, user: str) -> int:
        """Delete every row of ``user`` (``forget_user``); how many there were."""
        count = self._run(
            f"SELECT count(*) FROM {INDEX_TABLE} WHERE scope=? AND user=?",
            (self.scope, user),
            write=False,
        )
        self._run(
            f"DELETE FROM {INDEX_TABLE} WHERE scope=? AND user=?", (self.scope, user), write=True
        )
        return int(count[0]) if count else 0

    def close(self) -> None:
        with self._lock:
            db, self._db = self._db, None
            _close(db)


def _close(db: sqlite3.Connection | None) -> None:
    if db is not None:
        with contextlib.suppress(sqlite3.Error):
            db.close()


def _entry(server_id: Any, conversation_id: Any) -> Entry | None:
    """An index row as an :class:`Entry`; ``None`` for a row this module did not write."""
    if not isinstance(server_id, str) or not server_id or not isinstance(conversation_id, str):
        return None
    try:
        return Entry(server_id, UUID(conversation_id))
    except ValueError:
        return None


@dataclass(frozen=True)
class Resolved:
    """Where a session lives: its server id, the id callers see, and its header when the
    lookup fetched one."""

    server_id: str
    conversation_id: UUID
    header: wire.ConversationOut | None
    name: str | None = None
    """The session name the conversation carries (``None``: none, or not known here)."""


class SessionNames:
    """Maps caller's session names to server conversations (see the module doc)."""

    def __init__(
        self,
        call: Call,
        fetch: Call,
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
        secret: SessionSecret | None = None,
    ) -> None:
        """``call(method, route, operation, ...)`` returns a decoded JSON answer,
        ``fetch(model, method, route, operation, ...)`` one validated as ``model``;
        ``secret`` marks and verifies names (see :mod:`.marker`). The index file, if
        any, is set on :attr:`index` when the backend connects."""
        self._call = call
        self._fetch = fetch
        self.cache = NameCache(cache_size)
        self.index: NameIndex | None = None
        self._secret = secret
        self._told = False  # an ignored conversation was logged (once per object)
        # One cold lookup at a time per backend object: concurrent tasks naming the same
        # new session then create it once instead of racing each other.
        self._lock = anyio.Lock()

    def close(self) -> None:
        if self.index is not None:
            self.index.close()

    def name_of(
        self, metadata: Mapping[str, Any], user: str | None, created: datetime | None
    ) -> str | None:
        """The name a conversation of ``user`` created at ``created`` carries when it
        counts as named: always without a secret; with one, when its marker verifies."""
        name = name_in(metadata)
        secret = self._secret
        if name is None or secret is None or secret.verifies(metadata, user, name, created):
            return name
        if not self._told:
            self._told = True
            log.debug(
                "nams backend: a conversation carrying a session name without a valid "
                "marker is ignored (planted, or made without this session secret)"
            )
        return None

    def named(self, header: wire.ConversationOut) -> str | None:
        """:meth:`name_of` a header."""
        return self.name_of(header.metadata, header.user_id, header.created_at)

    def _id_of(self, header: wire.ConversationOut) -> UUID | None:
        """The portable id of a header that counts as named (see :meth:`name_of`)."""
        name = self.named(header)
        return None if name is None else portable_id(name, header.user_id)

    def _is(self, header: wire.ConversationOut, conversation_id: UUID | None) -> bool:
        """True when ``conversation_id`` is the portable id of ``header``."""
        return conversation_id is not None and self._id_of(header) == conversation_id

    def _remembered(self, key: Key) -> Entry | None:
        found = self.cache.names.get(key)
        if found is None and self.index is not None:
            found = self.index.get(key)
            if found is not None:
                self.cache.names.put(key, found)
        return found

    def _remember(self, key: Key, header: wire.ConversationOut) -> Resolved:
        name = self.named(header)
        conversation_id = (
            _server_uuid(header.id) if name is None else portable_id(name, header.user_id)
        )
        entry = Entry(header.id, conversation_id, name)
        self.cache.names.put(key, entry)
        self.cache.ids.put(entry.conversation_id, entry)
        if self.index is not None:
            self.index.put(key, entry)
        return Resolved(entry.server_id, entry.conversation_id, header, name)

    def forget(self, name: str | None, user: str | None, conversation_id: UUID | None) -> None:
        """Drop a session from the cache and index (after a 404 or a delete)."""
        if conversation_id is not None:
            self.cache.ids.pop(conversation_id)
        if name is not None:
            key = _key(name, user)
            entry = self.cache.names.get(key)
            if entry is not None:
                self.cache.ids.pop(entry.conversation_id)
            self.cache.names.pop(key)
            if self.index is not None:
                self.index.pop(key)

    def forget_user(self, user: str) -> int:
        """Drop every name of ``user`` from the cache and the index (``forget_user``); how
        many cache entries and index rows went."""
        keys = [key for key in self.cache.names.held() if key[0] == user]
        for key in keys:
            self.forget(key[1], user, None)
        return len(keys) + (self.index.pop_user(user) if self.index is not None else 0)

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
                # A server id is a handle (the service serves it to any caller of the
                # workspace); a name, or the portable id of one, is the user's own.
                found = await self._scan(
                    user,
                    lambda c: (
                        c.id == name
                        or (owned(c, user) and (self.named(c) == name or self._is(c, alias)))
                    ),
                )
                by_alias = [c for c in found if owned(c, user) and self._is(c, alias)]
                if by_alias and not any(c.id == name for c in found):
                    # The name is the id callers see of a conversation of this user: that
                    # conversation (remembered in this process only, under its own name).
                    chosen = min(by_alias, key=_age)
                    entry = Entry(chosen.id, portable_id_of(chosen), session_name(chosen))
                    self.cache.names.put(key, entry)
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
        known = self.cache.ids.get(conversation_id)
        if known is not None:
            return Resolved(known.server_id, known.conversation_id, None, known.name)
        async with self._lock:
            text = str(conversation_id)
            header = await self._by_id(text)
            if header is None:
                found = await self._scan(None, lambda c: self._is(c, conversation_id))
                header = self._oldest(found, text)
            if header is None:
                return None
            name = self.named(header)
            if name is None:
                entry = Entry(header.id, conversation_id)
                self.cache.ids.put(conversation_id, entry)
                return Resolved(header.id, conversation_id, header)
            # A named conversation keeps its portable id and name whichever id found it
            # (the server id, given, is remembered as one more way to it).
            resolved = self._remember(_key(name, header.user_id), header)
            alias = Entry(resolved.server_id, resolved.conversation_id, name)
            self.cache.ids.put(conversation_id, alias)
            return resolved

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
        marked = {**metadata, SESSION_KEY: name}
        if self._secret is not None:
            marked[MARK_KEY] = self._secret.mark(user, name)
        body = wire.ConversationCreate(user_id=user, metadata=marked).to_wire(omit_none=True)
        mine: wire.ConversationOut = await self._fetch(
            wire.ConversationOut, "POST", wire.CONVERSATIONS, "create_conversation", json=body
        )
        if not owned(mine, user):
            # Lookups would never find it again: every write would make one more.
            await self._withdraw(mine.id)
            raise TransportError(
                f"nams: the service stored the new conversation of session {name!r} "
                f"under userId {owner(mine)!r}, not {user!r}: portable session names "
                "need a service that keeps userId"
            )
        if self._secret is not None and self.named(mine) != name:  # as above, for its marker
            await self._withdraw(mine.id)
            raise TransportError(
                f"nams: the service stamped the new conversation of session {name!r} "
                f"createdAt {mine.created_at}, not within {WINDOW:g} s of this machine's "
                "clock: a session secret needs the two clocks to agree (and createdAt)"
            )
        rivals = await self._scan(
            user, lambda c: owned(c, user) and self.named(c) == name and c.id != mine.id
        )
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
