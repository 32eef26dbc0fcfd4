"""How the Bolt store writes a stored time it cannot return in a warning: ISO 8601 as
Cypher writes it, also outside Python's datetime range."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_core.backends.bolt.records import iso_from_micros

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FIRST = (datetime.min.replace(tzinfo=UTC) - EPOCH) // timedelta(microseconds=1)
LAST = (datetime.max.replace(tzinfo=UTC) - EPOCH) // timedelta(microseconds=1)


@given(st.integers(min_value=FIRST, max_value=LAST))
def test_a_time_python_has_is_written_as_python_writes_it(micros: int) -> None:
    moment = EPOCH + timedelta(microseconds=micros)
    assert iso_from_micros(micros) == moment.replace(tzinfo=None).isoformat() + "Z"


@pytest.mark.parametrize(
    ("micros", "iso"),
    [
        (LAST + 1, "+10000-01-01T00:00:00Z"),
        (FIRST - 1, "0000-12-31T23:59:59.999999Z"),  # year 0 is 1 BC, as in Cypher
        (568_971_820_800_000_000, "+20000-01-01T00:00:00Z"),
        (-63_549_316_800_000_000, "-0044-03-15T12:00:00Z"),
    ],
)
def test_a_time_outside_pythons_range_is_written_with_its_sign(micros: int, iso: str) -> None:
    assert iso_from_micros(micros) == iso
