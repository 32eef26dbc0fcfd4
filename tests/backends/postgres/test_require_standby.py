"""``require_standby``: a write is acknowledged only by a server whose commits wait for a
synchronous standby (issue 52; :mod:`memory_core.backends.postgres.standby`).

The run's single PostgreSQL server has no standby: with the option, a write is stored
but reported in doubt. On the pg_auto_failover pair (synchronous), writes are
acknowledged; with ``synchronous_commit=local`` for the session they are in doubt again.
The failover tests run their switchovers with the option on.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest
from psycopg import sql

from memory_core import ConfigurationError, TransportError, TurnMemory, open_backend
from memory_core.backends.postgres.config import parse_settings
from memory_core_dev.pg_ha import HaFormation
from memory_core_dev.postgres_schemas import schema_url
from memory_core_dev.postgres_server import PostgresHandle

OPTIONS: dict[str, Any] = {
    "schema": None,
    "min_size": 0,
    "max_size": 2,
    "pool_timeout": 5.0,
    "connect_timeout": 5.0,
    "statement_timeout": None,
    "prepared_statements": True,
}


def _schema_url(url: str) -> str:
    return schema_url(url, "rs")


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("FALSE", False)])
def test_the_url_may_say_require_standby(value: str, expected: bool) -> None:
    url = f"postgresql://h/db?require_standby={value}&sslmode=prefer"
    settings = parse_settings(url, **OPTIONS)
    assert settings.require_standby is expected
    assert "require_standby" not in settings.conninfo  # ours: libpq never sees it
    assert "sslmode=prefer" in settings.conninfo


def test_it_is_off_by_default_and_the_keyword_wins_over_the_url() -> None:
    assert parse_settings("postgresql://h/db", **OPTIONS).require_standby is False
    url = "postgresql://h/db?require_standby=true"
    assert parse_settings(url, **OPTIONS, require_standby=False).require_standby is False


@pytest.mark.parametrize(
    ("url", "keyword"),
    [("postgresql://h/db?require_standby=yes", None), ("postgresql://h/db", "true")],
)
def test_a_value_that_is_not_a_boolean_is_named(url: str, keyword: object) -> None:
    with pytest.raises(ConfigurationError, match="require_standby"):
        parse_settings(url, **OPTIONS, require_standby=keyword)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_server_without_a_standby_stores_the_write_but_reports_it_in_doubt(
    postgres_server: PostgresHandle,
) -> None:
    url = _schema_url(postgres_server.url)
    async with open_backend(url, require_standby=True) as strict:
        with pytest.raises(TransportError) as raised:
            await strict.add_message("s", "user", "committed alone", idempotency_key="k1")
        assert raised.value.maybe_applied and raised.value.retryable
        assert "synchronous standby" in str(raised.value)
        read = await strict.get_conversation("s")  # reads are not checked
    assert [m.content for m in read.messages] == ["committed alone"]
    async with open_backend(url) as relaxed:  # without the option the same write is fine
        again = await relaxed.add_message("s", "user", "committed alone", idempotency_key="k1")
    assert again.id == read.messages[0].id


@pytest.mark.anyio
async def test_on_a_synchronous_pair_writes_are_acknowledged_unless_the_session_commits_locally(
    pg_ha: HaFormation,
) -> None:
    url = _schema_url(pg_ha.url)
    async with open_backend(url, require_standby=True) as strict:
        stored = await strict.add_message("s", "user", "on the standby too")
        assert (await strict.get_conversation("s")).messages[0].id == stored.id
    local = f"{url}&options=-c%20synchronous_commit%3Dlocal"
    async with open_backend(local, require_standby=True) as careless:
        with pytest.raises(TransportError, match="synchronous_commit=local") as raised:
            await careless.add_message("s", "user", "on the primary alone")
    assert raised.value.maybe_applied


@pytest.mark.anyio
async def test_a_primary_whose_synchronous_replication_is_turned_off_acknowledges_nothing(
    pg_ha: HaFormation,
) -> None:
    """What pg_auto_failover's ``wait_primary`` does to the primary (and its bug #774 to a
    primary being demoted): ``synchronous_standby_names`` emptied and the configuration
    reloaded. Writes are then stored but reported in doubt; once it is back, the same
    keyed write is acknowledged, stored once."""
    primary = pg_ha.node_url(pg_ha.primary())
    with psycopg.connect(primary, autocommit=True) as admin:
        names = admin.execute("SHOW synchronous_standby_names").fetchone()
        assert names and names[0], "the pair's primary should wait for its standby"
        _set_standby_names(admin, "")
        try:
            async with open_backend(_schema_url(pg_ha.url), require_standby=True) as strict:
                with pytest.raises(TransportError) as raised:
                    await strict.add_message("s", "user", "alone", idempotency_key="k")
                assert raised.value.maybe_applied
                _set_standby_names(admin, names[0])
                stored = await strict.add_message("s", "user", "alone", idempotency_key="k")
                read = await strict.get_conversation("s")
        finally:
            _set_standby_names(admin, names[0])
    assert [m.id for m in read.messages] == [stored.id]


def _set_standby_names(admin: psycopg.Connection[Any], names: str) -> None:
    statement = sql.SQL("ALTER SYSTEM SET synchronous_standby_names TO {}").format(
        sql.Literal(names)
    )
    admin.execute(statement)
    admin.execute("SELECT pg_reload_conf()")
    # pg_reload_conf only signals the postmaster, which rereads the file and signals the
    # backends later: a write sent at once may still see the old names (ci32). Once a new
    # session sees the new value, the postmaster has reloaded and signalled them.
    url = admin.info.dsn
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with psycopg.connect(url, autocommit=True) as fresh:
            found = fresh.execute("SHOW synchronous_standby_names").fetchone()
        if found is not None and found[0] == names:
            return
        time.sleep(0.05)
    raise AssertionError(f"synchronous_standby_names never became {names!r}")


@pytest.mark.anyio
async def test_a_turn_replay_found_by_reading_is_acknowledged_only_once_durable(
    pg_ha: HaFormation,
) -> None:
    """The soak lost a turn's question with the option on (2026-12-07): ``open_turn``'s
    write was reported in doubt, the retry found the question by reading the conversation
    and acknowledged the turn, and the server that held it was then rewound. A replay is
    now acknowledged only through the half's keyed write, which is checked (the user half
    is written first and its write tells the replay; on a store with ``durable_acks`` a
    half found by reading is written again): in doubt while the primary commits alone,
    acknowledged (stored once) when its standby is back."""
    url = _schema_url(pg_ha.url)
    primary = pg_ha.node_url(pg_ha.primary())
    async with open_backend(url, require_standby=True) as strict:
        assert strict.store.durable_acks
        memory = TurnMemory(strict, "s", "soak")
        await memory.open_turn("t0", "hello")  # the conversation, while synchronous
        with psycopg.connect(primary, autocommit=True) as admin:
            names = admin.execute("SHOW synchronous_standby_names").fetchone()
            assert names and names[0]
            _set_standby_names(admin, "")
            try:
                for _ in range(2):  # the first try, then the retry that reads it back
                    with pytest.raises(TransportError) as raised:
                        await memory.open_turn("t1", "where is my order?")
                    assert raised.value.maybe_applied
            finally:
                _set_standby_names(admin, names[0])
        opened = await memory.open_turn("t1", "where is my order?")
        read = await strict.get_conversation("s")
    assert opened.replayed
    assert [m.content for m in read.messages] == ["hello", "where is my order?"]
    assert opened.user_message.id == read.messages[1].id
