"""forget_user on PostgreSQL, proved by a scan of every table of the store's schema (each
row as text) for the user's identifiers and content (long-term memory too: preferences,
facts, relationships); of the planner statistics (``pg_stats``, which ``ANALYZE`` fills
with sampled values); and, after the purge and a checkpoint, of the bytes of every file of
the database."""

from __future__ import annotations

import os
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest

from memory_core import ConfigurationError, HashingEmbedder, MemoryBackend, open_backend
from memory_core.backends.postgres.store import PostgresStore
from memory_core.backends.postgres.tx import Tx
from memory_core.cli import main as cli_main
from memory_core_dev.postgres_server import PostgresHandle
from tests.backends.erasure_data import SHARED_ENTITY, write_traces, write_user

pytestmark = pytest.mark.anyio


def _url(server: PostgresHandle, schema: str) -> str:
    separator = "&" if "?" in server.url else "?"
    return f"{server.url}{separator}schema={schema}"


def _holding(url: str, schema: str, markers: list[str]) -> dict[str, list[str]]:
    """``{table: [markers]}`` over every table of ``schema``, rows compared as text."""
    found: dict[str, list[str]] = {}
    with psycopg.connect(url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (schema,),
            )
        ]
        assert {"conversations", "messages", "entities", "mentions"} <= set(tables)
        for table in tables:
            for (text,) in conn.execute(f'SELECT x::text FROM "{schema}"."{table}" x'):
                hits = [m for m in markers if m.lower() in text.lower()]
                if hits:
                    found.setdefault(table, []).extend(hits)
    return found


@pytest.mark.parametrize("multi_tenant", [False, True], ids=["single-tenant", "multi-tenant"])
async def test_forget_user_leaves_no_row(
    postgres_server: PostgresHandle, multi_tenant: bool
) -> None:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    url = _url(postgres_server, schema)
    async with open_backend(url, multi_tenant=multi_tenant, embedder=HashingEmbedder()) as memory:
        gone = await _write_all(memory, "userzed", "A")
        kept = await _write_all(memory, "userkay", "B")
        before = _holding(postgres_server.url, schema, gone)
        long_term = {"preferences", "preference_entities", "facts", "relationships"}
        reasoning = {"traces", "steps", "tool_calls", "trace_messages", "trace_entities"}
        assert long_term | reasoning <= set(before), "the scan must see A before"
        report = await memory.forget_user("userzed", batch_size=1)
        assert report.counts == {
            "conversations": 2,
            "messages": 4,
            "mentions": 4,
            "entities": 1 if not multi_tenant else 2,
            "idempotency_keys": 2,
            "preferences": 1,
            "facts": 1,
            # single-tenant: with A's own entity, which it links to the shared one
            "relationships": 1,
            "traces": 1,
            "steps": 2,
            "tool_calls": 1,
        }
        assert _holding(postgres_server.url, schema, gone) == {}
        left = _holding(postgres_server.url, schema, kept)
        assert set(kept) <= {m for hits in left.values() for m in hits}
        assert (await memory.forget_user("userzed")).total == 0


async def write_long_term(memory: MemoryBackend, user: str, tag: str) -> list[str]:
    """After :func:`write_user`: the user's preference (linking their own entity), fact
    and relationship (from their entity to the shared one); every string unique to them."""
    owner = user if memory.multi_tenant else None  # single-tenant: entities are shared
    [own] = await memory.find_entities(f"Entname{tag}", user_identifier=owner)
    [shared] = await memory.find_entities(SHARED_ENTITY, user_identifier=owner)
    preference = await memory.add_preference(
        f"prefcat{tag}",
        f"prefword{tag} likes",
        context=f"prefctx{tag}",
        linked_entities=[own.id],
        metadata={"m": f"prefmeta{tag}"},
        user_identifier=user,
    )
    fact = await memory.add_fact(
        f"Factsubj{tag}",
        f"FACTPRED{tag}",
        f"factobj{tag}",
        source_message_id=f"factsource{tag}",
        metadata={"m": f"factmeta{tag}"},
        user_identifier=user,
    )
    link = await memory.add_relationship(
        own.id,
        shared.id,
        f"RELTYPE{tag}",
        properties={"p": f"relprop{tag}"},
        user_identifier=owner,
    )
    return [
        f"prefcat{tag}",
        f"prefword{tag}",
        f"prefctx{tag}",
        f"prefmeta{tag}",
        f"Factsubj{tag}",
        f"FACTPRED{tag}",
        f"factobj{tag}",
        f"factsource{tag}",
        f"factmeta{tag}",
        f"RELTYPE{tag}",
        f"relprop{tag}",
        preference.id,
        fact.id,
        link.id,
    ]


