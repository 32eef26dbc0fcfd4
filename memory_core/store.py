"""The store authors' face of memory-core: everything a store may use, in one place.

A *store* is what a backend author writes: one :class:`Store` subclass holding the
storage logic, behind the public API (:class:`memory_core.MemoryBackend`, what
applications hold, which checks every argument before a store sees it). A store imports
from memory-core only this module, its own folder and its own third-party drivers::

    from memory_core.store import Capabilities, Message, Store, trusted
    from memory_core.store import requests as rq

``scripts/check_imports.py`` holds the stores of ``memory_core.backends`` to that. The
names, by what they are for:

* the interface and its requests: :class:`Store`, :mod:`requests` (``rq.AddMessage``
  …), :data:`DEFAULTED_HOOKS`, :class:`Capabilities`, :class:`Limits`,
  :class:`Embedder`;
* what hooks return: the models (:class:`Message`, :class:`Conversation` …), and
  :func:`trusted` / :func:`trusted_many` / :func:`random_ids` to build them from values a
  store knows are valid (no validation pass), :class:`Erased`, :class:`StoreStats` (with
  :class:`UserStats`, :class:`StatsTotal`, :func:`merge_counts` and :func:`only_user`);
* errors a store raises: :class:`StoreError`, :class:`TransportError`,
  :class:`NotFoundError` … (every one a :class:`MemoryCoreError`);
* codecs every store shares, so that stores agree: listing cursors
  (:func:`encode_cursor`, :func:`decode_cursor`, :func:`cursor_error`), the shared text
  score (:func:`text_score`, :func:`query_terms`, :func:`engine_terms`,
  :func:`candidate_pool`; :func:`relevant_pool` and :func:`relevant_hits` for a
  ``get_context`` of a store's own), metadata filters (:func:`matches`), metadata JSON
  (:func:`metadata_json`), UUID parsing (:func:`parse_uuid`, :func:`canonical_uuid`),
  previews and context text (:func:`preview`, :func:`format_context`,
  :func:`fit_context`, :func:`fit_notes`, :data:`CHARS_PER_TOKEN`), values other programs
  wrote (:mod:`foreign`), the NAMS wire (:mod:`nams_wire`), secret-free URLs
  (:func:`redact_url`);
* two requests at once (:func:`together`), errors raised as if one after the other;
* telemetry: a span per round trip (:func:`round_trip`, :func:`http_call`);
* transfers (a store with ``bulk_transfer``): :class:`ImportState`,
  :class:`TransferReport`, :class:`BulkTransfer`, :mod:`transfer_records` with
  :data:`Record` and :func:`parse_stamp`, the import rules' reasons (:data:`SAME_SESSION`
  …) and id rules (:func:`own_id`, :func:`keeps_id`), and the decisions every bulk
  importer shares (:class:`ImportRules`, :class:`TraceRules`, :func:`candidates`,
  :func:`choose_id`; :data:`ALL_KINDS` for a hook's ``kinds``).
"""

from __future__ import annotations

