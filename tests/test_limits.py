"""The shared size limits: the documented defaults, every value a positive int, one doc
line per limit."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from memory_core.errors import ConfigurationError
from memory_core.limits import DEFAULT_LIMITS, LIMIT_DOCS, Limits

NAMES = [f.name for f in dataclasses.fields(Limits)]


def test_the_defaults_are_the_documented_values() -> None:
    assert Limits() == DEFAULT_LIMITS
    assert DEFAULT_LIMITS.as_dict() == {
        "max_content_chars": 1_000_000,
        "max_metadata_bytes": 65_536,
        "max_metadata_depth": 32,
        "max_query_chars": 10_000,
        "max_identifier_bytes": 1_024,
        "max_mentions": 1_000,
    }


def test_every_default_is_a_positive_int() -> None:
    for name, value in DEFAULT_LIMITS.as_dict().items():
        assert type(value) is int and value >= 1, name


def test_as_dict_has_every_limit_in_declaration_order() -> None:
    limits = Limits(max_query_chars=7, max_mentions=3)
    assert list(limits.as_dict()) == NAMES
    assert limits.as_dict()["max_query_chars"] == 7
    assert limits.as_dict()["max_mentions"] == 3
    assert limits.as_dict()["max_content_chars"] == DEFAULT_LIMITS.max_content_chars


def test_every_limit_has_one_doc_line() -> None:
    assert list(LIMIT_DOCS) == NAMES
    assert all(isinstance(doc, str) and doc.strip() for doc in LIMIT_DOCS.values())


def test_one_is_the_smallest_value_accepted() -> None:
    ones = Limits(**dict.fromkeys(NAMES, 1))
    assert set(ones.as_dict().values()) == {1}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("value", [0, -1, True, False, "10", 2.0, None])
def test_a_bad_value_is_refused_naming_the_limit(name: str, value: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Limits(**{name: value})
    assert f"Limits.{name} must be an int >= 1" in str(caught.value)
    assert repr(value) in str(caught.value)


def test_limits_are_frozen_and_hashable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_LIMITS.max_content_chars = 5  # type: ignore[misc]
    assert hash(Limits()) == hash(DEFAULT_LIMITS)
    assert Limits(max_mentions=2) != DEFAULT_LIMITS