async def _write_all(memory: MemoryBackend, user: str, tag: str) -> list[str]:
    written = await write_user(memory, user, tag) + await write_long_term(memory, user, tag)
    return written + await write_traces(memory, user, tag)


def _tag() -> str:
    return uuid.uuid4().hex[:10]


def _analyze(url: str, schema: str) -> None:
    """``ANALYZE`` every table of ``schema``, as autovacuum does on any busy table."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace AND relkind = 'r'",
            (schema,),
        ).fetchall()
        for (table,) in tables:
            conn.execute(f'ANALYZE "{schema}"."{table}"')


def _in_statistics(url: str, schema: str, markers: list[str]) -> dict[str, list[str]]:
    """``{table.column: [markers]}`` over every row of ``pg_stats`` for ``schema`` (as
    text: most common values, histograms, most common elements such as tsvector words)."""
    found: dict[str, list[str]] = {}
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT s.tablename, s.attname, s::text FROM pg_stats s WHERE s.schemaname = %s",
            (schema,),
        ).fetchall()
    for table, column, text in rows:
        hits = [m for m in markers if m.lower() in text.lower()]
        if hits:
            found[f"{table}.{column}"] = hits
    return found


def _in_files(url: str, markers: list[str]) -> dict[str, list[str]]:
    """After a ``CHECKPOINT``: ``{relation: [markers]}`` over the bytes of every file of
    the database's directory (heap, TOAST and index files of every relation, catalogs
    included), compared without case (a tsvector holds words in lower case)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        data = conn.execute("SELECT current_setting('data_directory')").fetchone()
        database = conn.execute(
            "SELECT oid FROM pg_database WHERE datname = current_database()"
        ).fetchone()
        names = dict(
            conn.execute(
                "SELECT pg_relation_filenode(oid)::text, relname FROM pg_class "
                "WHERE pg_relation_filenode(oid) IS NOT NULL"
            ).fetchall()
        )
    assert data is not None and database is not None
    folder = Path(data[0]) / "base" / str(database[0])
    if not os.access(folder, os.R_OK):
        pytest.skip(f"the server's data directory {folder} is not readable here")
    wanted = [(m, m.lower().encode()) for m in markers]
    found: dict[str, list[str]] = {}
    for path in folder.iterdir():
        try:
            content = path.read_bytes().lower()
        except FileNotFoundError:
            # The server removes files while we list (pg_internal.init, the files of
            # a relation another test drops): a file that is gone holds no word.
            continue
        hits = [m for m, raw in wanted if raw in content]
        if hits:
            node = path.name.split(".")[0].split("_")[0]
            found.setdefault(names.get(node, path.name), []).extend(hits)
    return found


def _text_markers(markers: list[str]) -> list[str]:
    """The markers stored as text (ids are stored as 16-byte uuids, not as their text)."""
    kept = []
    for marker in markers:
        try:
            uuid.UUID(marker)
        except ValueError:
            kept.append(marker)
    return kept


def _store(memory: MemoryBackend) -> PostgresStore:
    store = memory.store
    assert isinstance(store, PostgresStore)
    return store


# Columns of the long-term tables whose statistics hold the user's values once analyzed.
LONG_TERM_STATISTICS = {
    "preferences.category",
    "preferences.preference",
    "preferences.words",
    "facts.subject",
    "facts.object",
    "facts.words",
    "relationships.type",
    "relationships.properties",
}


