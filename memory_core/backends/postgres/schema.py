"""Versioned migrations, applied on connect under an advisory lock, inside one schema.

Every object lives in the configured schema (default ``memory_core``); nothing is created
outside it. ``{schema}.schema_migrations`` records the versions applied. Applying takes a
transaction-level advisory lock keyed by the schema name, so processes that start together
apply each migration once (the others wait, then find it applied). DDL in PostgreSQL is
transactional: a migration is applied whole or not at all.

Tables (version 1):

``conversations``
    one row per (``tenant``, ``session_id``); ``tenant`` is the user of a multi-tenant
    store and ``''`` otherwise. ``next_seq`` numbers the conversation's messages.
    ``metadata`` is the exact JSON text (key order kept). Indexes:
    ``conversations_by_recency`` (tenant, updated_at DESC, id DESC) and the partial
    ``conversations_by_user_recency`` for user listings: keyset pages.
``messages``
    ordered by ``seq`` per conversation (unique), ``idempotency_key`` unique per
    conversation. ``content`` is the text (NUL characters, which PostgreSQL text cannot
    hold, removed); ``content_exact`` holds the UTF-8 of the exact content only when it
    had one. ``metadata`` is the exact JSON text, ``metadata_doc`` the same as JSONB for
    filters (version 1 left it NULL when it held a NUL; see version 2). ``words`` is the
    tsvector of the content's words as :mod:`memory_core.scoring` splits them (GIN index
    ``messages_words``).
``entities``
    unique per (``tenant``, ``name_key`` = the name case-folded, ``type``).
``mentions``
    (message, entity, position): the entities a message mentions, in order; removed with
    either side (``ON DELETE CASCADE``; index ``mentions_by_entity``).

Version 2: ``message_words`` (message, part, words), the words of a message beyond what
its own tsvector holds (GIN index ``message_words_words``; removed with the message).
Strings that may hold a NUL are stored escaped from then on (see :mod:`.codec`): the
migration escapes the titles, entity names, name keys and descriptions and idempotency
keys that already hold U+0001, and gives ``metadata_doc`` to the messages version 1 left
without one (another program's text that is not JSON keeps NULL). It reads ``messages``
twice.

Version 3: long-term memory. ``entities.words`` (GIN index ``entities_words``) and the
same column of ``preferences`` and ``facts`` hold each record's distinct words as
:func:`memory_core.scoring.query_terms` splits them (as lexemes: see :mod:`.words`), a
``text[]``: unlike a tsvector (at most 1 MB of words) it holds every word of the longest
record, and a query can count the words a record shares with it. A search takes the
records sharing most words with the query as candidates and scores them in Python, as
message search does. A deleted record's words go with its row. ``preferences`` (with
the entities each links in ``preference_entities``), ``facts`` (``subject_key``: the
subject case-folded, then escaped) and ``relationships`` (one per source, type and
target; removed with either entity) are partitioned by ``tenant`` like ``entities``;
strings that may hold a NUL are escaped as :mod:`.codec` does, metadata and properties
are the exact JSON text. ``entities.aliases`` holds an entity's other names as a JSON
list (as written), ``alias_keys`` the same names as ``name_key`` holds a name (GIN index
``entities_alias_keys``: a lookup by alias), ``attributes`` the exact JSON text of its
attributes. The entities a store already has get their words on connect
(:func:`.words.index_entities`: every connect fills the words of any entity without
them, so a schema applied as SQL, or rows another program wrote, become searchable too).

Version 3 holds reasoning memory too. ``traces`` (``created_at``: when the trace started,
``ReasoningTrace.started_at``; ``last_step``: the number of its last step, which
``add_step`` raises and reads in one ``UPDATE``, so concurrent appends get distinct,
gapless numbers; ``triggered_by``: the message id given to ``start_trace``, as given),
its ``steps`` (unique per trace and number) and their ``tool_calls`` (``num`` orders the
calls of a step made in one microsecond; ``arguments`` and ``result`` are the exact JSON
text). Steps and tool calls repeat their trace's ``tenant`` and ``user_identifier``, so
``tool_stats`` reads one tool's calls from ``tool_calls_by_tool`` (which holds every
column it adds up) and ``search_steps`` never joins. Keyset listings read
``traces_by_recency``, ``traces_by_user_recency`` (as conversations do) and
``traces_by_session``. ``words`` of traces (the task) and steps (thought, action and
observation) as for preferences. ``trace_messages`` and ``trace_entities`` link a trace
to what it touched, each link once, in the order made (``num``); a link goes with either
side.

Not a numbered migration, since it depends on the server: where the pgvector extension is
installed or may be created, ``messages.embedding_vector`` (see :mod:`.vector`) is added
in the same transaction.
"""

