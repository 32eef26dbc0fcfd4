"""The shared metadata-filter rule."""

from __future__ import annotations

import pytest

from memory_core.filters import matches, same_value


@pytest.mark.parametrize(
    ("stored", "wanted", "expected"),
    [
        (1, 1, True),
        (1.0, 1, True),
        (True, 1, False),
        (1, True, False),
        ("1", 1, False),
        (None, None, True),
        (0, None, False),
        ([1, 2], [1, 2], True),
        ([2, 1], [1, 2], False),
        ({"a": 1, "b": [True]}, {"b": [True], "a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ("x", "x", True),
    ],
)
def test_same_value(stored: object, wanted: object, expected: bool) -> None:
    assert same_value(stored, wanted) is expected


def test_matches_needs_every_key_present() -> None:
    assert matches({"a": 1, "b": "x"}, {"a": 1})
    assert not matches({"a": 1}, {"a": 1, "c": None})
    assert matches({"a": 1}, {})
