"""Every Python block of README.md and docs/ runs: on ``memory://`` as printed (in a
temporary working directory, with no ``MEMORY_BACKEND_URL``), and on the real Neo4j and
NAMS servers where the block is marked ``<!-- run-on: bolt nams -->``. See
:mod:`tests.docs.snippets` for the markers."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import pytest

from memory_core_dev.nams_server import API_KEY, NamsTestServer

from .snippets import BACKENDS, Block, all_blocks, parse, run, with_url

BLOCKS = all_blocks()


def _cases() -> list[object]:
    cases: list[object] = []
    for block in BLOCKS:
        if block.no_run is not None:
            continue
        cases.append(pytest.param(block, None, id=block.id))
        for backend in block.run_on:
            mark = pytest.mark.neo4j if backend == "bolt" else pytest.mark.nams
            cases.append(pytest.param(block, backend, id=f"{block.id}[{backend}]", marks=mark))
    return cases


@pytest.fixture
def docs_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """What a reader's shell has: a working directory of their own, no backend URL set,
    and ``sys.argv`` naming the script (the framework examples read it)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMORY_BACKEND_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr(sys, "argv", ["snippet.py"])
    return tmp_path


@pytest.mark.parametrize(("block", "backend"), _cases())
def test_block_runs(
    block: Block,
    backend: str | None,
    docs_env: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if backend is None:
        run(block)
    elif backend == "bolt":
        run(block, with_url(block, request.getfixturevalue("neo4j_clean").uri))
    else:
        server: NamsTestServer = request.getfixturevalue("nams_server")
        monkeypatch.setenv("MEMORY_API_KEY", API_KEY)
        monkeypatch.setenv("MEMORY_WORKSPACE_ID", NamsTestServer.workspace("docs"))
        run(block, with_url(block, server.url))


def test_blocks_are_found_and_rarely_skipped() -> None:
    files = {block.path for block in BLOCKS}
    assert "README.md" in files and "docs/using.md" in files
    assert len(BLOCKS) >= 15
    skipped = [block.id for block in BLOCKS if block.no_run is not None]
    assert len(skipped) <= max(1, len(BLOCKS) // 10), f"too many no-run blocks: {skipped}"
    assert all(block.no_run for block in BLOCKS if block.no_run is not None), "no reason"
    assert any(block.run_on == BACKENDS for block in BLOCKS)


SAMPLE = """# A page

```python
print("one")
```

<!-- no-run: a skeleton -->

```python
raise SystemExit("never")
```

```bash
echo not python
```

<!-- run-on: bolt nams -->
```python
from memory_core import open_backend

async with open_backend("memory://") as memory:
    await memory.add_message("s", "user", "hi")
```

```python
--8<-- "examples/echo_agent.py"
```
"""


def test_markers_and_includes_are_read() -> None:
    blocks = parse(SAMPLE, "page.md")
    assert [(b.line, b.no_run, b.run_on) for b in blocks] == [
        (3, None, ()),
        (9, "a skeleton", ()),
        (18, None, ("bolt", "nams")),
        (25, None, ()),
    ]
    assert "def " in blocks[3].source and "--8<--" not in blocks[3].source
    assert "open_backend('bolt://x')" in with_url(blocks[2], "bolt://x")


def test_a_wrong_block_fails_and_names_its_line() -> None:
    wrong = "# Page\n\n```python\nfrom memory_core import open_backend\n\n"
    wrong += "open_backend(1, 2, 3)\n```\n"
    (block,) = parse(wrong, "docs/wrong.md")
    with pytest.raises(TypeError) as caught:
        run(block)
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert ("docs/wrong.md", 6) in [(frame.filename, frame.lineno) for frame in frames]


def test_a_block_with_await_runs_on_its_own_loop() -> None:
    text = "```python\nimport anyio\n\nawait anyio.sleep(0)\nx = 1\n```\n"
    (block,) = parse(text, "page.md")
    assert run(block)["x"] == 1


def test_an_unknown_backend_or_an_unclosed_block_is_an_error() -> None:
    with pytest.raises(ValueError, match="run-on"):
        parse("<!-- run-on: postgres -->\n```python\nx = 1\n```\n", "page.md")
    with pytest.raises(ValueError, match="never closed"):
        parse("```python\nx = 1\n", "page.md")
