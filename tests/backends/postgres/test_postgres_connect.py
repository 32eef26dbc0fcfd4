"""The PostgreSQL front door (issue 49): URLs that leave things to the ``PG*`` variables,
URL options checked by name, and connection errors that say why.

A failed connection names the target (host, port, database, user) and libpq's reason in
one line, never a secret, with psycopg's exception as ``__cause__``. A wrong password is
tried on a private server of this module that asks for one (scram-sha-256).
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from memory_core import (
    AuthenticationError,
    ConfigurationError,
    TransportError,
    open_backend,
)
from memory_core.backends.postgres.schema import migration_sql
from memory_core.cli import main as cli_main
from memory_core_dev.postgres_server import PostgresHandle, PostgresServer, private_server

pytestmark = pytest.mark.anyio

SECRET = "canary-pw-49x"
PG_VARIABLES = ("PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE", "PGSERVICE")


def _schema() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def no_pg_variables(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A test that sets PG* variables starts from none."""
    for name in PG_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _server_in_variables(server: PostgresHandle, monkeypatch: pytest.MonkeyPatch) -> str:
    """Put the server's host, port, user and password into PG*; its database name."""
    parts = conninfo_to_dict(server.url)
    monkeypatch.setenv("PGHOST", str(parts["host"]))
    monkeypatch.setenv("PGPORT", str(parts["port"]))
    monkeypatch.setenv("PGUSER", str(parts["user"]))
    if parts.get("password"):
        monkeypatch.setenv("PGPASSWORD", str(parts["password"]))
    return str(parts["dbname"])


async def _round_trip(url: str) -> None:
    async with open_backend(url) as backend:
        stored = await backend.add_message("s", "user", "through the PG variables")
        read = await backend.get_conversation(session_id="s")
    assert [m.id for m in read.messages] == [stored.id]


async def test_a_url_without_a_host_takes_everything_from_the_pg_variables(
    postgres_server: PostgresHandle, no_pg_variables: pytest.MonkeyPatch
) -> None:
    """It was rebuilt into "postgresql:", which psycopg refused (ProgrammingError)."""
    database = _server_in_variables(postgres_server, no_pg_variables)
    no_pg_variables.setenv("PGDATABASE", database)
    await _round_trip(f"postgresql://?schema={_schema()}")
    await _round_trip(f"postgres://?schema={_schema()}")


async def test_a_url_with_only_the_database_takes_the_host_from_pghost(
    postgres_server: PostgresHandle, no_pg_variables: pytest.MonkeyPatch
) -> None:
    """It was rebuilt into "postgresql:/dbname", which psycopg refused."""
    database = _server_in_variables(postgres_server, no_pg_variables)
    await _round_trip(f"postgresql:///{database}?schema={_schema()}")


async def test_url_options_reach_libpq_as_written(postgres_server: PostgresHandle) -> None:
    """libpq decodes %20 into a space and keeps a +: it was re-encoded, "a+b c" became
    "a+b+c"."""
    tag = uuid.uuid4().hex[:8]
    url = f"{postgres_server.url}?schema={_schema()}&application_name=mc+49%20{tag}"
    name = f"mc+49 {tag}"
    async with open_backend(url) as backend:
        await backend.add_message("s", "user", "hello")
        with psycopg.connect(postgres_server.url) as admin:
            rows = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
            ).fetchall()
    assert rows[0][0] >= 1


@pytest.mark.parametrize(
    ("option", "named"),
    [
        ("max_size", "keyword argument"),  # the backend's option, not libpq's
        ("sslmod", "did you mean 'sslmode'?"),  # a typo of a real one
        ("xyzzy", "sslmode, sslnegotiation"),  # nothing close: the valid ones are listed
    ],
)
def test_an_unknown_url_option_is_named(option: str, named: str) -> None:
    """It was "the server failed the operation (ProgrammingError)", at connect."""
    url = f"postgresql://alice:{SECRET}@127.0.0.1:1/db?{option}=3"
    with pytest.raises(ConfigurationError) as caught:
        open_backend(url)
    assert repr(option) in str(caught.value)
    assert named in str(caught.value)
    assert SECRET not in str(caught.value) and SECRET not in repr(caught.value)


def test_a_url_libpq_cannot_parse_is_a_configuration_error_without_its_secret() -> None:
    with pytest.raises(ConfigurationError) as caught:
        open_backend(f"postgresql://alice:{SECRET}%zz@127.0.0.1:1/db")
    assert "percent-encoded" in str(caught.value)
    assert SECRET not in str(caught.value) and caught.value.__cause__ is None


async def test_a_value_libpq_refuses_is_a_configuration_error_naming_the_option(
    postgres_server: PostgresHandle,
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        async with open_backend(f"{postgres_server.url}?sslmode=bogus", connect_timeout=2):
            pass
    assert "sslmode" in str(caught.value) and "bogus" in str(caught.value)
    assert not caught.value.retryable


async def test_a_role_with_grants_only_uses_a_schema_an_administrator_applied(
    postgres_server: PostgresHandle,
) -> None:
    """The least-privilege set-up docs/postgres.md gives: without CREATE on the database
    the first connect is refused, saying which privilege; after the DDL (what
    postgres-schema --apply runs) and the grants, the role reads and writes."""
    schema, role = _schema(), f"app_{uuid.uuid4().hex[:10]}"
    parts = conninfo_to_dict(postgres_server.url)
    url = f"postgresql://{role}@{parts['host']}:{parts['port']}/{parts['dbname']}?schema={schema}"
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        try:
            with pytest.raises(AuthenticationError, match="permission denied for database"):
                async with open_backend(url, connect_timeout=2):
                    pass
            admin.execute(migration_sql(schema).encode())  # what postgres-schema --apply runs
            admin.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
            admin.execute(
                f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}"
            )
            admin.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}")
            await _round_trip(url)
        finally:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


