"""An archive's message embeddings must be finite numbers (not text, booleans or
integers beyond a float's range)."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core.archive.records import check_record
from memory_core.transfer import ArchiveError

MESSAGE = {
    "record": "message",
    "id": "0b6f0e2c-3a55-4a8e-9a77-1d2b3c4d5e6f",
    "conversation_id": "1b6f0e2c-3a55-4a8e-9a77-1d2b3c4d5e6f",
    "seq": 1,
    "role": "user",
    "content": "hello",
    "metadata": {},
    "created_at": "2026-05-20T09:30:00.123457Z",
    "idempotency_key": None,
    "embedding": None,
}


@pytest.mark.parametrize("value", ["1.5", True, 10**400, float("nan")])
def test_an_embedding_value_that_is_not_a_finite_number_is_refused(value: Any) -> None:
    with pytest.raises(ArchiveError, match="embedding"):
        check_record({**MESSAGE, "embedding": [0.5, value]}, line=3)


def test_finite_ints_and_floats_are_kept() -> None:
    assert check_record({**MESSAGE, "embedding": [0.5, -2, 10**300]})["embedding"] == [
        0.5,
        -2,
        10**300,
    ]
