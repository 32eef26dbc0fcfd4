"""Tenants cannot observe or block each other (issue 12, item 8), on embedded, Bolt and
PostgreSQL.

A session's conversation id is derived from (tenant, session). Identifiers with control
characters are refused, so the pair is unambiguous; no caller can create a conversation
under a session-derived id, so nobody can squat another tenant's; and every answer to
tenant B is the same whether or not tenant A has the session.
"""

from __future__ import annotations

from uuid import UUID, uuid4, uuid5

import pytest

from memory_core import InvalidRequestError, MemoryCoreError, NotFoundError

from .subjects import Subject

pytestmark = pytest.mark.anyio

NAMESPACE = UUID("76d6accc-5703-50c3-bfc3-6639b22e80f8")


def derived(tenant: str, session: str) -> UUID:
    return uuid5(NAMESPACE, f"{tenant}\x00{session}")


@pytest.mark.parametrize(
    "bad", ["x\x00y", "line\nbreak", "cr\rlf", "esc\x1b[31m", "del\x7f", "c1\x85"]
)
async def test_control_characters_are_refused_in_tenant_and_session(
    hook_tenants: Subject, bad: str
) -> None:
    backend = hook_tenants.backend
    before = await hook_tenants.dump()
    with pytest.raises(InvalidRequestError) as raised:
        await backend.add_message(bad, "user", "hi", user_identifier="carol")
    assert raised.value.argument == "session_id"
    with pytest.raises(InvalidRequestError) as raised:
        await backend.add_message("y", "user", "hi", user_identifier=bad)
    assert raised.value.argument == "user_identifier"
    with pytest.raises(InvalidRequestError):
        await backend.list_conversations(user_identifier=bad)
    assert await hook_tenants.dump() == before


async def test_the_nul_collision_cannot_be_built(hook_tenants: Subject) -> None:
    """``carol\\0x`` + ``y`` and ``carol`` + ``x\\0y`` would derive one id: refused."""
    backend = hook_tenants.backend
    carol = hook_tenants.name("carol")
    await backend.add_message("x", "user", "carol's own", user_identifier=carol)
    with pytest.raises(InvalidRequestError):
        await backend.add_message("y", "user", "intruder", user_identifier=f"{carol}\x00x")
    with pytest.raises(InvalidRequestError):
        await backend.add_message("x\x00y", "user", "intruder", user_identifier=carol)
    read = await backend.get_conversation("x", user_identifier=carol)
    assert [m.content for m in read.messages] == ["carol's own"]


async def _probe(backend: object, conversation_id: UUID, user: str) -> tuple[str, str]:
    """What tenant ``user`` learns by trying to create a conversation under an id."""
    try:
        await backend.create_conversation(conversation_id=conversation_id, user_identifier=user)  # type: ignore[attr-defined]
    except MemoryCoreError as exc:
        return type(exc).__name__, str(exc).replace(str(conversation_id), "<id>")
    return "created", ""


async def test_nobody_can_claim_or_probe_another_tenants_session_id(hook_tenants: Subject) -> None:
    backend = hook_tenants.backend
    alice, bob = hook_tenants.name("alice"), hook_tenants.name("bob")
    existing = await backend.add_message("plans", "user", "secret", user_identifier=alice)
    existing_id = existing.conversation_id
    assert existing_id == derived(alice, "plans")
    future_id = derived(alice, "future")
    before = await hook_tenants.dump()
    # The answer is the same for a session alice has and one she does not have yet.
    seen_existing = await _probe(backend, existing_id, bob)
    seen_future = await _probe(backend, future_id, bob)
    assert seen_existing == seen_future
    assert seen_existing[0] != "created"
    assert await hook_tenants.dump() == before
    # Alice's first write to her future session still works, under its derived id.
    first = await backend.add_message("future", "user", "mine", user_identifier=alice)
    assert first.conversation_id == future_id
    # Bob naming the same session gets his own conversation: never "taken".
    bobs = await backend.create_conversation("plans", user_identifier=bob)
    assert bobs.id == derived(bob, "plans") != existing_id
    assert (await backend.get_conversation("plans", user_identifier=bob)).messages == []
    # Reads by id are "not found" for bob alike, existing or not.
    for conversation_id in (existing_id, future_id, uuid4()):
        with pytest.raises(NotFoundError) as raised:
            await backend.get_conversation(conversation_id=conversation_id, user_identifier=bob)
        assert str(conversation_id) in str(raised.value)
    assert not await backend.delete_message(existing.id, user_identifier=bob)
    hits = await backend.search_messages("secret", user_identifier=bob)
    assert hits == []
    read = await backend.get_conversation("plans", user_identifier=alice)
    assert [m.content for m in read.messages] == ["secret"]


async def test_a_random_conversation_id_can_still_be_chosen(hook_tenants: Subject) -> None:
    alice = hook_tenants.name("alice")
    chosen = uuid4()
    if hook_tenants.kind == "bolt":
        # Bolt never creates a conversation from a caller's id: it names an existing one.
        with pytest.raises(NotFoundError):
            await hook_tenants.backend.create_conversation(
                conversation_id=chosen, user_identifier=alice
            )
        return
    created = await hook_tenants.backend.create_conversation(
        conversation_id=chosen, user_identifier=alice
    )
    assert created.id == chosen
