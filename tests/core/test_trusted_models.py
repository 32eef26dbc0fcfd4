"""``trusted`` / ``trusted_many``: models built without validation equal validated ones."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest

from memory_core.models import Message, MessageRole, trusted, trusted_many


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


def test_trusted_many_fills_plain_defaults_and_names_missing_fields() -> None:
    short = {k: v for k, v in row("c").items() if k not in ("score", "tool_calls")}
    (built,) = trusted_many(Message, [short])
    assert built.score is None and built.tool_calls is None and built.content == "c"
    with pytest.raises(TypeError, match="mentions"):
        trusted_many(Message, [{k: v for k, v in row("d").items() if k != "mentions"}])