@pytest.mark.parametrize("multi_tenant", [False, True], ids=["single-tenant", "multi-tenant"])
async def test_forget_user_leaves_nothing_in_the_planner_statistics(
    postgres_server: PostgresHandle, multi_tenant: bool
) -> None:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    tag = _tag()
    async with open_backend(_url(postgres_server, schema), multi_tenant=multi_tenant) as memory:
        gone = await _write_all(memory, f"userzed{tag}", f"A{tag}")
        kept = await _write_all(memory, f"userkay{tag}", f"B{tag}")
        _analyze(postgres_server.url, schema)
        before = _in_statistics(postgres_server.url, schema, gone)
        assert {"messages.content", "messages.words", "messages.metadata_doc"} <= set(before)
        assert set(before) >= LONG_TERM_STATISTICS
        report = await memory.forget_user(f"userzed{tag}")
        assert report.not_reached == []
        assert _in_statistics(postgres_server.url, schema, gone) == {}
        assert _in_statistics(postgres_server.url, schema, kept), "B's values are sampled"


async def test_forgetting_the_last_user_drops_the_statistics_of_the_emptied_tables(
    postgres_server: PostgresHandle,
) -> None:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    tag = _tag()
    async with open_backend(_url(postgres_server, schema)) as memory:
        gone = await _write_all(memory, f"userzed{tag}", f"A{tag}")
        _analyze(postgres_server.url, schema)
        before = _in_statistics(postgres_server.url, schema, gone)
        assert "conversations.user_identifier" in before
        assert {"preferences.words", "facts.words"} <= set(before), "one row each: words"
        report = await memory.forget_user(f"userzed{tag}")
        assert report.not_reached == []
        assert _in_statistics(postgres_server.url, schema, gone) == {}
        again = await memory.add_message("after", "user", "a new message")
        assert (await memory.get_conversation("after")).messages[0].id == again.id


async def _purge_by(route: str, memory: MemoryBackend, url: str) -> None:
    if route == "method":
        purged = await _store(memory).purge()
        assert {"conversations", "messages", "entities", "mentions"} <= set(purged.tables)
        assert "pg_statistic" in purged.tables  # the test server's role is a superuser
        assert purged.held_back == [] and purged.not_reached == []
    else:
        command = ["postgres-schema", url, "--purge"]
        assert await anyio.to_thread.run_sync(cli_main, command) == 0


@pytest.mark.parametrize(
    ("multi_tenant", "route"),
    [(False, "method"), (True, "method"), (False, "command")],
    ids=["single-tenant", "multi-tenant", "command"],
)
async def test_the_purge_leaves_no_forgotten_word_in_any_file(
    postgres_server: PostgresHandle, multi_tenant: bool, route: str
) -> None:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    tag = _tag()
    url = _url(postgres_server, schema)
    async with open_backend(url, multi_tenant=multi_tenant) as memory:
        gone = _text_markers(await _write_all(memory, f"userzed{tag}", f"A{tag}"))
        kept = _text_markers(await _write_all(memory, f"userkay{tag}", f"B{tag}"))
        _analyze(postgres_server.url, schema)
        words = [m for m in gone if m.startswith("contentword")]
        before = _in_files(postgres_server.url, words)
        assert set(words) <= set(before.get("messages", [])), "the scan reads the heap"
        assert set(words) <= set(before.get("messages_words", [])), "... and the GIN index"
        liked = [f"prefwordA{tag}"]
        before = _in_files(postgres_server.url, liked)
        assert {"preferences", "preferences_words"} <= set(before), "long-term: both"
        await memory.forget_user(f"userzed{tag}")
        await _purge_by(route, memory, url)
        assert _in_files(postgres_server.url, gone) == {}
        left = _in_files(postgres_server.url, kept)
        assert set(kept) <= {m for hits in left.values() for m in hits}
        scope = {"user_identifier": f"userkay{tag}"} if multi_tenant else {}
        assert len(await memory.search_messages(f"contentwordB{tag}0", **scope)) == 1


