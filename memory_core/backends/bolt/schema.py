"""Constraints and indexes, created idempotently when a backend connects.

Names shared with neo4j-agent-memory 0.8.0 (``conversation_id``, ``message_id`` …) are
reused on purpose: ``IF NOT EXISTS`` then makes the two libraries' schema set-ups no-ops
for each other. Every name and label here is a constant; nothing comes from user input.

What each one is for:

* unique ``id`` on Conversation, Message, Entity and ``identifier`` on User — the
  deterministic conversation id doubles as the get-or-create key, so concurrent first
  writes to a session MERGE onto one node;
* unique ``Message.idempotency_scope`` (``<conversation id>:<sha256 of the key>``) — two
  concurrent writers with one key cannot both store a message;
* ``Message(conversation_id, seq)`` — the newest-N read and the tail lookup walk this
  index backwards, so their cost depends on N, not on the conversation's length;
* ``Conversation(session_id)``, ``(user_identifier)``, ``(updated_at)`` — session
  lookup, tenant scoping and the most-recent-first listing of all conversations;
* ``Conversation(user_identifier, updated_at, id)`` — the listing of one user's (or
  tenant's) conversations: a keyset page is one range seek in index order;
* ``Entity(name_key)``, ``Entity(name)`` — case-insensitive entity lookup and the
  (name, type) MERGE;
* under ``multi_tenant=True`` entities carry ``tenant``: unique ``Entity(tenant, name,
  type)`` makes the per-tenant MERGE race-free, ``Entity(tenant, name_key)`` serves the
  per-tenant lookup by name (entities without ``tenant`` are in neither);
* a full-text index on ``Message.content`` for text search, which also holds
  ``Message.conversation_id`` so that a search in one conversation asks Lucene for that
  conversation's hits only (its cost then follows the conversation, not the database);
  ``memory_core_message_text`` (content only, from earlier versions) is dropped;
* with an embedder, a cosine vector index on ``Message.embedding`` (named as the
  reference names it);
* long-term memory: unique ``id`` on Preference and Fact and ``Preference(category)``
  (the reference's names); ``Preference(user_identifier)`` and ``Fact(user_identifier)``
  for a user's records and their erasure; ``Fact(subject_key)`` for ``facts_about``, and
  ``Fact(subject)`` for the facts another writer left without a key; ``RELATED_TO(id)``
  to find a relationship by id; full-text indexes picking search candidates on
  Preference ``category``, ``preference``, ``context``, on Fact ``subject``,
  ``predicate``, ``object`` and on Entity ``name``, ``description``;
* reasoning memory: unique ``id`` on ReasoningTrace, ReasoningStep, ToolCall and unique
  ``Tool.name`` (the reference's names: the Tool MERGE is race-free);
  ``ReasoningTrace(session_id)``, ``(user_identifier)``, ``(started_at)`` for listings
  and erasure; ``ToolCall(tool_name)`` for one tool's statistics; full-text indexes
  picking candidates on ReasoningTrace ``task`` and ReasoningStep ``thought``,
  ``action``, ``observation``.
"""

from __future__ import annotations

from typing import Any

from memory_core.store import ConfigurationError

FULLTEXT_INDEX = "memory_core_message_search"
PREFERENCE_SEARCH = "memory_core_preference_search"
FACT_SEARCH = "memory_core_fact_search"
ENTITY_SEARCH = "memory_core_entity_search"
TRACE_SEARCH = "memory_core_trace_search"
STEP_SEARCH = "memory_core_step_search"
# Indexes an earlier version created that this one replaces: dropped at set-up.
RETIRED: dict[str, str] = {
    "memory_core_message_text": "DROP INDEX memory_core_message_text IF EXISTS",
}
VECTOR_INDEX = "message_embedding_idx"

