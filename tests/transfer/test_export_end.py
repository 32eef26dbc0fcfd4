"""What an export's end record counts, and the export's refusal of bad scope arguments
(found missing by the mutation run of memory_core/transfer: see
memory_core/conformance/README.md, "Transfer")."""

from __future__ import annotations

import io
import json
from collections import Counter
from typing import Any

import pytest

from memory_core import InvalidRequestError, open_backend
from memory_core.store import ALL_KINDS
from memory_core.transfer import export_memory
from tests.transfer.sample import populate, populate_long_term
from tests.transfer.trace_sample import populate_traces

pytestmark = pytest.mark.anyio

# Every kind a store holds: a kind added to the archive shows here without editing the test.
KINDS = sorted(ALL_KINDS)


async def _records(url: str = "memory://", fill: bool = True) -> list[dict[str, Any]]:
    async with open_backend(url) as source:
        if fill:
            await populate(source)
            await populate_long_term(source)
            await populate_traces(source, None)
        out = io.StringIO()
        await export_memory(source, out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _counted(records: list[dict[str, Any]]) -> dict[str, int]:
    """How many records of each kind stand between the header and the end record."""
    counted = Counter(r["record"] for r in records[1:-1])
    return {kind: counted[kind] for kind in KINDS}


async def test_the_end_record_counts_the_records_of_each_kind() -> None:
    records = await _records()
    assert records[-1]["record"] == "end"
    assert records[-1]["counts"] == _counted(records)
    assert all(records[-1]["counts"][kind] > 0 for kind in KINDS), "control: every kind"


async def test_a_kind_with_no_record_is_counted_as_zero() -> None:
    empty = await _records(fill=False)
    assert empty[-1]["counts"] == dict.fromkeys(KINDS, 0)
    async with open_backend("memory://") as source:
        await source.add_message("only-words", "user", "hello")
        out = io.StringIO()
        await export_memory(source, out)
    end = json.loads(out.getvalue().splitlines()[-1])
    assert end["counts"] == {**dict.fromkeys(KINDS, 0), "conversation": 1, "message": 1}


@pytest.mark.parametrize(
    ("scope", "argument"),
    [
        ({"users": [5]}, "users"),
        ({"users": ["alice", ""]}, "users"),
        ({"users": "alice"}, "users"),
        ({"session_prefix": 5}, "session_prefix"),
    ],
)
async def test_a_bad_scope_names_its_argument_and_writes_nothing(
    scope: dict[str, Any], argument: str
) -> None:
    async with open_backend("memory://") as source:
        await source.add_message("s", "user", "hello")
        out = io.StringIO()
        with pytest.raises(InvalidRequestError) as caught:
            await export_memory(source, out, **scope)
    assert caught.value.argument == argument
    assert out.getvalue() == ""
