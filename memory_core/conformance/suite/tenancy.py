"""Tenancy: with multi_tenant=True every call needs user_identifier and sees only that
user's data.

The entity scenarios create entities: they are removed at clean-up where the backend can
delete entities, and n/a otherwise unless the store is throwaway
(:meth:`~memory_core.conformance.harness.Harness.allow_entities`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from uuid import uuid4

import pytest

from memory_core import EntityRef, MemoryBackend, MessageRole, NotFoundError
from memory_core import requests as rq

from ..checks import capability_warnings, invalid, refused, word
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase

T = TypeVar("T")


async def _or_none(call: Awaitable[T]) -> T | None:
    """The result, or None when the store says the thing does not exist for this user."""
    try:
        return await call
    except NotFoundError:
        return None


async def _alice_session(harness: Harness) -> tuple[MemoryBackend, str, str, str, str]:
    """A multi-tenant backend, two users and a session of the first holding a secret."""
    backend = await harness.tenant_backend()
    alice, bob = harness.new_user(), harness.new_user()
    handle = await harness.new_session(backend=backend, user=alice)
    harness.track(handle, backend=backend, user=bob)
    secret = f"alice secret {word()}"
    await backend.add_message(handle, "user", secret, user_identifier=alice)
    return backend, alice, bob, handle, secret


async def _neighbours_isolated(backend: MemoryBackend, alice: str, bob: str, own: Any) -> None:
    """The store's ``message_neighbours`` finds the message for its owner only (the
    public API only ever asks it about the caller's own hits)."""

    async def around(user: str) -> list[list[Any]]:
        scope = rq.Scope(user_identifier=user, tenant=user)
        req = rq.MessageNeighbours(message_ids=(own,), count=1, scope=scope)
        return [[m.id for m in window] for window in await backend.store.message_neighbours(req)]

    assert await around(alice) == [[own]], "the owner's message has no window"
    assert await around(bob) == [[]], "another user's message_neighbours read alice's message"


