"""Reasoning memory on the embedded store: what the conformance suite does not reach
(links of a triggering message, links left by deletions, the statistics' index, a
trace's data kept in the file across reopening); the public API's checks are in
tests/test_reasoning.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from uuid import uuid4

import pytest

from memory_core import (
    NotFoundError,
    ToolCallStatus,
    open_backend,
)
from memory_core.sync import open_backend as blocking_backend

pytestmark = pytest.mark.anyio


async def test_a_triggering_message_is_the_first_link_and_an_unknown_one_starts_nothing() -> None:
    async with open_backend("memory://") as memory:
        said = await memory.add_message("s", "user", "book it", user_identifier="u")
        trace = await memory.start_trace(
            "s", "book", triggered_by_message_id=said.id, user_identifier="u"
        )
        assert trace.message_ids == [str(said.id)]
        other = await memory.add_message("s", "user", "and a hotel", user_identifier="u")
        linked = await memory.link_trace(
            trace.id, message_ids=[other.id, said.id], user_identifier="u"
        )
        assert linked.message_ids == [str(said.id), str(other.id)]
        with pytest.raises(NotFoundError) as info:
            await memory.start_trace(
                "s", "book", triggered_by_message_id=str(uuid4()), user_identifier="u"
            )
        assert info.value.argument == "triggered_by_message_id"
        assert [t.id for t in await memory.list_traces(user_identifier="u")] == [trace.id]


async def test_a_deleted_message_or_entity_leaves_the_links() -> None:
    async with open_backend("memory://") as memory:
        said = await memory.add_message("s", "user", "hello")
        entity = await memory.add_entity("Ada", "PERSON")
        trace = await memory.start_trace("s", "greet")
        await memory.link_trace(trace.id, message_ids=[said.id], entity_ids=[entity.id])
        assert await memory.delete_message(said.id)
        assert await memory.delete_entity(entity.id)
        read = await memory.get_trace(trace.id)
        assert read is not None and (read.message_ids, read.entity_ids) == ([], [])


async def test_traces_are_kept_in_the_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    async with open_backend(url) as memory:
        trace = await memory.start_trace("s", "persist", metadata={"k": [1, None]})
        step = await memory.add_step(trace.id, thought="t")
        await memory.record_tool_call(step.id, "tool", result=[1, "x"], status="cancelled")
        await memory.complete_trace(trace.id, outcome="ok", success=False)
    async with open_backend(url) as memory:
        read = await memory.get_trace(trace.id)
        assert read is not None and read.metadata == {"k": [1, None]}
        assert (read.outcome, read.success) == ("ok", False)
        [call] = read.steps[0].tool_calls
        assert (call.result, call.status) == ([1, "x"], ToolCallStatus.CANCELLED)
        assert (await memory.add_step(trace.id, action="again")).step_number == 2


def test_statistics_and_listings_read_their_indexes(tmp_path: Path) -> None:
    path = tmp_path / "plan.db"
    with blocking_backend(f"sqlite:///{path}") as memory:
        memory.start_trace("s", "create the file")
    conn = sqlite3.connect(path)
    try:
        stats = _plan(
            conn,
            "SELECT tool_name, COUNT(*), AVG(duration_ms) FROM tool_calls r "
            "WHERE r.tenant = '' AND r.tool_name = 'x' GROUP BY r.tool_name",
        )
        assert "tool_calls_by_tool" in stats, stats
        listing = _plan(
            conn,
            "SELECT * FROM traces r WHERE r.tenant = '' AND r.session_id = 's' "
            "ORDER BY r.created_at DESC, r.id DESC LIMIT 3",
        )
        assert "traces_by_session" in listing and "TEMP B-TREE" not in listing, listing
    finally:
        conn.close()


def _plan(conn: sqlite3.Connection, sql: str) -> str:
    return " ".join(row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
