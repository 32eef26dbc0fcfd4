"""Every driver failure becomes a typed memory-core error; none escapes raw."""

from __future__ import annotations

import socket
import warnings
from collections.abc import Callable
from typing import Any
from uuid import uuid4

import pytest
from neo4j import exceptions as neo

from memory_core import (
    AuthenticationError,
    ConfigurationError,
    Limits,
    MemoryBackend,
    MemoryCoreError,
    NotSupportedError,
    StoreError,
    TransportError,
    open_backend,
)
from memory_core.backends.bolt.errors import translate

WHERE = "bolt backend at bolt://h:7687"


def _server_error(code: str) -> neo.Neo4jError:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return neo.Neo4jError._hydrate_neo4j(code=code, message="server said no")


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (neo.ServiceUnavailable("connection refused"), TransportError),
        (neo.SessionExpired("gone"), TransportError),
        (neo.IncompleteCommit("lost during commit"), TransportError),
        (_server_error("Neo.TransientError.Transaction.DeadlockDetected"), TransportError),
        (_server_error("Neo.TransientError.General.DatabaseUnavailable"), TransportError),
        (_server_error("Neo.DatabaseError.General.UnknownError"), TransportError),
        (_server_error("Neo.ClientError.Security.Unauthorized"), AuthenticationError),
        (_server_error("Neo.ClientError.Security.Forbidden"), AuthenticationError),
        (_server_error("Neo.ClientError.Database.DatabaseNotFound"), ConfigurationError),
        (neo.ConfigurationError("bad uri"), ConfigurationError),
        (neo.ClientError("failed to obtain a connection from the pool within 1s"), TransportError),
        *(
            [(neo.ConnectionAcquisitionTimeoutError("failed to obtain …"), TransportError)]
            if hasattr(neo, "ConnectionAcquisitionTimeoutError")  # driver 6
            else []
        ),
        (_server_error("Neo.ClientError.Statement.SyntaxError"), StoreError),
        (_server_error("Neo.ClientError.Schema.ConstraintValidationFailed"), StoreError),
        (neo.ResultConsumedError(None, "consumed"), StoreError),
        (RuntimeError("driver bug"), StoreError),
        (ConnectionResetError("reset"), TransportError),
    ],
)
def test_driver_errors_are_translated(exc: BaseException, expected: type[Exception]) -> None:
    error = translate(exc, WHERE)
    assert type(error) is expected
    assert str(error).startswith(WHERE)
    assert error.__cause__ is None
    assert type(error) is not MemoryCoreError  # never the bare base class


@pytest.mark.parametrize(
    ("exc", "retryable"),
    [
        (neo.ServiceUnavailable("connection refused"), True),
        (_server_error("Neo.TransientError.Transaction.DeadlockDetected"), True),
        (_server_error("Neo.DatabaseError.General.UnknownError"), False),
        (_server_error("Neo.ClientError.Security.Unauthorized"), False),
        (_server_error("Neo.ClientError.Statement.SyntaxError"), False),
        (ConnectionResetError("reset"), True),
    ],
)
def test_errors_say_whether_a_retry_may_succeed(exc: BaseException, retryable: bool) -> None:
    error = translate(exc, WHERE)
    assert error.retryable is retryable
    assert error.maybe_applied is False


def test_a_retry_that_finds_its_own_messages_says_the_write_was_applied() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clash = neo.Neo4jError._hydrate_neo4j(
            code="Neo.ClientError.Schema.ConstraintValidationFailed",
            message="Node(2) already exists with label `Message` and property `id` = 'x'",
        )
    error = translate(clash, WHERE)
    assert type(error) is TransportError
    assert error.maybe_applied is True and error.retryable is False


def test_incomplete_commit_says_the_write_may_have_happened() -> None:
    error = translate(neo.IncompleteCommit("x"), WHERE)
    assert "may or may not" in str(error)
    assert error.maybe_applied is True
    assert error.retryable is True


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.anyio
async def test_unreachable_server_is_a_transport_error() -> None:
    port = _closed_port()
    backend = open_backend(f"bolt://127.0.0.1:{port}", connection_timeout=2)
    with pytest.raises(TransportError) as info:
        await backend.connect()
    # the error names the store it could not reach, as describe() does
    assert str(info.value).startswith(f"bolt backend at bolt://127.0.0.1:{port}: ")
    assert "password" not in str(info.value).lower()


@pytest.mark.anyio
@pytest.mark.neo4j
async def test_unknown_database_is_a_configuration_error(
    open_bolt: Callable[..., MemoryBackend],
) -> None:
    backend = open_bolt(database="nosuchdatabase")
    with pytest.raises(ConfigurationError, match="DatabaseNotFound"):
        await backend.connect()
    await backend.close()


