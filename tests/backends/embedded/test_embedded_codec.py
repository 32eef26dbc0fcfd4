"""Stored timestamps and ids read back exactly (the read path takes shortcuts for speed)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memory_core.backends.embedded import codec

EDGES = [
    0,
    1,
    999_999,
    1_000_000,
    1_700_000_000_000_000,
    1_700_000_000_999_999,
    2**52 - 1,
    2**52,
    -1,
    -1_000_001,
    codec.to_micros(datetime.min.replace(tzinfo=UTC)),
    codec.to_micros(datetime.max.replace(tzinfo=UTC)),
]


@pytest.mark.parametrize("micros", EDGES)
def test_from_micros_is_exact_at_the_edges(micros: int) -> None:
    assert codec.from_micros(micros) == codec.EPOCH + timedelta(microseconds=micros)
    assert codec.from_micros(micros).tzinfo is UTC


@given(st.datetimes(timezones=st.just(UTC)))
def test_every_instant_round_trips(moment: datetime) -> None:
    back = codec.from_micros(codec.to_micros(moment))
    assert back == moment
    assert back.utcoffset() == timedelta(0)


@given(st.uuids())
def test_stored_uuid_reads_what_was_written(value: uuid.UUID) -> None:
    read = codec.stored_uuid(str(value))
    assert read == value
    assert hash(read) == hash(value)
    assert str(read) == str(value)
