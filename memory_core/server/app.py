"""The NAMS-compatible ASGI app (FastAPI): the wire contract of :mod:`memory_core.nams_wire`
served over any backend opened by URL.

``create_app("memory://", api_keys=["key"])`` returns the app; run it with any ASGI
server, or with ``memory-core serve`` (:mod:`.cli`), which also supports dropped-connection
faults. The OpenAPI document is at ``/openapi.json``. There is no ``/docs`` page: Swagger UI
would load its assets from a CDN and be blank offline; point any OpenAPI viewer at
``/openapi.json`` instead.

Two routes need no key: ``/openapi.json`` (the contract: the same for every server of this
version, with no data, keys, backend or limits in it) and ``GET /health`` (``{"status":
"ok"}`` while the app serves; it does not touch the backing store, so it cannot be used to
load it). A path with a trailing slash that names a route without it is redirected
(``307``) with a relative ``Location`` built from the path alone: never from the ``Host``
header, which the client chooses.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Annotated, Any, Literal
from urllib.parse import quote, quote_from_bytes

from fastapi import APIRouter, Depends, FastAPI, Query, Request, Response, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match

from memory_core import (
    AuthenticationError,
    ConfigurationError,
    Limits,
    MemoryBackend,
    MemoryCoreError,
    NotFoundError,
    NotSupportedError,
    RateLimitedError,
    open_backend,
)
from memory_core.requests import Summarizer
from memory_core.settings import redact_url
from memory_core.telemetry import Telemetry
from memory_core.telemetry import resolve as resolve_telemetry

from .. import nams_wire as wire
from . import entities, reasoning
from .auth import ApiKeys, AuthMiddleware, resolve_workspace
from .errors import ApiError, CatchAllMiddleware, check_limit
from .faults import ASGIApp, FaultMiddleware, Faults, FaultSettings, Receive, Scope, Send
from .hosted import HostedMemory
from .limits import (
    BodyLimitMiddleware,
    ServerLimits,
    check_content,
    check_conversation_metadata,
    check_name,
    check_query,
)
from .logsafe import escape
from .traffic import AccessLogFormat, RequestLogMiddleware, Traffic

DEFAULT_BACKEND_URL = "memory://"
log = logging.getLogger("memory_core.server")

_bearer = HTTPBearer(auto_error=False, description="an API key of this server")
_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": wire.ErrorOut} for status in (400, 401, 403, 404, 413, 429, 503)
}


# ---------------------------------------------------------------------- dependencies


async def _workspace(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)] = None,
) -> str:
    """Authenticate the request and return its workspace (also noted for the log)."""
    keys: ApiKeys = request.app.state.keys
    workspace = resolve_workspace(
        keys, request.headers.get("authorization"), request.headers.get(wire.WORKSPACE_HEADER)
    )
    request.state.workspace = workspace
    return workspace


async def _hosted(request: Request) -> HostedMemory:
    hosted: HostedMemory | None = getattr(request.app.state, "hosted", None)
    if hosted is None:
        raise ApiError(503, wire.ErrorCode.UNAVAILABLE, "the backing store is not open")
    return hosted


async def _limits(request: Request) -> ServerLimits:
    limits: ServerLimits = request.app.state.limits
    return limits


Workspace = Annotated[str, Depends(_workspace)]
Hosted = Annotated[HostedMemory, Depends(_hosted)]
Limited = Annotated[ServerLimits, Depends(_limits)]
PageLimit = Annotated[int | None, Query(ge=1, le=wire.MAX_PAGE, description="1..200")]


# ---------------------------------------------------------------------- routes


def _api_router() -> APIRouter:
    """The hosted service's routes, in the order of its reference (and of the OpenAPI
    document)."""
    router = APIRouter(prefix=wire.API_PREFIX, responses=_ERRORS)
    for add in (
        _conversation_routes,
        _message_routes,
        _reading_routes,
        _entity_routes,
        _reasoning_routes,
    ):
        add(router)
    return router


def _conversation_routes(router: APIRouter) -> None:
    """Create, list, read and delete conversations."""

    @router.post(wire.CONVERSATIONS, status_code=201, tags=["conversations"])
    async def create_conversation(
        workspace: Workspace,
        hosted: Hosted,
        limits: Limited,
        body: wire.ConversationCreate | None = None,
    ) -> wire.ConversationOut:
        """Create a conversation; the server issues its id."""
        body = body or wire.ConversationCreate()
        check_name(limits, body.user_id, "userId")
        metadata = check_conversation_metadata(limits, body.metadata)
        return await hosted.create_conversation(workspace, body.user_id, metadata)

    @router.get(wire.CONVERSATIONS, tags=["conversations"])
    async def list_conversations(
        workspace: Workspace,
        hosted: Hosted,
        limit: PageLimit = None,
        cursor: str | None = None,
        user_id: Annotated[str | None, Query(alias="userId")] = None,
    ) -> wire.ConversationPage:
        """Conversations, most recently updated first; follow ``next_cursor``."""
        count = check_limit(limit, wire.DEFAULT_CONVERSATIONS_PAGE)
        return await hosted.list_conversations(workspace, user_id, count, cursor or None)

    @router.get(wire.CONVERSATION, tags=["conversations"])
    async def get_conversation(
        conversation_id: str, workspace: Workspace, hosted: Hosted
    ) -> wire.ConversationOut:
        """The conversation header (messages are at ``.../messages``)."""
        return await hosted.get_conversation(workspace, conversation_id)

    @router.delete(wire.CONVERSATION, status_code=204, tags=["conversations"])
    async def delete_conversation(
        conversation_id: str, workspace: Workspace, hosted: Hosted
    ) -> Response:
        """Delete the conversation and its messages."""
        await hosted.delete_conversation(workspace, conversation_id)
        return Response(status_code=204)


def _message_routes(router: APIRouter) -> None:
    """Read the newest messages; append one, or a bulk of up to 100."""

    @router.get(wire.MESSAGES, response_model_exclude_none=True, tags=["messages"])
    async def list_messages(
        conversation_id: str, workspace: Workspace, hosted: Hosted, limit: PageLimit = None
    ) -> wire.MessageList:
        """The newest messages, newest first (default 50, at most 200)."""
        count = check_limit(limit, wire.DEFAULT_MESSAGES_PAGE)
        items = await hosted.list_messages(workspace, conversation_id, count)
        return wire.MessageList.model_construct(messages=items)

    @router.post(
        wire.MESSAGES, status_code=201, response_model_exclude_none=True, tags=["messages"]
    )
    async def add_message(
        conversation_id: str,
        body: wire.MessageIn,
        workspace: Workspace,
        hosted: Hosted,
        limits: Limited,
    ) -> wire.MessageCreated:
        """Append a message (the response has no ``createdAt``)."""
        check_content(limits, body.content)
        return await hosted.add_message(workspace, conversation_id, body)

    @router.post(
        wire.MESSAGES_BULK, status_code=201, response_model_exclude_none=True, tags=["messages"]
    )
    async def add_messages(
        conversation_id: str,
        body: wire.BulkIn,
        workspace: Workspace,
        hosted: Hosted,
        limits: Limited,
    ) -> wire.MessageList:
        """Append 1..100 messages in order."""
        check_bulk(limits, body.messages)
        items = await hosted.add_messages(workspace, conversation_id, body.messages)
        return wire.MessageList.model_construct(messages=items)


def check_bulk(limits: ServerLimits, messages: list[wire.MessageIn]) -> None:
    """400 for a bulk of no message or over :data:`wire.MAX_BULK`, or for a message whose
    content is over the limit (named by its index)."""
    if not 1 <= len(messages) <= wire.MAX_BULK:
        raise ApiError(
            400,
            wire.ErrorCode.BULK_TOO_LARGE if messages else wire.ErrorCode.INVALID_REQUEST,
            f"a bulk write carries 1..{wire.MAX_BULK} messages, got {len(messages)}",
        )
    for i, message in enumerate(messages):
        check_content(limits, message.content, f"messages[{i}].content")


def _reading_routes(router: APIRouter) -> None:
    """Search a conversation, and read what the service derives from it."""

    @router.post(wire.SEARCH, response_model_exclude_none=True, tags=["messages"])
    async def search_messages(
        conversation_id: str,
        body: wire.SearchIn,
        workspace: Workspace,
        hosted: Hosted,
        limits: Limited,
    ) -> wire.SearchOut:
        """Messages of this conversation matching ``query``, best first, with a score."""
        count = check_limit(body.limit, wire.DEFAULT_SEARCH_LIMIT)
        check_query(limits, body.query)
        if not body.query.strip():
            raise ApiError(400, wire.ErrorCode.INVALID_REQUEST, "query must not be empty")
        return await hosted.search(workspace, conversation_id, body.query, count)

    @router.get(wire.CONTEXT, response_model_exclude_none=True, tags=["memory"])
    async def get_context(
        conversation_id: str, workspace: Workspace, hosted: Hosted
    ) -> wire.ContextOut:
        """Reflections, observations and recent messages (newest first)."""
        return await hosted.context(workspace, conversation_id)

    @router.get(wire.OBSERVATIONS, response_model_exclude_none=True, tags=["memory"])
    async def get_observations(
        conversation_id: str, workspace: Workspace, hosted: Hosted
    ) -> wire.ObservationList:
        """Observations (empty unless the server has a summarizer)."""
        return await hosted.observations(workspace, conversation_id)

    @router.get(wire.REFLECTIONS, response_model_exclude_none=True, tags=["memory"])
    async def get_reflections(
        conversation_id: str, workspace: Workspace, hosted: Hosted
    ) -> wire.ReflectionList:
        """Reflections (empty unless the server has a summarizer)."""
        return await hosted.reflections(workspace, conversation_id)

    @router.get(wire.EXTRACTION_STATUS, response_model_exclude_none=True, tags=["memory"])
    async def get_extraction_status(
        conversation_id: str, workspace: Workspace, hosted: Hosted
    ) -> wire.ExtractionStatusOut:
        """Per-message extraction state and a count per state."""
        return await hosted.extraction_status(workspace, conversation_id)


def _entity_routes(router: APIRouter) -> None:
    """Create (or merge into) an entity; search entities."""

    @router.post(wire.ENTITIES, status_code=201, tags=["entities"])
    async def add_entity(
        body: wire.EntityIn, workspace: Workspace, hosted: Hosted, limits: Limited
    ) -> wire.EntityOut:
        """Create an entity, or merge into the existing one with that name and type."""
        if not body.name.strip():
            raise ApiError(400, wire.ErrorCode.INVALID_REQUEST, "name must not be empty")
        check_name(limits, body.name, "name")
        if body.description is not None:
            check_content(limits, body.description, "description")
        return await hosted.add_entity(workspace, body)

    @router.post(wire.ENTITIES_SEARCH, response_model_exclude_none=True, tags=["entities"])
    async def search_entities(
        body: wire.EntitySearchIn, workspace: Workspace, hosted: Hosted, limits: Limited
    ) -> wire.EntitySearchOut:
        """Entities whose id or name (ignoring case) equals ``query``, then those with a
        word of it in their name or description (scored), where the store searches."""
        count = check_limit(body.limit, wire.DEFAULT_SEARCH_LIMIT)
        check_query(limits, body.query)
        if not body.query.strip():
            raise ApiError(400, wire.ErrorCode.INVALID_REQUEST, "query must not be empty")
        return await entities.search_entities(
            hosted.backend, hosted.tenant(workspace), body.query, body.type, count
        )

    _entity_graph_routes(router)
    _entity_update_routes(router)


def _entity_update_routes(router: APIRouter) -> None:
    """Update one entity; merge one into another."""

    conflict: dict[int | str, dict[str, Any]] = {409: {"model": wire.ErrorOut}}

    @router.put(
        wire.ENTITY, response_model_exclude_none=True, responses=conflict, tags=["entities"]
    )
    async def update_entity(
        entity_id: str,
        body: wire.EntityUpdateIn,
        workspace: Workspace,
        hosted: Hosted,
        limits: Limited,
    ) -> wire.EntityOut:
        """Change the name, description, aliases or attributes the body gives."""
        entities.check_update(limits, body)
        tenant = hosted.tenant(workspace)
        return await entities.update_entity(hosted.backend, tenant, entity_id, body)

    @router.post(wire.ENTITY_MERGE, response_model_exclude_none=True, tags=["entities"])
    async def merge_entity(
        entity_id: str, body: wire.EntityMergeIn, workspace: Workspace, hosted: Hosted
    ) -> wire.EntityOut:
        """Merge this entity (a duplicate) into ``targetId``; the target."""
        tenant = hosted.tenant(workspace)
        return await entities.merge_entity(hosted.backend, tenant, entity_id, body)


GraphDepth = Annotated[int, Query(ge=1, le=wire.MAX_GRAPH_DEPTH, description="1..3")]


def _entity_graph_routes(router: APIRouter) -> None:
    """The entity graph, and one entity read or deleted (``/entities/graph`` first: it
    would otherwise match ``/entities/{entity_id}``)."""

    @router.get(wire.ENTITIES_GRAPH, response_model_exclude_none=True, tags=["entities"])
    async def entity_graph(
        workspace: Workspace,
        hosted: Hosted,
        entity_id: Annotated[str | None, Query(alias="entityId")] = None,
        depth: GraphDepth = 1,
    ) -> wire.EntityGraphOut:
        """The entity ``entityId``, the entities within ``depth`` relationships of it and
        the relationships among them."""
        tenant = hosted.tenant(workspace)
        return await entities.graph(hosted.backend, tenant, entity_id, depth)

    @router.get(wire.ENTITY, response_model_exclude_none=True, tags=["entities"])
    async def get_entity(
        entity_id: str, workspace: Workspace, hosted: Hosted
    ) -> wire.EntityDetailOut:
        """The entity and its outgoing relationships, inline."""
        return await entities.get_entity(hosted.backend, hosted.tenant(workspace), entity_id)

    @router.delete(wire.ENTITY, status_code=204, tags=["entities"])
    async def delete_entity(entity_id: str, workspace: Workspace, hosted: Hosted) -> Response:
        """Delete the entity with its mentions and relationships."""
        await entities.delete_entity(hosted.backend, hosted.tenant(workspace), entity_id)
        return Response(status_code=204)


def _reasoning_routes(router: APIRouter) -> None:
    """Record a conversation's reasoning steps and their tool calls; read them back."""

    @router.post(
        wire.REASONING_STEPS, status_code=201, response_model_exclude_none=True, tags=["reasoning"]
    )
    async def record_step(
        body: wire.ReasoningStepIn, workspace: Workspace, hosted: Hosted, limits: Limited
    ) -> wire.ReasoningStepOut:
        """Append a step (``reasoning``, ``actionTaken``, ``result``) to a conversation."""
        reasoning.require_traces(hosted.backend)
        texts = reasoning.step_texts(limits, body)
        conversation = await hosted.conversation(workspace, body.conversation_id)
        return await reasoning.record_step(
            hosted.backend, hosted.traces, hosted.tenant(workspace), conversation, texts
        )

    @router.post(
        wire.REASONING_TOOL_CALLS,
        status_code=201,
        response_model_exclude_none=True,
        tags=["reasoning"],
    )
    async def record_tool_call(
        body: wire.ToolCallIn, workspace: Workspace, hosted: Hosted, limits: Limited
    ) -> wire.ToolCallOut:
        """Record a tool call on step ``stepId``."""
        reasoning.require_traces(hosted.backend)
        arguments = reasoning.check_tool_call(limits, body)
        tenant = hosted.tenant(workspace)
        return await reasoning.record_tool_call(hosted.backend, tenant, body, arguments)

    @router.get(wire.REASONING_TRACE, response_model_exclude_none=True, tags=["reasoning"])
    async def get_reasoning_trace(
        conversation_id: str, workspace: Workspace, hosted: Hosted
    ) -> wire.ReasoningTraceOut:
        """The conversation's steps by number and their tool calls."""
        reasoning.require_traces(hosted.backend)
        conversation = await hosted.conversation(workspace, conversation_id)
        return await reasoning.read_trace(hosted.backend, hosted.tenant(workspace), conversation)


