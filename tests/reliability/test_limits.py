"""The shared size limits: the same typed error, naming the argument, on every backend,
and nothing written (the store is compared before and after)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from memory_core import DEFAULT_LIMITS, InvalidRequestError, Limits, MemoryBackend
from memory_core.errors import ConfigurationError

from .conftest import open_subject
from .subjects import Subject

pytestmark = pytest.mark.anyio

L = DEFAULT_LIMITS


def nested(depth: int) -> dict[str, Any]:
    """A dict ``depth`` levels deep."""
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


Call = Callable[[MemoryBackend, str], Awaitable[object]]
OVERSIZED: list[tuple[str, Call, str]] = [
    (
        "content",
        lambda b, s: b.add_message(s, "user", "x" * (L.max_content_chars + 1)),
        "content",
    ),
    (
        "batch content",
        lambda b, s: b.add_messages_batch(
            s,
            [{"role": "user", "content": "ok"}, {"role": "user", "content": "x" * 1_000_001}],
        ),
        "messages[1].content",
    ),
    (
        "metadata depth",
        lambda b, s: b.add_message(s, "user", "hi", metadata=nested(L.max_metadata_depth + 1)),
        "metadata",
    ),
    (
        "metadata size",
        lambda b, s: b.add_message(s, "user", "hi", metadata={"blob": "x" * L.max_metadata_bytes}),
        "metadata",
    ),
    (
        "conversation metadata",
        lambda b, s: b.create_conversation(s, metadata=nested(300)),
        "metadata",
    ),
    (
        "query",
        lambda b, s: b.search_messages("q" * (L.max_query_chars + 1), session_id=s),
        "query",
    ),
    (
        "context query",
        lambda b, s: b.get_context("q" * (L.max_query_chars + 1), session_id=s),
        "query",
    ),
    (
        "session id",
        lambda b, s: b.add_message("é" * (L.max_identifier_bytes // 2 + 1), "user", "hi"),
        "session_id",
    ),
    (
        "idempotency key",
        lambda b, s: b.add_message(
            s, "user", "hi", idempotency_key="k" * (L.max_content_chars + 1)
        ),
        "idempotency_key",
    ),
    (
        "entity name",
        lambda b, s: b.add_entity("n" * (L.max_identifier_bytes + 1), "PERSON"),
        "name",
    ),
    (
        "find identifier",
        lambda b, s: b.find_entities("n" * (L.max_identifier_bytes + 1)),
        "identifier",
    ),
    (
        "filters depth",
        lambda b, s: b.search_messages(
            "hi", session_id=s, metadata_filters=nested(L.max_metadata_depth + 1)
        ),
        "metadata_filters",
    ),
    (
        "mention count",  # issue 25, item 5: counted before any mention is looked at
        lambda b, s: b.add_message(
            s,
            "user",
            "hi",
            extraction_mode="explicit",
            explicit_mentions=[{"name": f"e{i}", "type": "PERSON"} for i in range(1_001)],
        ),
        "explicit_mentions",
    ),
]


@pytest.mark.parametrize(("case", "call", "argument"), OVERSIZED, ids=[c[0] for c in OVERSIZED])
async def test_oversized_arguments_are_refused_alike(
    subject: Subject, case: str, call: Call, argument: str
) -> None:
    handle = await subject.session()
    await subject.backend.add_message(handle, "user", "already here")
    before = await subject.dump()
    with pytest.raises(InvalidRequestError) as raised:
        await call(subject.backend, handle)
    assert raised.value.argument == argument
    assert await subject.dump() == before


async def test_values_at_the_limits_are_stored(subject: Subject) -> None:
    handle = await subject.session()
    content = "y" * 20_000
    stored = await subject.backend.add_message(handle, "user", content)
    assert stored.content == content
    if subject.backend.capabilities.message_metadata:
        deep = nested(L.max_metadata_depth)
        kept = await subject.backend.add_message(handle, "user", "deep", metadata=deep)
        assert kept.metadata == deep
        read = await subject.backend.get_conversation(handle)
        assert read.messages[-1].metadata == deep
    hits = await subject.backend.search_messages("y" * L.max_query_chars, session_id=handle)
    assert isinstance(hits, list)


async def test_limits_are_configurable(tmp_path: Any) -> None:
    from memory_core import open_backend

    small = Limits(max_content_chars=5, max_metadata_depth=2)
    async with open_backend(f"sqlite:///{tmp_path / 'small.db'}", limits=small) as backend:
        assert backend.limits == small
        await backend.add_message("s", "user", "12345", metadata={"a": {"b": 1}})
        with pytest.raises(InvalidRequestError, match="content"):
            await backend.add_message("s", "user", "123456")
        with pytest.raises(InvalidRequestError, match="levels deep"):
            await backend.add_message("s", "user", "1", metadata={"a": {"b": {"c": 1}}})
    with pytest.raises(ConfigurationError):
        Limits(max_query_chars=0)


# ---------------------------------------------------------------------- issue 25


async def test_mentions_over_the_limit_from_an_extractor_write_nothing(
    request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    def extractor(content: str) -> list[str]:
        return [f"name {i}" for i in range(6)]

    subject = await open_subject(
        "embedded", request, tmp_path, limits=Limits(max_mentions=5), extractor=extractor
    )
    try:
        before = await subject.dump()
        with pytest.raises(InvalidRequestError) as raised:
            await subject.backend.add_message("s", "user", "hi")
        assert raised.value.argument == "extractor result"
        assert await subject.dump() == before
    finally:
        await subject.backend.close()


@pytest.mark.parametrize("kind", ["embedded", "bolt", "postgres"])
async def test_mentions_at_the_limit_are_stored_once_each(
    kind: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    subject = await open_subject(kind, request, tmp_path, limits=Limits(max_mentions=6))
    try:
        backend = subject.backend
        person = await backend.add_entity(subject.name("ann"), "PERSON")
        place = subject.name("paris")
        refs: list[Any] = [
            {"name": place, "type": "LOCATION"},
            {"id": person.id},
            {"name": place, "type": "LOCATION"},
            person.name,
            {"id": person.id},
            {"name": place, "type": "LOCATION"},
        ]
        stored = await backend.add_message(
            subject.name(), "user", "hi", extraction_mode="explicit", explicit_mentions=refs
        )
        assert sorted(m.name for m in stored.mentions) == sorted([place, person.name])
        with pytest.raises(InvalidRequestError) as raised:
            await backend.add_message(
                subject.name(), "user", "hi", extraction_mode="explicit", explicit_mentions=refs * 2
            )
        assert raised.value.argument == "explicit_mentions"
    finally:
        await subject.backend.close()


@pytest.mark.parametrize("kind", ["embedded", "bolt", "postgres"])
async def test_list_sessions_prefix_is_limited_in_bytes(
    kind: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    subject = await open_subject(kind, request, tmp_path)
    try:
        cap = L.max_identifier_bytes
        assert await subject.backend.list_sessions(prefix="é" * (cap // 2)) == []
        assert await subject.backend.list_sessions(prefix="") is not None
        for prefix in ("é" * (cap // 2 + 1), "😀" * (cap // 4 + 1), "x" * (cap + 1)):
            with pytest.raises(InvalidRequestError, match="bytes") as raised:
                await subject.backend.list_sessions(prefix=prefix)
            assert raised.value.argument == "prefix"
    finally:
        await subject.backend.close()