from . import foreign, nams_wire, requests
from .archive import records as transfer_records
from .archive.hooks import (
    ALL_KINDS,
    DERIVED_ID,
    FOREIGN_ENTITY,
    FOREIGN_ID,
    FOREIGN_LINK,
    FOREIGN_MESSAGE,
    LINK_LOST,
    MESSAGE_LOST,
    NO_USER,
    NOT_CARRIED,
    PRESENT,
    RENAMED,
    SAME_SESSION,
    SAME_SESSION_MESSAGES,
    SAME_TRIPLE,
    STEP_LOST,
    STEP_NUMBER_TAKEN,
    TENANT_LOST,
    TRACE_LOST,
    BulkTransfer,
    ImportState,
    keeps_id,
    own_id,
)
from .archive.records import Record, parse_stamp
from .archive.report import TransferReport
from .archive.rules import ImportRules, TraceRules, candidates, choose_id
from .capabilities import Capabilities
from .concurrency import together
from .cursors import cursor_error, decode_cursor, encode_cursor
from .embedding import Embedder
from .erasure import Erased
from .errors import (
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    InvalidRequestError,
    MemoryCoreError,
    NotFoundError,
    NotSupportedError,
    RateLimitedError,
    StoreError,
    TransportError,
)
from .filters import matches
from .interface import DEFAULTED_HOOKS, Store, first_named, lookups, with_neighbours
from .limits import DEFAULT_LIMITS, Limits
from .models import (
    Conversation,
    ConversationPage,
    Entity,
    EntityRef,
    EntityType,
    ExtractionStatus,
    Fact,
    Message,
    MessageRole,
    Preference,
    ReasoningStep,
    ReasoningTrace,
    Relationship,
    SessionInfo,
    ToolCall,
    ToolCallStatus,
    ToolStats,
    TracePage,
    random_ids,
    trusted,
    trusted_many,
    utcnow,
)
from .requests import canonical_uuid
from .scoring import (
    candidate_pool,
    engine_terms,
    query_terms,
    relevant_hits,
    relevant_pool,
    text_score,
)
from .settings import default_store_path, redact_url
from .stats import LongTermCounts, StatsTotal, StoreStats, UserStats, merge_counts, only_user
from .summary import CHARS_PER_TOKEN, fit_context, fit_notes, format_context, preview
from .telemetry import http_call, round_trip
from .validation import metadata_json, parse_uuid
from .version import VERSION

__all__ = [
    "ALL_KINDS",
    "CHARS_PER_TOKEN",
    "DEFAULTED_HOOKS",
    "DEFAULT_LIMITS",
    "DERIVED_ID",
    "FOREIGN_ENTITY",
    "FOREIGN_ID",
    "FOREIGN_LINK",
    "FOREIGN_MESSAGE",
    "LINK_LOST",
    "MESSAGE_LOST",
    "NOT_CARRIED",
    "NO_USER",
    "PRESENT",
    "RENAMED",
    "SAME_SESSION",
    "SAME_SESSION_MESSAGES",
    "SAME_TRIPLE",
    "STEP_LOST",
    "STEP_NUMBER_TAKEN",
    "TENANT_LOST",
    "TRACE_LOST",
    "VERSION",
    "AuthenticationError",
    "BulkTransfer",
    "Capabilities",
    "ConfigurationError",
    "ConflictError",
    "Conversation",
    "ConversationPage",
    "Embedder",
    "Entity",
    "EntityRef",
    "EntityType",
    "Erased",
    "ExtractionStatus",
    "Fact",
    "ImportRules",
    "ImportState",
    "InvalidRequestError",
    "Limits",
    "LongTermCounts",
    "MemoryCoreError",
    "Message",
    "MessageRole",
    "NotFoundError",
    "NotSupportedError",
    "Preference",
    "RateLimitedError",
    "ReasoningStep",
    "ReasoningTrace",
    "Record",
    "Relationship",
    "SessionInfo",
    "StatsTotal",
    "Store",
    "StoreError",
    "StoreStats",
    "ToolCall",
    "ToolCallStatus",
    "ToolStats",
    "TracePage",
    "TraceRules",
    "TransferReport",
    "TransportError",
    "UserStats",
    "candidate_pool",
    "candidates",
    "canonical_uuid",
    "choose_id",
    "cursor_error",
    "decode_cursor",
    "default_store_path",
    "encode_cursor",
    "engine_terms",
    "first_named",
    "fit_context",
    "fit_notes",
    "foreign",
    "format_context",
    "http_call",
    "keeps_id",
    "lookups",
    "matches",
    "merge_counts",
    "metadata_json",
    "nams_wire",
    "only_user",
    "own_id",
    "parse_stamp",
    "parse_uuid",
    "preview",
    "query_terms",
    "random_ids",
    "redact_url",
    "relevant_hits",
    "relevant_pool",
    "requests",
    "round_trip",
    "text_score",
    "together",
    "transfer_records",
    "trusted",
    "trusted_many",
    "utcnow",
    "with_neighbours",
]
