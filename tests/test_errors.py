"""``NotFoundError``: one wording on every backend, the details in fields."""

from __future__ import annotations

from uuid import uuid4

import pytest

from memory_core import EntityRef, NotFoundError
from memory_core_dev.sync_stores import SyncStore, sync_store

__all__ = ["sync_store"]


def test_missing_builds_the_one_wording() -> None:
    error = NotFoundError.missing("toy", "entity", "e-1", argument="explicit_mentions", hint="x")
    assert str(error) == "explicit_mentions: no entity e-1 on the toy backend; x"
    assert (error.backend, error.kind, error.identifier, error.argument) == (
        "toy",
        "entity",
        "e-1",
        "explicit_mentions",
    )
    assert isinstance(error, LookupError)
    plain = NotFoundError("a third-party store's own words")
    assert (plain.backend, plain.kind, plain.identifier, plain.argument) == (None,) * 4


def test_an_unknown_conversation_is_worded_alike_on_every_backend(sync_store: SyncStore) -> None:
    memory = sync_store.memory
    unknown = uuid4()
    calls = [
        lambda: memory.get_conversation(conversation_id=unknown),
        lambda: memory.add_message(conversation_id=unknown, role="user", content="x"),
        lambda: memory.search_messages("x", conversation_id=unknown),
        lambda: memory.add_messages_batch(
            conversation_id=unknown, messages=[{"role": "user", "content": "x"}]
        ),
    ]
    for call in calls:
        with pytest.raises(NotFoundError) as info:
            call()
        error = info.value
        assert (
            str(error) == f"conversation_id: no conversation {unknown} on the {memory.name} backend"
        )
        assert (error.backend, error.kind, error.identifier, error.argument) == (
            memory.name,
            "conversation",
            str(unknown),
            "conversation_id",
        )


def test_an_unknown_mentioned_entity_is_worded_alike(sync_store: SyncStore) -> None:
    memory = sync_store.memory
    if not (memory.capabilities.explicit_mentions and memory.capabilities.entities):
        pytest.skip(f"{memory.name} stores no mentions")
    session = sync_store.session()
    with pytest.raises(NotFoundError) as info:
        memory.add_message(
            session,
            "user",
            "x",
            extraction_mode="explicit",
            explicit_mentions=[EntityRef(id="no-such-entity")],
        )
    error = info.value
    assert str(error).startswith(
        f"explicit_mentions: no entity no-such-entity on the {memory.name} backend"
    )
    assert (error.backend, error.kind, error.identifier) == (
        memory.name,
        "entity",
        "no-such-entity",
    )


@pytest.mark.parametrize(
    "sync_store", [pytest.param("nams", marks=pytest.mark.nams)], indirect=True
)
def test_a_404_from_the_nams_service_is_worded_alike(sync_store: SyncStore) -> None:
    """With server-issued ids the service answers 404 for an id it did not issue."""
    memory = sync_store.open(session_names="server")
    unknown = uuid4()
    for session_id, argument in ((str(unknown), "session_id"), (unknown, "conversation_id")):
        with pytest.raises(NotFoundError) as info:
            memory.get_conversation(**{argument: session_id})
        error = info.value
        assert (error.backend, error.kind, error.argument) == ("nams", "conversation", argument)
        assert str(error) == f"{argument}: no conversation {unknown} on the nams backend"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("deleting one message is not supported by the nams backend", "nams backend. Workaround"),
        ("no such route.", "no such route. Workaround"),
        ("is it supported?  ", "supported? Workaround"),
    ],
)
def test_not_supported_reads_as_two_sentences(message: str, expected: str) -> None:
    from memory_core import NotSupportedError

    error = NotSupportedError("nams", "delete_message", message, "clear the session")
    assert expected in str(error)
    assert str(error).endswith("Workaround: clear the session")
    assert error.message == message  # the attribute keeps the backend's own words