async def test_a_transaction_older_than_the_purge_is_named_and_fails_the_command(
    postgres_server: PostgresHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    tag = _tag()
    url = _url(postgres_server, schema)
    async with open_backend(url) as memory:
        gone = _text_markers(await write_user(memory, f"userzed{tag}", f"A{tag}"))
        await write_user(memory, f"userkay{tag}", f"B{tag}")
        with psycopg.connect(postgres_server.url) as reader:
            reader.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            # a snapshot, not a lock: a reader of the table itself would make VACUUM FULL
            # wait for its end
            reader.execute("SELECT 1").fetchone()
            pid = reader.info.backend_pid
            await memory.forget_user(f"userzed{tag}")
            purged = await _store(memory).purge()
            assert any(f"session {pid} " in held for held in purged.held_back)
            assert _in_files(postgres_server.url, gone), "its snapshot kept the rows"
            command = ["postgres-schema", url, "--purge"]
            assert await anyio.to_thread.run_sync(cli_main, command) == 1
            out, err = capsys.readouterr()
            assert f"-- schema {schema}: rewritten" in out
            assert f"session {pid} " in err and "run the purge again" in err
        assert await anyio.to_thread.run_sync(cli_main, command) == 0
        assert "rewritten" in capsys.readouterr().out
        assert _in_files(postgres_server.url, gone) == {}


async def test_forgetting_the_last_user_of_a_pgvector_store_drops_its_statistics(
    pgvector_server: PostgresHandle,
) -> None:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    tag = _tag()
    url = _url(pgvector_server, schema)
    async with open_backend(url, embedder=HashingEmbedder()) as memory:
        assert _store(memory).vector_engine == "pgvector"
        gone = await write_user(memory, f"userzed{tag}", f"A{tag}")
        _analyze(pgvector_server.url, schema)
        report = await memory.forget_user(f"userzed{tag}")
    assert _in_statistics(pgvector_server.url, schema, gone) == {}
    with psycopg.connect(pgvector_server.url) as conn:
        left = conn.execute(
            "SELECT attname FROM pg_stats WHERE schemaname = %s AND tablename = 'messages'",
            (schema,),
        ).fetchall()
        modern = conn.info.server_version >= 180000
    if modern:
        assert left == [] and report.not_reached == []
    else:  # the column the vector column is computed from keeps its statistics
        assert [row[0] for row in left] == ["embedding"]
        [sentence] = report.not_reached
        assert f"of {schema}.messages.embedding, left by the last rows" in sentence
        assert "a generated column is computed from" in sentence


async def test_a_column_a_generated_column_uses_is_named_before_postgresql_18(
    postgres_server: PostgresHandle,
) -> None:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(
            f"CREATE TABLE {schema}.t (a text, b float8[], "
            "g float8 GENERATED ALWAYS AS (b[1]) STORED)"
        )
        conn.execute(f"INSERT INTO {schema}.t (a, b) VALUES ('secret-a', '{{1,2}}')")
        conn.execute(f"ANALYZE {schema}.t")
        conn.execute(f"DELETE FROM {schema}.t")
        modern = conn.info.server_version >= 180000
    from memory_core.backends.postgres import residue  # here: the module is new

    async with await psycopg.AsyncConnection.connect(postgres_server.url) as conn:
        not_reached = await residue.refresh_statistics(
            lambda work: _in_transaction(conn, schema, work), schema
        )
    with psycopg.connect(postgres_server.url) as conn:
        left = conn.execute(
            "SELECT attname FROM pg_stats WHERE schemaname = %s", (schema,)
        ).fetchall()
    if modern:
        assert left == [] and not_reached == []
    else:
        assert [row[0] for row in left] == ["b"]  # a and g: dropped
        [sentence] = not_reached
        assert f"of {schema}.t.b, left by the last rows" in sentence
        assert "a generated column is computed from" in sentence


async def _in_transaction(
    conn: psycopg.AsyncConnection[Any], schema: str, work: Callable[[Tx], Awaitable[Any]]
) -> Any:
    async with conn.transaction():
        return await work(Tx(conn.cursor(), schema))


async def test_a_role_that_does_not_own_the_tables_is_told_and_rewrites_nothing(
    postgres_server: PostgresHandle,
) -> None:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    role = f"r_{uuid.uuid4().hex[:12]}"
    tag = _tag()
    async with open_backend(_url(postgres_server, schema)) as memory:
        gone = await write_user(memory, f"userzed{tag}", f"A{tag}")
        await write_user(memory, f"userkay{tag}", f"B{tag}")
    _analyze(postgres_server.url, schema)
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        conn.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA {schema} TO {role}")
        files = dict(
            conn.execute(
                "SELECT relname, relfilenode FROM pg_class WHERE relnamespace = %s::regnamespace",
                (schema,),
            ).fetchall()
        )
    url = _url(postgres_server, schema).replace("postgres@", f"{role}@", 1)
    async with open_backend(url) as memory:
        report = await memory.forget_user(f"userzed{tag}")
        with pytest.raises(ConfigurationError, match=f"may not rewrite {schema}.conversations"):
            await _store(memory).purge()
    [sentence] = report.not_reached
    assert f"(pg_stats) of {schema}.conversations, {schema}.entities" in sentence
    assert "memory-core postgres-schema URL --purge" in sentence
    assert _in_statistics(postgres_server.url, schema, gone), "not analyzed: still there"
    with psycopg.connect(postgres_server.url) as conn:
        after = dict(
            conn.execute(
                "SELECT relname, relfilenode FROM pg_class WHERE relnamespace = %s::regnamespace",
                (schema,),
            ).fetchall()
        )
    assert after == files  # no table or index rewritten


async def test_an_owner_that_is_no_superuser_purges_and_is_told_about_pg_statistic(
    postgres_server: PostgresHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    role = f"o_{uuid.uuid4().hex[:12]}"
    tag = _tag()
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT CREATE ON DATABASE {conn.info.dbname} TO {role}")
    url = _url(postgres_server, schema).replace("postgres@", f"{role}@", 1)
    async with open_backend(url) as memory:  # creates the schema: the role owns it all
        gone = _text_markers(await write_user(memory, f"userzed{tag}", f"A{tag}"))
        await write_user(memory, f"userkay{tag}", f"B{tag}")
        _analyze(postgres_server.url, schema)
        report = await memory.forget_user(f"userzed{tag}")
        purged = await _store(memory).purge()
    assert report.not_reached == []
    assert "pg_statistic" not in purged.tables and "messages" in purged.tables
    assert purged.not_reached == [residue_sentence()]
    found = _in_files(postgres_server.url, gone)
    assert set(found) <= {"pg_statistic"}, "at most the catalog's old row versions are left"
    command = ["postgres-schema", url, "--purge"]
    assert await anyio.to_thread.run_sync(cli_main, command) == 0
    assert f"-- not reached: {residue_sentence()}" in capsys.readouterr().out
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute("VACUUM FULL pg_catalog.pg_statistic")  # what the sentence asks for
    assert _in_files(postgres_server.url, gone) == {}


def residue_sentence() -> str:
    from memory_core.backends.postgres import residue  # here: the module is new

    return residue.STATISTICS_CATALOG_NOT_REACHED


async def test_an_emptied_table_held_by_another_transaction_is_named_and_done_next_time(
    postgres_server: PostgresHandle,
) -> None:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    tag = _tag()
    async with open_backend(_url(postgres_server, schema)) as memory:
        gone = await write_user(memory, f"userzed{tag}", f"A{tag}")
        _analyze(postgres_server.url, schema)
        with psycopg.connect(postgres_server.url) as holder:
            if holder.info.server_version >= 180000:
                pytest.skip("PostgreSQL 18 drops statistics without that lock")
            holder.execute(f"LOCK TABLE {schema}.entities IN ACCESS SHARE MODE")
            report = await memory.forget_user(f"userzed{tag}")
        named = " ".join(report.not_reached)
        assert f"(pg_stats) of {schema}.entities, left by the last rows" in named
        assert all("run forget_user again" in sentence for sentence in report.not_reached)
        left = _in_statistics(postgres_server.url, schema, gone)
        assert left and {name.split(".")[0] for name in left} <= {"entities", "mentions"}
        assert (await memory.forget_user(f"userzed{tag}")).not_reached == []
        assert _in_statistics(postgres_server.url, schema, gone) == {}
