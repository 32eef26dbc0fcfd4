"""The PostgreSQL backend beyond the conformance suite: schema placement, migrations under
the advisory lock, options, error translation and connection replacement, on the real
PostgreSQL of the run (``postgres_server``)."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import anyio
import psycopg
import pytest

from memory_core import (
    ConfigurationError,
    MemoryBackend,
    MemoryCoreError,
    TransportError,
    open_backend,
)
from memory_core.backends.postgres.schema import LATEST, migration_sql
from memory_core.cli import main as cli_main
from memory_core.transfer import export_memory
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = pytest.mark.anyio


def _schema() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


def _url(server: PostgresHandle, schema: str) -> str:
    separator = "&" if "?" in server.url else "?"
    return f"{server.url}{separator}schema={schema}"


def _objects(url: str, where: str) -> set[tuple[str, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT n.nspname, c.relname FROM pg_class c "
            f"JOIN pg_namespace n ON n.oid = c.relnamespace WHERE {where}"
        ).fetchall()
    return {(r[0], r[1]) for r in rows}


@pytest.fixture
async def store(postgres_server: PostgresHandle) -> AsyncIterator[MemoryBackend]:
    async with open_backend(_url(postgres_server, _schema())) as backend:
        yield backend


async def test_postgres_and_postgresql_schemes_open_the_store(
    postgres_server: PostgresHandle,
) -> None:
    schema = _schema()
    short = _url(postgres_server, schema).replace("postgresql://", "postgres://", 1)
    async with open_backend(short) as backend:
        stored = await backend.add_message("one", "user", "hello")
        assert backend.name == "postgres"
    async with open_backend(_url(postgres_server, schema)) as again:
        read = await again.get_conversation(session_id="one")
    assert [m.id for m in read.messages] == [stored.id]


async def test_every_object_is_created_inside_the_schema(postgres_server: PostgresHandle) -> None:
    schema = _schema()
    outside = f"n.nspname <> '{schema}' AND n.nspname NOT IN ('pg_catalog', 'pg_toast', "
    outside += "'information_schema') AND n.nspname NOT LIKE 'pg_temp%%'"
    before = _objects(postgres_server.url, outside)
    async with open_backend(_url(postgres_server, schema)) as backend:
        await backend.add_message("s", "user", "words to index")
    inside = _objects(postgres_server.url, f"n.nspname = '{schema}'")
    assert {"conversations", "messages", "entities", "mentions", "schema_migrations"} <= {
        name for _, name in inside
    }
    assert "messages_words" in {name for _, name in inside}
    created_outside = _objects(postgres_server.url, outside) - before
    assert not {o for o in created_outside if not o[0].startswith(("t_", "conformance_"))}


async def test_processes_starting_together_migrate_once(postgres_server: PostgresHandle) -> None:
    url = _url(postgres_server, _schema())
    backends = [open_backend(url) for _ in range(4)]
    async with anyio.create_task_group() as group:
        for backend in backends:
            group.start_soon(backend.connect)
    try:
        for index, backend in enumerate(backends):
            await backend.add_message("shared", "user", f"m{index}")
        read = await backends[0].get_conversation(session_id="shared")
        assert [m.content for m in read.messages] == ["m0", "m1", "m2", "m3"]
    finally:
        for backend in backends:
            await backend.close()
    with psycopg.connect(postgres_server.url) as conn:
        schema = url.rsplit("schema=", 1)[1]
        versions = conn.execute(f"SELECT version FROM {schema}.schema_migrations").fetchall()
    assert [v[0] for v in versions] == list(range(1, LATEST + 1))


def test_migration_sql_names_only_the_schema() -> None:
    text = migration_sql("team_memory")
    assert "CREATE SCHEMA IF NOT EXISTS team_memory;" in text
    assert "CREATE TABLE team_memory.messages" in text
    assert "public." not in text


@pytest.mark.parametrize("bad", ["Bad", "1abc", "a-b", "x; DROP TABLE y", "", "a" * 64])
def test_a_schema_that_is_not_a_plain_identifier_is_refused(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="schema"):
        open_backend("postgresql://u@127.0.0.1/db", schema=bad)


@pytest.mark.parametrize(
    ("option", "value"),
    [("max_size", 0), ("min_size", -1), ("pool_timeout", "1"), ("statement_timeout", -1)],
)
def test_bad_pool_options_are_refused_by_name(option: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=option):
        open_backend("postgresql://u@127.0.0.1/db", **{option: value})


def test_the_password_never_shows(postgres_server: PostgresHandle) -> None:
    backend = open_backend("postgresql://alice:s3cret-pw@127.0.0.1:1/db")
    assert "s3cret-pw" not in repr(backend)
    assert "s3cret-pw" not in backend.describe()


@pytest.mark.parametrize(
    "parameter",
    ["password", "sslpassword", "oauth_client_secret", "scram_client_key", "scram_server_key"],
)
def test_no_secret_connection_parameter_shows(parameter: str) -> None:
    backend = open_backend(
        f"postgresql://alice@127.0.0.1:1/db?{parameter}=canary-7q&sslmode=prefer"
    )
    shown = [repr(backend), backend.describe(), repr(backend.store.settings)]  # type: ignore[attr-defined]
    assert not [text for text in shown if "canary-7q" in text]
    assert f"{parameter}=" in backend.describe() and "sslmode=prefer" in backend.describe()


async def test_an_sslpassword_stays_out_of_archive_headers(
    postgres_server: PostgresHandle, tmp_path: Path
) -> None:
    url = f"{_url(postgres_server, _schema())}&sslpassword=canary-archive"
    async with open_backend(url) as backend:
        await backend.add_message("old", "user", "kept in the archives")
        await export_memory(backend, tmp_path / "export.jsonl")
        expired = await backend.expire_conversations(
            timedelta(microseconds=1), archive=tmp_path / "expired.jsonl"
        )
    assert expired.conversations == 1
    for name in ("export.jsonl", "expired.jsonl"):
        text = (tmp_path / name).read_text()
        header = json.loads(text.splitlines()[0])
        assert "sslpassword=" in header["source"]["location"]
        assert "canary-archive" not in text


async def test_an_unreachable_server_is_a_typed_error() -> None:
    with socket_port() as port:
        backend = open_backend(
            f"postgresql://u@127.0.0.1:{port}/db", connect_timeout=1, pool_timeout=1
        )
        with pytest.raises(TransportError) as caught:
            await backend.connect()
    assert caught.value.retryable
    assert not isinstance(caught.value, psycopg.Error)


async def test_a_database_that_does_not_exist_is_a_configuration_error(
    postgres_server: PostgresHandle,
) -> None:
    """Issue 48: it was a retryable TransportError, so callers retried a wrong URL."""
    parts = urlsplit(postgres_server.url)
    url = urlunsplit(parts._replace(path="/no_such_database_48"))
    with pytest.raises(ConfigurationError) as caught:
        async with open_backend(url, connect_timeout=2):
            pass
    assert not caught.value.retryable
    assert "'no_such_database_48'" in str(caught.value)


def _kill_clients(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        killed = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> "
            "pg_backend_pid() AND datname = current_database() AND backend_type = 'client backend'"
        ).fetchall()
    assert killed and all(row[0] for row in killed)


async def test_a_killed_connection_is_replaced_for_the_next_call(
    postgres_server: PostgresHandle, store: MemoryBackend
) -> None:
    await store.add_message("s", "user", "before")
    _kill_clients(postgres_server.url)
    read = await store.get_conversation(session_id="s")
    assert [m.content for m in read.messages] == ["before"]
    _kill_clients(postgres_server.url)
    written = await store.add_message("s", "user", "after")
    assert written.content == "after"
    read = await store.get_conversation(session_id="s")
    assert [m.content for m in read.messages] == ["before", "after"]


async def test_a_statement_timeout_is_a_typed_error_and_writes_nothing(
    postgres_server: PostgresHandle,
) -> None:
    url = _url(postgres_server, _schema())
    async with open_backend(url) as backend:
        await backend.add_message("s", "user", "kept")
    async with open_backend(url, statement_timeout=0.2) as slow:
        with psycopg.connect(postgres_server.url, autocommit=True) as locker:
            schema = url.rsplit("schema=", 1)[1]
            with locker.transaction():
                locker.execute(f"LOCK TABLE {schema}.conversations IN ACCESS EXCLUSIVE MODE")
                with pytest.raises(MemoryCoreError) as caught:
                    await slow.add_message("s", "user", "lost")
        assert isinstance(caught.value, TransportError)
        assert caught.value.retryable and not caught.value.maybe_applied
    # read without the 0.2 s limit: on a loaded machine a read may take longer than that
    async with open_backend(url) as backend:
        read = await backend.get_conversation(session_id="s")
    assert [m.content for m in read.messages] == ["kept"]


class socket_port:
    """A port on 127.0.0.1 with nothing listening (bound, never listening, while used)."""

    def __enter__(self) -> int:
        import socket

        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        port: int = self._sock.getsockname()[1]
        return port

    def __exit__(self, *exc: object) -> None:
        self._sock.close()


def test_the_command_prints_then_applies_what_a_database_lacks(
    postgres_server: PostgresHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = _schema()
    url = _url(postgres_server, schema)
    assert cli_main(["postgres-schema", url]) == 0
    assert f"CREATE TABLE {schema}.messages" in capsys.readouterr().out
    assert cli_main(["postgres-schema", url, "--apply"]) == 0
    assert f"version 0 -> {LATEST}" in capsys.readouterr().out
    assert (schema, "messages") in _objects(postgres_server.url, f"n.nspname = '{schema}'")
    assert cli_main(["postgres-schema", url]) == 0
    assert "nothing to apply" in capsys.readouterr().out


def test_the_command_refuses_apply_without_a_database(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["postgres-schema", "--apply"]) == 1
    assert "--apply needs the database URL" in capsys.readouterr().err
