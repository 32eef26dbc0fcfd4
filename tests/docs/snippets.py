"""The Python blocks of README.md and docs/**/*.md, as the docs tests run them.

A block is a fence opened by a line that is exactly three backticks followed by
``python``. The line before it (blank lines skipped) may hold a marker:

- ``<!-- no-run: REASON -->``: not executed (rare; the reason is required);
- ``<!-- run-on: bolt nams -->``: executed on ``memory://`` as printed, and again on each
  backend named, with its one URL literal replaced by that server's URL.

A line ``--8<-- "PATH"`` inside a block (pymdownx.snippets, as the site includes a file)
is replaced by the file at PATH, from the repository root.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ("bolt", "nams")
_MARKER = re.compile(r"^<!-- (no-run|run-on): (.*?) -->$")
_INCLUDE = re.compile(r'^--8<-- "([^"]+)"$')
# The URL a block opens: the one literal that is replaced on another backend.
URL_LITERAL = re.compile(r"""(["'])(memory://|sqlite:///[^"']*)\1""")


@dataclass(frozen=True)
class Block:
    """One Python block: where it is, its source, and what its marker says."""

    path: str  # relative to the repository root
    line: int  # the line of the opening fence, 1-based
    source: str
    no_run: str | None = None  # the reason, when marked not to run
    run_on: tuple[str, ...] = ()  # backends besides memory://

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown file under docs/."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def parse(text: str, path: str, root: Path = ROOT) -> list[Block]:
    """The Python blocks of one Markdown text."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i] != "```python":
            if lines[i].startswith("```"):  # skip another language's block whole
                i = _fence_end(lines, i, path)
            i += 1
            continue
        end = _fence_end(lines, i, path)
        body = [_expand(line, root) for line in lines[i + 1 : end]]
        kind, value = _marker(lines, i)
        blocks.append(
            Block(
                path,
                i + 1,
                "\n".join(body) + "\n",
                no_run=value if kind == "no-run" else None,
                run_on=_backends(value, path, i) if kind == "run-on" else (),
            )
        )
        i = end + 1
    return blocks


def _fence_end(lines: list[str], start: int, path: str) -> int:
    for j in range(start + 1, len(lines)):
        if lines[j] == "```":
            return j
    raise ValueError(f"{path}:{start + 1}: a code block is never closed")


def _marker(lines: list[str], fence: int) -> tuple[str | None, str]:
    j = fence - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    match = _MARKER.match(lines[j].strip()) if j >= 0 else None
    return (match.group(1), match.group(2).strip()) if match else (None, "")


def _backends(value: str, path: str, fence: int) -> tuple[str, ...]:
    names = tuple(value.replace(",", " ").split())
    unknown = set(names) - set(BACKENDS)
    if unknown or not names:
        raise ValueError(f"{path}:{fence + 1}: run-on names {value!r}; known: {BACKENDS}")
    return names


def _expand(line: str, root: Path) -> str:
    match = _INCLUDE.match(line.strip())
    if not match:
        return line
    return (root / match.group(1)).read_text(encoding="utf-8").rstrip("\n")


def all_blocks(root: Path = ROOT) -> list[Block]:
    """Every Python block of README.md and docs/, in file order."""
    blocks = []
    for file in doc_files(root):
        rel = file.relative_to(root).as_posix()
        blocks += parse(file.read_text(encoding="utf-8"), rel, root)
    return blocks


def with_url(block: Block, url: str) -> str:
    """The block's source with its one URL literal replaced by ``url``."""
    found = URL_LITERAL.findall(block.source)
    if len(found) != 1:
        raise ValueError(f"{block.id}: run-on needs exactly one URL literal, found {found}")
    return URL_LITERAL.sub(lambda _: repr(url), block.source)


def run(block: Block, source: str | None = None) -> dict[str, Any]:
    """Execute the block (top-level ``await`` allowed, on a new asyncio loop); its
    tracebacks name the document and the document's line numbers."""
    padded = "\n" * block.line + (block.source if source is None else source)
    code = compile(padded, block.path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    result = eval(code, namespace)  # the project's own documentation
    if inspect.iscoroutine(result):
        asyncio.run(result)
    return namespace
