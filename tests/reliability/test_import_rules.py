"""The rules every bulk import hook keeps (embedded, Bolt, PostgreSQL), checked through the
public API on each: which records are skipped and why, what a skipped conversation's
messages become, the times a conversation keeps, re-imports of renamed entities, and
mentions of renamed messages that arrive in a later batch."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest

from memory_core.archive.hooks import FOREIGN_ID, NOT_CARRIED, RENAMED
from memory_core.transfer import import_memory
from memory_core.transfer import importer as importer_module

from .archives import archive, conversation, entity, loot_linking, mention, message
from .subjects import Subject

pytestmark = pytest.mark.anyio


def keyed(mid: str, cid: str, content: str, key: str, seq: int) -> dict[str, object]:
    return {**message(mid, cid, content, seq), "idempotency_key": key}


async def test_a_repeated_idempotency_key_is_skipped_and_the_rest_arrive(
    hook_store: Subject,
) -> None:
    session, cid = hook_store.name(), str(uuid4())
    lines = archive(
        conversation(cid, session, None),
        keyed(str(uuid4()), cid, "first", "k-1", 1),
        keyed(str(uuid4()), cid, "again", "k-1", 2),
        message(str(uuid4()), cid, "after it", 3),
        keyed(str(uuid4()), cid, "own key", "k-2", 4),
    )
    report = await import_memory(hook_store.backend, lines)
    read = await hook_store.backend.get_conversation(session)
    assert [m.content for m in read.messages] == ["first", "after it", "own key"]
    assert report.copied["message"] == 3
    why = "its idempotency key is already in the conversation"
    assert dict(report.skipped) == {("message", why): 1}
    # a key the target conversation already holds, from another archive
    more = archive(
        conversation(cid, session, None), keyed(str(uuid4()), cid, "third try", "k-2", 9)
    )
    again = await import_memory(hook_store.backend, more)
    assert again.skipped[("message", why)] == 1
    assert again.copied["message"] == 0
    read = await hook_store.backend.get_conversation(session)
    assert [m.content for m in read.messages] == ["first", "after it", "own key"]


async def test_a_mention_of_a_message_that_was_skipped_is_skipped_too(
    hook_store: Subject,
) -> None:
    session, cid, eid = hook_store.name(), str(uuid4()), str(uuid4())
    first, again = str(uuid4()), str(uuid4())
    lines = archive(
        entity(eid, None, f"Acme {session}"),
        conversation(cid, session, None),
        keyed(first, cid, "first", "k-1", 1),
        keyed(again, cid, "again", "k-1", 2),  # skipped: its key is taken
        mention(again, eid),
        mention(first, eid),
    )
    report = await import_memory(hook_store.backend, lines)
    assert report.skipped[("mention", "its message was not carried")] == 1
    assert report.copied["mention"] == 1
    [read] = (await hook_store.backend.get_conversation(session)).messages
    assert [str(ref.id) for ref in read.mentions] == [eid]


async def test_a_conversation_without_a_user_is_not_put_in_a_multi_tenant_target(
    hook_tenants: Subject,
) -> None:
    cid = str(uuid4())
    lines = archive(conversation(cid, hook_tenants.name(), None), message(str(uuid4()), cid, "x"))
    report = await import_memory(hook_tenants.backend, lines)
    assert dict(report.skipped) == {
        ("conversation", "no user_identifier and the target is multi-tenant"): 1,
        ("message", NOT_CARRIED): 1,
    }
    assert not report.copied["conversation"] and not report.copied["message"]


async def test_the_same_tenants_conversation_imported_again_is_found_in_place(
    hook_tenants: Subject,
) -> None:
    backend = hook_tenants.backend
    alice, session, cid = hook_tenants.name("alice"), hook_tenants.name(), str(uuid4())
    lines = archive(conversation(cid, session, alice), message(str(uuid4()), cid, "one"))
    await import_memory(backend, lines)
    again = await import_memory(backend, lines)
    assert again.skipped[("conversation", "already in the target")] == 1
    assert ("conversation", FOREIGN_ID) not in again.skipped
    assert not again.copied["message"]
    over = await import_memory(backend, lines, on_conflict="overwrite")
    assert over.copied["conversation"] == 1 and over.copied["message"] == 1
    read = await backend.get_conversation(session, user_identifier=alice)
    assert (str(read.id), [m.content for m in read.messages]) == (cid, ["one"])


async def test_an_id_of_another_session_is_not_taken_nor_are_its_messages(
    hook_store: Subject,
) -> None:
    cid, first, second = str(uuid4()), hook_store.name(), hook_store.name()
    await import_memory(
        hook_store.backend, archive(conversation(cid, first, None), message(str(uuid4()), cid, "a"))
    )
    lines = archive(conversation(cid, second, None), message(str(uuid4()), cid, "b", 1))
    report = await import_memory(hook_store.backend, lines)
    assert report.skipped[("conversation", "its id belongs to another session in the target")] == 1
    assert report.skipped[("message", NOT_CARRIED)] == 1
    assert report.copied["message"] == 0 and report.copied["conversation"] == 0
    read = await hook_store.backend.get_conversation(first)
    assert [(str(read.id), [m.content for m in read.messages])] == [(cid, ["a"])]
    other = await hook_store.backend.get_conversation(second)  # embedded: empty, not None
    assert other is None or (other.messages == [] and str(other.id) != cid)


async def test_a_conversation_keeps_its_times_and_a_later_message_moves_it_on(
    hook_store: Subject,
) -> None:
    quiet, busy = hook_store.name(), hook_store.name()
    quiet_id, busy_id = str(uuid4()), str(uuid4())
    updated = "2026-06-01T12:00:00.000000Z"
    later = "2026-07-01T08:00:00.000000Z"
    latest = "2026-07-02T08:00:00.000000Z"
    lines = archive(
        {**conversation(quiet_id, quiet, None), "updated_at": updated},
        {**conversation(busy_id, busy, None), "updated_at": updated},
        {**message(str(uuid4()), busy_id, "newest", 1), "created_at": latest},
        {**message(str(uuid4()), busy_id, "older", 2), "created_at": later},
    )
    await import_memory(hook_store.backend, lines)
    read = await hook_store.backend.get_conversation(quiet)
    assert read.updated_at == datetime(2026, 6, 1, 12, tzinfo=UTC)
    assert read.created_at == datetime(2026, 5, 20, 9, 30, tzinfo=UTC)
    read = await hook_store.backend.get_conversation(busy)
    assert read.updated_at == datetime(2026, 7, 2, 8, tzinfo=UTC)


async def test_a_renamed_entity_imported_again_is_found_not_refused(hook_tenants: Subject) -> None:
    backend = hook_tenants.backend
    alice, mallory = hook_tenants.name("alice"), hook_tenants.name("mallory")
    eid = str(uuid4())
    await import_memory(backend, archive(entity(eid, alice, "Alice Corp")))
    lines = archive({**entity(eid, mallory, "Mallory Corp"), "description": "v1"})
    first = await import_memory(backend, lines)
    assert first.not_carried[("entity.id", RENAMED)] == 1
    again = await import_memory(backend, lines)
    assert again.skipped[("entity", "already in the target")] == 1
    assert ("entity", FOREIGN_ID) not in again.skipped
    changed = archive({**entity(eid, mallory, "Mallory Corp"), "description": "v2"})
    over = await import_memory(backend, changed, on_conflict="overwrite")
    assert over.copied["entity"] == 1
    found = await backend.find_entities("Mallory Corp", user_identifier=mallory)
    assert [(e.name, e.description) for e in found] == [("Mallory Corp", "v2")]
    assert str(found[0].id) != eid
    theirs = await backend.find_entities(eid, user_identifier=alice)
    assert [(str(e.id), e.name, e.description) for e in theirs] == [(eid, "Alice Corp", None)]


async def test_the_same_tenants_entity_imported_again_is_overwritten_in_place(
    hook_tenants: Subject,
) -> None:
    backend = hook_tenants.backend
    alice = hook_tenants.name("alice")
    eid = str(uuid4())
    await import_memory(backend, archive({**entity(eid, alice, "Acme"), "description": "v1"}))
    again = await import_memory(backend, archive({**entity(eid, alice, "Acme")}))
    assert again.skipped[("entity", "already in the target")] == 1
    changed = archive({**entity(eid, alice, "Acme"), "description": "v2"})
    over = await import_memory(backend, changed, on_conflict="overwrite")
    assert over.copied["entity"] == 1 and not over.skipped
    found = await backend.find_entities("Acme", user_identifier=alice)
    assert [(str(e.id), e.description) for e in found] == [(eid, "v2")]


async def test_a_mention_of_a_renamed_message_in_a_later_batch_is_linked(
    hook_tenants: Subject, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = hook_tenants.backend
    alice, mallory = hook_tenants.name("alice"), hook_tenants.name("mallory")
    kept = await backend.add_message("diary", "user", "alice's own", user_identifier=alice)
    lines = loot_linking(str(kept.id), mallory, message(str(uuid4()), "", "more", 1))
    # entity and conversation, then the messages, then the mention: three batches
    monkeypatch.setattr(importer_module, "HOOK_BATCH", 2)
    report = await import_memory(backend, lines)
    loot = await backend.get_conversation("loot", user_identifier=mallory)
    assert [[r.name for r in m.mentions] for m in loot.messages] == [["Mallory Corp"], []]
    assert report.copied["mention"] == 1
    diary = await backend.get_conversation("diary", user_identifier=alice)
    assert [m.mentions for m in diary.messages] == [[]]
