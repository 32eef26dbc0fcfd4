"""pgvector: when the store uses it, how a user sees which path is active, and that both
paths (pgvector in SQL, the Python fallback) return the same hits with the same scores.

``pgvector_server`` has the extension available; ``postgres_server`` (Debian's build)
does not."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import psycopg
import pytest

from memory_core import HashingEmbedder, MemoryBackend, open_backend
from memory_core.scoring import TOLERANCE
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = pytest.mark.anyio

CORPUS = [
    "the train to porto leaves at nine",
    "book a table for dinner in porto",
    "dinner reservations are confirmed",
    "the weather is sunny today",
    "porto wine tasting tour on friday",
    "send the invoice to the accountant",
    "a table by the window please",
]


def _url(server: PostgresHandle, schema: str, database: str | None = None) -> str:
    url = server.url if database is None else server.url.rsplit("/", 1)[0] + f"/{database}"
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}schema={schema}"


def _schema() -> str:
    return f"v_{uuid.uuid4().hex[:12]}"


def _engine(backend: MemoryBackend) -> str:
    engine: str = backend.store.vector_engine  # type: ignore[attr-defined]
    return engine


async def _hits(backend: MemoryBackend, query: str, **options: Any) -> list[tuple[str, float]]:
    found = await backend.search_messages(query, limit=20, **options)
    return [(h.content, h.score or 0.0) for h in found]


async def _fill(backend: MemoryBackend) -> None:
    for n, text in enumerate(CORPUS):
        await backend.add_message(f"s{n % 2}", "user", text)
    await backend.add_messages_batch("s2", [{"role": "user", "content": t} for t in CORPUS[:3]])


async def test_both_paths_find_the_same_hits_with_the_same_scores(
    pgvector_server: PostgresHandle, postgres_server: PostgresHandle
) -> None:
    embedder = HashingEmbedder(dimensions=32)
    vec = open_backend(_url(pgvector_server, _schema()), embedder=embedder)
    plain = open_backend(_url(postgres_server, _schema()), embedder=embedder)
    reference = open_backend("memory://", embedder=embedder)
    async with vec, plain, reference:
        assert (_engine(vec), _engine(plain)) == ("pgvector", "python")
        assert vec.describe().endswith("vector search: pgvector)")
        assert plain.describe().endswith("vector search: python)")
        for backend in (vec, plain, reference):
            await _fill(backend)
        cases: list[tuple[str, dict[str, Any]]] = [
            ("porto dinner", {}),
            ("a table please", {"threshold": 0.3}),
            ("invoice", {"session_id": "s1"}),
            ("nothing shared here", {}),
        ]
        for query, options in cases:
            expected = await _hits(reference, query, **options)
            for backend in (vec, plain):
                got = await _hits(backend, query, **options)
                assert sorted(c for c, _ in got) == sorted(c for c, _ in expected), query
                scores = dict(got)
                for content, score in expected:
                    assert abs(scores[content] - score) <= TOLERANCE, (query, content)


async def test_every_writer_fills_the_vector_column(pgvector_server: PostgresHandle) -> None:
    schema = _schema()
    async with open_backend(_url(pgvector_server, schema), embedder=HashingEmbedder(16)) as b:
        await b.add_message("s", "user", "one message alone")
        await b.add_messages_batch("s", [{"role": "user", "content": "a batch of one"}])
        await b.add_message("s", "user", "no vector", generate_embedding=False)
    with psycopg.connect(pgvector_server.url) as conn:
        rows = conn.execute(
            f"SELECT content, embedding IS NOT NULL, cardinality(embedding_vector::real[]) "
            f"FROM {schema}.messages ORDER BY seq"
        ).fetchall()
    assert rows == [
        ("one message alone", True, 16),
        ("a batch of one", True, 16),
        ("no vector", False, None),
    ]


async def test_vectors_of_other_dimensions_are_skipped_not_an_error(
    pgvector_server: PostgresHandle, postgres_server: PostgresHandle
) -> None:
    for server in (pgvector_server, postgres_server):
        url = _url(server, _schema())
        async with open_backend(url, embedder=HashingEmbedder(16)) as old:
            await old.add_message("s", "user", "porto dinner by the old model")
        async with open_backend(url, embedder=HashingEmbedder(24)) as new:
            await new.add_message("s", "user", "porto dinner by the new model")
            hits = await _hits(new, "dinner porto")
            text_only = await new.search_messages("zzz porto", limit=5)
        # the old vector is not comparable: both are found by text, the new one by vector
        assert {c for c, _ in hits} == {
            "porto dinner by the old model",
            "porto dinner by the new model",
        }
        assert len(text_only) == 2


async def test_a_role_that_may_not_create_the_extension_keeps_the_fallback(
    pgvector_server: PostgresHandle,
) -> None:
    role, database = f"r_{uuid.uuid4().hex[:10]}", f"d_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pgvector_server.url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"CREATE DATABASE {database} OWNER {role}")
    host = pgvector_server.url.split("@", 1)[1].rsplit("/", 1)[0]
    as_role = PostgresHandle(url=f"postgresql://{role}@{host}/{database}")
    as_admin = PostgresHandle(url=pgvector_server.url.rsplit("/", 1)[0] + f"/{database}")
    schema = _schema()
    embedder = HashingEmbedder(16)
    async with open_backend(_url(as_role, schema), embedder=embedder) as backend:
        assert _engine(backend) == "python"
        await backend.add_message("s", "user", "porto dinner")
        [hit] = await backend.search_messages("dinner in porto")
        assert hit.content == "porto dinner"
    # a superuser's connect creates the extension and the column, filled for old rows too
    async with open_backend(_url(as_admin, schema), embedder=embedder) as backend:
        assert _engine(backend) == "pgvector"
    async with open_backend(_url(as_role, schema), embedder=embedder) as backend:
        assert _engine(backend) == "pgvector"
        [hit] = await backend.search_messages("dinner in porto")
        assert hit.content == "porto dinner"
    with psycopg.connect(as_admin.url) as conn:
        [(where,)] = conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
            "ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
        ).fetchall()
    assert where == schema, "the extension was created outside the store's schema"


async def test_the_printed_ddl_makes_the_store_a_connect_would(
    pgvector_server: PostgresHandle,
    postgres_server: PostgresHandle,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``memory-core postgres-schema`` prints the pgvector column too: applied by hand, it
    gives the store a connect would make (pgvector where available, else the fallback),
    and the command then finds nothing left to apply."""
    from memory_core.cli import main as cli_main

    for server, engine in ((pgvector_server, "pgvector"), (postgres_server, "python")):
        schema = _schema()
        assert cli_main(["postgres-schema", "--schema", schema]) == 0
        ddl = capsys.readouterr().out
        assert "embedding_vector" in ddl
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute(ddl.encode())
        assert (
            await anyio.to_thread.run_sync(cli_main, ["postgres-schema", _url(server, schema)]) == 0
        )
        assert "nothing to apply" in capsys.readouterr().out, engine
        async with open_backend(_url(server, schema)) as backend:
            assert _engine(backend) == engine


async def test_the_command_offers_the_column_a_store_lacks(
    pgvector_server: PostgresHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store whose migrations were applied without the pgvector part: the command
    prints only that part, and applying it switches the store to pgvector."""
    from memory_core.backends.postgres.schema import migration_sql
    from memory_core.cli import main as cli_main

    schema = _schema()
    with psycopg.connect(pgvector_server.url, autocommit=True) as conn:
        conn.execute(migration_sql(schema).encode())
    assert (
        await anyio.to_thread.run_sync(cli_main, ["postgres-schema", _url(pgvector_server, schema)])
        == 0
    )
    ddl = capsys.readouterr().out
    assert "embedding_vector" in ddl and "CREATE TABLE" not in ddl
    with psycopg.connect(pgvector_server.url, autocommit=True) as conn:
        conn.execute(ddl.encode())
    async with open_backend(_url(pgvector_server, schema)) as backend:
        assert _engine(backend) == "pgvector"
