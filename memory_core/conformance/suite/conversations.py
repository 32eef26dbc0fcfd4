"""Conversations: creation, stable ids, listing."""

from __future__ import annotations

from collections.abc import Awaitable
from uuid import UUID

import anyio

from memory_core import ConversationPage, MemoryBackend

from ..checks import capability_warnings, invalid, same_json
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase

PAGES_AT_MOST = 50  # a walk of a handful of conversations that takes more pages is broken


async def _walk(
    backend: MemoryBackend, user: str, size: int, between: Awaitable[None] | None = None
) -> tuple[list[UUID], list[ConversationPage]]:
    """Every page of ``user``'s conversations, ``size`` at a time: the ids in walk order
    and the pages. ``between``, when given, is awaited after the first page."""
    seen: list[UUID] = []
    pages: list[ConversationPage] = []
    cursor: str | None = None
    for _ in range(PAGES_AT_MOST):
        page = await backend.list_conversations_page(
            limit=size, cursor=cursor, user_identifier=user
        )
        assert len(page.conversations) <= size, f"a page of limit={size} held more"
        assert all(not c.messages for c in page.conversations), "pages must not carry messages"
        pages.append(page)
        seen += [c.id for c in page.conversations]
        if len(pages) == 1 and between is not None:
            await between
        cursor = page.next_cursor
        if cursor is None:
            return seen, pages
    raise AssertionError(f"the walk did not end after {PAGES_AT_MOST} pages (next_cursor)")


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
        # A fresh user's listing (see keyset_paging): on a shared store another writer's
        # conversations may be newer than these, even dated in the future.
        backend = await harness.tenant_backend() if harness.caps.multi_tenant else harness.backend
        user = harness.new_user()
        scoped = user if backend.capabilities.user_scoped_calls else None
        handles = []
        for n in range(3):
            handle = await harness.new_session(backend=backend, user=user, create=True)
            await backend.add_message(handle, "user", f"conversation {n}", user_identifier=scoped)
            handles.append(handle)
            await anyio.sleep(0.01)
        await backend.add_message(handles[0], "user", "touch the oldest", user_identifier=scoped)
        ids = [
            (await backend.get_conversation(h, limit=1, user_identifier=scoped)).id for h in handles
        ]
        listed = await backend.list_conversations(limit=3, user_identifier=user)
        assert [c.id for c in listed] == [ids[0], ids[2], ids[1]]
        await anyio.sleep(0.01)
        # a bulk write touches its conversation too
        await harness.fill(handles[1], 2, backend=backend, user=scoped)
        listed = await backend.list_conversations(limit=3, user_identifier=user)
        assert [c.id for c in listed] == [ids[1], ids[0], ids[2]], "a bulk write did not touch"
        assert all(not c.messages for c in listed), "listings must not carry messages"

    @scenario("conversations.list_limit", "list_conversations(limit=N) returns at most N")
    async def test_conversations_list_limit(self, harness: Harness) -> None:
        for _ in range(3):
            await harness.new_session(create=True)
        assert len(await harness.backend.list_conversations(limit=2)) == 2
        assert len(await harness.backend.list_conversations(limit=1)) == 1

    @scenario(
        "conversations.keyset_paging",
        "list_conversations_page walks a user's conversations a page at a time: each "
        "exactly once, most recently updated first, the last page's next_cursor None; a "
        "write during the walk makes no conversation appear twice, and the written ones "
        "lead the next walk; a cursor the backend did not make is an InvalidRequestError "
        "naming cursor",
    )
    async def test_conversations_keyset_paging(self, harness: Harness) -> None:
        # A fresh user: the only one of a multi-tenant instance, else a filter of the
        # listing (every backend takes user_identifier there), so the walk sees only the
        # conversations made here, on a shared store too.
        caps = harness.caps
        backend = await harness.tenant_backend() if caps.multi_tenant else harness.backend
        user = harness.new_user()
        scoped = user if backend.capabilities.user_scoped_calls else None
        handles: dict[UUID, str] = {}
        for _ in range(7):
            handle = await harness.new_session(backend=backend, user=user, create=True)
            conversation = await backend.get_conversation(handle, limit=1, user_identifier=scoped)
            handles[conversation.id] = handle
            await anyio.sleep(0.01)  # distinct update times: the order is then known
        newest_first = list(handles)[::-1]

        seen, pages = await _walk(backend, user, 3)
        assert seen == newest_first, "a walk is not every conversation once, newest first"
        if not caps.max_page_size:  # a store that serves its own pages fills them
            sizes = [len(p.conversations) for p in pages]
            assert sizes == [3, 3, 1], f"pages of 3 over 7 were {sizes}: full, the last says so"
        listed = await backend.list_conversations(limit=7, user_identifier=user)
        assert [c.id for c in listed] == newest_first, "list_conversations orders otherwise"

        # Writes during a walk: one to a conversation already listed, one to a conversation
        # not listed yet. Neither may appear twice; every other one appears exactly once.
        touched_listed, touched_ahead = newest_first[1], newest_first[5]

        async def write() -> None:
            for conversation_id in (touched_listed, touched_ahead):
                await backend.add_message(
                    handles[conversation_id], "user", "touch", user_identifier=scoped
                )
                await anyio.sleep(0.01)

        seen, _ = await _walk(backend, user, 3, between=write())
        assert len(seen) == len(set(seen)), "a write during the walk listed a conversation twice"
        untouched = [c for c in newest_first if c not in (touched_listed, touched_ahead)]
        assert [c for c in seen if c in untouched] == untouched, "a conversation was missed"
        assert touched_listed in seen, "a conversation listed before its write went missing"
        seen, _ = await _walk(backend, user, 3)
        assert seen == [touched_ahead, touched_listed, *untouched], "writes did not lead"

        page = await backend.list_conversations_page(limit=3, user_identifier=user)
        assert page.next_cursor is not None
        forged = page.next_cursor[:-4] + ("AAAA" if page.next_cursor[-4:] != "AAAA" else "BBBB")
        for cursor in ("garbage", "other-backend.WzEsMl0", forged, page.next_cursor + "%"):
            with invalid("cursor"):
                await backend.list_conversations_page(cursor=cursor, user_identifier=user)
        with invalid("limit"):
            await backend.list_conversations_page(limit=0, user_identifier=user)
        again = await backend.list_conversations_page(limit=3, user_identifier=user)
        assert [c.id for c in again.conversations] == [c.id for c in page.conversations]
        if caps.max_page_size:
            with capability_warnings() as caught:
                capped = await backend.list_conversations_page(
                    limit=caps.max_page_size + 1, user_identifier=user
                )
            assert caught, "a limit above max_page_size was clamped without a warning"
            assert len(capped.conversations) == len(newest_first)
