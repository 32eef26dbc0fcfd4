"""DESIGN §11: the suite is safe on someone else's store. Run it on a SQLite file that
already holds "real" data (not declared throwaway): afterwards that data is unchanged and
nothing the suite wrote is left: no conversation, no entity."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio

from memory_core import open_backend
from memory_core.conformance.runner import run

EXISTING = [("user", "my real note"), ("assistant", "kept safe"), ("user", "third")]


async def _snapshot(url: str) -> tuple[list[tuple[str, str, dict[str, object]]], list[str]]:
    async with open_backend(url) as memory:
        messages = (await memory.get_conversation("real-notes")).messages
        listed = await memory.list_conversations(limit=10_000)
        sessions = await memory.list_sessions(limit=10_000)
        assert sorted(s.session_id for s in sessions) == sorted(c.session_id for c in listed)
        return [(m.role.value, m.content, m.metadata) for m in messages], sorted(
            c.session_id for c in listed
        )


async def _seed(url: str) -> None:
    async with open_backend(url) as memory:
        for n, (role, text) in enumerate(EXISTING):
            await memory.add_message("real-notes", role, text, metadata={"n": n})
        await memory.add_message("real-other", "user", "another real session")
        await memory.add_entity("Real Person", "PERSON")


def _entity_names(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return sorted(name for (name,) in db.execute("SELECT name FROM entities"))


def test_suite_leaves_an_existing_store_as_it_found_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'someone-elses.db'}"
    anyio.run(_seed, url)
    before = anyio.run(_snapshot, url)
    [report] = run([url])
    assert report.ok, report.to_text()
    after = anyio.run(_snapshot, url)
    assert after == before
    assert after[1] == ["real-notes", "real-other"], "suite conversations were left behind"
    assert _entity_names(tmp_path / "someone-elses.db") == ["Real Person"], (
        "suite entities were left behind (or a real one was deleted)"
    )