from __future__ import annotations

import zlib
from typing import Any

from psycopg import AsyncConnection

from memory_core.store import ConfigurationError

from . import vector
from .words import index_entities

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
CREATE TABLE {schema}.conversations (
    id              uuid PRIMARY KEY,
    tenant          text NOT NULL,
    session_id      text NOT NULL,
    title           text,
    metadata        text NOT NULL DEFAULT '{{}}',
    user_identifier text,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    next_seq        bigint NOT NULL DEFAULT 1,
    UNIQUE (tenant, session_id)
);
CREATE INDEX conversations_by_recency
    ON {schema}.conversations (tenant, updated_at DESC, id DESC);
CREATE INDEX conversations_by_user_recency
    ON {schema}.conversations (user_identifier, updated_at DESC, id DESC)
    WHERE tenant = '' AND user_identifier IS NOT NULL;
CREATE TABLE {schema}.messages (
    num             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id              uuid NOT NULL UNIQUE,
    conversation_id uuid NOT NULL REFERENCES {schema}.conversations (id) ON DELETE CASCADE,
    seq             bigint NOT NULL,
    role            text NOT NULL,
    content         text NOT NULL,
    content_exact   bytea,
    metadata        text NOT NULL DEFAULT '{{}}',
    metadata_doc    jsonb,
    created_at      timestamptz NOT NULL,
    embedding       float8[],
    idempotency_key text,
    words           tsvector NOT NULL,
    UNIQUE (conversation_id, seq),
    UNIQUE (conversation_id, idempotency_key)
);
CREATE INDEX messages_words ON {schema}.messages USING gin (words);
CREATE TABLE {schema}.entities (
    id          text PRIMARY KEY,
    tenant      text NOT NULL,
    name        text NOT NULL,
    name_key    text NOT NULL,
    type        text NOT NULL,
    description text,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    UNIQUE (tenant, name_key, type)
);
CREATE TABLE {schema}.mentions (
    message_id uuid NOT NULL REFERENCES {schema}.messages (id) ON DELETE CASCADE,
    entity_id  text NOT NULL REFERENCES {schema}.entities (id) ON DELETE CASCADE,
    position   integer NOT NULL,
    PRIMARY KEY (message_id, entity_id)
);
CREATE INDEX mentions_by_entity ON {schema}.mentions (entity_id);
""",
    ),
    (
        2,
        """
CREATE TABLE {schema}.message_words (
    message_id uuid NOT NULL REFERENCES {schema}.messages (id) ON DELETE CASCADE,
    part       integer NOT NULL,
    words      tsvector NOT NULL,
    PRIMARY KEY (message_id, part)
);
CREATE INDEX message_words_words ON {schema}.message_words USING gin (words);
UPDATE {schema}.conversations SET title = replace(title, chr(1), chr(1) || '1')
    WHERE strpos(title, chr(1)) > 0;
UPDATE {schema}.entities SET description = replace(description, chr(1), chr(1) || '1')
    WHERE strpos(description, chr(1)) > 0;
DO $$
DECLARE
    r record;
BEGIN
    -- Longest first: an escaped key is longer than the key, so it never meets a key that
    -- is still to be escaped in a unique index.
    FOR r IN SELECT id FROM {schema}.entities WHERE strpos(name, chr(1)) > 0
            OR strpos(name_key, chr(1)) > 0 ORDER BY length(name_key) DESC LOOP
        UPDATE {schema}.entities SET name = replace(name, chr(1), chr(1) || '1'),
            name_key = replace(name_key, chr(1), chr(1) || '1') WHERE id = r.id;
    END LOOP;
    FOR r IN SELECT num FROM {schema}.messages WHERE strpos(idempotency_key, chr(1)) > 0
            ORDER BY length(idempotency_key) DESC LOOP
        UPDATE {schema}.messages SET idempotency_key = replace(idempotency_key, chr(1),
            chr(1) || '1') WHERE num = r.num;
    END LOOP;
    FOR r IN SELECT num FROM {schema}.messages WHERE metadata_doc IS NULL LOOP
        BEGIN
            UPDATE {schema}.messages SET metadata_doc = ('[' || array_to_string(ARRAY(
                SELECT replace(replace(p, '\\u0001', '\\u00011'), '\\u0000', '\\u00010')
                FROM unnest(string_to_array(metadata, '\\\\')) WITH ORDINALITY AS u (p, n)
                ORDER BY n), '\\\\') || ']')::jsonb WHERE num = r.num;
        EXCEPTION WHEN others THEN
            NULL;  -- another program's text, not JSON: it matches no filter, as before
        END;
    END LOOP;