class closed_port:
    """A port on 127.0.0.1 with nothing listening (bound, never listening, while used)."""

    def __enter__(self) -> int:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        port: int = self._sock.getsockname()[1]
        return port

    def __exit__(self, *exc: object) -> None:
        self._sock.close()


def _assert_secret_hidden(exc: BaseException) -> None:
    assert SECRET not in str(exc) and SECRET not in repr(exc)
    assert "\n" not in str(exc)


async def test_a_server_that_is_down_is_named_with_the_reason(
    no_pg_variables: pytest.MonkeyPatch,
) -> None:
    """It was "postgres: the connection failed (OperationalError)", cause dropped."""
    with closed_port() as port, pytest.raises(TransportError) as caught:
        url = f"postgresql://alice:{SECRET}@127.0.0.1:{port}/agents?sslpassword={SECRET}"
        async with open_backend(url, connect_timeout=2, pool_timeout=2):
            pass
    text = str(caught.value)
    assert f"127.0.0.1:{port}" in text and "Connection refused" in text
    assert "'agents'" in text and "'alice'" in text
    assert caught.value.retryable
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)
    _assert_secret_hidden(caught.value)


async def test_a_database_that_does_not_exist_names_the_target_and_keeps_the_cause(
    postgres_server: PostgresHandle,
) -> None:
    parts = conninfo_to_dict(postgres_server.url)
    url = f"postgresql://{parts['user']}@{parts['host']}:{parts['port']}/no_such_db_49"
    with pytest.raises(ConfigurationError) as caught:
        async with open_backend(url, connect_timeout=2):
            pass
    text = str(caught.value)
    assert f"{parts['host']}:{parts['port']}" in text and "'no_such_db_49'" in text
    assert not caught.value.retryable
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)


async def test_a_role_that_does_not_exist_is_a_configuration_error(
    postgres_server: PostgresHandle,
) -> None:
    """It was a retryable TransportError (the shared server trusts every login, so the
    server says the role is missing)."""
    parts = conninfo_to_dict(postgres_server.url)
    target = f"{parts['host']}:{parts['port']}"
    url = f"postgresql://no_such_role_49:{SECRET}@{target}/{parts['dbname']}"
    with pytest.raises(ConfigurationError) as caught:
        async with open_backend(url, connect_timeout=2):
            pass
    text = str(caught.value)
    assert target in text and "'no_such_role_49'" in text and "PGUSER" in text
    assert not caught.value.retryable
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)
    _assert_secret_hidden(caught.value)


def test_the_command_line_prints_one_line_that_says_why(
    capsys: pytest.CaptureFixture[str], no_pg_variables: pytest.MonkeyPatch
) -> None:
    with closed_port() as port:
        url = f"postgresql://alice:{SECRET}@127.0.0.1:{port}/agents"
        assert cli_main(["demo", url]) == 1
        shown = capsys.readouterr()
        assert cli_main(["--debug", "demo", url]) == 1
        debug = capsys.readouterr()
    lines = shown.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memory-core: error: postgres backend at")
    assert f"127.0.0.1:{port}" in lines[0] and "Connection refused" in lines[0]
    assert "direct cause" in debug.err and "OperationalError" in debug.err
    assert SECRET not in shown.out + shown.err + debug.out + debug.err


@pytest.fixture(scope="module")
def password_server() -> Iterator[PostgresServer]:
    with private_server(password=SECRET) as running:
        yield running


def _without_password(server: PostgresServer) -> str:
    return server.url.replace(f":{SECRET}@", "@")


async def _refused(url: str) -> AuthenticationError:
    with pytest.raises(AuthenticationError) as caught:
        async with open_backend(url, connect_timeout=5, pool_timeout=5):
            pass
    _assert_secret_hidden(caught.value)
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)
    return caught.value


async def test_a_wrong_password_names_the_user_the_target_and_where_it_came_from(
    password_server: PostgresServer, no_pg_variables: pytest.MonkeyPatch
) -> None:
    """It said only "the server refused the credentials"."""
    target = f"127.0.0.1:{conninfo_to_dict(password_server.url)['port']}"
    in_url = await _refused(password_server.url.replace(SECRET, "not-it"))
    assert target in str(in_url) and "'postgres'" in str(in_url)
    assert "the password is the URL's" in str(in_url)
    no_pg_variables.setenv("PGPASSWORD", "not-it-either")
    from_env = await _refused(_without_password(password_server))
    assert target in str(from_env) and "PGPASSWORD" in str(from_env)
    assert "not-it-either" not in str(from_env)
    no_pg_variables.delenv("PGPASSWORD")
    no_pg_variables.setenv("PGPASSFILE", "/nonexistent/pgpass")
    missing = await _refused(_without_password(password_server))
    assert "no password was given" in str(missing) and "PGPASSWORD" in str(missing)


async def test_the_right_password_from_pgpassword_connects(
    password_server: PostgresServer, no_pg_variables: pytest.MonkeyPatch
) -> None:
    no_pg_variables.setenv("PGPASSWORD", SECRET)
    await _round_trip(f"{_without_password(password_server)}?schema={_schema()}")
