"""Values another program wrote: ``civil()`` for any instant, and each rule's replacement
value and its ``ForeignDataWarning`` naming the record, the field and what was stored."""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_core.errors import ForeignDataWarning
from memory_core.foreign import (
    EARLIEST,
    LATEST,
    civil,
    left_out,
    not_an_object,
    not_text,
    not_utf8,
    out_of_range,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICRO = timedelta(microseconds=1)
FIRST = (datetime.min.replace(tzinfo=UTC) - EPOCH) // MICRO
LAST = (datetime.max.replace(tzinfo=UTC) - EPOCH) // MICRO
DAY = 86_400_000_000
ERA = 146_097 * DAY  # 400 Gregorian years


def _fields(moment: datetime) -> tuple[int, ...]:
    return (
        moment.year,
        moment.month,
        moment.day,
        moment.hour,
        moment.minute,
        moment.second,
        moment.microsecond,
    )


def _one_warning(caught: list[warnings.WarningMessage]) -> str:
    [warning] = caught
    assert warning.category is ForeignDataWarning
    return str(warning.message)


@given(st.integers(min_value=FIRST, max_value=LAST))
def test_civil_agrees_with_datetime_in_pythons_range(micros: int) -> None:
    assert civil(micros) == _fields(EPOCH + micros * MICRO)


@given(st.integers(min_value=FIRST, max_value=LAST), st.integers(min_value=-30, max_value=30))
def test_civil_repeats_every_400_years_outside_the_range_too(micros: int, eras: int) -> None:
    year, *rest = _fields(EPOCH + micros * MICRO)
    assert civil(micros + eras * ERA) == (year + 400 * eras, *rest)


@pytest.mark.parametrize(
    ("micros", "expected"),
    [
        (0, (1970, 1, 1, 0, 0, 0, 0)),
        (FIRST, (1, 1, 1, 0, 0, 0, 0)),
        (LAST, (9999, 12, 31, 23, 59, 59, 999_999)),
        (-62_135_596_800_000_001, (0, 12, 31, 23, 59, 59, 999_999)),  # year 0 is 1 BC
        (FIRST - 366 * DAY, (0, 1, 1, 0, 0, 0, 0)),  # year 0 is a leap year
        (FIRST - 366 * DAY - 1, (-1, 12, 31, 23, 59, 59, 999_999)),
        (FIRST - 307 * DAY, (0, 2, 29, 0, 0, 0, 0)),  # 366 - 59 days into 1 BC
        (LAST + 1, (10000, 1, 1, 0, 0, 0, 0)),
        (568_971_820_800_000_000, (20000, 1, 1, 0, 0, 0, 0)),
        (-63_549_316_800_000_000, (-44, 3, 15, 12, 0, 0, 0)),
    ],
)
def test_civil_of_known_instants(micros: int, expected: tuple[int, ...]) -> None:
    assert civil(micros) == expected


def test_earliest_and_latest_are_pythons_bounds_in_utc() -> None:
    assert datetime(1, 1, 1, tzinfo=UTC) == EARLIEST
    assert datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC) == LATEST


@pytest.mark.parametrize(("late", "expected"), [(True, LATEST), (False, EARLIEST)])
def test_out_of_range_reads_as_the_nearest_bound_and_says_so(
    late: bool, expected: datetime
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        instant = out_of_range("bolt", "message", "m-42", "created_at", "+10000-01-01", late=late)
    assert instant == expected
    message = _one_warning(caught)
    assert message.startswith("bolt: another program's message 'm-42' ")
    assert "created_at" in message and "'+10000-01-01'" in message
    assert expected.isoformat() in message


def test_the_warning_points_at_the_callers_line() -> None:
    with pytest.warns(ForeignDataWarning) as caught:
        out_of_range("postgres", "conversation", 7, "updated_at", "infinity", late=True)
    assert caught[0].filename == __file__
    assert "conversation '7'" in str(caught[0].message)


def test_not_text_is_read_as_its_json_text() -> None:
    stored = {"parts": ["é", 1, None]}
    with pytest.warns(ForeignDataWarning, match="not text \\(dict\\)") as caught:
        text = not_text("bolt", "message", "m-1", "content", stored)
    assert text == json.dumps(stored, ensure_ascii=False)
    assert json.loads(text) == stored
    assert "'m-1'" in str(caught[0].message) and "content" in str(caught[0].message)


def test_not_text_of_a_value_json_cannot_hold_uses_its_string() -> None:
    moment = datetime(2026, 1, 2, tzinfo=UTC)
    with pytest.warns(ForeignDataWarning):
        assert not_text("bolt", "message", "m", "content", [moment]) == json.dumps([str(moment)])


@pytest.mark.parametrize(
    ("stored", "shown"), [([1, 2], "'[1, 2]'"), ("text", "'text'"), (3, "'3'"), (None, "'None'")]
)
def test_not_an_object_is_read_as_an_empty_dict(stored: object, shown: str) -> None:
    with pytest.warns(ForeignDataWarning) as caught:
        assert not_an_object("postgres", "conversation", "c-9", stored) == {}
    assert str(caught[0].message) == (
        f"postgres: another program's conversation 'c-9' has metadata {shown} that is not a "
        "JSON object: read as {}"
    )


def test_not_utf8_returns_the_text_it_is_given() -> None:
    with pytest.warns(ForeignDataWarning, match="content_exact that is not UTF-8") as caught:
        assert not_utf8("postgres", "message", "m-3", "content_exact", "fallback") == "fallback"
    assert "'m-3'" in str(caught[0].message)


def test_left_out_warns_with_the_reason() -> None:
    with pytest.warns(ForeignDataWarning) as caught:
        left_out("bolt", "message", "not-a-uuid", "has an id that is not a UUID")
    assert str(caught[0].message) == (
        "bolt: another program's message 'not-a-uuid' has an id that is not a UUID: left out"
    )


def test_long_records_and_values_are_cut_in_the_message() -> None:
    record, stored = "r" * 500, "v" * 500
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out_of_range("bolt", "message", record, "created_at", stored, late=False)
    message = _one_warning(caught)
    assert repr("r" * 80 + "…") in message
    assert repr("v" * 80 + "…") in message
    assert "r" * 81 not in message and "v" * 81 not in message


def test_a_value_of_exactly_80_characters_is_shown_whole() -> None:
    with pytest.warns(ForeignDataWarning) as caught:
        not_an_object("bolt", "message", "x" * 80, [])
    assert repr("x" * 80) in str(caught[0].message)
    assert "…" not in str(caught[0].message)
