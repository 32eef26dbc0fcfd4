"""``NamsBackend``: the contract over the hosted Neo4j Agent Memory Service (NAMS).

URLs: ``nams+https://host/v1`` → ``https://host/v1``; ``nams+http://…`` likewise;
a bare ``nams://`` takes the base URL from ``MEMORY_ENDPOINT``. A URL without a path
gets ``/v1``. Credentials never go in the URL: pass ``api_key=`` (else ``MEMORY_API_KEY``)
and optionally ``workspace_id=`` (else ``MEMORY_WORKSPACE_ID``).

The service issues conversation ids: create a conversation first and pass its
``Conversation.id`` as ``session_id`` (or ``conversation_id``) afterwards. What differs
from the embedded and Bolt backends is declared in :attr:`NamsBackend.capabilities`;
the behaviour behind each difference is documented on the hook that implements it.
"""

from __future__ import annotations

import os
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit
from uuid import NAMESPACE_URL, UUID, uuid5

import httpx
from pydantic import BaseModel, ValidationError

from memory_core import requests as rq
from memory_core.backend import Extractor, MemoryBackend
from memory_core.capabilities import Capabilities
from memory_core.embedding import Embedder
from memory_core.errors import (
    ConfigurationError,
    NotFoundError,
    TransportError,
)
from memory_core.models import (
    Conversation,
    Entity,
    ExtractionStatus,
    Message,
    MessageRole,
    utcnow,
)
from memory_core.settings import redact_url
from memory_core.summary import format_context

from . import wire
from .transport import NamsTransport, RetryPolicy, check_positive

M = TypeVar("M", bound=BaseModel)

ENV_ENDPOINT = "MEMORY_ENDPOINT"
ENV_API_KEY = "MEMORY_API_KEY"
ENV_WORKSPACE = "MEMORY_WORKSPACE_ID"


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


def _uuid(value: str) -> UUID:
    """A server id as a UUID; a non-UUID id maps to a stable UUIDv5 of itself."""
    try:
        return UUID(value)
    except ValueError:
        return uuid5(NAMESPACE_URL, f"nams:{value}")


def _maybe_uuid(value: str | None) -> UUID | None:
    return None if value is None else _uuid(value)


def _parse(model: type[M], payload: Any, route: str) -> M:
    try:
        return model.model_validate(payload if payload is not None else {})
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        raise TransportError(
            f"nams: unexpected response from {route} (fields: {', '.join(fields) or '?'})"
        ) from None


