"""session_id / conversation_id aliasing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from uuid import uuid4

import pytest

from memory_core import MissingIdentifierError, NotFoundError, SessionRequiredError

from ..checks import word
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


class AliasingSuite(SuiteBase):
    """Scenarios of area ``aliasing``."""

    @scenario(
        "aliasing.session_id_wins",
        "when session_id and conversation_id are both given, session_id wins",
    )
    async def test_aliasing_session_id_wins(self, harness: Harness) -> None:
        first, second = await harness.new_session(), await harness.new_session()
        await harness.backend.add_message(second, "user", "in second")
        other_id = (await harness.backend.get_conversation(second)).id
        await harness.backend.add_message(first, "user", "to first", conversation_id=other_id)
        assert await harness.contents(first) == ["to first"]
        assert await harness.contents(second) == ["in second"]
        read = await harness.backend.get_conversation(first, conversation_id=other_id)
        assert [m.content for m in read.messages] == ["to first"]

    @scenario(
        "aliasing.conversation_id_alone",
        "conversation_id alone (UUID or str) reads and writes that conversation",
    )
    async def test_aliasing_conversation_id_alone(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.backend.add_message(handle, "user", "by session")
        conversation = await harness.backend.get_conversation(handle)
        await harness.backend.add_message(
            conversation_id=conversation.id, role="user", content="by uuid"
        )
        await harness.backend.add_messages_batch(
            conversation_id=str(conversation.id),
            messages=[{"role": "assistant", "content": "by str"}],
        )
        for key in (conversation.id, str(conversation.id)):
            read = await harness.backend.get_conversation(conversation_id=key)
            assert read.id == conversation.id
            assert [m.content for m in read.messages] == ["by session", "by uuid", "by str"]

    @scenario(
        "aliasing.unknown_conversation_id",
        "reading, searching or writing a conversation_id that names no conversation raises "
        "NotFoundError and writes nothing",
    )
    async def test_aliasing_unknown_conversation_id(self, harness: Harness) -> None:
        unknown = uuid4()
        batch = [{"role": "user", "content": "to nowhere"}]
        with pytest.raises(NotFoundError):
            await harness.backend.get_conversation(conversation_id=unknown)
        with pytest.raises(NotFoundError):
            await harness.backend.add_message(conversation_id=unknown, role="user", content="x")
        with pytest.raises(NotFoundError):
            await harness.backend.bulk_add_messages(conversation_id=str(unknown), messages=batch)
        with pytest.raises(NotFoundError):
            await harness.backend.get_conversation(conversation_id=unknown)
        with pytest.raises(NotFoundError):
            await harness.backend.search_messages("to nowhere", conversation_id=unknown)
        listed = await harness.backend.list_conversations(limit=1000)
        assert unknown not in {c.id for c in listed}, "a write created the unknown conversation"

    @scenario(
        "aliasing.neither_is_type_error",
        "CRUD calls without session_id and conversation_id raise TypeError naming session_id",
    )
    async def test_aliasing_neither_is_type_error(self, harness: Harness) -> None:
        backend = harness.backend
        batch = [{"role": "user", "content": "x"}]
        calls: list[Callable[[], Awaitable[Any]]] = [
            lambda: backend.add_message(role="user", content="x"),
            lambda: backend.get_conversation(),
            lambda: backend.create_conversation(),
            lambda: backend.clear_session(),
            lambda: backend.add_messages_batch(messages=batch),
            lambda: backend.bulk_add_messages(messages=batch),
        ]
        if harness.caps.conversation_summary:
            calls.append(lambda: backend.get_conversation_summary())
        for call in calls:
            with pytest.raises(TypeError) as info:
                await call()
            assert isinstance(info.value, MissingIdentifierError), repr(info.value)
            assert info.value.argument == "session_id"

    @scenario(
        "aliasing.neither_is_value_error",
        "get_context (and search where a session is required) without one raise ValueError",
    )
    async def test_aliasing_neither_is_value_error(self, harness: Harness) -> None:
        with pytest.raises(ValueError):
            await harness.backend.get_context("query")
        with pytest.raises(ValueError):
            await harness.backend.get_context()
        if not harness.caps.search_global:
            with pytest.raises(ValueError) as info:
                await harness.backend.search_messages("query")
            assert isinstance(info.value, SessionRequiredError)
        else:
            assert isinstance(await harness.backend.search_messages("query", limit=1), list)

    @scenario(
        "aliasing.uuid_session_id",
        "a UUID given as session_id names that conversation, as conversation_id would",
    )
    async def test_aliasing_uuid_session_id(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.backend.add_message(handle, "user", "by handle")
        conversation = await harness.backend.get_conversation(handle)
        await harness.backend.add_message(conversation.id, "assistant", "by UUID")
        read = await harness.backend.get_conversation(conversation.id)
        assert read.id == conversation.id
        assert [m.content for m in read.messages] == ["by handle", "by UUID"]
        assert await harness.contents(handle) == ["by handle", "by UUID"]
        hits = await harness.backend.search_messages("UUID", session_id=conversation.id)
        assert [m.content for m in hits] == ["by UUID"]
        assert "by UUID" in await harness.backend.get_context(session_id=conversation.id)
        with pytest.raises(NotFoundError):
            await harness.backend.add_message(uuid4(), "user", "nowhere")

    @scenario(
        "aliasing.id_string_session_id",
        "a session_id that is the canonical string of a conversation's id (str(Conversation.id)) "
        "names that conversation in every call taking a session; any other string, a UUID of "
        "no conversation or another spelling of one, is a session name",
    )
    async def test_aliasing_id_string_session_id(self, harness: Harness) -> None:
        backend = harness.backend
        handle = await harness.new_session()
        term = word()
        await backend.add_message(handle, "user", f"by handle {term}")
        conversation = await backend.get_conversation(handle)
        text = str(conversation.id)
        read = await backend.get_conversation(text)
        assert read.id == conversation.id, "str(Conversation.id) read another conversation"
        assert [m.content for m in read.messages] == [f"by handle {term}"], (
            "str(Conversation.id) was read as a session name"
        )
        assert read.session_id == conversation.session_id
        await backend.add_message(text, "assistant", "by string")
        await backend.add_messages_batch(text, [{"role": "user", "content": "batch by string"}])
        expected = [f"by handle {term}", "by string", "batch by string"]
        assert await harness.contents(handle) == expected, "a write by id string went elsewhere"
        hits = await backend.search_messages(term, session_id=text)
        assert [m.content for m in hits] == [f"by handle {term}"]
        assert "batch by string" in await backend.get_context(session_id=text)
        if harness.caps.client_chosen_ids:  # where the store issues ids, create makes one
            again = await backend.create_conversation(session_id=text)
            assert again.id == conversation.id, "create_conversation made a second conversation"
            # a UUID-shaped name of no conversation, or another spelling of an id, is a name
            named = str(uuid4())
            harness.track(named)
            await backend.add_message(named, "user", "named by a uuid4")
            mine = await backend.get_conversation(named)
            assert [m.content for m in mine.messages] == ["named by a uuid4"]
            assert mine.session_id == named
            for spelling in (text.upper(), text.replace("-", ""), "{" + text + "}"):
                other = await backend.get_conversation(spelling)
                assert other.messages == [], f"{spelling!r} is not the canonical id string"
        assert await backend.clear_session(text) is True
        if harness.caps.auto_create_conversation:
            assert await harness.contents(handle) == []
        else:  # the conversation is gone, and reading it says so
            with pytest.raises(NotFoundError):
                await harness.contents(handle)