END
$$;
""",
    ),
    (
        3,
        """
ALTER TABLE {schema}.entities ADD COLUMN words text[],
    ADD COLUMN aliases text NOT NULL DEFAULT '[]',
    ADD COLUMN alias_keys text[] NOT NULL DEFAULT '{{}}',
    ADD COLUMN attributes text NOT NULL DEFAULT '{{}}';
CREATE INDEX entities_alias_keys ON {schema}.entities USING gin (alias_keys);
CREATE INDEX entities_words ON {schema}.entities USING gin (words);
CREATE INDEX entities_unindexed ON {schema}.entities (id) WHERE words IS NULL;
CREATE TABLE {schema}.preferences (
    id              text PRIMARY KEY,
    tenant          text NOT NULL,
    user_identifier text,
    category        text NOT NULL,
    preference      text NOT NULL,
    context         text,
    confidence      float8 NOT NULL,
    metadata        text NOT NULL DEFAULT '{{}}',
    embedding       float8[],
    words           text[] NOT NULL,
    created_at      timestamptz NOT NULL,
    superseded_at   timestamptz,
    superseded_by   text
);
CREATE INDEX preferences_by_user
    ON {schema}.preferences (tenant, user_identifier, created_at DESC);
CREATE INDEX preferences_words ON {schema}.preferences USING gin (words);
CREATE INDEX preferences_superseded_by ON {schema}.preferences (superseded_by)
    WHERE superseded_by IS NOT NULL;
CREATE TABLE {schema}.preference_entities (
    preference_id text NOT NULL REFERENCES {schema}.preferences (id) ON DELETE CASCADE,
    entity_id     text NOT NULL REFERENCES {schema}.entities (id) ON DELETE CASCADE,
    position      integer NOT NULL,
    PRIMARY KEY (preference_id, entity_id)
);
CREATE INDEX preference_entities_by_entity ON {schema}.preference_entities (entity_id);
CREATE TABLE {schema}.facts (
    id                text PRIMARY KEY,
    tenant            text NOT NULL,
    user_identifier   text,
    subject           text NOT NULL,
    subject_key       text NOT NULL,
    predicate         text NOT NULL,
    object            text NOT NULL,
    confidence        float8 NOT NULL,
    valid_from        timestamptz,
    valid_until       timestamptz,
    source_message_id text,
    metadata          text NOT NULL DEFAULT '{{}}',
    embedding         float8[],
    words             text[] NOT NULL,
    created_at        timestamptz NOT NULL
);
CREATE INDEX facts_by_subject ON {schema}.facts (tenant, subject_key, created_at DESC);
CREATE INDEX facts_by_user ON {schema}.facts (tenant, user_identifier, created_at DESC);
CREATE INDEX facts_words ON {schema}.facts USING gin (words);
CREATE TABLE {schema}.relationships (
    id          text PRIMARY KEY,
    tenant      text NOT NULL,
    source_id   text NOT NULL REFERENCES {schema}.entities (id) ON DELETE CASCADE,
    target_id   text NOT NULL REFERENCES {schema}.entities (id) ON DELETE CASCADE,
    type        text NOT NULL,
    properties  text NOT NULL DEFAULT '{{}}',
    confidence  float8 NOT NULL,
    valid_from  timestamptz,
    valid_until timestamptz,
    created_at  timestamptz NOT NULL,
    UNIQUE (source_id, type, target_id)
);
CREATE INDEX relationships_by_target ON {schema}.relationships (target_id, type);
CREATE INDEX relationships_by_tenant ON {schema}.relationships (tenant, created_at);
CREATE TABLE {schema}.traces (
    id              text PRIMARY KEY,
    tenant          text NOT NULL,
    user_identifier text,
    session_id      text NOT NULL,
    task            text NOT NULL,
    outcome         text,
    success         boolean,
    metadata        text NOT NULL DEFAULT '{{}}',
    triggered_by    text,
    embedding       float8[],
    words           text[] NOT NULL,
    last_step       integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL,
    completed_at    timestamptz
);
CREATE INDEX traces_by_recency ON {schema}.traces (tenant, created_at DESC, id DESC);
CREATE INDEX traces_by_user_recency
    ON {schema}.traces (user_identifier, created_at DESC, id DESC)
    WHERE tenant = '' AND user_identifier IS NOT NULL;
CREATE INDEX traces_by_session
    ON {schema}.traces (tenant, session_id, created_at DESC, id DESC);
