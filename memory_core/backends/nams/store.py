"""``NamsBackend``: the contract over the hosted Neo4j Agent Memory Service (NAMS).

URLs: ``nams+https://host/v1`` → ``https://host/v1``; ``nams+http://…`` likewise;
a bare ``nams://`` takes the base URL from ``MEMORY_ENDPOINT``. A URL without a path
gets ``/v1``. Credentials never go in the URL: pass ``api_key=`` (else ``MEMORY_API_KEY``)
and optionally ``workspace_id=`` (else ``MEMORY_WORKSPACE_ID``).

The service issues conversation ids. By default (``session_names="portable"``) the
caller names sessions as on every other backend and the adapter maps each name to one
server conversation (:mod:`memory_core.backends.nams.sessions`); with ``session_names="server"`` the
reference behaviour holds: create a conversation first and pass its ``Conversation.id``
as ``session_id`` (or ``conversation_id``) afterwards. What differs from the embedded and
Bolt backends is declared in ``backend.capabilities`` (per instance: the two modes differ);
the behaviour behind each difference is documented on the hook that implements it.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit
from uuid import NAMESPACE_URL, UUID, uuid5

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from memory_core.store import (
    CHARS_PER_TOKEN,
    Capabilities,
    ConfigurationError,
    ConflictError,
    Conversation,
    ConversationPage,
    Embedder,
    Entity,
    Erased,
    ExtractionStatus,
    InvalidRequestError,
    Limits,
    Message,
    MessageRole,
    NotFoundError,
    Relationship,
    Store,
    StoreStats,
    TransportError,
    cursor_error,
    decode_cursor,
    encode_cursor,
    fit_context,
    fit_notes,
    format_context,
    query_terms,
    redact_url,
    relevant_hits,
    relevant_pool,
    text_score,
    together,
    trusted,
    trusted_many,
    utcnow,
)
from memory_core.store import nams_wire as wire
from memory_core.store import requests as rq

from . import erasure, long_term, reasoning, stats
from .marker import load_secret
from .sessions import (
    DEFAULT_CACHE_SIZE,
    RESERVED_KEYS,
    NameIndex,
    SessionNames,
    parse_created_ids,
    parse_json,
    parse_messages,
    parse_page,
    portable_id,
    visible_metadata,
)
from .transport import (
    ENV_API_KEY,
    ENV_WORKSPACE,
    NamsTransport,
    RequestParts,
    RetryPolicy,
    check_positive,
    decode,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")
SessionNamesMode = Literal["portable", "server"]

ENV_ENDPOINT = "MEMORY_ENDPOINT"
UNKNOWN_CONVERSATION = (
    "with session_names='server' the service issues conversation ids: call "
    "create_conversation() first and pass the returned Conversation.id, or open the "
    "backend with session_names='portable' (the default) to name sessions yourself"
)

SERVER_CAPABILITIES = Capabilities(
    user_erasure=True,
    store_stats=True,
    observations=True,
    reflections=True,
    extraction_status=True,
    entities=True,
    delete_entity=True,
    entity_search=True,
    entity_graph=True,
    entity_updates=True,
    entity_merge=True,
    trio=True,
    max_messages_per_read=wire.MAX_PAGE,
    default_messages_per_read=wire.MAX_PAGE,
    max_page_size=wire.MAX_PAGE,
    max_bulk_messages=wire.MAX_BULK,
    max_search_hits=wire.MAX_PAGE,
)
"""``session_names="server"``: the reference behaviour (the service issues ids)."""
PORTABLE_CAPABILITIES = replace(
    SERVER_CAPABILITIES,
    client_chosen_ids=True,
    auto_create_conversation=True,
    user_scoped_calls=True,  # a name is looked up, and created, per user
)
"""``session_names="portable"`` (the default): the caller names sessions."""


def resolve_base_url(url: str | None) -> str:
    """The ``http(s)://…/v1`` base URL a ``nams…://`` URL names (see the module doc)."""
    if url is None:
        url = "nams://"
    if not isinstance(url, str):
        raise ConfigurationError("nams backend: the URL must be a string")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "nams" and not parts.netloc:
        endpoint = os.environ.get(ENV_ENDPOINT, "").strip()
        if not endpoint:
            raise ConfigurationError(
                f"nams://: set {ENV_ENDPOINT} to the service URL (e.g. https://host/v1) "
                "or use nams+https://host/v1"
            )
        parts = urlsplit(endpoint)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise ConfigurationError(f"{ENV_ENDPOINT} must be an http(s) URL")
    elif scheme in ("nams+https", "nams"):
        scheme = "https"
    elif scheme == "nams+http":
        scheme = "http"
    elif scheme not in ("http", "https"):
        raise ConfigurationError(f"{redact_url(url)}: not a NAMS URL (use nams+https://host/v1)")
    if not parts.hostname:
        raise ConfigurationError(f"{redact_url(url)}: the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise ConfigurationError(
            f"{redact_url(url)}: credentials do not go in the URL; pass api_key=... or set "
            f"{ENV_API_KEY}"
        )
    if parts.query or parts.fragment:
        raise ConfigurationError(
            f"{redact_url(url)}: query strings are not read; pass options as keywords"
        )
    route = parts.path.rstrip("/") or wire.API_PREFIX
    return urlunsplit((scheme, parts.netloc, route, "", ""))