class TenancySuite(SuiteBase):
    """Scenarios of area ``tenancy``."""

    @scenario(
        "tenancy.extractor_batch",
        "with multi_tenant=True, an extractor's mentions in a batch write link the writer's "
        "own entities; another user with the same name gets an entity of their own",
        requires=("multi_tenant", "explicit_mentions", "entities"),
    )
    async def test_tenancy_extractor_batch(self, harness: Harness) -> None:
        harness.allow_entities()
        name = f"Ent{uuid4().hex[:10]}"

        def extract(text: str) -> list[EntityRef]:
            return [EntityRef(name=name, type="PERSON")] if name in text else []

        backend = await harness.open(multi_tenant=True, extractor=extract)
        alice, bob = harness.new_user(), harness.new_user()
        batch = [{"role": "user", "content": f"first {name}"}, {"role": "user", "content": "x"}]
        mentioned: dict[str, str] = {}
        for user in (alice, bob):
            handle = await harness.new_session(backend=backend, user=user)
            stored = await backend.add_messages_batch(
                handle, batch, extract_entities=True, user_identifier=user
            )
            assert [len(m.mentions) for m in stored] == [1, 0], "the batch skipped the extractor"
            [ref] = stored[0].mentions
            assert ref.id, "a batch mention carries no entity id"
            mentioned[user] = ref.id
            read = (await harness.messages(handle, backend=backend, user=user))[0]
            assert [r.id for r in read.mentions] == [ref.id], "the mention was not stored"
        assert mentioned[alice] != mentioned[bob], "two users share one extracted entity"
        for user in (alice, bob):
            own = [e.id for e in await backend.find_entities(name, user_identifier=user)]
            assert own == [mentioned[user]], f"{user} sees {own}, not only their own entity"

    @scenario(
        "tenancy.user_on_every_call",
        "without multi_tenant, every call takes user_identifier without a warning, and "
        "listing by that user finds the session",
        requires="user_scoped_calls",
    )
    async def test_tenancy_user_on_every_call(self, harness: Harness) -> None:
        user = harness.new_user()
        handle = await harness.new_session(user=user, create=True)
        term = word()
        backend = harness.backend
        with capability_warnings() as caught:
            await backend.add_message(handle, "user", f"about {term}", user_identifier=user)
            read = await backend.get_conversation(handle, user_identifier=user)
            hits = await backend.search_messages(term, session_id=handle, user_identifier=user)
            context = await backend.get_context(term, session_id=handle, user_identifier=user)
            listed = await backend.list_conversations(limit=1000, user_identifier=user)
        assert not caught, [str(w.message) for w in caught]
        assert [m.content for m in read.messages] == [f"about {term}"]
        assert [m.content for m in hits] == [f"about {term}"]
        assert term in context
        assert read.id in {c.id for c in listed}, "listing by user missed the user's session"

    @scenario(
        "tenancy.option_honest",
        "multi_tenant=True opens a backend requiring user_identifier, or is refused at open",
    )
    async def test_tenancy_option_honest(self, harness: Harness) -> None:
        if not harness.caps.multi_tenant:
            with refused(harness.backend, "open"):
                harness.open_unconnected(multi_tenant=True)
            return
        backend = await harness.tenant_backend()
        assert backend.multi_tenant is True
        with invalid("user_identifier"):
            await backend.get_conversation(harness.unique())

    @scenario(
        "tenancy.reads_isolated",
        "another user's reads, searches, listings and context never show a user's data",
        requires="multi_tenant",
    )
    async def test_tenancy_reads_isolated(self, harness: Harness) -> None:
        backend, alice, bob, handle, secret = await _alice_session(harness)
        term = secret.split()[-1]
        mine = await backend.get_conversation(handle, user_identifier=alice)
        assert [m.content for m in mine.messages] == [secret]
        # the owner does see it everywhere (so the checks below cannot pass on emptiness)
        hits = await backend.search_messages(term, session_id=handle, user_identifier=alice)
        assert [h.content for h in hits] == [secret]
        if harness.caps.search_global:
            hits = await backend.search_messages(term, user_identifier=alice)
            assert [h.content for h in hits] == [secret], "alice's global search misses hers"
        listed = await backend.list_conversations(limit=1000, user_identifier=alice)
        assert mine.id in {c.id for c in listed}, "alice does not list her own conversation"
        if harness.caps.list_sessions:
            rows = await backend.list_sessions(limit=1000, user_identifier=alice)
            assert mine.id in {r.conversation_id for r in rows}, "alice's list_sessions misses it"

        seen = await _or_none(backend.get_conversation(handle, user_identifier=bob))
        assert seen is None or seen.messages == [], "bob read alice's session"
        by_id = await _or_none(
            backend.get_conversation(conversation_id=mine.id, user_identifier=bob)
        )
        assert by_id is None or by_id.messages == [], "bob read alice's conversation by id"
        bob_hits = await _or_none(
            backend.search_messages(term, session_id=handle, user_identifier=bob)
        )
        assert not bob_hits, "bob's scoped search found alice's message"
        if harness.caps.search_global:
            everywhere = await backend.search_messages(term, user_identifier=bob)
            assert everywhere == []
        listed = await backend.list_conversations(limit=1000, user_identifier=bob)
        assert mine.id not in {c.id for c in listed}, "bob lists alice's conversation"
        if harness.caps.list_sessions:
            rows = await backend.list_sessions(limit=1000, user_identifier=bob)
            assert mine.id not in {r.conversation_id for r in rows}
        context = await _or_none(backend.get_context(term, session_id=handle, user_identifier=bob))
        assert secret not in (context or ""), "bob's context shows alice's message"
        if harness.caps.message_neighbours:
            await _neighbours_isolated(backend, alice, bob, mine.messages[0].id)
        if harness.caps.conversation_summary:
            summary = await _or_none(backend.get_conversation_summary(handle, user_identifier=bob))
            assert summary is None or summary.message_count == 0

    @scenario(
        "tenancy.id_string_isolated",
        "with multi_tenant=True, the id string of another user's conversation is only a "
        "session name: reading it shows nothing of theirs, writing to it writes a session of "
        "one's own, and clearing it leaves theirs",
        requires="multi_tenant",
    )
    async def test_tenancy_id_string_isolated(self, harness: Harness) -> None:
        backend, alice, bob, handle, secret = await _alice_session(harness)
        text = str((await backend.get_conversation(handle, user_identifier=alice)).id)
        mine = await backend.get_conversation(text, user_identifier=alice)
        assert [m.content for m in mine.messages] == [secret], "the owner's id string missed"
        harness.track(text, backend=backend, user=bob)
        seen = await backend.get_conversation(text, user_identifier=bob)
        assert seen.messages == [] and str(seen.id) != text, "bob read alice's conversation"
        hits = await backend.search_messages(
            secret.split()[-1], session_id=text, user_identifier=bob
        )
        assert hits == [], "bob's search by alice's id string found her message"
        await backend.add_message(text, "user", "bob's own", user_identifier=bob)
        assert await harness.contents(text, backend=backend, user=bob) == ["bob's own"]
        await backend.clear_session(text, user_identifier=bob)
        assert await harness.contents(handle, backend=backend, user=alice) == [secret], (
            "bob's write or clear by alice's id string reached her conversation"
        )

    @scenario(
        "tenancy.user_identifier_required",
        "under multi_tenant every call without user_identifier is rejected and writes nothing",
        requires="multi_tenant",
    )
    async def test_tenancy_user_identifier_required(self, harness: Harness) -> None:
        backend = await harness.tenant_backend()
        alice = harness.new_user()
        handle = await harness.new_session(backend=backend, user=alice)
        caps = harness.caps
        batch = [{"role": "user", "content": "x"}]
        calls: list[Callable[[], Awaitable[Any]]] = [
            lambda: backend.add_message(handle, "user", "no user"),
            lambda: backend.add_messages_batch(handle, batch),
            lambda: backend.bulk_add_messages(handle, batch),
            lambda: backend.get_conversation(handle),
            lambda: backend.create_conversation(session_id=harness.unique()),
            lambda: backend.list_conversations(),
            lambda: backend.search_messages("x", session_id=handle),
            lambda: backend.get_context(session_id=handle),
            lambda: backend.clear_session(handle),
        ]
        if caps.search_global:
            calls.append(lambda: backend.search_messages("x"))
        if caps.delete_message:
            calls.append(lambda: backend.delete_message(uuid4()))
        if caps.list_sessions:
            calls.append(lambda: backend.list_sessions())
        if caps.conversation_summary:
            calls.append(lambda: backend.get_conversation_summary(handle))
        if caps.entities:
            calls.append(lambda: backend.add_entity(word(), "PERSON"))
            calls.append(lambda: backend.find_entities(word()))
        for call in calls:
            with invalid("user_identifier"):
                await call()
        assert await harness.contents(handle, backend=backend, user=alice) == []

    @scenario(
        "tenancy.writes_isolated",
        "two users writing to the same session name each see only their own messages",
        requires="multi_tenant",
    )
    async def test_tenancy_writes_isolated(self, harness: Harness) -> None:
        backend, alice, bob, handle, secret = await _alice_session(harness)
        if harness.caps.client_chosen_ids:
            await backend.add_message(handle, "user", "bob's own", user_identifier=bob)
            bobs = await backend.get_conversation(handle, user_identifier=bob)
            assert [m.content for m in bobs.messages] == ["bob's own"]
        else:
            try:
                await backend.add_message(handle, "user", "bob's intrusion", user_identifier=bob)
            except NotFoundError:
                pass
            else:
                raise AssertionError("bob wrote into alice's conversation")
        alices = await backend.get_conversation(handle, user_identifier=alice)
        assert [m.content for m in alices.messages] == [secret]

    @scenario(
        "tenancy.user_keys_exact",
        "users are told apart exactly: identifiers differing only in case are different users, "
        "and (user, session) pairs never collide when concatenated",
        requires=("multi_tenant", "client_chosen_ids"),
    )
    async def test_tenancy_user_keys_exact(self, harness: Harness) -> None:
        backend = await harness.tenant_backend()
        user, session = harness.new_user(), harness.unique()
        pairs = [
            (user, session),
            (user.upper(), session),  # same name, user differing only in case
            (f"{user}ab", f"c{session}"),  # user + session == the next pair's
            (f"{user}a", f"bc{session}"),
        ]
        for n, (who, name) in enumerate(pairs):
            handle = await harness.new_session(backend=backend, user=who, name=name)
            await backend.add_message(handle, "user", f"message {n}", user_identifier=who)
        for n, (who, name) in enumerate(pairs):
            read = await backend.get_conversation(name, user_identifier=who)
            assert [m.content for m in read.messages] == [f"message {n}"], (
                f"user {who!r} session {name!r} shares data with another user"
            )

    @scenario(
        "tenancy.deletes_isolated",
        "another user can neither delete a user's message nor clear their session",
        requires="multi_tenant",
    )
    async def test_tenancy_deletes_isolated(self, harness: Harness) -> None:
        backend, alice, bob, handle, secret = await _alice_session(harness)
        [message] = (await backend.get_conversation(handle, user_identifier=alice)).messages
        if harness.caps.delete_message:
            assert await backend.delete_message(message.id, user_identifier=bob) is False
        cleared = await _or_none(backend.clear_session(handle, user_identifier=bob))
        assert not cleared, "bob's clear_session reported clearing alice's session"
        alices = await backend.get_conversation(handle, user_identifier=alice)
        assert [m.content for m in alices.messages] == [secret]
        if harness.caps.delete_message:
            assert await backend.delete_message(message.id, user_identifier=alice) is True
            alices = await backend.get_conversation(handle, user_identifier=alice)
            assert alices.messages == [], "alice could not delete her own message"

    @scenario(
        "tenancy.entities_isolated",
        "entities added as one user are invisible to another user's find_entities, and the "
        "other user's add_entity of the same name makes a separate entity",
        requires=("multi_tenant", "entities"),
    )
    async def test_tenancy_entities_isolated(self, harness: Harness) -> None:
        harness.allow_entities()
        backend = await harness.tenant_backend()
        alice, bob = harness.new_user(), harness.new_user()
        name = word().capitalize()
        mine = await harness.add_entity(
            name, "ORGANIZATION", backend=backend, user_identifier=alice
        )
        assert await backend.find_entities(name, user_identifier=bob) == [], (
            "bob finds alice's entity by name"
        )
        assert await backend.find_entities(mine.id, user_identifier=bob) == [], (
            "bob finds alice's entity by id"
        )
        theirs = await harness.add_entity(
            name, "ORGANIZATION", backend=backend, user_identifier=bob
        )
        assert theirs.id != mine.id, "bob's add_entity returned alice's entity"
        found = await backend.find_entities(name, user_identifier=bob)
        assert [e.id for e in found] == [theirs.id]
        found = await backend.find_entities(name, user_identifier=alice)
        assert [e.id for e in found] == [mine.id]
        if harness.caps.delete_entity:
            assert await backend.delete_entity(mine.id, user_identifier=bob) is False
            assert await backend.delete_entity(mine.id, user_identifier=alice) is True
            assert await backend.find_entities(name, user_identifier=alice) == []

    @scenario(
        "tenancy.mentions_isolated",
        "another user's explicit mentions never link a user's entity: its id is unknown "
        "(NotFoundError, nothing written), its name alone links nothing, name + type makes "
        "the other user's own entity",
        requires=("multi_tenant", "entities", "explicit_mentions"),
    )
    async def test_tenancy_mentions_isolated(self, harness: Harness) -> None:
        harness.allow_entities()
        backend = await harness.tenant_backend()
        alice, bob = harness.new_user(), harness.new_user()
        mine = await harness.add_entity(
            word().capitalize(), "PERSON", backend=backend, user_identifier=alice
        )
        handle = await harness.new_session(backend=backend, user=bob)

        async def mention(ref: EntityRef) -> list[str | None]:
            stored = await backend.add_message(
                handle,
                "user",
                f"about {mine.name}",
                user_identifier=bob,
                extraction_mode="explicit",
                explicit_mentions=[ref],
            )
            return [r.id for r in stored.mentions]

        with pytest.raises(NotFoundError):
            await mention(EntityRef(id=mine.id))
        assert await harness.contents(handle, backend=backend, user=bob) == []
        assert await mention(EntityRef(name=mine.name)) == [], "a bare name linked alice's entity"
        typed = await mention(EntityRef(name=mine.name, type="PERSON"))
        assert len(typed) == 1 and typed[0] != mine.id, "a typed ref linked alice's entity"
        for message in await harness.messages(handle, backend=backend, user=bob):
            assert mine.id not in [r.id for r in message.mentions]
        found = await backend.find_entities(mine.name, user_identifier=alice)
        assert [e.id for e in found] == [mine.id], "alice's entities changed"

        own = await harness.new_session(backend=backend, user=alice)
        stored = await backend.add_message(
            own,
            "user",
            "alice's own mention",
            user_identifier=alice,
            extraction_mode="explicit",
            explicit_mentions=[EntityRef(id=mine.id)],
        )
        assert [r.id for r in stored.mentions] == [mine.id]

    @scenario(
        "tenancy.open_turn_finds_own_entities",
        "with multi_tenant=True, open_turn finds and links only the writer's own entities",
        requires=("multi_tenant", "explicit_mentions", "entities", "idempotency_keys"),
    )
    async def test_tenancy_open_turn_finds_own_entities(self, harness: Harness) -> None:
        harness.allow_entities()
        name = f"Ent{uuid4().hex[:10]}"
        backend = await harness.tenant_backend()
        alice, bob = harness.new_user(), harness.new_user()
        own = await harness.add_entity(name, "PERSON", backend=backend, user_identifier=alice)
        for user, expected in ((alice, [own.id]), (bob, [])):
            handle = await harness.new_session(backend=backend, user=user)
            found, stored, _ = await backend._add_keyed(
                handle,
                MessageRole.USER,
                f"about {name}",
                {},
                f"{handle}-q",
                [],
                user,
                ([name, own.id], 8),
            )
            assert [e.id for e in found] == expected, f"{user} found {[e.id for e in found]}"
            assert [str(r.id) for r in stored.mentions] == expected
