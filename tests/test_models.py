"""``trusted`` / ``trusted_many``: models built without validation equal validated ones;
``random_ids`` makes what ``uuid4`` makes."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import RFC_4122, UUID, SafeUUID, uuid4

import pytest

from memory_core.models import Message, MessageRole, random_ids, trusted, trusted_many


def row(content: str) -> dict[str, object]:
    return {
        "id": uuid4(),
        "created_at": datetime(2025, 1, 1, tzinfo=UTC),
        "updated_at": None,
        "embedding": None,
        "metadata": {},
        "role": MessageRole.USER,
        "content": content,
        "conversation_id": None,
        "session_id": "s",
        "tool_calls": None,
        "score": None,
        "idempotency_key": None,
        "mentions": [],
    }


def test_trusted_many_equals_validated_and_trusted() -> None:
    rows = [row("a"), row("b")]
    built = trusted_many(Message, rows)
    assert built == [Message.model_validate(r) for r in rows]
    assert built == [trusted(Message, r) for r in rows]
    assert built[0].model_fields_set == set(rows[0])
    built[0].score = 0.5  # an ordinary, mutable model
    assert built[0].score == 0.5 and built[1].score is None
    # The models of one call share their fields set (every field is set in each): an
    # assignment adds nothing to it, and a copy has its own.
    assert built[1].model_fields_set == set(rows[1])
    assert built[1].model_dump(exclude_unset=True) == Message.model_validate(rows[1]).model_dump(
        exclude_unset=True
    )
    copy = built[0].model_copy(update={"content": "c"})
    assert copy.model_fields_set is not built[0].model_fields_set


def test_trusted_many_fills_plain_defaults_and_names_missing_fields() -> None:
    short = {k: v for k, v in row("c").items() if k not in ("score", "tool_calls")}
    (built,) = trusted_many(Message, [short])
    assert built.score is None and built.tool_calls is None and built.content == "c"
    with pytest.raises(TypeError, match="mentions"):
        trusted_many(Message, [{k: v for k, v in row("d").items() if k != "mentions"}])


def test_random_ids_are_version_4_uuids_like_uuid4() -> None:
    ids = random_ids(2_000)
    assert len(set(ids)) == 2_000
    for value in ids:
        assert isinstance(value, UUID)
        assert value.version == 4 and value.variant == RFC_4122
        assert UUID(str(value)) == value and hash(UUID(str(value))) == hash(value)
        assert value.is_safe is SafeUUID.unknown
    # every bit that is not version or variant varies (not a constant or a counter)
    fixed = (0xF000 << 64) | (0xC000 << 48)
    varying = 0
    for value in ids:
        varying |= value.int ^ ids[0].int
    assert varying == ((1 << 128) - 1) & ~fixed
    assert random_ids(0) == []