@pytest.mark.neo4j
@pytest.mark.parametrize("anyio_backend", ["trio"])
@pytest.mark.anyio
async def test_trio_is_refused(open_bolt: Callable[..., MemoryBackend]) -> None:
    backend = open_bolt()
    assert backend.capabilities.trio is False
    with pytest.raises(NotSupportedError, match="asyncio"):
        await backend.connect()


@pytest.mark.anyio
@pytest.mark.neo4j
async def test_embedder_size_must_match_an_existing_vector_index(
    open_bolt: Callable[..., MemoryBackend],
) -> None:
    from memory_core import HashingEmbedder

    # One vector index per database: its size is the first embedder's (the suite's 256).
    async with open_bolt(embedder=HashingEmbedder(256)):
        pass
    other = open_bolt(embedder=HashingEmbedder(32))
    with pytest.raises(ConfigurationError, match="dimensions"):
        await other.connect()
    # without schema set-up the index is only looked up, and checked the same way
    unmanaged = open_bolt(embedder=HashingEmbedder(32), create_schema=False)
    with pytest.raises(ConfigurationError, match="has 256 dimensions but the embedder has 32"):
        await unmanaged.connect()
    from memory_core.conformance.embedder import ConceptEmbedder

    # and, when it fits, used: a store-wide search finds by meaning through it
    async with open_bolt(embedder=ConceptEmbedder(256), create_schema=False) as fitting:
        session = f"unmanaged-{uuid4().hex}"
        stored = await fitting.add_message(session, "user", f"supper reservation {session}")
        hits = await fitting.search_messages("dinner booking", limit=1000, threshold=0.0)
        assert stored.id in [h.id for h in hits]


@pytest.mark.anyio
@pytest.mark.neo4j
async def test_keys_at_the_indexed_maximum_are_stored(
    open_bolt: Callable[..., MemoryBackend], graph: Callable[..., list[dict[str, Any]]]
) -> None:
    # ``max_indexed_bytes`` (3950) keeps every indexed value, and the composite keys of
    # two of them, within what a Neo4j range index takes: the translation of Neo4j's
    # "too large to index" error is a guard no valid call reaches.
    most = Limits(max_identifier_bytes=3950)
    with pytest.raises(ConfigurationError, match="max_identifier_bytes"):
        open_bolt(limits=Limits(max_identifier_bytes=3951))
    # 3950 bytes each, and names no other run uses (the server may be one that persists)
    tag = uuid4().hex  # 32 bytes
    user, session, name = tag + "ü" * 1959, tag + "s" * 3918, tag + "Ö" * 1959
    async with open_bolt(limits=most, multi_tenant=True) as backend:
        await backend.create_conversation(session, user_identifier=user)
        mentions = [{"name": name, "type": "PERSON"}]
        await backend.add_message(
            session,
            "user",
            "hello",
            user_identifier=user,
            extraction_mode="explicit",
            explicit_mentions=mentions,
        )
        got = await backend.get_conversation(session, user_identifier=user)
    assert [m.content for m in got.messages] == ["hello"]
    rows = graph(
        "MATCH (e:Entity) WHERE e.name STARTS WITH $tag RETURN e.name AS name, e.tenant AS tenant",
        tag=tag,
    )
    assert [(row["name"], row["tenant"]) for row in rows] == [(name, user)]


@pytest.mark.anyio
async def test_a_driver_refusing_an_option_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memory_core.backends.bolt import session

    def refuse(*args: object, **kwargs: object) -> None:
        raise ValueError("the driver does not take this option")

    monkeypatch.setattr(session.AsyncGraphDatabase, "driver", refuse)
    backend = open_backend("bolt://127.0.0.1:1")
    with pytest.raises(ConfigurationError, match="does not take this option"):
        await backend.connect()  # and the half-made connection closed quietly
    await backend.close()


@pytest.mark.anyio
@pytest.mark.neo4j
async def test_every_statement_goes_to_the_named_database(
    open_bolt: Callable[..., MemoryBackend], graph: Callable[..., list[dict[str, Any]]]
) -> None:
    # Community Neo4j has one user database besides "system", which takes no graph
    # writes: a write meant for it that reached the default database would succeed.
    session = f"named-db-{uuid4().hex}"
    async with open_bolt(database="system", create_schema=False) as backend:
        with pytest.raises(MemoryCoreError):
            await backend.add_message(session, "user", "to the system database")
    assert graph("MATCH (c:Conversation {session_id: $s}) RETURN c", s=session) == []
