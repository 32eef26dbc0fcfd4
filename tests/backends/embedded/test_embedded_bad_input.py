"""Every bad input gets a typed error naming the argument, and writes nothing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from embedded_support import memory_fixture, snapshot, tenants_fixture  # noqa: F401

from memory_core import (
    InvalidArgumentTypeError,
    InvalidRequestError,
    MemoryBackend,
    MissingIdentifierError,
)

pytestmark = pytest.mark.anyio

# The backend is typed Any: these calls pass wrong types on purpose.
Call = Callable[[Any], Awaitable[Any]]
U = "not-a-uuid"
OK = {"role": "user", "content": "fine"}

CASES: list[tuple[str, Call, str, type[Exception]]] = [
    # add_message
    ("role unknown", lambda m: m.add_message("s", "robot", "x"), "role", InvalidRequestError),
    ("role int", lambda m: m.add_message("s", 3, "x"), "role", InvalidArgumentTypeError),
    ("role None", lambda m: m.add_message("s", None, "x"), "role", InvalidArgumentTypeError),
    ("content None", lambda m: m.add_message("s", "user", None), "content", TypeError),
    ("content bytes", lambda m: m.add_message("s", "user", b"x"), "content", TypeError),
    ("session int", lambda m: m.add_message(5, "user", "x"), "session_id", TypeError),
    ("session empty", lambda m: m.add_message("", "user", "x"), "session_id", ValueError),
    ("no session", lambda m: m.add_message(None, "user", "x"), "session_id", TypeError),
    (
        "conversation_id not uuid",
        lambda m: m.add_message(conversation_id=U, role="user", content="x"),
        "conversation_id",
        InvalidRequestError,
    ),
    (
        "conversation_id int",
        lambda m: m.add_message(conversation_id=7, role="user", content="x"),
        "conversation_id",
        InvalidArgumentTypeError,
    ),
    (
        "metadata list",
        lambda m: m.add_message("s", "user", "x", metadata=[1]),
        "metadata",
        TypeError,
    ),
    (
        "metadata int key",
        lambda m: m.add_message("s", "user", "x", metadata={1: "a"}),
        "metadata",
        ValueError,
    ),
    (
        "metadata nan",
        lambda m: m.add_message("s", "user", "x", metadata={"a": float("nan")}),
        "metadata",
        ValueError,
    ),
    (
        "metadata object",
        lambda m: m.add_message("s", "user", "x", metadata={"a": {1, 2}}),
        "metadata",
        ValueError,
    ),
    (
        "idempotency_key int",
        lambda m: m.add_message("s", "user", "x", idempotency_key=1),
        "idempotency_key",
        TypeError,
    ),
    (
        "extraction_mode",
        lambda m: m.add_message("s", "user", "x", extraction_mode="magic"),
        "extraction_mode",
        ValueError,
    ),
    (
        "mentions not list",
        lambda m: m.add_message(
            "s", "user", "x", extraction_mode="explicit", explicit_mentions="Alice"
        ),
        "explicit_mentions",
        TypeError,
    ),
    (
        "mentions without explicit mode",
        lambda m: m.add_message("s", "user", "x", explicit_mentions=["Alice"]),
        "explicit_mentions",
        ValueError,
    ),
    (
        "mention bad type",
        lambda m: m.add_message(
            "s",
            "user",
            "x",
            extraction_mode="explicit",
            explicit_mentions=[{"name": "A", "type": "planet"}],
        ),
        "explicit_mentions",
        ValueError,
    ),
    (
        "user_identifier int",
        lambda m: m.add_message("s", "user", "x", user_identifier=1),
        "user_identifier",
        TypeError,
    ),
    (
        "generate_embedding str",
        lambda m: m.add_message("s", "user", "x", generate_embedding="yes"),
        "generate_embedding",
        TypeError,
    ),
    # add_messages_batch
    ("batch None", lambda m: m.add_messages_batch("s", None), "messages", TypeError),
    ("batch dict", lambda m: m.add_messages_batch("s", OK), "messages", TypeError),
    ("batch item str", lambda m: m.add_messages_batch("s", [OK, "x"]), "messages[1]", TypeError),
    (
        "batch unknown key",
        lambda m: m.add_messages_batch("s", [OK, {**OK, "colour": "red"}]),
        "messages[1]",
        ValueError,
    ),
    (
        "batch bad role late",
        lambda m: m.add_messages_batch("s", [OK, OK, {"role": "x", "content": "y"}]),
        "messages[2].role",
        ValueError,
    ),
    (
        "batch bad timestamp",
        lambda m: m.add_messages_batch("s", [OK, {**OK, "timestamp": "yesterday"}]),
        "messages[1].timestamp",
        ValueError,
    ),
    (
        "batch bad metadata",
        lambda m: m.add_messages_batch("s", [OK, {**OK, "metadata": "x"}]),
        "messages[1].metadata",
        TypeError,
    ),
    (
        "batch_size 0",
        lambda m: m.add_messages_batch("s", [OK], batch_size=0),
        "batch_size",
        ValueError,
    ),
    (
        "on_progress",
        lambda m: m.add_messages_batch("s", [OK], on_progress=5),
        "on_progress",
        TypeError,
    ),
    # create_conversation
    ("title int", lambda m: m.create_conversation("s", title=5), "title", TypeError),
    (
        "create metadata",
        lambda m: m.create_conversation("s", metadata="x"),
        "metadata",
        TypeError,
    ),
    ("create no id", lambda m: m.create_conversation(), "session_id", MissingIdentifierError),
    # reads
    ("limit 0", lambda m: m.get_conversation("s", limit=0), "limit", ValueError),
    ("limit negative", lambda m: m.get_conversation("s", limit=-1), "limit", ValueError),
    ("limit str", lambda m: m.get_conversation("s", limit="5"), "limit", TypeError),
    ("limit bool", lambda m: m.get_conversation("s", limit=True), "limit", TypeError),
    ("since bad", lambda m: m.get_conversation("s", since="soon"), "since", ValueError),
    ("since int", lambda m: m.get_conversation("s", since=5), "since", TypeError),
    ("list limit", lambda m: m.list_conversations(limit=0), "limit", ValueError),
    ("sessions limit", lambda m: m.list_sessions(limit=0), "limit", ValueError),
    ("sessions offset", lambda m: m.list_sessions(offset=-1), "offset", ValueError),
    ("sessions order_by", lambda m: m.list_sessions(order_by="title"), "order_by", ValueError),
    ("sessions order_dir", lambda m: m.list_sessions(order_dir="up"), "order_dir", ValueError),
    ("sessions prefix", lambda m: m.list_sessions(prefix=3), "prefix", TypeError),
    ("search empty", lambda m: m.search_messages("  "), "query", ValueError),
    ("search int", lambda m: m.search_messages(3), "query", TypeError),
    ("search limit", lambda m: m.search_messages("q", limit=0), "limit", ValueError),
    ("threshold high", lambda m: m.search_messages("q", threshold=1.5), "threshold", ValueError),
    ("threshold low", lambda m: m.search_messages("q", threshold=-0.1), "threshold", ValueError),
    ("threshold str", lambda m: m.search_messages("q", threshold="0.5"), "threshold", TypeError),
    (
        "filters list",
        lambda m: m.search_messages("q", metadata_filters=["a"]),
        "metadata_filters",
        TypeError,
    ),
    (
        "search conversation_id",
        lambda m: m.search_messages("q", conversation_id=U),
        "conversation_id",
        ValueError,
    ),
    ("context no id", lambda m: m.get_context("q"), "session_id", ValueError),
    (
        "context max_messages",
        lambda m: m.get_context("q", session_id="s", max_messages=0),
        "max_messages",
        ValueError,
    ),
    ("summary no id", lambda m: m.get_conversation_summary(), "session_id", TypeError),
    (
        "summary summarizer",
        lambda m: m.get_conversation_summary("s", summarizer="x"),
        "summarizer",
        TypeError,
    ),
    # deletes
    ("delete int", lambda m: m.delete_message(12), "message_id", TypeError),
    ("delete cascade", lambda m: m.delete_message(U, cascade="yes"), "cascade", TypeError),
    ("clear no id", lambda m: m.clear_session(), "session_id", TypeError),
    (
        "clear conversation_id",
        lambda m: m.clear_session(conversation_id=U),
        "conversation_id",
        ValueError,
    ),
    # entities
    ("entity empty name", lambda m: m.add_entity(" ", "person"), "name", ValueError),
    ("entity bad type", lambda m: m.add_entity("A", "planet"), "type", ValueError),
    (
        "entity description",
        lambda m: m.add_entity("A", "person", description=1),
        "description",
        TypeError,
    ),
    ("find empty", lambda m: m.find_entities(""), "identifier", ValueError),
    ("find limit", lambda m: m.find_entities("A", 0), "limit", ValueError),
    ("find type", lambda m: m.find_entities("A", type="planet"), "type", ValueError),
]


async def _seed(backend: MemoryBackend, user: str | None = None) -> None:
    await backend.add_message("s", "user", "seed message", user_identifier=user)
    await backend.add_entity("Seed", "concept", user_identifier=user)


@pytest.mark.parametrize(
    ("call", "argument", "error"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
async def test_bad_input_is_named_and_writes_nothing(
    memory: MemoryBackend, call: Call, argument: str, error: type[Exception]
) -> None:
    await _seed(memory)
    before = await snapshot(memory)
    with pytest.raises(error) as raised:
        await call(memory)
    assert isinstance(raised.value, InvalidRequestError)
    assert raised.value.argument == argument
    assert argument in str(raised.value)
    assert await snapshot(memory) == before


TENANT_CALLS: list[tuple[str, Call]] = [
    ("add_message", lambda m: m.add_message("s", "user", "x")),
    ("batch", lambda m: m.add_messages_batch("s", [OK])),
    ("create", lambda m: m.create_conversation("s")),
    ("get", lambda m: m.get_conversation("s")),
    ("list", lambda m: m.list_conversations()),
    ("sessions", lambda m: m.list_sessions()),
    ("search", lambda m: m.search_messages("seed")),
    ("context", lambda m: m.get_context(session_id="s")),
    ("clear", lambda m: m.clear_session("s")),
    ("delete", lambda m: m.delete_message("00000000-0000-0000-0000-000000000000")),
    ("add_entity", lambda m: m.add_entity("A", "person")),
    ("find_entities", lambda m: m.find_entities("A")),
    ("summary", lambda m: m.get_conversation_summary("s")),
]


@pytest.mark.parametrize("call", [c[1] for c in TENANT_CALLS], ids=[c[0] for c in TENANT_CALLS])
async def test_multi_tenant_requires_user_identifier(tenants: MemoryBackend, call: Call) -> None:
    await _seed(tenants, "alice")
    before = await snapshot(tenants)
    with pytest.raises(InvalidRequestError) as raised:
        await call(tenants)
    assert raised.value.argument == "user_identifier"
    assert await snapshot(tenants) == before


async def test_non_uuid_message_id_is_false_not_an_error(memory: MemoryBackend) -> None:
    await _seed(memory)
    before = await snapshot(memory)
    assert await memory.delete_message("not-a-uuid") is False
    assert await snapshot(memory) == before
