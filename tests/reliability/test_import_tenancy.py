"""An import touches only the tenant each record names (issue 25, item 1).

A hostile archive, written as tenant "mallory" into a multi-tenant store that also holds
"alice", carries alice's ids: her message id (with ``overwrite``, and with a mention
record under ``skip``), her entity id, and the version-5 id of a session name of hers.
None of it may write over, delete, link to or squat anything of alice's, on embedded and
Bolt (both bulk hooks), nor through the public writer (NAMS). Mallory's own records
arrive, under ids of mallory's where the archive's are alice's (and a re-run finds them).
"""

from __future__ import annotations

from pathlib import Path
from uuid import uuid4

import pytest

from memory_core import MemoryBackend
from memory_core.archive.hooks import DERIVED_ID, FOREIGN_ENTITY, RENAMED
from memory_core.backends.embedded.conversations import session_uuid
from memory_core.transfer import import_memory

from .archives import archive, conversation, entity, loot_linking, mention, message
from .conftest import open_subject
from .subjects import Subject

pytestmark = pytest.mark.anyio


async def contents(backend: MemoryBackend, session: str, user: str | None) -> list[str]:
    read = await backend.get_conversation(session, user_identifier=user)
    return [m.content for m in read.messages]


async def test_overwrite_with_another_tenants_message_id_leaves_it_alone(
    hook_tenants: Subject,
) -> None:
    backend = hook_tenants.backend
    alice, mallory = hook_tenants.name("alice"), hook_tenants.name("mallory")
    kept = await backend.add_message("diary", "user", "alice's own", user_identifier=alice)
    cid = str(uuid4())
    lines = archive(
        conversation(cid, "loot", mallory), message(str(kept.id), cid, "mallory's copy")
    )
    first = await import_memory(backend, lines, on_conflict="overwrite")
    report = await import_memory(backend, lines)  # a re-run finds it under its new id
    after = await backend.get_conversation("diary", user_identifier=alice)
    assert [(m.id, m.content) for m in after.messages] == [(kept.id, "alice's own")]
    assert first.not_carried[("message.id", RENAMED)] == 1
    loot = await backend.get_conversation("loot", user_identifier=mallory)
    assert [m.content for m in loot.messages] == ["mallory's copy"]
    assert loot.messages[0].id != kept.id
    assert report.copied["message"] == 0
    assert report.skipped[("message", "already in the target")] == 1


async def test_a_mention_record_cannot_link_another_tenants_message(hook_tenants: Subject) -> None:
    backend = hook_tenants.backend
    alice, mallory = hook_tenants.name("alice"), hook_tenants.name("mallory")
    kept = await backend.add_message("diary", "user", "alice's own", user_identifier=alice)
    lines = loot_linking(str(kept.id), mallory)
    report = await import_memory(backend, lines, on_conflict="skip")
    after = await backend.get_conversation("diary", user_identifier=alice)
    assert [m.mentions for m in after.messages] == [[]]
    loot = await backend.get_conversation("loot", user_identifier=mallory)
    assert [[r.name for r in m.mentions] for m in loot.messages] == [["Mallory Corp"]]
    assert report.not_carried[("message.id", RENAMED)] == 1
    assert report.copied["mention"] == 1


async def test_a_derived_id_of_another_tenants_session_is_not_taken(hook_tenants: Subject) -> None:
    """Mallory's conversation under the id alice's session "planned" derives: alice can
    still write to "planned" (embedded refused her), and her writes land in her own
    conversation, which mallory never reads (on Bolt they went into mallory's)."""
    backend = hook_tenants.backend
    alice, mallory = hook_tenants.name("alice"), hook_tenants.name("mallory")
    squatted = str(session_uuid(alice, "planned"))
    lines = archive(
        conversation(squatted, "plans", mallory), message(str(uuid4()), squatted, "mallory's")
    )
    report = await import_memory(backend, lines)
    await backend.add_message("planned", "user", "alice's plan", user_identifier=alice)
    assert await contents(backend, "plans", mallory) == ["mallory's"]
    planned = await backend.get_conversation("planned", user_identifier=alice)
    assert str(planned.id) == squatted
    assert [m.content for m in planned.messages] == ["alice's plan"]
    assert report.not_carried[("conversation.id", DERIVED_ID)] == 1
    assert str((await backend.get_conversation("plans", user_identifier=mallory)).id) == str(
        session_uuid(mallory, "plans")
    )


