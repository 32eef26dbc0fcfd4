"""What a batch sends per message: only the keys that have a value (no server needed)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from uuid import UUID, uuid4

from memory_core import EntityRef, MessageRole
from memory_core import requests as rq
from memory_core.backends.bolt.store import _batch_item, _mention_ids


def _new(**extra: object) -> rq.NewMessage:
    fields: dict[str, object] = {"metadata": {}, "timestamp": None, **extra}
    return rq.NewMessage(role=MessageRole.USER, content="hello", **fields)  # type: ignore[arg-type]


def test_a_plain_message_sends_id_role_and_content_only() -> None:
    item = _batch_item(uuid4(), _new())
    assert set(item) == {"id", "role", "content"}
    assert UUID(item["id"]).version == 4
    assert (item["role"], item["content"]) == ("user", "hello")
    assert _mention_ids([item]) == []


def test_the_keys_with_a_value_are_sent() -> None:
    when = datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    item = _batch_item(
        uuid4(),
        _new(
            metadata={"k": 1},
            timestamp=when,
            embedding=[0.5, 0.0],
            mentions=[EntityRef(id="e1"), EntityRef(name="Ada", type="PERSON")],
        ),
    )
    assert json.loads(item["metadata"]) == {"k": 1}
    assert item["timestamp"] == when
    assert item["embedding"] == [0.5, 0.0]
    assert item["mention_ids"] == ["e1"] and item["names"] == []
    assert [t["name"] for t in item["typed"]] == ["Ada"]
    assert _mention_ids([item, _batch_item(uuid4(), _new())]) == ["e1"]


def test_a_zero_vector_is_not_sent() -> None:
    assert "embedding" not in _batch_item(uuid4(), _new(embedding=[0.0, 0.0]))