CREATE INDEX traces_words ON {schema}.traces USING gin (words);
CREATE TABLE {schema}.steps (
    id              text PRIMARY KEY,
    trace_id        text NOT NULL REFERENCES {schema}.traces (id) ON DELETE CASCADE,
    tenant          text NOT NULL,
    user_identifier text,
    step_number     integer NOT NULL,
    thought         text,
    action          text,
    observation     text,
    metadata        text NOT NULL DEFAULT '{{}}',
    embedding       float8[],
    words           text[] NOT NULL,
    created_at      timestamptz NOT NULL,
    UNIQUE (trace_id, step_number)
);
CREATE INDEX steps_words ON {schema}.steps USING gin (words);
CREATE TABLE {schema}.tool_calls (
    num             bigint GENERATED ALWAYS AS IDENTITY,
    id              text PRIMARY KEY,
    step_id         text NOT NULL REFERENCES {schema}.steps (id) ON DELETE CASCADE,
    tenant          text NOT NULL,
    user_identifier text,
    tool_name       text NOT NULL,
    arguments       text NOT NULL DEFAULT '{{}}',
    result          text NOT NULL DEFAULT 'null',
    status          text NOT NULL,
    duration_ms     bigint,
    error           text,
    created_at      timestamptz NOT NULL
);
CREATE INDEX tool_calls_by_step ON {schema}.tool_calls (step_id, created_at, num);
CREATE INDEX tool_calls_by_tool ON {schema}.tool_calls (tenant, tool_name)
    INCLUDE (user_identifier, status, duration_ms, created_at);
CREATE TABLE {schema}.trace_messages (
    num        bigint GENERATED ALWAYS AS IDENTITY,
    trace_id   text NOT NULL REFERENCES {schema}.traces (id) ON DELETE CASCADE,
    message_id uuid NOT NULL REFERENCES {schema}.messages (id) ON DELETE CASCADE,
    PRIMARY KEY (trace_id, message_id)
);
CREATE INDEX trace_messages_by_message ON {schema}.trace_messages (message_id);
CREATE TABLE {schema}.trace_entities (
    num       bigint GENERATED ALWAYS AS IDENTITY,
    trace_id  text NOT NULL REFERENCES {schema}.traces (id) ON DELETE CASCADE,
    entity_id text NOT NULL REFERENCES {schema}.entities (id) ON DELETE CASCADE,
    PRIMARY KEY (trace_id, entity_id)
);
CREATE INDEX trace_entities_by_entity ON {schema}.trace_entities (entity_id);
""",
    ),
]

LATEST = MIGRATIONS[-1][0]


def migration_sql(schema: str, *, since: int = 0) -> str:
    """The DDL of every migration after version ``since``, for ``schema`` (what
    :func:`migrate` runs, for teams that apply DDL themselves)."""
    parts = [f"CREATE SCHEMA IF NOT EXISTS {schema};", _VERSIONS.format(schema=schema)]
    for version, ddl in MIGRATIONS:
        if version > since:
            parts.append(f"-- version {version}\n{ddl.format(schema=schema).strip()}")
            parts.append(f"INSERT INTO {schema}.schema_migrations (version) VALUES ({version});")
    return "\n".join(parts) + "\n"


_VERSIONS = """CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
    version    integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);"""


def lock_key(schema: str) -> int:
    """The advisory-lock key of ``schema``'s migrations (a signed 64-bit int)."""
    return (zlib.crc32(f"memory_core:{schema}".encode()) << 16) | 0x6D63


async def applied_version(conn: AsyncConnection[Any], schema: str) -> int:
    """The newest migration applied to ``schema`` (0: none, or no memory-core tables)."""
    cursor = conn.cursor()
    await cursor.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.schema_migrations",))
    exists = await cursor.fetchone()
    if not (exists and exists[0]):
        return 0
    await cursor.execute(f"SELECT coalesce(max(version), 0) FROM {schema}.schema_migrations")
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def migrate(conn: AsyncConnection[Any], schema: str) -> int:
    """Apply every missing migration in one transaction under the advisory lock, then the
    pgvector column where the extension allows it (:func:`.vector.enable`), and the words
    of entities that have none (:func:`.words.index_entities`); the version found before.
    A store newer than this code raises ``ConfigurationError``."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(schema),))
        found = await applied_version(conn, schema)
        if found > LATEST:
            raise ConfigurationError(
                f"schema {schema} has version {found}, newer than this memory-core supports "
                f"({LATEST}); upgrade memory-core"
            )
        if found < LATEST:
            await conn.execute(migration_sql(schema, since=found).encode())
        await vector.enable(conn, schema)
        await index_entities(conn, schema)
        return found
