"""Promises of several areas that no other scenario pinned down: the tenant filter on the
less-used paths (calls naming a conversation by id, ``since`` reads, metadata filters,
prefixes, summaries), the time ``add_message`` reports, the order a delete leaves when the
clock and the sequence disagree, and the order of a message's mentions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from memory_core import EntityRef, MemoryBackend, NotFoundError

from ..checks import contents, word
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase
from .tenancy import _or_none

# How far a store's clock may be from the caller's for the time a write reports: the
# store (Neo4j, a NAMS service) may run on another machine.
CLOCK_SKEW = timedelta(seconds=5)
# Backends whose add_message reports the caller's clock, because the store's answer
# carries no time (README, NAMS adapter): a later read shows the store's own.
CLIENT_CLOCK_BACKENDS = frozenset({"nams"})
EPOCH = datetime(1970, 1, 2, tzinfo=UTC)


async def _refused_write(call: Awaitable[Any], what: str) -> None:
    """``call`` writes to a conversation the caller cannot see: NotFoundError."""
    try:
        await call
    except NotFoundError:
        return
    raise AssertionError(f"bob's {what} by alice's conversation id was accepted")


async def _bob_by_id_reads(
    backend: MemoryBackend, harness: Harness, bob: str, cid: UUID, handle: str, term: str
) -> dict[str, Any]:
    """What bob's reads naming alice's conversation (by id, or by name with ``since``)
    return; None where the store says it does not exist for him."""
    caps = harness.caps
    reads: dict[str, Callable[[], Awaitable[Any]]] = {
        "since read by id": lambda: backend.get_conversation(
            conversation_id=cid, since=EPOCH, user_identifier=bob
        ),
        "since read by name": lambda: backend.get_conversation(
            handle, since=EPOCH, user_identifier=bob
        ),
        "search by id": lambda: backend.search_messages(
            term, conversation_id=cid, user_identifier=bob
        ),
        "context by id": lambda: backend.get_context(
            term, conversation_id=cid, user_identifier=bob
        ),
        "listing page": lambda: backend.list_conversations_page(limit=1000, user_identifier=bob),
    }
    if caps.conversation_summary:
        reads["summary by id"] = lambda: backend.get_conversation_summary(
            conversation_id=cid, user_identifier=bob
        )
    if caps.list_sessions:
        reads["sessions by prefix"] = lambda: backend.list_sessions(
            prefix=handle, user_identifier=bob
        )
    if caps.search_global and caps.search_metadata_filters and caps.message_metadata:
        reads["filtered search"] = lambda: backend.search_messages(
            term, metadata_filters={"owner": "alice"}, user_identifier=bob
        )
    return {name: await _or_none(read()) for name, read in reads.items()}


def _leaks(seen: dict[str, Any], cid: UUID, secret: str) -> list[str]:
    """The names of the reads in ``seen`` that showed anything of alice's."""
    leaked = []
    for name, value in seen.items():
        if value is None:
            continue
        if name.endswith(("read by id", "read by name")):
            bad = bool(value.messages) or value.id == cid
        elif name.startswith("search") or name == "filtered search":
            bad = bool(value)
        elif name == "context by id":
            bad = secret in value
        elif name == "listing page":
            bad = cid in {c.id for c in value.conversations}
        elif name == "summary by id":
            bad = value.message_count != 0 or secret in (value.summary or "")
        else:  # sessions by prefix
            bad = cid in {row.conversation_id for row in value}
        if bad:
            leaked.append(name)
    return leaked


