"""The "Using it" page's first snippet, executed as printed on embedded, Bolt and NAMS.

The snippet is read from docs/using.md (so the two cannot drift) and compiled with top-level
``await`` allowed. The only substitution is its URL literal (``"sqlite:///memory.db"``),
replaced by the URL of the backend under test; credentials come from the backends' own
environment variables (``MEMORY_API_KEY``, ``MEMORY_WORKSPACE_ID``), as a user would set
them. On embedded nothing is substituted: it runs in a temporary working directory.
"""

from __future__ import annotations

import ast
import inspect
import re
import warnings
from pathlib import Path
from typing import Any

import pytest

from memory_core import CapabilityWarning, open_backend
from memory_core_dev.nams_server import API_KEY, NamsTestServer

PAGE = Path(__file__).resolve().parents[2] / "docs" / "using.md"
PRINTED_URL = '"sqlite:///memory.db"'

pytestmark = pytest.mark.anyio


def using_it_snippet() -> str:
    """The first python block of docs/using.md."""
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", text, re.S)
    assert match, "no python block in docs/using.md"
    return match.group(1)


async def run_snippet(url: str | None) -> dict[str, Any]:
    source = using_it_snippet()
    assert source.count(PRINTED_URL) == 1, "the snippet's URL literal changed"
    if url is not None:
        source = source.replace(PRINTED_URL, repr(url))
    code = compile(source, "docs/using.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, Any] = {}
    result = eval(code, namespace)  # the project's own documentation
    if inspect.iscoroutine(result):
        await result
    return namespace


async def stored_contents(url: str, **options: Any) -> list[str]:
    async with open_backend(url, **options) as memory:
        contents = [m.content for m in (await memory.get_conversation("s1")).messages]
        await memory.clear_session("s1")
        return contents


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_snippet_is_found() -> None:
    source = using_it_snippet()
    assert "open_backend(" in source and "add_message" in source


async def test_embedded_as_printed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace = await run_snippet(None)
    assert (tmp_path / "memory.db").exists()
    assert [m.content for m in namespace["recent"].messages] == ["Order ORD-1234 is late"]
    assert namespace["hits"] and namespace["hits"][0].content == "Order ORD-1234 is late"
    assert "Order ORD-1234 is late" in namespace["context"]
    assert capsys.readouterr().out.startswith("embedded get_observations ")
    # delete_message is supported: the snippet deleted the message it wrote.
    assert await stored_contents(f"sqlite:///{tmp_path / 'memory.db'}") == []


@pytest.mark.neo4j
async def test_bolt(neo4j_clean: Any, capsys: pytest.CaptureFixture[str]) -> None:
    namespace = await run_snippet(neo4j_clean.uri)
    assert [m.content for m in namespace["recent"].messages] == ["Order ORD-1234 is late"]
    assert namespace["hits"] and namespace["hits"][0].content == "Order ORD-1234 is late"
    assert capsys.readouterr().out.startswith("bolt get_observations ")
    assert await stored_contents(neo4j_clean.uri) == []


@pytest.mark.nams
async def test_nams(
    nams_server: NamsTestServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_API_KEY", API_KEY)
    monkeypatch.setenv("MEMORY_WORKSPACE_ID", NamsTestServer.workspace("using"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        namespace = await run_snippet(nams_server.url)
    dropped = {str(w.message).split("'")[1] for w in caught if w.category is CapabilityWarning}
    assert dropped == {"metadata", "idempotency_key", "threshold"}
    assert all(w.filename == "docs/using.md" for w in caught if w.category is CapabilityWarning)
    assert [m.content for m in namespace["recent"].messages] == ["Order ORD-1234 is late"]
    assert namespace["hits"] and namespace["hits"][0].content == "Order ORD-1234 is late"
    assert "Order ORD-1234 is late" in namespace["context"]
    assert capsys.readouterr().out == ""  # observations are supported on NAMS
    # NAMS cannot delete one message: the snippet skipped it, the message is there.
    assert await stored_contents(nams_server.url) == ["Order ORD-1234 is late"]