# name -> DDL. A uniqueness constraint's backing index carries the constraint's name, so
# ``SHOW INDEXES`` lists every name here once the schema is in place.
STATEMENTS: dict[str, str] = {
    "conversation_id": "CREATE CONSTRAINT conversation_id IF NOT EXISTS "
    "FOR (n:Conversation) REQUIRE n.id IS UNIQUE",
    "message_id": "CREATE CONSTRAINT message_id IF NOT EXISTS "
    "FOR (n:Message) REQUIRE n.id IS UNIQUE",
    "entity_id": "CREATE CONSTRAINT entity_id IF NOT EXISTS FOR (n:Entity) REQUIRE n.id IS UNIQUE",
    "user_identifier": "CREATE CONSTRAINT user_identifier IF NOT EXISTS "
    "FOR (n:User) REQUIRE n.identifier IS UNIQUE",
    "memory_core_message_idempotency": "CREATE CONSTRAINT memory_core_message_idempotency "
    "IF NOT EXISTS FOR (n:Message) REQUIRE n.idempotency_scope IS UNIQUE",
    "memory_core_message_seq": "CREATE INDEX memory_core_message_seq IF NOT EXISTS "
    "FOR (n:Message) ON (n.conversation_id, n.seq)",
    "conversation_session_idx": "CREATE INDEX conversation_session_idx IF NOT EXISTS "
    "FOR (n:Conversation) ON (n.session_id)",
    "memory_core_conversation_user": "CREATE INDEX memory_core_conversation_user IF NOT EXISTS "
    "FOR (n:Conversation) ON (n.user_identifier)",
    "memory_core_conversation_updated": "CREATE INDEX memory_core_conversation_updated "
    "IF NOT EXISTS FOR (n:Conversation) ON (n.updated_at)",
    "memory_core_conversation_user_recency": "CREATE INDEX "
    "memory_core_conversation_user_recency IF NOT EXISTS "
    "FOR (n:Conversation) ON (n.user_identifier, n.updated_at, n.id)",
    "entity_name_key_idx": "CREATE INDEX entity_name_key_idx IF NOT EXISTS "
    "FOR (n:Entity) ON (n.name_key)",
    "entity_name_idx": "CREATE INDEX entity_name_idx IF NOT EXISTS FOR (n:Entity) ON (n.name)",
    "memory_core_entity_tenant_name_type": "CREATE CONSTRAINT memory_core_entity_tenant_name_type "
    "IF NOT EXISTS FOR (n:Entity) REQUIRE (n.tenant, n.name, n.type) IS UNIQUE",
    "memory_core_entity_tenant_name_key": "CREATE INDEX memory_core_entity_tenant_name_key "
    "IF NOT EXISTS FOR (n:Entity) ON (n.tenant, n.name_key)",
    FULLTEXT_INDEX: f"CREATE FULLTEXT INDEX {FULLTEXT_INDEX} IF NOT EXISTS "
    "FOR (n:Message) ON EACH [n.content, n.conversation_id]",
    "preference_id": "CREATE CONSTRAINT preference_id IF NOT EXISTS "
    "FOR (n:Preference) REQUIRE n.id IS UNIQUE",
    "fact_id": "CREATE CONSTRAINT fact_id IF NOT EXISTS FOR (n:Fact) REQUIRE n.id IS UNIQUE",
    "preference_category_idx": "CREATE INDEX preference_category_idx IF NOT EXISTS "
    "FOR (n:Preference) ON (n.category)",
    "memory_core_preference_user": "CREATE INDEX memory_core_preference_user IF NOT EXISTS "
    "FOR (n:Preference) ON (n.user_identifier)",
    "memory_core_fact_user": "CREATE INDEX memory_core_fact_user IF NOT EXISTS "
    "FOR (n:Fact) ON (n.user_identifier)",
    "memory_core_fact_subject_key": "CREATE INDEX memory_core_fact_subject_key IF NOT EXISTS "
    "FOR (n:Fact) ON (n.subject_key)",
    "memory_core_fact_subject": "CREATE INDEX memory_core_fact_subject IF NOT EXISTS "
    "FOR (n:Fact) ON (n.subject)",
    "memory_core_related_id": "CREATE INDEX memory_core_related_id IF NOT EXISTS "
    "FOR ()-[r:RELATED_TO]-() ON (r.id)",
    PREFERENCE_SEARCH: f"CREATE FULLTEXT INDEX {PREFERENCE_SEARCH} IF NOT EXISTS "
    "FOR (n:Preference) ON EACH [n.category, n.preference, n.context]",
    FACT_SEARCH: f"CREATE FULLTEXT INDEX {FACT_SEARCH} IF NOT EXISTS "
    "FOR (n:Fact) ON EACH [n.subject, n.predicate, n.object]",
    ENTITY_SEARCH: f"CREATE FULLTEXT INDEX {ENTITY_SEARCH} IF NOT EXISTS "
    "FOR (n:Entity) ON EACH [n.name, n.description]",
    "reasoning_trace_id": "CREATE CONSTRAINT reasoning_trace_id IF NOT EXISTS "
    "FOR (n:ReasoningTrace) REQUIRE n.id IS UNIQUE",
    "reasoning_step_id": "CREATE CONSTRAINT reasoning_step_id IF NOT EXISTS "
    "FOR (n:ReasoningStep) REQUIRE n.id IS UNIQUE",
    "tool_name": "CREATE CONSTRAINT tool_name IF NOT EXISTS FOR (n:Tool) REQUIRE n.name IS UNIQUE",
    "tool_call_id": "CREATE CONSTRAINT tool_call_id IF NOT EXISTS "
    "FOR (n:ToolCall) REQUIRE n.id IS UNIQUE",
    "trace_session_idx": "CREATE INDEX trace_session_idx IF NOT EXISTS "
    "FOR (n:ReasoningTrace) ON (n.session_id)",
    "memory_core_trace_user": "CREATE INDEX memory_core_trace_user IF NOT EXISTS "
    "FOR (n:ReasoningTrace) ON (n.user_identifier)",
    "memory_core_trace_started": "CREATE INDEX memory_core_trace_started IF NOT EXISTS "
    "FOR (n:ReasoningTrace) ON (n.started_at)",
    "memory_core_tool_call_name": "CREATE INDEX memory_core_tool_call_name IF NOT EXISTS "
    "FOR (n:ToolCall) ON (n.tool_name)",
    TRACE_SEARCH: f"CREATE FULLTEXT INDEX {TRACE_SEARCH} IF NOT EXISTS "
    "FOR (n:ReasoningTrace) ON EACH [n.task]",
    STEP_SEARCH: f"CREATE FULLTEXT INDEX {STEP_SEARCH} IF NOT EXISTS "
    "FOR (n:ReasoningStep) ON EACH [n.thought, n.action, n.observation]",
}

SHOW_INDEX_NAMES = "SHOW INDEXES YIELD name RETURN collect(name) AS names"

SHOW_VECTOR_INDEX = """
SHOW VECTOR INDEXES YIELD name, labelsOrTypes, properties, options
WHERE labelsOrTypes = ['Message'] AND properties = ['embedding']
RETURN name, options
"""

AWAIT_INDEXES = "CALL db.awaitIndexes($seconds)"


def vector_index_statement(dimensions: int) -> str:
    """The vector index DDL; ``dimensions`` is an int checked by the caller."""
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
        raise ConfigurationError("embedder.dimensions must be a positive int")
    return (
        f"CREATE VECTOR INDEX {VECTOR_INDEX} IF NOT EXISTS "
        "FOR (n:Message) ON (n.embedding) OPTIONS {indexConfig: {"
        f"`vector.dimensions`: {dimensions}, `vector.similarity_function`: 'cosine'}}}}"
    )


def vector_dimensions(options: Any) -> int | None:
    """``vector.dimensions`` from a ``SHOW VECTOR INDEXES`` options map, if present."""
    config = options.get("indexConfig") if isinstance(options, dict) else None
    value = config.get("vector.dimensions") if isinstance(config, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None