CURSOR_KIND = "nams"  # this store's cursors wrap the service's: ``nams.<service cursor>``


def _service_cursor(cursor: str) -> str:
    """The service's cursor a ``nams.`` cursor wraps; ``cursor_error`` otherwise."""
    value = decode_cursor(CURSOR_KIND, cursor)
    if not isinstance(value, str) or not value:
        raise cursor_error()
    return value


def _uuid(value: str) -> UUID:
    """A server id as a UUID; a non-UUID id maps to a stable UUIDv5 of itself."""
    try:
        return UUID(value)
    except ValueError:
        return uuid5(NAMESPACE_URL, f"nams:{value}")


def _uuids(values: list[str]) -> list[UUID]:
    """Server ids as :func:`_uuid` maps them, parsed in one pass when all are UUIDs.

    pydantic's UUID parser accepts a subset of what ``UUID()`` accepts (hyphenated,
    plain hex, braces, ``urn:uuid:``), with the same value; anything else goes through
    :func:`_uuid` one by one.
    """
    try:
        return _UUID_LIST.validate_python(values)
    except ValidationError:
        return [_uuid(value) for value in values]


_UUID_LIST: TypeAdapter[list[UUID]] = TypeAdapter(list[UUID])
_ROLES = {role.value: role for role in MessageRole}