class NamsBackend(MemoryBackend):
    """The hosted NAMS service over HTTP (``nams+https://host/v1``).

    Options (besides the contract's ``strict``): ``api_key`` (else ``MEMORY_API_KEY``),
    ``workspace_id`` (else ``MEMORY_WORKSPACE_ID``; sent as ``X-Workspace-Id``),
    ``timeout`` (read/write/pool seconds, 30), ``connect_timeout`` (10),
    ``max_retries`` (3), ``backoff`` (0.5 s first step), ``max_backoff`` (8 s),
    ``max_retry_after`` (60 s: a longer ``Retry-After`` raises at once),
    ``http_transport`` (an ``httpx.AsyncBaseTransport``, for tests), ``trust_env``
    (honour proxy and certificate variables, True; a loopback base URL — ``localhost``,
    127.0.0.0/8, ``::1`` — never goes through a proxy either way).

    The service scopes data by conversation id: ``user_identifier`` is sent only by
    ``create_conversation`` (as ``userId``) and ``list_conversations`` (a filter). Any
    other method given one warns once (:class:`~memory_core.backend.CapabilityWarning`),
    or raises :class:`~memory_core.errors.NotSupportedError` when ``strict=True``.
    """

    name = "nams"
    capabilities = Capabilities(
        observations=True,
        reflections=True,
        extraction_status=True,
        entities=True,
        trio=True,
        max_messages_per_read=wire.MAX_PAGE,
        default_messages_per_read=wire.MAX_PAGE,
        max_page_size=wire.MAX_PAGE,
        max_bulk_messages=wire.MAX_BULK,
        max_search_hits=wire.MAX_PAGE,
    )

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
        strict: bool = False,
        multi_tenant: bool = False,
        embedder: Embedder | None = None,
        extractor: Extractor | None = None,
        summarizer: rq.Summarizer | None = None,
    ) -> None:
        super().__init__(
            strict=strict,
            multi_tenant=multi_tenant,
            embedder=embedder,
            extractor=extractor,
            summarizer=summarizer,
        )
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

    def describe(self) -> str:
        """The base URL and workspace; never the API key."""
        where = f"{self.name} {self.base_url}"
        return f"{where} workspace={self.workspace_id}" if self.workspace_id else where

    # ------------------------------------------------------------------ plumbing

    async def _call(
        self,
        method: str,
        route: str,
        operation: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
    ) -> Any:
        return await self._http.request(
            method, route, operation=operation, params=params, json=json
        )

    def _message(self, data: Any, route: str, session: str | None) -> Message:
        return self._from_wire(_parse(wire.MessageOut, data, route), route, session)

    @staticmethod
    def _from_wire(item: wire.MessageOut, route: str, session: str | None) -> Message:
        try:
            role = MessageRole(item.role.lower())
        except ValueError:
            raise TransportError(f"nams: {route} returned an unknown role {item.role!r}") from None
        return Message(
            id=_uuid(item.id),
            role=role,
            content=item.content,
            conversation_id=_maybe_uuid(item.conversation_id),
            session_id=session,
            created_at=item.created_at or utcnow(),
            score=item.score,
        )

    def _messages(self, items: Any, route: str, session: str | None) -> list[Message]:
        if not isinstance(items, list):
            raise TransportError(f"nams: unexpected response from {route} (messages)")
        return [self._message(m, route, session) for m in items]

    @staticmethod
    def _conversation(
        header: wire.ConversationOut, session: str, messages: list[Message] | None = None
    ) -> Conversation:
        created = header.created_at or utcnow()
        return Conversation(
            id=_uuid(header.id),
            session_id=session,
            messages=messages or [],
            created_at=created,
            updated_at=header.updated_at,
            metadata=header.metadata,
            user_identifier=header.user_id,
        )

    # ------------------------------------------------------------------ lifecycle

    async def _connect(self) -> None:
        """Open the pool and probe with one cheap request; close it again on failure."""
        await self._http.open()
        try:
            await self._call("GET", wire.CONVERSATIONS, "connect", params={"limit": 1})
        except BaseException:
            await self._http.close()
            raise

    async def _close(self) -> None:
        await self._http.close()

    # ------------------------------------------------------------------ writes

    async def _add_message(self, req: rq.AddMessage) -> Message:
        """Only role and content travel. The response has no ``createdAt``: the returned
        message carries the client's clock at the time of the response."""
        handle = req.target.handle
        route = wire.path(wire.MESSAGES, conversation_id=handle)
        body = wire.MessageIn(role=req.role.value, content=req.content).to_wire()
        payload = await self._call("POST", route, "add_message", json=body)
        created = _parse(wire.MessageCreated, payload, route)
        return Message(
            id=_uuid(created.id),
            role=req.role,
            content=created.content,
            conversation_id=_maybe_uuid(created.conversation_id),
            session_id=handle,
            created_at=utcnow(),
        )

    async def _add_messages(self, req: rq.AddMessages) -> list[Message]:
        """One bulk request per chunk of at most 100 (the contract cuts the chunks)."""
        handle = req.target.handle
        route = wire.path(wire.MESSAGES_BULK, conversation_id=handle)
        body = wire.BulkIn(
            messages=[wire.MessageIn(role=m.role.value, content=m.content) for m in req.messages]
        ).to_wire()
        payload = await self._call("POST", route, "add_messages_batch", json=body)
        items = payload.get("messages") if isinstance(payload, dict) else payload
        return self._messages(items, route, handle)

    async def _create_conversation(self, req: rq.CreateConversation) -> Conversation:
        """The service issues the id; only ``userId`` and ``metadata`` are sent. The name
        the caller passed only fills ``Conversation.session_id``."""
        body = wire.ConversationCreate(
            user_id=req.target.user_identifier, metadata=req.metadata or None
        ).to_wire(omit_none=True)
        payload = await self._call("POST", wire.CONVERSATIONS, "create_conversation", json=body)
        header = _parse(wire.ConversationOut, payload, wire.CONVERSATIONS)
        return self._conversation(header, req.target.handle)

    # ------------------------------------------------------------------ reads

    async def _get_conversation(self, req: rq.GetConversation) -> Conversation:
        """Header and newest ``limit`` messages from two requests, returned oldest first."""
        handle = req.target.handle
        route = wire.path(wire.CONVERSATION, conversation_id=handle)
        header = _parse(
            wire.ConversationOut, await self._call("GET", route, "get_conversation"), route
        )
        route = wire.path(wire.MESSAGES, conversation_id=handle)
        payload = await self._call("GET", route, "get_conversation", params={"limit": req.limit})
        page = payload.get("messages") if isinstance(payload, dict) else payload
        newest_first = self._messages(page, route, handle)
        return self._conversation(header, handle, newest_first[::-1])

    async def _list_conversations(self, req: rq.ListConversations) -> list[Conversation]:
        """Follows the cursor in pages of at most 200 until ``limit`` are collected, a page
        is empty or there is no next cursor."""
        found: list[wire.ConversationOut] = []
        cursor: str | None = None
        while len(found) < req.limit:
            params: dict[str, Any] = {"limit": min(wire.MAX_PAGE, req.limit - len(found))}
            if cursor:
                params["cursor"] = cursor
            if req.user_identifier is not None:
                params["userId"] = req.user_identifier
            payload = await self._call(
                "GET", wire.CONVERSATIONS, "list_conversations", params=params
            )
            page = _parse(wire.ConversationPage, payload, wire.CONVERSATIONS)
            found.extend(page.conversations)
            cursor = page.next_cursor
            if not page.conversations or not cursor:
                break
        return [self._conversation(c, c.id) for c in found[: req.limit]]

    async def _search_messages(self, req: rq.SearchMessages) -> list[Message]:
        """Sends only query and limit (≤ 200); keeps the service's ``score``."""
        return await self._search(req)

    async def _search(self, req: rq.SearchMessages) -> list[Message]:
        assert req.target is not None  # search_global is False: the contract requires one
        handle = req.target.handle
        route = wire.path(wire.SEARCH, conversation_id=handle)
        body = wire.SearchIn(query=req.query, limit=req.limit).to_wire()
        payload = await self._call("POST", route, "search_messages", json=body)
        result = _parse(wire.SearchOut, payload, route)
        return [self._from_wire(m, route, handle) for m in result.messages[: req.limit]]

    async def _get_context(self, req: rq.GetContext) -> str:
        """The context endpoint's reflections, observations and newest ``max_messages``
        recent messages, formatted by :func:`memory_core.summary.format_context`.

        The endpoint takes no query; with a ``query`` the relevant messages come from the
        search endpoint (a second request), as on the other backends."""
        handle = req.target.handle
        route = wire.path(wire.CONTEXT, conversation_id=handle)
        context = _parse(wire.ContextOut, await self._call("GET", route, "get_context"), route)
        recent = [
            self._from_wire(m, route, handle) for m in context.recent_messages[: req.max_messages]
        ][::-1]
        relevant: list[Message] = []
        if req.query:
            seen = {m.id for m in recent}
            search = rq.SearchMessages(
                query=req.query,
                target=req.target,
                limit=min(wire.MAX_PAGE, req.max_hits + len(seen)),
                threshold=None,
                metadata_filters={},
                query_embedding=None,
                scope=rq.UNSCOPED,
            )
            hits = await self._search(search)
            relevant = [m for m in hits if m.id not in seen][: req.max_hits]
        return format_context(
            recent,
            relevant,
            observations=[o.content for o in context.observations],
            reflections=[r.content for r in context.reflections],
        )

    async def _get_observations(self, target: rq.Target) -> list[dict[str, Any]]:
        """The service's observation dicts, as sent (camelCase)."""
        return await self._listing(wire.OBSERVATIONS, "observations", target, "get_observations")

    async def _get_reflections(self, target: rq.Target) -> list[dict[str, Any]]:
        """The service's reflection dicts, as sent (camelCase)."""
        return await self._listing(wire.REFLECTIONS, "reflections", target, "get_reflections")

    async def _listing(
        self, template: str, key: str, target: rq.Target, operation: str
    ) -> list[dict[str, Any]]:
        route = wire.path(template, conversation_id=target.handle)
        payload = await self._call("GET", route, operation)
        items = payload.get(key) if isinstance(payload, dict) else payload
        if items is None:
            return []
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise TransportError(f"nams: unexpected response from {route} ({key})")
        return items

    async def _get_extraction_status(self, target: rq.Target) -> ExtractionStatus:
        route = wire.path(wire.EXTRACTION_STATUS, conversation_id=target.handle)
        payload = await self._call("GET", route, "get_extraction_status")
        data = payload if isinstance(payload, dict) else {}
        messages = data.get("messages") or []
        summary = data.get("summary") or {}
        if not isinstance(messages, list) or not isinstance(summary, dict):
            raise TransportError(f"nams: unexpected response from {route}")
        try:
            counts = {str(k): int(v) for k, v in summary.items()}
        except (TypeError, ValueError):
            raise TransportError(f"nams: unexpected summary from {route}") from None
        return ExtractionStatus(
            messages=[m for m in messages if isinstance(m, dict)], summary=counts
        )

    # ------------------------------------------------------------------ deletes

    async def _clear_session(self, target: rq.Target) -> bool:
        """Deletes the whole conversation; a 404 means already gone (returns False)."""
        route = wire.path(wire.CONVERSATION, conversation_id=target.handle)
        try:
            await self._call("DELETE", route, "clear_session")
        except NotFoundError:
            return False
        return True

    # ------------------------------------------------------------------ entities

    def _entity(self, item: wire.EntityOut, name: str, kind: str) -> Entity:
        entity_id = item.merged_into if item.resolution == "merged" and item.merged_into else None
        return Entity(
            id=entity_id or item.id,
            name=item.name or name,
            type=wire.entity_type_from_wire(item.type) if item.type else kind,
            description=item.description,
            confidence=item.confidence,
            created_at=item.created_at or utcnow(),
            updated_at=item.updated_at,
        )

    async def _add_entity(self, req: rq.AddEntity) -> Entity:
        """Types travel lower case (``OBJECT``/``EVENT`` as ``custom``) and come back upper
        case. A ``resolution: "merged"`` answer returns the entity it merged into."""
        body = wire.EntityIn.model_validate(
            {
                "name": req.name,
                "type": wire.entity_type_to_wire(req.type),
                "description": req.description,
            }
        ).to_wire(omit_none=True)
        payload = await self._call("POST", wire.ENTITIES, "add_entity", json=body)
        item = _parse(wire.EntityOut, payload, wire.ENTITIES)
        return self._entity(item, req.name, req.type)

    async def _find_entities(self, req: rq.FindEntities) -> list[Entity]:
        body: dict[str, Any] = {"query": req.identifier, "limit": req.limit}
        if req.type is not None:
            body["type"] = wire.entity_type_to_wire(req.type)
        payload = await self._call("POST", wire.ENTITIES_SEARCH, "find_entities", json=body)
        result = _parse(wire.EntitySearchOut, payload, wire.ENTITIES_SEARCH)
        return [self._entity(e, e.name or "", "CUSTOM") for e in result.entities[: req.limit]]