class Health(BaseModel):
    """``GET /health``: the server is up and serving (the backing store is not asked)."""

    status: Literal["ok"] = "ok"


def _health_router() -> APIRouter:
    """``GET /health``, without a key (see the module docstring)."""
    router = APIRouter(tags=["server"])

    @router.get("/health")
    async def health() -> Health:
        """``{"status": "ok"}`` while the server serves; no key needed."""
        return Health()

    return router


class SlashRedirectMiddleware:
    """``307`` from ``/path/`` to ``/path`` when ``/path`` is a route. The ``Location`` is
    relative, made of the path and query the client sent: Starlette's own redirect builds
    an absolute URL from the ``Host`` header, so a request with a hostile ``Host`` was
    sent elsewhere (``redirect_slashes`` is off)."""

    def __init__(self, app: ASGIApp, routes: list[BaseRoute]) -> None:
        self.app = app
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        bare = path.rstrip("/")
        # "//host" would be a network-path reference, i.e. another server: never.
        if path.endswith("/") and bare.startswith("/") and not bare.startswith("//"):
            probe = {**scope, "path": bare}
            if any(route.matches(probe)[0] is not Match.NONE for route in self.routes):
                location = quote(scope.get("root_path", "") + bare, safe="/")
                query = scope.get("query_string", b"")
                if query:  # as sent (percent-encoded); any other byte encoded too
                    location += "?" + quote_from_bytes(query, safe="/?:@!$&'()*+,;=%-._~")
                await send(
                    {
                        "type": "http.response.start",
                        "status": 307,
                        "headers": [
                            (b"location", location.encode("ascii")),
                            (b"content-length", b"0"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)


def _admin_router() -> APIRouter:
    """Test-only routes to turn fault knobs and read the request record."""
    router = APIRouter(prefix="/_admin", tags=["test admin"], dependencies=[Depends(_workspace)])

    @router.get("/faults")
    async def get_faults(request: Request) -> dict[str, Any]:
        faults: Faults = request.app.state.faults
        return faults.snapshot()

    @router.post("/faults")
    async def set_faults(request: Request, body: FaultSettings) -> dict[str, Any]:
        faults: Faults = request.app.state.faults
        faults.set(**body.model_dump(exclude_none=True))
        return faults.snapshot()

    @router.delete("/faults", status_code=204)
    async def reset_faults(request: Request) -> Response:
        request.app.state.faults.reset()
        return Response(status_code=204)

    @router.get("/traffic")
    async def get_traffic(request: Request) -> list[dict[str, Any]]:
        traffic: Traffic = request.app.state.traffic
        return traffic.as_json()

    @router.delete("/traffic", status_code=204)
    async def clear_traffic(request: Request) -> Response:
        request.app.state.traffic.clear()
        return Response(status_code=204)

    @router.post("/relationships", response_model_exclude_none=True)
    async def seed_relationship(
        body: wire.RelationshipSeedIn, workspace: Workspace, hosted: Hosted
    ) -> wire.GraphEdge:
        """Write a relationship the wire has no route for (graph reads under test)."""
        return await entities.seed_relationship(hosted.backend, hosted.tenant(workspace), body)

    return router


# ---------------------------------------------------------------------- errors


def _error(status: int, code: str, message: str, details: Any = None, **headers: str) -> Response:
    return JSONResponse(
        wire.error_body(code, message, details), status_code=status, headers=headers
    )


async def _on_api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


async def _on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    code = wire.code_for_status(exc.status_code)
    message = exc.detail if isinstance(exc.detail, str) else "request failed"
    return _error(exc.status_code, code, message, **(exc.headers or {}))


async def _on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    problems = [
        {"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg", ""))}
        for e in exc.errors()
    ]
    if any(p["loc"] and p["loc"][-1] == "limit" for p in problems):
        return _error(400, wire.ErrorCode.INVALID_LIMIT, "limit must be 1..200", problems)
    return _error(400, wire.ErrorCode.INVALID_REQUEST, "invalid request", problems)


MAYBE_APPLIED = (
    "the backing store lost the connection while committing: the write may or may not be "
    "stored; read it back before sending it again"
)
STORE_RETRY_AFTER = "1"
"""``Retry-After`` of a 503 for a retryable backing-store error (nothing was written)."""


async def _on_core_error(request: Request, exc: Exception) -> Response:
    """Errors of the backing store, translated; nothing of the request is echoed."""
    assert isinstance(exc, MemoryCoreError)
    kind = wire.answer_for(exc)
    if kind.error is NotFoundError:
        return _error(kind.status, kind.code, "not found")
    if isinstance(exc, NotSupportedError):
        return _error(kind.status, kind.code, exc.message)
    if kind.served:
        return _error(kind.status, kind.code, str(exc))
    if isinstance(exc, RateLimitedError | AuthenticationError):
        log.error("backing store refused: %s", type(exc).__name__)
    else:
        log.error("backing store failed: %s", escape(str(exc)))
    if exc.maybe_applied:
        # Not 503: clients resend a 503 whatever the method, and this write may be stored.
        return _error(500, wire.ErrorCode.INTERNAL, MAYBE_APPLIED)
    if exc.retryable:
        # A failover or a restart of the store: the pool is already reconnecting.
        headers = {wire.RETRY_AFTER: STORE_RETRY_AFTER}
        return _error(kind.status, kind.code, "the backing store is unavailable", **headers)
    return _error(kind.status, kind.code, "the backing store is unavailable")


# ---------------------------------------------------------------------- factory


def open_store(backend_url: str, options: Mapping[str, Any] | None = None) -> MemoryBackend:
    """The backing store (not yet connected), opened multi-tenant so workspaces stay
    apart; a backend that cannot be multi-tenant is a :class:`ConfigurationError`."""
    try:
        return open_backend(backend_url, multi_tenant=True, **dict(options or {}))
    except NotSupportedError as exc:
        raise ConfigurationError(
            f"{redact_url(backend_url)} cannot keep workspaces apart ({exc.message}); "
            "the NAMS server needs a backend with multi_tenant support"
        ) from None


def create_app(
    backend_url: str = DEFAULT_BACKEND_URL,
    *,
    api_keys: ApiKeys | Iterable[str] | None = None,
    backend_options: Mapping[str, Any] | None = None,
    summarizer: Summarizer | None = None,
    observation_window: int = 10,
    extraction_delay: float = 0.0,
    faults: Faults | None = None,
    traffic: Traffic | None = None,
    admin: bool = False,
    limits: ServerLimits | None = None,
    telemetry: Telemetry | bool | None = None,
    access_log: AccessLogFormat = "text",
) -> FastAPI:
    """The NAMS-compatible app over the backend ``backend_url`` names.

    ``api_keys``: :class:`ApiKeys`, or ``KEY`` / ``KEY=WORKSPACE`` strings; ``None`` reads
    ``NAMS_SERVER_API_KEYS``; an empty list serves without keys. The backing store is
    opened (``multi_tenant=True`` plus ``backend_options``) when the app starts and closed
    when it stops. ``summarizer`` (``list[Message] -> str``) enables observations (one per
    ``observation_window`` messages) and reflections. ``extraction_delay`` (test mode)
    keeps each message's extraction pending for that many seconds. ``admin`` adds the test-only
    ``/_admin`` routes; ``faults`` and ``traffic`` are also on ``app.state``. The request
    record (:class:`~.traffic.Traffic`: the last 10,000 requests with their paths, read by
    ``/_admin/traffic``) is kept only with ``admin`` or a ``traffic`` given; otherwise
    ``app.state.traffic`` is None and nothing is recorded.
    ``limits`` (default: :meth:`ServerLimits.from_env`) bounds request bodies and fields;
    the backing store is opened with matching library limits.
    ``telemetry`` (see :mod:`memory_core.telemetry`; default: the global OpenTelemetry
    providers when ``opentelemetry-api`` is installed) adds a server span per request,
    continuing the client's ``traceparent``, and is passed on to the backing store.
    ``access_log="json"`` writes each access line as one JSON object to the logger
    ``memory_core.server.access`` (see :class:`~.traffic.RequestLogMiddleware`).
    """
    keys = _keys(api_keys)
    _check_options(observation_window, extraction_delay, access_log)
    limits = limits or ServerLimits.from_env()
    tracing = resolve_telemetry(telemetry)
    options = _store_options(limits, tracing, backend_options)
    hosted = partial(
        HostedMemory,
        summarizer=summarizer,
        observation_window=observation_window,
        extraction_delay=float(extraction_delay),
    )
    app = FastAPI(
        title="memory-core NAMS-compatible API",
        description="The Neo4j Agent Memory Service wire contract over any memory-core backend.",
        version="1",
        lifespan=_lifespan(backend_url, options, hosted),
        openapi_url="/openapi.json",
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,
    )
    app.state.keys = keys
    app.state.limits = limits
    app.state.faults = faults or Faults()
    app.state.traffic = traffic if traffic is not None else Traffic() if admin else None
    app.state.hosted = None
    app.state.startup_error = None
    app.include_router(_api_router())
    app.include_router(_health_router())
    if admin:
        app.include_router(_admin_router())
    _add_handlers(app)
    _add_middleware(app, keys, limits, access_log, tracing)
    return app


def _keys(api_keys: ApiKeys | Iterable[str] | None) -> ApiKeys:
    if isinstance(api_keys, ApiKeys):
        return api_keys
    return ApiKeys.from_env() if api_keys is None else ApiKeys.parse(api_keys)


def _check_options(observation_window: int, extraction_delay: float, access_log: str) -> None:
    if isinstance(observation_window, bool) or not isinstance(observation_window, int):
        raise ConfigurationError("observation_window must be an int >= 1")
    if observation_window < 1:
        raise ConfigurationError("observation_window must be an int >= 1")
    if (
        isinstance(extraction_delay, bool)
        or not isinstance(extraction_delay, int | float)
        or not extraction_delay >= 0
    ):
        raise ConfigurationError("extraction_delay must be a number of seconds >= 0")
    if access_log not in ("text", "json"):
        raise ConfigurationError("access_log must be 'text' or 'json'")


def _store_options(
    limits: ServerLimits, tracing: Telemetry | None, given: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The backing store's options: the library limits matching the server's (its routes
    check every field against those, then write through ``MemoryBackend.checked``), its
    telemetry, then ``given``. Given limits below the server's would let the routes pass
    what the store must refuse: a :class:`ConfigurationError`."""
    options: dict[str, Any] = {"limits": limits.library(), "telemetry": tracing or False}
    options.update(given or {})
    store_limits = options["limits"]
    if (
        isinstance(store_limits, Limits)
        and store_limits.max_content_chars < limits.max_content_chars
    ):
        raise ConfigurationError(
            f"backend_options limits max_content_chars={store_limits.max_content_chars} is "
            f"below the server's {limits.max_content_chars}: lower the server's limit"
        )
    return options


def _lifespan(
    backend_url: str, options: dict[str, Any], hosted: Callable[[MemoryBackend], HostedMemory]
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Open the backing store when the app starts, close it when the app stops."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            backend = open_store(backend_url, options)
            await backend.connect()
        except MemoryCoreError as exc:
            app.state.startup_error = exc
            raise
        app.state.hosted = hosted(backend)
        log.info("NAMS API over %s", backend.describe())
        try:
            yield
        finally:
            app.state.hosted = None
            await backend.close()

    return lifespan


def _add_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _on_api_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(MemoryCoreError, _on_core_error)


def _add_middleware(
    app: FastAPI,
    keys: ApiKeys,
    limits: ServerLimits,
    access_log: AccessLogFormat,
    tracing: Telemetry | None,
) -> None:
    # The last added runs first: log, faults, then the key (401 before anything else is
    # looked at), then the body size, then the handlers (and the trailing-slash redirect).
    app.add_middleware(SlashRedirectMiddleware, routes=app.router.routes)
    app.add_middleware(CatchAllMiddleware)
    app.add_middleware(BodyLimitMiddleware, limit=limits.max_body_bytes)
    app.add_middleware(AuthMiddleware, keys=keys)
    app.add_middleware(FaultMiddleware, faults=app.state.faults, body_limit=limits.max_body_bytes)
    app.add_middleware(
        RequestLogMiddleware, traffic=app.state.traffic, json_lines=access_log == "json"
    )
    if tracing is not None:
        from .tracing import TracingMiddleware

        app.add_middleware(TracingMiddleware, telemetry=tracing)
