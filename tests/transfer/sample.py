"""A store with every kind of thing an archive carries, and helpers to compare archives."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from memory_core import EntityRef, MemoryBackend
from memory_core.backends.embedded import EmbeddedStore
from memory_core.transfer import export_memory

BASE = datetime(2026, 5, 20, 9, 30, 0, 123457, tzinfo=UTC)

# What populate() writes (per user), for checking reports.
MESSAGES = 10
WITH_METADATA = 5
WITH_KEYS = 3
MENTIONS = 3


async def populate(backend: MemoryBackend, user: str | None = None, tag: str = "") -> None:
    """Two sessions with titles, metadata, turn metadata, idempotency keys, caller
    timestamps to the microsecond, awkward content, mentions and an unmentioned entity."""
    scoped = user if backend.multi_tenant else None
    s1, s2 = f"{tag}chat-1", f"{tag}chat-2"
    await backend.create_conversation(
        s1,
        title="Trip planning",
        metadata={"channel": "email", "nested": {"list": [1, 2.5, True, None]}},
        user_identifier=user,
    )
    await backend.add_messages_batch(
        s1,
        [
            {
                "role": "system",
                "content": "You are helpful.",
                "timestamp": BASE,
            },
            {
                "role": "user",
                "content": 'emoji 👩‍👩‍👧 tab\t quote" backslash\\ nul\x00 end',
                "metadata": {"lang": "en"},
                "timestamp": BASE + timedelta(microseconds=1),
            },
            {"role": "assistant", "content": "", "timestamp": BASE + timedelta(seconds=1)},
        ],
        user_identifier=scoped,
    )
    await backend.add_entity(
        "Acme Corp", "ORGANIZATION", description="a customer", user_identifier=scoped
    )
    await backend.add_message(
        s1,
        "user",
        "Book Lisbon with Ada for Acme Corp",
        metadata={"turn_key": f"{s1}:1:user", "turn_id": "1", "platform": "test"},
        idempotency_key=f"conversation-{s1}-1-user",
        extraction_mode="explicit",
        explicit_mentions=[
            EntityRef(name="Lisbon", type="LOCATION"),
            EntityRef(name="Ada", type="PERSON"),
            EntityRef(name="Acme Corp"),
        ],
        user_identifier=scoped,
    )
    await backend.add_message(
        s1,
        "assistant",
        "Done. " + "long " * 3000,
        metadata={"turn_key": f"{s1}:1:assistant"},
        idempotency_key=f"conversation-{s1}-1-assistant",
        user_identifier=scoped,
    )
    await backend.add_message(
        s2, "tool", "tool output", idempotency_key="plain-key", user_identifier=scoped
    )
    await backend.add_messages_batch(
        s2,
        [
            {"role": "user", "content": f"line {i}", "metadata": {"i": i}}
            for i in range(WITH_METADATA - 3)
        ]
        + [{"role": "assistant", "content": "same"}, {"role": "assistant", "content": "same"}],
        user_identifier=scoped,
    )
    await backend.add_entity("Unmentioned", "CONCEPT", user_identifier=scoped)


async def export_lines(backend: MemoryBackend, **options: Any) -> list[str]:
    """The archive of ``backend`` as lines, without the header (which names the source)."""
    out = io.StringIO()
    await export_memory(backend, out, **options)
    return [line for line in out.getvalue().splitlines() if '"record":"header"' not in line]


def records(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


def of_kind(lines: list[str], kind: str) -> list[dict[str, Any]]:
    return [r for r in records(lines) if r["record"] == kind]


# What populate_long_term() writes (per user).
LONG_TERM = {"relationship": 3, "preference": 4, "fact": 2}
PROPERTIES: dict[str, Any] = {
    "zeta": 1,
    "alpha": 1.0,
    "ratio": 0.1 + 0.2,
    "ünïcødé": "✓",
    "nested": {"z": [1, 1.0, True, None], "a": {}},
}


async def populate_long_term(
    backend: MemoryBackend, user: str | None = None, tag: str = ""
) -> None:
    """After :func:`populate` (same ``user`` and ``tag``): relationships (typed, with
    properties, confidence, a validity window, a cycle), aliases and attributes of an
    entity (where the backend updates entities), preferences (linked entities in
    a chosen order, context, metadata, one superseded, one whose successor was deleted)
    and facts (a validity window, the message they came from), with awkward text."""
    scoped = user if backend.multi_tenant else None
    found = {}
    for name in ("Acme Corp", "Ada", "Lisbon"):
        found[name] = (await backend.find_entities(name, 1, user_identifier=scoped))[0].id
    acme, ada, lisbon = found["Acme Corp"], found["Ada"], found["Lisbon"]
    if backend.capabilities.entity_updates:
        await backend.update_entity(
            ada,
            aliases=["Ada L.", "Countess 🦊 \u4e16", "ada lovelace"],
            attributes={"born": 1815, "ratio": 0.1 + 0.2, "tags": ["math", None, True]},
            user_identifier=scoped,
        )
    await backend.add_relationship(
        ada,
        acme,
        "works_at",
        properties=PROPERTIES,
        confidence=0.75,
        valid_from=BASE,
        valid_until=BASE + timedelta(days=365, microseconds=1),
        user_identifier=scoped,
    )
    await backend.add_relationship(acme, lisbon, "LOCATED_IN", user_identifier=scoped)
    await backend.add_relationship(lisbon, ada, "Home_Of", confidence=0, user_identifier=scoped)
    old = await backend.add_preference(
        "food",
        'likes spicy 🌶 food, tab\t quote" nul\x00 end',
        context="at dinner",
        confidence=0.9,
        linked_entities=[lisbon, ada],
        metadata={"b": 1, "a": [1.0, None]},
        user_identifier=user,
    )
    new = await backend.add_preference(
        "food", "likes mild food", linked_entities=[ada, lisbon], user_identifier=user
    )
    await backend.supersede_preference(old.id, new.id, user_identifier=user)
    orphan = await backend.add_preference("travel", "window seat", user_identifier=user)
    gone = await backend.add_preference("travel", "aisle seat", user_identifier=user)
    await backend.supersede_preference(orphan.id, gone.id, user_identifier=user)
    await backend.delete_preference(gone.id, user_identifier=user)
    await backend.add_preference("travel", "trains over planes", user_identifier=user)
    chat = await backend.get_conversation(f"{tag}chat-1", user_identifier=scoped)
    await backend.add_fact(
        "Ada",
        "WORKS_AT",
        "Acme Corp ✓",
        confidence=0.5,
        valid_from=BASE,
        valid_until=BASE + timedelta(days=30),
        source_message_id=str(chat.messages[3].id),
        metadata={"source": "chat", "n": [1, 2.5]},
        user_identifier=user,
    )
    await backend.add_fact("Lisbon", "IS_IN", "Portugal", user_identifier=user)


class PublicStore(EmbeddedStore):
    """The embedded store without its bulk hook: transfers go through the public API."""

    def bulk_transfer(self) -> None:
        return None


def backend_of(store: type[EmbeddedStore], **options: Any) -> MemoryBackend:
    """An in-memory backend on ``store`` (an embedded store with other flags or hooks)."""

    class Backend(MemoryBackend):
        store_class = store

    return Backend("memory://", **options)