def _rescored(query: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Text hits (wire dicts, best first by the service) scored on the shared scale and
    sorted best first (equal scores keep the service's order); hits with none of the
    query's words are not text hits (as on every backend)."""
    terms = query_terms(query)
    scored = []
    for item in items:
        score = text_score(terms, item["content"])
        if score > 0.0:
            scored.append({**item, "score": score})
    scored.sort(key=lambda item: -item["score"])
    return scored


@lru_cache(maxsize=256)
def _maybe_uuid(value: str | None) -> UUID | None:
    """A conversation id (every message of a response repeats it: parsed once)."""
    return None if value is None else _uuid(value)


@dataclass(frozen=True)
class _At:
    """The conversation a call acts on: its server id (for routes), the id callers see
    (``None``: the server's, as sent), the ``session_id`` to report, and its header when
    the lookup fetched one."""

    server_id: str
    conversation_id: UUID | None
    label: str
    header: wire.ConversationOut | None
    session: str | None = None
    """The session name to report on a conversation (``None``: the name its header
    carries, or its id)."""


class NamsStore(Store):
    """The hosted NAMS service over HTTP (``nams+https://host/v1``).

    Options (besides the contract's ``strict``): ``api_key`` (else ``MEMORY_API_KEY``),
    ``workspace_id`` (else ``MEMORY_WORKSPACE_ID``; sent as ``X-Workspace-Id``),
    ``timeout`` (read/write/pool seconds, 30), ``connect_timeout`` (10),
    ``max_retries`` (3), ``backoff`` (0.5 s first step), ``max_backoff`` (8 s),
    ``max_retry_after`` (60 s: a longer ``Retry-After`` raises at once),
    ``http_transport`` (an ``httpx.AsyncBaseTransport``, for tests), ``trust_env``
    (honour proxy and certificate variables, True; a loopback base URL — ``localhost``,
    127.0.0.0/8, ``::1`` — never goes through a proxy either way).

    Session names: ``session_names`` is ``"portable"`` (default: the caller names
    sessions; the name is kept in the conversation's metadata under
    ``"memory_core_session"`` and found by listing conversations) or ``"server"`` (the
    reference: ``session_id`` is the server-issued id). Portable-mode options:
    ``session_cache_size`` (names remembered in process, 10,000), ``session_index``
    (a SQLite file path: remember names across processes; off by default; a file that
    fails is left alone with one logged warning, never failing a call) and
    ``session_secret`` (else ``MEMORY_SESSION_SECRET``; never shown in a repr, log or
    error). A name resolves only among the conversations of the caller's
    ``user_identifier`` (none: those with no ``userId``).

    Without a session secret the workspace key is the trust boundary: anyone holding
    it can create a conversation carrying a name under any user's ``userId``, and
    being the oldest it is chosen for that user's name. With a secret, each
    conversation the adapter creates for a name carries a marker (an HMAC of user,
    name and time, under ``"memory_core_session_mac"``) and only conversations whose
    marker verifies are chosen; every client of a workspace must use the same secret,
    and a clock within 5 minutes of the service's. Names made before the secret was
    set (or with another secret) no longer resolve: the next write makes a new
    conversation (see :mod:`.marker` for what a marker does not bind). Recommended
    wherever several users share a workspace.

    The service scopes data by conversation id: ``user_identifier`` is sent only by
    ``create_conversation`` (as ``userId``) and ``list_conversations`` (a filter); in
    portable mode it also scopes the lookup of a session name (and is sent as ``userId``
    when the first write creates the conversation). Any other use warns once
    (:class:`~memory_core.backend.CapabilityWarning`), or raises
    :class:`~memory_core.errors.NotSupportedError` when ``strict=True``.
    """

    name = "nams"
    capabilities = PORTABLE_CAPABILITIES
    server_capabilities = SERVER_CAPABILITIES
    workarounds = {**long_term.WORKAROUNDS, **reasoning.WORKAROUNDS}
    kept_entity_types = long_term.KEPT_ENTITY_TYPES

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key: str | None = None,
        workspace_id: str | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 10.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_retry_after: float = 60.0,
        http_transport: httpx.AsyncBaseTransport | None = None,
        trust_env: bool = True,
        session_names: SessionNamesMode = "portable",
        session_cache_size: int = DEFAULT_CACHE_SIZE,
        session_index: str | os.PathLike[str] | None = None,
        session_secret: str | bytes | None = None,
        multi_tenant: bool = False,
        embedder: Embedder | None = None,
        limits: Limits | None = None,
    ) -> None:
        if session_names not in ("portable", "server"):
            raise ConfigurationError("nams backend: session_names must be 'portable' or 'server'")
        self.session_names: SessionNamesMode = session_names
        self.capabilities = (
            PORTABLE_CAPABILITIES if session_names == "portable" else SERVER_CAPABILITIES
        )
        if session_index is not None and not isinstance(session_index, str | os.PathLike):
            raise ConfigurationError("nams backend: session_index must be a file path")
        if session_index is not None and session_names != "portable":
            raise ConfigurationError("nams backend: session_index needs session_names='portable'")
        self._session_index = session_index
        secret = load_secret(session_secret, portable=session_names == "portable")
        self._index_scope = "" if secret is None else f" marked:{secret.fingerprint()}"
        cache_size = check_positive(session_cache_size, "session_cache_size", integer=True)
        super().__init__(multi_tenant=multi_tenant, embedder=embedder, limits=limits)
        self.base_url = resolve_base_url(url)
        key = api_key if api_key is not None else os.environ.get(ENV_API_KEY) or None
        if key is not None and (not isinstance(key, str) or not key.strip()):
            raise ConfigurationError("nams backend: api_key must be a non-empty string")
        workspace = workspace_id if workspace_id is not None else os.environ.get(ENV_WORKSPACE)
        if workspace is not None and not isinstance(workspace, str):
            raise ConfigurationError("nams backend: workspace_id must be a string")
        self.workspace_id = workspace or None
        if http_transport is not None and not isinstance(http_transport, httpx.AsyncBaseTransport):
            raise ConfigurationError("nams backend: http_transport must be an httpx transport")
        policy = RetryPolicy(
            max_retries=check_positive(max_retries, "max_retries", integer=True),
            backoff=check_positive(backoff, "backoff"),
            max_backoff=check_positive(max_backoff, "max_backoff"),
            max_retry_after=check_positive(max_retry_after, "max_retry_after"),
        )
        self._http = NamsTransport(
            self.base_url,
            api_key=key,
            workspace_id=self.workspace_id,
            timeout=check_positive(timeout, "timeout"),
            connect_timeout=check_positive(connect_timeout, "connect_timeout"),
            retry=policy,
            http_transport=http_transport,
            trust_env=bool(trust_env),
            backend=self.name,
        )
        self._names: SessionNames | None = (
            SessionNames(self._call, self._fetch, cache_size=max(1, cache_size), secret=secret)
            if session_names == "portable"
            else None
        )

    def describe(self) -> str:
        """The base URL and workspace; never the API key."""
        where = f"{self.name} {self.base_url}"
        return f"{where} workspace={self.workspace_id}" if self.workspace_id else where

    # ------------------------------------------------------------------ plumbing

    async def _call(
        self, method: str, route: str, operation: str, **parts: Unpack[RequestParts]
    ) -> Any:
        """One request (see :meth:`NamsTransport.send`); its decoded JSON body (``None``
        when empty)."""
        body = await self._http.send(method, route, operation=operation, **parts)
        return decode(body, method, route)

    async def _fetch(
        self,
        model: type[M],
        method: str,
        route: str,
        operation: str,
        **parts: Unpack[RequestParts],
    ) -> M:
        """One request (see :meth:`NamsTransport.send`); the response validated as ``model``
        straight from its bytes."""
        body = await self._http.send(method, route, operation=operation, **parts)
        return parse_json(model, body, method, route)

    async def _header_of(self, at: _At) -> wire.ConversationOut:
        route = wire.path(wire.CONVERSATION, conversation_id=at.server_id)
        return await self._fetch(wire.ConversationOut, "GET", route, "get_conversation")

    @staticmethod
    def _role(value: str, route: str) -> MessageRole:
        """A wire role in any case (the exact spelling is looked up inline first)."""
        role = _ROLES.get(value.lower())
        if role is None:
            raise TransportError(f"nams: {route} returned an unknown role {value!r}")
        return role

    def _from_wire(self, items: list[dict[str, Any]], route: str, at: _At) -> list[Message]:
        """Wire messages (dicts keyed by ``MessageOut`` field name, see
        :func:`parse_messages`) as Messages, in the order given.

        Each item is validated against the wire contract and each value below has its
        field's type, so the Messages are filled in without validating them a second time
        (bulk writes and reads build hundreds at once).
        """
        ids = _uuids([item["id"] for item in items])
        fixed, label = at.conversation_id, at.label
        return trusted_many(
            Message,
            (
                {
                    "id": id_,
                    "created_at": item.get("created_at") or utcnow(),
                    "updated_at": None,
                    "embedding": None,
                    "metadata": {},
                    "role": _ROLES.get(item["role"]) or self._role(item["role"], route),
                    "content": item["content"],
                    "conversation_id": fixed or _maybe_uuid(item.get("conversation_id")),
                    "session_id": label,
                    "tool_calls": None,
                    "score": item.get("score"),
                    "idempotency_key": None,
                    "mentions": [],
                }
                for item, id_ in zip(items, ids, strict=True)
            ),
        )

    def _messages(self, body: bytes, method: str, route: str, at: _At) -> list[Message]:
        """The messages of a raw ``MessageList`` response, in the order sent."""
        return self._from_wire(parse_messages(body, method, route), route, at)

    def _conversation(
        self,
        header: wire.ConversationOut,
        session: str | None,
        messages: list[Message] | None = None,
    ) -> Conversation:
        """A header as a Conversation (see :meth:`_header_values`)."""
        return trusted(Conversation, self._header_values(header.model_dump(), session, messages))

    def _header_values(
        self,
        header: dict[str, Any],
        session: str | None,
        messages: list[Message] | None = None,
        server_uuid: UUID | None = None,
    ) -> dict[str, Any]:
        """A header's Conversation fields. ``header`` is keyed by ``ConversationOut`` field
        name and handed over (its metadata is kept, not copied); ``session`` None means
        "the name it carries" (in portable mode) else its id. ``server_uuid``: the
        header's id as :func:`_uuid` maps it, when the caller already has it.

        The header was validated (wire contract) and each value has its field's type, so
        the Conversation is not validated again (a list builds a thousand)."""
        metadata: dict[str, Any] = header.get("metadata") or {}
        conversation_id: UUID | None = None
        if self._names is not None:
            name = self._names.name_of(metadata, header.get("user_id"), header.get("created_at"))
            session = session or name
            metadata = visible_metadata(metadata)
            if name is not None:
                conversation_id = portable_id(name, header.get("user_id"))
        return {
            "id": conversation_id or server_uuid or _uuid(header["id"]),
            "session_id": session or header["id"],
            "title": None,
            "messages": messages or [],
            "created_at": header.get("created_at") or utcnow(),
            "updated_at": header.get("updated_at"),
            "metadata": metadata,
            "user_identifier": header.get("user_id"),
        }

    async def _on(
        self,
        target: rq.Target,
        run: Callable[[_At], Awaitable[T]],
        *,
        create: bool = False,
        missing: Callable[[], T] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> T:
        """Run ``run(at)`` on the conversation ``target`` names.

        Server-id mode: the handle is the server id. Portable mode: a name is resolved
        (created when ``create``; a name naming nothing returns ``missing()``), a
        ``conversation_id`` alone is a portable or server id (``NotFoundError`` when it
        names nothing). A 404 on a remembered session (deleted elsewhere) forgets it and
        resolves once more.
        """
        names = self._names
        if names is None:
            try:
                return await run(_At(target.handle, None, target.handle, None, target.session_id))
            except NotFoundError:
                raise self._unknown(target, UNKNOWN_CONVERSATION if create else None) from None
        name, user = target.session_id, target.user_identifier
        for attempt in (0, 1):
            if name is not None:
                found = await names.resolve(name, user, create=create, metadata=metadata)
            else:
                assert target.conversation_id is not None
                found = await names.resolve_id(target.conversation_id)
                if found is None:
                    raise self._unknown(target)
            if found is None:
                assert missing is not None, "reads pass missing=, writes create=True"
                return missing()
            # A name that was the conversation's id reports the name it carries.
            session = found.name if found.name is not None else name
            label = session or (names.named(found.header) if found.header else None)
            at = _At(
                found.server_id,
                found.conversation_id,
                label or found.server_id,
                found.header,
                session,
            )
            try:
                return await run(at)
            except NotFoundError:
                names.forget(name, user, found.conversation_id)
                if attempt:
                    raise self._unknown(target) from None
        raise AssertionError("unreachable")

    def _unknown(self, target: rq.Target, hint: str | None = None) -> NotFoundError:
        """The conversation ``target`` names does not exist (on the server: a 404)."""
        argument = "session_id" if target.session_id is not None else "conversation_id"
        return NotFoundError.missing(
            self.name, "conversation", target.handle, argument=argument, hint=hint
        )

    def _missing_conversation(self, target: rq.Target) -> Conversation:
        """What reading an unknown portable name returns: an empty conversation whose id
        is stable for the (user, name) pair, as on embedded and Bolt. Nothing is created."""
        name = target.session_id or ""
        return Conversation(
            id=portable_id(name, target.user_identifier),
            session_id=name,
            user_identifier=target.user_identifier,
        )

    # ------------------------------------------------------------------ lifecycle

    async def connect(self) -> None:
        """Open the pool and probe with one cheap request; close it again on failure.
        Opens the session index file when one was configured (a file that cannot be
        used logs one warning and names are looked up on the service: see
        :class:`~.sessions.NameIndex`)."""
        await self._http.open()
        try:
            await self._call("GET", wire.CONVERSATIONS, "connect", params={"limit": 1})
            if self._names is not None and self._session_index is not None:
                scope = f"{self.base_url} {self.workspace_id or ''}{self._index_scope}"
                self._names.index = NameIndex(self._session_index, scope)
        except BaseException:
            await self._http.close()
            raise

    async def close(self) -> None:
        if self._names is not None:
            self._names.close()
        await self._http.close()

    # ------------------------------------------------------------------ writes

    async def add_message(self, req: rq.AddMessage) -> Message:
        """Only role and content travel. The response has no ``createdAt``: the returned
        message carries the client's clock at the time of the response. In portable mode
        the first write to a new name creates its conversation."""
        # The contract checked role and content: serialized in one step, no second check;
        # of the answer only the ids are read (it echoes the content this call sent).
        body = wire.MESSAGE_IN_FIELDS.dump_json({"role": req.role.value, "content": req.content})

        async def post(at: _At) -> Message:
            route = wire.path(wire.MESSAGES, conversation_id=at.server_id)
            answer = await self._http.send("POST", route, operation="add_message", content=body)
            created = parse_created_ids(answer, "POST", route)
            return trusted(
                Message,
                {
                    "id": _uuid(created["id"]),
                    "created_at": utcnow(),
                    "updated_at": None,
                    "embedding": None,
                    "metadata": {},
                    "role": req.role,
                    "content": req.content,
                    "conversation_id": at.conversation_id
                    or _maybe_uuid(created["conversation_id"]),
                    "session_id": at.label,
                    "tool_calls": None,
                    "score": None,
                    "idempotency_key": None,
                    "mentions": [],
                },
            )

        return await self._on(req.target, post, create=True)

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        """One bulk request per chunk of at most 100 (the contract cuts the chunks)."""
        # Plain dicts serialized straight to bytes, with no validation pass: the contract
        # already checked each role and content.
        body = wire.BULK_IN_FIELDS.dump_json(
            {"messages": [{"role": m.role.value, "content": m.content} for m in req.messages]}
        )

        async def post(at: _At) -> list[Message]:
            route = wire.path(wire.MESSAGES_BULK, conversation_id=at.server_id)
            payload = await self._http.send(
                "POST", route, operation="add_messages_batch", content=body
            )
            return self._messages(payload, "POST", route, at)

        return await self._on(req.target, post, create=True)

    async def create_conversation(self, req: rq.CreateConversation) -> Conversation:
        """The service issues the id; only ``userId`` and ``metadata`` are sent.

        Server-id mode: always a new conversation; the returned ``session_id`` is its id
        (the handle to use). Portable mode: idempotent per name — the existing
        conversation is returned as stored (the service cannot update metadata).

        Both modes refuse the keys of :data:`~.sessions.RESERVED_KEYS` in ``metadata``:
        only a portable lookup of a name may create a conversation carrying them, so this
        library never makes one that another user's lookup could take for theirs."""
        reserved = sorted(RESERVED_KEYS.intersection(req.metadata))
        if reserved:
            raise InvalidRequestError(
                f"the key {reserved[0]!r} is reserved for portable session names (a "
                "conversation carrying it is created by the first write to its name)",
                argument="metadata",
            )
        if self._names is None:
            body = wire.ConversationCreate(
                user_id=req.target.user_identifier, metadata=req.metadata or None
            ).to_wire(omit_none=True)
            header = await self._fetch(
                wire.ConversationOut,
                "POST",
                wire.CONVERSATIONS,
                "create_conversation",
                json=body,
            )
            return self._conversation(header, None)

        async def read(at: _At) -> Conversation:
            header = at.header
            if header is None:
                route = wire.path(wire.CONVERSATION, conversation_id=at.server_id)
                header = await self._fetch(
                    wire.ConversationOut, "GET", route, "create_conversation"
                )
            return self._conversation(header, at.session)

        return await self._on(req.target, read, create=True, metadata=req.metadata)

    # ------------------------------------------------------------------ reads

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        """Header and newest ``limit`` messages from two requests sent at once (one round
        trip of latency), returned oldest first; one request when a portable lookup just
        fetched the header. The header's error, if any, is the one raised."""

        async def read(at: _At) -> Conversation:
            route = wire.path(wire.MESSAGES, conversation_id=at.server_id)

            async def messages() -> Any:
                return await self._http.send(
                    "GET", route, operation="get_conversation", params={"limit": req.limit}
                )

            if at.header is None:
                header, payload = await together(self._header_of(at), messages())
            else:
                header, payload = at.header, await messages()
            newest_first = self._messages(payload, "GET", route, at)
            return self._conversation(header, at.session, newest_first[::-1])

        return await self._on(
            req.target, read, missing=lambda: self._missing_conversation(req.target)
        )

    async def list_conversations(self, req: rq.ListConversations) -> ConversationPage:
        """One ``GET /conversations`` request (``limit``, ``cursor``, ``userId``): the page
        the service sends, cut to ``limit``. ``next_cursor`` is the service's cursor
        wrapped as a ``nams.`` cursor (see :mod:`memory_core.cursors`); an empty page
        ends the walk whatever cursor came with it. In portable mode ``session_id`` is the
        name a conversation carries (its id when it has none).

        The page is turned into Conversations at once, so its wire headers are garbage
        before the next request (fewer live objects for the garbage collector to walk in
        a long listing)."""
        params: dict[str, Any] = {"limit": req.limit}
        if req.cursor is not None:
            params["cursor"] = _service_cursor(req.cursor)
        if req.user_identifier is not None:
            params["userId"] = req.user_identifier
        route = wire.CONVERSATIONS
        # A cursor the service refuses (400 invalid_cursor) is an InvalidRequestError
        # naming ``cursor`` (see the transport).
        body = await self._http.send("GET", route, operation="list_conversations", params=params)
        page = parse_page(body, "GET", route)
        headers: list[dict[str, Any]] = page.get("conversations", [])
        cursor = page.get("next_cursor")
        return ConversationPage(
            conversations=self._listed(headers[: req.limit]),
            next_cursor=encode_cursor(CURSOR_KIND, cursor) if headers and cursor else None,
        )

    def _listed(self, headers: list[dict[str, Any]]) -> list[Conversation]:
        """Listed headers (see :func:`parse_page`) as Conversations (server ids parsed in
        one pass where they are the ids callers see; in portable mode a named
        conversation's id is its name's)."""
        if self._names is not None:
            values = [self._header_values(c, None) for c in headers]
        else:
            ids = _uuids([c["id"] for c in headers])
            values = [
                self._header_values(c, None, server_uuid=i)
                for c, i in zip(headers, ids, strict=True)
            ]
        return trusted_many(Conversation, values)

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        """Sends only query and limit (≤ 200). Text hits are scored on the shared scale
        from their content (:func:`memory_core.scoring.text_score`) and re-ranked, so the
        service's own text scores never reach the caller (the candidates are the service's
        best ``limit``); vector hits keep the service's ``score``."""
        assert req.target is not None  # search_global is False: the contract requires one
        return await self._on(req.target, lambda at: self._search(req, at), missing=lambda: [])

    async def _search(self, req: rq.SearchMessages, at: _At) -> list[Message]:
        assert req.target is not None
        route = wire.path(wire.SEARCH, conversation_id=at.server_id)
        body = wire.SearchIn(query=req.query, limit=req.limit).to_json()
        result = await self._fetch(wire.SearchOut, "POST", route, "search_messages", content=body)
        items = [m.model_dump() for m in result.messages]
        if result.search_type == "text":
            items = _rescored(req.query, items)
        return self._from_wire(items[: req.limit], route, at)

    async def get_context(self, req: rq.GetContext) -> str:
        """The context endpoint's reflections, observations and newest ``max_messages``
        recent messages, formatted by :func:`memory_core.summary.format_context`.

        The endpoint takes no query; with a ``query`` the relevant messages come from the
        search endpoint (a second request), as on the other backends."""
        return await self._on(
            req.target,
            lambda at: self._context(req, at),
            missing=lambda: format_context([], []),
        )

    async def _context(self, req: rq.GetContext, at: _At) -> str:
        route = wire.path(wire.CONTEXT, conversation_id=at.server_id)
        context = await self._fetch(wire.ContextOut, "GET", route, "get_context")
        items = [m.model_dump() for m in context.recent_messages[: req.max_messages]]
        recent = self._from_wire(items, route, at)[::-1]
        relevant: list[Message] = []
        if req.query:
            seen = {m.id for m in recent}
            search = rq.SearchMessages(
                query=req.query,
                target=req.target,
                limit=relevant_pool(
                    req.max_hits + len(seen),
                    req.per_session,
                    wire.MAX_PAGE,
                    req.recency_half_life,
                ),
                threshold=None,
                metadata_filters={},
                query_embedding=None,
                scope=rq.UNSCOPED,
            )
            hits = await self._search(search, at)
            relevant = relevant_hits(
                hits, seen, req.per_session, req.max_hits, req.recency_half_life
            )
        observations = [o.content for o in context.observations]
        reflections = [r.content for r in context.reflections]
        if req.max_tokens is not None:
            # the messages first; the service's notes in what they leave
            room = req.max_tokens * CHARS_PER_TOKEN
            recent, relevant = fit_context(recent, relevant, room)
            room -= len(format_context(recent, relevant)) + 2
            reflections, observations = fit_notes(reflections, observations, room)
        return format_context(recent, relevant, observations, reflections)

    async def get_observations(self, target: rq.Target) -> list[dict[str, Any]]:
        """The service's observations as camelCase dicts (checked against the wire model;
        fields the service adds are kept)."""

        async def read(at: _At) -> list[dict[str, Any]]:
            route = wire.path(wire.OBSERVATIONS, conversation_id=at.server_id)
            found = await self._fetch(wire.ObservationList, "GET", route, "get_observations")
            return [item.to_wire(omit_none=True) for item in found.observations]

        return await self._on(target, read, missing=lambda: [])

    async def get_reflections(self, target: rq.Target) -> list[dict[str, Any]]:
        """The service's reflections as camelCase dicts (as for observations)."""

        async def read(at: _At) -> list[dict[str, Any]]:
            route = wire.path(wire.REFLECTIONS, conversation_id=at.server_id)
            found = await self._fetch(wire.ReflectionList, "GET", route, "get_reflections")
            return [item.to_wire(omit_none=True) for item in found.reflections]

        return await self._on(target, read, missing=lambda: [])

    async def get_extraction_status(self, target: rq.Target) -> ExtractionStatus:
        return await self._on(target, self._extraction, missing=lambda: ExtractionStatus())

    async def _extraction(self, at: _At) -> ExtractionStatus:
        route = wire.path(wire.EXTRACTION_STATUS, conversation_id=at.server_id)
        found = await self._fetch(wire.ExtractionStatusOut, "GET", route, "get_extraction_status")
        return ExtractionStatus(
            messages=[item.to_wire(omit_none=True) for item in found.messages],
            summary=found.summary,
        )

    # ------------------------------------------------------------------ deletes

    async def clear_session(self, target: rq.Target) -> bool:
        """Deletes the whole conversation; a 404 means already gone (returns False). In
        portable mode the name is forgotten, so the next write creates a new one."""

        async def delete(at: _At) -> bool:
            route = wire.path(wire.CONVERSATION, conversation_id=at.server_id)
            await self._call("DELETE", route, "clear_session")
            return True

        try:
            return await self._on(target, delete, missing=lambda: False)
        except NotFoundError:
            return False
        finally:
            if self._names is not None:
                if target.session_id is not None:
                    self._names.forget(target.session_id, target.user_identifier, None)
                else:
                    self._names.forget(None, None, target.conversation_id)

    async def forget_user(self, req: rq.ForgetUser) -> Erased:
        """Deletes each conversation ``GET /conversations?userId=`` lists and the user's
        portable names; ``not_reached`` says what the service keeps."""
        return await erasure.forget_user(self._http, self._names, req)

    async def stats(self, req: rq.Stats) -> StoreStats:
        """Conversations per user from ``GET /conversations``; no message or entity
        counts, no size (the service gives none)."""
        return await stats.stats(self._http, req, self.name)

    # ------------------------------------------------------------------ entities

    def _entity(self, item: wire.EntityOut, name: str, kind: str) -> Entity:
        entity_id = item.merged_into if item.resolution == "merged" and item.merged_into else None
        return Entity(
            id=entity_id or item.id,
            name=item.name or name,
            type=wire.entity_type_from_wire(item.type or wire.entity_type_to_wire(kind)),
            description=item.description,
            confidence=item.confidence,
            aliases=list(item.aliases or []),
            attributes=dict(item.attributes or {}),
            created_at=item.created_at or utcnow(),
            updated_at=item.updated_at,
        )

    async def add_entity(self, req: rq.AddEntity) -> Entity:
        """Types travel lower case (``OBJECT``/``EVENT`` as ``custom``) and come back upper
        case. A ``resolution: "merged"`` answer returns the entity it merged into."""
        body = wire.EntityIn.model_validate(
            {
                "name": req.name,
                "type": wire.entity_type_to_wire(req.type),
                "description": req.description,
            }
        ).to_wire(omit_none=True)
        item = await self._fetch(wire.EntityOut, "POST", wire.ENTITIES, "add_entity", json=body)
        return self._entity(item, req.name, req.type)

    async def find_entities(self, req: rq.FindEntities) -> list[Entity]:
        body = wire.EntitySearchIn.model_validate(
            {
                "query": req.identifier,
                "limit": req.limit,
                "type": None if req.type is None else wire.entity_type_to_wire(req.type),
            }
        ).to_wire(omit_none=True)
        result = await self._fetch(
            wire.EntitySearchOut, "POST", wire.ENTITIES_SEARCH, "find_entities", json=body
        )
        return [self._entity(e, e.name or "", "CUSTOM") for e in result.entities[: req.limit]]

    async def search_entities(self, req: rq.SearchEntities) -> list[Entity]:
        """``POST /entities/search``; text hits scored on the shared scale here (see
        :mod:`.long_term`)."""
        found = await self._fetch(
            wire.EntitySearchOut,
            "POST",
            wire.ENTITIES_SEARCH,
            "search_entities",
            json=long_term.search_body(req),
        )
        return long_term.ranked(req, found)

    async def delete_entity(self, req: rq.DeleteEntity) -> bool:
        """``DELETE /entities/{id}``; a 404 is False."""
        route = wire.path(wire.ENTITY, entity_id=req.entity_id)
        try:
            await self._call("DELETE", route, "delete_entity")
        except NotFoundError:
            return False
        return True

    async def get_entity(self, req: rq.GetEntity) -> Entity | None:
        """``GET /entities/{id}``; a 404 is ``None``."""
        route = wire.path(wire.ENTITY, entity_id=req.entity_id)
        try:
            item = await self._fetch(wire.EntityOut, "GET", route, "get_entity")
        except NotFoundError:
            return None
        return long_term.entity(item)

    async def get_entity_by_name(self, req: rq.GetEntityByName) -> Entity | None:
        """``POST /entities/search`` by the name, matched here (see :mod:`.long_term`)."""
        found = await self._fetch(
            wire.EntitySearchOut,
            "POST",
            wire.ENTITIES_SEARCH,
            "get_entity_by_name",
            json=long_term.by_name_body(req),
        )
        return long_term.by_name(req, found)

    async def update_entity(self, req: rq.UpdateEntity) -> Entity:
        """``PUT /entities/{id}`` with the fields given; 404 and 409 name their argument."""
        route = wire.path(wire.ENTITY, entity_id=req.entity_id)
        body = long_term.update_body(req)
        try:
            item = await self._fetch(wire.EntityOut, "PUT", route, "update_entity", json=body)
        except NotFoundError:
            raise long_term.missing(req.entity_id) from None
        except ConflictError:
            raise long_term.conflict() from None
        return long_term.entity(item)

    async def merge_entities(self, req: rq.MergeEntities) -> Entity:
        """``POST /entities/{source}/merge`` naming the target; on a 404 the source is
        read to tell which id is unknown."""
        route = wire.path(wire.ENTITY_MERGE, entity_id=req.source_id)
        body = long_term.merge_body(req)
        try:
            item = await self._fetch(wire.EntityOut, "POST", route, "merge_entities", json=body)
        except NotFoundError:
            known = await self.get_entity(rq.GetEntity(entity_id=req.source_id, scope=req.scope))
            unknown = ("target_id", req.target_id) if known else ("source_id", req.source_id)
            raise long_term.missing(unknown[1], unknown[0]) from None
        return long_term.entity(item)

    async def _graph(self, entity_id: str, depth: int, operation: str) -> wire.EntityGraphOut:
        """``GET /entities/graph`` around ``entity_id``; a 404 names ``entity_id``."""
        params = long_term.graph_params(entity_id, depth)
        try:
            return await self._fetch(
                wire.EntityGraphOut, "GET", wire.ENTITIES_GRAPH, operation, params=params
            )
        except NotFoundError:
            raise long_term.missing(entity_id) from None

    async def list_relationships(self, req: rq.ListRelationships) -> list[Relationship]:
        """Read from the entity graph (see :mod:`.long_term`)."""
        graph = await self._graph(req.entity_id, 1, "list_relationships")
        return long_term.relationships_of(req, graph)

    async def related_entities(self, req: rq.RelatedEntities) -> list[Entity]:
        """A breadth-first walk of the entity graph (see :mod:`.long_term`)."""
        graph = await self._graph(req.entity_id, req.depth, "related_entities")
        return long_term.related(req, graph)