class GuardsSuite(SuiteBase):
    """Scenarios of several areas guarding promises the area suites left unchecked."""

    @scenario(
        "tenancy.lesser_paths_isolated",
        "with multi_tenant=True, another user naming a user's conversation by id, reading it "
        "with since, filtering, prefixing or summarising sees none of it, and writing or "
        "clearing by its id is NotFoundError or a no-op that leaves it whole",
        requires="multi_tenant",
    )
    async def test_tenancy_lesser_paths_isolated(self, harness: Harness) -> None:
        backend = await harness.tenant_backend()
        alice, bob = harness.new_user(), harness.new_user()
        handle = await harness.new_session(backend=backend, user=alice)
        harness.track(handle, backend=backend, user=bob)
        term = word()
        secret = f"alice secret {term}"
        metadata = {"owner": "alice"} if harness.caps.message_metadata else None
        await backend.add_message(handle, "user", secret, metadata=metadata, user_identifier=alice)
        cid = (await backend.get_conversation(handle, user_identifier=alice)).id
        own = await backend.get_conversation(
            conversation_id=cid, since=EPOCH, user_identifier=alice
        )
        assert contents(own.messages) == [secret], "the owner's since read by id misses hers"

        seen = await _bob_by_id_reads(backend, harness, bob, cid, handle, term)
        assert not _leaks(seen, cid, secret), f"bob's {_leaks(seen, cid, secret)} showed hers"
        one = [{"role": "user", "content": "bob's intrusion"}]
        await _refused_write(
            backend.add_message(
                conversation_id=cid, role="user", content="bob's", user_identifier=bob
            ),
            "add_message",
        )
        await _refused_write(
            backend.add_messages_batch(conversation_id=cid, messages=one, user_identifier=bob),
            "add_messages_batch",
        )
        await _refused_write(
            backend.bulk_add_messages(conversation_id=cid, messages=one, user_identifier=bob),
            "bulk_add_messages",
        )
        cleared = await _or_none(backend.clear_session(conversation_id=cid, user_identifier=bob))
        assert not cleared, "bob's clear_session by id reported clearing alice's conversation"
        after = await backend.get_conversation(conversation_id=cid, user_identifier=alice)
        assert contents(after.messages) == [secret], "bob's calls by id changed alice's"

    @scenario(
        "writes.created_at_is_write_time",
        "add_message returns an aware created_at inside the caller's clock window of the call "
        "(5 s allowed for the store's clock) and a later read returns the same instant; a "
        "backend whose store answers without a time reports the caller's clock, inside the "
        "window exactly, and reads back the store's, inside it too",
    )
    async def test_writes_created_at_is_write_time(self, harness: Harness) -> None:
        handle = await harness.new_session()
        for n in range(3):
            before = datetime.now(UTC)
            stored = await harness.backend.add_message(handle, "user", f"at {n}")
            after = datetime.now(UTC)
            [read] = await harness.messages(handle, limit=1)
            assert read.id == stored.id
            for label, when in (("returned", stored.created_at), ("read", read.created_at)):
                assert when.tzinfo is not None, f"the {label} created_at is naive"
                assert before - CLOCK_SKEW <= when <= after + CLOCK_SKEW, (
                    f"the {label} created_at {when} is outside the call [{before}, {after}]"
                )
            if harness.backend.name in CLIENT_CLOCK_BACKENDS:
                assert before <= stored.created_at <= after, (
                    f"the returned created_at {stored.created_at} is not the caller's clock "
                    f"during the call [{before}, {after}]"
                )
            else:
                assert stored.created_at == read.created_at, (
                    f"add_message returned {stored.created_at}, a read {read.created_at}"
                )

    @scenario(
        "delete.sequence_order_kept",
        "after deleting messages whose caller timestamps run backwards, the rest and later "
        "appends still read in insertion order (the sequence, not the clock), also with limit",
        requires=("delete_message", "caller_timestamps"),
    )
    async def test_delete_sequence_order_kept(self, harness: Harness) -> None:
        handle = await harness.new_session()
        base = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
        batch = [
            {"role": "user", "content": f"b{i}", "timestamp": base - timedelta(minutes=i)}
            for i in range(5)
        ]
        stored = await harness.backend.add_messages_batch(handle, batch)
        assert await harness.backend.delete_message(stored[1].id) is True
        assert await harness.contents(handle) == ["b0", "b2", "b3", "b4"]
        assert await harness.contents(handle, limit=2) == ["b3", "b4"]
        assert await harness.backend.delete_message(stored[3].id) is True
        await harness.backend.add_message(handle, "user", "x")
        await harness.backend.add_message(handle, "user", "y")
        assert await harness.contents(handle) == ["b0", "b2", "b4", "x", "y"]
        assert await harness.contents(handle, limit=3) == ["b4", "x", "y"]

    @scenario(
        "entities.mention_order",
        "a message's mentions come back in the order they were given (ids, typed and bare "
        "names mixed; a repeat keeps its first place; an extractor's in a batch too), on the "
        "write and on later reads",
        requires=("explicit_mentions", "entities"),
    )
    async def test_entities_mention_order(self, harness: Harness) -> None:
        harness.allow_entities()
        zulu = await harness.add_entity(f"Zulu{word()}", "PERSON")
        alpha = await harness.add_entity(f"Alpha{word()}", "CONCEPT")
        mike = await harness.add_entity(f"Mike{word()}", "ORGANIZATION")
        bravo = f"Bravo{word()}"
        refs = [
            EntityRef(id=zulu.id),
            EntityRef(name=mike.name),
            EntityRef(name=bravo, type="LOCATION"),
            EntityRef(id=alpha.id),
            EntityRef(id=mike.id),
        ]
        expected = [zulu.name, mike.name, bravo, alpha.name]
        handle = await harness.new_session()
        stored = await harness.backend.add_message(
            handle, "user", "ordered", extraction_mode="explicit", explicit_mentions=refs
        )
        assert [r.name for r in stored.mentions] == expected, "the write reordered mentions"
        [read] = await harness.messages(handle)
        assert [r.name for r in read.mentions] == expected, "a read reordered mentions"

        def extract(_text: str) -> list[EntityRef]:
            return [
                EntityRef(name=zulu.name, type="PERSON"),
                EntityRef(name=alpha.name, type="CONCEPT"),
            ]

        backend = await harness.open(extractor=extract)
        batched = await harness.new_session(backend=backend)
        await backend.add_messages_batch(
            batched, [{"role": "user", "content": "extracted"}], extract_entities=True
        )
        [read] = await harness.messages(batched, backend=backend)
        assert [r.name for r in read.mentions] == [zulu.name, alpha.name], (
            "a batch reordered the extractor's mentions"
        )
