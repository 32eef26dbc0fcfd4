"""Copying into a store that already has the conversations, for every ordered pair of
backends: A → B twice, then B → A twice (back into the store the conversations came
from, through NAMS too). Each conversation ends with its messages exactly once, and
titles survive NAMS."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import MemoryBackend, open_backend
from memory_core.transfer import copy_memory
from memory_core_dev.nams_server import NamsTestServer
from tests.transfer.sample import export_lines, of_kind

pytestmark = pytest.mark.anyio

SESSIONS = {"rt-a": ["a1", "a2", "a3"], "rt-b": ["b1", "b2"]}
TITLE = "Trip planning"
KINDS = ("embedded", "bolt", "nams", "postgres")


def _pair(a: str, b: str) -> object:
    marks = [pytest.mark.neo4j] if "bolt" in (a, b) else []
    return pytest.param(a, b, marks=marks, id=f"{a}-{b}")


PAIRS = [_pair(a, b) for a in KINDS for b in KINDS if a != b]


def _open(kind: str, request: pytest.FixtureRequest) -> MemoryBackend:
    if kind == "embedded":
        return open_backend("memory://")
    if kind == "bolt":
        return open_backend(request.getfixturevalue("bolt_url"))
    if kind == "postgres":
        return open_backend(request.getfixturevalue("pg_url"))
    server: NamsTestServer = request.getfixturevalue("nams_server")
    # Portable session names: what `memory-core copy … nams+https://…` opens.
    return server.backend(NamsTestServer.workspace(), session_names="portable")


async def _seed(backend: MemoryBackend) -> None:
    for session, contents in SESSIONS.items():
        if backend.capabilities.conversation_titles:
            await backend.create_conversation(session, title=TITLE)
        await backend.add_messages_batch(
            session, [{"role": "user", "content": text} for text in contents]
        )


async def _contents(backend: MemoryBackend) -> dict[str, list[str]]:
    found = {}
    for session in SESSIONS:
        conversation = await backend.get_conversation(session, limit=100)
        found[session] = [m.content for m in conversation.messages]
    return found


async def _titles(backend: MemoryBackend) -> set[str | None]:
    return {c["title"] for c in of_kind(await export_lines(backend), "conversation")}


@pytest.mark.parametrize(("there", "back"), PAIRS)
async def test_copying_back_and_again_keeps_one_copy_of_each_message(
    there: str, back: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    async with _open(there, request) as home, _open(back, request) as away:
        await _seed(home)
        titled = home.capabilities.conversation_titles
        for run in range(2):
            report = await copy_memory(home, away, checkpoint=tmp_path / "there.ckpt")
            assert report.copied["message"] == (5 if run == 0 else 0), report.summary()
        assert await _contents(away) == SESSIONS
        for _ in range(2):
            report = await copy_memory(away, home, checkpoint=tmp_path / "back.ckpt")
            assert report.copied["message"] == 0, report.summary()
            assert sum(n for (kind, _), n in report.skipped.items() if kind == "message") == 5
        assert await _contents(home) == SESSIONS
        assert await _contents(away) == SESSIONS
        # The title comes back from every target (NAMS keeps it in metadata).
        if titled:
            assert await _titles(away) == {TITLE}
            assert await _titles(home) == {TITLE}


@pytest.mark.neo4j
async def test_embedded_bolt_nams_bolt_keeps_one_copy(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The path of the report: embedded → Bolt → NAMS → Bolt, skip mode."""
    async with (
        _open("embedded", request) as embedded,
        _open("bolt", request) as bolt,
        _open("nams", request) as nams,
    ):
        await _seed(embedded)
        await copy_memory(embedded, bolt)
        await copy_memory(bolt, nams, checkpoint=tmp_path / "nams.ckpt")
        report = await copy_memory(nams, bolt, session_prefix="rt-")
        assert report.copied["message"] == 0
        assert report.skipped[("message", "their session is already in the target")] == 5
        assert await _contents(bolt) == SESSIONS
        assert await _titles(bolt) == {TITLE}


async def test_through_nams_in_server_id_mode_with_a_checkpoint(
    nams_server: NamsTestServer, tmp_path: Path
) -> None:
    async with (
        open_backend("memory://") as home,
        nams_server.backend(NamsTestServer.workspace()) as away,
    ):
        await _seed(home)
        for _ in range(2):
            await copy_memory(home, away, checkpoint=tmp_path / "there.ckpt")
            await copy_memory(away, home)
        assert await _contents(home) == SESSIONS
        assert len(await away.list_conversations()) == len(SESSIONS)
        assert await _titles(away) == {TITLE}


@pytest.mark.parametrize("names", ["portable", "server"])
async def test_a_title_goes_into_nams_and_comes_back(
    nams_server: NamsTestServer, names: str
) -> None:
    async with (
        open_backend("memory://") as home,
        nams_server.backend(NamsTestServer.workspace(), session_names=names) as nams,
        open_backend("memory://") as back,
    ):
        await _seed(home)
        report = await copy_memory(home, nams)
        assert not any("title" in name for name, _ in report.not_carried)
        exported = of_kind(await export_lines(nams), "conversation")
        assert {(c["session_id"], c["title"], str(c["metadata"])) for c in exported} == {
            (session, TITLE, "{}") for session in SESSIONS
        }
        await copy_memory(nams, back)
        for session in SESSIONS:
            assert (await back.get_conversation(session)).title == TITLE
