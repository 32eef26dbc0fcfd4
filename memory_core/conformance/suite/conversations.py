"""Conversations: creation, stable ids, listing."""

from __future__ import annotations

import anyio

from ..checks import same_json
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


class ConversationsSuite(SuiteBase):
    """Scenarios of area ``conversations``."""

    @scenario(
        "conversations.create_returns_header",
        "create_conversation returns an empty conversation with the given metadata",
    )
    async def test_conversations_create_returns_header(self, harness: Harness) -> None:
        name = harness.unique()
        meta = {"purpose": "conformance", "n": 1, "ok": True}
        created = await harness.backend.create_conversation(session_id=name, metadata=meta)
        handle = name if harness.caps.client_chosen_ids else str(created.id)
        harness.track(handle)
        assert created.messages == []
        same_json(created.metadata, meta, "conversation.metadata")
        read = await harness.backend.get_conversation(handle)
        assert read.id == created.id
        same_json(read.metadata, meta, "conversation.metadata")
        if harness.caps.client_chosen_ids:
            assert created.session_id == name and read.session_id == name

    @scenario(
        "conversations.title_round_trips",
        "a title given to create_conversation is stored and read back, beyond ASCII",
        requires="conversation_titles",
    )
    async def test_conversations_title_round_trips(self, harness: Harness) -> None:
        name = harness.unique()
        title = "Trip to Zürich \u2014 caf\u00e9 \U0001f30d"
        created = await harness.backend.create_conversation(session_id=name, title=title)
        handle = name if harness.caps.client_chosen_ids else str(created.id)
        harness.track(handle)
        assert created.title == title
        assert (await harness.backend.get_conversation(handle)).title == title

    @scenario(
        "conversations.create_is_idempotent",
        "creating a session's conversation twice returns the same conversation, keeping the "
        "stored title and metadata; an auto-created one gets them filled in",
        requires="client_chosen_ids",
    )
    async def test_conversations_create_is_idempotent(self, harness: Harness) -> None:
        handle = await harness.new_session()
        # Titles only where the backend stores them (conversation_titles); otherwise
        # passing one is a dropped argument, checked by the requirement's probe.
        titles = harness.caps.conversation_titles
        first = await harness.backend.create_conversation(
            session_id=handle, title="first title" if titles else None, metadata={"v": 1}
        )
        await harness.backend.add_message(handle, "user", "kept")
        second = await harness.backend.create_conversation(
            session_id=handle, title="second title" if titles else None, metadata={"v": 2}
        )
        assert first.id == second.id
        assert await harness.contents(handle) == ["kept"]
        for seen in (second, await harness.backend.get_conversation(handle)):
            if titles:
                assert seen.title == "first title", "a second create replaced the title"
            same_json(seen.metadata, {"v": 1}, "conversation.metadata")
        if not (harness.caps.auto_create_conversation and titles):
            return  # filling a header later needs a store that updates headers
        auto = await harness.new_session()
        await harness.backend.add_message(auto, "user", "creates it")
        named = await harness.backend.create_conversation(
            session_id=auto, title="named later", metadata={"late": True}
        )
        for seen in (named, await harness.backend.get_conversation(auto)):
            assert seen.title == "named later", "a missing title was not filled in"
            same_json(seen.metadata, {"late": True}, "conversation.metadata")
        titled = await harness.new_session()
        await harness.backend.create_conversation(session_id=titled, title="kept title")
        again = await harness.backend.create_conversation(
            session_id=titled, title="ignored title", metadata={"filled": 1}
        )
        for seen in (again, await harness.backend.get_conversation(titled)):
            assert seen.title == "kept title", "filling metadata replaced the title"
            same_json(seen.metadata, {"filled": 1}, "conversation.metadata")
        tagged = await harness.new_session()
        await harness.backend.create_conversation(session_id=tagged, metadata={"kept": 1})
        again = await harness.backend.create_conversation(
            session_id=tagged, title="filled title", metadata={"kept": 2}
        )
        for seen in (again, await harness.backend.get_conversation(tagged)):
            assert seen.title == "filled title", "a missing title was not filled in"
            same_json(seen.metadata, {"kept": 1}, "conversation.metadata")

    @scenario(
        "conversations.session_names_exact",
        "session names are compared exactly: names differing only in case, Unicode "
        "normalisation (NFC/NFD) or trailing whitespace are different sessions",
        requires="client_chosen_ids",
    )
    async def test_conversations_session_names_exact(self, harness: Harness) -> None:
        base = harness.unique()
        names = [
            f"{base}-caf\u00e9",  # NFC
            f"{base}-cafe\u0301",  # NFD of the same text
            f"{base}-Case",
            f"{base}-case",
            f"{base}-pad",
            f"{base}-pad ",
            f" {base}-pad",
        ]
        handles = [await harness.new_session(name=name) for name in names]
        for n, handle in enumerate(handles):
            await harness.backend.add_message(handle, "user", f"only in {n}")
        for n, handle in enumerate(handles):
            assert await harness.contents(handle) == [f"only in {n}"], f"{names[n]!r} is shared"
        ids = {(await harness.backend.get_conversation(h)).id for h in handles}
        assert len(ids) == len(names), "distinct session names share a conversation"

    @scenario(
        "conversations.missing_session_stable_id",
        "reading an unknown session returns an empty conversation whose id never changes",
        requires="auto_create_conversation",
    )
    async def test_conversations_missing_session_stable_id(self, harness: Harness) -> None:
        handle = harness.missing_session()
        empty = await harness.backend.get_conversation(handle)
        again = await harness.backend.get_conversation(handle)
        assert empty.messages == [] and again.messages == []
        assert empty.id == again.id, "an unknown session got a new id on each read"
        stored = await harness.backend.add_message(handle, "user", "first")
        written = await harness.backend.get_conversation(handle)
        assert written.id == empty.id, "the id changed when the conversation was created"
        assert stored.conversation_id in (None, empty.id)
        if harness.caps.multi_tenant:  # the same holds per user, also through create
            backend, user = await harness.tenant_backend(), harness.new_user()
            handle = harness.missing_session(backend=backend, user=user)
            empty = await backend.get_conversation(handle, user_identifier=user)
            created = await backend.create_conversation(session_id=handle, user_identifier=user)
            assert created.id == empty.id, "create_conversation changed a user's session id"

    @scenario(
        "conversations.ids_consistent",
        "every message of a session names the same conversation id as the conversation",
    )
    async def test_conversations_ids_consistent(self, harness: Harness) -> None:
        handle = await harness.new_session()
        stored = [await harness.backend.add_message(handle, "user", f"c{i}") for i in range(3)]
        stored += await harness.fill(handle, 2)
        conversation = await harness.backend.get_conversation(handle)
        for message in [*stored, *conversation.messages]:
            assert message.conversation_id in (None, conversation.id)

    @scenario(
        "conversations.list_newest_updated_first",
        "list_conversations puts the most recently written conversation first",
    )
    async def test_conversations_list_newest_updated_first(self, harness: Harness) -> None:
        handles = []
        for n in range(3):
            handle = await harness.new_session()
            await harness.backend.add_message(handle, "user", f"conversation {n}")
            handles.append(handle)
            await anyio.sleep(0.01)
        await harness.backend.add_message(handles[0], "user", "touch the oldest")
        ids = [(await harness.backend.get_conversation(h, limit=1)).id for h in handles]
        listed = await harness.backend.list_conversations(limit=3)
        assert [c.id for c in listed] == [ids[0], ids[2], ids[1]]
        await anyio.sleep(0.01)
        await harness.fill(handles[1], 2)  # a bulk write touches its conversation too
        listed = await harness.backend.list_conversations(limit=3)
        assert [c.id for c in listed] == [ids[1], ids[0], ids[2]], "a bulk write did not touch"
        assert all(not c.messages for c in listed), "listings must not carry messages"

    @scenario("conversations.list_limit", "list_conversations(limit=N) returns at most N")
    async def test_conversations_list_limit(self, harness: Harness) -> None:
        for _ in range(3):
            await harness.new_session(create=True)
        assert len(await harness.backend.list_conversations(limit=2)) == 2
        assert len(await harness.backend.list_conversations(limit=1)) == 1
