"""The NAMS wire contract: routes, limits, error envelope and the camelCase JSON shapes.

This is the one module both sides of the wire import: the client adapter
(:mod:`memory_core.backends.nams.store`) builds requests and parses responses with it, and the
NAMS-compatible server (:mod:`memory_core.server`) declares its routes and response
models with it. Changing a shape here changes both sides at once.

Conventions of the hosted service reproduced here:

* every route lives under ``/v1``; bodies are camelCase JSON; ids are server-issued;
* message lists are newest first, ``limit`` 1..200 (default 50); anything else is
  ``400 invalid_limit``;
* ``GET /conversations`` pages with ``cursor`` and answers ``next_cursor`` (snake case,
  the one exception to camelCase — clients also accept ``nextCursor``);
* the ``POST .../messages`` response has no ``createdAt``;
* a bulk write carries at most 100 messages;
* errors are ``{"error": {"code": "...", "message": "...", "details": ...}}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, NotRequired
from urllib.parse import quote

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, TypeAdapter, with_config
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo
from typing_extensions import TypedDict

from memory_core.errors import (
    AuthenticationError,
    ConflictError,
    InvalidRequestError,
    MemoryCoreError,
    NotFoundError,
    NotSupportedError,
    RateLimitedError,
    TransportError,
)
from memory_core.models import ToolCallStatus

API_PREFIX = "/v1"

# Routes, relative to the base URL (which ends in ``/v1``). Placeholders are path ids.
CONVERSATIONS = "/conversations"
CONVERSATION = "/conversations/{conversation_id}"
MESSAGES = "/conversations/{conversation_id}/messages"
MESSAGES_BULK = "/conversations/{conversation_id}/messages/bulk"
SEARCH = "/conversations/{conversation_id}/search"
CONTEXT = "/conversations/{conversation_id}/context"
OBSERVATIONS = "/conversations/{conversation_id}/observations"
REFLECTIONS = "/conversations/{conversation_id}/reflections"
EXTRACTION_STATUS = "/conversations/{conversation_id}/extraction-status"
ENTITIES = "/entities"
ENTITIES_SEARCH = "/entities/search"
ENTITIES_GRAPH = "/entities/graph"
ENTITY = "/entities/{entity_id}"
ENTITY_MERGE = "/entities/{entity_id}/merge"
REASONING_STEPS = "/reasoning/steps"
REASONING_TOOL_CALLS = "/reasoning/tool-calls"
REASONING_TRACE = "/reasoning/trace/{conversation_id}"

# Limits and defaults.
MAX_PAGE = 200
"""Most messages one ``GET .../messages`` returns; most conversations per list page."""
DEFAULT_MESSAGES_PAGE = 50
DEFAULT_CONVERSATIONS_PAGE = 50
MAX_BULK = 100
DEFAULT_SEARCH_LIMIT = 10
MAX_GRAPH_DEPTH = 3
"""The deepest ``GET /entities/graph?entityId=…&depth=…`` reaches."""
CONTEXT_RECENT_MESSAGES = 50
"""How many recent messages ``GET .../context`` returns (newest first)."""

# Headers.
AUTHORIZATION = "Authorization"
WORKSPACE_HEADER = "X-Workspace-Id"
RETRY_AFTER = "Retry-After"

NEXT_CURSOR = "next_cursor"
NEXT_CURSOR_ALIASES = ("next_cursor", "nextCursor")

Role = Literal["user", "assistant", "system", "tool"]
ROLES: tuple[str, ...] = ("user", "assistant", "system", "tool")

WireEntityType = Literal["person", "organization", "location", "concept", "tool", "custom"]
ENTITY_TYPES: tuple[str, ...] = ("person", "organization", "location", "concept", "tool", "custom")
# POLE+O types callers use (upper case) → the lower-case set the service accepts.
ENTITY_TYPE_TO_WIRE: dict[str, str] = {
    "PERSON": "person",
    "ORGANIZATION": "organization",
    "LOCATION": "location",
    "CONCEPT": "concept",
    "TOOL": "tool",
    "CUSTOM": "custom",
    "OBJECT": "custom",
    "EVENT": "custom",
}

SearchType = Literal["text", "vector"]

TOOL_CALL_STATUSES: tuple[str, ...] = tuple(status.value for status in ToolCallStatus)
"""The ``status`` values of a tool call (memory-core's server refuses others with 400)."""
DEFAULT_TOOL_CALL_STATUS = ToolCallStatus.SUCCESS.value

# Extraction states reported per message.
EXTRACTION_COMPLETED = "completed"
EXTRACTION_PENDING = "pending"


class ErrorCode(StrEnum):
    """The ``error.code`` values of the error envelope."""

    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    INVALID_REQUEST = "invalid_request"
    INVALID_LIMIT = "invalid_limit"
    INVALID_CURSOR = "invalid_cursor"
    BULK_TOO_LARGE = "bulk_too_large"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    REQUEST_TIMEOUT = "request_timeout"
    RATE_LIMITED = "rate_limited"
    UNAVAILABLE = "service_unavailable"
    NOT_SUPPORTED = "not_supported"
    CONFLICT = "conflict"
    INTERNAL = "internal_error"


@dataclass(frozen=True)
class ErrorKind:
    """One row of the error table: an HTTP status, the envelope's ``code`` and the
    memory-core error the client raises for it. ``served`` rows are also how the server
    answers a backing-store error of that class (others become 503: a store that refuses
    the server's own credentials is the server's problem, not the caller's)."""

    status: int
    code: ErrorCode
    error: type[MemoryCoreError]
    served: bool = False


ERRORS: tuple[ErrorKind, ...] = (
    ErrorKind(404, ErrorCode.NOT_FOUND, NotFoundError, served=True),
    # Before the 400 row: a ConflictError is also an InvalidRequestError.
    ErrorKind(409, ErrorCode.CONFLICT, ConflictError, served=True),
    ErrorKind(400, ErrorCode.INVALID_REQUEST, InvalidRequestError, served=True),
    ErrorKind(501, ErrorCode.NOT_SUPPORTED, NotSupportedError, served=True),
    ErrorKind(400, ErrorCode.INVALID_LIMIT, InvalidRequestError),
    ErrorKind(400, ErrorCode.INVALID_CURSOR, InvalidRequestError),
    ErrorKind(400, ErrorCode.BULK_TOO_LARGE, InvalidRequestError),
    ErrorKind(401, ErrorCode.UNAUTHORIZED, AuthenticationError),
    ErrorKind(403, ErrorCode.FORBIDDEN, AuthenticationError),
    ErrorKind(405, ErrorCode.METHOD_NOT_ALLOWED, NotSupportedError),
    ErrorKind(408, ErrorCode.REQUEST_TIMEOUT, TransportError),
    ErrorKind(413, ErrorCode.PAYLOAD_TOO_LARGE, InvalidRequestError),
    ErrorKind(422, ErrorCode.INVALID_REQUEST, InvalidRequestError),
    ErrorKind(429, ErrorCode.RATE_LIMITED, RateLimitedError),
    ErrorKind(503, ErrorCode.UNAVAILABLE, TransportError),
    ErrorKind(500, ErrorCode.INTERNAL, TransportError),
)
"""The one table from HTTP status to error code to memory-core error, read by the client
transport (status → error) and by the server (backing-store error → status and code)."""

UNAVAILABLE = ErrorKind(503, ErrorCode.UNAVAILABLE, TransportError)


def error_for_status(status: int) -> type[MemoryCoreError]:
    """The memory-core error the client raises for an HTTP error ``status``."""
    for kind in ERRORS:
        if kind.status == status:
            return kind.error
    return TransportError


def code_for_status(status: int) -> ErrorCode:
    """The envelope ``code`` the server sends with an HTTP error ``status`` it raises."""
    for kind in ERRORS:
        if kind.status == status:
            return kind.code
    return ErrorCode.INVALID_REQUEST


def answer_for(error: MemoryCoreError) -> ErrorKind:
    """How the server answers a backing-store ``error``: its ``served`` row, else 503."""
    for kind in ERRORS:
        if kind.served and isinstance(error, kind.error):
            return kind
    return UNAVAILABLE


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    """The error envelope: ``{"error": {"code", "message"[, "details"]}}``."""
    error: dict[str, Any] = {"code": str(code), "message": message}
    if details is not None:
        error["details"] = details
    return {"error": error}


def too_large(limit: int) -> str:
    """The message of a ``413 payload_too_large``: it names the limit in bytes."""
    return f"the request body is larger than {limit} bytes"


def parse_error(body: Any) -> tuple[str | None, str | None, Any]:
    """``(code, message, details)`` from an error body, tolerating other shapes.

    Accepts the envelope above, ``{"error": "text"}``, FastAPI's ``{"detail": ...}`` and
    anything else (all ``None``).
    """
    if not isinstance(body, dict):
        return None, None, None
    error = body.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        message = error.get("message")
        return (
            code if isinstance(code, str) else None,
            message if isinstance(message, str) else None,
            error.get("details"),
        )
    if isinstance(error, str):
        return None, error, None
    detail = body.get("detail")
    if isinstance(detail, str):
        return None, detail, None
    return None, None, detail


def segment(value: str) -> str:
    """One path segment, percent-encoded (``/``, ``?``, ``#``, ``%`` and dots included).

    A segment of only dots would be removed by URL normalisation, so dots are encoded
    there too: an id can never escape its route.
    """
    encoded = quote(value, safe="")
    if encoded and set(encoded) == {"."}:
        return "%2E" * len(encoded)
    return encoded


def path(template: str, **ids: str) -> str:
    """A route with its ``{placeholders}`` replaced by percent-encoded ids."""
    return template.format(**{name: segment(value) for name, value in ids.items()})


def entity_type_to_wire(kind: str) -> str:
    """A POLE+O type (any case) → the service's lower-case type (``OBJECT``/``EVENT`` →
    ``custom``)."""
    return ENTITY_TYPE_TO_WIRE.get(kind.upper(), "custom")


def entity_type_from_wire(kind: str) -> str:
    """A service type → the upper-case name callers use (unknown types → ``CUSTOM``)."""
    lowered = kind.lower()
    return lowered.upper() if lowered in ENTITY_TYPES else "CUSTOM"


# --------------------------------------------------------------------------- models


class WireModel(BaseModel):
    """camelCase on the wire, snake_case in Python; unknown fields are ignored."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def to_wire(self, *, omit_none: bool = False) -> dict[str, Any]:
        """The JSON-ready camelCase dict."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=omit_none)

    def to_json(self, *, omit_none: bool = False) -> bytes:
        """The camelCase JSON body, serialized in one step (same content as
        :meth:`to_wire`, without the intermediate dict)."""
        return self.__pydantic_serializer__.to_json(self, by_alias=True, exclude_none=omit_none)


class ConversationCreate(WireModel):
    """``POST /conversations`` body."""

    user_id: str | None = None
    metadata: dict[str, Any] | None = None


class ConversationOut(WireModel):
    """A conversation header (never its messages)."""

    id: str
    user_id: str | None = None
    workspace_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None
    updated_at: datetime | None = None


class ConversationPage(WireModel):
    """``GET /conversations``: one page, most recently updated first."""

    conversations: list[ConversationOut] = Field(default_factory=list)
    next_cursor: str | None = Field(
        default=None,
        serialization_alias=NEXT_CURSOR,
        validation_alias=AliasChoices(*NEXT_CURSOR_ALIASES),
    )


class MessageIn(WireModel):
    """One message to store: only role and content travel."""

    role: Role
    content: str


class MessageCreated(WireModel):
    """The ``POST .../messages`` response: note there is no ``createdAt``."""

    id: str
    conversation_id: str
    role: str
    content: str
    token_count: int | None = None


class MessageOut(WireModel):
    """A stored message as lists, bulk writes, search and context return it."""

    id: str
    conversation_id: str | None = None
    role: str
    content: str
    created_at: datetime | None = None
    token_count: int | None = None
    score: float | None = None


class MessageList(WireModel):
    """``GET .../messages`` (newest first) and the bulk write response (in order). A bare
    JSON list of messages is read as the same thing (see :func:`bare_messages`)."""

    messages: list[MessageOut] = Field(default_factory=list)


def fields_of(model: type[BaseModel], *, only: tuple[str, ...] = (), **types: Any) -> Any:
    """``model``'s fields as a TypedDict keyed by field name, read from the same keys
    (its aliases, then the field name) with the same types; unknown keys are ignored.
    Validating into it checks what validating ``model`` checks, but builds a plain dict
    per item instead of a model instance (cheaper, and nothing for the garbage collector
    to track). An absent optional field is an absent key, not its default. ``types``
    replaces a field's type (e.g. a list of another such TypedDict); ``only`` keeps just
    those fields (the others are then read as unknown keys: not checked at all)."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if only and name not in only:
            continue
        read = Field(validation_alias=_keys(name, info))
        typed: Any = Annotated[types.get(name, info.annotation), read]
        fields[name] = typed if info.is_required() else NotRequired[typed]
    plain = TypedDict(f"{model.__name__}Fields", fields)  # type: ignore[misc]
    return with_config(ConfigDict(extra="ignore"))(plain)


def _keys(name: str, info: FieldInfo) -> AliasChoices:
    """The keys a WireModel field is read from, in the order the model tries them."""
    alias = info.validation_alias or info.alias or name
    keys = list(alias.choices) if isinstance(alias, AliasChoices) else [alias]
    return AliasChoices(*keys, *([] if name in keys else [name]))


MESSAGE_LIST_FIELDS: TypeAdapter[Any] = TypeAdapter(
    fields_of(MessageList, messages=list[fields_of(MessageOut)])  # type: ignore[misc]
)
"""A :class:`MessageList` body read into plain dicts (see :func:`fields_of`)."""

CONVERSATION_PAGE_FIELDS: TypeAdapter[Any] = TypeAdapter(
    fields_of(ConversationPage, conversations=list[fields_of(ConversationOut)])  # type: ignore[misc]
)
"""A :class:`ConversationPage` body read into plain dicts (see :func:`fields_of`)."""


def bare_messages(payload: Any) -> Any:
    """A decoded :class:`MessageList` answer, a bare list of messages wrapped as one.

    Not a "before" validator on the model: one would make pydantic build Python objects
    from the JSON before validating, where the client validates the bytes directly.
    """
    return {"messages": payload} if isinstance(payload, list) else payload


MESSAGE_IN_FIELDS: TypeAdapter[Any] = TypeAdapter(fields_of(MessageIn))
"""A :class:`MessageIn` body as a plain dict: dumped to the model's JSON in one step,
with no validation pass (the client's contract checked role and content already)."""

CREATED_IDS_FIELDS: TypeAdapter[Any] = TypeAdapter(
    fields_of(MessageCreated, only=("id", "conversation_id"))
)
"""The ids of a :class:`MessageCreated` answer: what the client reads of it (the content
it echoes is the client's own, already checked: it is not read again)."""


class BulkIn(WireModel):
    """``POST .../messages/bulk`` body (at most :data:`MAX_BULK` messages)."""

    messages: list[MessageIn]


BULK_IN_FIELDS: TypeAdapter[Any] = TypeAdapter(
    fields_of(BulkIn, messages=list[fields_of(MessageIn)])  # type: ignore[misc]
)
"""A :class:`BulkIn` body as plain dicts: validated as the model is, and dumped to the
same JSON (its field names are the wire's), without a model per message."""


class SearchIn(WireModel):
    """``POST .../search`` body."""

    query: str
    limit: int | None = None


class SearchOut(WireModel):
    """Search hits, best first, each with a ``score``."""

    messages: list[MessageOut] = Field(default_factory=list)
    search_type: SearchType = "text"


class ObservationOut(WireModel):
    """A server-side observation over a window of messages (fields the service adds are
    kept, so callers see them)."""

    model_config = ConfigDict(extra="allow")

    id: str
    conversation_id: str | None = None
    content: str
    window_start: datetime | None = None
    window_end: datetime | None = None
    created_at: datetime | None = None


class ReflectionOut(WireModel):
    """A server-side reflection over a conversation (unknown fields are kept)."""

    model_config = ConfigDict(extra="allow")

    id: str
    conversation_id: str | None = None
    content: str
    created_at: datetime | None = None


class ObservationList(WireModel):
    observations: list[ObservationOut] = Field(default_factory=list)


class ReflectionList(WireModel):
    reflections: list[ReflectionOut] = Field(default_factory=list)


class ContextOut(WireModel):
    """``GET .../context``: reflections, observations and recent messages (newest first)."""

    reflections: list[ReflectionOut] = Field(default_factory=list)
    observations: list[ObservationOut] = Field(default_factory=list)
    recent_messages: list[MessageOut] = Field(default_factory=list)


class ExtractionItem(WireModel):
    """Extraction progress of one message (unknown fields are kept)."""

    model_config = ConfigDict(extra="allow")

    id: str
    conversation_id: str | None = None
    role: str | None = None
    created_at: datetime | None = None
    status: str


class ExtractionStatusOut(WireModel):
    """``GET .../extraction-status``: per-message states and a count per state."""

    messages: list[ExtractionItem] = Field(default_factory=list)
    summary: dict[str, int] = Field(default_factory=dict)


class EntityIn(WireModel):
    """``POST /entities`` body."""

    name: str
    type: WireEntityType
    description: str | None = None


class GraphNode(WireModel):
    """An entity of ``GET /entities/graph``; the fields every entity answer starts with."""

    id: str
    name: str | None = None
    type: str | None = None
    description: str | None = None
    confidence: float | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


class EntityOut(GraphNode):
    """An entity; ``resolution="merged"`` when the name folded into an existing one."""

    resolution: str | None = None
    merged_into: str | None = None
    score: float | None = None
    """Set by ``POST /entities/search`` where the service scores hits."""
    aliases: list[str] | None = None
    """Other names it is found by (memory-core's server sends them; absent: none)."""
    attributes: dict[str, Any] | None = None
    """The caller's own JSON object (memory-core's server sends it; absent: empty)."""


class EntityUpdateIn(WireModel):
    """``PUT /entities/{id}`` body: each field given (not ``null``) replaces the stored
    one; ``aliases`` replaces the whole list and ``attributes`` the whole object. The
    entity's type cannot change."""

    name: str | None = None
    description: str | None = None
    aliases: list[str] | None = None
    attributes: dict[str, Any] | None = None


class EntityMergeIn(WireModel):
    """``POST /entities/{id}/merge`` body: the entity in the path (the duplicate) merges
    into ``targetId``, which is answered; the one in the path is gone after."""

    target_id: str


class RelationshipRef(WireModel):
    """One relationship inlined in ``GET /entities/{id}``: from that entity to
    ``targetId`` (the reference library reads ``relType``, ``targetId``, ``targetName``
    and ``targetType``; the other fields are optional)."""

    rel_type: str
    target_id: str
    target_name: str | None = None
    target_type: str | None = None
    id: str | None = None
    confidence: float | None = None
    properties: dict[str, Any] | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    created_at: datetime | None = None


class EntityDetailOut(EntityOut):
    """``GET /entities/{id}``: the entity and its outgoing relationships."""

    relationships: list[RelationshipRef] = Field(default_factory=list)


class GraphEdge(WireModel):
    """A relationship of ``GET /entities/graph``: ``source`` ``type`` ``target``."""

    id: str
    source: str
    target: str
    type: str
    properties: dict[str, Any] | None = None
    confidence: float | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    created_at: datetime | None = None


class EntityGraphOut(WireModel):
    """``GET /entities/graph``: entities and the relationships between them. With
    ``entityId`` (and ``depth``, 1..3) a server may answer just the entities within
    ``depth`` relationships of it and the relationships among them; a client reads
    whatever it gets and keeps what it asked for."""

    nodes: list[GraphNode] = Field(default_factory=list)
    edges: list[GraphEdge] = Field(default_factory=list)


class RelationshipSeedIn(WireModel):
    """``POST /_admin/relationships`` (test servers only, never the hosted service):
    write a relationship the wire cannot write, so graph reads can be tested."""

    source_id: str
    target_id: str
    type: str
    properties: dict[str, Any] | None = None
    confidence: float = 1.0


class EntitySearchIn(WireModel):
    """``POST /entities/search`` body."""

    query: str
    type: WireEntityType | None = None
    limit: int | None = None


class EntitySearchOut(WireModel):
    entities: list[EntityOut] = Field(default_factory=list)
    search_type: SearchType = "text"


class ReasoningStepIn(WireModel):
    """``POST /reasoning/steps`` body: a step of the conversation's reasoning. The
    reference client sends ``" "`` for a text it does not have."""

    conversation_id: str
    reasoning: str | None = None
    action_taken: str | None = None
    result: str | None = None


class ReasoningStepOut(WireModel):
    """A recorded step: ``reasoning`` (thought), ``actionTaken`` and ``result``
    (observation), numbered from 1 in the conversation."""

    id: str
    conversation_id: str | None = None
    step_number: int | None = None
    reasoning: str | None = None
    action_taken: str | None = None
    result: str | None = None
    created_at: datetime | None = None


class ToolCallIn(WireModel):
    """``POST /reasoning/tool-calls`` body. ``input`` is the arguments as a JSON-encoded
    string (a JSON object is taken too); ``output`` the result (the reference client
    sends a JSON-encoded string)."""

    tool_name: str
    input: str | dict[str, Any] | None = None
    step_id: str | None = None
    status: str | None = None
    output: Any = None
    duration_ms: int | None = None
    error: str | None = None


class ToolCallOut(WireModel):
    """A recorded tool call of step ``stepId``."""

    id: str
    step_id: str | None = None
    tool_name: str
    input: str | dict[str, Any] | None = None
    output: Any = None
    status: str | None = None
    duration_ms: int | None = None
    error: str | None = None
    created_at: datetime | None = None


class ReasoningTraceOut(WireModel):
    """``GET /reasoning/trace/{conversationId}``: the conversation's steps (by number)
    and the tool calls of those steps (in step order, oldest first within a step)."""

    conversation_id: str | None = None
    steps: list[ReasoningStepOut] = Field(default_factory=list)
    tool_calls: list[ToolCallOut] = Field(default_factory=list)


class ErrorDetail(WireModel):
    code: str
    message: str
    details: Any = None


class ErrorOut(WireModel):
    """The error envelope, for the OpenAPI document."""

    error: ErrorDetail


__all__ = [
    "API_PREFIX",
    "BULK_IN_FIELDS",
    "CONTEXT",
    "CONTEXT_RECENT_MESSAGES",
    "CONVERSATION",
    "CONVERSATIONS",
    "CONVERSATION_PAGE_FIELDS",
    "CREATED_IDS_FIELDS",
    "DEFAULT_CONVERSATIONS_PAGE",
    "DEFAULT_MESSAGES_PAGE",
    "DEFAULT_SEARCH_LIMIT",
    "DEFAULT_TOOL_CALL_STATUS",
    "ENTITIES",
    "ENTITIES_GRAPH",
    "ENTITIES_SEARCH",
    "ENTITY",
    "ENTITY_MERGE",
    "ENTITY_TYPES",
    "EXTRACTION_PENDING",
    "EXTRACTION_STATUS",
    "MAX_BULK",
    "MAX_GRAPH_DEPTH",
    "MAX_PAGE",
    "MESSAGES",
    "MESSAGES_BULK",
    "MESSAGE_IN_FIELDS",
    "MESSAGE_LIST_FIELDS",
    "OBSERVATIONS",
    "REASONING_STEPS",
    "REASONING_TOOL_CALLS",
    "REASONING_TRACE",
    "REFLECTIONS",
    "ROLES",
    "SEARCH",
    "TOOL_CALL_STATUSES",
    "WORKSPACE_HEADER",
    "BulkIn",
    "ContextOut",
    "ConversationCreate",
    "ConversationOut",
    "ConversationPage",
    "EntityDetailOut",
    "EntityGraphOut",
    "EntityIn",
    "EntityMergeIn",
    "EntityOut",
    "EntitySearchIn",
    "EntitySearchOut",
    "EntityUpdateIn",
    "ErrorCode",
    "ErrorOut",
    "ExtractionItem",
    "ExtractionStatusOut",
    "GraphEdge",
    "GraphNode",
    "MessageCreated",
    "MessageIn",
    "MessageList",
    "MessageOut",
    "ObservationList",
    "ObservationOut",
    "ReasoningStepIn",
    "ReasoningStepOut",
    "ReasoningTraceOut",
    "ReflectionList",
    "ReflectionOut",
    "RelationshipRef",
    "RelationshipSeedIn",
    "SearchIn",
    "SearchOut",
    "ToolCallIn",
    "ToolCallOut",
    "bare_messages",
    "entity_type_from_wire",
    "entity_type_to_wire",
    "error_body",
    "fields_of",
    "parse_error",
    "path",
    "segment",
    "too_large",
]