async def test_another_tenants_entity_id_is_neither_overwritten_nor_linked(
    hook_tenants: Subject,
) -> None:
    backend = hook_tenants.backend
    alice, mallory = hook_tenants.name("alice"), hook_tenants.name("mallory")
    theirs = await backend.add_entity("Alice Corp", "ORGANIZATION", user_identifier=alice)
    cid, mid = str(uuid4()), str(uuid4())
    lines = archive(
        entity(theirs.id, mallory, "Evil Corp"),
        conversation(cid, "loot", mallory),
        message(mid, cid, "mentions both"),
        mention(mid, theirs.id),
    )
    report = await import_memory(backend, lines, on_conflict="overwrite")
    found = await backend.find_entities(theirs.id, user_identifier=alice)
    assert [(e.id, e.name) for e in found] == [(theirs.id, "Alice Corp")]
    evil = await backend.find_entities("Evil Corp", user_identifier=mallory)
    assert [e.name for e in evil] == ["Evil Corp"] and evil[0].id != theirs.id
    loot = await backend.get_conversation("loot", user_identifier=mallory)
    assert [[r.id for r in m.mentions] for m in loot.messages] == [[evil[0].id]]
    assert report.not_carried[("entity.id", RENAMED)] == 1


async def test_a_mention_never_crosses_tenants_inside_one_archive(hook_tenants: Subject) -> None:
    """The archive's entity names alice (so it resolves to her existing entity), the
    message is mallory's: the link would put alice's entity on mallory's message."""
    backend = hook_tenants.backend
    alice, mallory = hook_tenants.name("alice"), hook_tenants.name("mallory")
    await backend.add_entity("Alice Corp", "ORGANIZATION", user_identifier=alice)
    cid, mid, eid = str(uuid4()), str(uuid4()), str(uuid4())
    lines = archive(
        entity(eid, alice, "Alice Corp"),
        conversation(cid, "loot", mallory),
        message(mid, cid, "mallory's"),
        mention(mid, eid),
    )
    report = await import_memory(backend, lines)
    loot = await backend.get_conversation("loot", user_identifier=mallory)
    assert [m.mentions for m in loot.messages] == [[]]
    assert report.skipped[("mention", FOREIGN_ENTITY)] == 1


async def test_the_public_writer_keeps_tenants_apart_on_nams(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """NAMS's tenants are workspaces, and it has no bulk hook: the target issues every
    id, so alice's ids in an archive imported into mallory's workspace reach nothing of
    hers (coverage of the public path, which was not affected)."""
    alice = await open_subject("nams", request, tmp_path, session_names="portable")
    mallory = await open_subject("nams", request, tmp_path, session_names="portable")
    try:
        kept = await alice.backend.add_message("diary", "user", "alice's own")
        diary = await alice.backend.get_conversation("diary")
        lines = archive(
            conversation(str(diary.id), "diary", None),
            message(str(kept.id), str(diary.id), "mallory's copy"),
        )
        for mode in ("overwrite", "skip"):
            await import_memory(
                mallory.backend,
                lines,
                on_conflict=mode,
                checkpoint=tmp_path / f"{mode}.checkpoint",
            )
        after = await alice.backend.get_conversation("diary")
        assert [(m.id, m.content) for m in after.messages] == [(kept.id, "alice's own")]
        assert await contents(mallory.backend, "diary", None) == ["mallory's copy"]
    finally:
        await alice.backend.close()
        await mallory.backend.close()
